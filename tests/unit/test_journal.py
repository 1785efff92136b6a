"""Hadoop's TestJournal, ported: one Journal on real files in a temp dir (digest §8)."""

from __future__ import annotations

import os

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, INVALID_TXID
from hadoop_qjm.common.exceptions import (
    IllegalArgumentException,
    IllegalStateException,
    IOException,
)
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.fs_edit_log_op import edit_log_header
from hadoop_qjm.qjournal.protocol.exceptions import (
    CacheMissException,
    JournalNotFormattedException,
    JournalOutOfSyncException,
    NewerTxnIdException,
)
from hadoop_qjm.qjournal.protocol.messages import SegmentState
from hadoop_qjm.qjournal.server.journal import Journal, JournalFaultInjector
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    create_gabage_txns,
    create_txn_data,
    make_request,
    snapshot_files,
)

LV = CURRENT_LAYOUT_VERSION


@pytest.fixture
def conf():
    c = Configuration()
    c.set("dfs.ha.tail-edits.in-progress", "true")
    c.set("dfs.journalnode.edit-cache-size.bytes", str(1024 * 1024))
    return c


@pytest.fixture
def journal_dir(tmp_path):
    return tmp_path / JID


@pytest.fixture
def journal(conf, journal_dir):
    j = Journal(conf, journal_dir, JID)
    j.format(FAKE_NSINFO)
    yield j
    j.close()


def restart(journal: Journal, conf) -> Journal:
    journal.close()
    return Journal(conf, journal.storage.log_dir, JID)


def test_scan_edit_log_future_layout_version(journal, conf):
    """testScanEditLog: a newer LV with garbage bodies still scans by frames to 1..5."""
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV - 1)
    journal.journal(make_request(2), 1, 1, 5, create_gabage_txns(1, 5))
    info = journal.prepare_recovery(make_request(3), 1)
    assert info.segment_state == SegmentState(1, 5, True)
    journal.finalize_log_segment(make_request(4), 1, 5)
    info = journal.prepare_recovery(make_request(5), 1)
    assert info.segment_state == SegmentState(1, 5, False)


def finalized_1_2_then_open_from_3(journal: Journal, open_txns: int) -> None:
    """Writer 1: segment 1-2 finalized, then segment 3 open holding ``open_txns`` txns."""
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
    journal.finalize_log_segment(make_request(3), 1, 2)
    journal.start_log_segment(make_request(4), 3, LV)
    journal.journal(make_request(5), 3, 3, open_txns, create_txn_data(3, open_txns))


def test_empty_edits_in_progress_moved_aside(journal, conf):
    finalized_1_2_then_open_from_3(journal, 1)
    path = journal.storage.in_progress_edit_log(3)
    journal.close()
    size = path.stat().st_size
    path.write_bytes(b"\xff" * size)
    journal = Journal(conf, journal.storage.log_dir, JID)
    try:
        assert not path.exists()
        assert path.with_name(path.name + ".empty").exists()
        assert journal.highest_written_txid == 2
    finally:
        journal.close()


def test_epoch_handling(journal):
    assert journal.get_last_promised_epoch() == 0
    journal.new_epoch(FAKE_NSINFO, 1)
    assert journal.get_last_promised_epoch() == 1
    journal.new_epoch(FAKE_NSINFO, 3)
    assert journal.get_last_promised_epoch() == 3
    with pytest.raises(IOException, match="Proposed epoch 3 <= last promise 3"):
        journal.new_epoch(FAKE_NSINFO, 3)
    with pytest.raises(IOException, match="epoch 1 is less than the last promised epoch 3"):
        journal.start_log_segment(make_request(1), 1, LV)
    with pytest.raises(IOException, match="epoch 1 is less than the last promised epoch 3"):
        journal.journal(make_request(1), 12345, 100, 0, b"")


def test_maintain_committed_txid(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
    assert journal.get_committed_txid() == 0
    journal.journal(make_request(3, committed_txid=3), 1, 4, 3, create_txn_data(4, 3))
    assert journal.get_committed_txid() == 3


def test_an_unchanged_committed_txid_is_not_rewritten(journal, conf, monkeypatch):
    """Every call carries the committed txid; the file is written only when it moves
    (here on every move, as Hadoop does: no write is held back)."""
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.committed_txn_id.lazy_interval_s = 0.0
    committed_fd = journal.committed_txn_id._lazy_open()
    writes: list[bytes] = []
    real_pwrite = os.pwrite

    def counting_pwrite(fd: int, data, offset: int) -> int:
        if fd == committed_fd:
            writes.append(bytes(data))
        return real_pwrite(fd, data, offset)

    monkeypatch.setattr(os, "pwrite", counting_pwrite)
    journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
    journal.heartbeat(make_request(3))
    assert writes == []
    journal.journal(make_request(4, committed_txid=3), 1, 4, 3, create_txn_data(4, 3))
    journal.heartbeat(make_request(5, committed_txid=3))
    assert writes == [(3).to_bytes(8, "big")]
    again = restart(journal, conf)
    assert again.get_committed_txid() == 3
    again.close()


def _committed_file(journal: Journal) -> int:
    data = (journal.storage.current_dir / "committed-txid").read_bytes()
    return int.from_bytes(data, "big", signed=True)


def test_the_committed_txid_file_catches_up_at_finalize_and_close(journal, conf):
    """Within COMMITTED_TXID_WRITE_INTERVAL_S of a write the file may lag the committed
    txid the journal holds (a lower bound is all it promises); finalizing the segment
    and closing the journal write the newest value."""
    journal.committed_txn_id.lazy_interval_s = 3600.0  # no write falls due by time here
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)  # committed txid 0: written at once
    assert _committed_file(journal) == 0
    journal.journal(make_request(2, committed_txid=0), 1, 1, 3, create_txn_data(1, 3))
    journal.journal(make_request(3, committed_txid=3), 1, 4, 3, create_txn_data(4, 3))
    assert journal.get_committed_txid() == 3
    assert _committed_file(journal) == 0  # held back
    journal.finalize_log_segment(make_request(4, committed_txid=6), 1, 6)
    assert _committed_file(journal) == 6
    journal.start_log_segment(make_request(5, committed_txid=6), 7, LV)
    journal.journal(make_request(6, committed_txid=6), 7, 7, 2, create_txn_data(7, 2))
    journal.heartbeat(make_request(7, committed_txid=8))
    assert _committed_file(journal) == 6
    again = restart(journal, conf)  # close() writes what was held back
    assert again.get_committed_txid() == 8
    again.close()


def test_discarding_segments_writes_the_lower_committed_txid_at_once(journal):
    """The one decrease (a rollback's discardSegments) is never held back: a file left
    above the truth would make the writer's next calls look like they go backwards."""
    journal.committed_txn_id.lazy_interval_s = 3600.0
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2, committed_txid=0), 1, 1, 3, create_txn_data(1, 3))
    journal.finalize_log_segment(make_request(3, committed_txid=3), 1, 3)
    journal.start_log_segment(make_request(4, committed_txid=3), 4, LV)
    journal.journal(make_request(5, committed_txid=3), 4, 4, 3, create_txn_data(4, 3))
    journal.finalize_log_segment(make_request(6, committed_txid=6), 4, 6)
    assert _committed_file(journal) == 6
    journal.discard_segments(4)
    assert journal.get_committed_txid() == 3
    assert _committed_file(journal) == 3


def test_restart_journal(journal, conf):
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
    journal.journal(make_request(3), 1, 3, 1, create_txn_data(3, 1))
    before = journal.storage.storage_info
    journal = restart(journal, conf)
    try:
        assert journal.storage.storage_info == before
        assert journal.get_last_promised_epoch() == 1
        assert journal.highest_written_txid == 3
        assert journal.new_epoch(FAKE_NSINFO, 2).last_segment_txid == 1
    finally:
        journal.close()


def test_format_resets_cached_values(conf, journal_dir):
    now = [1000.0]
    journal = Journal(conf, journal_dir, JID, clock=lambda: now[0])
    journal.format(FAKE_NSINFO)
    journal.new_epoch(FAKE_NSINFO, 12345)
    journal.start_log_segment(make_request(1, epoch=12345), 1, LV)
    assert journal.get_last_promised_epoch() == 12345
    assert journal.get_last_writer_epoch() == 12345
    assert journal.is_formatted()
    now[0] += 61  # past dfs.journalnode.format.live-writer.window.ms: no live writer
    journal.format(NamespaceInfo(6789, "mycluster", "my-bp"), force=True)
    assert journal.get_last_promised_epoch() == 0
    assert journal.get_last_writer_epoch() == 0
    assert journal.storage.storage_info.namespace_id == 6789
    journal.close()


def test_new_epoch_at_beginning_of_segment(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
    journal.finalize_log_segment(make_request(3), 1, 2)
    journal.start_log_segment(make_request(4), 3, LV)
    assert journal.new_epoch(FAKE_NSINFO, 2).last_segment_txid == 1


def test_journal_locking(journal, conf):
    assert (journal.storage.log_dir / "in_use.lock").exists()
    with pytest.raises(IOException, match="Cannot lock storage"):
        Journal(conf, journal.storage.log_dir, JID)
    journal.close()
    again = Journal(conf, journal.storage.log_dir, JID)
    again.close()


def test_finalize_when_edits_are_missed(journal, conf):
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
    with pytest.raises(JournalOutOfSyncException, match="but only written up to txid 3"):
        journal.finalize_log_segment(make_request(3), 1, 6)
    journal = restart(journal, conf)
    try:
        with pytest.raises(JournalOutOfSyncException, match="disk only contains up to txid 3"):
            journal.finalize_log_segment(make_request(4), 1, 6)
    finally:
        journal.close()


def test_finalize_missing_segment(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    with pytest.raises(
        JournalOutOfSyncException, match="No log file to finalize at transaction ID 1000"
    ):
        journal.finalize_log_segment(make_request(1), 1000, 1001)


def test_abort_old_segment_if_finalize_is_missed(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
    journal.start_log_segment(make_request(3), 4, LV)
    journal.journal(make_request(4), 4, 4, 1, create_txn_data(4, 1))
    # The writer skipped finalize(1, 3): both segments remain in progress.
    assert journal.storage.in_progress_edit_log(1).exists()
    assert journal.storage.in_progress_edit_log(4).exists()


def test_start_log_segment_when_already_exists(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 1, create_txn_data(1, 1))
    # Only the START_LOG_SEGMENT-like first txn: restarting the segment is allowed.
    journal.start_log_segment(make_request(3), 1, LV)
    journal.journal(make_request(4), 1, 1, 4, create_txn_data(1, 4))
    with pytest.raises(IllegalStateException, match="seems to contain valid transactions"):
        journal.start_log_segment(make_request(5), 1, LV)
    journal.finalize_log_segment(make_request(6), 1, 4)
    with pytest.raises(IllegalStateException, match="have a finalized segment"):
        journal.start_log_segment(make_request(7), 1, LV)


def test_namespace_verification(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    with pytest.raises(IOException, match="Incompatible namespaceID"):
        journal.new_epoch(NamespaceInfo(1, "mycluster", "my-bp"), 2)
    with pytest.raises(IOException, match="Incompatible clusterID"):
        journal.new_epoch(NamespaceInfo(12345, "other", "my-bp"), 2)


def test_format_non_empty_storage_directories(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    with pytest.raises(IOException, match="current directory is not empty"):
        journal.format(FAKE_NSINFO)
    journal.format(FAKE_NSINFO, force=True)
    assert journal.get_last_promised_epoch() == 0


def test_unformatted_journal_rejects_every_call(conf, journal_dir):
    journal = Journal(conf, journal_dir, JID)
    try:
        assert not journal.is_formatted()
        calls = [
            lambda: journal.get_last_promised_epoch(),
            lambda: journal.new_epoch(FAKE_NSINFO, 1),
            lambda: journal.heartbeat(make_request(1)),
            lambda: journal.start_log_segment(make_request(1), 1, LV),
            lambda: journal.journal(make_request(1), 1, 1, 1, create_txn_data(1, 1)),
            lambda: journal.finalize_log_segment(make_request(1), 1, 1),
            lambda: journal.purge_logs_older_than(make_request(1), 1),
            lambda: journal.get_edit_log_manifest(1, True),
            lambda: journal.prepare_recovery(make_request(1), 1),
            lambda: journal.accept_recovery(make_request(1), SegmentState(1, 1, True), "x"),
            lambda: journal.discard_segments(1),
            lambda: journal.get_journal_ctime(),
        ]
        for call in calls:
            with pytest.raises(JournalNotFormattedException, match="not formatted"):
                call()
        assert not journal_dir.exists() or not (journal_dir / "current").exists()
    finally:
        journal.close()


def test_read_from_cache(journal):
    """testReadFromCache: ops from the cache are byte-exact, with the file header first."""
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 5, create_txn_data(1, 5))
    journal.journal(make_request(3), 1, 6, 5, create_txn_data(6, 5))
    journal.journal(make_request(4), 1, 11, 5, create_txn_data(11, 5))
    resp = journal.get_journaled_edits(1, 7)
    assert resp.txn_count == 7
    assert resp.edit_log == edit_log_header(LV) + create_txn_data(1, 7)
    resp = journal.get_journaled_edits(1, 30)
    assert resp.txn_count == 15
    assert resp.edit_log == edit_log_header(LV) + create_txn_data(1, 15)
    journal.finalize_log_segment(make_request(5), 1, 15)
    journal.start_log_segment(make_request(6), 16, LV - 1)
    journal.journal(make_request(7), 16, 16, 5, create_txn_data(16, 5))
    resp = journal.get_journaled_edits(16, 10)
    assert resp.txn_count == 5
    assert resp.edit_log == edit_log_header(LV - 1) + create_txn_data(16, 5)
    # After a layout-version change the old range is gone from the cache.
    with pytest.raises(CacheMissException):
        journal.get_journaled_edits(3, 2)


def test_journaled_edits_past_the_end(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 10, create_txn_data(1, 10))
    assert journal.get_journaled_edits(11, 5).txn_count == 0
    with pytest.raises(NewerTxnIdException, match="Highest txn ID available in the journal is 10"):
        journal.get_journaled_edits(12, 5)


def test_finalized_segment_has_no_padding(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    data = create_txn_data(1, 3)
    journal.journal(make_request(2), 1, 1, 3, data)
    assert journal.storage.in_progress_edit_log(1).stat().st_size % (1024 * 1024) == 0
    journal.finalize_log_segment(make_request(3), 1, 3)
    assert journal.storage.finalized_edit_log(1, 3).read_bytes() == edit_log_header(LV) + data


def test_get_edit_log_manifest(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
    journal.finalize_log_segment(make_request(3), 1, 3)
    journal.start_log_segment(make_request(4), 4, LV)
    journal.journal(make_request(5, committed_txid=3), 4, 4, 2, create_txn_data(4, 2))
    manifest = journal.get_edit_log_manifest(1, in_progress_ok=False)
    assert [(log.start_txid, log.end_txid) for log in manifest.logs] == [(1, 3)]
    assert manifest.committed_txn_id == 3
    manifest = journal.get_edit_log_manifest(1, in_progress_ok=True)
    assert [(log.start_txid, log.end_txid, log.is_in_progress) for log in manifest.logs] == [
        (1, 3, False),
        (4, 5, True),
    ]


def test_purge_logs(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    serial = 1
    for txid in range(1, 6):
        journal.start_log_segment(make_request(serial), txid, LV)
        journal.journal(make_request(serial + 1), txid, txid, 1, create_txn_data(txid, 1))
        journal.finalize_log_segment(make_request(serial + 2), txid, txid)
        serial += 3
    current = journal.storage.current_dir
    (journal.storage.paxos_dir / "1").write_text("x")
    (journal.storage.paxos_dir / "3").write_text("x")
    (current / "edits_inprogress_0000000000000000001.epoch=140").write_bytes(b"x")
    (current / "edits_inprogress_0000000000000000002.empty").write_bytes(b"x")
    journal.purge_logs_older_than(make_request(serial), 3)
    edits = sorted(n for n in os.listdir(current) if n.startswith("edits"))
    # Each finalized segment with the md5 finalize kept beside it (segment_md5): purged too.
    assert edits == [
        f"edits_000000000000000000{t}-000000000000000000{t}{suffix}"
        for t in (3, 4, 5)
        for suffix in ("", ".md5")
    ]
    assert os.listdir(journal.storage.paxos_dir) == ["3"]


class _CrashBeforePaxos(JournalFaultInjector):
    def before_persist_paxos_data(self):
        raise IOException("Injected crash before persisting paxos data")


class _CrashAfterPaxos(JournalFaultInjector):
    def after_persist_paxos_data(self):
        raise IOException("Injected crash after persisting paxos data")


def _source_segment(tmp_path, conf, start, count):
    """A finalized copy of [start, start+count-1] to download from (a file:// URL)."""
    src = tmp_path / "source"
    src.write_bytes(edit_log_header(LV) + create_txn_data(start, count))
    return src


def _copy_fetcher(url, target, _timeout):
    path = url.removeprefix("file://")
    with open(path, "rb") as f:
        data = f.read()
    with open(target, "wb") as out:
        out.write(data)
        out.flush()
        os.fsync(out.fileno())
    return len(data)


@pytest.mark.parametrize("injector", [_CrashBeforePaxos, _CrashAfterPaxos])
def test_accept_recovery_crash_around_commit_point(tmp_path, conf, injector):
    """A crash before the paxos record leaves the old log; after it, prepare rolls forward."""
    log_dir = tmp_path / JID
    journal = Journal(conf, log_dir, JID, fault_injector=injector(), fetcher=_copy_fetcher)
    journal.format(FAKE_NSINFO)
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
    src = _source_segment(tmp_path, conf, 1, 4)
    journal.new_epoch(FAKE_NSINFO, 2)
    with pytest.raises(IOException, match="Injected"):
        journal.accept_recovery(
            make_request(1, epoch=2), SegmentState(1, 4, False), f"file://{src}"
        )
    journal.close()
    journal = Journal(conf, log_dir, JID)
    try:
        resp = journal.prepare_recovery(make_request(1, epoch=3), 1)
        if injector is _CrashBeforePaxos:
            assert resp.accepted_in_epoch is None
            assert resp.segment_state == SegmentState(1, 2, True)
        else:
            assert resp.accepted_in_epoch == 2
            assert resp.segment_state == SegmentState(1, 4, False)
            assert journal.storage.in_progress_edit_log(1).read_bytes() == src.read_bytes()
    finally:
        journal.close()


def test_accept_recovery_then_finalize_is_byte_exact(tmp_path, conf):
    log_dir = tmp_path / JID
    journal = Journal(conf, log_dir, JID, fetcher=_copy_fetcher)
    try:
        journal.format(FAKE_NSINFO)
        journal.new_epoch(FAKE_NSINFO, 1)
        src = tmp_path / "padded"
        src.write_bytes(edit_log_header(LV) + create_txn_data(1, 4) + b"\xff" * 4096)
        journal.accept_recovery(make_request(1), SegmentState(1, 4, True), f"file://{src}")
        assert journal.highest_written_txid == 4
        journal.finalize_log_segment(make_request(2), 1, 4)
        assert journal.storage.finalized_edit_log(1, 4).read_bytes() == edit_log_header(
            LV
        ) + create_txn_data(1, 4)
        assert os.listdir(journal.storage.paxos_dir) == []
    finally:
        journal.close()


def test_accept_recovery_refuses_to_discard_committed(journal, tmp_path):
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 5, create_txn_data(1, 5))
    journal.journal(make_request(3, committed_txid=5), 1, 6, 1, create_txn_data(6, 1))
    with pytest.raises(AssertionError, match="would discard already-committed txn 5"):
        journal.accept_recovery(
            make_request(4, committed_txid=5), SegmentState(1, 3, True), "file:///dev/null"
        )


@pytest.mark.parametrize(
    "bad_call",
    [
        "stale_epoch",
        "repeated_serial",
        "committed_backwards",
        "txid_gap",
        "no_segment",
        "finalize_wrong_end",
        "namespace_mismatch",
    ],
)
def test_rejected_calls_change_no_file(journal, bad_call):
    journal.new_epoch(FAKE_NSINFO, 2)
    journal.start_log_segment(make_request(1, epoch=2, committed_txid=0), 1, LV)
    journal.journal(make_request(2, epoch=2, committed_txid=0), 1, 1, 3, create_txn_data(1, 3))
    journal.journal(make_request(3, epoch=2, committed_txid=3), 1, 4, 1, create_txn_data(4, 1))
    before = snapshot_files(journal.storage.log_dir)
    calls = {
        "stale_epoch": lambda: journal.journal(
            make_request(10, epoch=1, committed_txid=3), 1, 5, 1, create_txn_data(5, 1)
        ),
        "repeated_serial": lambda: journal.journal(
            make_request(3, epoch=2, committed_txid=3), 1, 5, 1, create_txn_data(5, 1)
        ),
        "committed_backwards": lambda: journal.heartbeat(
            make_request(10, epoch=2, committed_txid=1)
        ),
        "txid_gap": lambda: journal.journal(
            make_request(10, epoch=2, committed_txid=3), 1, 7, 1, create_txn_data(7, 1)
        ),
        "no_segment": lambda: (
            journal.finalize_log_segment(make_request(10, epoch=2, committed_txid=3), 1, 4),
            journal.journal(
                make_request(11, epoch=2, committed_txid=3), 1, 5, 1, create_txn_data(5, 1)
            ),
        ),
        "finalize_wrong_end": lambda: journal.finalize_log_segment(
            make_request(10, epoch=2, committed_txid=3), 1, 9
        ),
        "namespace_mismatch": lambda: journal.new_epoch(NamespaceInfo(999, "mycluster", "bp"), 5),
    }
    if bad_call == "no_segment":
        journal.finalize_log_segment(make_request(10, epoch=2, committed_txid=3), 1, 4)
        before = snapshot_files(journal.storage.log_dir)
        with pytest.raises(JournalOutOfSyncException, match="no segment open"):
            journal.journal(
                make_request(11, epoch=2, committed_txid=3), 1, 5, 1, create_txn_data(5, 1)
            )
    else:
        with pytest.raises((IOException, ValueError)):
            calls[bad_call]()
    assert snapshot_files(journal.storage.log_dir) == before


def test_storage_failure_stops_the_journal(journal, monkeypatch):
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 1, create_txn_data(1, 1))

    def failing_fdatasync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", failing_fdatasync)
    with pytest.raises(IOException, match="Input/output error"):
        journal.journal(make_request(3), 1, 2, 1, create_txn_data(2, 1))
    monkeypatch.undo()
    with pytest.raises(IOException, match="stopped accepting writes"):
        journal.journal(make_request(4), 1, 2, 1, create_txn_data(2, 1))
    with pytest.raises(IOException, match="stopped accepting writes"):
        journal.start_log_segment(make_request(5), 2, LV)
    assert journal.highest_written_txid == 1


def _aborted_segment(journal) -> None:
    """Segment 1 holds txns 1-3 and is left in progress: writer 2 took over (new_epoch
    aborts the open segment), so finalizing it validates the file on disk."""
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
    journal.new_epoch(FAKE_NSINFO, 2)


def test_a_failed_fsync_while_finalizing_stops_the_journal(journal, monkeypatch):
    _aborted_segment(journal)

    def failing_fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(IllegalStateException, match="Input/output error"):
        journal.finalize_log_segment(make_request(1, epoch=2), 1, 3)
    monkeypatch.undo()
    assert journal.storage.in_progress_edit_log(1).exists()
    assert not journal.storage.finalized_edit_log(1, 3).exists()
    with pytest.raises(IOException, match="stopped accepting writes"):
        journal.start_log_segment(make_request(2, epoch=2), 4, LV)


def test_finalizing_a_segment_already_cut_to_length_still_fsyncs_it(journal, monkeypatch):
    """A retried finalize (or a lagging node's unsynced segment that happens to end on its
    preallocation boundary) finds nothing to cut; the file is fsynced all the same before
    the finalized name appears."""
    _aborted_segment(journal)
    path = journal.storage.in_progress_edit_log(1)
    log = journal.fjm.get_log_file(1)
    log.scan_log()
    os.truncate(path, log.valid_length)  # what the first, failed attempt had done
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", recording_fsync)
    journal.finalize_log_segment(make_request(1, epoch=2), 1, 3)
    assert str(path) in synced
    assert journal.storage.finalized_edit_log(1, 3).stat().st_size == log.valid_length


def test_start_log_segment_refuses_a_file_whose_header_hides_its_txns(journal):
    """Hadoop refuses any in-progress file that does not hold just its first txn; we also
    take one with no txn (§2.10.5), but not one whose whole header names a layout too old
    to scan: txns may follow it."""
    _aborted_segment(journal)
    path = journal.storage.in_progress_edit_log(1)
    with open(path, "r+b") as f:
        f.write((-16).to_bytes(4, "big", signed=True))
    before = path.read_bytes()
    with pytest.raises(IllegalStateException, match="seems to contain valid transactions"):
        journal.start_log_segment(make_request(1, epoch=2), 1, LV)
    assert path.read_bytes() == before


@pytest.mark.parametrize("content", [b"", b"\xff" * 1024], ids=["empty", "preallocated: layout -1"])
def test_start_log_segment_takes_over_a_file_whose_header_never_landed(journal, content):
    """The node died creating segment 1 (the header cut short, or still the
    preallocation's -1): no txn can be in it, so the writer's retry takes it over."""
    journal.new_epoch(FAKE_NSINFO, 1)
    path = journal.storage.in_progress_edit_log(1)
    path.write_bytes(content)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
    journal.finalize_log_segment(make_request(3), 1, 2)
    assert journal.storage.finalized_edit_log(1, 2).read_bytes() == edit_log_header(
        LV
    ) + create_txn_data(1, 2)


def test_discard_segments(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    for i, start in enumerate((1, 4, 7)):
        journal.start_log_segment(make_request(10 * i + 1), start, LV)
        journal.journal(make_request(10 * i + 2), start, start, 3, create_txn_data(start, 3))
        journal.finalize_log_segment(make_request(10 * i + 3), start, start + 2)
    journal.discard_segments(4)
    names = sorted(os.listdir(journal.storage.current_dir))
    assert "edits_0000000000000000004-0000000000000000006.trash" in names
    assert "edits_0000000000000000007-0000000000000000009.trash" in names
    assert "edits_0000000000000000001-0000000000000000003" in names
    # The kept md5s of the discarded segments go with them (new txns may take their names).
    assert [n for n in names if n.endswith(".md5")] == [
        "edits_0000000000000000001-0000000000000000003.md5"
    ]
    assert journal.get_committed_txid() == 3
    assert INVALID_TXID != journal.get_committed_txid()


def test_accept_recovery_compares_content_not_just_length(tmp_path, conf):
    """Two copies of one length from different writers: the accepted one wins (paper §2.8)."""
    import hashlib

    log_dir = tmp_path / JID
    journal = Journal(conf, log_dir, JID, fetcher=_copy_fetcher)
    try:
        journal.format(FAKE_NSINFO)
        journal.new_epoch(FAKE_NSINFO, 1)
        journal.start_log_segment(make_request(1), 1, LV)
        mine = create_txn_data(1, 3)
        journal.journal(make_request(2), 1, 1, 3, mine)
        theirs = create_gabage_txns(1, 3)  # same txids, other bytes (another writer's copy)
        src = tmp_path / "theirs"
        src.write_bytes(edit_log_header(LV) + theirs)
        digest = hashlib.md5(src.read_bytes()).hexdigest()
        journal.new_epoch(FAKE_NSINFO, 2)
        # A download whose bytes do not match the announced digest is refused, nothing changes.
        with pytest.raises(IOException, match="md5"):
            journal.accept_recovery(
                make_request(1, epoch=2), SegmentState(1, 3, True, "0" * 32), f"file://{src}"
            )
        assert journal.prepare_recovery(make_request(2, epoch=2), 1).accepted_in_epoch is None
        journal.accept_recovery(
            make_request(3, epoch=2), SegmentState(1, 3, True, digest), f"file://{src}"
        )
        journal.finalize_log_segment(make_request(4, epoch=2), 1, 3)
        assert journal.storage.finalized_edit_log(1, 3).read_bytes() == edit_log_header(LV) + theirs
    finally:
        journal.close()


def test_the_edit_cache_never_serves_a_copy_that_recovery_replaced(tmp_path, conf):
    """Writer 1's txns 1-3 reached this node only; writer 2 recovered the segment with its
    own copy of 1-3 (same txids, other bytes), finalized it, and went on at txid 4, which
    follows on from the cached 3. A reader asking from txid 1 must never get writer 1's
    bytes (Hadoop's cache serves them): it misses, and reads the finalized file instead."""
    import hashlib

    journal = Journal(conf, tmp_path / JID, JID, fetcher=_copy_fetcher)
    try:
        journal.format(FAKE_NSINFO)
        journal.new_epoch(FAKE_NSINFO, 1)
        journal.start_log_segment(make_request(1), 1, LV)
        journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
        theirs = create_gabage_txns(1, 3)
        src = tmp_path / "theirs"
        src.write_bytes(edit_log_header(LV) + theirs)
        digest = hashlib.md5(src.read_bytes()).hexdigest()
        journal.new_epoch(FAKE_NSINFO, 2)
        journal.accept_recovery(
            make_request(1, epoch=2), SegmentState(1, 3, True, digest), f"file://{src}"
        )
        journal.finalize_log_segment(make_request(2, epoch=2), 1, 3)
        journal.start_log_segment(make_request(3, epoch=2), 4, LV)
        journal.journal(make_request(4, epoch=2), 4, 4, 1, create_txn_data(4, 1))
        with pytest.raises(CacheMissException):
            journal.get_journaled_edits(1, 10)
        served = journal.get_journaled_edits(4, 10)
        assert served.txn_count == 1
        assert served.edit_log == edit_log_header(LV) + create_txn_data(4, 1)
    finally:
        journal.close()


def test_a_newer_promise_hides_the_superseded_writers_open_segment(journal):
    """Writer 1's open segment 1-3, then writer 2's heartbeat (epoch 2, committed txid 3
    of *its* history): neither the cache nor the manifest may offer writer 1's unsettled
    tail as durable; a finalized segment is still listed."""
    finalized_1_2_then_open_from_3(journal, 3)
    manifest = journal.get_edit_log_manifest(1, in_progress_ok=True)
    assert [(log.start_txid, log.end_txid) for log in manifest.logs] == [(1, 2), (3, 5)]
    served = journal.get_journaled_edits(3, 10)
    assert (served.txn_count, served.writer_epoch) == (3, 1)

    journal.heartbeat(make_request(1, epoch=2, committed_txid=5))
    manifest = journal.get_edit_log_manifest(1, in_progress_ok=True)
    assert [(log.start_txid, log.end_txid) for log in manifest.logs] == [(1, 2)]
    with pytest.raises(CacheMissException):
        journal.get_journaled_edits(3, 10)
    # "Nothing past txid 5" now speaks for writer 2: the client sets writer 1's answers aside.
    assert journal.get_journaled_edits(6, 10).writer_epoch == 2


def test_a_negative_number_of_transactions_changes_nothing(journal):
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    before = snapshot_files(journal.storage.log_dir)
    with pytest.raises(IllegalArgumentException, match="Negative number of transactions -1"):
        journal.journal(make_request(2, committed_txid=5), 1, 1, -1, create_txn_data(1, 1))
    assert snapshot_files(journal.storage.log_dir) == before
    assert journal.current_epoch_ipc_serial == 1  # the serial was not taken
    journal.journal(make_request(2), 1, 1, 1, create_txn_data(1, 1))
