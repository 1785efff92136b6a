"""Two NameNodes over one shared journal: standby tailing, transitions, StandbyException."""

from __future__ import annotations

import logging

import pytest

from hadoop_qjm.namenode.protocol.exceptions import StandbyException
from hadoop_qjm.namenode.protocol.messages import HAServiceState
from hadoop_qjm.testing.in_process_ha import HAPair, ha_conf, journal_node_conf, wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def mjc():
    with MiniJournalCluster(3, conf=journal_node_conf()) as cluster:
        yield cluster


@pytest.fixture
def pair(mjc, tmp_path):
    p = HAPair(ha_conf(tmp_path, mjc, "ha"), tmp_path)
    try:
        yield p
    finally:
        p.stop()


def test_a_standby_start_logs_how_a_namenode_becomes_active(mjc, tmp_path, caplog):
    """Neither NameNode makes itself active: each says so at start, in one INFO line."""
    caplog.set_level(logging.INFO, logger="hadoop_qjm.namenode.name_node")
    p = HAPair(ha_conf(tmp_path, mjc, "ha"), tmp_path)
    p.stop()
    lines = [r.getMessage() for r in caplog.records if "started in standby" in r.getMessage()]
    assert len(lines) == 2, lines
    for nnid, line in zip(("nn1", "nn2"), lines):
        assert f"NameNode {nnid} of nameservice mycluster started in standby" in line
        assert "hdfs-py haadmin -transitionToActive" in line and "zkfc" in line
        assert "\n" not in line


def test_both_start_in_standby_and_refuse_clients(pair):
    for nnid in ("nn1", "nn2"):
        assert pair[nnid].state is HAServiceState.STANDBY
        with pair.proxy(nnid) as proxy:
            assert proxy.get_service_status().state is HAServiceState.STANDBY
            with pytest.raises(StandbyException, match="WRITE is not supported in state standby"):
                proxy.mkdirs("/a")
            with pytest.raises(StandbyException, match="READ"):
                proxy.get_file_info("/")


def test_standby_tails_in_progress_edits_and_takes_over(pair):
    with pair.proxy("nn1") as p1:
        p1.transition_to_active()
        for i in range(20):
            assert p1.mkdirs(f"/d{i}")
    ns2 = pair["nn2"].core.namesystem
    wait_until(lambda: ns2.dir.get_inode("/d19") is not None, what="nn2 to tail /d19")
    # Failover: nn1 steps down, nn2 takes over and continues at the next txid.
    with pair.proxy("nn1") as p1, pair.proxy("nn2") as p2:
        p1.transition_to_standby()
        p2.transition_to_active()
        assert p2.get_service_status().state is HAServiceState.ACTIVE
        assert p2.get_file_info("/d0") is not None
        assert p2.mkdirs("/after")
        with pytest.raises(StandbyException):
            p1.mkdirs("/refused")
    ns1 = pair["nn1"].core.namesystem
    wait_until(lambda: ns1.dir.get_inode("/after") is not None, what="nn1 to tail /after")
    assert ns1.dir.snapshot() == ns2.dir.snapshot()


def test_a_fenced_active_terminates_on_its_next_sync(pair):
    """nn2 becomes active while nn1 still believes it is: nn1's next edit fails (the epoch
    fences it) and nn1 terminates instead of diverging."""
    pair["nn1"].transition_to_active()
    with pair.proxy("nn1") as p1:
        assert p1.mkdirs("/before")
    pair["nn2"].transition_to_active()
    with pair.proxy("nn1") as p1:
        with pytest.raises(Exception):  # noqa: B017 - the call fails either way
            p1.mkdirs("/fenced")
    assert pair.terminations["nn1"], "nn1 went on writing after it was fenced"
    status, message = pair.terminations["nn1"][0]
    assert status == 1 and "epoch" in message, message
    with pair.proxy("nn2") as p2:
        assert p2.get_file_info("/before") is not None
        assert p2.get_file_info("/fenced") is None


def test_a_tailer_round_that_outlives_its_tailer_applies_nothing_on_the_active(pair):
    """A tailer round stuck (e.g. in a roll request) past the transition to active must not
    apply the active's own txns a second time."""
    pair["nn2"].transition_to_active()
    core = pair["nn2"].core
    with pair.proxy("nn2") as p2:
        assert p2.mkdirs("/once")
    before = core.last_applied_txid
    assert core.tail_edits(in_progress_ok=True) == 0
    assert core.last_applied_txid == before
    with pair.proxy("nn2") as p2:
        assert p2.mkdirs("/twice") and p2.get_file_info("/once") is not None


def test_a_write_caught_by_the_transition_to_standby_is_refused(pair):
    """A write that passed the RPC check just before the transition to standby is refused
    by the standby edit log before it changes anything; a sync of a txid the closed edit
    log made durable still returns."""
    pair["nn1"].transition_to_active()
    core = pair["nn1"].core
    namesystem = core.namesystem
    with pair.proxy("nn1") as p1:
        assert p1.mkdirs("/durable")
    synced = core.edit_log.synced_txid
    pair["nn1"].transition_to_standby()
    with pytest.raises(StandbyException):
        namesystem.mkdirs("/late", 0o755)
    assert namesystem.dir.get_inode("/late") is None
    namesystem.edit_log.log_sync(synced)  # durable before the segment ended: returns
    with pytest.raises(StandbyException):
        namesystem.edit_log.log_sync(core.last_applied_txid + 10)
