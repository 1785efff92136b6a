"""The shipped ``conf/`` (Hadoop's ``etc/hadoop``): every file loads, the templates bring up
the three-host HA cluster with only addresses and directories changed, and
``sbin/start-dfs-py.sh`` / ``stop-dfs-py.sh`` start and stop it, leaving no process."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hadoop_qjm.common.daemon_logging import configure_logging, logging_settings
from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.common.log4j_properties import parse_log4j_properties
from hadoop_qjm.conf import Configuration
from hadoop_qjm.tools.daemon_control import DaemonEnv, read_hadoop_env
from tests.system.daemon_support import alive, free_ports, kill_all, pids_in, run

PROJECT = Path(__file__).resolve().parents[2]
CONF = PROJECT / "conf"
SBIN = PROJECT / "sbin"
HDFS_PY = [sys.executable, str(PROJECT / "bin" / "hdfs-py")]

pytestmark = pytest.mark.timeout(300)


def uncommented_template(name: str) -> str:
    """The shipped site file with its two TEMPLATE lines deleted, as the operator is told."""
    lines = (CONF / name).read_text().splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith(("<!-- TEMPLATE", "TEMPLATE"))]
    assert len(lines) - len(kept) == 2, f"{name} has two TEMPLATE lines"
    return "".join(kept)


def test_the_shipped_site_files_set_nothing_until_the_template_is_uncommented(tmp_path):
    shipped = Configuration(load_defaults=False)
    shipped.add_conf_dir(CONF)
    assert dict(shipped.as_dict()) == {}

    for name in ("core-site.xml", "hdfs-site.xml"):
        (tmp_path / name).write_text(uncommented_template(name))
    conf = Configuration(load_defaults=False)
    conf.add_conf_dir(tmp_path)
    values = dict(conf.as_dict())
    assert values["fs.defaultFS"] == "hdfs://mycluster"
    assert values["dfs.ha.namenodes.mycluster"] == "nn1,nn2"
    assert values["dfs.namenode.shared.edits.dir"] == (
        "qjournal://host1:8485;host2:8485;host3:8485/mycluster"
    )
    # Every value an operator must change is marked, and is a host, a port or a directory.
    text = uncommented_template("hdfs-site.xml") + uncommented_template("core-site.xml")
    marked = re.findall(
        r"<name>([^<]+)</name>\s*<value>([^<]*)</value>\s*<description>CHANGE", text
    )
    assert len(marked) >= 10
    for key, value in marked:
        assert re.search(r"host\d|/data/|0\.0\.0\.0:", value), (key, value)


def test_the_ssl_examples_load_with_every_key_docs_security_names():
    for name, prefix in (
        ("ssl-server.xml.example", "ssl.server."),
        ("ssl-client.xml.example", "ssl.client."),
    ):
        conf = Configuration(load_defaults=False)
        conf.add_resource(CONF / name)
        keys = set(dict(conf.as_dict()))
        assert {f"{prefix}keystore.location", f"{prefix}keystore.keyfile"} <= keys
        assert f"{prefix}truststore.location" in keys


def test_log4j_properties_loads_and_its_levels_apply(tmp_path, monkeypatch):
    shipped = (CONF / "log4j.properties").read_text()
    settings = parse_log4j_properties(shipped, "log4j.properties")
    assert settings.root_level is None and settings.logger_levels == {}

    # Uncomment every setting line: each is valid, and a per-logger level takes effect.
    active = re.sub(r"(?m)^# (?=[A-Za-z0-9._]+=)", "", shipped)
    (tmp_path / "log4j.properties").write_text(active)
    monkeypatch.delenv("HADOOP_ROOT_LOGGER", raising=False)
    settings = logging_settings(str(tmp_path))
    assert settings.root_level == logging.INFO and settings.appenders == ("console",)
    assert settings.logger_levels["hadoop_qjm.qjournal.client"] == logging.DEBUG
    assert settings.logger_levels["kazoo"] == logging.WARNING
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    try:
        configure_logging(settings=settings)
        assert logging.getLogger("hadoop_qjm.qjournal.client.x").getEffectiveLevel() == 10
        assert root.level == logging.INFO
        # $HADOOP_ROOT_LOGGER wins over hadoop.root.logger.
        monkeypatch.setenv("HADOOP_ROOT_LOGGER", "ERROR,console")
        assert logging_settings(str(tmp_path)).root_level == logging.ERROR
    finally:
        logging.getLogger("hadoop_qjm.qjournal.client").setLevel(logging.NOTSET)
        logging.getLogger("kazoo").setLevel(logging.NOTSET)
        root.handlers[:] = saved[1]
        root.setLevel(saved[0])

    (tmp_path / "log4j.properties").write_text("log4j.logger.hadoop_qjm=LOUD\n")
    with pytest.raises(
        IllegalArgumentException, match="log4j.logger.hadoop_qjm: 'LOUD' is not a level"
    ):
        logging_settings(str(tmp_path))


def test_hadoop_env_loads_and_names_what_the_scripts_read(tmp_path):
    shipped = CONF / "hadoop-env-py.sh"
    assert subprocess.run(["bash", "-n", str(shipped)], timeout=30).returncode == 0
    assert read_hadoop_env(str(CONF), {"PATH": os.environ["PATH"]}).get("HADOOP_LOG_DIR") is None
    active = re.sub(r"(?m)^# (?=export )", "", shipped.read_text())
    (tmp_path / "hadoop-env-py.sh").write_text(active)
    env = DaemonEnv.from_environ(str(tmp_path), {"PATH": os.environ["PATH"], "USER": "u"})
    assert (env.log_dir, env.pid_dir, env.ident) == ("/var/log/hadoop", "/var/run/hadoop", "hdfs")
    assert env.daemon_opts("namenode") == ["-Ddfs.namenode.handler.count=20"]
    assert env.daemon_opts("journalnode") == ["-Ddfs.journalnode.handler.count=10"]


# ---------------------------------------------------------------------------------------------
# A cluster from the templates


def make_cluster_conf(conf_dir: Path, data: Path, hosts: tuple[str, str, str]) -> Path:
    """Copy ``conf/`` and change only what the templates mark: hosts, ports, directories (and,
    in hadoop-env-py.sh, where pids and logs go and which interpreter runs)."""
    shutil.copytree(CONF, conf_dir)
    ports = iter(free_ports(9))
    for name in ("core-site.xml", "hdfs-site.xml"):
        text = uncommented_template(name)
        for n, host in enumerate(hosts, start=1):
            for default in (8020, 9870, 8485):
                if f"host{n}:{default}" in text:
                    text = text.replace(f"host{n}:{default}", f"{host}:{next(ports)}")
        text = (
            text.replace(":8480<", f":{next(ports)}<")
            .replace("/data/hadoop/dfs/name", str(data / "name"))
            .replace("/data/hadoop/dfs/journal", str(data / "journal"))
        )
        if name == "hdfs-site.xml":
            # One machine stands in for the three hosts: each NameNode needs a directory of
            # its own (Hadoop's per-NameNode key, as on a shared host).
            per_nn = "".join(
                f"<property><name>dfs.namenode.name.dir.mycluster.{nn}</name>"
                f"<value>{data / ('name-' + nn)}</value></property>\n"
                for nn in ("nn1", "nn2")
            )
            text = text.replace("</configuration>", per_nn + "</configuration>")
        (conf_dir / name).write_text(text)
    with open(conf_dir / "hadoop-env-py.sh", "a") as env:
        env.write(f"export HADOOP_PID_DIR={data / 'pids'}\n")
        env.write(f"export HADOOP_LOG_DIR={data / 'logs'}\n")
        env.write("export HADOOP_IDENT_STRING=${HADOOP_IDENT_STRING:-qjmtest}\n")
        env.write(f"export PYTHON={sys.executable}\n")
    return conf_dir


def child_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HADOOP_")}
    env.update(extra)
    return env


@contextlib.contextmanager
def ssh_server(work: Path):
    """A real sshd of the test's own on 127.0.0.1 (key login for this user only), yielding
    the ``ssh`` options that reach it; stopped by pid."""
    sshd = shutil.which("sshd") or ("/usr/sbin/sshd" if os.path.exists("/usr/sbin/sshd") else None)
    if sshd is None or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        pytest.fail("sshd is not installed: apt-get install -y openssh-server", pytrace=False)
    work.mkdir()
    for key in ("host_key", "client_key"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(work / key)],
            check=True,
            timeout=30,
        )
    shutil.copy(work / "client_key.pub", work / "authorized_keys")
    port = free_ports(1, hosts=("127.0.0.1",))[0]
    (work / "sshd_config").write_text(
        f"Port {port}\nListenAddress 127.0.0.1\nHostKey {work / 'host_key'}\n"
        f"AuthorizedKeysFile {work / 'authorized_keys'}\nPidFile {work / 'sshd.pid'}\n"
        "StrictModes no\nUsePAM no\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
        "PermitRootLogin prohibit-password\nLogLevel ERROR\n"
    )
    os.makedirs("/run/sshd", exist_ok=True)  # sshd's privilege-separation directory
    process = subprocess.Popen(
        [sshd, "-D", "-e", "-f", str(work / "sshd_config")],
        stdout=subprocess.DEVNULL,
        stderr=open(work / "sshd.log", "wb"),  # noqa: SIM115 - closed with the process
    )
    opts = (
        f"-i {work / 'client_key'} -p {port} -o BatchMode=yes -o StrictHostKeyChecking=no "
        "-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR -o ConnectTimeout=10"
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            probe = subprocess.run(
                ["ssh", *opts.split(), "127.0.0.1", "true"], capture_output=True, timeout=30
            )
            if probe.returncode == 0:
                break
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"sshd did not accept a login: {(work / 'sshd.log').read_text()}")
            time.sleep(0.2)
        yield opts
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


@pytest.mark.parametrize("reach", ["direct", pytest.param("ssh", marks=pytest.mark.slow)])
def test_a_cluster_from_the_templates_starts_and_stops_with_start_dfs(tmp_path, reach):
    """Directly: three "hosts" 127.0.0.1/.2/.3, all this machine. Over ssh (as Hadoop's
    start-dfs.sh always does, HADOOP_SSH_LOCAL=true): the three on 127.0.0.1, reached through
    the test's own sshd."""
    data = tmp_path / "data"
    hosts = ("127.0.0.1", "127.0.0.2", "127.0.0.3") if reach == "direct" else ("127.0.0.1",) * 3
    conf = make_cluster_conf(tmp_path / "conf", data, hosts)
    with contextlib.ExitStack() as stack:
        if reach == "direct":
            env = child_env()
        else:
            opts = stack.enter_context(ssh_server(tmp_path / "ssh"))
            env = child_env(HADOOP_SSH_LOCAL="true", HADOOP_SSH_OPTS=opts)
        run_cluster_from_templates(conf, data, env)


def run_cluster_from_templates(conf: Path, data: Path, env: dict[str, str]) -> None:
    pid_dir = data / "pids"
    started: set[int] = set()

    def hdfs(*args, timeout=120):
        return run([*HDFS_PY, "--config", conf, *args], env, timeout)

    try:
        # First time (README, "Deploying"): the JournalNodes, nn1 formatted and running,
        # nn2 bootstrapped from it; then everything stops.
        jns = run([SBIN / "start-journalnodes.sh", "--config", conf], env)
        assert jns.returncode == 0, jns.stdout + jns.stderr
        started |= set(pids_in(pid_dir).values())
        fmt = hdfs("namenode", "-nnid", "nn1", "-format", "-nonInteractive")
        assert fmt.returncode == 0, fmt.stderr
        # Named as start-dfs names it (both NameNodes are on this machine), so stop-dfs
        # finds it (issue 33 item 8: before, "no namenode to stop" and exit 0).
        nn1 = run(
            [*HDFS_PY, "--config", conf, "--daemon", "start", "namenode", "-nnid", "nn1"], env
        )
        started |= set(pids_in(pid_dir).values())
        assert nn1.returncode == 0, nn1.stdout + nn1.stderr
        assert "hadoop-qjmtest-nn1-namenode.pid" in pids_in(pid_dir)
        boot = hdfs("namenode", "-nnid", "nn2", "-bootstrapStandby", "-nonInteractive")
        assert boot.returncode == 0, boot.stdout + boot.stderr
        stop = run([SBIN / "stop-dfs-py.sh", "--config", conf], env)
        assert stop.returncode == 0, stop.stdout + stop.stderr
        assert pids_in(pid_dir) == {}
        assert not any(alive(p) for p in started)

        start = run([SBIN / "start-dfs-py.sh", "--config", conf], env)
        started |= set(pids_in(pid_dir).values())
        assert start.returncode == 0, start.stdout + start.stderr
        assert sorted(pids_in(pid_dir)) == sorted(
            [f"hadoop-qjmtest-{h}-{p}-journalnode.pid" for h, p in _jn_names(conf)]
            + ["hadoop-qjmtest-nn1-namenode.pid", "hadoop-qjmtest-nn2-namenode.pid"]
        )
        assert hdfs("haadmin", "-transitionToActive", "nn1").returncode == 0
        assert hdfs("dfs", "-mkdir", "-p", "/user/ops").returncode == 0
        listing = hdfs("dfs", "-ls", "/user")
        assert listing.returncode == 0 and "/user/ops" in listing.stdout, listing.stderr
        state = hdfs("haadmin", "-getServiceState", "nn2")
        assert state.stdout.strip() == "standby"

        stop = run([SBIN / "stop-dfs-py.sh", "--config", conf], env)
        assert stop.returncode == 0, stop.stdout + stop.stderr
        assert stop.stdout.count("stopping namenode") == 2
        assert stop.stdout.count("stopping journalnode") == 3
        assert pids_in(pid_dir) == {}
        assert not [p for p in started if alive(p)]
        # The logs went to HADOOP_LOG_DIR of hadoop-env-py.sh, none into the project; the
        # NameNodes' audit lines to hdfs-audit.log beside them (Hadoop's RFAAUDIT).
        assert len(list((data / "logs").glob("hadoop-*.log"))) == 5
        assert (data / "logs" / "hdfs-audit.log").is_file()
    finally:
        kill_all(set(pids_in(pid_dir).values()) | started)


def _jn_names(conf: Path) -> list[tuple[str, str]]:
    text = (conf / "hdfs-site.xml").read_text()
    uri = re.search(r"qjournal://([^/]+)/", text).group(1)
    return [tuple(a.rsplit(":", 1)) for a in uri.split(";")]
