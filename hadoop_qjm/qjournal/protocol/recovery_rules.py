"""The rules of segment recovery a JournalNode applies, as pure functions (issue 34).

acceptRecovery's content and committed-txid checks (design paper §2.8-2.9, digest §2),
and finalize's check of the copy on disk against the one accepted in recovery. The
Journal (``journal_recovery.py``, ``journal.py``) does the I/O around them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # messages imports the Thrift IDL: this module stays pure
    from hadoop_qjm.qjournal.protocol.messages import SegmentState

__all__ = [
    "discards_committed",
    "finalize_copy_differs",
    "is_same_content",
    "txn_range_contains",
]


def txn_range_contains(seg: SegmentState, txid: int) -> bool:
    """Whether ``seg`` holds ``txid`` (Hadoop's ``txnRange(seg).containsLong(txid)``)."""
    return seg.start_txid <= txid <= seg.end_txid


def is_same_content(current: SegmentState | None, segment: SegmentState) -> bool:
    """Whether this node's copy ``current`` already is the accepted ``segment``, so
    acceptRecovery skips the download.

    Same last txid is not enough: two writers can leave different copies of one length
    (each wrote txid N to a minority); the digest tells them apart, when the coordinator
    sent one. Two finalized copies of one length are the same decided value: a different
    digest there is bit rot (issue 27: the reader reads around it, the scrubber repairs
    it), not another writer's copy to download.
    """
    if current is None or current.end_txid != segment.end_txid:
        return False
    both_finalized = not current.is_in_progress and not segment.is_in_progress
    return segment.md5 is None or current.md5 == segment.md5 or both_finalized


def discards_committed(current: SegmentState, segment: SegmentState, committed_txid: int) -> bool:
    """Whether replacing ``current`` by ``segment`` would discard the committed txid:
    ``current`` holds it and ``segment`` does not (acceptRecovery's assertion)."""
    return txn_range_contains(current, committed_txid) and not txn_range_contains(
        segment, committed_txid
    )


def finalize_copy_differs(accepted_md5: str | None, digest_on_disk: str) -> bool:
    """Whether finalize must refuse the copy on disk: this node accepted another copy of
    the segment in recovery (the finalized copies must agree everywhere). An accepted
    state without an md5 (a record Hadoop wrote) constrains nothing."""
    return accepted_md5 is not None and digest_on_disk != accepted_md5
