"""JournalMetrics: Hadoop's per-journal metrics (HADOOP-QJM-DIGEST.md §7), as Prometheus metrics.

One :class:`JournalNodeMetrics` per JournalNode owns a CollectorRegistry (so
several JournalNodes in one process, as in MiniJournalCluster, never share
counters); each journal gets a :class:`JournalMetrics` view labelled with its
``journal_id`` (Hadoop's ``JournalId`` tag). Gauges are read from the Journal
when scraped. The same numbers feed ``/jmx`` under Hadoop's names.

What every ``journal()`` call updates (batches, txns, bytes, the fsync histogram) are
plain numbers in a :class:`BatchCounts`, turned into Prometheus families only when
scraped: a ``Counter.inc`` (a lock each) per number would cost every batch. A batch is
counted just after its acknowledgement went out (``Journal.journal_in_order``), under
``BatchCounts.lock``, which readers take too: a scrape that follows an acknowledgement
sees that batch counted. The lock is never held across a disk write, so a scrape never
waits for a slow disk.
"""

from __future__ import annotations

import threading
import time
from bisect import bisect_left
from collections.abc import Callable, Iterable

import psutil
from prometheus_client import CollectorRegistry, Counter
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily
from prometheus_client.utils import floatToGoString

__all__ = [
    "BatchCounts",
    "JournalNodeMetrics",
    "JournalMetrics",
    "RollingQuantiles",
    "QUANTILE_INTERVALS_S",
]

#: Hadoop's Syncs60s / Syncs300s / Syncs3600s.
QUANTILE_INTERVALS_S = (60, 300, 3600)
_PERCENTILES = (50, 75, 90, 95, 99)
_FSYNC_BUCKETS_US = (100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 1e6)


class RollingQuantiles:
    """Latency percentiles over the last complete ``interval_s`` window (MutableQuantiles).

    Samples go into the current window; when it ends the window becomes the
    published snapshot. At most ``max_samples`` per window are kept (the rest
    are counted, not stored) so memory stays bounded under any load.
    """

    def __init__(
        self,
        interval_s: float,
        clock: Callable[[], float] = time.monotonic,
        max_samples: int = 8192,
        lock: threading.Lock | None = None,
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._max = max_samples
        # Several windows fed together may share one lock (JournalMetrics).
        self._lock = lock or threading.Lock()
        self._window_start = clock()
        self._samples: list[float] = []
        self._count = 0
        self._snapshot: tuple[int, list[float]] = (0, [])

    def add(self, value: float, now: float | None = None) -> None:
        """Record ``value``; ``now`` (this window's clock) lets a caller feeding
        several windows read the clock once."""
        with self._lock:
            self._add_locked(value, self._clock() if now is None else now)

    def _add_locked(self, value: float, now: float) -> None:
        if now - self._window_start >= self.interval_s:  # (_roll's test: once per batch)
            self._roll(now)
        self._count += 1
        if len(self._samples) < self._max:
            self._samples.append(value)

    def snapshot(self) -> tuple[int, dict[int, float]]:
        """(number of ops in the last window, {percentile: value})."""
        with self._lock:
            self._roll(self._clock())
            count, samples = self._snapshot
        if not samples:
            return count, dict.fromkeys(_PERCENTILES, 0.0)
        return count, {
            p: samples[min(len(samples) - 1, len(samples) * p // 100)] for p in _PERCENTILES
        }

    def _roll(self, now: float) -> None:
        if now - self._window_start >= self.interval_s:
            self._snapshot = (self._count, sorted(self._samples))
            self._samples, self._count = [], 0
            elapsed_windows = int((now - self._window_start) // self.interval_s)
            if elapsed_windows > 1:
                self._snapshot = (0, [])  # a whole window passed with no sample
            self._window_start += elapsed_windows * self.interval_s


class BatchCounts:
    """What the journal() calls of one journal id wrote, as plain numbers (see the module doc).

    Kept per journal id by the node, so a journal loaded again (after a close) goes on
    counting, as a labelled Prometheus counter would.
    """

    __slots__ = (
        "batches",
        "txns",
        "bytes",
        "lagging",
        "fsyncs",
        "fsync_sum",
        "fsync_buckets",
        "created",
        "lock",
    )

    def __init__(self) -> None:
        #: Held while a batch is acknowledged and counted, and while the counts are read.
        self.lock = threading.Lock()
        self.batches = 0
        self.txns = 0
        self.bytes = 0
        self.lagging = 0
        #: fdatasyncs of batches: one per batch not lagging, or one per group (group fsync).
        self.fsyncs = 0
        self.fsync_sum = 0.0
        # Non-cumulative counts per bucket of _FSYNC_BUCKETS_US, the last one +Inf.
        self.fsync_buckets = [0] * (len(_FSYNC_BUCKETS_US) + 1)
        self.created = time.time()


class JournalNodeMetrics:
    """The metric families of one JournalNode, plus its process metrics (psutil)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        labels = ["journal_id"]

        def counter(name: str, doc: str) -> Counter:
            return Counter(f"journalnode_{name}", doc, labels, registry=self.registry)

        self.txns_served_via_rpc = counter(
            "txns_served_via_rpc", "Transactions served by getJournaledEdits"
        )
        self.bytes_served_via_rpc = counter(
            "bytes_served_via_rpc", "Bytes served by getJournaledEdits"
        )
        self.rpc_empty_responses = counter(
            "rpc_empty_responses", "getJournaledEdits calls that returned nothing"
        )
        self.rpc_request_cache_misses = counter(
            "rpc_request_cache_misses", "getJournaledEdits calls that missed the edits cache"
        )
        self.rpc_request_cache_miss_txns = counter(
            "rpc_request_cache_miss_txns", "Transactions by which requests missed the edits cache"
        )
        self.edit_logs_synced = counter(
            "edit_logs_synced", "Segments downloaded from peers (NumEditLogsSynced)"
        )
        # Security (docs/security.md): refused TLS handshakes by reason, refused calls by
        # RPC name or HTTP path. Hadoop's RpcAuthenticationFailures / RpcAuthorizationFailures.
        self.rpc_authentication_failures = Counter(
            "journalnode_rpc_authentication_failures",
            "TLS handshakes refused on the RPC port (RpcAuthenticationFailures)",
            ["reason"],
            registry=self.registry,
        )
        self.rpc_authorization_failures = Counter(
            "journalnode_rpc_authorization_failures",
            "RPCs refused to an identity not allowed to make them (RpcAuthorizationFailures)",
            ["method"],
            registry=self.registry,
        )
        self.http_authentication_failures = Counter(
            "journalnode_http_authentication_failures",
            "TLS handshakes refused on the HTTPS port",
            ["reason"],
            registry=self.registry,
        )
        self.http_authorization_failures = Counter(
            "journalnode_http_authorization_failures",
            "Segment downloads refused (403) to a caller not allowed to make them",
            ["path"],
            registry=self.registry,
        )
        self._journals: dict[str, JournalMetrics] = {}
        self._batch_counts: dict[str, BatchCounts] = {}
        self._lock = threading.Lock()
        self.registry.register(_BatchCollector(self))
        self.registry.register(_GaugeCollector(self))

    def security_bean_attributes(self) -> dict[str, int]:
        """The security counters under Hadoop's RpcActivity names (plus the HTTP ones)."""

        def total(counter: Counter) -> int:
            return int(
                sum(
                    sample.value
                    for metric in counter.collect()
                    for sample in metric.samples
                    if sample.name.endswith("_total")
                )
            )

        return {
            "RpcAuthenticationFailures": total(self.rpc_authentication_failures),
            "RpcAuthorizationFailures": total(self.rpc_authorization_failures),
            "HttpAuthenticationFailures": total(self.http_authentication_failures),
            "HttpAuthorizationFailures": total(self.http_authorization_failures),
        }

    def for_journal(self, journal) -> JournalMetrics:
        with self._lock:
            counts = self._batch_counts.setdefault(journal.journal_id, BatchCounts())
            metrics = JournalMetrics(self, journal, counts)
            self._journals[journal.journal_id] = metrics
            return metrics

    def batch_counts(self) -> list[tuple[str, BatchCounts]]:
        """(journal id, counts) of every journal id that was ever loaded, by journal id."""
        with self._lock:
            return sorted(self._batch_counts.items())

    def journals(self) -> list[JournalMetrics]:
        with self._lock:
            return list(self._journals.values())

    def forget(self, journal_id: str) -> None:
        with self._lock:
            self._journals.pop(journal_id, None)


class JournalMetrics:
    """What one Journal reports; gauges are read from ``journal`` when scraped."""

    def __init__(self, node: JournalNodeMetrics, journal, counts: BatchCounts) -> None:
        self.node = node
        self.journal = journal
        jid = journal.journal_id
        self.journal_id = jid
        self.counts = counts
        #: The journal holds it from a batch's acknowledgement until the batch is counted.
        self.batch_lock = counts.lock
        self._rpc_txns = node.txns_served_via_rpc.labels(jid)
        self._rpc_bytes = node.bytes_served_via_rpc.labels(jid)
        self._rpc_empty = node.rpc_empty_responses.labels(jid)
        self._misses = node.rpc_request_cache_misses.labels(jid)
        self._miss_txns = node.rpc_request_cache_miss_txns.labels(jid)
        self._synced = node.edit_logs_synced.labels(jid)
        self._clock = time.monotonic
        self._sync_lock = threading.Lock()
        self.sync_quantiles = {
            s: RollingQuantiles(s, clock=self._clock, lock=self._sync_lock)
            for s in QUANTILE_INTERVALS_S
        }
        self._sync_windows = tuple(self.sync_quantiles.values())
        #: Set by the JournalNodeSyncer (None: no syncer runs for this journal).
        self.catch_up_state: str | None = None
        self.segments_behind = 0
        self.txns_behind = 0
        self.peers_answered = 0

    # ---- updates (called by Journal / JournalNodeSyncer) --------------------------------------
    def batch_written(
        self,
        num_txns: int,
        num_bytes: int,
        lagging: bool,
        sync_micros: float,
        own_fsync: bool = True,
    ) -> None:
        """Count one journal() batch; called under the Journal's lock (one writer at a time)
        and :attr:`batch_lock`. A batch not lagging adds ``sync_micros`` to the fsync
        histogram and quantiles, and counts an fsync of its own unless it was part of a
        group fsync (``own_fsync`` False: the Journal counts the group's one fsync with
        :meth:`batches_fsynced`, and each batch of the group observes the group's
        write+fsync time, what it waited for)."""
        if num_txns < 0 or num_bytes < 0:
            raise ValueError(f"negative batch size: {num_txns} txns, {num_bytes} bytes")
        counts = self.counts
        counts.batches += 1
        counts.txns += num_txns
        counts.bytes += num_bytes
        if lagging:
            counts.lagging += 1
        else:
            if own_fsync:
                counts.fsyncs += 1
            # Histogram.observe: the first bucket whose bound is >= the value.
            counts.fsync_sum += sync_micros
            counts.fsync_buckets[bisect_left(_FSYNC_BUCKETS_US, sync_micros)] += 1
            now = self._clock()  # one clock read and one lock for the three windows
            with self._sync_lock:
                for window in self._sync_windows:
                    window._add_locked(sync_micros, now)

    def batches_fsynced(self) -> None:
        """Count the one fsync of a group of batches (under :attr:`batch_lock`)."""
        self.counts.fsyncs += 1

    def rpc_served(self, num_txns: int, num_bytes: int) -> None:
        self._rpc_txns.inc(num_txns)
        self._rpc_bytes.inc(num_bytes)

    def rpc_empty_response(self) -> None:
        self._rpc_empty.inc()

    def cache_miss(self, amount: int) -> None:
        self._misses.inc()
        self._miss_txns.inc(amount)

    def edit_log_synced(self) -> None:
        self._synced.inc()

    def catch_up(self, state: str, catch_up=None) -> None:
        """The syncer's catch-up state (peer_format.CATCH_UP_STATES) and, after a round,
        its CatchUp (segments and txns behind the peers that answered, and how many did)."""
        self.catch_up_state = state
        if catch_up is not None:
            self.segments_behind = catch_up.segments_behind
            self.txns_behind = catch_up.txns_behind
            self.peers_answered = catch_up.peers_answered

    # ---- reads (for /jmx and tests) -------------------------------------------------------------
    def last_journal_timestamp_ms(self) -> int:
        """LastJournalTimestamp: set with the counts (under :attr:`batch_lock`)."""
        with self.batch_lock:
            return self.journal.last_journal_timestamp_ms

    def as_hadoop_bean(self) -> dict[str, object]:
        """The attributes of ``Hadoop:service=JournalNode,name=Journal-<jid>``."""
        j = self.journal
        counts = self.counts
        with self.batch_lock:
            written = {
                "BatchesWritten": counts.batches,
                "TxnsWritten": counts.txns,
                "BytesWritten": counts.bytes,
                "BatchesWrittenWhileLagging": counts.lagging,
                "BatchFsyncs": counts.fsyncs,
                "LastJournalTimestamp": j.last_journal_timestamp_ms,
            }
        # The quantiles describe whole past windows: the latest batch is in none yet.
        syncs = {s: q.snapshot() for s, q in self.sync_quantiles.items()}
        misses = self._misses._value.get()
        bean: dict[str, object] = {
            "tag.JournalId": self.journal_id,
            **written,
            "TxnsServedViaRpc": int(self._rpc_txns._value.get()),
            "BytesServedViaRpc": int(self._rpc_bytes._value.get()),
            "RpcEmptyResponses": int(self._rpc_empty._value.get()),
            "RpcRequestCacheMissAmountNumMisses": int(misses),
            "RpcRequestCacheMissAmountAvgTxns": (
                self._miss_txns._value.get() / misses if misses else 0.0
            ),
            "NumEditLogsSynced": int(self._synced._value.get()),
            "LastWriterEpoch": j.metric_last_writer_epoch(),
            "LastPromisedEpoch": j.metric_last_promised_epoch(),
            # Set before the acknowledgement, like the rest of the journal's state.
            "LastWrittenTxId": j.highest_written_txid,
            "CurrentLagTxns": j.current_lag_txns(),
        }
        for interval, (count, values) in syncs.items():
            bean[f"Syncs{interval}sNumOps"] = count
            for p, value in values.items():
                bean[f"Syncs{interval}s{p}thPercentileLatencyMicros"] = int(value)
        return bean


class _BatchCollector:
    """The families of :class:`BatchCounts`, as the Counters and Histogram they stand for."""

    _COUNTERS = (
        ("batches_written", "Batches of edits written (BatchesWritten)", "batches"),
        ("txns_written", "Transactions written (TxnsWritten)", "txns"),
        ("bytes_written", "Bytes of edits written (BytesWritten)", "bytes"),
        (
            "batches_written_while_lagging",
            "Batches already committed when written, so not fsynced (BatchesWrittenWhileLagging)",
            "lagging",
        ),
        (
            "batch_fsyncs",
            "fdatasyncs of written batches; one per group of batches read together "
            "(group fsync), so fewer than the batches not lagging (BatchFsyncs)",
            "fsyncs",
        ),
    )
    _BOUNDS = tuple(floatToGoString(b) for b in _FSYNC_BUCKETS_US) + ("+Inf",)

    def __init__(self, node: JournalNodeMetrics) -> None:
        self.node = node

    def describe(self) -> Iterable:
        return []

    def collect(self) -> Iterable:
        journals = []
        for jid, counts in self.node.batch_counts():
            with counts.lock:  # every acknowledged batch counted (see the module doc)
                values = {attr: getattr(counts, attr) for _, _, attr in self._COUNTERS}
                fsync = (list(counts.fsync_buckets), counts.fsync_sum)
            journals.append((jid, counts.created, values, fsync))
        for name, doc, attr in self._COUNTERS:
            family = CounterMetricFamily(f"journalnode_{name}", doc, labels=["journal_id"])
            for jid, created, values, _ in journals:
                family.add_metric([jid], values[attr], created=created)
            yield family
        histogram = HistogramMetricFamily(
            "journalnode_fsync_latency_microseconds",
            "Latency of the fsync of a journal() batch",
            labels=["journal_id"],
        )
        for jid, created, _, (fsync_buckets, fsync_sum) in journals:
            total = 0
            buckets = []
            for bound, count in zip(self._BOUNDS, fsync_buckets):
                total += count
                buckets.append((bound, total))
            histogram.add_metric([jid], buckets, fsync_sum)
            histogram.add_sample(histogram.name + "_created", {"journal_id": jid}, created)
        yield histogram


class _GaugeCollector:
    """Per-journal gauges and process metrics, computed at scrape time."""

    def __init__(self, node: JournalNodeMetrics) -> None:
        self.node = node
        self.process = psutil.Process()

    def describe(self) -> Iterable:
        return []

    def collect(self) -> Iterable:
        gauges = {
            "last_writer_epoch": ("LastWriterEpoch", lambda j: j.metric_last_writer_epoch()),
            "last_promised_epoch": ("LastPromisedEpoch", lambda j: j.metric_last_promised_epoch()),
            "last_written_txid": ("LastWrittenTxId", lambda j: j.highest_written_txid),
            "current_lag_txns": ("CurrentLagTxns", lambda j: j.current_lag_txns()),
            "last_journal_timestamp_ms": (
                "LastJournalTimestamp",
                lambda j: j.metrics.last_journal_timestamp_ms(),
            ),
        }
        for name, (hadoop_name, read) in gauges.items():
            family = GaugeMetricFamily(
                f"journalnode_{name}", f"Hadoop's {hadoop_name}", labels=["journal_id"]
            )
            for metrics in self.node.journals():
                family.add_metric([metrics.journal_id], float(read(metrics.journal)))
            yield family
        yield from self._catch_up_metrics()
        yield from self._process_metrics()

    def _catch_up_metrics(self) -> Iterable:
        """The syncer's catch-up of each journal that has one (docs/journalnode.md)."""
        from hadoop_qjm.qjournal.protocol.peer_format import CATCH_UP_STATES, reported_catch_up

        synced = [m for m in self.node.journals() if m.catch_up_state is not None]
        state = GaugeMetricFamily(
            "journalnode_sync_state",
            "1 for the journal's catch-up state (unformatted, formatting, syncing, in sync)",
            labels=["journal_id", "state"],
        )
        segments = GaugeMetricFamily(
            "journalnode_sync_segments_behind",
            "Committed finalized segments a peer holds and this node lacks, as of the last round",
            labels=["journal_id"],
        )
        txns = GaugeMetricFamily(
            "journalnode_sync_txns_behind",
            "Transactions in the finalized segments this node lacks",
            labels=["journal_id"],
        )
        answered = GaugeMetricFamily(
            "journalnode_sync_peers_answered",
            "Peers whose manifests the last round compared (in sync needs all of them)",
            labels=["journal_id"],
        )
        for m in synced:
            current = reported_catch_up(m.catch_up_state, m.journal.is_formatted())
            for name in CATCH_UP_STATES:
                state.add_metric([m.journal_id, name], 1.0 if current == name else 0.0)
            segments.add_metric([m.journal_id], float(m.segments_behind))
            txns.add_metric([m.journal_id], float(m.txns_behind))
            answered.add_metric([m.journal_id], float(m.peers_answered))
        yield state
        yield segments
        yield txns
        yield answered

    def _process_metrics(self) -> Iterable:
        p = self.process
        with p.oneshot():
            cpu = p.cpu_times()
            values = {
                "cpu_seconds_total": ("CPU time used", cpu.user + cpu.system),
                "resident_memory_bytes": ("Resident memory", p.memory_info().rss),
                "open_fds": ("Open file descriptors", p.num_fds()),
                "threads": ("Threads", p.num_threads()),
            }
        for name, (doc, value) in values.items():
            family = GaugeMetricFamily(f"journalnode_process_{name}", doc)
            family.add_metric([], float(value))
            yield family
