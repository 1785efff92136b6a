"""journal_metrics.py: the per-batch update and the rolling latency windows."""

from __future__ import annotations

from hadoop_qjm.qjournal.server.journal_metrics import (
    QUANTILE_INTERVALS_S,
    JournalNodeMetrics,
    RollingQuantiles,
)


class _Journal:
    journal_id = "j1"


def test_a_window_publishes_what_it_saw_once_it_is_over() -> None:
    now = [0.0]
    window = RollingQuantiles(10, clock=lambda: now[0])
    for value in (1.0, 2.0, 3.0):
        window.add(value)
    assert window.snapshot() == (0, dict.fromkeys((50, 75, 90, 95, 99), 0.0))
    now[0] = 10.0
    count, percentiles = window.snapshot()
    assert count == 3 and percentiles[50] == 2.0 and percentiles[99] == 3.0


def test_a_caller_may_read_the_clock_once_for_several_windows() -> None:
    window = RollingQuantiles(10, clock=lambda: 0.0)
    window.add(5.0, now=3.0)
    window.add(7.0, now=12.0)  # rolls: the first window held one sample
    assert window.snapshot()[0] == 1
    window.add(1.0, now=35.0)  # a whole window passed with no sample
    assert window.snapshot()[0] == 0


def test_batch_written_counts_and_feeds_every_window() -> None:
    node = JournalNodeMetrics()
    metrics = node.for_journal(_Journal())

    def sample(name: str) -> float | None:
        return node.registry.get_sample_value(name, {"journal_id": "j1"})

    metrics.batch_written(100, 9_700, False, 250.0)
    metrics.batch_written(50, 4_000, True, 0.0)
    assert sample("journalnode_batches_written_total") == 2
    assert sample("journalnode_txns_written_total") == 150
    assert sample("journalnode_bytes_written_total") == 13_700
    assert sample("journalnode_batches_written_while_lagging_total") == 1
    assert sample("journalnode_fsync_latency_microseconds_count") == 1
    assert sample("journalnode_fsync_latency_microseconds_sum") == 250.0
    assert set(metrics.sync_quantiles) == set(QUANTILE_INTERVALS_S)
    for window in metrics.sync_quantiles.values():
        assert window._count == 1 and window._samples == [250.0]


def test_the_batch_counts_scrape_as_the_counters_and_histogram_they_stand_for() -> None:
    node = JournalNodeMetrics()
    metrics = node.for_journal(_Journal())

    def sample(name: str, **labels: str) -> float | None:
        return node.registry.get_sample_value(name, {"journal_id": "j1", **labels})

    for micros in (100.0, 100.5, 7_000.0, 2e6):
        metrics.batch_written(1, 10, False, micros)
    # Cumulative buckets, "le" as prometheus_client writes it; the bound itself is inside.
    assert sample("journalnode_fsync_latency_microseconds_bucket", le="100.0") == 1
    assert sample("journalnode_fsync_latency_microseconds_bucket", le="250.0") == 2
    assert sample("journalnode_fsync_latency_microseconds_bucket", le="10000.0") == 3
    assert sample("journalnode_fsync_latency_microseconds_bucket", le="1e+06") == 3
    assert sample("journalnode_fsync_latency_microseconds_bucket", le="+Inf") == 4
    assert sample("journalnode_fsync_latency_microseconds_count") == 4
    assert sample("journalnode_batches_written_created") is not None
    assert sample("journalnode_fsync_latency_microseconds_created") is not None


def test_a_journal_loaded_again_goes_on_counting() -> None:
    node = JournalNodeMetrics()
    node.for_journal(_Journal()).batch_written(100, 9_700, False, 250.0)
    node.forget("j1")
    node.for_journal(_Journal()).batch_written(100, 9_700, False, 250.0)
    assert (
        node.registry.get_sample_value("journalnode_batches_written_total", {"journal_id": "j1"})
        == 2
    )
