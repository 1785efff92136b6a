"""Journal.journal_in_order is journal()'s common case, not a second set of rules.

Two journals on disk get the same calls: one through the JournalNode's path
(``journal_in_order``, and ``journal()`` when it declines), one through ``journal()``
alone. After every call both must have answered the same (the same exception class and
message, or none) and hold the same state and the same bytes on disk; and a call
``journal_in_order`` declined must have changed nothing.
"""

from __future__ import annotations

import tempfile
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, INVALID_TXID
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.protocol.messages import RequestInfo
from hadoop_qjm.qjournal.protocol.rules import request_numbers
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    create_txn_data,
    make_request,
    snapshot_files,
)


def _state(journal: Journal) -> tuple[Any, ...]:
    return (
        journal.last_promised_epoch.get(),
        journal.last_writer_epoch.get(),
        journal.current_epoch_ipc_serial,
        journal.committed_txn_id.get(),
        journal.is_segment_open,
        journal.cur_segment_txid if journal.is_segment_open else None,
        journal.next_txid,
        journal.highest_written_txid,
    )


def _files(journal: Journal) -> dict[str, bytes]:
    """Every file's bytes, but VERSION's (its first line is the time it was written)."""
    files = snapshot_files(journal.storage.log_dir)
    files.pop("current/VERSION")
    return files


def _snapshot(journal: Journal) -> tuple[Any, ...]:
    return _state(journal), _files(journal)


def _answer(fn, *args) -> tuple[str, str] | None:
    try:
        fn(*args)
    except Exception as e:  # noqa: BLE001 - compared, not handled
        return type(e).__name__, str(e)
    return None


def _via_node(journal: Journal, req: RequestInfo, segment: int, first: int, num: int, data):
    before = _snapshot(journal)
    if journal.journal_in_order(*request_numbers(req), segment, first, num, data):
        return
    assert _snapshot(journal) == before, "a declined call changed something"
    journal.journal(req, segment, first, num, data)


def _setup(journal: Journal) -> None:
    """Epoch 2 promised and writing segment 1 with txns 1-3."""
    journal.format(FAKE_NSINFO)
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.new_epoch(FAKE_NSINFO, 2)
    journal.start_log_segment(make_request(1, epoch=2), 1, CURRENT_LAYOUT_VERSION)
    journal.journal(make_request(2, epoch=2, committed_txid=0), 1, 1, 3, create_txn_data(1, 3))


DEVIATIONS = {
    "epoch-1": ("epoch", -1),
    "epoch+1": ("epoch", 1),
    "serial+0": ("serial", -1),
    "serial-1": ("serial", -2),
    "serial+5": ("serial", 4),
    "committed-1": ("committed", -1),
    "committed+100": ("committed", 100),
    "segment+1": ("segment", 1),
    "segment-1": ("segment", -1),
    "first+1": ("first", 1),
    "first-1": ("first", -1),
}


@st.composite
def calls(draw, state: tuple[Any, ...]):
    """A journal() call in order, or off in exactly one way (each boundary of the checks)."""
    promised, _writer, serial, committed, _open, segment, next_txid, _ = state
    call = {
        "epoch": promised,
        "serial": serial + 1,
        "committed": max(committed, 0),
        "segment": segment or 1,
        "first": next_txid,
    }
    deviation = draw(st.sampled_from([None, None, "no-committed", "empty", *DEVIATIONS]))
    if deviation in DEVIATIONS:
        name, delta = DEVIATIONS[deviation]
        call[name] += delta
    num = 0 if deviation == "empty" else draw(st.integers(1, 3))
    committed = INVALID_TXID if deviation == "no-committed" else call["committed"]
    req = RequestInfo(JID, call["epoch"], call["serial"], committed)
    return req, call["segment"], call["first"], num


@settings(max_examples=75, deadline=None)
@given(st.data())
def test_the_node_path_answers_and_writes_as_journal_does(data):
    conf = Configuration()
    with tempfile.TemporaryDirectory() as tmp:
        fast = Journal(conf, Path(tmp) / "fast" / JID, JID)
        slow = Journal(conf, Path(tmp) / "slow" / JID, JID)
        try:
            _setup(fast)
            _setup(slow)
            for journal in (fast, slow):
                # Both write committed-txid on every change (as Hadoop does), so that the
                # files compare equal whatever the time between two calls.
                journal.committed_txn_id.lazy_interval_s = 0.0
            for _ in range(data.draw(st.integers(1, 8))):
                state = _state(slow)
                assert _state(fast) == state
                if not state[4] and data.draw(st.booleans()):
                    # A call knocked the segment out: the writer starts the next one.
                    start = (make_request(state[2] + 1, epoch=state[0]), state[6], 0)
                    start = start[:2] + (CURRENT_LAYOUT_VERSION,)
                    assert _answer(fast.start_log_segment, *start) == _answer(
                        slow.start_log_segment, *start
                    )
                    continue
                req, segment, first, num = data.draw(calls(state))
                records = create_txn_data(max(first, 1), num)
                answer = _answer(_via_node, fast, req, segment, first, num, records)
                assert answer == _answer(slow.journal, req, segment, first, num, records)
                assert _state(fast) == _state(slow)
                assert _files(fast) == _files(slow)
        finally:
            fast.close()
            slow.close()


def test_in_order_batches_take_the_one_pass_path(tmp_path):
    journal = Journal(Configuration(), tmp_path / JID, JID)
    try:
        _setup(journal)
        req = RequestInfo(JID, 2, 3, 3)
        assert journal.journal_in_order(*request_numbers(req), 1, 4, 2, create_txn_data(4, 2))
        assert _state(journal)[2:] == (3, 3, True, 1, 6, 5)
        # A newer epoch is journal()'s to promise; a repeated serial its to reject.
        newer = RequestInfo(JID, 3, 4, 5)
        assert not journal.journal_in_order(*request_numbers(newer), 1, 6, 1, create_txn_data(6, 1))
        again = RequestInfo(JID, 2, 3, 5)
        assert not journal.journal_in_order(*request_numbers(again), 1, 6, 1, create_txn_data(6, 1))
    finally:
        journal.close()


def test_the_one_pass_path_holds_the_committed_txid_back_until_finalize(tmp_path):
    """journal_in_order moves the committed txid in memory at once and in its file at
    most every COMMITTED_TXID_WRITE_INTERVAL_S; finalizing the segment writes it."""
    journal = Journal(Configuration(), tmp_path / JID, JID)
    try:
        _setup(journal)  # committed txid 0, written at once
        journal.committed_txn_id.lazy_interval_s = 3600.0
        path = journal.storage.current_dir / "committed-txid"
        assert path.read_bytes() == (0).to_bytes(8, "big")
        req = make_request(3, epoch=2, committed_txid=3)
        assert journal.journal_in_order(*request_numbers(req), 1, 4, 2, create_txn_data(4, 2))
        assert journal.committed_txn_id.get() == 3
        assert path.read_bytes() == (0).to_bytes(8, "big")
        journal.finalize_log_segment(make_request(4, epoch=2, committed_txid=5), 1, 5)
        assert path.read_bytes() == (5).to_bytes(8, "big")
    finally:
        journal.close()


def _declines(journal: Journal, req: RequestInfo, first: int) -> None:
    before = _snapshot(journal)
    assert not journal.journal_in_order(
        *request_numbers(req), 1, first, 1, create_txn_data(first, 1)
    )
    assert _snapshot(journal) == before


def test_a_newer_promise_with_the_segment_still_open_is_declined(tmp_path):
    """A heartbeat from epoch 3 promised it; the epoch-2 writer's segment is still open."""
    journal = Journal(Configuration(), tmp_path / JID, JID)
    try:
        _setup(journal)
        journal.heartbeat(make_request(1, epoch=3))
        assert journal.is_segment_open
        _declines(journal, RequestInfo(JID, 2, 3, 3), 4)  # fenced: journal() rejects it
        _declines(journal, RequestInfo(JID, 3, 2, 3), 4)  # not epoch 3's segment
    finally:
        journal.close()


def test_a_batch_that_fails_to_sync_is_never_acknowledged_and_the_journal_declines_after(
    tmp_path, monkeypatch
):
    from hadoop_qjm.editlog import edit_log_file_output_stream as output_module

    journal = Journal(Configuration(), tmp_path / JID, JID)
    try:
        _setup(journal)
        acknowledged = []

        def failing_sync(fd):
            raise OSError(5, "Input/output error")

        with monkeypatch.context() as m:
            m.setattr(output_module.os, "fdatasync", failing_sync)
            with pytest.raises(IOException, match="Failed to write txns 4-4"):
                journal.journal_in_order(
                    *request_numbers(RequestInfo(JID, 2, 3, 3)),
                    1,
                    4,
                    1,
                    create_txn_data(4, 1),
                    lambda: acknowledged.append(1),
                )
        assert acknowledged == []
        _declines(journal, RequestInfo(JID, 2, 4, 3), 4)
    finally:
        journal.close()


def test_an_unformatted_journal_is_declined(tmp_path):
    journal = Journal(Configuration(), tmp_path / JID, JID)
    try:
        before = snapshot_files(tmp_path)
        req = RequestInfo(JID, 1, 1, 0)
        assert not journal.journal_in_order(*request_numbers(req), 1, 1, 1, create_txn_data(1, 1))
        assert snapshot_files(tmp_path) == before
    finally:
        journal.close()


def test_a_failing_fault_hook_fails_the_call_as_journal_does(tmp_path):
    from hadoop_qjm.qjournal.server.journal import JournalFaultInjector

    class Failing(JournalFaultInjector):
        def before_write_edits(self) -> None:
            raise OSError(5, "injected")

    answers = []
    for name in ("fast", "slow"):
        journal = Journal(Configuration(), tmp_path / name / JID, JID, fault_injector=Failing())
        try:
            _setup_without_writes(journal)
            req = RequestInfo(JID, 2, 2, 0)
            data = create_txn_data(1, 1)
            if name == "fast":
                answers.append(_answer(_via_node, journal, req, 1, 1, 1, data))
            else:
                answers.append(_answer(journal.journal, req, 1, 1, 1, data))
            answers.append(_state(journal))
        finally:
            journal.close()
    assert answers[0] is not None and answers[0] == answers[2]
    assert answers[1] == answers[3]


def _setup_without_writes(journal: Journal) -> None:
    journal.format(FAKE_NSINFO)
    journal.new_epoch(FAKE_NSINFO, 2)
    journal.start_log_segment(make_request(1, epoch=2), 1, CURRENT_LAYOUT_VERSION)


# ---- the early acknowledgement ------------------------------------------------------------------
def _held_elsewhere(lock) -> bool:
    """Whether another thread finds ``lock`` taken."""
    free: list[bool] = []

    def try_lock() -> None:
        got = lock.acquire(blocking=False)
        if got:
            lock.release()
        free.append(got)

    thread = threading.Thread(target=try_lock)
    thread.start()
    thread.join(10)
    return free == [False]


def _segment_bytes(journal: Journal) -> bytes:
    return (journal.storage.current_dir / "edits_inprogress_0000000000000000001").read_bytes()


def test_the_acknowledgement_comes_once_the_batch_is_durable_and_before_it_is_counted(
    tmp_path, monkeypatch
):
    """The writer's acknowledgement goes out right after the fdatasync and the journal's
    own state; the journal counts the batch in its metrics after it, before it lets go
    of its lock."""
    from hadoop_qjm.editlog import edit_log_file_output_stream as output_module

    journal = Journal(Configuration(), tmp_path / JID, JID)
    try:
        _setup(journal)
        events: list[Any] = []
        real_sync = output_module.os.fdatasync

        def recording_sync(fd):
            real_sync(fd)
            events.append("fdatasync")

        records = create_txn_data(4, 2)

        def acknowledge():
            assert _held_elsewhere(journal._lock), "the journal's lock is held"
            events.append(
                (
                    "acknowledge",
                    records in _segment_bytes(journal),
                    journal.next_txid,
                    journal.highest_written_txid,
                    journal.metrics.counts.batches,
                )
            )

        monkeypatch.setattr(output_module.os, "fdatasync", recording_sync)
        batches = journal.metrics.counts.batches
        req = RequestInfo(JID, 2, 3, 3)
        assert journal.journal_in_order(*request_numbers(req), 1, 4, 2, records, acknowledge)
        assert events == ["fdatasync", ("acknowledge", True, 6, 5, batches)]
        assert (journal.next_txid, journal.highest_written_txid) == (6, 5)
        assert journal.metrics.counts.batches == batches + 1
    finally:
        journal.close()


def test_a_failing_acknowledgement_still_leaves_the_batch_recorded(tmp_path):
    """The batch is on disk whatever became of its acknowledgement: the journal's state
    must say so, or the writer's next batch would not follow it."""
    journal = Journal(Configuration(), tmp_path / JID, JID)
    try:
        _setup(journal)
        batches = journal.metrics.counts.batches

        def acknowledge():
            raise RuntimeError("acknowledgement failed")

        req = RequestInfo(JID, 2, 3, 3)
        with pytest.raises(RuntimeError, match="acknowledgement failed"):
            journal.journal_in_order(
                *request_numbers(req), 1, 4, 2, create_txn_data(4, 2), acknowledge
            )
        assert (journal.next_txid, journal.highest_written_txid) == (6, 5)
        assert journal.metrics.counts.batches == batches + 1
        req = RequestInfo(JID, 2, 4, 5)
        assert journal.journal_in_order(*request_numbers(req), 1, 6, 1, create_txn_data(6, 1))
    finally:
        journal.close()


def test_a_metrics_reader_that_saw_the_acknowledgement_sees_the_batch_counted(tmp_path):
    """A /jmx or /metrics read that starts once the writer has its acknowledgement waits
    out the few lines of counting: it never sees the batch acknowledged but uncounted."""
    journal = Journal(Configuration(), tmp_path / JID, JID, clock=lambda: 1234.5)
    try:
        _setup(journal)
        journal.last_journal_timestamp_ms = 0
        before = journal.metrics.as_hadoop_bean()
        beans: list[dict[str, object]] = []
        reader = threading.Thread(target=lambda: beans.append(journal.metrics.as_hadoop_bean()))

        def acknowledge():
            assert journal.metrics.batch_lock.locked()  # a reader must wait for the count
            reader.start()  # as a client would, having read the acknowledgement

        req = RequestInfo(JID, 2, 3, 3)
        assert journal.journal_in_order(
            *request_numbers(req), 1, 4, 2, create_txn_data(4, 2), acknowledge
        )
        reader.join(10)
        (bean,) = beans
        assert bean["BatchesWritten"] == before["BatchesWritten"] + 1
        assert bean["TxnsWritten"] == before["TxnsWritten"] + 2
        assert bean["LastWrittenTxId"] == 5
        assert bean["LastJournalTimestamp"] == 1234500 != before["LastJournalTimestamp"]
    finally:
        journal.close()


def test_the_edit_cache_has_the_batch_before_it_is_acknowledged(tmp_path):
    """getJournaledEdits reads the highest written txid without the lock, then the cache:
    by the acknowledgement, both have the batch."""
    conf = Configuration()
    conf.set("dfs.ha.tail-edits.in-progress", "true")
    journal = Journal(conf, tmp_path / JID, JID)
    try:
        _setup(journal)
        seen = []

        def acknowledge():
            seen.append(journal.get_journaled_edits(4, 10))

        records = create_txn_data(4, 2)
        req = RequestInfo(JID, 2, 3, 3)
        assert journal.journal_in_order(*request_numbers(req), 1, 4, 2, records, acknowledge)
        ((count, data),) = [(r.txn_count, r.edit_log) for r in seen]
        assert count == 2 and data.endswith(records)
    finally:
        journal.close()
