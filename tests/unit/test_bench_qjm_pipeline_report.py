"""``bench qjm --pipeline``'s report, from figures made up (no process is started)."""

from __future__ import annotations

import pytest

from hadoop_qjm.tools.bench._qjm_pipeline import PipelineResult, report_pipelined

pytestmark = pytest.mark.timeout(10)


def _result(phase: str, depth: int, txns: int, **ratios: list[float]) -> PipelineResult:
    return PipelineResult(
        phase, depth, txns=txns, syncs=txns // 2, max_in_flight=depth, seconds=1.0,
        latencies=[0.001] * 99 + [0.01], **ratios,
    )  # fmt: skip


def test_the_report_gives_each_goal_its_median_and_verdict(capsys) -> None:
    results = [
        _result("depth 1", 1, 1000, vs_unpipelined=[1.0, 1.0]),
        _result(
            "depth 4",
            4,
            3500,
            vs_unpipelined=[3.4, 3.6],
            vs_ideal=[1.2, 1.4],
            p99_vs_unpipelined=[1.5, 2.5],
        ),  # fmt: skip
        PipelineResult(
            "ideal", 0, txns=2000, seconds=1.0, ideal_lines=[{"lat_ms_p50": 0.4, "lat_ms_p99": 1.0}]
        ),  # fmt: skip
    ]
    report_pipelined(results, goal_depth=4, writers=8)
    out = capsys.readouterr().out
    assert "pipelined syncs: batch 1, 8 writer threads, 3 JNs" in out
    assert "txns/s vs depth 1 (unpipelined): 3.50x (median of 2 rounds, 3.40-3.60) " in out
    assert "(goal >= 3): met" in out
    assert "(goal >= 1.5): MISSED" in out
    assert "p99 vs depth 1's p99: 2.00x" in out and "(goal <= 2): met" in out
    ideal = next(line for line in out.splitlines() if line.startswith("ideal"))
    assert ideal.split()[1:4] == ["2,000", "0.40", "1.00"]


def test_a_configured_depth_that_was_not_measured_is_said_so(capsys) -> None:
    report_pipelined([_result("depth 1", 1, 1000)], goal_depth=4, writers=8)
    assert "dfs.namenode.edits.sync.pipeline.depth=4 was not measured" in capsys.readouterr().out
