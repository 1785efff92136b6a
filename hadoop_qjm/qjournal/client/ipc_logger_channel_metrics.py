"""The client metrics of IPCLoggerChannel, as Prometheus metrics (design paper §6).

Hadoop's IPCLoggerChannelMetrics: per JournalNode, whether it is out of sync,
how far it lags (in txns and in ms), how much is queued for it (bytes and
txns), and the latency of its journal calls — the RPC alone and end to end,
queueing included. Gauges are read from the open channels when scraped;
labels are the journal id and the node's ``host:port``. One instance per
CollectorRegistry; a channel is dropped from the metrics when it is closed.
"""

from __future__ import annotations

import collections
import threading
import weakref
from typing import TYPE_CHECKING, Any

from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily

if TYPE_CHECKING:
    from hadoop_qjm.qjournal.client.ipc_logger_channel import IPCLoggerChannel

__all__ = ["IPCLoggerChannelMetrics"]


_LABELS = ("journal_id", "journal_node")
#: Queued latencies are added to the histograms once this many are waiting.
_DRAIN_AT = 512


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
        self._channels: weakref.WeakSet[IPCLoggerChannel] = weakref.WeakSet()
        # The histograms are reported by collect() below, not registered on their own:
        # latencies are queued by the write path (a deque append, no lock) and added
        # to them in bulk — when enough are queued, or when the registry is read.
        self.rpc_latency = Histogram(
            "qjm_logger_write_rpc_latency_seconds",
            "Time a journal (sendEdits) RPC to the JournalNode took",
            _LABELS,
            registry=None,
        )
        self.end_to_end_latency = Histogram(
            "qjm_logger_write_end_to_end_latency_seconds",
            "Time from handing a batch to the channel until the JournalNode acked it "
            "(includes queueing)",
            _LABELS,
            registry=None,
        )
        self._queued: collections.deque[tuple[Any, Any, float, float]] = collections.deque()
        registry.register(self)

    @staticmethod
    def _labels(ch: IPCLoggerChannel) -> tuple[str, str]:
        return ch.journal_id, str(ch)

    def add(self, ch: IPCLoggerChannel) -> None:
        with self._lock:
            self._channels.add(ch)

    def remove(self, ch: IPCLoggerChannel) -> None:
        labels = self._labels(ch)
        self.drain()  # a queued latency must not bring the series back afterwards
        with self._lock:
            self._channels.discard(ch)
            shared = any(self._labels(other) == labels for other in self._channels)
        if not shared:
            for histogram in (self.rpc_latency, self.end_to_end_latency):
                try:
                    histogram.remove(*labels)
                except KeyError:
                    pass

    def series(self, ch: IPCLoggerChannel) -> tuple[Any, Any]:
        """The channel's two latency series (look them up once: a lookup takes a lock)."""
        labels = self._labels(ch)
        return self.rpc_latency.labels(*labels), self.end_to_end_latency.labels(*labels)

    def observe_later(self, series: tuple[Any, Any], rpc_s: float, end_to_end_s: float) -> None:
        """Queue one journal call's latencies for :meth:`series`' histograms."""
        queued = self._queued
        queued.append((series[0], series[1], rpc_s, end_to_end_s))
        if len(queued) >= _DRAIN_AT:
            self.drain()

    def drain(self) -> None:
        """Add the queued latencies to the histograms."""
        queued = self._queued
        while True:
            try:
                rpc, end_to_end, rpc_s, end_to_end_s = queued.popleft()
            except IndexError:
                return
            rpc.observe(rpc_s)
            end_to_end.observe(end_to_end_s)

    def collect(self):
        self.drain()
        yield from self.rpc_latency.collect()
        yield from self.end_to_end_latency.collect()
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
