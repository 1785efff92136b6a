"""MiniHACluster: 3 JournalNode processes and an HA pair of NameNode processes on 127.0.0.1
(or three to five NameNodes: ``num_namenodes``).

::

    with MiniHACluster(base_dir) as cluster:      # format nn1, bootstrap nn2, start both
        cluster.transition_to_active("nn1")
        with cluster.client() as fs:              # fails over between nn1 and nn2
            fs.mkdirs("/a")
        cluster.failover("nn1", "nn2")

Everything a Hadoop operator would run, run as commands: ``namenode -format``,
``namenode -bootstrapStandby`` (of nn2, and of nn3 … with more), the ``namenode`` daemons
(``-nnid nn1`` / ``nn2`` …; all start in standby), HAServiceProtocol calls as ``haadmin`` makes them. One configuration
directory (``conf_dir``) serves every process.

The NameNodes of a pair must know each other's addresses before they start (the standby
asks the active to roll and uploads its checkpoints there), so their four ports are
chosen by the OS up front: bound to port 0 and released just before the daemons start
(Hadoop's MiniDFSCluster does the same). JournalNodes bind port 0 themselves.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

from hadoop_qjm.conf import Configuration
from hadoop_qjm.ha.ha_service_protocol import HAServiceState
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.testing import ports as test_ports
from hadoop_qjm.testing.daemon_process import DaemonProcess
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.name_node_process import NameNodeProcess, child_env, write_conf_dir

__all__ = ["MiniHACluster", "NAMESERVICE", "NNIDS", "ZKFCProcess", "free_ports"]

_ZKFC_STARTED = re.compile(r"ZKFailoverController started pid=(\d+) rpc=(\S+):(\d+) nn=(\S+)")

#: The controllers' settings in an automatic-failover cluster: Hadoop's defaults, but a
#: short session (a dead controller's lock goes after it) and a bounded health RPC (a
#: frozen NameNode counts as not responding after it).
AUTO_FAILOVER_PROPERTIES: dict[str, object] = {
    "dfs.ha.automatic-failover.enabled": "true",
    "dfs.ha.fencing.methods": "shell(/bin/true)",
    "ha.zookeeper.session-timeout.ms": 3000,
    "ha.health-monitor.check-interval.ms": 1000,
    "ha.health-monitor.rpc-timeout.ms": 3000,
    "ha.failover-controller.graceful-fence.rpc-timeout.ms": 2000,
}


class ZKFCProcess(DaemonProcess):
    """One ``hdfs-py zkfc -nnid NNID`` process."""

    what = "ZKFailoverController"

    def __init__(self, conf_dir: Path, log_path: Path, nnid: str, start_timeout_s: float = 60.0):
        super().__init__(
            conf_dir, log_path, ["zkfc", "-nnid", nnid], _ZKFC_STARTED, start_timeout_s
        )
        self.nnid = nnid
        self.rpc_port = int(self.started_match.group(3))


NAMESERVICE = "mycluster"
#: The NameNodes of a default cluster (``num_namenodes=2``).
NNIDS = ("nn1", "nn2")
JOURNAL_ID = NAMESERVICE


def free_ports(n: int) -> list[int]:
    """``n`` distinct free ports on 127.0.0.1, outside the OS's ephemeral range
    (:mod:`hadoop_qjm.testing.ports`: no port-0 bind elsewhere can take one meanwhile)."""
    return test_ports.free_ports(n)


class MiniHACluster:
    """See the module docstring. ``properties`` are added to the shared hdfs-site.xml;
    with ``start=False`` only the JournalNodes start (then call :meth:`format_and_bootstrap`
    and :meth:`start_namenode` yourself). ``secure=True`` makes a test PKI in
    ``<base_dir>/pki`` and runs every channel over mutual TLS, HTTPS only
    (docs/security.md). ``num_namenodes`` (2) NameNodes nn1, nn2, …: :attr:`nnids`."""

    def __init__(
        self,
        base_dir: str | Path | None = None,
        *,
        properties: Mapping[str, object] | None = None,
        num_journal_nodes: int = 3,
        start: bool = True,
        secure: bool = False,
        zookeeper: str | None = None,
        num_namenodes: int = len(NNIDS),
    ) -> None:
        if num_namenodes < 2:
            raise ValueError(f"an HA cluster needs two or more NameNodes, not {num_namenodes}")
        self.nnids = tuple(f"nn{i}" for i in range(1, num_namenodes + 1))
        self._own_base_dir = base_dir is None
        self.base_dir = Path(base_dir or tempfile.mkdtemp(prefix="miniha-"))
        self.base_dir.mkdir(parents=True, exist_ok=True)
        self.conf_dir = self.base_dir / "conf"
        self.secure = secure
        self.properties: dict[str, object] = {}
        if secure:
            from hadoop_qjm.common.security.certs import secure_conf_properties

            self.properties.update(secure_conf_properties(self.base_dir / "pki", ["localhost"]))
        #: ``ha.zookeeper.quorum`` when automatic failover is on (then start_zkfc(nnid)).
        self.zookeeper = zookeeper
        if zookeeper is not None:
            self.properties.update(AUTO_FAILOVER_PROPERTIES)
            self.properties["ha.zookeeper.quorum"] = zookeeper
        self.properties.update(properties or {})
        self.namenodes: dict[str, NameNodeProcess | None] = dict.fromkeys(self.nnids)
        self.zkfcs: dict[str, ZKFCProcess | None] = dict.fromkeys(self.nnids)
        jn_conf = Configuration()
        jn_conf.set("dfs.ha.tail-edits.in-progress", "true")
        for key, value in self.properties.items():
            if key.startswith(("dfs.journalnode.", "hadoop.", "dfs.http.policy")):
                jn_conf.set(key, value)
        self.journal_nodes = MiniJournalCluster(
            num_journal_nodes,
            self.base_dir / "journalnodes",
            jn_conf,
            processes=True,
        )
        try:
            n = len(self.nnids)
            ports = free_ports(4 * n)
            self.rpc_ports = dict(zip(self.nnids, ports[:n]))
            self.http_ports = dict(zip(self.nnids, ports[n : 2 * n]))
            self.https_ports = dict(zip(self.nnids, ports[2 * n : 3 * n]))
            self.zkfc_ports = dict(zip(self.nnids, ports[3 * n :]))
            self._write_conf()
        except BaseException:
            self.shutdown()
            raise
        if start:
            try:
                self.format_and_bootstrap()
                for nnid in self.nnids:
                    self.start_namenode(nnid)
            except BaseException:
                self.shutdown()
                raise

    # ---- configuration -------------------------------------------------------------------------
    def name_dir(self, nnid: str) -> Path:
        return self.base_dir / nnid / "name"

    def log_path(self, nnid: str) -> Path:
        return self.base_dir / f"{nnid}.log"

    def _write_conf(self) -> None:
        props: dict[str, object] = {
            "dfs.nameservices": NAMESERVICE,
            f"dfs.ha.namenodes.{NAMESERVICE}": ",".join(self.nnids),
            "fs.defaultFS": f"hdfs://{NAMESERVICE}",
            f"dfs.client.failover.proxy.provider.{NAMESERVICE}": (
                "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider"
            ),
            "dfs.namenode.shared.edits.dir": self.journal_nodes.quorum_journal_uri(JOURNAL_ID),
            "dfs.ha.tail-edits.in-progress": "true",
            "dfs.ha.tail-edits.period": "50ms",
            "dfs.ha.log-roll.period": "30s",
            "dfs.namenode.checkpoint.check.period": "1s",
            "dfs.client.failover.sleep.base.millis": 20,
            "dfs.client.failover.sleep.max.millis": 200,
        }
        for nnid in self.nnids:
            props[f"dfs.namenode.rpc-address.{NAMESERVICE}.{nnid}"] = (
                f"127.0.0.1:{self.rpc_ports[nnid]}"
            )
            props[f"dfs.namenode.http-address.{NAMESERVICE}.{nnid}"] = (
                f"127.0.0.1:{self.http_ports[nnid]}"
            )
            props[f"dfs.namenode.https-address.{NAMESERVICE}.{nnid}"] = (
                f"127.0.0.1:{self.https_ports[nnid]}"
            )
            props[f"dfs.namenode.name.dir.{NAMESERVICE}.{nnid}"] = str(self.name_dir(nnid))
            props[f"dfs.ha.zkfc.port.{NAMESERVICE}.{nnid}"] = self.zkfc_ports[nnid]
        props.update(self.properties)
        write_conf_dir(self.conf_dir, props)

    def client_conf(self) -> Configuration:
        conf = Configuration()
        conf.add_conf_dir(self.conf_dir)
        return conf

    # ---- commands ------------------------------------------------------------------------------
    def run_hdfs(self, *args: str, timeout_s: float = 120.0) -> subprocess.CompletedProcess:
        """``hdfs-py --config conf_dir ARGS...``; the completed process (output captured)."""
        return subprocess.run(
            [sys.executable, "-m", "hadoop_qjm.cli", "--config", str(self.conf_dir), *args],
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=timeout_s,
        )

    def _check(self, result: subprocess.CompletedProcess, what: str) -> None:
        if result.returncode != 0:
            raise RuntimeError(
                f"{what} failed with status {result.returncode}: "
                f"{result.stderr.strip()[-2000:] or result.stdout.strip()[-2000:]}"
            )

    def format_and_bootstrap(self) -> None:
        """``namenode -format`` as nn1 (local dirs and every JournalNode), then
        ``namenode -bootstrapStandby`` as nn2 (nn3, …) while nn1 runs (it fetches nn1's
        image)."""
        self._check(
            self.run_hdfs("namenode", "-nnid", "nn1", "-format", "-nonInteractive"), "format"
        )
        self.start_namenode("nn1")
        for nnid in self.nnids[1:]:
            self._check(
                self.run_hdfs("namenode", "-nnid", nnid, "-bootstrapStandby", "-nonInteractive"),
                f"bootstrapStandby of {nnid}",
            )

    def start_namenode(self, nnid: str) -> NameNodeProcess:
        node = self.namenodes.get(nnid)
        if node is not None and node.popen.poll() is None:
            return node
        node = NameNodeProcess(self.conf_dir, self.log_path(nnid), namenode_args=("-nnid", nnid))
        self.namenodes[nnid] = node
        return node

    def stop_namenode(self, nnid: str) -> int | None:
        """SIGTERM (SIGKILL if it does not stop); its exit status, or None if not started.
        A frozen (SIGSTOPped) NameNode is resumed first, or SIGTERM would wait for it."""
        node, self.namenodes[nnid] = self.namenodes.get(nnid), None
        if node is None:
            return None
        node.kill(signal.SIGCONT)
        return node.terminate()

    # ---- failover controllers (automatic failover) --------------------------------------------
    def zkfc_log_path(self, nnid: str) -> Path:
        return self.base_dir / f"zkfc-{nnid}.log"

    def format_zk(self, *args: str) -> subprocess.CompletedProcess:
        """``zkfc -formatZK -nonInteractive ARGS`` (as nn1); the completed process."""
        return self.run_hdfs("zkfc", "-nnid", "nn1", "-formatZK", "-nonInteractive", *args)

    def start_zkfc(self, nnid: str) -> ZKFCProcess:
        node = self.zkfcs.get(nnid)
        if node is not None and node.popen.poll() is None:
            return node
        node = ZKFCProcess(self.conf_dir, self.zkfc_log_path(nnid), nnid)
        self.zkfcs[nnid] = node
        return node

    def stop_zkfc(self, nnid: str) -> int | None:
        """SIGTERM (SIGKILL if it does not stop); its exit status, or None if not started."""
        node, self.zkfcs[nnid] = self.zkfcs.get(nnid), None
        if node is None:
            return None
        node.kill(signal.SIGCONT)
        return node.terminate()

    def zkfc(self, nnid: str) -> ZKFCProcess:
        node = self.zkfcs.get(nnid)
        if node is None:
            raise KeyError(f"ZKFC {nnid} is not running")
        return node

    def start_auto_failover(self, timeout_s: float = 120.0) -> str:
        """``zkfc -formatZK``, every NameNode's controller; waits until they made a NameNode
        active and the others standby. Returns the active's id."""
        self._check(self.format_zk(), "zkfc -formatZK")
        for nnid in self.nnids:
            self.start_zkfc(nnid)
        return self.wait_roles(timeout_s=timeout_s)

    def wait_roles(self, active: str | None = None, timeout_s: float = 120.0) -> str:
        """Wait (bounded) until one NameNode (``active`` if given) is active and every other
        running one standby; returns the active's id."""
        deadline = time.monotonic() + timeout_s
        while True:
            running = [
                n for n, p in self.namenodes.items() if p is not None and p.popen.poll() is None
            ]
            states = {n: s for n, s in self.states(timeout_s=2.0).items() if n in running}
            actives = [n for n, state in states.items() if state == str(HAServiceState.ACTIVE)]
            settled = {str(HAServiceState.ACTIVE), str(HAServiceState.STANDBY)}
            if (
                len(actives) == 1
                and (active is None or actives == [active])
                and all(state in settled for state in states.values())
            ):
                return actives[0]
            if time.monotonic() > deadline:
                raise TimeoutError(f"no single active NameNode within {timeout_s}s: {states}")
            time.sleep(0.05)

    def states(self, timeout_s: float = 10.0) -> dict[str, str]:
        """Every NameNode's HA state as it answers now (``unreachable`` if it does not
        answer within ``timeout_s``)."""
        result = {}
        for nnid in self.nnids:
            try:
                result[nnid] = self.service_state(nnid, timeout_s)
            except Exception:  # noqa: BLE001 - a dead or frozen NameNode
                result[nnid] = "unreachable"
        return result

    def namenode(self, nnid: str) -> NameNodeProcess:
        node = self.namenodes.get(nnid)
        if node is None:
            raise KeyError(f"NameNode {nnid} is not running")
        return node

    def proxy(self, nnid: str, timeout_s: float = 60.0) -> NameNodeProxy:
        from hadoop_qjm.namenode.protocol.client import client_socket_factory

        return NameNodeProxy(
            "127.0.0.1",
            self.rpc_ports[nnid],
            timeout_s=timeout_s,
            socket_factory=client_socket_factory(self.client_conf()),
        )

    def client(self, **proxy_kwargs: object):
        """A client of the nameservice that fails over between the NameNodes;
        ``proxy_kwargs`` go to each NameNode's proxy (``timeout_s``: a per-call bound, so
        that a call to a frozen NameNode fails over instead of hanging)."""
        from hadoop_qjm.namenode.ha.failover_proxy import namenode_proxy_from_conf

        return namenode_proxy_from_conf(self.client_conf(), **proxy_kwargs)

    def transition_to_active(self, nnid: str) -> None:
        with self.proxy(nnid) as proxy:
            proxy.transition_to_active()

    def transition_to_standby(self, nnid: str) -> None:
        with self.proxy(nnid) as proxy:
            proxy.transition_to_standby()

    def service_state(self, nnid: str, timeout_s: float = 10.0) -> str:
        with self.proxy(nnid, timeout_s=timeout_s) as proxy:
            return str(proxy.get_service_status().state)

    # ---- lifecycle -----------------------------------------------------------------------------
    def shutdown(self) -> None:
        errors: list[BaseException] = []
        for nnid in self.nnids:
            try:
                self.stop_zkfc(nnid)
            except Exception as e:  # noqa: BLE001 - stop the rest
                errors.append(e)
        for nnid in self.nnids:
            try:
                self.stop_namenode(nnid)
            except Exception as e:  # noqa: BLE001 - stop the rest
                errors.append(e)
        try:
            self.journal_nodes.shutdown(delete_dirs=False)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
        if self._own_base_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)
        if errors:
            raise errors[0]

    def __enter__(self) -> MiniHACluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()
