"""The client metrics of IPCLoggerChannel, as Prometheus metrics (design paper §6).

Hadoop's IPCLoggerChannelMetrics: per JournalNode, whether it is out of sync,
how far it lags (in txns and in ms), how much is queued for it (bytes and
txns), and the latency of its journal calls — the RPC alone and end to end,
queueing included. Gauges are read from the open channels when scraped;
labels are the journal id and the node's ``host:port``. One instance per
CollectorRegistry; a channel is dropped from the metrics when it is closed.
"""

from __future__ import annotations

import threading
import weakref
from bisect import bisect_left
from typing import Protocol

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily, HistogramMetricFamily

__all__ = ["IPCLoggerChannelMetrics", "LatencySeries"]


class MeteredChannel(Protocol):
    """What the metrics read of an IPCLoggerChannel (a type only: the channel imports
    this module)."""

    journal_id: str

    @property
    def is_out_of_sync(self) -> bool: ...
    @property
    def lag_txns(self) -> int: ...
    @property
    def lag_time_ms(self) -> int: ...
    @property
    def queued_edits_size(self) -> int: ...
    @property
    def queued_edits_txns(self) -> int: ...


_LABELS = ("journal_id", "journal_node")
#: The histograms' bucket bounds (seconds): prometheus_client's defaults.
_BUCKETS = tuple(b for b in Histogram.DEFAULT_BUCKETS if b != float("inf"))
_RPC = (
    "qjm_logger_write_rpc_latency_seconds",
    "Time a journal (sendEdits) RPC to the JournalNode took",
)
_END_TO_END = (
    "qjm_logger_write_end_to_end_latency_seconds",
    "Time from handing a batch to the channel until the JournalNode acked it (includes queueing)",
)


class LatencySeries:
    """One channel's two write-latency histograms, as plain numbers.

    An observation is a bisect and three additions under an uncontended lock (the
    write path's replies are read one at a time); the Prometheus families are made
    when the registry is read.
    """

    __slots__ = ("_lock", "rpc_counts", "rpc_sum", "end_to_end_counts", "end_to_end_sum")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rpc_counts = [0] * (len(_BUCKETS) + 1)  # the last one: above every bound
        self.rpc_sum = 0.0
        self.end_to_end_counts = [0] * (len(_BUCKETS) + 1)
        self.end_to_end_sum = 0.0

    def observe(self, rpc_s: float, end_to_end_s: float) -> None:
        with self._lock:
            self.rpc_counts[bisect_left(_BUCKETS, rpc_s)] += 1
            self.rpc_sum += rpc_s
            self.end_to_end_counts[bisect_left(_BUCKETS, end_to_end_s)] += 1
            self.end_to_end_sum += end_to_end_s

    def snapshot(self) -> tuple[list[int], float, list[int], float]:
        with self._lock:
            return (
                list(self.rpc_counts),
                self.rpc_sum,
                list(self.end_to_end_counts),
                self.end_to_end_sum,
            )


def _cumulative(counts: list[int]) -> list[tuple[str, int]]:
    buckets, total = [], 0
    for bound, count in zip((*_BUCKETS, float("inf")), counts, strict=True):
        total += count
        buckets.append(("+Inf" if bound == float("inf") else repr(bound), total))
    return buckets


class IPCLoggerChannelMetrics:
    """Per-registry client metrics: gauges read from the open channels when scraped,
    and write-latency histograms. Labels: the journal id and the node's ``host:port``."""

    _by_registry: weakref.WeakKeyDictionary[CollectorRegistry, IPCLoggerChannelMetrics] = (
        weakref.WeakKeyDictionary()
    )
    _creation_lock = threading.Lock()

    @classmethod
    def for_registry(cls, registry: CollectorRegistry) -> IPCLoggerChannelMetrics:
        with cls._creation_lock:
            metrics = cls._by_registry.get(registry)
            if metrics is None:
                metrics = cls._by_registry[registry] = cls(registry)
            return metrics

    def __init__(self, registry: CollectorRegistry) -> None:
        self._lock = threading.Lock()
        self._channels: weakref.WeakSet[MeteredChannel] = weakref.WeakSet()
        # The write-latency histograms, by label values: plain numbers that collect()
        # turns into Prometheus families (the write path takes no registry lock).
        self._series: dict[tuple[str, str], LatencySeries] = {}
        registry.register(self)

    @staticmethod
    def _labels(ch: MeteredChannel) -> tuple[str, str]:
        return ch.journal_id, str(ch)

    def add(self, ch: MeteredChannel) -> None:
        with self._lock:
            self._channels.add(ch)

    def remove(self, ch: MeteredChannel) -> None:
        labels = self._labels(ch)
        with self._lock:
            self._channels.discard(ch)
            if not any(self._labels(other) == labels for other in self._channels):
                self._series.pop(labels, None)

    def series(self, ch: MeteredChannel) -> LatencySeries:
        """The channel's latency histograms (look them up once: a lookup takes a lock)."""
        with self._lock:
            return self._series.setdefault(self._labels(ch), LatencySeries())

    def collect(self):
        rpc = HistogramMetricFamily(*_RPC, labels=_LABELS)
        end_to_end = HistogramMetricFamily(*_END_TO_END, labels=_LABELS)
        with self._lock:
            series = list(self._series.items())
        for labels, one in series:
            rpc_counts, rpc_sum, e2e_counts, e2e_sum = one.snapshot()
            rpc.add_metric(list(labels), _cumulative(rpc_counts), rpc_sum)
            end_to_end.add_metric(list(labels), _cumulative(e2e_counts), e2e_sum)
        yield rpc
        yield end_to_end
        yield from self._collect_gauges()

    def _collect_gauges(self):
        families = {
            "out_of_sync": GaugeMetricFamily(
                "qjm_logger_out_of_sync",
                "1 while the JournalNode is skipped until the next segment",
                labels=_LABELS,
            ),
            "lag_txns": GaugeMetricFamily(
                "qjm_logger_current_lag_txns",
                "Committed transactions the JournalNode has not acknowledged",
                labels=_LABELS,
            ),
            "lag_ms": GaugeMetricFamily(
                "qjm_logger_lag_time_millis",
                "How far behind the last commit the JournalNode's last ack is, in ms",
                labels=_LABELS,
            ),
            "queued_bytes": GaugeMetricFamily(
                "qjm_logger_queued_edits_bytes",
                "Bytes of edits queued for the JournalNode and not acknowledged",
                labels=_LABELS,
            ),
            "queued_txns": GaugeMetricFamily(
                "qjm_logger_queued_edits_txns",
                "Transactions queued for the JournalNode and not acknowledged",
                labels=_LABELS,
            ),
        }
        with self._lock:
            # Two open channels to one node for one journal (a reader and a writer in one
            # process) would give duplicate series: only one of them is reported.
            channels = {self._labels(ch): ch for ch in self._channels}
        for label_values, ch in channels.items():
            labels = list(label_values)
            families["out_of_sync"].add_metric(labels, 1.0 if ch.is_out_of_sync else 0.0)
            families["lag_txns"].add_metric(labels, ch.lag_txns)
            families["lag_ms"].add_metric(labels, ch.lag_time_ms)
            families["queued_bytes"].add_metric(labels, ch.queued_edits_size)
            families["queued_txns"].add_metric(labels, ch.queued_edits_txns)
        yield from families.values()
