"""The in-process transport: real Journals on real files, Thrift frames, no socket."""

from __future__ import annotations

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.editlog.file_journal_manager import (
    finalized_edits_file_name,
    inprogress_edits_file_name,
)
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalNotFormattedException,
    QuorumException,
)
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.testing.faults import DownNodes, wrap_with
from hadoop_qjm.testing.local_transport import LocalJournalCluster
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    recover_and_return_last_txn,
    verify_edits,
    write_segment,
    write_txns,
)

pytestmark = pytest.mark.timeout(30)


def _formatted(cluster: LocalJournalCluster):
    qjm = cluster.qjm(JID, FAKE_NSINFO)
    qjm.format(FAKE_NSINFO)
    qjm.recover_unfinalized_segments()
    return qjm


def test_a_writer_and_a_reader_over_the_local_transport(local_cluster: LocalJournalCluster) -> None:
    assert local_cluster.quorum_journal_uri(JID) == (
        "qjournal://jn0:8485;jn1:8485;jn2:8485/test-journal"
    )
    with local_cluster.qjm(JID, FAKE_NSINFO) as qjm:
        assert not qjm.has_some_data()
        qjm.format(FAKE_NSINFO)
        assert qjm.has_some_data()
        qjm.recover_unfinalized_segments()
        assert qjm.loggers.epoch == 1
        write_segment(qjm, 1, 3, True)
        write_segment(qjm, 4, 2, True)
    for i in range(3):
        names = {p.name for p in local_cluster.current_dir(i, JID).iterdir()}
        assert {finalized_edits_file_name(1, 3), finalized_edits_file_name(4, 5)} <= names
    with local_cluster.qjm(JID, FAKE_NSINFO) as reader:
        streams = reader.select_input_streams(1)
        verify_edits(streams, 1, 5)
    assert isinstance(local_cluster.journal(0), Journal)
    assert local_cluster.journal(0).get_last_promised_epoch() == 1


def test_journal_exceptions_arrive_typed_through_thrift(local_cluster: LocalJournalCluster) -> None:
    proxy = local_cluster.make_proxy("jn1", 8485)
    with pytest.raises(JournalNotFormattedException, match="not formatted"):
        proxy.get_journal_state(JID)
    with pytest.raises(IOException, match="Unknown JournalNode host"):
        local_cluster.make_proxy("jn9", 8485)


def test_every_call_is_a_thrift_frame(
    local_cluster: LocalJournalCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = local_cluster.nodes[2]
    payloads: list[bytes] = []
    real = node.handle

    def recording(payload: bytes) -> bytes:
        payloads.append(payload)
        reply = real(payload)
        assert isinstance(reply, bytes)
        return reply

    monkeypatch.setattr(node, "handle", recording)
    with _formatted(local_cluster) as qjm:
        write_segment(qjm, 1, 1, True)
    names = [
        name
        for name in ("format", "getJournalState", "newEpoch", "startLogSegment", "journal")
        if any(name.encode() in p for p in payloads)
    ]
    assert names == ["format", "getJournalState", "newEpoch", "startLogSegment", "journal"]


def test_crash_and_restart_reads_the_journal_back_from_disk(
    local_cluster: LocalJournalCluster,
) -> None:
    qjm = _formatted(local_cluster)
    write_segment(qjm, 1, 3, True)
    stm = qjm.start_log_segment(4, CURRENT_LAYOUT_VERSION)
    write_txns(stm, 4, 2)
    before = local_cluster.journal(1)
    local_cluster.crash_and_restart(1)
    after = local_cluster.journal(1)
    assert after is not before and not after.is_segment_open
    assert after.get_last_promised_epoch() == 1
    assert local_cluster.nodes[1].restarts == 1
    # The node lost its open segment: the next batch fails there, the quorum holds.
    write_txns(stm, 6, 1)
    assert qjm.loggers.loggers[1].is_out_of_sync
    qjm.close()
    with local_cluster.qjm(JID, FAKE_NSINFO) as next_writer:
        assert recover_and_return_last_txn(next_writer) == 6


def test_crash_and_restart_loses_the_committed_txid_a_journal_held_back(
    local_cluster: LocalJournalCluster,
) -> None:
    """A crash loses what the best-effort committed-txid file had not been given yet
    (a close would write it): the restarted node starts from the file's lower value,
    and the writer's next call moves it on."""
    qjm = _formatted(local_cluster)
    stm = qjm.start_log_segment(1, CURRENT_LAYOUT_VERSION)
    journal = local_cluster.journal(1)
    journal.committed_txn_id.lazy_interval_s = 3600.0  # hold every later value back
    write_txns(stm, 1, 3)
    write_txns(stm, 4, 3)
    write_txns(stm, 7, 3)  # carries committed txid 6
    on_file = int.from_bytes(
        (journal.storage.current_dir / "committed-txid").read_bytes(), "big", signed=True
    )
    assert journal.committed_txn_id.get() == 6
    assert on_file < 6
    local_cluster.crash_and_restart(1)
    assert local_cluster.journal(1).committed_txn_id.get() == on_file
    qjm.finalize_log_segment(1, 9)  # the other two finalize; node 1 lost its open segment
    stm = qjm.start_log_segment(10, CURRENT_LAYOUT_VERSION)  # carries committed txid 9
    assert local_cluster.journal(1).committed_txn_id.get() == 9
    write_txns(stm, 10, 1)
    qjm.close()
    with local_cluster.qjm(JID, FAKE_NSINFO) as next_writer:
        assert recover_and_return_last_txn(next_writer) == 10


def test_accept_recovery_downloads_the_segment_from_the_source_node(
    local_cluster: LocalJournalCluster,
) -> None:
    """jn2 missed segment 4 entirely; recovery copies jn0's bytes to it (fetcher)."""
    down = DownNodes()
    qjm = local_cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(down))
    qjm.format(FAKE_NSINFO)
    qjm.recover_unfinalized_segments()
    write_segment(qjm, 1, 3, True)
    down.set_down(2)
    stm = qjm.start_log_segment(4, CURRENT_LAYOUT_VERSION)
    write_txns(stm, 4, 3)
    qjm.close()
    assert not (local_cluster.current_dir(2, JID) / inprogress_edits_file_name(4)).exists()
    with local_cluster.qjm(JID, FAKE_NSINFO) as next_writer:
        assert recover_and_return_last_txn(next_writer) == 6
    name = finalized_edits_file_name(4, 6)
    copies = {(local_cluster.current_dir(i, JID) / name).read_bytes() for i in range(3)}
    assert len(copies) == 1


def test_the_readers_http_side(local_cluster: LocalJournalCluster) -> None:
    with _formatted(local_cluster) as qjm:
        write_segment(qjm, 1, 2, True)
        url = qjm.loggers.loggers[0].build_url_to_fetch_logs(1)
    assert url.startswith("http://jn0:8480/getJournal?jid=test-journal&segmentTxId=1&")
    with local_cluster.open_url(url) as response:
        data = response.read()
    assert response.status == 200
    assert int(response.headers["Content-Length"]) == len(data)
    assert (
        data == (local_cluster.current_dir(0, JID) / finalized_edits_file_name(1, 2)).read_bytes()
    )
    with pytest.raises(IOException, match="404"):
        local_cluster.open_url(url.replace("segmentTxId=1", "segmentTxId=7"))
    with pytest.raises(IOException, match="Unknown JournalNode host"):
        local_cluster.open_url(url.replace("jn0", "elsewhere"))


def test_a_majority_down_fails_the_writer_with_injected_errors(
    local_cluster: LocalJournalCluster,
) -> None:
    down = DownNodes()
    with local_cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(down)) as qjm:
        qjm.format(FAKE_NSINFO)
        qjm.recover_unfinalized_segments()
        down.set_down(0, 2)
        with pytest.raises(QuorumException, match="Injected - jn0 is down"):
            qjm.start_log_segment(1, CURRENT_LAYOUT_VERSION)
    assert not down.unexpected_errors
