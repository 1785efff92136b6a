"""MiniJournalCluster: N JournalNodes on 127.0.0.1 for tests, in this process or as processes.

::

    with MiniJournalCluster(num_journal_nodes=3) as cluster:
        uri = cluster.quorum_journal_uri("test-journal")
        cluster.stop_journal_node(0)
        cluster.restart_journal_node(0)      # same ports, same directory

Data lives in ``<base_dir>/journalnode-<i>/<jid>/current`` (Hadoop's layout).
Ports are chosen by the OS on first start and kept across restarts. With
``processes=True`` each node is a real ``hdfs-py journalnode`` process, stopped
with SIGTERM and, if it does not exit, killed by pid.

Secured: pass a ``conf`` holding the security properties (e.g.
:func:`hadoop_qjm.common.security.certs.secure_conf_properties`) and every node runs
mutual TLS with them; clients built from :attr:`MiniJournalCluster.conf` talk TLS too.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from pathlib import Path

from hadoop_qjm.conf import Configuration
from hadoop_qjm.testing.daemon_process import DaemonProcess

__all__ = ["MiniJournalCluster", "JournalNodeProcess"]

_STARTED = re.compile(
    r"JournalNode started pid=(\d+) rpc=(\S+):(\d+) http=(\S+):(\d+)(?: https=(\S+):(\d+))?"
)


class JournalNodeProcess(DaemonProcess):
    """One ``hdfs-py journalnode`` child process (stderr to ``log_path``)."""

    what = "JournalNode"

    def __init__(self, conf_dir: Path, log_path: Path, start_timeout_s: float = 30.0) -> None:
        super().__init__(conf_dir, log_path, ["journalnode"], _STARTED, start_timeout_s)
        m = self.started_match
        self.rpc_port = int(m.group(3))
        self.http_port = int(m.group(5))
        self.https_port = int(m.group(7) or 0)


class MiniJournalCluster:
    """``num_journal_nodes`` JournalNodes on 127.0.0.1, ports chosen by the OS."""

    def __init__(
        self,
        num_journal_nodes: int = 3,
        base_dir: str | os.PathLike[str] | None = None,
        conf: Configuration | None = None,
        *,
        processes: bool = False,
        start: bool = True,
        node_kwargs: dict | None = None,
    ) -> None:
        self._own_base_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="minijournalcluster-"))
        self.conf = conf.copy() if conf is not None else Configuration()
        self.processes = processes
        self.num_journal_nodes = num_journal_nodes
        self._node_kwargs = node_kwargs or {}
        self.rpc_ports = [0] * num_journal_nodes
        self.http_ports = [0] * num_journal_nodes
        self.https_ports = [0] * num_journal_nodes
        self.nodes: list[object | None] = [None] * num_journal_nodes
        if start:
            try:
                for i in range(num_journal_nodes):
                    self.restart_journal_node(i)
            except BaseException:
                self.shutdown()
                raise

    # ---- layout ---------------------------------------------------------------------------------
    def journal_node_dir(self, i: int) -> Path:
        return self.base_dir / f"journalnode-{i}"

    def journal_dir(self, i: int, jid: str) -> Path:
        return self.journal_node_dir(i) / jid

    def current_dir(self, i: int, jid: str) -> Path:
        return self.journal_dir(i, jid) / "current"

    def node_conf(self, i: int) -> Configuration:
        conf = self.conf.copy()
        conf.set("dfs.journalnode.edits.dir", str(self.journal_node_dir(i)))
        conf.set("dfs.journalnode.rpc-address", f"127.0.0.1:{self.rpc_ports[i]}")
        conf.set("dfs.journalnode.http-address", f"127.0.0.1:{self.http_ports[i]}")
        conf.set("dfs.journalnode.https-address", f"127.0.0.1:{self.https_ports[i]}")
        return conf

    def quorum_journal_uri(self, jid: str) -> str:
        hosts = ";".join(f"127.0.0.1:{port}" for port in self.rpc_ports)
        return f"qjournal://{hosts}/{jid}"

    def rpc_address(self, i: int) -> tuple[str, int]:
        return "127.0.0.1", self.rpc_ports[i]

    def http_address(self, i: int) -> tuple[str, int]:
        """Node ``i``'s plain HTTP listener (port 0 when it has none: HTTPS_ONLY)."""
        return "127.0.0.1", self.http_ports[i]

    def https_address(self, i: int) -> tuple[str, int]:
        """Node ``i``'s HTTPS listener (port 0 when it has none: HTTP_ONLY)."""
        return "127.0.0.1", self.https_ports[i]

    def journal_node(self, i: int):
        """The in-process JournalNode ``i`` (None while stopped, or in processes mode)."""
        node = self.nodes[i]
        return None if self.processes else node

    def is_running(self, i: int) -> bool:
        node = self.nodes[i]
        if node is None:
            return False
        if self.processes:
            return node.popen.poll() is None
        return not node.is_stopped

    # ---- lifecycle ------------------------------------------------------------------------------
    def share_edits(self, jid: str) -> None:
        """Give every node ``dfs.namenode.shared.edits.dir`` naming them all, and restart
        each: now they know their peers and run a JournalNodeSyncer for ``jid``."""
        self.conf.set("dfs.namenode.shared.edits.dir", self.quorum_journal_uri(jid))
        for i in range(len(self.nodes)):
            self.restart_journal_node(i)

    def restart_journal_node(self, i: int) -> None:
        """Start node ``i`` (again), on the ports it had before, over the same directory."""
        if self.nodes[i] is not None:
            self.stop_journal_node(i)
        self.journal_node_dir(i).mkdir(parents=True, exist_ok=True)
        conf = self.node_conf(i)
        if self.processes:
            conf_dir = self.base_dir / f"conf-{i}"
            conf_dir.mkdir(exist_ok=True)
            conf.write_xml(conf_dir / "hdfs-site.xml")
            node = JournalNodeProcess(conf_dir, self.base_dir / f"journalnode-{i}.log")
            self.nodes[i] = node
            self.rpc_ports[i], self.http_ports[i] = node.rpc_port, node.http_port
            self.https_ports[i] = node.https_port
        else:
            from hadoop_qjm.qjournal.server.journal_node import JournalNode

            node = JournalNode(conf, **self._node_kwargs)
            node.start()
            self.nodes[i] = node
            self.rpc_ports[i], self.http_ports[i] = node.rpc_address[1], node.http_address[1]
            self.https_ports[i] = node.https_address[1]

    def stop_journal_node(self, i: int) -> None:
        node = self.nodes[i]
        self.nodes[i] = None
        if node is None:
            return
        if self.processes:
            node.terminate()
        else:
            node.stop()

    def kill_journal_node(self, i: int) -> None:
        """SIGKILL node ``i`` (processes mode only): no shutdown code runs."""
        if not self.processes:
            raise ValueError("kill_journal_node needs processes=True")
        node = self.nodes[i]
        self.nodes[i] = None
        if node is not None:
            node.kill()

    def shutdown(self, delete_dirs: bool | None = None) -> None:
        errors = []
        for i in range(self.num_journal_nodes):
            try:
                self.stop_journal_node(i)
            except Exception as e:  # noqa: BLE001 - stop the others
                errors.append(e)
        if delete_dirs if delete_dirs is not None else self._own_base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)
        if errors:
            raise errors[0]

    def wait_active(self, timeout_s: float = 30.0) -> None:
        """Wait until every running node answers on its RPC port (with a TLS handshake when
        the cluster is secured, so that no node counts a failed one)."""
        from hadoop_qjm.common.security import SSLFactory
        from hadoop_qjm.qjournal.protocol.sockets import as_client_socket_factory

        factory = as_client_socket_factory(SSLFactory(self.conf).rpc_client_socket_factory())
        deadline = time.monotonic() + timeout_s
        for i in range(self.num_journal_nodes):
            while True:
                try:
                    factory.connect(*self.rpc_address(i), 1.0).close()
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"JournalNode {i} did not come up") from None
                    time.sleep(0.05)

    def __enter__(self) -> MiniJournalCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def __str__(self) -> str:
        return f"MiniJournalCluster({self.num_journal_nodes} nodes at {self.base_dir})"
