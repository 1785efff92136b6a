"""FSEditLog's state, its counters and the gap check of its readers (FSEditLog.checkForGaps),
apart from the edit log's locking and I/O: pure. :mod:`hadoop_qjm.namenode.fs_edit_log`
re-exports them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import IOException

__all__ = ["EditLogState", "EditLogStats", "check_for_gaps"]


class EditLogState(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    BETWEEN_LOG_SEGMENTS = "BETWEEN_LOG_SEGMENTS"
    IN_SEGMENT = "IN_SEGMENT"
    OPEN_FOR_READING = "OPEN_FOR_READING"
    CLOSED = "CLOSED"


@dataclass(frozen=True)
class EditLogStats:
    """Counters since the edit log was created: ``txns / syncs`` is the group-commit factor."""

    txns: int
    syncs: int
    txns_batched_in_sync: int
    last_written_txid: int
    synced_txid: int
    #: Syncs on their way now, and the most there ever were at once.
    syncs_in_flight: int = 0
    max_syncs_in_flight: int = 0

    @property
    def txns_per_sync(self) -> float:
        return self.txns / self.syncs if self.syncs else 0.0


def check_for_gaps(streams: list, from_txid: int, to_at_least_txid: int) -> None:
    """The streams must hold every txid from ``from_txid`` to ``to_at_least_txid``
    (FSEditLog.checkForGaps): else IOException naming the first missing txid."""
    txid = from_txid
    for stream in streams:
        if txid > to_at_least_txid:
            return
        if stream.first_txid > txid:
            break
        if stream.last_txid == INVALID_TXID:
            return  # an in-progress stream may go all the way
        txid = max(txid, stream.last_txid + 1)
    if txid > to_at_least_txid:
        return
    raise IOException(
        f"Gap in transactions. Expected to be able to read up until at least txid "
        f"{to_at_least_txid} but unable to find any edit logs containing txid {txid}"
    )
