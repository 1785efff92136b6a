"""Real bugs the randomized harness found: recovery treats any same-length copy as the value.

Found by ``run_seed``: 28 of seeds 100-199 fail at 300 writers. Replay::

    python -m hadoop_qjm.testing.randomized --seed 153    # finalized copies differ   (path 1)
    python -m hadoop_qjm.testing.randomized --seed 101    # an acked txn reads back changed (path 1)
    python -m hadoop_qjm.testing.randomized --seed 145    # finalized copies differ   (path 2)

The root cause is one assumption, inherited from Hadoop: that two in-progress
copies of a segment with the same first and last txid hold the same
transactions. Two writers can leave two different copies of the same length
(each wrote txid N to a minority before it was fenced). The design paper §2.8
proposed "the highest transaction ID *and md5sum* as a proxy for the segment
contents"; the implementation (Hadoop's and ours) kept only the txid.

* Path 1, ``Journal.accept_recovery``: a node whose copy has the decided end
  txid skips the download ("already have up-to-date logs"), keeps its other
  bytes, persists the paxos record and later finalizes them.
* Path 2, ``QuorumJournalManager._recover_unclosed_segment``: the finalize
  goes to every node, also to one that missed acceptRecovery;
  ``Journal.finalize_log_segment`` "validates" its own copy by its last txid
  only and finalizes it.

Either way the finalized copies of one segment differ, and an acknowledged
txn may be replaced, on some nodes, by one that was never acknowledged.

Fixed: path 1 by the content proxy the paper proposed — SegmentState carries
the MD5 of the segment's bytes up to its last txn; prepareRecovery reports it,
acceptRecovery downloads unless its copy has the same last txid *and* MD5, and
checks the downloaded copy against both before installing it (and a node never
finalizes a copy whose MD5 differs from the one it accepted). Path 2 by
finalizing, in recovery, only on the nodes whose acceptRecovery succeeded.
Seeds 101, 145 and 153 pass since.
"""

from __future__ import annotations

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.editlog.file_journal_manager import finalized_edits_file_name
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp
from hadoop_qjm.qjournal.protocol.exceptions import QuorumException
from hadoop_qjm.qjournal.server.paxos_record import read_paxos_record
from hadoop_qjm.testing.faults import DownNodes, RpcCounter, wrap_with
from hadoop_qjm.testing.invariants import FinalizedSegmentChecker
from hadoop_qjm.testing.local_transport import LocalJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, write_segment
from tests.paxos_record_fixtures import HADOOP_RECORD_4_4_IN_EPOCH_3


def _write(stm, txid: int, writer: str) -> None:
    stm.write(MkdirOp.create(txid, f"/{writer}/tx{txid}"))
    stm.set_ready_to_flush()
    stm.flush()


def _paths(cluster: LocalJournalCluster, node: int, name: str) -> list[str]:
    stream = EditLogFileInputStream(cluster.current_dir(node, JID) / name)
    try:
        return [op.path for op in stream]
    finally:
        stream.close()


def _check_identical(cluster: LocalJournalCluster) -> None:
    FinalizedSegmentChecker(lambda: [cluster.current_dir(i, JID) for i in range(3)]).check()


@pytest.mark.timeout(30)
def test_accept_recovery_replaces_a_same_length_copy_written_by_another_writer(
    local_cluster: LocalJournalCluster,
) -> None:
    """Three writers; segment 4 ends up one txn long on every node, with two contents.

    ::

        segment 4 (txns 1-3 finalized everywhere before)   jn0           jn1           jn2
        A (epoch 1): start 4 while jn0 is down             -             []            []
        A: txn 4 "/A/tx4" reaches jn2 only (not acked)     -             []            [A4]
        B (epoch 2) recovers without jn2: jn1's empty
          segment is moved aside, nothing to recover
        B: start 4; txn 4 "/B/tx4" ACKED by jn0, jn1       [B4]          [B4]          [A4]
        B: txn 5 "/B/tx5" reaches jn0 only                 [B4 B5]       [B4]          [A4]
        C (epoch 3) recovers without jn0:
          prepare(4): jn1 [4-4] lastWriterEpoch 2,
                      jn2 [4-4] lastWriterEpoch 1  -> source jn1 (B's copy, rule 3b)
          acceptRecovery([4-4] from jn1): jn2 already
          has a [4-4] -> skips the download, keeps A4
          finalize(4, 4)                                    [B4 B5]       edits_4-4     edits_4-4
                                                                          = [B4]        = [A4]  <- BUG

    Expected: jn2 downloads jn1's copy, so both finalized copies hold the
    acknowledged "/B/tx4".
    """
    cluster = local_cluster
    down = DownNodes()
    writer_a = cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(down))
    writer_a.format(FAKE_NSINFO)
    writer_a.recover_unfinalized_segments()
    write_segment(writer_a, 1, 3, True)
    down.set_down(0)
    stm = writer_a.start_log_segment(4, CURRENT_LAYOUT_VERSION)
    down.set_down(0, 1)
    with pytest.raises(QuorumException, match="Injected"):
        _write(stm, 4, "A")
    writer_a.close()

    down.set_down(2)
    writer_b = cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(down))
    writer_b.recover_unfinalized_segments()
    assert writer_b.loggers.epoch == 2
    stm = writer_b.start_log_segment(4, CURRENT_LAYOUT_VERSION)
    _write(stm, 4, "B")  # acknowledged by jn0 and jn1
    down.set_down(1, 2)
    with pytest.raises(QuorumException, match="Injected"):
        _write(stm, 5, "B")
    writer_b.close()

    down.set_down(0)
    writer_c = cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(down))
    writer_c.recover_unfinalized_segments()
    writer_c.close()

    name = finalized_edits_file_name(4, 4)
    assert _paths(cluster, 1, name) == ["/B/tx4"]
    assert not down.assertion_errors
    # The two finalized copies of segment 4 must be the same, and hold the acked txn.
    assert _paths(cluster, 2, name) == ["/B/tx4"]
    _check_identical(cluster)


@pytest.mark.timeout(30)
def test_recovery_does_not_finalize_a_copy_that_missed_the_accept(
    local_cluster: LocalJournalCluster,
) -> None:
    """A node misses acceptRecovery, then gets the finalize, and finalizes what it has.

    ::

        segment 4 (txns 1-3 finalized everywhere before)   jn0           jn1           jn2
        A (epoch 1): start 4 while jn2 is down             []            []            -
        A: txn 4 "/A/tx4" reaches jn1 only (not acked)     []            [A4]          -
        B (epoch 2) recovers without jn1: jn0's empty
          segment is moved aside, nothing to recover
        B: start 4; txn 4 "/B/tx4" ACKED by jn0, jn2       [B4]          [A4]          [B4]
        C (epoch 3) recovers with every node:
          prepare(4): jn0, jn2 [4-4] lastWriterEpoch 2,
                      jn1 [4-4] lastWriterEpoch 1  -> source jn0 (B's copy)
          acceptRecovery([4-4] from jn0): jn1's call
          fails (it never arrives)                          accepted      -             accepted
          finalize(4, 4) to every node: jn1 checks
          that its copy ends at 4, and finalizes it         edits_4-4     edits_4-4     edits_4-4
                                                            = [B4]        = [A4] <-BUG  = [B4]

    Expected: jn1, which never accepted the decided value, does not finalize
    its own copy (or downloads the decided one first).
    """
    cluster = local_cluster
    down = DownNodes()
    writer_a = cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(down))
    writer_a.format(FAKE_NSINFO)
    writer_a.recover_unfinalized_segments()
    write_segment(writer_a, 1, 3, True)
    down.set_down(2)
    stm = writer_a.start_log_segment(4, CURRENT_LAYOUT_VERSION)
    down.set_down(0, 2)
    with pytest.raises(QuorumException, match="Injected"):
        _write(stm, 4, "A")
    writer_a.close()

    down.set_down(1)
    writer_b = cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(down))
    writer_b.recover_unfinalized_segments()
    stm = writer_b.start_log_segment(4, CURRENT_LAYOUT_VERSION)
    _write(stm, 4, "B")  # acknowledged by jn0 and jn2
    writer_b.close()

    # Writer C's RPCs to each node: getJournalState, newEpoch, prepareRecovery,
    # acceptRecovery (the 4th: fails on jn1 without reaching it), finalizeLogSegment.
    counter = RpcCounter(fail_at={1: [4]})
    writer_c = cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(counter))
    writer_c.recover_unfinalized_segments()
    writer_c.close()
    assert counter.injected == 1 and not counter.assertion_errors

    name = finalized_edits_file_name(4, 4)
    assert _paths(cluster, 0, name) == _paths(cluster, 2, name) == ["/B/tx4"]
    # jn1 must not hold a finalized segment 4 other than the decided one.
    assert not (cluster.current_dir(1, JID) / name).exists() or _paths(cluster, 1, name) == [
        "/B/tx4"
    ]
    _check_identical(cluster)


@pytest.mark.timeout(30)
def test_an_accepted_record_without_md5_still_makes_a_same_length_copy_download(
    local_cluster: LocalJournalCluster,
) -> None:
    """The unknown-md5 rule: a paxos record Hadoop wrote has no md5; the node reports the
    md5 of the copy beside it, so the coordinator proposes a digest (docs/journalnode.md).

    ::

        segment 4 (txns 1-3 finalized everywhere before)   jn0           jn1           jn2
        A (epoch 1): txn 4 "/A/tx4" reaches jn1 only       []            [A4]          []
        B (epoch 2) recovers without jn1 (the empty
          copies are moved aside), starts 4 again:
          txn 4 "/B/tx4" ACKED by jn0, jn2                 [B4]          [A4]          [B4]
        C (epoch 3) recovers without jn1: jn0 and jn2
          accept [4-4] in epoch 3, then C crashes
          before any finalize                              [B4] acc 3    [A4]          [B4] acc 3
        jn0's and jn2's records become the bytes Hadoop
          writes (no md5), as if Hadoop's JNs had run C's recovery
        D (epoch 4) recovers without jn2:
          prepare(4): jn0 accepted [4-4] in epoch 3 -> source (rule 3b),
                      jn1 [4-4] lastWriterEpoch 1
          acceptRecovery([4-4] + jn0's md5): jn1's copy
          has another md5 -> downloads jn0's
          finalize(4, 4)                                    edits_4-4     edits_4-4     [B4] acc 3
                                                            = [B4]        = [B4]

    Had jn0 reported its record's unknown md5 as it is, D would propose [4-4] without a
    digest, jn1 would keep A4 (same length) and finalize it: the acked "/B/tx4" lost there.
    """
    cluster = local_cluster
    down = DownNodes()
    writer_a = cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(down))
    writer_a.format(FAKE_NSINFO)
    writer_a.recover_unfinalized_segments()
    write_segment(writer_a, 1, 3, True)
    stm = writer_a.start_log_segment(4, CURRENT_LAYOUT_VERSION)
    down.set_down(0, 2)
    with pytest.raises(QuorumException, match="Injected"):
        _write(stm, 4, "A")
    writer_a.close()

    down.set_down(1)
    writer_b = cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(down))
    writer_b.recover_unfinalized_segments()
    stm = writer_b.start_log_segment(4, CURRENT_LAYOUT_VERSION)
    _write(stm, 4, "B")  # acknowledged by jn0 and jn2
    writer_b.close()

    # Writer C: jn1 is cut off; on jn0 and jn2 the 5th call (the finalize) never arrives.
    counter = RpcCounter(fail_at={0: [5], 1: range(1, 10), 2: [5]})
    writer_c = cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(counter))
    with pytest.raises(QuorumException, match="Injected"):
        writer_c.recover_unfinalized_segments()
    assert writer_c.loggers.epoch == 3
    writer_c.close()
    assert not counter.assertion_errors
    for node in (0, 2):
        paxos = cluster.current_dir(node, JID) / "paxos" / "4"
        assert read_paxos_record(paxos).accepted_in_epoch == 3
        paxos.write_bytes(HADOOP_RECORD_4_4_IN_EPOCH_3)

    down.set_down(2)
    writer_d = cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(down))
    writer_d.recover_unfinalized_segments()
    writer_d.close()
    assert not down.assertion_errors

    name = finalized_edits_file_name(4, 4)
    assert _paths(cluster, 0, name) == ["/B/tx4"]
    assert _paths(cluster, 1, name) == ["/B/tx4"]
    _check_identical(cluster)
