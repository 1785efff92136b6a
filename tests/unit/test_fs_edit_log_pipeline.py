"""FSEditLog with pipelined syncs (``dfs.namenode.edits.sync.pipeline.depth``, issue 23).

A hand-written journal whose batches are answered only when the test says so: k batches
go out before any is acknowledged, the (k+1)th waits for a slot, acknowledgements reach
the callers in txid order whatever order the journal answers in, and a batch that fails
in the middle of the pipe kills the log before any later one counts.

    sent:     [1] [2-3] [4]        the journal answers 4, then 2-3, then 1
    synced:    0    0    0   ->  1 -> 3 -> 4   (never 4 before 1)
"""

from __future__ import annotations

import threading
import time

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import ExitException, IllegalArgumentException, IOException
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp
from hadoop_qjm.editlog.journal_manager import JournalManager
from hadoop_qjm.namenode.fs_edit_log import FSEditLog
from hadoop_qjm.namenode.journal_set import JournalSet
from hadoop_qjm.testing.in_process_ha import wait_until

pytestmark = pytest.mark.timeout(30)

DEADLINE_S = 10.0


class _Batch:
    def __init__(self, txids: list[int]) -> None:
        self.txids = txids
        self.answer = threading.Event()
        self.error: BaseException | None = None


class _HeldStream:
    """A stream whose sent batches wait in ``journal.batches`` until answered."""

    def __init__(self, journal: HeldJournal) -> None:
        self.journal = journal
        self.buffered: list[int] = []
        self.ready: list[list[int]] = []

    def write(self, op) -> None:
        self.buffered.append(op.txid)

    def set_ready_to_flush(self) -> None:
        self.ready.append(self.buffered)
        self.buffered = []

    def send_ready(self) -> _Batch:
        batch = _Batch(self.ready.pop(0))
        with self.journal.lock:
            self.journal.batches.append(batch)
        return batch

    def wait_sent(self, batch: _Batch) -> None:
        assert batch.answer.wait(DEADLINE_S), f"batch {batch.txids} never answered"
        if batch.error is not None:
            raise batch.error

    def flush(self, durable: bool = True) -> None:
        self.wait_sent(self.send_ready())

    def should_force_sync(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def abort(self) -> None:
        pass


class HeldJournal(JournalManager):
    """Batches are acknowledged by the test (``answer``); the segment's first batch
    (OP_START_LOG_SEGMENT) is answered at once."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.batches: list[_Batch] = []

    def start_log_segment(self, txid: int, layout_version: int = CURRENT_LAYOUT_VERSION):
        return _HeldStream(self)

    def answer(self, index: int, error: BaseException | None = None) -> None:
        batch = self.batches[index]
        batch.error = error
        batch.answer.set()

    def finalize_log_segment(self, first_txid: int, last_txid: int) -> None:
        pass

    def recover_unfinalized_segments(self) -> None:
        pass

    def purge_logs_older_than(self, min_txid_to_keep: int) -> None:
        pass

    def select_input_streams(self, from_txid, in_progress_ok=False, only_durable_txns=False):
        return []


class _Terminations:
    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, status: int, message: str) -> None:
        self.calls.append(message)


def _open(depth: int) -> tuple[FSEditLog, HeldJournal, _Terminations]:
    journal = HeldJournal()
    journals = JournalSet()
    journals.add(journal, required=True)
    terminations = _Terminations()
    log = FSEditLog(journals, terminate=terminations, pipeline_depth=depth)
    log.init_journals_for_write()
    sync = threading.Thread(target=log.open_for_write)
    sync.start()
    wait_until(lambda: len(journal.batches) == 1, DEADLINE_S, "the segment's first batch was sent")
    journal.answer(0)
    sync.join(DEADLINE_S)
    assert log.synced_txid == 1
    return log, journal, terminations


class _Writer(threading.Thread):
    """A handler: logs one mkdir, then syncs it; records when it returned."""

    def __init__(self, log: FSEditLog, name: str) -> None:
        super().__init__(daemon=True)
        self.log = log
        self.path = name
        self.txid = 0
        self.logged = threading.Event()
        self.done = threading.Event()
        self.error: BaseException | None = None
        self.synced_at_return = -1

    def run(self) -> None:
        try:
            self.txid = self.log.log_edit(MkdirOp.create(0, self.path))
            self.logged.set()
            self.log.log_sync(self.txid)
            self.synced_at_return = self.log.synced_txid
        except BaseException as e:  # noqa: BLE001 - checked by the test
            self.error = e
        finally:
            self.logged.set()
            self.done.set()


def _start_writer(log: FSEditLog, journal: HeldJournal, name: str, batches: int) -> _Writer:
    """A writer whose edit goes out as batch number ``batches - 1`` (the sends are in order)."""
    writer = _Writer(log, name)
    writer.start()
    wait_until(lambda: len(journal.batches) == batches, DEADLINE_S, f"{name}'s batch was sent")
    return writer


def test_k_batches_go_out_before_any_is_acknowledged_and_the_next_waits() -> None:
    log, journal, _ = _open(depth=3)
    writers = [_start_writer(log, journal, f"/d{i}", 2 + i) for i in range(3)]
    assert log.stats().syncs_in_flight == 3
    fourth = _Writer(log, "/d3")
    fourth.start()
    assert fourth.logged.wait(DEADLINE_S)
    time.sleep(0.05)  # (a chance to go wrong: the fourth must not be sent)
    assert len(journal.batches) == 4, "a fourth batch went out with three unacknowledged"
    assert log.synced_txid == 1
    journal.answer(1)
    wait_until(
        lambda: len(journal.batches) == 5, DEADLINE_S, "a slot freed: the fourth batch went out"
    )
    for index in (2, 3, 4):
        journal.answer(index)
    for writer in [*writers, fourth]:
        assert writer.done.wait(DEADLINE_S)
        assert writer.error is None, writer.error
    assert log.synced_txid == 5
    assert log.stats().max_syncs_in_flight == 3


def test_acknowledgements_stay_in_txid_order() -> None:
    log, journal, _ = _open(depth=3)
    first, second, third = (_start_writer(log, journal, f"/d{i}", 2 + i) for i in range(3))
    # The journal answers the newest batch first: nobody may return yet.
    journal.answer(3)
    time.sleep(0.05)
    assert not third.done.is_set(), "batch 3 was acknowledged before batches 1 and 2"
    assert log.synced_txid == 1
    journal.answer(2)
    time.sleep(0.05)
    assert not (second.done.is_set() or third.done.is_set())
    journal.answer(1)
    for writer in (first, second, third):
        assert writer.done.wait(DEADLINE_S)
        assert writer.error is None, writer.error
        # When a call returned, every txn up to its own was durable.
        assert writer.synced_at_return >= writer.txid
    assert log.synced_txid == 4


def test_a_batch_failing_in_the_middle_of_the_pipe_acknowledges_nothing_after_it() -> None:
    log, journal, terminations = _open(depth=3)
    first, second, third = (_start_writer(log, journal, f"/d{i}", 2 + i) for i in range(3))
    journal.answer(3)  # the newest is durable ...
    journal.answer(1)  # ... and the oldest
    assert first.done.wait(DEADLINE_S)
    assert first.error is None
    journal.answer(2, IOException("injected: batch 2 lost"))  # the one between fails
    for writer in (second, third):
        assert writer.done.wait(DEADLINE_S)
        assert isinstance(writer.error, ExitException), writer.error
    assert log.synced_txid == 2, "a txn after the failed batch counted as durable"
    assert len(terminations.calls) == 1
    assert "batch 2 lost" in terminations.calls[0]


def test_depth_one_keeps_one_sync_in_flight() -> None:
    log, journal, _ = _open(depth=1)
    first = _start_writer(log, journal, "/a", 2)
    second = _Writer(log, "/b")
    second.start()
    assert second.logged.wait(DEADLINE_S)
    time.sleep(0.05)
    assert len(journal.batches) == 2, "a second sync started while one was running"
    journal.answer(1)
    wait_until(lambda: len(journal.batches) == 3, DEADLINE_S, "the second sync started")
    journal.answer(2)
    for writer in (first, second):
        assert writer.done.wait(DEADLINE_S)
        assert writer.error is None
    assert log.stats().max_syncs_in_flight == 1


def test_a_depth_below_one_is_refused() -> None:
    with pytest.raises(IllegalArgumentException, match="pipeline.depth must be at least 1"):
        FSEditLog(JournalSet(), pipeline_depth=0)


@pytest.mark.parametrize("depth", [1, 2])
def test_a_sync_in_flight_when_the_log_is_aborted_is_not_acknowledged(depth: int) -> None:
    """Issue 23 review: ``abort()`` (a crash: nothing finalized) takes every journal's
    stream away while a batch is on its way. An optional journal whose stream is gone
    is skipped by the flush, so the batch "succeeded" with no journal left to hold it:
    neither the thread syncing it nor one waiting on it may be told it is durable.

        logged: 2 3    sent: [2-3]    abort()    journal answers [2-3]    synced: 1
    """
    journal = HeldJournal()
    journals = JournalSet()
    journals.add(journal, required=False)
    log = FSEditLog(journals, terminate=_Terminations(), pipeline_depth=depth)
    log.init_journals_for_write()
    opener = threading.Thread(target=log.open_for_write)
    opener.start()
    wait_until(lambda: len(journal.batches) == 1, DEADLINE_S, "the segment's first batch was sent")
    journal.answer(0)
    opener.join(DEADLINE_S)
    second, third = (log.log_edit(MkdirOp.create(0, f"/d{i}")) for i in range(2))
    syncer = _Syncer(log, third)
    syncer.start()
    wait_until(lambda: len(journal.batches) == 2, DEADLINE_S, "the batch 2-3 was sent")
    waiter = _Syncer(log, second)  # its txid is in the batch on its way: it waits
    waiter.start()
    log.abort()
    journal.answer(1)
    for thread in (syncer, waiter):
        assert thread.done.wait(DEADLINE_S), f"log_sync({thread.txid}) never returned"
        assert thread.error is not None, f"log_sync({thread.txid}) said the edit is durable"
    assert log.synced_txid == 1


class _Syncer(threading.Thread):
    """``log_sync(txid)`` in a thread of its own."""

    def __init__(self, log: FSEditLog, txid: int) -> None:
        super().__init__(daemon=True)
        self.log = log
        self.txid = txid
        self.done = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.log.log_sync(self.txid)
        except BaseException as e:  # noqa: BLE001 - checked by the test
            self.error = e
        finally:
            self.done.set()


@pytest.mark.parametrize("depth", [1, 2])
def test_an_unexpected_error_from_a_batch_kills_the_log_and_frees_its_waiters(
    depth: int,
) -> None:
    """A batch failing with something other than an I/O error (a broken invariant) ends
    the log as an I/O error does (Hadoop's logSync terminates on any Throwable); a thread
    whose txid was in that batch must not wait for it for ever."""
    log, journal, terminations = _open(depth)
    first = log.log_edit(MkdirOp.create(0, "/a"))
    second = log.log_edit(MkdirOp.create(0, "/b"))
    outcomes: dict[int, BaseException | None] = {}

    def sync(txid: int) -> None:
        try:
            log.log_sync(txid)
            outcomes[txid] = None
        except BaseException as e:  # noqa: BLE001 - checked below
            outcomes[txid] = e

    syncer = threading.Thread(target=sync, args=(first,), daemon=True)
    syncer.start()
    wait_until(lambda: len(journal.batches) == 2, DEADLINE_S, "the batch of both edits was sent")
    waiter = threading.Thread(target=sync, args=(second,), daemon=True)
    waiter.start()  # its txid is in the batch on its way: it waits for that batch
    journal.answer(1, RuntimeError("invariant broken"))
    syncer.join(DEADLINE_S)
    waiter.join(DEADLINE_S)
    assert not syncer.is_alive() and not waiter.is_alive(), "a thread waits for ever"
    assert isinstance(outcomes[first], ExitException), outcomes
    assert isinstance(outcomes[second], ExitException), outcomes
    assert log.synced_txid == 1 and len(terminations.calls) == 1
