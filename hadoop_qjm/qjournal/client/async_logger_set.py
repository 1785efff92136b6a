"""AsyncLoggerSet: every JournalNode of a journal, and the write-quorum rule (design paper §5.1.3).

One generic fan-out, :meth:`AsyncLoggerSet.call`, sends any AsyncLogger
method to every logger and returns a :class:`QuorumCall` (STYLE.md habit 10;
Hadoop has one wrapper per RPC). The writer's batches alone have their own,
:meth:`AsyncLoggerSet.send_edits`, which makes no future for a node that takes
the batch directly (its answer goes straight to the QuorumCall).
:meth:`wait_for_write_quorum` is the rule every quorum step uses: a majority of
successes (``rules.majority``).

One step beyond Hadoop: the wait ends as soon as a majority of successes has
become impossible — more than ``n - majority`` failures — instead of waiting
for the last node or the timeout (with 3 nodes and 2 failures Hadoop keeps
waiting for the third). A writer whose quorum is gone learns it at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from typing import Any

from hadoop_qjm.common.exceptions import IllegalStateException, IOException
from hadoop_qjm.qjournal.client.async_logger import AsyncLogger
from hadoop_qjm.qjournal.client.quorum_call import QuorumCall
from hadoop_qjm.qjournal.protocol.rules import majority

__all__ = ["AsyncLoggerSet", "INVALID_EPOCH"]

LOG = logging.getLogger("hadoop_qjm.qjournal.client.quorum_journal_manager")

#: The epoch of a set that has not established one yet.
INVALID_EPOCH = -1


def _failed(error: BaseException) -> Future[Any]:
    """A call that raised instead of returning its future: a failed one."""
    future: Future[Any] = Future()
    future.set_exception(error)
    return future


class AsyncLoggerSet:
    """The loggers of one journal, plus the writer's epoch once established."""

    def __init__(
        self, loggers: Sequence[AsyncLogger], clock: Callable[[], float] = time.monotonic
    ) -> None:
        if not loggers:
            raise ValueError("an AsyncLoggerSet needs at least one logger")
        self.loggers: tuple[AsyncLogger, ...] = tuple(loggers)
        self._clock = clock
        # Loggers whose replies a waiting thread may read itself (IPCLoggerChannel over
        # plain TCP) say how: the writer then waits without a thread hand-off.
        self._assist = next(
            (a for a in (getattr(lg, "assist_wait", None) for lg in self.loggers) if a), None
        )
        self._epoch = INVALID_EPOCH

    # ---- epoch ---------------------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        """The established epoch (IllegalStateException before one is)."""
        if self._epoch == INVALID_EPOCH:
            raise IllegalStateException("No epoch created yet")
        return self._epoch

    @property
    def is_epoch_established(self) -> bool:
        return self._epoch != INVALID_EPOCH

    def set_epoch(self, epoch: int) -> None:
        """Adopt ``epoch`` (won by newEpoch) on every logger; only once per set."""
        if self.is_epoch_established:
            raise IllegalStateException(f"Epoch already established: epoch={self._epoch}")
        self._epoch = epoch
        for logger in self.loggers:
            logger.set_epoch(epoch)

    def set_committed_txid(self, txid: int) -> None:
        """Tell every logger the highest quorum-acked txid (sent with its next call)."""
        for logger in self.loggers:
            logger.set_committed_txid(txid)

    # ---- quorum arithmetic ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.loggers)

    @property
    def majority_size(self) -> int:
        return majority(len(self.loggers))

    @property
    def majority_string(self) -> str:
        """``"2/3"``: the quorum size over the number of nodes, as messages print it."""
        return f"{self.majority_size}/{len(self.loggers)}"

    # ---- fan-out -------------------------------------------------------------------------------
    def call(
        self, method_name: str, *args: Any, only: Iterable[AsyncLogger] | None = None
    ) -> QuorumCall[AsyncLogger, Any]:
        """Call ``method_name(*args)`` on every logger (or on the loggers in ``only``);
        the futures in one QuorumCall.

        A logger that raises instead of returning a future counts as a failed
        call, so one broken logger cannot stop the fan-out to the others.
        """
        futures: dict[AsyncLogger, Future[Any]] = {}
        chosen = None if only is None else set(only)
        targets = self.loggers if chosen is None else [lg for lg in self.loggers if lg in chosen]
        for logger in targets:
            try:
                futures[logger] = getattr(logger, method_name)(*args)
            except Exception as e:  # noqa: BLE001 - becomes that logger's answer
                futures[logger] = _failed(e)
        return QuorumCall(futures, clock=self._clock, assist=self._assist)

    def call_after(
        self, previous: QuorumCall[AsyncLogger, Any], method_name: str, *args: Any
    ) -> QuorumCall[AsyncLogger, Any]:
        """Call ``method_name(future, *args)`` on each logger ``previous`` went to and that
        has not failed it, ``future`` being that logger's answer to ``previous`` (answered
        or still under way): the logger sends the call once that answer is a success."""
        failed = previous.exceptions
        futures: dict[AsyncLogger, Future[Any]] = {}
        for logger, future in previous.futures.items():
            if logger in failed:
                continue
            try:
                futures[logger] = getattr(logger, method_name)(future, *args)
            except Exception as e:  # noqa: BLE001 - becomes that logger's answer
                futures[logger] = _failed(e)
        return QuorumCall(futures, clock=self._clock, assist=self._assist)

    def send_edits(
        self, segment_txid: int, first_txid: int, num_txns: int, data: bytes
    ) -> QuorumCall[AsyncLogger, Any]:
        """``call("send_edits", …)`` for the writer's hot path: a logger that can send
        the batch straight away (``send_edits_directly``, IPCLoggerChannel's shortcut)
        answers the QuorumCall itself, with no future per node; any other logger, or
        one that cannot take the shortcut now, goes through its ``send_edits``.
        """
        call: QuorumCall[AsyncLogger, Any] = QuorumCall.expecting(
            self.loggers, clock=self._clock, assist=self._assist
        )
        for logger in self.loggers:
            try:
                direct = getattr(logger, "send_edits_directly", None)
                if direct is not None and direct(
                    segment_txid, first_txid, num_txns, data, call.answerer(logger)
                ):
                    continue
                future = logger.send_edits(segment_txid, first_txid, num_txns, data)
            except Exception as e:  # noqa: BLE001 - becomes that logger's answer
                future = _failed(e)
            call.watch(logger, future)
        return call

    def wait_for_write_quorum(
        self, call: QuorumCall[AsyncLogger, Any], timeout_ms: int, operation_name: str
    ) -> dict[AsyncLogger, Any]:
        """Wait for a majority of successes; returns them.

        Returns when every logger answered, or a majority succeeded, or so many
        failed that a majority can no longer succeed. Raises QuorumException
        ("Got too many exceptions to achieve quorum size 2/3. …", listing each
        success and failure) when a majority did not succeed, and IOException
        on timeout.
        """
        n = call.count_calls()  # all loggers, or the subset the call went to
        quorum = self.majority_size
        try:
            call.wait_for(n, quorum, n - quorum, timeout_ms, operation_name)
        except TimeoutError:
            raise IOException(
                f"Timed out waiting {timeout_ms}ms for a quorum of nodes to respond."
            ) from None
        if call.count_successes() < quorum:
            call.rethrow_exception(
                f"Got too many exceptions to achieve quorum size {self.majority_string}"
            )
        return call.successes

    def wait_for_all_pending_calls(self) -> None:
        """Block until every logger has answered each state-changing call made so far
        (Hadoop's waitForAllPendingCalls): a quorum call returns once a majority answered,
        and the others may still be catching up. A logger that cannot tell is skipped."""
        for logger in self.loggers:
            wait = getattr(logger, "wait_for_all_pending_calls", None)
            if wait is not None:
                wait()

    # ---- life cycle and reporting --------------------------------------------------------------
    def close(self) -> None:
        """Close every logger (each stops its executors and its connection)."""
        for logger in self.loggers:
            try:
                logger.close()
            except Exception:  # noqa: BLE001 - close the others
                LOG.exception("Error closing %s", logger)

    def append_report(self) -> str:
        """``"a (Written txid 3), b (Written txid 3 (1 txns/2ms behind))"`` — plain text."""
        return ", ".join(f"{logger} ({logger.append_report()})" for logger in self.loggers)

    def __str__(self) -> str:
        return "[" + ", ".join(str(logger) for logger in self.loggers) + "]"

    def __repr__(self) -> str:
        return f"AsyncLoggerSet({self})"
