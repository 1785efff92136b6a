"""Shared fixtures. Hadoop's test vectors are read from ../shared/testdata/hadoop/."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HADOOP_QJM_SHARED", PROJECT.parent / "shared"))
HADOOP_TESTDATA = SHARED / "testdata" / "hadoop"


@pytest.fixture(scope="session")
def hadoop_testdata() -> Path:
    if not (HADOOP_TESTDATA / "editsStored").exists():
        pytest.fail(f"Hadoop's test vectors are missing: expected them in {HADOOP_TESTDATA}")
    return HADOOP_TESTDATA
