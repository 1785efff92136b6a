"""NameNodeMetrics: the daemon's counters and gauges, for ``/metrics`` and ``/jmx``.

One :class:`NameNodeMetrics` per NameNode owns a CollectorRegistry (several NameNodes in
one process never share counters). It counts RPC calls by method (the RPC dispatcher's
observer) and reads everything else when scraped: the edit log's transactions and syncs
(``txns / syncs`` is the group-commit factor), the checkpoint, the namespace size, and
each journal's state. The QuorumJournalManager's IPCLoggerChannels register their
per-JournalNode gauges (out of sync, lag in txns and ms, queued bytes) in the same
registry. The same numbers feed ``/jmx`` under Hadoop's names (NameNodeActivity,
FSNamesystem).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from hadoop_qjm.ipc.rpc_metrics import RpcCollector
from hadoop_qjm.namenode.observer_metrics import ObserverCollector

__all__ = ["LAGGING_MS", "NameNodeMetrics", "journal_node_sync_state", "journal_states"]

#: A JournalNode this far behind the last commit (and with unacknowledged txns) is shown
#: as lagging on the status page.
LAGGING_MS = 1000

#: NameNodeActivity attribute -> the RPCs it counts (Hadoop's NameNodeMetrics names;
#: MkdirsOps is ours: Hadoop counts mkdirs nowhere).
_ACTIVITY = {
    "CreateFileOps": ("create",),
    "DeleteFileOps": ("deletePath",),
    "FileInfoOps": ("getFileInfo",),
    "GetListingOps": ("getListing",),
    "FilesRenamed": ("rename", "rename2"),
    "MkdirsOps": ("mkdirs",),
}


def journal_states(core: Any, ha_state: str = "") -> list[dict[str, Any]]:
    """Each journal of the edit log: manager, required, disabled, stream report, and for a
    quorum journal each JournalNode's channel state (FSNamesystem.getNameJournalStatus).
    ``ha_state`` (``"standby"``, …) names why an edit log not open for write writes
    nowhere."""
    edit_log = getattr(core, "edit_log", None)
    if edit_log is None:
        return []
    writing = edit_log.is_open_for_write()
    states = []
    for jas in list(edit_log.journal_set.journals):
        stream = jas.stream
        if jas.disabled:
            report = "Failed"
        elif not writing:
            report = "open for read"
        elif stream is None:
            report = "not currently writing"
        else:
            generate = getattr(stream, "generate_report", None)
            report = generate() if generate is not None else str(stream)
        loggers = getattr(getattr(jas.manager, "loggers", None), "loggers", ())
        states.append(
            {
                "manager": str(jas.manager),
                "required": jas.required,
                "disabled": jas.disabled,
                "stream": report,
                "journal_nodes": [_channel_state(ch, writing, ha_state) for ch in loggers],
            }
        )
    return states


def journal_node_sync_state(
    out_of_sync: bool, lag_txns: int, lag_time_ms: int, *, writing: bool = True, ha_state: str = ""
) -> str:
    """How the status page shows one JournalNode: ``"not writing (standby)"`` when this
    NameNode writes to none (a standby only reads: nothing was acknowledged, nothing is
    behind; issue 33), ``"out of sync"`` after a failed write (until the next segment),
    ``"lagging"`` when it has not acknowledged committed txns for at least
    :data:`LAGGING_MS` (IPCLoggerChannel's lag: the last commit's time minus that of the
    last batch it acknowledged), else ``"in sync"``. A node a batch behind for a moment,
    as the slowest of a quorum often is, is in sync."""
    if not writing:
        return f"not writing ({ha_state})" if ha_state else "not writing"
    if out_of_sync:
        return "out of sync"
    if lag_txns > 0 and lag_time_ms >= LAGGING_MS:
        return "lagging"
    return "in sync"


def _channel_state(ch: Any, writing: bool, ha_state: str) -> dict[str, Any]:
    out_of_sync = bool(getattr(ch, "is_out_of_sync", False))
    lag_txns = getattr(ch, "lag_txns", 0)
    lag_time_ms = getattr(ch, "lag_time_ms", 0)
    return {
        "node": str(ch),
        "out_of_sync": out_of_sync,
        "lag_txns": lag_txns,
        "lag_time_ms": lag_time_ms,
        "queued_bytes": getattr(ch, "queued_edits_size", 0),
        "highest_acked_txid": getattr(ch, "highest_acked_txid", 0),
        "http_server_url": getattr(ch, "http_server_url", None),
        "sync_state": journal_node_sync_state(
            out_of_sync, lag_txns, lag_time_ms, writing=writing, ha_state=ha_state
        ),
    }


class NameNodeMetrics:
    """The NameNode's metrics; ``name_node.core`` (a NameNodeCore, or None while it is not
    running) is read at scrape time."""

    def __init__(self, name_node: Any) -> None:
        self.name_node = name_node
        self.registry = CollectorRegistry()
        self._lock = threading.Lock()
        self._local = threading.local()
        #: Each thread's own (calls, failures) by method, beside the thread; and the counts
        #: of threads that ended.
        self._per_thread: list[tuple[threading.Thread, dict[str, int], dict[str, int]]] = []
        self._ended: tuple[dict[str, int], dict[str, int]] = ({}, {})
        self.registry.register(self)
        # The RPC server's RpcActivity (Hadoop's RpcMetrics), once it is bound.
        self.registry.register(RpcCollector(lambda: getattr(name_node, "rpc_server", None)))
        # An observer's lag and alignment holds (issue 37 item 7).
        self.registry.register(ObserverCollector(name_node))

    # ---- recording (the RPC dispatcher's observer) ----------------------------------------------
    def observe_rpc(self, method: str, ok: bool) -> None:
        # Every call of every handler comes here: each thread counts into dicts only it
        # writes, so no lock is taken per call; a scrape adds them up.
        try:
            calls, failures = self._local.counts
        except AttributeError:
            calls, failures = self._local.counts = self._thread_counts()
        calls[method] = calls.get(method, 0) + 1
        if not ok:
            failures[method] = failures.get(method, 0) + 1

    def _thread_counts(self) -> tuple[dict[str, int], dict[str, int]]:
        """New counts for the calling thread; those of ended threads are folded into
        ``_ended`` meanwhile (a TLS server runs calls in a thread per connection)."""
        calls: dict[str, int] = {}
        failures: dict[str, int] = {}
        with self._lock:
            live = []
            for entry in self._per_thread:
                if entry[0].is_alive():
                    live.append(entry)
                else:
                    for ended, counted in zip(self._ended, entry[1:], strict=True):
                        for method, n in counted.items():
                            ended[method] = ended.get(method, 0) + n
            live.append((threading.current_thread(), calls, failures))
            self._per_thread = live
        return calls, failures

    def _totals(self) -> tuple[dict[str, int], dict[str, int]]:
        with self._lock:
            totals = (dict(self._ended[0]), dict(self._ended[1]))
            per_thread = list(self._per_thread)
        for _, *counted in per_thread:
            for total, counts in zip(totals, counted, strict=True):
                # dict() copies in one step under the GIL: the owner may be counting.
                for method, n in dict(counts).items():
                    total[method] = total.get(method, 0) + n
        return totals

    def calls(self) -> dict[str, int]:
        """RPC calls so far, by method name."""
        return self._totals()[0]

    # ---- reading ---------------------------------------------------------------------------------
    def edit_log_stats(self) -> Any:
        core = self.name_node.core
        edit_log = getattr(core, "edit_log", None)
        return edit_log.stats() if edit_log is not None else None

    def activity_bean(self) -> dict[str, Any]:
        """The attributes of ``Hadoop:service=NameNode,name=NameNodeActivity``."""
        calls = self.calls()
        bean: dict[str, Any] = {
            name: sum(calls.get(rpc, 0) for rpc in rpcs) for name, rpcs in _ACTIVITY.items()
        }
        stats = self.edit_log_stats()
        bean["TransactionsNumOps"] = stats.txns if stats else 0
        bean["SyncsNumOps"] = stats.syncs if stats else 0
        bean["TransactionsBatchedInSync"] = stats.txns_batched_in_sync if stats else 0
        bean["TransactionsPerSync"] = round(stats.txns_per_sync, 3) if stats else 0.0
        bean["SyncsInFlight"] = stats.syncs_in_flight if stats else 0
        bean["MaxSyncsInFlight"] = stats.max_syncs_in_flight if stats else 0
        return bean

    def collect(self) -> Iterator[Any]:
        """The Prometheus collector protocol: read everything now."""
        calls, failures = self._totals()
        rpc = CounterMetricFamily(
            "namenode_rpc_calls", "RPC calls served, by method", labels=["method"]
        )
        failed = CounterMetricFamily(
            "namenode_rpc_failures", "RPC calls that raised, by method", labels=["method"]
        )
        for method in sorted(calls):
            rpc.add_metric([method], calls[method])
            failed.add_metric([method], failures.get(method, 0))
        yield rpc
        yield failed
        core = self.name_node.core
        stats = self.edit_log_stats()
        if stats is not None:
            yield CounterMetricFamily(
                "namenode_transactions", "Transactions logged", value=stats.txns
            )
            yield CounterMetricFamily(
                "namenode_syncs", "Edit log syncs (flushes to every journal)", value=stats.syncs
            )
            yield CounterMetricFamily(
                "namenode_transactions_batched_in_sync",
                "log_sync calls that found their txid already synced by another thread",
                value=stats.txns_batched_in_sync,
            )
            yield GaugeMetricFamily(
                "namenode_transactions_per_sync",
                "Transactions per sync since start: the group-commit factor",
                value=stats.txns_per_sync,
            )
            yield GaugeMetricFamily(
                "namenode_syncs_in_flight",
                "Edit log batches sent and not yet acknowledged now (pipelined syncs)",
                value=stats.syncs_in_flight,
            )
            yield GaugeMetricFamily(
                "namenode_max_syncs_in_flight",
                "The most edit log batches ever in flight at once since start",
                value=stats.max_syncs_in_flight,
            )
            yield GaugeMetricFamily(
                "namenode_last_written_txid",
                "Last txid handed out (active) or applied (standby)",
                value=stats.last_written_txid,
            )
            yield GaugeMetricFamily(
                "namenode_synced_txid",
                "Every txid up to this one is durable",
                value=stats.synced_txid,
            )
        if core is not None and core.fs_image is not None and core.namesystem is not None:
            yield GaugeMetricFamily(
                "namenode_most_recent_checkpoint_txid",
                "Txid of the newest image",
                value=core.fs_image.most_recent_checkpoint_txid,
            )
            yield GaugeMetricFamily(
                "namenode_files_total",
                "Inodes in the namespace (root included)",
                value=core.namesystem.files_total,
            )
        namesystem = getattr(core, "namesystem", None)
        if namesystem is not None:
            denied = CounterMetricFamily(
                "namenode_permission_denied",
                "Namespace calls refused with an AccessControlException, by operation",
                labels=["operation"],
            )
            for operation, count in sorted(namesystem.access.audit.denied_calls().items()):
                denied.add_metric([operation], count)
            yield denied
        disabled = GaugeMetricFamily(
            "namenode_journal_disabled",
            "1 if the journal failed and is skipped until the next segment",
            labels=["journal", "required"],
        )
        writing = GaugeMetricFamily(
            "namenode_journal_writing",
            "1 if the journal has an open segment stream",
            labels=["journal", "required"],
        )
        for state in journal_states(core):
            labels = [state["manager"], "true" if state["required"] else "false"]
            disabled.add_metric(labels, 1.0 if state["disabled"] else 0.0)
            writing.add_metric(labels, 0.0 if state["stream"] in _NOT_WRITING else 1.0)
        yield disabled
        yield writing


_NOT_WRITING = ("Failed", "open for read", "not currently writing")
