"""In-process HA NameNodes: two (nn1, nn2) or more NameNode daemons of one nameservice over
one MiniJournalCluster.

::

    with MiniJournalCluster(3, conf=journal_node_conf()) as mjc:
        pair = HAPair(ha_conf(base, mjc, "jid"), base)   # both start in standby
        pair["nn1"].transition_to_active()
        ...
        pair.stop()

    three = HAPair(ha_conf(base, mjc, "jid", nnids=("nn1", "nn2", "nn3")), base)

For tests and benchmarks that want the NameNode objects at hand; the process-level
cluster is :mod:`hadoop_qjm.testing.mini_ha_cluster`.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.ha.ha_util import get_namenode_ids, resolve_ha_conf
from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.name_node_core import format_namenode
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster

__all__ = ["NNIDS", "HAPair", "ha_conf", "journal_node_conf", "wait_until"]

NS = "mycluster"
NNIDS = ("nn1", "nn2")


def wait_until(predicate: Callable[[], object], timeout_s: float = 20.0, what: str = "") -> None:
    """Poll ``predicate`` until true; AssertionError naming ``what`` after the deadline."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s}s waiting for {what or predicate}")
        time.sleep(0.01)


def rpc_key(nnid: str) -> str:
    return f"dfs.namenode.rpc-address.{NS}.{nnid}"


def http_key(nnid: str) -> str:
    return f"dfs.namenode.http-address.{NS}.{nnid}"


def journal_node_conf() -> Configuration:
    """JournalNodes serving in-progress tailing from their edits caches."""
    conf = Configuration()
    conf.set("dfs.ha.tail-edits.in-progress", "true")
    return conf


def ha_conf(
    base: Path,
    mjc: MiniJournalCluster,
    jid: str,
    *,
    nnids: Sequence[str] = NNIDS,
    **extra: object,
) -> Configuration:
    """An HA configuration for ``nnids`` (nn1 and nn2; RPC and HTTP on port 0 until they
    start)."""
    conf = Configuration()
    conf.set("dfs.nameservices", NS)
    conf.set(f"dfs.ha.namenodes.{NS}", ",".join(nnids))
    for nn in nnids:
        conf.set(f"dfs.namenode.rpc-address.{NS}.{nn}", "127.0.0.1:0")
        conf.set(f"dfs.namenode.http-address.{NS}.{nn}", "127.0.0.1:0")
        conf.set(f"dfs.namenode.name.dir.{NS}.{nn}", str(base / nn / "name"))
    conf.set("dfs.namenode.shared.edits.dir", mjc.quorum_journal_uri(jid))
    conf.set("dfs.ha.tail-edits.period", "20ms")
    conf.set("dfs.ha.tail-edits.in-progress", "true")
    conf.set("dfs.namenode.checkpoint.check.period", "100ms")
    for key, value in extra.items():
        conf.set(key, value)
    return conf


class HAPair:
    """The NameNodes of ``conf``'s ``dfs.ha.namenodes.mycluster`` (nn1 and nn2, or more):
    the first formatted, every other a copy of its fresh storage (what bootstrapStandby
    makes); all started in standby, unless ``start`` is False for some of them (then
    :meth:`start` each). ``terminations[nnid]`` records each one's terminate calls."""

    def __init__(
        self, conf: Configuration, base: Path, *, start: Sequence[str] | None = None
    ) -> None:
        self.conf = conf
        self.nnids = tuple(get_namenode_ids(conf, NS))
        first = self.nnids[0]
        conf1, _, _ = resolve_ha_conf(conf, first)
        format_namenode(conf1, fs_owner="hdfs")
        for nnid in self.nnids[1:]:
            shutil.copytree(base / first / "name", base / nnid / "name")
        self.terminations: dict[str, list[tuple[int, str]]] = {n: [] for n in self.nnids}
        self.nodes: dict[str, NameNode] = {}
        for nnid in self.nnids if start is None else start:
            self.start(nnid)

    def start(self, nnid: str, **overrides: str) -> NameNode:
        """Start ``nnid`` (again); ``overrides`` are keys of its configuration only (new
        software: ``dfs.namenode.testing.future-layout``, a startup option).

        A start after a stop listens on new OS-chosen ports, as the first did: while it was
        stopped another test's socket may have been given the old one (:meth:`restart`
        keeps them)."""
        for key in (rpc_key(nnid), http_key(nnid)):
            self.conf.set(key, "127.0.0.1:0")
        return self._start(nnid, overrides)

    def restart(self, nnid: str, **overrides: str) -> NameNode:
        """Stop ``nnid`` and start it again at once on the same ports, as an operator's
        restart is: a client's failover proxy made before it still reaches it."""
        self.nodes[nnid].stop()
        return self._start(nnid, overrides)

    def _start(self, nnid: str, overrides: dict[str, str]) -> NameNode:
        conf, _, _ = resolve_ha_conf(self.conf, nnid)
        for key, value in overrides.items():
            conf.set(key, value)
        record = self.terminations[nnid]
        node = NameNode(conf, terminate=lambda s, m: record.append((s, m)), fs_owner="hdfs")
        node.start()
        self.nodes[nnid] = node
        # Tell everyone where everyone listens (the ports were 0 until now).
        for started in self.nodes.values():
            for conf in [self.conf, *(n.conf for n in self.nodes.values())]:
                conf.set(rpc_key(started.nnid), f"127.0.0.1:{started.rpc_address[1]}")
                conf.set(http_key(started.nnid), f"127.0.0.1:{started.http_address[1]}")
        return node

    def __getitem__(self, nnid: str) -> NameNode:
        return self.nodes[nnid]

    def proxy(self, nnid: str) -> NameNodeProxy:
        return NameNodeProxy(*self.nodes[nnid].rpc_address, timeout_s=30)

    def client_conf(self) -> Configuration:
        conf = self.conf.copy()
        conf.set("fs.defaultFS", f"hdfs://{NS}")
        return conf

    def cli_props(self) -> list[str]:
        """``-D key=value`` arguments giving a command line (``hdfs-py haadmin``, ``dfs``)
        the nameservice, its NameNodes' RPC addresses and ``fs.defaultFS=hdfs://<ns>``."""
        conf = self.client_conf()
        keys = ["dfs.nameservices", f"dfs.ha.namenodes.{NS}", "fs.defaultFS"]
        keys += [rpc_key(nnid) for nnid in self.nodes]
        return [arg for key in keys for arg in ("-D", f"{key}={conf.get(key)}")]

    def stop(self) -> None:
        for node in self.nodes.values():
            node.stop()
