"""The rules of a JournalNode's reads, as pure functions (issue 34).

What ``getEditLogManifest`` lists and what ``getJournaledEdits`` may serve; the
Journal reads its state and answers with them.
"""

from __future__ import annotations

from hadoop_qjm.qjournal.protocol.exceptions import NewerTxnIdException

__all__ = ["in_progress_listed", "journaled_edits_window"]


def in_progress_listed(last_writer_epoch: int, last_promised_epoch: int) -> bool:
    """Whether the manifest lists the in-progress segment (up to the highest written txid).

    Not when its writer has been superseded by a newer promise: its tail is not settled
    until that writer's recovery, and the committed txid sent with the manifest is the
    new writer's, not a bound on this copy (unlike Hadoop, which would let a reader take
    it as durable).
    """
    return last_writer_epoch == last_promised_epoch


def journaled_edits_window(since_txid: int, highest_txid: int, max_txns: int) -> int | None:
    """How many txns getJournaledEdits asks the edits cache for from ``since_txid``: at
    most ``max_txns``, never past ``highest_txid`` (after a recovery truncated the
    segment, the cache may still hold txns of a fenced writer beyond it); None when
    there is nothing new (``since_txid`` is the next txid to be written).

    Raises NewerTxnIdException (Hadoop's message) for a ``since_txid`` further on.
    """
    if since_txid == highest_txid + 1:
        return None
    if since_txid > highest_txid + 1:
        raise NewerTxnIdException(
            f"Highest txn ID available in the journal is {highest_txid}, but requested txns "
            f"starting at {since_txid}."
        )
    return min(max_txns, highest_txid - since_txid + 1)
