"""TestQuorumCall (HADOOP-QJM-DIGEST.md §8 "Smaller client tests") and the AsyncLoggerSet rule."""

from __future__ import annotations

import gc
import threading
import weakref
from concurrent.futures import Future

import pytest

from hadoop_qjm.common.exceptions import HadoopAssertionError, IOException
from hadoop_qjm.qjournal.client.async_logger_set import AsyncLoggerSet
from hadoop_qjm.qjournal.client.quorum_call import QuorumCall
from hadoop_qjm.qjournal.protocol.exceptions import QuorumException, RemoteException
from tests.unit.qjm_client_fakes import FakeLogger, failed, pending


def test_quorums() -> None:
    futures: dict[str, Future] = {"f1": Future(), "f2": Future(), "f3": Future()}
    q = QuorumCall(futures)
    assert q.count_responses() == 0

    futures["f1"].set_result("first future")
    q.wait_for(1, 0, 0, 100000, "test")  # 1 response
    q.wait_for(0, 1, 0, 100000, "test")  # 1 success
    assert q.count_responses() == 1

    futures["f2"].set_exception(Exception("error"))
    assert q.count_responses() == 2

    futures["f3"].set_result("second future")
    q.wait_for(3, 0, 100, 100000, "test")  # 3 responses
    q.wait_for(0, 2, 100, 100000, "test")  # 2 successes
    assert q.count_responses() == 3
    assert ",".join(f"{k}={v}" for k, v in sorted(q.successes.items())) == (
        "f1=first future,f3=second future"
    )
    assert list(q.exceptions) == ["f2"]

    with pytest.raises(TimeoutError):
        q.wait_for(0, 4, 100, 10, "test")


def test_quorum_fails_without_response() -> None:
    q = QuorumCall({"f1": Future()})
    assert q.count_responses() == 0
    with pytest.raises(TimeoutError):
        q.wait_for(0, 1, 100, 10, "test")


def test_max_exceptions_zero_returns_on_first_failure() -> None:
    q = QuorumCall({"a": Future(), "b": failed(IOException("boom"))})
    q.wait_for(2, 2, 0, 100000, "test")  # returns at once: one exception > 0
    assert q.count_exceptions() == 1


def test_negative_max_exceptions_is_not_checked() -> None:
    q = QuorumCall({"a": failed(IOException("x")), "b": Future()})
    with pytest.raises(TimeoutError):
        q.wait_for(0, 1, -1, 10, "test")


def test_quorum_succeeds_with_long_pause() -> None:
    """The clock jumps 1000 s between two readings: a pause of this process, not of the
    nodes. The deadline moves back by the pause instead of expiring, and the answer that
    comes in the next wait is taken (Hadoop's testQuorumSucceedsWithLongPause). Without
    the extension the second reading would be past the 30 ms deadline: TimeoutError."""
    futures: dict[str, Future] = {"f1": Future()}
    readings = 0

    def clock() -> float:
        nonlocal readings
        readings += 1
        if readings == 1:
            return 0.0  # the start of the wait; the process then "pauses" for 1000 s
        if readings == 3:
            futures["f1"].set_result("first future")  # answers during the next wait
        return 1000.0

    q = QuorumCall(futures, clock=clock)
    q.wait_for(1, 0, 0, 30, "test")
    assert q.successes == {"f1": "first future"}
    assert readings == 3


def test_remote_assertion_error_is_rethrown_even_with_a_quorum() -> None:
    futures = {
        "a": failed(RemoteException("broken", class_name="java.lang.AssertionError")),
        "b": Future(),
        "c": Future(),
    }
    futures["b"].set_result(1)
    futures["c"].set_result(2)
    q = QuorumCall(futures)
    with pytest.raises(AssertionError, match="broken"):
        q.wait_for(3, 2, 1, 1000, "test")
    q2 = QuorumCall({"a": failed(HadoopAssertionError("invariant")), "b": Future()})
    with pytest.raises(HadoopAssertionError, match="invariant"):
        q2.wait_for(0, 1, 5, 1000, "test")


def test_rethrow_exception_lists_successes_and_failures() -> None:
    futures = {"a": Future(), "b": failed(IOException("disk full"))}
    futures["a"].set_result(None)
    q = QuorumCall(futures)
    with pytest.raises(QuorumException) as info:
        q.rethrow_exception("Could not do it")
    text = str(info.value)
    assert text.startswith("Could not do it. 1 successful responses:\na: null [success]\n")
    assert "1 exceptions thrown:\nb: disk full" in text


def test_cancel_calls_cancels_pending_futures() -> None:
    slow = pending()
    q = QuorumCall({"a": slow})
    q.cancel_calls()
    assert slow.cancelled()
    assert q.count_exceptions() == 1


# ---- AsyncLoggerSet.wait_for_write_quorum --------------------------------------------------------


def _set(*loggers: FakeLogger) -> AsyncLoggerSet:
    return AsyncLoggerSet(loggers)


def test_majority_sizes() -> None:
    assert _set(*(FakeLogger(str(i)) for i in range(3))).majority_string == "2/3"
    assert _set(*(FakeLogger(str(i)) for i in range(5))).majority_size == 3
    assert _set(FakeLogger("a")).majority_size == 1
    assert _set(*(FakeLogger(str(i)) for i in range(4))).majority_size == 3


def test_write_quorum_returns_successes_of_a_majority() -> None:
    a, b, c = FakeLogger("a"), FakeLogger("b"), FakeLogger("c")
    c.when("finalize_log_segment", future=pending)
    loggers = _set(a, b, c)
    results = loggers.wait_for_write_quorum(
        loggers.call("finalize_log_segment", 1, 3), 600000, "finalize"
    )
    assert set(results) == {a, b}
    assert a.calls_to("finalize_log_segment") == [(1, 3)]


def test_write_quorum_fails_as_soon_as_a_majority_is_impossible() -> None:
    """Two of three failed, the third never answers: no waiting for it (a step beyond
    Hadoop, which would wait for the timeout — here 10 minutes, past pytest's limit)."""
    a, b, c = FakeLogger("a"), FakeLogger("b"), FakeLogger("c")
    a.when("start_log_segment", future=pending)
    b.when("start_log_segment", error=IOException("b is down"))
    c.when("start_log_segment", error=IOException("c is down"))
    loggers = _set(a, b, c)
    with pytest.raises(QuorumException) as info:
        loggers.wait_for_write_quorum(loggers.call("start_log_segment", 1, -67), 600000, "start")
    text = str(info.value)
    assert "Got too many exceptions to achieve quorum size 2/3" in text
    assert "b: b is down" in text and "c: c is down" in text


def test_write_quorum_timeout_message() -> None:
    a, b, c = FakeLogger("a"), FakeLogger("b"), FakeLogger("c")
    for logger in (a, b, c):
        logger.when("new_epoch", future=pending)
    loggers = _set(a, b, c)
    with pytest.raises(IOException, match=r"Timed out waiting 10ms for a quorum of nodes"):
        loggers.wait_for_write_quorum(loggers.call("new_epoch", 1), 10, "newEpoch(1)")


def test_a_logger_that_raises_counts_as_a_failed_call() -> None:
    class Broken(FakeLogger):
        def purge_logs_older_than(self, min_txid_to_keep):
            raise RuntimeError("broken logger")

    loggers = _set(Broken("x"), FakeLogger("y"), FakeLogger("z"))
    call = loggers.call("purge_logs_older_than", 5)
    assert call.count_exceptions() == 1 and call.count_successes() == 2


def test_epoch_is_set_once_on_every_logger() -> None:
    a, b = FakeLogger("a"), FakeLogger("b")
    loggers = _set(a, b)
    assert not loggers.is_epoch_established
    with pytest.raises(Exception, match="No epoch created yet"):
        _ = loggers.epoch
    loggers.set_epoch(3)
    assert (a.epoch, b.epoch, loggers.epoch) == (3, 3, 3)
    with pytest.raises(Exception, match="Epoch already established"):
        loggers.set_epoch(4)
    loggers.set_committed_txid(7)
    assert a.committed == [7] and b.committed == [7]
    assert str(loggers) == "[a, b]"
    assert loggers.append_report() == "a (Written txid 0), b (Written txid 0)"


def test_waiting_for_all_pending_calls_asks_every_logger_that_can_tell() -> None:
    """Hadoop's waitForAllPendingCalls: the loggers that can wait (IPCLoggerChannel) are
    each waited for, in order; the others are skipped."""
    waited: list[str] = []

    class Waiting(FakeLogger):
        def wait_for_all_pending_calls(self) -> None:
            waited.append(self.name)

    loggers = _set(Waiting("a"), FakeLogger("b"), Waiting("c"))
    loggers.wait_for_all_pending_calls()
    assert waited == ["a", "c"]


# ---- waking the waiter, and what an unanswered call keeps alive ------------------------------


class _CountingCondition(threading.Condition):
    def __init__(self, lock: object) -> None:
        super().__init__(lock)  # type: ignore[arg-type]
        self.notified = 0

    def notify_all(self) -> None:
        self.notified += 1
        super().notify_all()


@pytest.mark.timeout(30)
def test_waiter_is_woken_only_by_the_answer_that_ends_its_wait() -> None:
    """Each wake-up is a context switch on the writer's critical path: the first of two
    needed successes must not wake the waiter; the second must."""
    futures: dict[str, Future] = {"a": Future(), "b": Future(), "c": Future()}
    q = QuorumCall(futures)
    q._cond = cond = _CountingCondition(q._lock)  # the one a sleeping waiter uses

    def answer() -> None:
        with cond:  # acquired only once the waiter sleeps in wait(), which releases it
            pass
        futures["a"].set_result(1)
        futures["b"].set_result(2)

    answerer = threading.Thread(target=answer)
    with cond:
        answerer.start()
        q.wait_for(0, 2, 1, 10_000, "test")
    answerer.join(10)
    assert q.count_successes() == 2
    assert cond.notified == 1
    futures["c"].set_exception(IOException("late"))  # nobody waits: nobody is woken
    assert cond.notified == 1


@pytest.mark.timeout(30)
def test_an_exception_wakes_the_waiter() -> None:
    """Any exception wakes a waiter: it may be an AssertionError to re-raise."""
    futures: dict[str, Future] = {"a": Future(), "b": Future()}
    q = QuorumCall(futures)
    timer = threading.Timer(0.05, futures["a"].set_exception, [AssertionError("broken")])
    timer.start()
    try:
        with pytest.raises(AssertionError, match="broken"):
            q.wait_for(0, 2, 5, 10_000, "test")
    finally:
        timer.join(10)


def test_unanswered_future_does_not_keep_the_call_alive() -> None:
    """A node that never answers (SIGSTOPped) must not make the writer keep every call it
    missed, with the other nodes' answers: its future holds the call only weakly."""
    frozen: Future = Future()
    q = QuorumCall({"a": _done(1), "b": _done(2), "frozen": frozen})
    q.wait_for(0, 2, 0, 1000, "test")
    ref = weakref.ref(q)
    del q
    gc.collect()
    assert ref() is None
    frozen.set_result(3)  # the late answer has no reader, and is no error


def test_a_held_call_keeps_receiving_late_answers() -> None:
    late: Future = Future()
    q = QuorumCall({"a": _done(1), "b": _done(2), "late": late})
    q.wait_for(0, 2, 0, 1000, "test")
    gc.collect()
    late.set_result(3)
    assert q.successes == {"a": 1, "b": 2, "late": 3}


def _done(value: object) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


def test_an_assist_does_the_waiting_without_the_lock() -> None:
    """With an assist (the pipelined write path), the waiter itself does the work that
    brings the answers — here, completing the futures — and the call's lock is free
    meanwhile, so the answers' callbacks can take it."""
    futures: dict[str, Future] = {"a": Future(), "b": Future(), "c": Future()}
    todo = list(futures.values())
    turns: list[float] = []

    def assist(timeout_s: float, held) -> bool:
        turns.append(timeout_s)
        held.release()
        try:
            todo.pop(0).set_result("ok")  # the answer arrives "while polling"
        finally:
            held.acquire()
        return True

    q = QuorumCall(futures, assist=assist)
    q.wait_for(0, 2, 1, 10_000, "test")
    assert q.count_successes() == 2
    assert len(turns) == 2


def test_an_assist_that_cannot_run_falls_back_to_waiting() -> None:
    futures: dict[str, Future] = {"a": Future(), "b": Future()}
    tries: list[float] = []

    def busy(timeout_s: float, held) -> bool:
        tries.append(timeout_s)
        return False  # another thread reads the replies

    q = QuorumCall(futures, assist=busy)
    threading.Timer(0.05, lambda: [f.set_result(1) for f in futures.values()]).start()
    q.wait_for(2, 0, 0, 10_000, "test")
    assert q.count_successes() == 2
    assert tries  # tried, then slept on the call's condition until the answers came


# ---- answers without futures (the writer's fan-out) ---------------------------------------------


def test_an_expected_key_counts_as_a_call_before_it_answers() -> None:
    q: QuorumCall = QuorumCall.expecting(["a", "b", "c"])
    assert q.count_calls() == 3
    assert q.count_responses() == 0
    q.answerer("a")("ok", None)
    q.answerer("b")(None, IOException("boom"))
    assert q.successes == {"a": "ok"}
    assert list(q.exceptions) == ["b"]
    with pytest.raises(TimeoutError):
        q.wait_for(3, 0, -1, 10, "test")  # "c" never answered


def test_a_key_answered_through_a_future_instead_is_counted_once() -> None:
    """A logger that cannot take the shortcut gives its future for its key."""
    q: QuorumCall = QuorumCall.expecting(["a", "b"])
    q.answerer("a")(1, None)
    late: Future = Future()
    q.watch("b", late)
    assert q.count_calls() == 2
    late.set_result(2)
    q.wait_for(2, 0, -1, 1000, "test")
    assert q.successes == {"a": 1, "b": 2}


def test_an_answerer_does_not_keep_the_call_alive() -> None:
    """A frozen node's channel holds the answerer of every batch it missed: only weakly."""
    q: QuorumCall = QuorumCall.expecting(["a", "frozen"])
    answer = q.answerer("frozen")
    ref = weakref.ref(q)
    del q
    gc.collect()
    assert ref() is None
    answer(None, IOException("too late"))  # nobody to tell: ignored


def test_the_write_fan_out_takes_the_shortcut_where_a_logger_offers_it() -> None:
    """AsyncLoggerSet.send_edits: a logger with send_edits_directly that takes the batch
    answers the call itself; one that declines, or has no shortcut, gives a future; one
    that raises counts as a failed call."""

    class Direct(FakeLogger):
        def __init__(self, name: str, take: bool) -> None:
            super().__init__(name)
            self.take = take
            self.answers: list = []

        def send_edits_directly(self, segment_txid, first_txid, num_txns, data, on_answer):
            self.calls.append(("send_edits_directly", (segment_txid, first_txid, num_txns)))
            if self.take:
                self.answers.append(on_answer)
            return self.take

    class Broken(FakeLogger):
        def send_edits_directly(self, *args):
            raise IOException("cannot encode")

    taker, decliner, plain = Direct("taker", True), Direct("decliner", False), FakeLogger("p")
    broken = Broken("broken")
    loggers = AsyncLoggerSet([taker, decliner, plain, broken])
    call = loggers.send_edits(1, 5, 2, b"xy")
    assert call.count_calls() == 4
    assert taker.calls_to("send_edits") == []  # no future for it
    assert decliner.calls_to("send_edits") == [(1, 5, 2, b"xy")]
    assert plain.calls_to("send_edits") == [(1, 5, 2, b"xy")]
    assert call.successes == {decliner: None, plain: None}
    assert list(call.exceptions) == [broken]
    taker.answers[0](None, None)
    assert loggers.wait_for_write_quorum(call, 1000, "sendEdits") == {
        taker: None,
        decliner: None,
        plain: None,
    }


def test_a_second_answer_from_a_key_is_ignored() -> None:
    q: QuorumCall = QuorumCall.expecting(["a", "b"])
    answer = q.answerer("a")
    answer("ok", None)
    answer(None, IOException("again"))
    assert q.successes == {"a": "ok"}
    assert q.exceptions == {}
    assert q.count_responses() == 1
