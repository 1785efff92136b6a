"""``hdfs-py bench journalnode`` end to end, briefly: it runs, reports, and leaves nothing behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.testing.daemon_process import running_children

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_bench_journalnode_alternates_slices_and_reports_the_median_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    args = ["bench", "journalnode", "--seconds", "0.4", "--slice", "0.1", "--batch", "10"]
    assert main([*args, "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "batch: 10 ops" in out
    assert re.search(r"raw write\+fdatasync, same disk, same batch size: [\d,]+ batches/s", out)
    assert "(4 slices of 0.10 s, alternating with the JournalNode's)" in out
    assert re.search(r"journalnode: [\d,]+ batches/s, [\d,]+ txns/s, .* fsync share", out)
    assert re.search(r"ratio to raw fdatasync: \d+\.\d\d \(goal >= 0\.8\); median of 4 slices", out)
    assert re.search(r"a bare server \(the same frames over loopback.*\): [\d,]+ batches/s", out)
    assert re.search(r"bare server / raw \d+\.\d\d \(median of 4 slices", out)
    assert re.search(r"pre-encoded from a plain socket .*: [\d,]+ batches/s; / raw \d", out)
    assert re.search(r"journalnode \(QJournalProtocolProxy\) / pre-encoded calls: \d+\.\d\d", out)
    share = re.search(r"fsync share of the time (\d+)%", out)
    assert share and 0 < int(share.group(1)) <= 100
    assert list(tmp_path.iterdir()) == []


def test_a_failing_phase_still_removes_the_directory_and_stops_every_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from hadoop_qjm.tools.bench import journalnode

    def broken(self, seconds: float, max_batches: int) -> tuple[int, float]:
        raise OSError("the disk went away")

    monkeypatch.setattr(journalnode._JournalWriter, "run", broken)
    # Only what the bench starts counts: a worker that ran tests/spark before this file
    # still has its session's JVM and PySpark daemon beneath it.
    before = {child.pid for child in running_children()}
    args = ["bench", "journalnode", "--seconds", "0.2", "--slice", "0.1", "--batch", "10"]
    assert main([*args, "--dir", str(tmp_path)]) != 0
    assert "the disk went away" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []
    assert [child for child in running_children() if child.pid not in before] == []


def test_bench_journalnode_catch_up_reports_both_rates_and_the_ratio(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    args = ["bench", "journalnode", "--catch-up", "--segments", "3", "--segment-mb", "0.2"]
    assert main([*args, "--rounds", "2", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "3 finalized segments" in out
    assert (
        len(re.findall(r"^  round \d: raw copy .* MB/s, catch-up .* MB/s: \d+\.\d\d$", out, re.M))
        == 2
    )
    # Every segment came with the md5 its peer's finalize kept: no op checked again.
    assert (
        "installed with the md5 their peer kept (hashed as received, ops not checked again): 3 of 3 segments"
        in out
    )
    assert re.search(r"raw local copy .*: [\d,.]+ MB/s, [\d,.]+ segments/s", out)
    assert re.search(r"catch-up of a wiped JournalNode .*: [\d,.]+ MB/s, [\d,.]+ segments/s", out)
    assert re.search(r"ratio to the raw copy: \d+\.\d\d \(goal >= 0\.5\)", out)
    assert re.search(r"md5 alone / raw copy \d+\.\d\d; catch-up / md5 alone \d+\.\d\d", out)
    assert re.search(
        r"CPU per catch-up \(median\): this process \(the new JournalNode\) [\d,]+ ms, the two "
        r"peers [\d,]+ ms \(counted in [\d.]+ ms clock ticks, their background threads "
        r"included\); \d+\.\d of this machine's \d+ CPUs busy over a catch-up",
        out,
    )
    assert list(tmp_path.iterdir()) == []
