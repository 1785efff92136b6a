"""The main job, as a user runs it: ``bin/hdfs-py quickstart``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]


@pytest.mark.timeout(180)
def test_quickstart_runs_writer_failover_reader():
    result = subprocess.run(
        [
            sys.executable,
            str(PROJECT / "bin" / "hdfs-py"),
            "quickstart",
            "--txns",
            "300",
            "--segment",
            "100",
        ],
        capture_output=True,
        text=True,
        timeout=170,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "Started 3 JournalNode processes" in out
    assert "Writer B: took over with epoch 2" in out
    assert "its next write is refused (fenced)" in out and "epoch" in out
    match = re.search(
        r"read (\d+) edits in \d+ segments; all (\d+) acknowledged edits present", out
    )
    assert match and int(match.group(2)) >= 600 and int(match.group(1)) >= int(match.group(2))
    assert "quickstart: OK" in out
