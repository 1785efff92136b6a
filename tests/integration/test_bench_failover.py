"""``hdfs-py bench failover --quick`` end to end: every figure is printed in its shape, and
nothing is left behind. Speed is never asserted."""

from __future__ import annotations

import re
from pathlib import Path

import psutil
import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.testing.daemon_process import running_children

pytestmark = pytest.mark.timeout(180)

MS = r"\s*\d+\.\d ms"
FAILOVER_LINE = re.compile(
    rf"^\s+([\d,]+) txns: failover{MS} = recovery{MS} \+ catch-up{MS} \((\d+) txns\) "
    rf"\+ segment{MS} \+ first write{MS}  \(setup \d+\.\d s\)$"
)
RECOVERY_LINE = re.compile(
    rf"^\s+recovery = new epoch{MS} \+ prepare{MS} \+ accept and finalize\s*-?\d+\.\d ms$"
)
LAG_LINE = re.compile(
    rf"^\s+in-progress (on |off) \((.*)\): p50{MS}  p99{MS}  max{MS}  \((\d+) ops in [\d.]+ s\)$"
)


def _daemons() -> list[psutil.Process]:
    return running_children("journalnode", "namenode")


def test_bench_failover_quick_prints_every_figure(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    assert main(["bench", "failover", "--quick", "--dir", str(work)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("3 JournalNode processes (pids ")
    failovers = [m for line in lines if (m := FAILOVER_LINE.match(line))]
    # Kept segment state on, then off (issue 25).
    assert [m.group(1) for m in failovers] == ["0", "1,000", "0", "1,000"], lines
    assert sum(1 for line in lines if RECOVERY_LINE.match(line)) == 4, lines
    stripped = [line.strip() for line in lines]
    identical = re.compile(
        r"^recovered segment identical on the [23] JournalNodes that finalized it "
        r"and to a rescan: yes$"
    )
    assert sum(1 for line in stripped if identical.match(line)) == 2, lines
    lags = [m for line in lines if (m := LAG_LINE.match(line))]
    assert [m.group(1).strip() for m in lags] == ["on", "on", "off"], lines
    assert lags[0].group(2).startswith("push") and lags[1].group(2).startswith("poll")
    assert "log-roll period 1s" in lags[2].group(2)
    assert all(int(m.group(3)) > 0 for m in lags)
    assert re.search(
        r"^tailing lag p99 with in-progress tailing: [\d.]+ ms \(goal < 100 ms: ",
        "\n".join(lines),
        re.M,
    )
    text = "\n".join(lines)
    assert re.search(r"^kept state: failover with 1,000 txns / with 1,000: ", text, re.M) is None
    assert re.search(r"^failover with 1,000 txns, kept state / rescans: ", text, re.M)
    assert "recovered segments identical everywhere and to a rescan: yes" in lines
    assert re.search(r"^tail lag p99 push / poll: ", text, re.M)
    assert re.search(r"^idle CPU \(NameNodes \+ JournalNodes\), push / poll: ", text, re.M)
    assert _daemons() == []
    assert list(work.iterdir()) == []


@pytest.mark.slow  # the quick run above exercises the same command in the default run
def test_bench_failover_includes_the_goal_line_for_10000_txns(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    argv = ["bench", "failover", "--txns", "10000", "--lag-seconds", "0.3", "--lag-ops", "20"]
    argv += ["--idle-seconds", "0.1"]  # the idle CPU of push and poll: not asserted here
    assert main([*argv, "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^failover with 10,000 unfinalized txns: [\d.]+ s \(goal < 1 s: ", out, re.M)


def test_bench_failover_rejects_bad_counts(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "failover", "--txns", "10,x"]) == 2
    assert "--txns must be comma-separated integers" in capsys.readouterr().err
    assert main(["bench", "failover", "--txns", "-1"]) == 2
    assert "--txns must be between 0 and 10000000" in capsys.readouterr().err
