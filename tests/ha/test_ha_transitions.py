"""HAServiceProtocol on an in-process pair: idempotent transitions, monitorHealth,
getServiceStatus, StandbyException for every category, and a transition to active that
cannot reach a quorum of JournalNodes (the NameNode stays standby, nothing is written)."""

from __future__ import annotations

import pytest

from hadoop_qjm.common.exceptions import ExitException, IOException
from hadoop_qjm.namenode.journal_set import JournalSetFailure
from hadoop_qjm.namenode.name_node_core import format_namenode
from hadoop_qjm.namenode.protocol.exceptions import (
    HealthCheckFailedException,
    ServiceFailedException,
    StandbyException,
)
from hadoop_qjm.namenode.protocol.messages import HAServiceState, HAServiceStatus
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from tests.integration.namenode_support import FakeJournal, Terminations, nn_conf, start_nn

pytestmark = pytest.mark.timeout(120)

JID = "transitions"


def segment_files(mjc: MiniJournalCluster, i: int) -> set[str]:
    return {
        p.name
        for p in mjc.current_dir(i, JID).iterdir()
        if p.name.startswith("edits_") and p.suffix != ".md5"
    }


def test_transition_to_active_is_idempotent(pair):
    nn1 = pair["nn1"]
    nn1.transition_to_active()
    edit_log = nn1.core.edit_log
    segment, last = edit_log.cur_segment_txid, edit_log.last_written_txid
    with pair.proxy("nn1") as p1:
        p1.transition_to_active()  # again, over RPC: no new epoch, no new segment
        assert p1.get_service_status().state is HAServiceState.ACTIVE
        assert p1.mkdirs("/still-writing")
    nn1.transition_to_active()
    assert nn1.core.edit_log is edit_log
    assert edit_log.cur_segment_txid == segment
    assert edit_log.last_written_txid == last + 1
    assert not pair.terminations["nn1"]


def test_transition_to_standby_on_a_standby_is_a_no_op(pair):
    nn2 = pair["nn2"]
    tailer, edit_log = nn2.tailer, nn2.core.edit_log
    with pair.proxy("nn2") as p2:
        p2.transition_to_standby()
        assert p2.get_service_status().state is HAServiceState.STANDBY
    nn2.transition_to_standby()
    assert nn2.state is HAServiceState.STANDBY
    assert nn2.tailer is tailer and tailer.running
    assert nn2.core.edit_log is edit_log


def test_active_to_standby_and_back(pair):
    with pair.proxy("nn1") as p1:
        p1.transition_to_active()
        assert p1.mkdirs("/one")
        p1.transition_to_standby()
        with pytest.raises(StandbyException):
            p1.mkdirs("/refused")
        assert pair["nn1"].tailer is not None and pair["nn1"].tailer.running
        p1.transition_to_active()  # a new epoch: it fenced its own earlier self
        assert p1.mkdirs("/two")
        assert p1.get_file_info("/one") is not None
    wait_until(lambda: pair["nn2"].core.namesystem.dir.get_inode("/two") is not None)
    assert not pair.terminations["nn1"]


def test_monitor_health(pair):
    pair["nn1"].transition_to_active()
    for nnid in ("nn1", "nn2"):
        with pair.proxy(nnid) as proxy:
            proxy.monitor_health()  # active and standby alike
    # A standby whose tailer died is not healthy: it no longer follows the journal.
    pair["nn2"].tailer.stop()
    with pair.proxy("nn2") as p2:
        with pytest.raises(HealthCheckFailedException, match="tailer is not running"):
            p2.monitor_health()
    pair["nn2"].stop()
    with pytest.raises(HealthCheckFailedException, match="not running"):
        pair["nn2"].monitor_health()


def test_service_status_fields(pair):
    with pair.proxy("nn2") as p2:
        assert p2.get_service_status() == HAServiceStatus(HAServiceState.STANDBY, True, None)
    with pair.proxy("nn1") as p1:
        p1.transition_to_active()
        # As Hadoop's NameNode.getServiceStatus: an active is ready to (stay) active.
        assert p1.get_service_status() == HAServiceStatus(HAServiceState.ACTIVE, True, None)
    pair["nn2"].stop()
    status = pair["nn2"].service_status()
    assert status.state is HAServiceState.INITIALIZING
    assert status.ready_to_become_active is False
    assert status.not_ready_reason == "The NameNode is not running"


STANDBY_CALLS = [
    ("READ", lambda p: p.get_file_info("/")),
    ("READ", lambda p: p.get_listing("/")),
    ("WRITE", lambda p: p.mkdirs("/x")),
    ("WRITE", lambda p: p.create("/f")),
    ("WRITE", lambda p: p.delete("/x", True)),
    ("WRITE", lambda p: p.rename("/x", "/y")),
    ("WRITE", lambda p: p.set_permission("/", 0o700)),
    ("WRITE", lambda p: p.set_owner("/", "alice", None)),
    ("JOURNAL", lambda p: p.roll_edits()),
    ("JOURNAL", lambda p: p.roll_edit_log()),
]


@pytest.mark.parametrize(("category", "call"), STANDBY_CALLS)
def test_a_standby_refuses_every_client_operation(pair, category, call):
    pair["nn1"].transition_to_active()
    with pair.proxy("nn1") as p1:
        p1.transition_to_standby()  # once active, now standby again: refuses the same way
    for nnid in ("nn1", "nn2"):
        with pair.proxy(nnid) as proxy:
            with pytest.raises(StandbyException) as info:
                call(proxy)
            assert str(info.value).endswith(
                f"Operation category {category} is not supported in state standby"
            )


def test_transition_to_active_without_a_quorum_stays_standby_and_writes_nothing(mjc, pair):
    """Hadoop's NameNode exits here; ours stays standby so that its failover controller can
    retry: it had written nothing, and its new epoch (if a JournalNode took it) only fences.

    ::

        JN0 up, JN1 down, JN2 down
        nn1.transitionToActive: newEpoch reaches 1/3 -> ServiceFailedException, standby
        JN1, JN2 back: nn1.transitionToActive -> active, writes
    """
    before = [segment_files(mjc, i) for i in range(3)]
    assert before == [set()] * 3
    mjc.stop_journal_node(1)
    mjc.stop_journal_node(2)
    nn1 = pair["nn1"]
    with pytest.raises(ServiceFailedException) as info:
        nn1.transition_to_active()
    message = str(info.value)
    assert message.startswith("Failed to become active: ") and "quorum" in message, message
    assert nn1.state is HAServiceState.STANDBY and nn1.tailer.running
    assert not pair.terminations["nn1"], "nn1 terminated"
    assert segment_files(mjc, 0) == set()
    assert not (mjc.current_dir(0, JID) / "last-writer-epoch").exists()
    with pair.proxy("nn1") as p1, pytest.raises(StandbyException):
        p1.mkdirs("/refused")
    # The other standby is untouched and still tails (its errors are retried).
    assert pair["nn2"].state is HAServiceState.STANDBY and pair["nn2"].tailer.running
    assert not pair.terminations["nn2"]
    # The JournalNodes are back: the same NameNode becomes active and writes.
    mjc.restart_journal_node(1)
    mjc.restart_journal_node(2)
    nn1.transition_to_active()
    with pair.proxy("nn1") as p1:
        assert p1.mkdirs("/after")
    wait_until(lambda: pair["nn2"].core.namesystem.dir.get_inode("/after") is not None)
    assert not pair.terminations["nn1"] and not pair.terminations["nn2"]


def test_a_failure_before_the_first_write_is_survivable_after_it_terminates(tmp_path):
    """Recovery failing is raised (no termination); the segment start failing its first
    sync terminates, as in Hadoop — from there on an edit may be half-written."""
    conf = nn_conf(tmp_path, shared="fake://shared")
    format_namenode(conf, journal_factory=lambda c, u, n: FakeJournal(u))
    shared = RecoveryFailingJournal("fake://shared")
    terminations = Terminations()
    core = start_nn(conf, terminations, journal_factory=lambda c, u, n: shared, ha_enabled=True)
    try:
        shared.fail_recovery = True
        with pytest.raises(JournalSetFailure, match="recoverUnfinalizedSegments failed"):
            core.start_active_services()
        assert terminations.calls == [] and shared.txids == []
        core.start_standby_services()  # what the NameNode does next
        shared.fail_recovery = False
        shared.fail_flush = True
        with pytest.raises(ExitException, match="Could not sync enough journals"):
            core.start_active_services()
        assert len(terminations.calls) == 1
    finally:
        core.abort()


class RecoveryFailingJournal(FakeJournal):
    def __init__(self, uri: str) -> None:
        super().__init__(uri)
        self.fail_recovery = False

    def recover_unfinalized_segments(self) -> None:
        if self.fail_recovery:
            raise IOException("Got too many exceptions to achieve quorum size 2/3")
