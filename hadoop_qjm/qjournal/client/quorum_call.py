"""QuorumCall: wait for a quorum of answers to one fanned-out call (design paper §5.1.2).

A QuorumCall watches one future per key (a logger), or — for the writer's
batches, which make no future — is told each key's answer by the thread that
read it (:meth:`QuorumCall.expecting`, :meth:`QuorumCall.answerer`). Each
success or exception is recorded as it comes; :meth:`wait_for` sleeps until
enough answers are in, too many failed, or the timeout passes — whichever
comes first. There is no polling: the waiter wakes when an answer completes
what it waits for (or on any exception, which it must inspect), to log
progress, or at the deadline. An answer that completes nothing wakes nobody:
each wake-up of a waiting thread costs a context switch on the writer's
critical path.

The clock is a parameter (seconds, monotonic). A pause of the whole process
(a long GC in Java, a SIGSTOP or an overloaded host here) that the clock shows
to be longer than 30% of the timeout moves the deadline back by the pause:
the answers may well be waiting, and failing the writer because *we* were
frozen would be wrong (Hadoop's HDFS-10333 long-pause extension;
``testQuorumSucceedsWithLongPause``).
"""

from __future__ import annotations

import functools
import logging
import threading
import time
import weakref
from collections.abc import Callable, Hashable, Iterable, Mapping
from concurrent.futures import Future
from typing import Any, Generic, Protocol, TypeVar

from hadoop_qjm.common.exceptions import HadoopAssertionError
from hadoop_qjm.qjournal.protocol.exceptions import QuorumException, RemoteException

__all__ = [
    "QuorumCall",
    "map_to_string",
    "WAIT_PROGRESS_INTERVAL_S",
    "WAIT_PROGRESS_INFO_THRESHOLD",
    "WAIT_PROGRESS_WARN_THRESHOLD",
]

LOG = logging.getLogger("hadoop_qjm.qjournal.client.quorum_journal_manager")

#: After the first progress message, one every second.
WAIT_PROGRESS_INTERVAL_S = 1.0
#: Progress messages start (at INFO) after this fraction of the timeout …
WAIT_PROGRESS_INFO_THRESHOLD = 0.3
#: … and turn to WARN after this fraction.
WAIT_PROGRESS_WARN_THRESHOLD = 0.7
#: A pause longer than this fraction of the timeout extends the deadline.
LONG_PAUSE_THRESHOLD = 0.3


class Assist(Protocol):
    """What a waiter does instead of sleeping (``pipelined_channel.read_replies_while_waiting``).

    ``assist(timeout_s, held_lock)`` does the work that brings the answers (reads
    the replies) for up to ``timeout_s``, releasing ``held_lock`` meanwhile;
    False if that is not possible now. ``wake()`` cuts such a turn short: an
    answer came in another thread. An assist may also have ``stop_handling()``,
    called by an answer read in the waiter's own turn that may end its wait: the
    turn then reads nothing more (what else came is read by the next turn).
    """

    def __call__(self, timeout_s: float, held: Any) -> bool: ...

    def wake(self) -> None: ...


#: With an assist that could not run, how soon the waiter tries it again.
ASSIST_RETRY_S = 0.002

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: ``rule(succeeded_keys, failed_keys)``: whether a wait is over (see QuorumCall.wait_for).
Rule = Callable[[Iterable[Any], Iterable[Any]], bool]

_ASSERTION_ERROR_NAME = "java.lang.AssertionError"


def map_to_string(mapping: Mapping[Any, Any]) -> str:
    """``key: value`` lines, for logging a quorum's answers (Hadoop's mapToString)."""
    return "\n".join(f"{key}: {value}" for key, value in mapping.items())


def _deliver(call_ref: weakref.ref[QuorumCall[Any, Any]], key: Any, future: Future[Any]) -> None:
    call = call_ref()
    if call is not None:  # else nobody holds the call: nobody can read this answer
        call._on_done(key, future)


def _answer(
    call_ref: weakref.ref[QuorumCall[Any, Any]], key: Any, result: Any, error: BaseException | None
) -> None:
    call = call_ref()
    if call is not None:
        call._add(key, result, error)


class QuorumCall(Generic[K, V]):
    """The answers so far to one call sent to several keys (loggers).

    Later answers keep arriving after :meth:`wait_for` returns; the counts and
    the :attr:`successes` / :attr:`exceptions` snapshots change accordingly.
    """

    def __init__(
        self,
        calls: Mapping[K, Future[V]],
        clock: Callable[[], float] = time.monotonic,
        assist: Assist | None = None,
    ) -> None:
        self._clock = clock
        self._assist = assist
        self._assisting: int | None = None  # the thread doing the assist's work, if any
        # State under the lock, taken on every answer (reentrant: an answer may come in
        # the waiting thread, e.g. from its clock); the condition on it is made only when
        # a waiter has to sleep on it (no assist, or the assist could not run).
        self._lock = threading.RLock()
        self._cond: threading.Condition | None = None
        self._successes: dict[K, V] = {}
        self._exceptions: dict[K, BaseException] = {}
        self._answers = 0  # bumped on every answer, so a waiter never misses one
        # What each waiting thread waits for: (min_responses, min_successes, max_exceptions,
        # rule), the rule None but for a joint-consensus wait (JointAsyncLoggerSet).
        self._wanted: list[tuple[int, int, int, Rule | None]] = []
        self._keys: list[K] = []  # every call's key: the calls' count
        self._futures: dict[K, Future[V]] = {}
        # The futures and answer callbacks refer to this call only weakly: a node that
        # never answers (frozen) must not keep every call it missed — and the others'
        # answers — alive. Whoever can still read the answers holds the call, so none is
        # lost to a reader.
        self._ref = weakref.ref(self)
        for key, future in calls.items():
            self.watch(key, future)

    @classmethod
    def expecting(
        cls,
        keys: Iterable[K],
        clock: Callable[[], float] = time.monotonic,
        assist: Assist | None = None,
    ) -> QuorumCall[K, V]:
        """A call to each of ``keys`` that has no answer yet: each key's answer comes
        through :meth:`answerer` or a future given to :meth:`watch`.

        The writer's fan-out (``AsyncLoggerSet.send_edits``): a batch sent straight
        to a node is answered by the thread reading its reply, with no future in
        between.
        """
        call: QuorumCall[K, V] = cls({}, clock, assist)
        call._keys.extend(keys)
        return call

    def watch(self, key: K, future: Future[V]) -> None:
        """``future`` is ``key``'s call: its outcome is that key's answer."""
        if future is None:
            raise ValueError(f"null future for key: {key}")
        if key not in self._keys:
            self._keys.append(key)
        self._futures[key] = future
        # Runs at once if the future is already done (a direct executor).
        future.add_done_callback(functools.partial(_deliver, self._ref, key))

    def answerer(self, key: K) -> Callable[[Any, BaseException | None], None]:
        """``answer(result, None)`` or ``answer(None, error)``: ``key``'s answer, once.

        For a key of :meth:`expecting`; refers to this call weakly.
        """
        return functools.partial(_answer, self._ref, key)

    def _on_done(self, key: K, future: Future[V]) -> None:
        try:
            result = future.result()
        except BaseException as e:  # noqa: BLE001 - every failure (a cancellation too) is an answer
            self._add(key, None, e)
        else:
            self._add(key, result, None)

    def _add(self, key: K, result: Any, error: BaseException | None) -> None:
        with self._lock:
            if key in self._successes or key in self._exceptions:
                # A key answers once (a bug elsewhere if not): the first answer stands.
                LOG.warning("Ignoring a second answer from %s: %r", key, error or result)
                return
            if error is None:
                self._successes[key] = result
            else:
                self._exceptions[key] = error
            self._answers += 1
            # Wake the waiters only if this answer may end a wait: any exception (it may be
            # an AssertionError to re-raise), or a threshold reached.
            wake = error is not None
            if not wake:
                for wanted in self._wanted:  # (a loop, not any(): this runs on every reply)
                    if self._reached(*wanted):
                        wake = True
                        break
            if wake and self._wanted:
                if self._cond is not None:
                    self._cond.notify_all()
                assisting = self._assisting
                if assisting is None:
                    pass
                elif assisting != threading.get_ident():
                    # The waiter polls for replies, not on the condition: interrupt it.
                    self._assist.wake()  # type: ignore[union-attr]
                else:
                    # The waiter itself is reading this reply: it goes on before reading
                    # the others that came with it (a third node's, on the writer's path).
                    stop = getattr(self._assist, "stop_handling", None)
                    if stop is not None:
                        stop()

    def _reached(
        self, min_responses: int, min_successes: int, max_exceptions: int, rule: Rule | None
    ) -> bool:
        """Whether one of :meth:`wait_for`'s conditions holds (the lock is held)."""
        if rule is not None and rule(self._successes.keys(), self._exceptions.keys()):
            return True
        successes, exceptions = len(self._successes), len(self._exceptions)
        return (
            (min_responses > 0 and successes + exceptions >= min_responses)
            or (min_successes > 0 and successes >= min_successes)
            or (max_exceptions >= 0 and exceptions > max_exceptions)
        )

    # ---- waiting -------------------------------------------------------------------------------
    def wait_for(
        self,
        min_responses: int,
        min_successes: int,
        max_exceptions: int,
        timeout_ms: int,
        operation_name: str,
        rule: Rule | None = None,
    ) -> None:
        """Return as soon as one condition holds; TimeoutError if none does in time.

        * ``min_responses`` answers of any kind (≤ 0: not checked);
        * ``min_successes`` successes (≤ 0: not checked);
        * more than ``max_exceptions`` exceptions (negative: not checked; 0: any
          exception returns at once);
        * ``rule(succeeded_keys, failed_keys)`` is true (None: not checked) — for a
          quorum that is not a count, like the joint one of a set change.

        A broken invariant reported by a node (an AssertionError, local or
        remote) is re-raised here even if a quorum succeeded, as Hadoop does
        with assertions enabled; ``python -O`` (``__debug__`` false) turns
        this off, like running Java without ``-ea``.
        """
        timeout_s = timeout_ms / 1000.0
        clock = self._clock
        start = clock()
        deadline = start + timeout_s
        next_log = start + timeout_s * WAIT_PROGRESS_INFO_THRESHOLD
        # When the last wait began and how long it was meant to last: a clock
        # jump beyond that is a pause of this process.
        wait_began, wait_len = start, 0.0
        wanted = (min_responses, min_successes, max_exceptions, rule)
        with self._lock:
            self._wanted.append(wanted)  # tells _add when to wake us
            try:
                while True:
                    seen = self._answers
                    self._check_assertion_errors()
                    if self._reached(*wanted):
                        return
                    now = clock()
                    pause = (now - wait_began) - wait_len
                    if pause > timeout_s * LONG_PAUSE_THRESHOLD:
                        LOG.info(
                            "Detected a pause of %d ms while waiting for %s; "
                            "extending the deadline",
                            pause * 1000,
                            operation_name,
                        )
                        deadline += pause
                        next_log += pause
                    if self._answers != seen:
                        # An answer arrived while we read the clock (callbacks can run in
                        # this thread): check it before timing out or sleeping.
                        wait_began, wait_len = now, 0.0
                        continue
                    if now >= next_log:
                        self._log_progress(now - start, timeout_ms, operation_name)
                        next_log = now + WAIT_PROGRESS_INTERVAL_S
                    if now >= deadline:
                        raise TimeoutError(
                            f"Timed out after {timeout_ms} ms waiting for {operation_name}"
                        )
                    wait_len = max(min(deadline, next_log) - now, 0.001)
                    wait_began = now
                    if self._assist is None:
                        self._condition().wait(wait_len)
                    else:
                        self._assisting = threading.get_ident()
                        try:
                            assisted = self._assist(wait_len, self._lock)
                        finally:
                            self._assisting = None
                        if not assisted:
                            # Someone else reads the replies: ours wake us, or we try again.
                            self._condition().wait(min(wait_len, ASSIST_RETRY_S))
            finally:
                self._wanted.remove(wanted)

    def _condition(self) -> threading.Condition:
        """The condition a waiter sleeps on (the lock is held)."""
        if self._cond is None:
            self._cond = threading.Condition(self._lock)
        return self._cond

    def _log_progress(self, waited_s: float, timeout_ms: int, operation_name: str) -> None:
        msg = (
            f"Waited {int(waited_s * 1000)} ms (timeout={timeout_ms} ms) for a response "
            f"for {operation_name}"
        )
        if self._successes:
            msg += ". Succeeded so far: [" + ",".join(str(k) for k in self._successes) + "]"
        if self._exceptions:
            msg += ". Exceptions so far: [" + self._exception_map_string() + "]"
        if not self._successes and not self._exceptions:
            msg += ". No responses yet."
        if waited_s * 1000 > timeout_ms * WAIT_PROGRESS_WARN_THRESHOLD:
            LOG.warning(msg)
        else:
            LOG.info(msg)

    def _exception_map_string(self) -> str:
        return ", ".join(f"{key}: {exc}" for key, exc in self._exceptions.items())

    def _check_assertion_errors(self) -> None:
        if not __debug__:
            return
        for error in self._exceptions.values():
            if isinstance(error, AssertionError):
                raise error
            if isinstance(error, RemoteException) and error.class_name == _ASSERTION_ERROR_NAME:
                raise HadoopAssertionError(str(error)) from error

    # ---- results -------------------------------------------------------------------------------
    def count_calls(self) -> int:
        """How many calls this QuorumCall is waiting on (answered or not)."""
        return len(self._keys)

    def count_responses(self) -> int:
        """Answers received so far, successes and exceptions alike."""
        with self._lock:
            return len(self._successes) + len(self._exceptions)

    def count_successes(self) -> int:
        with self._lock:
            return len(self._successes)

    def count_exceptions(self) -> int:
        with self._lock:
            return len(self._exceptions)

    @property
    def successes(self) -> dict[K, V]:
        """A snapshot of the successful answers (Hadoop's ``getResults``)."""
        with self._lock:
            return dict(self._successes)

    @property
    def exceptions(self) -> dict[K, BaseException]:
        """A snapshot of the failures."""
        with self._lock:
            return dict(self._exceptions)

    @property
    def futures(self) -> dict[K, Future[V]]:
        """Each key's future, for the keys whose call made one (not :meth:`answerer`'s)."""
        return dict(self._futures)

    def rethrow_exception(self, msg: str) -> None:
        """Raise QuorumException listing every success and failure (there must be one)."""
        with self._lock:
            if not self._exceptions:
                raise RuntimeError("rethrow_exception called without any exception")
            raise QuorumException.create(msg, dict(self._successes), dict(self._exceptions))

    def cancel_calls(self) -> None:
        """Cancel the calls that have not started yet (their answers no longer matter)."""
        for future in self._futures.values():
            future.cancel()

    def __repr__(self) -> str:
        with self._lock:
            return (
                f"QuorumCall({len(self._keys)} calls, {len(self._successes)} succeeded, "
                f"{len(self._exceptions)} failed)"
            )
