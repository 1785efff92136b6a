"""Changing the JournalNode set of a running journal by joint consensus, against real
JournalNodes (MiniJournalCluster, Thrift and HTTP on 127.0.0.1).

docs/journalnode.md, "Online, by joint consensus: the design": begin (S0–S2), write
under O+N (S3), finish (S4–S5); a later writer configured with the old set follows
the records, or adopts O+N when the switch was cut short.

    nodes      0   1   2   3   4
    replace    O N O N O   . N          O = {0,1,2}, N = {0,1,3}
    grow       O N O N O N . N . N      O = {0,1,2}, N = {0,1,2,3,4}
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hadoop_qjm.common.exceptions import IllegalStateException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.file_journal_manager import finalized_edits_file_name
from hadoop_qjm.qjournal.client.membership_change import (
    begin_reconfiguration,
    finish_reconfiguration,
)
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalMembershipException,
    JournalNodesBehindException,
)
from hadoop_qjm.qjournal.protocol.membership import Config, MembershipRecord, RecordState
from hadoop_qjm.qjournal.server.journal_membership import MEMBERSHIP_FILE
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    recover_and_return_last_txn,
    write_segment,
    write_txns,
)

pytestmark = pytest.mark.timeout(90)


@pytest.fixture
def cluster(tmp_path) -> Iterator[MiniJournalCluster]:  # noqa: ANN001
    with MiniJournalCluster(5, base_dir=tmp_path) as c:
        yield c


def _uri(cluster: MiniJournalCluster, nodes: list[int]) -> str:
    hosts = ";".join(f"127.0.0.1:{cluster.rpc_ports[i]}" for i in nodes)
    return f"qjournal://{hosts}/{JID}"


def _members(cluster: MiniJournalCluster, nodes: list[int]) -> frozenset[str]:
    return frozenset(f"127.0.0.1:{cluster.rpc_ports[i]}" for i in nodes)


def _qjm(cluster: MiniJournalCluster, nodes: list[int]) -> QuorumJournalManager:
    return QuorumJournalManager(Configuration(), _uri(cluster, nodes), FAKE_NSINFO)


def _record(cluster: MiniJournalCluster, i: int) -> MembershipRecord | None:
    path = cluster.current_dir(i, JID) / MEMBERSHIP_FILE
    return MembershipRecord.parse(path.read_text()) if path.exists() else None


def _format_all(cluster: MiniJournalCluster) -> None:
    """Every node formatted for the namespace (the new ones as `journalnode -bootstrap`
    would; they hold no segment yet)."""
    with _qjm(cluster, [0, 1, 2, 3, 4]) as q:
        q.format(FAKE_NSINFO)


def test_replace_one_of_three_then_an_old_writer_follows(cluster: MiniJournalCluster) -> None:
    _format_all(cluster)
    old, new = [0, 1, 2], [0, 1, 3]
    writer = _qjm(cluster, old)
    try:
        writer.recover_unfinalized_segments()
        write_segment(writer, 1, 10, finalize=True)
        begin_reconfiguration(writer, _uri(cluster, new))
        joint = Config(_members(cluster, old), _members(cluster, new))
        assert writer.config == joint
        writer.loggers.wait_for_all_pending_calls()  # the record is done at a joint quorum
        assert all(_record(cluster, i).config == joint for i in (0, 1, 2, 3))
        assert _record(cluster, 4) is None
        write_segment(writer, 11, 10, finalize=True)  # under O+N: node 3 gets it too
        writer.loggers.wait_for_all_pending_calls()
        assert (cluster.current_dir(3, JID) / finalized_edits_file_name(11, 20)).exists()
        finish_reconfiguration(writer, since_txid=1, last_txid=20)
        assert writer.config == Config(_members(cluster, new))
        writer.loggers.wait_for_all_pending_calls()  # the nodes of the new set
        assert all(_record(cluster, i).state is RecordState.STABLE for i in (0, 1, 3))
        write_segment(writer, 21, 10, finalize=True)  # under N alone: not on node 2
        assert not (cluster.current_dir(2, JID) / finalized_edits_file_name(21, 30)).exists()
    finally:
        writer.close()
    # A NameNode still configured with the old three fails over: node 2 is gone; nodes 0
    # and 1 (a majority of the old set) hold STABLE(new, previous=old): it follows.
    cluster.stop_journal_node(2)
    with _qjm(cluster, old) as follower:
        assert recover_and_return_last_txn(follower) == 30
        assert follower.config == Config(_members(cluster, new))


def test_a_switch_cut_short_makes_the_next_writer_use_both_sets(
    cluster: MiniJournalCluster,
) -> None:
    """3 → 5; the writer dies in the middle of a joint segment. Its acknowledged txns
    are on a majority of each set; the next writer, configured with the old three,
    adopts O+N and recovers them all."""
    _format_all(cluster)
    old, new = [0, 1, 2], [0, 1, 2, 3, 4]
    writer = _qjm(cluster, old)
    writer.recover_unfinalized_segments()
    write_segment(writer, 1, 10, finalize=True)
    begin_reconfiguration(writer, _uri(cluster, new))
    stm = writer.start_log_segment(11, -66)
    write_txns(stm, 11, 5)  # acknowledged by a joint quorum; never finalized
    writer.close()
    with _qjm(cluster, old) as next_writer:
        assert recover_and_return_last_txn(next_writer) == 15
        assert next_writer.config == Config(_members(cluster, old), _members(cluster, new))
        # The nodes that hold JOINT promised the new epoch only to an O+N writer.
        assert next_writer.loggers.epoch == 2


def test_the_new_set_must_hold_the_history_before_it_decides_alone(
    cluster: MiniJournalCluster,
) -> None:
    """3 → 5 with node 2 down while segment 1–10 was written: only nodes 0 and 1 hold
    it, and three of five are needed so that every majority of the five reads it.
    The writer refuses to finish and stays joint, still writing."""
    _format_all(cluster)
    old, new = [0, 1, 2], [0, 1, 2, 3, 4]
    cluster.stop_journal_node(2)
    writer = _qjm(cluster, old)
    try:
        writer.recover_unfinalized_segments()
        write_segment(writer, 1, 10, finalize=True)
        cluster.restart_journal_node(2)
        begin_reconfiguration(writer, _uri(cluster, new))
        writer.loggers.wait_for_all_pending_calls()
        # The type haadmin -reconfigureSharedEdits waits on (issue 33 item 11).
        with pytest.raises(JournalNodesBehindException, match=r"finalized segments \[\(1, 10\)\]"):
            finish_reconfiguration(writer, since_txid=1, last_txid=10)
        assert writer.config.is_joint
        assert all(_record(cluster, i).state is RecordState.JOINT for i in range(5))
        write_segment(writer, 11, 10, finalize=True)
    finally:
        writer.close()


def test_a_writer_of_an_unrelated_set_refuses_with_one_sentence(
    cluster: MiniJournalCluster,
) -> None:
    _format_all(cluster)
    with _qjm(cluster, [0, 1, 2]) as writer:
        writer.recover_unfinalized_segments()
        write_segment(writer, 1, 3, finalize=True)
        begin_reconfiguration(writer, _uri(cluster, [0, 1, 3]))
        with pytest.raises(IllegalStateException, match="already changing its set"):
            begin_reconfiguration(writer, _uri(cluster, [0, 1, 4]))
    with _qjm(cluster, [0, 1, 4]) as stranger:
        with pytest.raises(JournalMembershipException) as refused:
            stranger.recover_unfinalized_segments()
    assert "set dfs.namenode.shared.edits.dir to them" in str(refused.value)
    assert "\n" not in str(refused.value)


def test_the_history_check_fails_when_no_node_answers(cluster: MiniJournalCluster) -> None:
    """run_seed 193 --membership: every node was down for the manifests, the history
    check passed on an empty list, a STABLE record reached one node, and a later writer
    followed it to a set missing segment 83-86. The check must fail without answers.

        manifests:  jn0 down  jn1 down  jn2 down  jn3 down   -> nothing listed
        expected:   segments 1-10 chained through txid 10    -> refuse, stay joint
    """
    _format_all(cluster)
    writer = _qjm(cluster, [0, 1, 2])
    try:
        writer.recover_unfinalized_segments()
        write_segment(writer, 1, 10, finalize=True)
        begin_reconfiguration(writer, _uri(cluster, [0, 1, 3]))
        writer.loggers.wait_for_all_pending_calls()
        for i in range(4):
            cluster.stop_journal_node(i)
        with pytest.raises(JournalMembershipException, match="starting at txid 1$"):
            finish_reconfiguration(writer, since_txid=1, last_txid=10)
        assert writer.config.is_joint
        assert all(_record(cluster, i).state is RecordState.JOINT for i in range(4))
    finally:
        writer.close()
