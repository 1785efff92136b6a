"""MiniZooKeeperCluster: real ZooKeeper servers as Java processes on 127.0.0.1, for tests,
the quickstart and benchmarks.

::

    with MiniZooKeeperCluster(tmp_path / "zk", num_servers=3) as zk:  # waits for a leader
        client = KazooClient(hosts=zk.connect_string)
        client.start()
        zk.kill_server(0)                 # kill -9; two of three still make a quorum
        client.retry(client.ensure_path, "/a")
        zk.restart_server(0)              # same ports, same data dir; waits until it serves

One server runs ``ZooKeeperServerMain`` (standalone); an odd number ``n > 1`` runs ``n``
``QuorumPeerMain`` ensemble members. Server ``i`` (0-based; its ``myid`` is ``i + 1``)
lives in ``<base_dir>/zk<i>/``: ``zoo.cfg``, ``data/`` and ``zookeeper.log`` (the JVM's
stdout and stderr). Each JVM runs in its own session and is stopped by its pid only.

ZooKeeper will not bind port 0 (``clientPort=0`` is rejected), so the ports are picked
free up front with :func:`~hadoop_qjm.testing.mini_ha_cluster.free_ports` (below the
kernel's ephemeral range: nothing else is given one meanwhile) and kept for
the cluster's life: a restarted server comes back on the same ports. A server is
"serving" once its ``srvr`` four-letter word reports a ``Mode:`` (``standalone``, or
``leader`` / ``follower``); ``ruok`` is no use for that, it answers ``imok`` before the
server serves anything.

:func:`find_zookeeper` locates ``java`` and ZooKeeper's jars (``$ZOOKEEPER_HOME``, else
Debian's ``/usr/share/java/zookeeper.jar``, else ``/usr/share/zookeeper``) and raises
:class:`ZooKeeperNotFoundError`, with a one-line install hint, when either is missing.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import weakref
from collections.abc import Mapping
from pathlib import Path

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.testing.mini_ha_cluster import free_ports

__all__ = [
    "JVM_OPTS",
    "MiniZooKeeperCluster",
    "ZooKeeperNotFoundError",
    "ZooKeeperStartError",
    "find_zookeeper",
    "four_letter_word",
]

#: Small JVMs: the test machines have 2 cores and run several JVMs at once.
JVM_OPTS = (
    "-Xmx128m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Djava.net.preferIPv4Stack=true",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
)

_DEBIAN_JAR = Path("/usr/share/java/zookeeper.jar")
# The jar's manifest Class-Path names its dependencies but no SLF4J binding.
_DEBIAN_LOG_BINDING = Path("/usr/share/java/slf4j-simple.jar")
_DEBIAN_HOME = Path("/usr/share/zookeeper")
_ZK_JAR = re.compile(r"^zookeeper(-\d[\w.\-]*)?\.jar$")
_INSTALL_ZK = (
    "run 'apt-get install -y zookeeper' (Debian) or set ZOOKEEPER_HOME to a ZooKeeper installation"
)
_STANDALONE_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
_QUORUM_MAIN = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
_MODE = re.compile(r"^Mode: (\w+)", re.MULTILINE)


class ZooKeeperNotFoundError(IOException):
    """ZooKeeper's jars or ``java`` are not installed; the message is one line saying how
    to install them."""


class ZooKeeperStartError(IOException):
    """A ZooKeeper server exited or did not serve in time; the message ends with the tail
    of its log."""


def _home_classpath(home: Path) -> list[str] | None:
    """The jars of a ZooKeeper installation (a release tarball keeps them in ``lib/``), its
    ``conf/`` first (the tarball's logback.xml); None without a zookeeper jar."""
    jars = sorted(home.glob("lib/*.jar")) + sorted(home.glob("*.jar"))
    if not any(_ZK_JAR.match(jar.name) for jar in jars):
        return None
    conf = [str(home / "conf")] if (home / "conf").is_dir() else []
    return conf + [str(jar) for jar in jars]


def find_zookeeper(environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """``(java_path, classpath)`` of the ZooKeeper to run, looked up in ``environ``
    (default ``os.environ``): ``$ZOOKEEPER_HOME`` if set, else Debian's
    ``/usr/share/java/zookeeper.jar``, else ``/usr/share/zookeeper``; ``$JAVA_HOME/bin/java``
    if it exists, else ``java`` on ``$PATH`` (as zkEnv.sh does). Raises
    :class:`ZooKeeperNotFoundError` when either is missing."""
    env = os.environ if environ is None else environ
    home = env.get("ZOOKEEPER_HOME")
    if home:
        # An explicit ZOOKEEPER_HOME is never silently replaced by another installation.
        classpath = _home_classpath(Path(home))
        if classpath is None:
            raise ZooKeeperNotFoundError(
                f"ZooKeeper is not installed in ZOOKEEPER_HOME={home} (no zookeeper jar in it "
                f"or its lib/): {_INSTALL_ZK}"
            )
    elif _DEBIAN_JAR.is_file():
        classpath = [str(_DEBIAN_JAR)]
        if _DEBIAN_LOG_BINDING.is_file():
            classpath.append(str(_DEBIAN_LOG_BINDING))
    else:
        classpath = _home_classpath(_DEBIAN_HOME)
        if classpath is None:
            raise ZooKeeperNotFoundError(f"ZooKeeper is not installed: {_INSTALL_ZK}")
    java_home = env.get("JAVA_HOME")
    java: str | None = None
    if java_home and os.access(Path(java_home, "bin", "java"), os.X_OK):
        java = str(Path(java_home, "bin", "java"))
    else:
        java = shutil.which("java", path=env.get("PATH", os.defpath))
    if java is None:
        raise ZooKeeperNotFoundError(
            "Java is not installed (no java in JAVA_HOME or on PATH): run 'apt-get install -y "
            "default-jre-headless' (Debian) or set JAVA_HOME to a Java installation"
        )
    return java, os.pathsep.join(classpath)


def four_letter_word(port: int, word: str, timeout_s: float = 2.0) -> str:
    """Send ZooKeeper's four-letter ``word`` (``srvr``, ``ruok``, ``mntr``…) to
    127.0.0.1:``port`` and return the whole answer (the server closes after it)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout_s) as sock:
        sock.sendall(word.encode("ascii"))
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


class _ServerProcess:
    """One ZooKeeper JVM: stdout and stderr appended to ``log_path``, its own session."""

    def __init__(self, argv: list[str], cwd: Path, log_path: Path) -> None:
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in _finish()
        try:
            self.popen = subprocess.Popen(
                argv,
                cwd=cwd,
                stdin=subprocess.DEVNULL,
                stdout=self._log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        except BaseException:
            self._log.close()
            raise
        self.pid = self.popen.pid
        self._status: int | None = None

    def running(self) -> bool:
        return self.popen.poll() is None

    def signal(self, sig: int) -> None:
        if self.running():
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass

    def wait_stopped(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` until the process and every thread of it are stopped
        (state T), or it is gone."""
        deadline = time.monotonic() + timeout_s
        task_dir = Path(f"/proc/{self.pid}/task")
        while time.monotonic() < deadline:
            if not task_dir.exists():
                return
            try:
                states = [
                    (task / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    for task in task_dir.iterdir()
                ]
            except (FileNotFoundError, IndexError):  # a thread ended meanwhile: look again
                states = ["R"]
            if all(state in ("T", "t", "Z", "X") for state in states):
                return
            time.sleep(0.01)

    def finish(self, timeout_s: float) -> int | None:
        """Wait up to ``timeout_s`` for the exit; SIGKILL then. Returns the exit status."""
        if self._status is None:
            try:
                self.popen.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.signal(signal.SIGKILL)
            self._status = self.popen.wait(30)
            self._log.close()
        return self._status

    def log_tail(self, chars: int = 3000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-chars:]
        except OSError as e:
            return f"(no log: {e})"


def _kill_all(servers: list[_ServerProcess | None]) -> None:
    # The garbage-collection / interpreter-exit net: no JVM outlives its cluster.
    for server in servers:
        if server is not None:
            server.signal(signal.SIGKILL)
            server.finish(30)


class MiniZooKeeperCluster:
    """See the module docstring. With ``start=False`` nothing runs until
    :meth:`start_server` (each ``i``, ``wait=False``) and :meth:`wait_serving`."""

    #: How long :meth:`stop_server` waits after SIGTERM before SIGKILL.
    stop_timeout_s = 10.0

    def __init__(
        self,
        base_dir: str | Path,
        num_servers: int = 1,
        *,
        tick_time_ms: int = 200,
        start: bool = True,
        start_timeout_s: float = 60.0,
    ) -> None:
        if num_servers < 1 or num_servers % 2 == 0:
            raise ValueError(f"num_servers must be 1 or an odd number, not {num_servers}")
        # Fail before any directory or port is taken when ZooKeeper is missing.
        self.java, self.classpath = find_zookeeper()
        self.base_dir = Path(base_dir)
        self.num_servers = num_servers
        self.tick_time_ms = tick_time_ms
        self.start_timeout_s = start_timeout_s
        ports = free_ports(num_servers if num_servers == 1 else 3 * num_servers)
        self.client_ports: list[int] = ports[:num_servers]
        #: Ensemble only: follower-to-leader and leader-election ports per server.
        self.quorum_ports: list[int] = ports[num_servers : 2 * num_servers]
        self.election_ports: list[int] = ports[2 * num_servers :]
        self.connect_string = ",".join(f"127.0.0.1:{port}" for port in self.client_ports)
        self._servers: list[_ServerProcess | None] = [None] * num_servers
        self._finalizer = weakref.finalize(self, _kill_all, self._servers)
        for i in range(num_servers):
            self.data_dir(i).mkdir(parents=True, exist_ok=True)
            self._write_conf(i)
        if start:
            try:
                for i in range(num_servers):
                    self.start_server(i, wait=False)
                self.wait_serving(timeout_s=start_timeout_s)
            except BaseException:
                self.shutdown()
                raise

    # ---- layout --------------------------------------------------------------------------------
    def server_dir(self, i: int) -> Path:
        return self.base_dir / f"zk{i}"

    def data_dir(self, i: int) -> Path:
        return self.server_dir(i) / "data"

    def log_path(self, i: int) -> Path:
        return self.server_dir(i) / "zookeeper.log"

    def conf_path(self, i: int) -> Path:
        return self.server_dir(i) / "zoo.cfg"

    @property
    def ensemble(self) -> bool:
        return self.num_servers > 1

    def _write_conf(self, i: int) -> None:
        tick = self.tick_time_ms
        lines = [
            f"tickTime={tick}",
            f"dataDir={self.data_dir(i)}",
            f"clientPort={self.client_ports[i]}",
            "clientPortAddress=127.0.0.1",
            "admin.enableServer=false",
            "4lw.commands.whitelist=*",
            # ZooKeeper's defaults (2 and 20 ticks) would cap sessions at 4 s with 200 ms ticks.
            "minSessionTimeout=1000",
            "maxSessionTimeout=60000",
            # A 4 MB (not 64 MB) preallocated transaction log: many small test servers.
            "preAllocSize=4096",
        ]
        if self.ensemble:
            # Whole ticks that leave room for a slow JVM on a busy 2-core machine:
            # ≥ 5 s to sync with a new leader, ≥ 2 s of silence before a follower is dropped.
            lines += [
                f"initLimit={max(10, math.ceil(5000 / tick))}",
                f"syncLimit={max(5, math.ceil(2000 / tick))}",
            ]
            lines += [
                f"server.{k + 1}=127.0.0.1:{self.quorum_ports[k]}:{self.election_ports[k]}"
                for k in range(self.num_servers)
            ]
            (self.data_dir(i) / "myid").write_text(f"{i + 1}\n")
        self.conf_path(i).write_text("\n".join(lines) + "\n")

    # ---- processes -----------------------------------------------------------------------------
    @property
    def pids(self) -> list[int | None]:
        """The pid of each server's JVM, None where it is not running."""
        return [s.pid if s is not None and s.running() else None for s in self._servers]

    def is_running(self, i: int) -> bool:
        server = self._servers[i]
        return server is not None and server.running()

    def start_server(self, i: int, *, wait: bool = True, timeout_s: float | None = None) -> int:
        """Start server ``i`` (on its ports, with its data dir); with ``wait``, return once it
        serves (an ensemble member serves only with a quorum up). Returns its pid."""
        if self.is_running(i):
            raise ZooKeeperStartError(f"ZooKeeper server {i} is already running")
        main = _QUORUM_MAIN if self.ensemble else _STANDALONE_MAIN
        argv = [self.java, *JVM_OPTS, "-cp", self.classpath, main, str(self.conf_path(i))]
        server = _ServerProcess(argv, self.server_dir(i), self.log_path(i))
        self._servers[i] = server
        if wait:
            self.wait_serving(i, self.start_timeout_s if timeout_s is None else timeout_s)
        return server.pid

    def stop_server(self, i: int, timeout_s: float | None = None) -> int | None:
        """SIGTERM server ``i`` by pid, SIGKILL if it has not exited after ``timeout_s``.
        Returns its exit status (None if it was never started)."""
        server = self._servers[i]
        if server is None:
            return None
        server.signal(signal.SIGTERM)
        return server.finish(self.stop_timeout_s if timeout_s is None else timeout_s)

    def kill_server(self, i: int, sig: int = signal.SIGKILL) -> int | None:
        """Send ``sig`` to server ``i`` by pid; for SIGKILL also wait and return the status.
        Other signals return None: SIGSTOP once the process is stopped (the kernel stops a
        JVM's threads one by one, and a thread still running could answer a call), the
        rest at once."""
        server = self._servers[i]
        if server is None:
            return None
        server.signal(sig)
        if sig == signal.SIGSTOP:
            server.wait_stopped(10.0)
        return server.finish(30) if sig == signal.SIGKILL else None

    def restart_server(self, i: int, *, wait: bool = True, timeout_s: float | None = None) -> int:
        """Stop server ``i`` if it runs, then start it again on the same ports and data dir."""
        self.stop_server(i)
        return self.start_server(i, wait=wait, timeout_s=timeout_s)

    # ---- state ---------------------------------------------------------------------------------
    def four_letter_word(self, i: int, word: str, timeout_s: float = 2.0) -> str:
        return four_letter_word(self.client_ports[i], word, timeout_s)

    def mode(self, i: int) -> str | None:
        """``standalone``, ``leader`` or ``follower`` from server ``i``'s ``srvr``; None when
        it does not answer or does not serve."""
        try:
            match = _MODE.search(self.four_letter_word(i, "srvr", timeout_s=1.0))
        except OSError:
            return None
        return match.group(1) if match else None

    def leader(self) -> int | None:
        """The index of the server that reports itself leader (standalone: 0), if any."""
        for i in range(self.num_servers):
            if self.mode(i) in ("leader", "standalone"):
                return i
        return None

    def wait_serving(self, i: int | None = None, timeout_s: float = 60.0) -> None:
        """Poll ``srvr`` until server ``i`` (default: every server) reports a mode — leader or
        follower in an ensemble. Raises :class:`ZooKeeperStartError`, with the log's tail,
        when a server exits or ``timeout_s`` passes first."""
        deadline = time.monotonic() + timeout_s
        for k in range(self.num_servers) if i is None else [i]:
            while True:
                server = self._servers[k]
                if server is None:
                    raise ZooKeeperStartError(f"ZooKeeper server {k} was not started")
                if not server.running():
                    status = server.finish(0)
                    raise ZooKeeperStartError(
                        f"ZooKeeper server {k} exited with status {status}; "
                        f"{self.log_path(k)}:\n{server.log_tail()}"
                    )
                if self.mode(k) is not None:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise ZooKeeperStartError(
                        f"ZooKeeper server {k} did not serve within {timeout_s}s; "
                        f"{self.log_path(k)}:\n{server.log_tail()}"
                    )
                time.sleep(min(0.05, remaining))

    # ---- lifecycle -----------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Stop every server by pid: SIGTERM to all, then wait, SIGKILL what is left.
        Idempotent."""
        for server in self._servers:
            if server is not None:
                server.signal(signal.SIGTERM)
        deadline = time.monotonic() + self.stop_timeout_s
        for server in self._servers:
            if server is not None:
                server.finish(max(0.0, deadline - time.monotonic()))

    def __enter__(self) -> MiniZooKeeperCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()
