"""An in-process transport: QuorumJournalManager talks to real Journals, with no socket.

::

    cluster = LocalJournalCluster(3, base_dir, conf)
    qjm = QuorumJournalManager(
        conf, cluster.quorum_journal_uri(JID), FAKE_NSINFO,
        logger_factory=cluster.logger_factory, http_opener=cluster.open_url,
    )                                        # or: cluster.qjm(JID, FAKE_NSINFO)
    cluster.crash_and_restart(1)             # node 1 re-reads its journals from disk

Each simulated JournalNode (:class:`LocalJournalNode`) keeps one real
:class:`~hadoop_qjm.qjournal.server.journal.Journal` per journal id, on real
files under ``<base_dir>/journalnode-<i>/<jid>`` (MiniJournalCluster's
layout). The client side is the real :class:`IPCLoggerChannel` with a
:class:`QJournalProtocolProxy` whose ``channel`` hands each framed Thrift
call to the node's :class:`QJournalProtocolDispatcher` and returns its framed
reply. So every request, response and exception is encoded and decoded
exactly as on a socket, and only the socket is missing.

The channels run on :class:`DirectExecutor` s: every call runs in the
caller's thread, to node 0, then node 1, then node 2, so a whole run is one
thread in a fixed order (the design paper §7.3) and a seeded run replays
exactly.

The nodes' HTTP side is simulated too: :meth:`LocalJournalCluster.fetch` is
every Journal's ``fetcher`` (acceptRecovery copies the source node's segment
file, real bytes), and :meth:`LocalJournalCluster.open_url` is the readers'
``http_opener``. Both resolve a ``/getJournal`` URL (built by the client from
the node's host and HTTP port) to the simulated node and read its file the
way the servlet does (``Journal.open_segment_for_read``).

Not simulated: fsync semantics (a "crash" keeps everything written, as every
Journal write is fsynced before it is acknowledged), the JournalNodeSyncer,
the edits cache unless ``dfs.ha.tail-edits.in-progress`` is set in ``conf``.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from prometheus_client import CollectorRegistry

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.storage_info import NamespaceInfo, StorageInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.client.executors import DirectExecutor
from hadoop_qjm.qjournal.client.ipc_logger_channel import IPCLoggerChannel
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.server.journal import Journal, JournalFaultInjector
from hadoop_qjm.qjournal.server.journal_metrics import JournalNodeMetrics
from hadoop_qjm.qjournal.server.journal_node_rpc_server import (
    QJournalProtocolDispatcher,
    QJournalProtocolHandler,
)

__all__ = [
    "LocalJournalCluster",
    "LocalJournalNode",
    "LocalRpcChannel",
    "LocalHttpResponse",
    "ProxyWrapper",
    "RPC_PORT",
    "HTTP_PORT",
]

LOG = logging.getLogger(__name__)

#: Every simulated node "listens" on these ports; the host name tells them apart.
RPC_PORT = 8485
HTTP_PORT = 8480
#: The address the Journals see as the caller's (``remote_ip()``).
CLIENT_IP = "127.0.0.1"

#: ``(node index, proxy) -> proxy``: wraps each channel's proxy (fault injection).
ProxyWrapper = Callable[[int, Any], Any]


class LocalRpcChannel:
    """An ``RpcChannel`` that hands each payload to a :class:`LocalJournalNode`."""

    def __init__(self, node: LocalJournalNode) -> None:
        self.node = node
        self._closed = False

    def call(self, payload: bytes) -> bytes:
        if self._closed:
            raise IOException(f"Connection to {self.node.address_string} is closed")
        return self.node.handle(payload)

    def reset(self) -> None:
        """Nothing to forget: there is no connection."""

    def close(self) -> None:
        self._closed = True


class LocalJournalNode:
    """One simulated JournalNode: Journals on disk, a dispatcher, no servers.

    Quacks like :class:`~hadoop_qjm.qjournal.server.journal_node.JournalNode`
    as far as :class:`QJournalProtocolHandler` needs (``get_or_create_journal``,
    ``http_port``, ``http_server_uri``). ``journal_class`` makes its Journals
    (a test may pass a deliberately broken subclass).
    """

    def __init__(
        self,
        index: int,
        conf: Configuration,
        edits_dir: str | os.PathLike[str],
        *,
        host: str | None = None,
        fault_injector: JournalFaultInjector | None = None,
        fetcher: Callable[[str, Path, float], int] | None = None,
        journal_class: type[Journal] = Journal,
    ) -> None:
        self.index = index
        self.conf = conf
        self.edits_dir = Path(edits_dir)
        self.host = host or f"jn{index}"
        self.rpc_port = RPC_PORT
        self.http_port = HTTP_PORT
        self.fault_injector = fault_injector
        self.fetcher = fetcher
        self.journal_class = journal_class
        self.metrics = JournalNodeMetrics()
        self.restarts = 0
        self._journals: dict[str, Journal] = {}
        self._dispatcher = QJournalProtocolDispatcher(QJournalProtocolHandler(self))
        self.edits_dir.mkdir(parents=True, exist_ok=True)

    @property
    def address_string(self) -> str:
        return f"{self.host}:{self.rpc_port}"

    @property
    def http_server_uri(self) -> str:
        """The ``fromURL`` getJournalState reports: where /getJournal is served."""
        return f"http://{self.host}:{self.http_port}"

    def journal_dir(self, jid: str) -> Path:
        return self.edits_dir / jid

    def current_dir(self, jid: str) -> Path:
        return self.journal_dir(jid) / "current"

    # ---- what the RPC handler calls -------------------------------------------------------------
    def get_or_create_journal(self, journal_id: str, name_service_id: str | None = None) -> Journal:
        """The Journal of ``journal_id``, opened from disk on first use."""
        journal = self._journals.get(journal_id)
        if journal is None:
            # The class validates the id before touching the disk.
            journal = self.journal_class(
                self.conf,
                self.journal_dir(journal_id),
                journal_id,
                metrics=self.metrics,
                fault_injector=self.fault_injector,
                fetcher=self.fetcher,
            )
            self._journals[journal_id] = journal
        return journal

    def open_journal(self, journal_id: str) -> Journal | None:
        """A loaded journal, else None (the RPC handler's in-order write path)."""
        return self._journals.get(journal_id)

    def get_journal_if_exists(self, journal_id: str) -> Journal | None:
        """A loaded journal, or one on disk; never creates a directory (the servlet's lookup)."""
        journal = self._journals.get(journal_id)
        if journal is None and self.journal_dir(journal_id).is_dir():
            journal = self.get_or_create_journal(journal_id)
        return journal

    def handle(self, payload: bytes) -> bytes:
        """One framed QJournalProtocol call in, its framed reply out."""
        return self._dispatcher.process(payload, CLIENT_IP)

    # ---- life cycle -----------------------------------------------------------------------------
    def crash_and_restart(self) -> None:
        """Lose every in-memory state and re-open the journals from disk (a restart).

        Everything a Journal acknowledged is on disk already (it fsyncs before
        answering), so closing it is as good as a crash — once the one thing a
        close would still write is dropped: the committed txid the journal held
        back from its best-effort file (a crash loses it). The open segment is
        abandoned and re-discovered by the next newEpoch or prepareRecovery.
        """
        jids = list(self._journals)
        for journal in self._journals.values():
            journal.committed_txn_id.close(flush=False)
        self.close()
        self.restarts += 1
        for jid in jids:
            self.get_or_create_journal(jid)

    def close(self) -> None:
        """Close every Journal (releasing its storage lock)."""
        journals, self._journals = self._journals, {}
        for journal in journals.values():
            try:
                journal.close()
            except Exception:  # noqa: BLE001 - close the others
                LOG.exception("Error closing %s", journal)

    def __str__(self) -> str:
        return f"LocalJournalNode({self.address_string} at {self.edits_dir})"


class LocalHttpResponse:
    """What :func:`urllib.request.urlopen` returns, as far as the edit-log readers use it."""

    def __init__(self, data: bytes, name: str) -> None:
        self.status = 200
        self.headers = {"Content-Length": str(len(data)), "X-Image-Edits-Name": name}
        self._data = memoryview(data)
        self._pos = 0

    def read(self, n: int = -1) -> bytes:
        end = len(self._data) if n is None or n < 0 else min(len(self._data), self._pos + n)
        chunk = bytes(self._data[self._pos : end])
        self._pos = end
        return chunk

    def close(self) -> None:
        pass

    def __enter__(self) -> LocalHttpResponse:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class LocalJournalCluster:
    """``n`` :class:`LocalJournalNode` s under ``base_dir`` and the client side to reach them.

    ``fault_injector`` goes to every Journal; ``journal_class`` (or, per node,
    ``journal_classes``) makes the Journals. The cluster's
    ``logger_factory`` builds IPCLoggerChannels on DirectExecutors over this
    transport; :meth:`make_logger_factory` also wraps each channel's proxy.
    """

    def __init__(
        self,
        n: int,
        base_dir: str | os.PathLike[str],
        conf: Configuration | None = None,
        *,
        fault_injector: JournalFaultInjector | None = None,
        journal_class: type[Journal] = Journal,
        journal_classes: dict[int, type[Journal]] | None = None,
        metrics_registry: CollectorRegistry | None = None,
    ) -> None:
        if n <= 0:
            raise ValueError(f"need at least one JournalNode, not {n}")
        self.base_dir = Path(base_dir)
        self.conf = conf if conf is not None else Configuration()
        # The client metrics of every channel, kept out of the process-wide registry.
        self.metrics_registry = metrics_registry or CollectorRegistry()
        classes = journal_classes or {}
        self.nodes = [
            LocalJournalNode(
                i,
                self.conf,
                self.base_dir / f"journalnode-{i}",
                fault_injector=fault_injector,
                fetcher=self.fetch,
                journal_class=classes.get(i, journal_class),
            )
            for i in range(n)
        ]
        self._by_host = {node.host: node for node in self.nodes}
        self.logger_factory = self.make_logger_factory()

    @property
    def num_journal_nodes(self) -> int:
        return len(self.nodes)

    # ---- layout (MiniJournalCluster's names) ----------------------------------------------------
    def journal_node_dir(self, i: int) -> Path:
        return self.nodes[i].edits_dir

    def journal_dir(self, i: int, jid: str) -> Path:
        return self.nodes[i].journal_dir(jid)

    def current_dir(self, i: int, jid: str) -> Path:
        return self.nodes[i].current_dir(jid)

    def quorum_journal_uri(self, jid: str) -> str:
        hosts = ";".join(node.address_string for node in self.nodes)
        return f"qjournal://{hosts}/{jid}"

    def journal(self, i: int, jid: str | None = None) -> Journal:
        """Node ``i``'s Journal of ``jid`` (default: its only, or first, journal)."""
        node = self.nodes[i]
        if jid is None:
            if not node._journals:
                raise KeyError(f"node {i} has no journal open")
            jid = next(iter(node._journals))
        return node.get_or_create_journal(jid)

    def node_for(self, host: str) -> LocalJournalNode:
        """The node a client reaches at ``host`` (any port: RPC and HTTP share the name)."""
        try:
            return self._by_host[host]
        except KeyError:
            raise IOException(f"Unknown JournalNode host {host!r}") from None

    # ---- faults -----------------------------------------------------------------------------------
    def crash_and_restart(self, i: int) -> None:
        """Node ``i`` closes its Journals and re-opens them from disk (a JournalNode restart)."""
        self.nodes[i].crash_and_restart()

    # ---- the client side ----------------------------------------------------------------------
    def make_proxy(self, host: str, port: int) -> QJournalProtocolProxy:
        """A QJournalProtocolProxy to the node at ``host`` over :class:`LocalRpcChannel`."""
        node = self.node_for(host)
        return QJournalProtocolProxy(host, port, channel=LocalRpcChannel(node))

    def make_logger_factory(self, wrap_proxy: ProxyWrapper | None = None) -> Callable[..., Any]:
        """A QuorumJournalManager ``logger_factory``: IPCLoggerChannels on DirectExecutors.

        ``wrap_proxy(node_index, proxy)`` may wrap each channel's proxy.
        """

        def proxy_factory(host: str, port: int) -> Any:
            proxy = self.make_proxy(host, port)
            return proxy if wrap_proxy is None else wrap_proxy(self.node_for(host).index, proxy)

        def factory(
            conf: Configuration,
            ns_info: NamespaceInfo,
            journal_id: str,
            name_service_id: str | None,
            address: tuple[str, int],
        ) -> IPCLoggerChannel:
            return IPCLoggerChannel(
                conf,
                ns_info,
                journal_id,
                address,
                name_service_id=name_service_id,
                proxy_factory=proxy_factory,
                executor=DirectExecutor(),
                parallel_executor=DirectExecutor(),
                metrics_registry=self.metrics_registry,
            )

        return factory

    def qjm(
        self,
        jid: str,
        ns_info: NamespaceInfo,
        *,
        wrap_proxy: ProxyWrapper | None = None,
        conf: Configuration | None = None,
    ) -> QuorumJournalManager:
        """A QuorumJournalManager of ``jid`` over this transport (readers included)."""
        factory = (
            self.logger_factory if wrap_proxy is None else self.make_logger_factory(wrap_proxy)
        )
        return QuorumJournalManager(
            conf if conf is not None else self.conf,
            self.quorum_journal_uri(jid),
            ns_info,
            logger_factory=factory,
            http_opener=self.open_url,
        )

    # ---- the HTTP side ------------------------------------------------------------------------
    def _read_segment(self, url: str) -> tuple[bytes, str]:
        """The bytes /getJournal would send for ``url`` (the servlet's checks included)."""
        parts = urlsplit(url)
        if parts.path != "/getJournal":
            raise IOException(f"Unable to fetch {url}: no such servlet")
        node = self.node_for(parts.hostname or "")
        params = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        try:
            jid = params["jid"]
            segment_txid = int(params["segmentTxId"])
        except (KeyError, ValueError):
            raise IOException(
                f"Image transfer servlet at {url} failed with status code 400"
            ) from None
        journal = node.get_journal_if_exists(jid)
        if journal is None:
            raise IOException(f"Image transfer servlet at {url} failed with status code 404")
        theirs = params.get("storageInfo")
        mine = journal.storage.storage_info
        if theirs is not None and mine is not None:
            info = StorageInfo.from_colon_separated_string(theirs)
            if (info.namespace_id, info.cluster_id) != (mine.namespace_id, mine.cluster_id):
                raise IOException(f"Image transfer servlet at {url} failed with status code 403")
        opened = journal.open_segment_for_read(segment_txid, params.get("inProgressOk") != "false")
        if opened is None:
            raise IOException(
                f"Image transfer servlet at {url} failed with status code 404: "
                f"No edit log found starting at txid {segment_txid}"
            )
        f, name, length = opened
        with f:
            data = f.read(length)
        return data, name

    def fetch(self, url: str, target: str | os.PathLike[str], timeout_s: float = 60.0) -> int:
        """Every Journal's ``fetcher``: copy the segment ``url`` names into ``target``."""
        data, _ = self._read_segment(url)
        with open(target, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        return len(data)

    def open_url(self, url: str, timeout_s: float = 60.0) -> LocalHttpResponse:
        """The readers' ``http_opener``: the segment ``url`` names, as an HTTP response."""
        data, name = self._read_segment(url)
        return LocalHttpResponse(data, name)

    # ---- life cycle -----------------------------------------------------------------------------
    def shutdown(self, delete_dirs: bool = False) -> None:
        """Close every node's Journals; optionally delete ``base_dir``."""
        for node in self.nodes:
            node.close()
        if delete_dirs:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> LocalJournalCluster:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    def __str__(self) -> str:
        return f"LocalJournalCluster({len(self.nodes)} nodes at {self.base_dir})"
