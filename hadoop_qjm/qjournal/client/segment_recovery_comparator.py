"""Choosing the recovery source among prepareRecovery answers (design paper §2.9). Pure.

:func:`compare` orders two answers; "a < b" means b is the better source.
The writer takes the maximum (:func:`best_recovery_source`), as Hadoop's
``Collections.max(..., SegmentRecoveryComparator.INSTANCE)`` does. The rules,
in order (digest §5 "SegmentRecoveryComparator"):

1. An answer with the segment beats one without; two without are equal
   (paper rule 1: a node without the segment is no source).
2. Both segments must start at the same txid (IllegalArgumentException).
3. Finalized beats in-progress, whatever the lengths or accepted epochs
   (paper rule 2: a finalized copy means a recovery already committed, or none
   is needed).
4. Two finalized segments must end at the same txid (AssertionError
   "finalized segs with different lengths" — invariant 3 of §2.7) and are equal.
5. Two in-progress segments: the higher ``max(acceptedInEpoch, lastWriterEpoch)``
   wins (paper rule 3b; examples 2.10.6 and 2.10.7), then the higher end txid
   (rule 3c). Newer-epoch data beats a longer log.

:func:`decide_recovery` is the writer's whole decision after prepareRecovery (§2.8
step 2): the source and whether it is an already-accepted proposal, or nothing to
recover; with the checks that the source starts at the segment and that no node saw
a committed txid past its end.

Pure: no socket, thread, Thrift or filesystem imports (STYLE.md habit 1).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cmp_to_key
from typing import TYPE_CHECKING, Generic, TypeVar

from hadoop_qjm.common.exceptions import (
    HadoopAssertionError,
    IllegalArgumentException,
    always_assert,
)

if TYPE_CHECKING:  # messages imports Thrift; only the fields are used here
    from hadoop_qjm.qjournal.protocol.messages import PrepareRecoveryResponse

__all__ = [
    "RecoveryDecision",
    "best_recovery_source",
    "compare",
    "decide_recovery",
    "max_seen_epoch",
]

K = TypeVar("K")


def max_seen_epoch(response: PrepareRecoveryResponse) -> int:
    """Paper rule 3a: the greater of the accepted-proposal epoch (unset = 0) and lastWriterEpoch."""
    accepted = response.accepted_in_epoch or 0
    return max(accepted, response.last_writer_epoch)


def compare(a: PrepareRecoveryResponse, b: PrepareRecoveryResponse) -> int:
    """-1, 0 or 1 as ``a`` is a worse, equally good or better recovery source than ``b``."""
    a_seg, b_seg = a.segment_state, b.segment_state
    if (a_seg is None) != (b_seg is None):
        return -1 if a_seg is None else 1
    if a_seg is None or b_seg is None:
        return 0
    if a_seg.start_txid != b_seg.start_txid:
        raise IllegalArgumentException(
            "Should only be called with responses for corresponding segments: "
            f"{a} and {b} do not have the same start txid."
        )
    if a_seg.is_in_progress != b_seg.is_in_progress:
        return -1 if a_seg.is_in_progress else 1
    if not a_seg.is_in_progress:
        if a_seg.end_txid != b_seg.end_txid:
            raise HadoopAssertionError(f"finalized segs with different lengths: {a}, {b}")
        return 0
    a_key = (max_seen_epoch(a), a_seg.end_txid)
    b_key = (max_seen_epoch(b), b_seg.end_txid)
    return (a_key > b_key) - (a_key < b_key)


def best_recovery_source(
    responses: Iterable[tuple[K, PrepareRecoveryResponse]],
) -> tuple[K, PrepareRecoveryResponse]:
    """The ``(logger, answer)`` pair with the best answer; the first of equals wins."""
    return max(responses, key=cmp_to_key(lambda x, y: compare(x[1], y[1])))


@dataclass(frozen=True)
class RecoveryDecision(Generic[K]):
    """Recover the segment from ``source``, whose answer is ``response``."""

    source: K
    response: PrepareRecoveryResponse

    @property
    def already_accepted(self) -> bool:
        """The source holds a proposal accepted in an earlier recovery (paper rule 3b)."""
        return self.response.accepted_in_epoch is not None


def decide_recovery(
    segment_txid: int, prepared: Iterable[tuple[K, PrepareRecoveryResponse]]
) -> RecoveryDecision[K] | None:
    """The recovery of segment ``segment_txid`` from a quorum's prepareRecovery answers:
    the best source (§2.9), or None when no answering node has the segment (it was
    started on a minority only, the writer crashing right after startLogSegment).
    AssertionError if the source does not start at ``segment_txid``, or if a node saw a
    txid committed past the source's end (recovery must never cut off a committed txn,
    §2.7 invariant 1)."""
    answers = list(prepared)
    best_logger, best = best_recovery_source(answers)
    if best.accepted_in_epoch is None and best.segment_state is None:
        for _, response in answers:
            always_assert(
                response.segment_state is None,
                "One of the loggers had a response, but no best logger was found.",
            )
        return None
    log_to_sync = best.segment_state
    always_assert(
        log_to_sync is not None and log_to_sync.start_txid == segment_txid,
        f"recovery source {log_to_sync} does not start at {segment_txid}",
    )
    for logger, response in answers:
        committed = response.last_committed_txid
        always_assert(
            committed is None or committed <= log_to_sync.end_txid,
            f"Decided to synchronize log to {log_to_sync} but logger {logger} had seen "
            f"txid {committed} committed",
        )
    return RecoveryDecision(best_logger, best)
