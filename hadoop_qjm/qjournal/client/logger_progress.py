"""LoggerProgress: what a writer knows of one JournalNode's progress (etcd raft's Progress).

IPCLoggerChannel's bookkeeping, pure and in one place (issue 34, item 3): the edits queued
for the node and not answered (bounded by ``dfs.qjournal.queued-edits.limit.mb``, design
paper §2.2), the highest txid it acknowledged and when, the committed txid it was told,
and whether it is *out of sync* — after a failed journal call, until the next successful
startLogSegment (Hadoop's IPCLoggerChannel.outOfSync; while out of sync a heartbeat at
most once a second still tells the node the committed txid, HDFS-3726).

No lock, no clock, no I/O: the channel holds its lock around every call and passes the
time in. ``sync_epoch`` counts the times the node went out of sync, so that an answer to
a call sent before the latest failure is known to be stale (Hadoop's single-threaded
executor would not have sent it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from hadoop_qjm.common.exceptions import IllegalArgumentException

__all__ = ["HEARTBEAT_INTERVAL_S", "DirectAnswer", "LoggerProgress"]

#: While out of sync, at most one heartbeat per this interval.
HEARTBEAT_INTERVAL_S = 1.0


class DirectAnswer(enum.Enum):
    """How the answer to a journal call sent directly counts (:meth:`LoggerProgress.answered`)."""

    ACKED = "acked"
    #: Answered "done", but an earlier call failed after this one went out: it fails
    #: ("Journal disabled until next roll").
    STALE = "stale"
    #: Failed, and the node goes out of sync with it.
    WENT_OUT_OF_SYNC = "went out of sync"
    #: Failed otherwise (a remote error, or the node already out of sync).
    FAILED = "failed"


@dataclass
class LoggerProgress:
    """One JournalNode's progress as the writer sees it; ``queue_limit_bytes`` bounds the
    bytes of un-answered edits (a batch always fits when none is queued)."""

    queue_limit_bytes: int
    committed_txid: int
    queued_bytes: int = 0
    queued_txns: int = 0
    highest_acked_txid: int = 0
    #: Submit time of the last acked batch; None before the first ack.
    last_ack_time: float | None = None
    last_commit_time: float | None = None
    out_of_sync: bool = False
    sync_epoch: int = 0
    last_heartbeat: float | None = None

    # ---- the queue -----------------------------------------------------------------------------
    def fits(self, size: int) -> bool:
        """Whether a batch of ``size`` bytes may be queued (always, if none is)."""
        return self.queued_bytes + size <= self.queue_limit_bytes or self.queued_bytes == 0

    def queue(self, size: int, num_txns: int) -> None:
        self.queued_bytes += size
        self.queued_txns += num_txns

    def dequeue(self, size: int, num_txns: int) -> None:
        self.queued_bytes -= size
        self.queued_txns -= num_txns

    # ---- answers -------------------------------------------------------------------------------
    def acked(self, first_txid: int, num_txns: int, submit_time: float) -> None:
        self.highest_acked_txid = first_txid + num_txns - 1
        self.last_ack_time = submit_time

    def journal_failed(self) -> bool:
        """A journal call failed with an I/O error: out of sync until the next segment.
        True if the node went out of sync now (it was in sync)."""
        if self.out_of_sync:
            return False
        self.out_of_sync = True
        self.sync_epoch += 1
        return True

    def answered(
        self,
        *,
        failed: bool,
        io_failure: bool,
        sent_sync_epoch: int,
        first_txid: int,
        num_txns: int,
        size: int,
        submit_time: float,
    ) -> DirectAnswer:
        """The answer to a journal call sent directly at ``sent_sync_epoch``: counted, and
        its queue space released."""
        if not failed and (self.out_of_sync or self.sync_epoch != sent_sync_epoch):
            outcome = DirectAnswer.STALE
        elif not failed:
            self.acked(first_txid, num_txns, submit_time)
            outcome = DirectAnswer.ACKED
        elif io_failure and self.journal_failed():
            outcome = DirectAnswer.WENT_OUT_OF_SYNC
        else:
            outcome = DirectAnswer.FAILED
        self.dequeue(size, num_txns)
        return outcome

    def resynced(self) -> bool:
        """A startLogSegment succeeded: in sync again. True if it was out of sync."""
        was_out_of_sync, self.out_of_sync = self.out_of_sync, False
        return was_out_of_sync

    # ---- commits, lag and heartbeats -----------------------------------------------------------
    def commit(self, txid: int, now: float) -> None:
        if txid < self.committed_txid:
            raise IllegalArgumentException(
                "Trying to move committed txid backwards in client "
                f"old: {self.committed_txid} new: {txid}"
            )
        self.committed_txid = txid
        self.last_commit_time = now

    @property
    def lag_txns(self) -> int:
        """How many committed txns the node has not acknowledged."""
        return max(self.committed_txid - self.highest_acked_txid, 0)

    @property
    def lag_time_ms(self) -> int:
        """Time between the last commit and the submission of the last batch acked."""
        if self.last_commit_time is None or self.last_ack_time is None:
            return 0
        return int(max(self.last_commit_time - self.last_ack_time, 0.0) * 1000)

    def append_report(self) -> str:
        report = f"Written txid {self.highest_acked_txid}"
        behind = self.lag_txns
        if behind > 0:
            if self.last_ack_time is not None:
                report += f" ({behind} txns/{self.lag_time_ms}ms behind)"
            else:
                report += " (never written)"
        if self.out_of_sync:
            report += " (will try to re-sync on next segment)"
        return report

    def heartbeat_due(self, now: float) -> bool:
        """Whether an out-of-sync node is owed a heartbeat (none in the last interval)."""
        return self.last_heartbeat is None or now - self.last_heartbeat > HEARTBEAT_INTERVAL_S

    def heartbeat_sent(self, now: float) -> None:
        """A heartbeat was sent (or tried: not more often than the interval, even failing)."""
        self.last_heartbeat = now
