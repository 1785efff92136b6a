"""``hdfs-py bench reconfigure`` end to end, briefly: it runs, prints the three phases and
the ratios, and leaves nothing behind."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hadoop_qjm.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.timeout(120)]


def test_bench_reconfigure_prints_before_during_after(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert main(["bench", "reconfigure", "--ops", "20", "--dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "replace one of three; 20 single-op flushes per phase" in out
    assert re.search(r"before  p50 +\d+\.\d+ ms  p99 +\d+\.\d+ ms\n", out)
    assert re.search(r"during .* x\d+\.\d\d \(p50\), x\d+\.\d\d \(p99\)  goal <= 2\.0x", out)
    assert re.search(r"after .* goal <= 1\.0x", out)
    assert list(tmp_path.iterdir()) == []
