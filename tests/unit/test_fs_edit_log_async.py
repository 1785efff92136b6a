"""EditLogSyncer: postponed replies go out once their edit is synced; with k syncer
threads (pipelined syncs) the next group's sync starts while one is still waiting."""

from __future__ import annotations

import threading

import pytest

from hadoop_qjm.namenode.fs_edit_log_async import EditLogSyncer
from hadoop_qjm.testing.in_process_ha import wait_until

pytestmark = pytest.mark.timeout(30)


class FakeCall:
    def __init__(self) -> None:
        self.postponed = 0
        self.outcome: str | None = None

    def postpone(self) -> None:
        self.postponed += 1

    def send_response(self) -> None:
        self.outcome = "sent"

    def fail(self, error: Exception) -> None:
        self.outcome = f"failed: {error}"

    def abort(self) -> None:
        self.outcome = "aborted"


class GatedEditLog:
    """``log_sync(txid)`` records that it began, then waits for the test's gate."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.events: list[str] = []
        self.gates: dict[int, threading.Event] = {}
        self.fail_txids: set[int] = set()

    def gate(self, txid: int) -> threading.Event:
        with self.lock:
            return self.gates.setdefault(txid, threading.Event())

    def log_sync(self, txid: int) -> None:
        with self.lock:
            self.events.append(f"begin {txid}")
        assert self.gate(txid).wait(20)
        with self.lock:
            self.events.append(f"end {txid}")
        if txid in self.fail_txids:
            raise OSError(f"sync of {txid} failed")


def test_one_thread_syncs_the_next_group_only_after_the_first() -> None:
    log = GatedEditLog()
    syncer = EditLogSyncer(threads=1)
    try:
        first, second = FakeCall(), FakeCall()
        syncer.submit(log, 1, first)
        wait_until(lambda: "begin 1" in log.events, what="the first sync")
        syncer.submit(log, 2, second)
        assert second.outcome is None
        log.gate(1).set()
        wait_until(lambda: first.outcome == "sent", what="the first reply")
        log.gate(2).set()
        wait_until(lambda: second.outcome == "sent", what="the second reply")
        assert log.events == ["begin 1", "end 1", "begin 2", "end 2"]
    finally:
        log.gate(1).set()
        log.gate(2).set()
        syncer.stop(10)


def test_k_threads_start_the_next_groups_sync_while_one_waits() -> None:
    log = GatedEditLog()
    syncer = EditLogSyncer(threads=2)
    try:
        first, second = FakeCall(), FakeCall()
        syncer.submit(log, 1, first)
        wait_until(lambda: "begin 1" in log.events, what="the first sync")
        syncer.submit(log, 2, second)
        # the second group's sync begins while the first is still unacknowledged
        wait_until(lambda: "begin 2" in log.events, what="the second sync to begin")
        assert "end 1" not in log.events and first.outcome is None
        log.gate(2).set()
        wait_until(lambda: second.outcome == "sent", what="the second reply")
        assert first.outcome is None  # its own sync is still out
        log.gate(1).set()
        wait_until(lambda: first.outcome == "sent", what="the first reply")
    finally:
        log.gate(1).set()
        log.gate(2).set()
        syncer.stop(10)


def test_a_failed_sync_fails_only_its_groups_calls() -> None:
    log = GatedEditLog()
    log.fail_txids.add(1)
    syncer = EditLogSyncer(threads=2)
    try:
        first, second = FakeCall(), FakeCall()
        syncer.submit(log, 1, first)
        wait_until(lambda: "begin 1" in log.events, what="the first sync")
        syncer.submit(log, 2, second)
        wait_until(lambda: "begin 2" in log.events, what="the second sync")
        log.gate(1).set()
        log.gate(2).set()
        wait_until(lambda: first.outcome and second.outcome, what="both outcomes")
        assert first.outcome == "failed: sync of 1 failed"
        assert second.outcome == "sent"
    finally:
        log.gate(1).set()
        log.gate(2).set()
        syncer.stop(10)


def test_stop_joins_every_thread_and_aborts_later_calls() -> None:
    syncer = EditLogSyncer(threads=3)
    syncer.stop(10)
    assert not [t for t in threading.enumerate() if t.name.startswith("FSEditLogAsync-")]
    late = FakeCall()
    syncer.submit(GatedEditLog(), 1, late)
    assert late.outcome == "aborted"
