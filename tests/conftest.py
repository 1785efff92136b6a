"""Shared fixtures. Hadoop's test vectors are read from ../shared/testdata/hadoop/."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HADOOP_QJM_SHARED", PROJECT.parent / "shared"))
HADOOP_TESTDATA = SHARED / "testdata" / "hadoop"


@pytest.fixture(autouse=True)
def _root_logging_restored():
    """Each test leaves the root logger as it found it: a command or daemon run in-process
    (``main([...])``) configures logging for the process, and its handlers must not write
    into later tests' output."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)


@pytest.fixture(scope="session")
def hadoop_testdata() -> Path:
    if not (HADOOP_TESTDATA / "editsStored").exists():
        pytest.fail(f"Hadoop's test vectors are missing: expected them in {HADOOP_TESTDATA}")
    return HADOOP_TESTDATA


def _mini_zk_cluster(base_dir: Path, num_servers: int):
    """A started MiniZooKeeperCluster; a missing ZooKeeper fails the test (never skips) with
    the one-line install hint."""
    from hadoop_qjm.testing.mini_zk_cluster import MiniZooKeeperCluster, ZooKeeperNotFoundError

    try:
        return MiniZooKeeperCluster(base_dir, num_servers)
    except ZooKeeperNotFoundError as e:
        missing = str(e)
    pytest.fail(missing, pytrace=False)  # outside the except: no chained traceback


@pytest.fixture
def zk_server(tmp_path: Path):
    """One standalone ZooKeeper server (a JVM on 127.0.0.1), shut down after the test."""
    with _mini_zk_cluster(tmp_path / "zk", 1) as cluster:
        yield cluster


@pytest.fixture
def zk_ensemble(tmp_path: Path):
    """A 3-server ZooKeeper ensemble (3 JVMs on 127.0.0.1) with a leader, shut down after."""
    with _mini_zk_cluster(tmp_path / "zk", 3) as cluster:
        yield cluster
