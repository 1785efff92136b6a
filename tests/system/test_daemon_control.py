"""Daemons in the background: ``sbin/start-journalnodes.sh`` with one JournalNode per loopback
address, ``hdfs-py --daemon``, the ``.out`` file and its rotation, and the interpreter the sbin
scripts pick."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.system.daemon_support import (
    LOOPBACK_HOSTS,
    alive,
    free_ports,
    kill_all,
    pids_in,
    run,
    wait_gone,
    write_site,
)

PROJECT = Path(__file__).resolve().parents[2]
SBIN = PROJECT / "sbin"
HDFS_PY = [sys.executable, str(PROJECT / "bin" / "hdfs-py")]
HOSTS = LOOPBACK_HOSTS

pytestmark = pytest.mark.timeout(180)


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = dict(
        os.environ,
        HADOOP_PID_DIR=str(tmp_path / "pids"),
        HADOOP_LOG_DIR=str(tmp_path / "logs"),
        HADOOP_IDENT_STRING="qjmtest",
        PYTHON=sys.executable,
    )
    env.pop("HADOOP_CONF_DIR", None)
    env.pop("HADOOP_ROOT_LOGGER", None)
    env.pop("HADOOP_DAEMON_ROOT_LOGGER", None)
    env.update(extra)
    return env


# Slow (~19 s): the default run starts JournalNodes on three loopback addresses from the
# shipped templates (tests/system/test_shipped_conf.py, direct).
@pytest.mark.slow
def test_start_journalnodes_runs_one_per_loopback_address_on_the_same_port(tmp_path):
    """The operator's three "hosts" 127.0.0.1/.2/.3 on one port: three daemons with pid files
    of their own, each on its own address at the configured HTTP port, and one line saying
    what was chosen. (Before: named by port only, the 2nd and 3rd refused to start.)"""
    rpc_port, http_port = free_ports(2)
    conf = tmp_path / "conf"
    edits = tmp_path / "jn"
    write_site(
        conf,
        {
            "dfs.nameservices": "ns1",
            "dfs.namenode.shared.edits.dir": "qjournal://"
            + ";".join(f"{h}:{rpc_port}" for h in HOSTS)
            + "/ns1",
            "dfs.journalnode.edits.dir": str(edits),
            "dfs.journalnode.http-address": f"127.0.0.1:{http_port}",
        },
    )
    env = _env(tmp_path)
    pid_dir = tmp_path / "pids"
    try:
        start = run([SBIN / "start-journalnodes.sh", "--config", conf], env)
        assert start.returncode == 0, start.stdout + start.stderr
        assert "3 JournalNodes of dfs.namenode.shared.edits.dir are on this host" in start.stdout
        assert start.stdout.count("JournalNode started pid=") == 3
        pids = pids_in(pid_dir)
        assert sorted(pids) == [f"hadoop-qjmtest-{h}-{rpc_port}-journalnode.pid" for h in HOSTS], (
            pids
        )
        assert len(set(pids.values())) == 3
        for host in HOSTS:
            assert (edits / f"{host}-{rpc_port}").is_dir()
            with urllib.request.urlopen(f"http://{host}:{http_port}/jmx", timeout=10) as r:
                assert r.status == 200 and "beans" in json.loads(r.read())
            with socket.create_connection((host, rpc_port), timeout=10):
                pass
        again = run([SBIN / "start-journalnodes.sh", "--config", conf], env)
        assert again.returncode == 1
        assert again.stderr.count("Stop it first.") == 3
        assert pids_in(pid_dir) == pids

        stop = run([SBIN / "stop-journalnodes.sh", "--config", conf], env)
        assert stop.returncode == 0 and stop.stdout.count("stopping journalnode") == 3
        wait_gone(pids.values())
        assert pids_in(pid_dir) == {}
    finally:
        kill_all(pids_in(pid_dir).values())


def test_an_rpc_address_naming_one_of_them_starts_that_one_as_configured(tmp_path):
    """One configuration directory per JournalNode of a shared host: the configured
    addresses and directory are kept as they are, and the daemon has the plain name."""
    rpc_port, http_port = free_ports(2)
    conf = tmp_path / "conf2"
    write_site(
        conf,
        {
            "dfs.namenode.shared.edits.dir": "qjournal://"
            + ";".join(f"{h}:{rpc_port}" for h in HOSTS)
            + "/ns1",
            "dfs.journalnode.rpc-address": f"127.0.0.2:{rpc_port}",
            "dfs.journalnode.http-address": f"127.0.0.2:{http_port}",
            "dfs.journalnode.edits.dir": str(tmp_path / "jn2"),
        },
    )
    env = _env(tmp_path)
    pid_dir = tmp_path / "pids"
    try:
        start = run([SBIN / "start-journalnodes.sh", "--config", conf], env)
        assert start.returncode == 0, start.stdout + start.stderr
        assert "are on this host" not in start.stdout
        assert f"rpc=127.0.0.2:{rpc_port} http=127.0.0.2:{http_port}" in start.stdout
        assert list(pids_in(pid_dir)) == ["hadoop-qjmtest-journalnode.pid"]
        assert (tmp_path / "jn2").is_dir() and not list((tmp_path / "jn2").glob("127.*"))
        assert run([SBIN / "stop-journalnodes.sh", "--config", conf], env).returncode == 0
        assert pids_in(pid_dir) == {}
    finally:
        kill_all(pids_in(pid_dir).values())


def _jn_conf(tmp_path: Path) -> Path:
    conf = tmp_path / "conf"
    write_site(
        conf,
        {
            "dfs.journalnode.edits.dir": str(tmp_path / "jn"),
            "dfs.journalnode.rpc-address": "127.0.0.1:0",
            "dfs.journalnode.http-address": "127.0.0.1:0",
        },
    )
    return conf


def test_hdfs_py_daemon_out_holds_stdout_only_and_rotates(tmp_path):
    """``hdfs-py --daemon start`` (Hadoop 3's form, no sbin needed): the log lines go to the
    ``.log`` file only, ``.out`` has what the daemon printed, and each start keeps the previous
    ``.out`` files as ``.out.1`` … ``.out.5``. Six generations written beforehand stand in
    for earlier starts: two starts shift them and drop the oldest two."""
    conf = _jn_conf(tmp_path)
    env = _env(tmp_path)
    del env["PYTHON"]
    logs = tmp_path / "logs"
    host = socket.gethostname()
    out = logs / f"hadoop-qjmtest-journalnode-{host}.out"
    log = logs / f"hadoop-qjmtest-journalnode-{host}.log"
    logs.mkdir()
    earlier = {n: f"earlier start {n}\n" for n in range(6)}  # 0: the newest
    for n, text in earlier.items():
        Path(f"{out}.{n}" if n else out).write_text(text)
    hdfs_py = [sys.executable, "-m", "hadoop_qjm.cli", "--config", conf, "--daemon"]
    started_pids = []
    try:
        for _ in range(2):
            start = run([*hdfs_py, "start", "journalnode"], env)
            assert start.returncode == 0, start.stdout + start.stderr
            started_pids.append(int(pids_in(tmp_path / "pids")["hadoop-qjmtest-journalnode.pid"]))
            status = run([*hdfs_py, "status", "journalnode"], env)
            assert status.returncode == 0 and "is running as process" in status.stdout
            assert run([*hdfs_py, "stop", "journalnode"], env).returncode == 0
            wait_gone(started_pids[-1:])
            text = out.read_text()
            assert f"JournalNode started pid={started_pids[-1]}" in text
            assert " INFO " not in text, "the .out file repeats the log"
            assert "RPC server is binding" in log.read_text()
        generations = sorted(p.name for p in logs.glob("*.out*"))
        assert generations == [out.name] + [f"{out.name}.{n}" for n in range(1, 6)]
        # .out.1 is the previous start, .out.5 the oldest kept: earlier start 3 (4, 5 fell off).
        assert f"pid={started_pids[0]}" in Path(f"{out}.1").read_text()
        assert [Path(f"{out}.{n}").read_text() for n in range(2, 6)] == [
            earlier[n] for n in range(4)
        ]
        status = run([*hdfs_py, "status", "journalnode"], env)
        assert status.returncode == 1 and "journalnode is not running" in status.stdout
    finally:
        kill_all(p for p in started_pids if alive(p))


def test_stop_leaves_a_process_that_reused_the_pid_alone(tmp_path):
    """A stale pid file naming some other program: ``stop`` says nothing runs and kills
    nothing."""
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        pid_dir = tmp_path / "pids"
        pid_dir.mkdir()
        (pid_dir / "hadoop-qjmtest-journalnode.pid").write_text(f"{other.pid}\n")
        stop = run([SBIN / "hadoop-daemon-py.sh", "stop", "journalnode"], _env(tmp_path))
        assert stop.returncode == 0 and "no journalnode to stop" in stop.stdout
        assert other.poll() is None
    finally:
        other.kill()
        other.wait(10)


def test_the_scripts_run_the_interpreter_the_package_was_installed_into(tmp_path):
    """Without ``PYTHON``, the sbin scripts run the interpreter named by the shebang of the
    installed ``hdfs-py`` console script, not whatever ``python3`` is first on PATH."""
    marker = tmp_path / "used"
    interpreter = tmp_path / "installed-python"
    interpreter.write_text(f'#!/bin/sh\necho "$@" >> {marker}\nexec {sys.executable} "$@"\n')
    interpreter.chmod(0o755)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    console = bindir / "hdfs-py"
    console.write_text(f"#!{interpreter}\nimport sys\n")
    console.chmod(0o755)
    decoy = bindir / "python3"
    decoy.write_text("#!/bin/sh\necho decoy python3 was run >&2\nexit 97\n")
    decoy.chmod(0o755)
    env = _env(tmp_path, PATH=f"{bindir}:{os.environ['PATH']}")
    del env["PYTHON"]
    status = run([SBIN / "hadoop-daemon-py.sh", "status", "journalnode"], env)
    assert status.returncode == 1, status.stderr
    assert "journalnode is not running" in status.stdout
    assert "hadoop_qjm.cli" in marker.read_text()

    # PYTHON wins, and an interpreter without the package is one line.
    env["PYTHON"] = str(decoy)
    bad = run([SBIN / "hadoop-daemon-py.sh", "status", "journalnode"], env)
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [
        f"hadoop-daemon-py.sh: {decoy} cannot import hadoop_qjm: pip install hadoop-qjm-py "
        "into it, or set PYTHON to the interpreter it is installed into"
    ]


def _per_host_confs(tmp_path: Path) -> list[Path]:
    """One configuration directory per "host" 127.0.0.1/.2/.3 of one machine, as each host
    of a real cluster has its own: the same cluster, and what runs on that host
    (``dfs.ha.namenode.id``, ``dfs.journalnode.rpc-address``), its directories and its pid
    directory (``hadoop-env-py.sh``)."""
    jn_port, jn_http, nn1_rpc, nn2_rpc, nn1_http, nn2_http = free_ports(6)
    cluster = {
        "dfs.nameservices": "mycluster",
        "dfs.ha.namenodes.mycluster": "nn1,nn2",
        "dfs.namenode.rpc-address.mycluster.nn1": f"127.0.0.1:{nn1_rpc}",
        "dfs.namenode.rpc-address.mycluster.nn2": f"127.0.0.2:{nn2_rpc}",
        "dfs.namenode.http-address.mycluster.nn1": f"127.0.0.1:{nn1_http}",
        "dfs.namenode.http-address.mycluster.nn2": f"127.0.0.2:{nn2_http}",
        "dfs.namenode.shared.edits.dir": "qjournal://"
        + ";".join(f"{h}:{jn_port}" for h in HOSTS)
        + "/mycluster",
        "dfs.ha.tail-edits.period": "100ms",
    }
    confs = []
    for n, host in enumerate(HOSTS, start=1):
        home = tmp_path / f"host{n}"
        conf = home / "conf"
        own = {
            "dfs.journalnode.rpc-address": f"{host}:{jn_port}",
            "dfs.journalnode.http-address": f"{host}:{jn_http}",
            "dfs.journalnode.edits.dir": str(home / "jn"),
            "dfs.namenode.name.dir": str(home / "name"),
        }
        if n <= 2:
            own["dfs.ha.namenode.id"] = f"nn{n}"
        write_site(conf, {**cluster, **own})
        (conf / "hadoop-env-py.sh").write_text(f"export HADOOP_PID_DIR={home / 'pids'}\n")
        confs.append(conf)
    return confs


# Slow (~27 s): start-dfs from the one shared directory runs in the default run
# (tests/system/test_shipped_conf.py, direct).
@pytest.mark.slow
def test_per_host_configuration_directories_on_one_machine(tmp_path):
    """Issue 33 item 8. start-dfs with host1's directory starts host1's JournalNode and nn1,
    not nn2 (before: nn2 with host1's directories, "Cannot lock storage"); stop-dfs stops
    the nn1 that hadoop-daemon-py.sh started (before: "no namenode to stop", exit 0, the
    pid files named differently)."""
    confs = _per_host_confs(tmp_path)
    env = _env(tmp_path)
    del env["HADOOP_PID_DIR"]  # each host's hadoop-env-py.sh sets its own
    host1_pids = tmp_path / "host1" / "pids"
    every_pid_dir = [tmp_path / f"host{n}" / "pids" for n in (1, 2, 3)]

    def all_pids() -> set[int]:
        return {pid for d in every_pid_dir for pid in pids_in(d).values()}

    try:
        for conf in confs:
            jn = run([SBIN / "start-journalnodes.sh", "--config", conf], env)
            assert jn.returncode == 0, jn.stdout + jn.stderr
        fmt = run([*HDFS_PY, "--config", confs[0], "namenode", "-format", "-nonInteractive"], env)
        assert fmt.returncode == 0, fmt.stdout + fmt.stderr
        nn1 = run([SBIN / "hadoop-daemon-py.sh", "--config", confs[0], "start", "namenode"], env)
        assert nn1.returncode == 0, nn1.stdout + nn1.stderr
        names = ["hadoop-qjmtest-journalnode.pid", "hadoop-qjmtest-nn1-namenode.pid"]
        assert sorted(pids_in(host1_pids)) == names
        nn1_pid = pids_in(host1_pids)[names[1]]

        stop = run([SBIN / "stop-dfs-py.sh", "--config", confs[0]], env)
        assert stop.returncode == 0, stop.stdout + stop.stderr
        assert "no namenode to stop" not in stop.stdout
        assert stop.stdout.count("stopping namenode") == 1, stop.stdout
        assert "Not stopping NameNode nn2: it is on this machine" in stop.stdout
        wait_gone([nn1_pid])
        assert pids_in(host1_pids) == {}

        start = run([SBIN / "start-dfs-py.sh", "--config", confs[0]], env)
        assert start.returncode == 0, start.stdout + start.stderr
        assert "Starting NameNode nn2" not in start.stdout
        assert (
            "Not starting NameNode nn2: it is on this machine, but this configuration is "
            "nn1's (dfs.ha.namenode.id)" in start.stdout
        )
        assert sorted(pids_in(host1_pids)) == names
        assert not (tmp_path / "host2" / "name").exists()
        status = run(
            [SBIN / "hadoop-daemon-py.sh", "--config", confs[0], "status", "namenode"], env
        )
        assert status.returncode == 0 and "namenode is running as process" in status.stdout

        stop = run([SBIN / "stop-dfs-py.sh", "--config", confs[0]], env)
        assert stop.returncode == 0 and stop.stdout.count("stopping namenode") == 1, stop.stdout
        for conf in confs[1:]:
            assert run([SBIN / "stop-journalnodes.sh", "--config", conf], env).returncode == 0
        wait_gone(all_pids())
        assert all_pids() == set()
    finally:
        kill_all(all_pids())


def test_stopping_one_of_several_namenodes_of_a_shared_directory_needs_its_id(tmp_path):
    """Two NameNodes on this machine, one configuration for both: which pid file is meant
    cannot be guessed, and nothing is stopped."""
    conf = _per_host_confs(tmp_path)[2]  # host3's: it names no NameNode
    stop = run([SBIN / "hadoop-daemon-py.sh", "--config", conf, "stop", "zkfc"], _env(tmp_path))
    assert stop.returncode == 2
    assert stop.stderr.strip().splitlines() == [
        "hdfs-py: 2 NameNodes are on this host (nn1, nn2): name one with -nnid, or set "
        "dfs.ha.namenode.id"
    ]
