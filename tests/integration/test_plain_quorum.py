"""The plain-socket quorum ``bench qjm`` runs for context: it commits, reports, cleans up."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

MODULE = "hadoop_qjm.tools.bench._plain_quorum"


@pytest.mark.parametrize("servers", [3, 5])
def test_it_commits_batches_on_a_majority_and_leaves_no_file(tmp_path: Path, servers) -> None:
    args = ["--servers", str(servers), "--batch", "4", "--rec", "20", "--seconds", "0.2"]
    done = subprocess.run(
        [sys.executable, "-m", MODULE, *args, "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["servers"] == servers and figures["batch"] == 4
    assert figures["batches"] > 0
    assert figures["records_per_s"] > 0
    assert 0 < figures["lat_ms_p50"] <= figures["lat_ms_p99"]
    assert list(tmp_path.iterdir()) == []  # every server removed its file
    assert "Traceback" not in done.stderr


def test_a_bad_argument_is_one_line(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", MODULE, "--servers", "0", "--dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=50,
        check=False,
    )
    assert done.returncode == 2
    assert "--servers, --batch, --rec and --seconds must be positive" in done.stderr
    assert "Traceback" not in done.stderr
