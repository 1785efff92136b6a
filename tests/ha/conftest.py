"""Fixtures of the in-process HA tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hadoop_qjm.testing.in_process_ha import HAPair, ha_conf, journal_node_conf
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster


@pytest.fixture
def mjc() -> Iterator[MiniJournalCluster]:
    """Three in-process JournalNodes serving in-progress tailing from their edits caches
    (overrides tests/conftest.py's ``mjc``, which has the default configuration)."""
    with MiniJournalCluster(3, conf=journal_node_conf()) as cluster:
        yield cluster


@pytest.fixture
def pair(request: pytest.FixtureRequest, mjc: MiniJournalCluster, tmp_path) -> Iterator[HAPair]:
    """nn1 and nn2 in standby over ``mjc``, with the journal id of the test module's ``JID``
    ("ha" if it has none); both stopped after the test."""
    p = HAPair(ha_conf(tmp_path, mjc, getattr(request.module, "JID", "ha")), tmp_path)
    try:
        yield p
    finally:
        p.stop()


@pytest.fixture
def observed(request: pytest.FixtureRequest, mjc: MiniJournalCluster, tmp_path) -> Iterator[HAPair]:
    """nn1 active and nn2 an observer over ``mjc`` (two NameNodes: the standby of a
    three-NameNode nameservice is issue 37's item 1), with dfs.namenode.state.context.enabled
    and the test module's ``OBSERVER_CONF`` keys; both stopped after the test."""
    extra = {"dfs.namenode.state.context.enabled": "true"}
    extra.update(getattr(request.module, "OBSERVER_CONF", {}))
    p = HAPair(ha_conf(tmp_path, mjc, getattr(request.module, "JID", "ha"), **extra), tmp_path)
    try:
        p["nn1"].transition_to_active()
        with p.proxy("nn2") as p2:
            p2.transition_to_observer()
        yield p
    finally:
        p.stop()
