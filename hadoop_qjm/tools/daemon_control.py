"""Run a daemon in the background and stop it by its pid file, as Hadoop's
``hdfs --daemon (start|stop|status) COMMAND`` and ``hadoop-daemon.sh`` do; and start or stop
the JournalNodes of ``dfs.namenode.shared.edits.dir`` that are on this host.

``hdfs-py --daemon start journalnode`` works wherever the package is installed; the ``sbin/``
scripts are thin wrappers over this module. The environment has Hadoop's names:

- ``HADOOP_LOG_DIR``: the daemon's ``.log`` and ``.out`` files
  (default ``$HADOOP_HOME/logs`` when ``HADOOP_HOME`` is set, else ``/tmp/hadoop-<user>/logs``);
- ``HADOOP_PID_DIR``: the pid file (default ``/tmp``);
- ``HADOOP_IDENT_STRING``: names both (default ``$USER``);
- ``HADOOP_STOP_TIMEOUT``: seconds between SIGTERM and SIGKILL (default 30);
- ``HADOOP_DAEMON_ROOT_LOGGER``: the daemon's logging, its ``HADOOP_ROOT_LOGGER``
  (default ``INFO,RFA``: the log file only).

The ``.out`` file holds what the daemon writes to stdout and stderr, nothing else; the
previous five are kept as ``.out.1`` … ``.out.5``, as Hadoop's ``hadoop_rotate_log`` does.
"""

from __future__ import annotations

import ipaddress
import os
import shlex
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import psutil

from hadoop_qjm.common.command_line import conf_dir_in_use, load_configuration
from hadoop_qjm.common.daemon_logging import _user_name, default_log_dir
from hadoop_qjm.common.exceptions import UsageError
from hadoop_qjm.tools.namenode_daemons import NAMENODE_DAEMONS, ident_for

__all__ = [
    "DAEMONS",
    "DaemonEnv",
    "JournalNodePlan",
    "default_log_dir",
    "plan_local_journal_nodes",
    "rotate_out_file",
    "run_daemon_action",
    "run_journal_nodes_action",
]

DAEMONS = ("journalnode", "namenode", "zkfc")
ACTIONS = ("start", "stop", "status")
OUT_FILE_GENERATIONS = 5
START_TIMEOUT_S = 30.0
STARTED_MARK = "started pid="

Printer = Callable[[str], None]


def _say(line: str) -> None:
    print(line, flush=True)


def _complain(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


HADOOP_ENV = "hadoop-env-py.sh"


def read_hadoop_env(conf_dir: str | None, environ: dict[str, str]) -> dict[str, str]:
    """``environ`` as ``<conf_dir>/hadoop-env-py.sh`` leaves it (Hadoop's ``hadoop-env.sh``:
    a shell file of ``export NAME=value`` lines); ``environ`` itself when there is none."""
    if not conf_dir:
        return dict(environ)
    path = os.path.join(conf_dir, HADOOP_ENV)
    if not os.path.isfile(path):
        return dict(environ)
    result = subprocess.run(
        ["bash", "-c", '. "$1" >&2 && env -0', "hadoop-env", path],
        env=environ,
        capture_output=True,
        timeout=30,
    )
    if result.returncode != 0:
        detail = result.stderr.decode(errors="replace").strip().splitlines()
        raise UsageError(f"{path} failed: {detail[-1] if detail else f'exit {result.returncode}'}")
    entries = (item.partition(b"=") for item in result.stdout.split(b"\0") if item)
    return {k.decode(): v.decode(errors="replace") for k, _, v in entries}


@dataclass(frozen=True)
class DaemonEnv:
    """Where a daemon's pid file and logs go, from Hadoop's environment variables."""

    ident: str
    log_dir: str
    pid_dir: str
    stop_timeout_s: float
    conf_dir: str | None
    environ: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_environ(
        cls, conf_dir: str | None = None, environ: dict[str, str] | None = None
    ) -> DaemonEnv:
        """From ``environ`` (this process's) as the configuration directory in use (``conf_dir``,
        else ``$HADOOP_CONF_DIR``, else the installation's) has its ``hadoop-env-py.sh`` set it."""
        environ = dict(os.environ if environ is None else environ)
        conf_dir = conf_dir or environ.get("HADOOP_CONF_DIR") or conf_dir_in_use(None)
        environ = read_hadoop_env(conf_dir, environ)
        ident = environ.get("HADOOP_IDENT_STRING") or environ.get("USER") or _user_name()
        timeout_text = environ.get("HADOOP_STOP_TIMEOUT", "30")
        try:
            timeout = float(timeout_text)
        except ValueError:
            timeout = -1.0
        if not timeout >= 0:
            raise UsageError(
                f"HADOOP_STOP_TIMEOUT must be a number of seconds, not '{timeout_text}'"
            )
        return cls(
            ident=ident,
            log_dir=default_log_dir(environ),
            pid_dir=environ.get("HADOOP_PID_DIR") or "/tmp",
            stop_timeout_s=timeout,
            conf_dir=conf_dir or None,
            environ=tuple(sorted(environ.items())),
        )

    def with_ident(self, ident: str) -> DaemonEnv:
        return DaemonEnv(
            ident, self.log_dir, self.pid_dir, self.stop_timeout_s, self.conf_dir, self.environ
        )

    def daemon_opts(self, daemon: str) -> list[str]:
        """``$HDFS_<DAEMON>_OPTS`` (Hadoop's per-daemon options): ``-D key=value`` settings
        for that daemon alone."""
        name = f"HDFS_{daemon.upper()}_OPTS"
        text = dict(self.environ).get(name, "")
        try:
            words = shlex.split(text)
        except ValueError as e:
            raise UsageError(f"{name}: {e}") from None
        opts: list[str] = []
        while words:
            word = words.pop(0)
            if word == "-D" and words:
                word = "-D" + words.pop(0)
            if not word.startswith("-D") or "=" not in word:
                raise UsageError(f"{name} takes -Dkey=value settings only, not '{word}'")
            opts.append(word)
        return opts

    def pid_file(self, daemon: str) -> str:
        return os.path.join(self.pid_dir, f"hadoop-{self.ident}-{daemon}.pid")

    def out_file(self, daemon: str) -> str:
        return os.path.join(
            self.log_dir, f"hadoop-{self.ident}-{daemon}-{socket.gethostname()}.out"
        )


def rotate_out_file(path: str, generations: int = OUT_FILE_GENERATIONS) -> None:
    """``path.(n-1)`` → ``path.n`` … ``path`` → ``path.1``; the oldest falls off."""
    for n in range(generations - 1, 0, -1):
        older = f"{path}.{n}"
        if os.path.exists(older):
            os.replace(older, f"{path}.{n + 1}")
    if os.path.exists(path):
        os.replace(path, f"{path}.1")


def running_pid(pid_file: str, daemon: str) -> int | None:
    """The pid in ``pid_file`` when that process is alive and is this daemon; a pid reused by
    another program is not ours to report, or to kill."""
    try:
        with open(pid_file, encoding="ascii") as f:
            pid = int(f.read().strip())
    except (OSError, ValueError):
        return None
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        cmdline = process.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    return pid if daemon in cmdline else None


def _package_parent() -> str:
    import hadoop_qjm

    return os.path.dirname(os.path.dirname(os.path.abspath(hadoop_qjm.__file__)))


def _daemon_command(env: DaemonEnv, daemon: str, generic_args: Sequence[str], args: Sequence[str]):
    conf = ["--config", env.conf_dir] if env.conf_dir else []
    opts = env.daemon_opts(daemon)
    # This interpreter: the one the package was installed into (or $PYTHON, for the sbin
    # scripts, which run this module with it).
    return [sys.executable, "-m", "hadoop_qjm.cli", *conf, *opts, *generic_args, daemon, *args]


def _daemon_environ(env: DaemonEnv) -> dict[str, str]:
    child = dict(env.environ) if env.environ else dict(os.environ)
    child["HADOOP_IDENT_STRING"] = env.ident
    child["HADOOP_LOG_DIR"] = env.log_dir
    # Hadoop 3's daemon mode: the daemon's logging is HADOOP_DAEMON_ROOT_LOGGER, not the
    # HADOOP_ROOT_LOGGER of the shell that starts it.
    child["HADOOP_ROOT_LOGGER"] = child.get("HADOOP_DAEMON_ROOT_LOGGER") or "INFO,RFA"
    if env.conf_dir:
        child["HADOOP_CONF_DIR"] = env.conf_dir
    path = child.get("PYTHONPATH")
    child["PYTHONPATH"] = _package_parent() + (os.pathsep + path if path else "")
    return child


def start_daemon(
    env: DaemonEnv,
    daemon: str,
    generic_args: Sequence[str] = (),
    args: Sequence[str] = (),
    out: Printer = _say,
    err: Printer | None = None,
) -> int:
    err = err or _complain
    pid_file = env.pid_file(daemon)
    pid = running_pid(pid_file, daemon)
    if pid is not None:
        err(f"{daemon} is running as process {pid}.  Stop it first.")
        return 1
    command = _daemon_command(env, daemon, generic_args, args)  # bad options: nothing changed
    os.makedirs(env.log_dir, exist_ok=True)
    os.makedirs(env.pid_dir, exist_ok=True)
    out_file = env.out_file(daemon)
    rotate_out_file(out_file)
    out(f"starting {daemon}, logging to {out_file}")
    with open(out_file, "ab") as out_fh, open(os.devnull, "rb") as devnull:
        process = subprocess.Popen(
            command,
            stdin=devnull,
            stdout=out_fh,
            stderr=subprocess.STDOUT,
            env=_daemon_environ(env),
            start_new_session=True,  # a daemon: no SIGHUP or ^C from this terminal
            close_fds=True,
        )
    tmp = f"{pid_file}.tmp.{os.getpid()}"
    with open(tmp, "w", encoding="ascii") as f:
        f.write(f"{process.pid}\n")
    os.replace(tmp, pid_file)
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        started = _started_line(out_file)
        if started:
            out(started)
            return 0
        if process.poll() is not None:
            _remove(pid_file)
            err(f"{daemon} failed to start (exit {process.returncode}); the end of {out_file}:")
            for line in _tail(out_file, 5):
                err(line)
            return 1
        time.sleep(0.1)
    err(f"{daemon} (pid {process.pid}) did not report that it started within 30s; see {out_file}")
    return 1


def stop_daemon(
    env: DaemonEnv, daemon: str, out: Printer = _say, err: Printer | None = None
) -> int:
    err = err or _complain
    pid_file = env.pid_file(daemon)
    pid = running_pid(pid_file, daemon)
    if pid is None:
        out(f"no {daemon} to stop")
        _remove(pid_file)
        return 0
    out(f"stopping {daemon}")
    try:
        process = psutil.Process(pid)
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(env.stop_timeout_s)
        except psutil.TimeoutExpired:
            err(
                f"{daemon} did not stop gracefully after {env.stop_timeout_s:g} seconds: "
                "killing with kill -9"
            )
            process.kill()
            process.wait(10)
    except psutil.NoSuchProcess:
        pass
    _remove(pid_file)
    return 0


def daemon_status(env: DaemonEnv, daemon: str, out: Printer = _say) -> int:
    pid = running_pid(env.pid_file(daemon), daemon)
    if pid is None:
        out(f"{daemon} is not running")
        return 1
    out(f"{daemon} is running as process {pid}")
    return 0


def run_daemon_action(
    action: str,
    daemon: str,
    env: DaemonEnv,
    generic_args: Sequence[str] = (),
    args: Sequence[str] = (),
) -> int:
    if action not in ACTIONS:
        raise UsageError(f"--daemon takes start, stop or status, not '{action}'")
    if daemon not in DAEMONS:
        raise UsageError(f"--daemon runs {', '.join(DAEMONS)}, not '{daemon}'")
    named = daemon in NAMENODE_DAEMONS and len(args) == 2 and args[0] == "-nnid"
    if action != "start" and args and not named:
        takes = "-nnid NNID only" if daemon in NAMENODE_DAEMONS else "no arguments"
        raise UsageError(f"--daemon {action} {daemon} takes {takes}, got {' '.join(args)}")
    if daemon in NAMENODE_DAEMONS:  # the pid file start-dfs-py.sh and stop-dfs-py.sh use
        overrides = [arg[2:].partition("=")[::2] for arg in generic_args]
        conf = load_configuration(env.conf_dir, overrides)
        env = env.with_ident(ident_for(conf, env.ident, action, args, is_local))
    if action == "start":
        return start_daemon(env, daemon, generic_args, args)
    if action == "stop":
        return stop_daemon(env, daemon)
    return daemon_status(env, daemon)


# ---------------------------------------------------------------------------------------------
# The JournalNodes of this host


@dataclass(frozen=True)
class JournalNodePlan:
    """One JournalNode to run here: its ident (names its pid and log files) and the ``-D``
    settings it runs with (none when the configuration is used as it is)."""

    address: str
    ident: str
    overrides: tuple[tuple[str, str], ...] = ()


def _split_host_port(address: str, default_port: int) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    if not sep:
        return address, default_port
    return host.strip("[]"), int(port)


def local_addresses() -> set[str]:
    """Every address of this host's interfaces."""
    found = {"localhost", socket.gethostname()}
    for addrs in psutil.net_if_addrs().values():
        for addr in addrs:
            if addr.family in (socket.AF_INET, socket.AF_INET6):
                found.add(addr.address.split("%", 1)[0])
    return found


def is_local(host: str, local: Iterable[str] | None = None) -> bool:
    """Whether ``host`` names this machine: a loopback address (all of 127.0.0.0/8 is this host
    on Linux), an interface's address, or a name that resolves to one."""
    local = set(local_addresses() if local is None else local)
    if host in local:
        return True
    try:
        infos = socket.getaddrinfo(host, None)
    except (socket.gaierror, UnicodeError):
        return False
    for info in infos:
        ip = info[4][0].split("%", 1)[0]
        if ip in local or ipaddress.ip_address(ip).is_loopback:
            return True
    return False


def plan_local_journal_nodes(
    conf, base_ident: str, is_local_host: Callable[[str], bool] = is_local
) -> tuple[list[JournalNodePlan], str | None]:
    """The JournalNodes of ``dfs.namenode.shared.edits.dir`` to run on this host, and the one
    line saying what was chosen for them (None when the configuration is used as it is).

    - One of them here: it runs with the configuration as it is (the usual deployment, one
      JournalNode per host).
    - ``dfs.journalnode.rpc-address`` names one of them (not the wildcard): only that one, as
      configured (one configuration directory per JournalNode on a shared host).
    - Several here and no such choice: each listens on its own address, keeps the configured
      HTTP(S) port on its own address (any free port when two share an address: clients learn
      it through getJournalState), and keeps its journals in ``<edits dir>/<host>-<port>``,
      since two JournalNodes cannot share one directory.
    Each is named ``<ident>-<host>-<port>`` when there are several, so pid files never clash.
    """
    from hadoop_qjm.conf import dfs_config_keys as keys
    from hadoop_qjm.qjournal.client.qjournal_uri import parse_qjournal_uri
    from hadoop_qjm.qjournal.server.journal_peers import shared_edits_uri

    uri = shared_edits_uri(conf, None)
    if not uri:
        raise UsageError("dfs.namenode.shared.edits.dir is not set to a qjournal:// URI")
    addresses = list(dict.fromkeys(parse_qjournal_uri(uri).addresses))
    here = [(host, port) for host, port in addresses if is_local_host(host)]
    if not here:
        listed = " ".join(f"{h}:{p}" for h, p in addresses)
        raise UsageError(
            f"no JournalNode address of dfs.namenode.shared.edits.dir ({listed}) is on this host"
        )
    configured = conf.get(
        keys.DFS_JOURNALNODE_RPC_ADDRESS_KEY, keys.DFS_JOURNALNODE_RPC_ADDRESS_DEFAULT
    )
    chost, cport = _split_host_port(configured, keys.DFS_JOURNALNODE_RPC_PORT_DEFAULT)
    if len(here) == 1:
        host, port = here[0]
        return [JournalNodePlan(f"{host}:{port}", base_ident)], None
    wildcard = chost in ("0.0.0.0", "::", "")
    if not wildcard:
        chosen = [(h, p) for h, p in here if p == cport and _same_host(h, chost)]
        if chosen:
            host, port = chosen[0]
            return [JournalNodePlan(f"{host}:{port}", base_ident)], None
    edits_dir = conf.get(keys.DFS_JOURNALNODE_EDITS_DIR_KEY, keys.DFS_JOURNALNODE_EDITS_DIR_DEFAULT)
    hosts = [h for h, _ in here]
    plans = []
    for host, port in here:
        shared_host = hosts.count(host) > 1
        name = f"{host.replace(':', '_')}-{port}"
        overrides = [(keys.DFS_JOURNALNODE_RPC_ADDRESS_KEY, _join(host, port))]
        for key, default in (
            (keys.DFS_JOURNALNODE_HTTP_ADDRESS_KEY, "0.0.0.0:8480"),
            ("dfs.journalnode.https-address", "0.0.0.0:8481"),
        ):
            _, http_port = _split_host_port(conf.get(key, default), 0)
            overrides.append((key, _join(host, 0 if shared_host else http_port)))
        overrides.append(
            (keys.DFS_JOURNALNODE_EDITS_DIR_KEY, os.path.join(edits_dir.rstrip("/"), name))
        )
        plans.append(JournalNodePlan(f"{host}:{port}", f"{base_ident}-{name}", tuple(overrides)))
    note = (
        f"{len(plans)} JournalNodes of dfs.namenode.shared.edits.dir are on this host and "
        "dfs.journalnode.rpc-address names none of them: each listens on its own address with "
        "the configured HTTP port (any free port where two share an address), keeps its "
        f"journals in {edits_dir.rstrip('/')}/<host>-<port>, and is named "
        f"{base_ident}-<host>-<port>"
    )
    return plans, note


def _same_host(a: str, b: str) -> bool:
    if a == b:
        return True
    try:
        return {i[4][0] for i in socket.getaddrinfo(a, None)} & {
            i[4][0] for i in socket.getaddrinfo(b, None)
        } != set()
    except (socket.gaierror, UnicodeError):
        return False


def _join(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def run_journal_nodes_action(action: str, conf, env: DaemonEnv) -> int:
    """``start``/``stop``/``status`` every JournalNode of this host (see
    :func:`plan_local_journal_nodes`); the status is 1 when any of them failed."""
    if action not in ACTIONS:
        raise UsageError(f"the JournalNodes take start, stop or status, not '{action}'")
    plans, note = plan_local_journal_nodes(conf, env.ident)
    if note and action == "start":
        _say(note)
    status = 0
    for plan in plans:
        node_env = env.with_ident(plan.ident)
        if len(plans) > 1:
            _say(f"JournalNode {plan.address}:")
        if action == "start":
            generic = [f"-D{key}={value}" for key, value in plan.overrides]
            result = start_daemon(node_env, "journalnode", generic)
        elif action == "stop":
            result = stop_daemon(node_env, "journalnode")
        else:
            result = daemon_status(node_env, "journalnode")
        status = status or result
    return status


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def _started_line(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                if STARTED_MARK in line:
                    return line.rstrip("\n")
    except FileNotFoundError:
        return None
    return None


def _tail(path: str, count: int) -> list[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return [line.rstrip("\n") for line in f.readlines()[-count:]]
    except FileNotFoundError:
        return []


def script_main(prog: str, body: Callable[[], int]) -> int:
    """Run ``body`` for an sbin script: a usage error is one line and exit 2, any other
    error one line and exit 1, never a traceback (the operator sees ``prog: reason``)."""
    from hadoop_qjm.common.exceptions import one_line_message

    try:
        return body()
    except UsageError as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the operator sees one line, never a traceback
        print(f"{prog}: {one_line_message(e)}", file=sys.stderr)
        return 1


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m hadoop_qjm.tools.daemon_control journalnodes (start|stop|status)``: what
    ``sbin/start-journalnodes.sh`` and ``stop-journalnodes.sh`` run (the configuration
    directory is ``$HADOOP_CONF_DIR``)."""
    args = list(sys.argv[1:] if argv is None else argv)

    def body() -> int:
        if len(args) != 2 or args[0] != "journalnodes":
            raise UsageError("usage: daemon_control journalnodes (start|stop|status)")
        env = DaemonEnv.from_environ()
        return run_journal_nodes_action(args[1], load_configuration(env.conf_dir), env)

    return script_main("journalnodes", body)


if __name__ == "__main__":
    sys.exit(main())
