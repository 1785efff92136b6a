"""Fixtures of the fault tests: a fast scratch directory and a local cluster over it."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from hadoop_qjm.conf import Configuration
from hadoop_qjm.testing.local_transport import LocalJournalCluster


@pytest.fixture
def fast_dir() -> Iterator[Path]:
    """A scratch directory on tmpfs when there is one (the Journals' fsyncs cost nothing)."""
    shm = Path("/dev/shm")
    parent = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    path = Path(tempfile.mkdtemp(prefix="qjm-fault-test-", dir=parent))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def local_cluster(fast_dir: Path) -> Iterator[LocalJournalCluster]:
    """Three simulated JournalNodes over real files."""
    with LocalJournalCluster(3, fast_dir, Configuration()) as cluster:
        yield cluster
