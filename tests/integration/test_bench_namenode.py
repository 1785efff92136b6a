"""``hdfs-py bench namenode`` end to end, briefly: it runs, reports, and leaves nothing behind."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.testing.daemon_process import running_children

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]


def _daemons() -> list[psutil.Process]:
    return running_children("journalnode", "namenode", "hadoop_qjm.tools.bench._nn_load")


def test_bench_namenode_reports_every_phase_and_stops_every_process(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    args = ["bench", "namenode", "--clients", "1,4", "--seconds", "0.3", "--max-ops", "200"]
    assert main([*args, "--dir", str(work)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    floor_at = next(i for i, line in enumerate(lines) if line.startswith("RPC floor:"))
    for clients in (1, 4):
        tag = f"{clients:>4} clients:"
        line = next(line for line in lines[:floor_at] if line.startswith(tag))
        assert "mkdirs/s" in line and "p50" in line and "p99" in line and "txns/sync" in line
        assert "in flight" in line and "µs/call" in line
        floor = next(line for line in lines[floor_at:] if line.startswith(tag))
        assert "calls/s" in floor and "µs/call" in floor
    assert "NameNode CPU per mkdir at 4 clients:" in out and "(goal <= 60 µs:" in out
    assert "4 clients, NameNode / RPC floor:" in out and "(goal >= 0.5x:" in out
    assert "4 clients / 1 client:" in out and "(goal >= 12x:" in out
    # the permissions comparison: three NameNode processes at the count nearest 64
    for side in ("off", "on", "on-async"):
        at = next(i for i, line in enumerate(lines) if line.startswith(f"permissions {side} ("))
        assert lines[at + 1].strip().startswith("4 clients:") and "µs/call" in lines[at + 1]
    for side in ("on", "on-async"):
        audited = next(line for line in lines if f"hdfs-audit.log of the '{side}'" in line)
        assert int(audited.split(": ")[1].split()[0].replace(",", "")) > 0
        ratio = next(line for line in lines if f"permissions and audit {side} / off:" in line)
        assert "x mkdirs/s" in ratio and "µs per mkdir" in ratio and "(goal >= 0.85x:" in ratio
    # and where its CPU goes, in process
    assert "off (dfs.permissions.enabled=false, no audit log):" in out
    assert "checks only (as alice, no audit log):" in out
    assert "on  (checks as alice, every call in hdfs-audit.log):" in out
    assert any(line.startswith("  the checks: ") and "the audit line:" in line for line in lines)
    assert _daemons() == []
    assert list(work.iterdir()) == []


def test_bench_namenode_rejects_bad_client_counts(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench", "namenode", "--clients", "1,0"]) == 2
    assert "--clients must be between 1 and 1024" in capsys.readouterr().err
