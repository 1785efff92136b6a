"""``hdfs-py bench qjm`` end to end, briefly: it runs, reports, and leaves nothing behind."""

from __future__ import annotations

import contextlib
import re
from pathlib import Path

import psutil
import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.conf import Configuration
from hadoop_qjm.testing.daemon_process import running_children
from hadoop_qjm.tools.bench import _qjm_measure as qjm_measure

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]

FAKE_IDEAL = """
import json, sys
args = sys.argv[1:]
batch = int(args[args.index("--batch") + 1])
print(json.dumps({"batch": batch, "records_per_s": 1000.0 * batch, "lat_ms_p50": 0.5,
                  "lat_ms_p99": 1.0}))
"""


def _journal_nodes() -> list[psutil.Process]:
    return running_children("journalnode")


def test_bench_qjm_reports_every_phase_and_stops_every_process(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    ideal = tmp_path / "ideal.py"
    ideal.write_text(FAKE_IDEAL)
    work = tmp_path / "work"
    work.mkdir()
    args = ["bench", "qjm", "--batches", "1,10", "--seconds", "0.2", "--max-ops", "50"]
    assert main([*args, "--ideal", str(ideal), "--dir", str(work)]) == 0

    out = capsys.readouterr().out
    phases = ("3 JNs", "3 JNs, pre-encoded", "3 JNs, pre-encoded, busy-poll", "3 JNs, 1 frozen")
    for phase in (*phases, "5 JNs"):
        for batch in (1, 10):
            assert any(
                line.startswith(phase) and line.split()[len(phase.split())] == str(batch)
                for line in out.splitlines()
            ), f"no line for {phase}, batch {batch}:\n{out}"
    assert "x the ideal's txns/s with the ops encoded ahead of time" in out
    assert "(goal >= 0.8)" in out and "making and encoding each op in the loop" in out
    assert "p50 with one JN frozen" in out and "p50 with 5 JNs" in out
    busy = (
        "the writer busy-polling (dfs.qjournal.busy-poll.us=1000; not the default, and not a goal)"
    )
    assert busy in out
    assert _journal_nodes() == []
    assert list(work.iterdir()) == []


def test_bench_qjm_interleaves_the_compared_phases_in_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    calls = tmp_path / "ideal-calls"
    ideal = tmp_path / "ideal.py"
    # The fake baseline notes each run: one slice per round and batch size.
    ideal.write_text(FAKE_IDEAL + f"open({str(calls)!r}, 'a').write(f'{{batch}}\\n')\n")
    args = ["bench", "qjm", "--batches", "1,10", "--seconds", "0.6", "--slice", "0.2"]
    assert main([*args, "--max-ops", "300", "--skip-frozen", "--ideal", str(ideal)]) == 0
    out = capsys.readouterr().out
    assert sorted(calls.read_text().split()) == ["1", "1", "1", "10", "10", "10"]
    assert "interleaved: 3 rounds of slices per batch size" in out
    lines = [line for line in out.splitlines() if "(median of 3 rounds," in line]
    busy = [line for line in lines if "the txns/s of the default writer" in line]
    goals = [line for line in lines if line not in busy]
    # The ideal ratio at batch 1 (a goal batch); per batch size the 5-vs-3 p50 and, for
    # context, the plain-socket quorum's.
    assert len(goals) == 5, out
    assert "batch    1:" in goals[0] and "the ideal's txns/s" in goals[0]
    assert "p50 with 5 JNs" in goals[1] and "p50 with 5 JNs" in goals[3]
    # Apart from the goals, per batch size: the busy-polling writer against the default
    # one and against the ideal.
    assert [line.split(":")[0].strip() for line in busy] == ["batch    1", "batch   10"], out
    assert all(re.search(r"\d\.\d\dx the ideal's \(median of 3 rounds,", b) for b in busy)
    for line in (goals[2], goals[4]):
        assert "a plain-socket quorum (no Thrift, no Journal)" in line
        assert re.search(r"p50 with 5 servers \d+\.\d\dx with 3", line)
    assert _journal_nodes() == []


def test_bench_qjm_without_the_baseline_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    missing = tmp_path / "no-such-ideal.py"
    args = ["bench", "qjm", "--batches", "1", "--seconds", "0.1", "--max-ops", "20"]
    args += ["--skip-frozen", "--skip-five", "--busy-poll-us", "0"]
    assert main([*args, "--ideal", str(missing)]) == 0
    out = capsys.readouterr().out
    assert f"ideal baseline: {missing} not found (give it with --ideal); no ratios" in out
    assert "the ideal's txns/s" not in out
    assert "busy-poll" not in out  # --busy-poll-us 0: no such phase
    assert _journal_nodes() == []


def test_bench_qjm_rejects_bad_batches(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "qjm", "--batches", "1,0"]) == 2
    assert "--batches must be positive integers" in capsys.readouterr().err
    assert main(["bench", "qjm", "--slice", "0.001"]) == 2
    assert "--slice must be at least 0.05 s" in capsys.readouterr().err
    for value in ("-1", "50000"):
        assert main(["bench", "qjm", "--busy-poll-us", value]) == 2
        assert "--busy-poll-us must be between 0 and 49999" in capsys.readouterr().err


def test_bench_qjm_secure_reports_both_and_the_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    args = ["bench", "qjm", "--secure", "--batches", "1,100", "--seconds", "0.2"]
    assert main([*args, "--max-ops", "400", "--rounds", "1", "--dir", str(work)]) == 0
    out = capsys.readouterr().out
    table = [line.split() for line in out.splitlines() if line.split()[:1] in (["1"], ["100"])]
    assert [row[0] for row in table] == ["1", "100"]
    for row in table:  # batch, plain txns/s, TLS txns/s, ratio
        assert float(row[1].replace(",", "")) > 0 and float(row[2].replace(",", "")) > 0
        assert 0 < float(row[3]) < 10
    assert "batch 100: TLS gives" in out and "(goal >= 0.88)" in out
    assert "batch   1: TLS gives" in out and "(goal >= 0.85)" in out
    assert _journal_nodes() == []
    assert list(work.iterdir()) == []
    assert main(["bench", "qjm", "--secure", "--rounds", "0"]) == 2


def test_each_slice_is_purged_after_it_unless_told_not_to(tmp_path: Path) -> None:
    """As the ideal deletes its file after each run: no segment piles up from slice to
    slice (the frozen phases, whose frozen node never answers, keep theirs)."""

    def segments(writer) -> list[list[str]]:
        return [
            sorted(p.name for p in writer.cluster.current_dir(i, qjm_measure.JID).iterdir())
            for i in range(3)
        ]

    with contextlib.ExitStack() as stack:
        writer = qjm_measure.Writer(stack, tmp_path / "cluster", 3, Configuration())
        for _ in range(3):
            result = writer.measure("3 JNs", 2, 0.05, 40)
            assert result.batches > 0
        assert all(not any(n.startswith("edits_") for n in names) for names in segments(writer))
        first = writer.txid
        writer.measure("3 JNs", 2, 0.05, 40, purge=False)
        writer.qjm.loggers.wait_for_all_pending_calls()  # finalize returned with a majority
        kept = f"edits_{first:019d}-{writer.txid - 1:019d}"
        assert all(
            [n for n in names if n.startswith("edits_")] in ([kept], [kept, f"{kept}.md5"])
            for names in segments(writer)
        )
    assert _journal_nodes() == []
