"""Fixtures of the in-process HA tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hadoop_qjm.testing.in_process_ha import journal_node_conf
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster


@pytest.fixture
def mjc() -> Iterator[MiniJournalCluster]:
    """Three in-process JournalNodes serving in-progress tailing from their edits caches
    (overrides tests/conftest.py's ``mjc``, which has the default configuration)."""
    with MiniJournalCluster(3, conf=journal_node_conf()) as cluster:
        yield cluster
