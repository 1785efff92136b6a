"""``hdfs-py bench namenode`` end to end, briefly: it runs, reports, and leaves nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import psutil
import pytest

from hadoop_qjm.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _daemons() -> list[psutil.Process]:
    return [
        p
        for p in psutil.Process(os.getpid()).children(recursive=True)
        if {"journalnode", "namenode"} & set(p.cmdline())
    ]


def test_bench_namenode_reports_every_phase_and_stops_every_process(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    args = ["bench", "namenode", "--clients", "1,4", "--seconds", "0.3", "--max-ops", "200"]
    assert main([*args, "--dir", str(work)]) == 0
    out = capsys.readouterr().out
    for clients in (1, 4):
        line = next(line for line in out.splitlines() if line.startswith(f"{clients:>4} clients:"))
        assert "ops/s" in line and "p50" in line and "p99" in line and "txns/sync" in line
    assert "4 clients / 1 client:" in out and "(goal >= 10x:" in out
    assert _daemons() == []
    assert list(work.iterdir()) == []


def test_bench_namenode_rejects_bad_client_counts(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "namenode", "--clients", "1,0"]) == 2
    assert "--clients must be between 1 and 1024" in capsys.readouterr().err
