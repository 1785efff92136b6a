"""``hdfs-py bench namenode --observers``: every figure line of each phase and both goal
lines, with tiny numbers on real processes (slow: four NameNodes start, ~40 s), and what
it prints from given figures and for bad input (quick)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import psutil
import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.testing.daemon_process import running_children
from hadoop_qjm.tools.bench._nn_observers import ObserverPhase, goal_lines, phase_lines

pytestmark = pytest.mark.timeout(300)


def _daemons() -> list[psutil.Process]:
    return running_children(
        "journalnode", "namenode", "hadoop_qjm.tools.bench._nn_load", "_nn_observers"
    )


@pytest.mark.slow
def test_bench_observers_prints_every_figure_and_stops_every_process(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    args = ["bench", "namenode", "--observers", "0,1,2", "--readers", "4", "--writers", "2"]
    args += ["--seconds", "0.5", "--max-ops", "200", "--dir", str(work)]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("4 NameNode processes (nn1 pid ")
    heads = [i for i, line in enumerate(lines) if not line.startswith(" ")][1:]
    titles = [lines[i] for i in heads]
    assert titles[:5] == [
        "no readers, the writers alone (4 NameNodes):",
        "0 observers, reads on the active alone:",
        "1 observers, reads through the observer proxy:",
        "2 observers, reads through the observer proxy:",
        "no readers, the writers alone (4 NameNodes):",
    ]
    for at, end in zip(heads[:5], heads[1:6], strict=True):
        body = lines[at + 1 : end]
        assert any(
            re.search(r"2 writers: +[\d,]+ mkdirs/s .* p99 .* ms +\(\d+ ops\)", b) for b in body
        )
        cpu = next(b for b in body if b.startswith("  CPU: "))
        assert all(f"nn{i} " in cpu for i in range(1, 5)) and "cores)" in cpu
        assert any(b.startswith("  CPU of the 3 JournalNodes: ") for b in body)
        if "readers" in lines[at]:
            continue
        reads = next(b for b in body if "readers:" in b)
        assert "getFileInfo/s" in reads and "getListing/s" in reads and "p99" in reads
        assert any(
            b.startswith("  held for alignment (the observers' ObserverStatus): ") for b in body
        )
        assert any(b.endswith(" s") and "of the reader processes: " in b for b in body)
        served = next(b for b in body if b.startswith("  reads served: "))
        counts = dict(re.findall(r"(nn\d) \((\w+)\) [\d,]+", served))
        observers = [n for n, state in counts.items() if state == "observer"]
        assert len(observers) == int(lines[at][0])
        # Reads went to the observers when there were any, else to the active.
        numbers = {
            n: int(c.replace(",", "")) for n, c in re.findall(r"(nn\d) \(\w+\) ([\d,]+)", served)
        }
        if observers:
            assert all(numbers[n] > 0 for n in observers) and numbers["nn1"] == 0
        else:
            assert numbers["nn1"] > 0
    assert lines[heads[5]].startswith("no-reader baseline (before and after): ")
    goals = lines[heads[5] + 1 :]
    assert goals[0].startswith(
        "2 observers, the active's mkdirs/s under the read load / with no readers: "
    )
    assert "; goal >= 0.9x: " in goals[0]
    assert re.fullmatch(
        r"  \(reads on the active alone: [\d.]+x the mkdirs/s with no readers\)", goals[1]
    )
    assert (
        goals[2].startswith("2 observers / reads on the active alone: ")
        and "; goal >= 1.5x: " in goals[2]
    )
    assert _daemons() == []
    assert list(work.iterdir()) == []


def _phase(observers: int | None, mkdirs: int, reads: int = 0) -> ObserverPhase:
    nodes = ("nn1", "nn2", "nn3", "nn4")
    states = dict(zip(nodes, ("active", "standby", "observer", "observer"), strict=True))
    return ObserverPhase(
        observers=observers,
        seconds=2.0,
        mkdirs=mkdirs,
        write_lat_ms=(1.0, 2.0),
        file_infos=reads // 2,
        listings=reads - reads // 2,
        read_lat_ms=(0.5, 3.0),
        held_calls=3,
        held_ms=12,
        served=dict.fromkeys(nodes, 0),
        cpu_s=dict.fromkeys(nodes, 0.5),
        states=states,
    )


def test_the_goal_lines_are_ratios_of_the_same_run() -> None:
    baseline = _phase(None, 2000)
    phases = [_phase(0, 1500, 1000), _phase(1, 1700, 1400), _phase(2, 1900, 1600)]
    assert goal_lines(phases, baseline) == [
        "2 observers, the active's mkdirs/s under the read load / with no readers: 0.95x "
        "(950 vs 1,000; goal >= 0.9x: met)",
        "  (reads on the active alone: 0.75x the mkdirs/s with no readers)",
        "2 observers / reads on the active alone: 1.60x reads/s (800 vs 500; goal >= 1.5x: met)",
    ]
    phases = [_phase(0, 1500, 1000), _phase(1, 1700, 1400)]
    lines = goal_lines(phases, baseline)
    assert lines[0].startswith("1 observers, ") and lines[0].endswith("goal >= 0.9x: NOT met)")
    assert lines[2].endswith("(700 vs 500; goal >= 1.5x: NOT met)")
    assert goal_lines([_phase(0, 1500, 1000)], baseline) == [
        "no phase with observers: the goals need --observers with 0 and 2"
    ]


def test_a_phase_prints_its_reads_writes_holds_and_cpu() -> None:
    args = argparse.Namespace(readers=64, writers=8)
    lines = phase_lines(_phase(2, 1900, 1600), args)
    assert lines[0] == "2 observers, reads through the observer proxy:"
    assert "400 getFileInfo/s" in lines[1] and "400 getListing/s" in lines[1]
    assert "(800 reads/s)" in lines[1] and "p99    3.00 ms" in lines[1]
    assert "950 mkdirs/s" in lines[2]
    assert lines[3].startswith("  reads served: nn1 (active) 0  nn2 (standby) 0  nn3 (observer) 0")
    assert lines[4] == "  held for alignment (the observers' ObserverStatus): 3 calls, 12 ms"
    assert lines[5].startswith("  CPU: nn1 active 0.50 s (0.25 cores)")
    assert lines[6] == "  CPU of the 3 JournalNodes: 0.00 s, of the reader processes: 0.00 s"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--observers", "0,4"], "--observers must be counts between 0 and 3"),
        (["--observers", "one"], "--observers must be comma-separated integers, not 'one'"),
        (["--observers", "0,2", "--readers", "0"], "--readers must be between 1 and 1024"),
    ],
)
def test_bad_input_is_one_line(args: list[str], message: str, capsys) -> None:
    assert main(["bench", "namenode", *args]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
