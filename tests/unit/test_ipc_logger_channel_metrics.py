"""The client's write-latency histograms: plain numbers, read as Prometheus histograms."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from hadoop_qjm.qjournal.client.ipc_logger_channel_metrics import IPCLoggerChannelMetrics


class Channel:
    journal_id = "jid"
    is_out_of_sync = False
    lag_txns = lag_time_ms = queued_edits_size = queued_edits_txns = 0

    def __init__(self, name: str) -> None:
        self.name = name

    def __str__(self) -> str:
        return self.name


RPC = "qjm_logger_write_rpc_latency_seconds"
E2E = "qjm_logger_write_end_to_end_latency_seconds"


def test_observations_land_in_prometheus_buckets_le_each_bound():
    registry = CollectorRegistry()
    metrics = IPCLoggerChannelMetrics.for_registry(registry)
    ch = Channel("jn1:8485")
    metrics.add(ch)
    series = metrics.series(ch)
    for rpc_s, e2e_s in [(0.005, 0.006), (0.0051, 0.3), (12.0, 12.0)]:
        series.observe(rpc_s, e2e_s)
    labels = {"journal_id": "jid", "journal_node": "jn1:8485"}

    def sample(name: str, le: str | None = None) -> float | None:
        extra = {} if le is None else {"le": le}
        return registry.get_sample_value(name, {**labels, **extra})

    assert sample(f"{RPC}_bucket", "0.005") == 1  # a bound itself is in its bucket
    assert sample(f"{RPC}_bucket", "0.01") == 2
    assert sample(f"{RPC}_bucket", "10.0") == 2
    assert sample(f"{RPC}_bucket", "+Inf") == 3
    assert sample(f"{RPC}_count") == 3
    assert abs(sample(f"{RPC}_sum") - 12.0101) < 1e-9
    assert sample(f"{E2E}_bucket", "0.005") == 0
    assert sample(f"{E2E}_bucket", "0.01") == 1
    assert sample(f"{E2E}_bucket", "0.5") == 2
    assert sample(f"{E2E}_count") == 3


def test_a_series_goes_with_the_last_channel_that_has_its_labels():
    registry = CollectorRegistry()
    metrics = IPCLoggerChannelMetrics.for_registry(registry)
    first, second = Channel("jn1:8485"), Channel("jn1:8485")
    metrics.add(first)
    metrics.add(second)
    metrics.series(first).observe(0.001, 0.001)
    labels = {"journal_id": "jid", "journal_node": "jn1:8485"}
    metrics.remove(first)
    assert registry.get_sample_value(f"{RPC}_count", labels) == 1  # still the other's
    metrics.remove(second)
    assert registry.get_sample_value(f"{RPC}_count", labels) is None
