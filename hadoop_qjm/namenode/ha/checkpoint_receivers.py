"""Which NameNodes a standby's checkpoint is uploaded to (HDFS-12979), as a pure rule.

With three to five NameNodes a standby's StandbyCheckpointer sends each new image to every
other NameNode of the nameservice (HAUtil.getConfForOtherNodes): the active stores it, and
so does an observer (it serves reads and must not replay the whole log at a restart); a
standby refuses it. Each receiver has an entry, Hadoop's CheckpointReceiverEntry:

* ``is_primary`` — this standby is the one whose images that receiver takes (true at
  first, true again after every accepted upload, false after a refusal);
* ``last_upload`` — when it last accepted one (monotonic seconds; None: never).

A checkpoint goes to a receiver if this standby is its primary checkpointer, or if the
receiver has been quiet long enough: ``dfs.namenode.checkpoint.check.quiet-multiplier``
(1.5) times ``dfs.namenode.checkpoint.period`` since its last accepted upload — so of
several standbys, only one keeps uploading to the active, and another takes over when that
one stops. A receiver that never accepted one is asked every time. An upload that could not
be made (connection refused, timeout) changes nothing: it is retried at the next checkpoint.

The outcomes are Hadoop's TransferFsImage.TransferResult; an HTTP status maps to one as
TransferFsImage.uploadImageFromStorage does, 409 (the receiver has, or is receiving, an image
at least as new) counting as a success.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass

from hadoop_qjm.ha.ha_service_protocol import HAServiceState

__all__ = [
    "CHECKPOINT_RECEIVING_STATES",
    "CheckpointReceiverEntry",
    "CheckpointReceivers",
    "TransferResult",
    "transfer_result",
]

#: The HA states in which a NameNode stores an uploaded image (ImageServlet.doPut); any
#: other answers 417, NOT_ACTIVE_NAMENODE_FAILURE.
CHECKPOINT_RECEIVING_STATES = frozenset({HAServiceState.ACTIVE, HAServiceState.OBSERVER})


class TransferResult(enum.Enum):
    """Hadoop's TransferFsImage.TransferResult (the HTTP status that means it)."""

    SUCCESS = 200
    AUTHENTICATION_FAILURE = 403
    NOT_ACTIVE_NAMENODE_FAILURE = 417
    OLD_TRANSACTION_ID_FAILURE = 412
    UNEXPECTED_FAILURE = -1


def transfer_result(status: int) -> TransferResult:
    """The outcome of an upload the receiver answered with HTTP ``status``."""
    if status == 409:  # "a previous attempt to upload this checkpoint succeeded"
        return TransferResult.SUCCESS
    for result in TransferResult:
        if result.value == status:
            return result
    return TransferResult.UNEXPECTED_FAILURE


@dataclass
class CheckpointReceiverEntry:
    """One receiver's standing with this standby (see the module docstring)."""

    is_primary: bool = True
    last_upload: float | None = None


class CheckpointReceivers:
    """The entries of ``nnids`` (the other NameNodes) and the upload rule; ``quiet_period_s``
    is the quiet multiplier times the checkpoint period."""

    def __init__(self, nnids: Iterable[str], quiet_period_s: float) -> None:
        self.quiet_period_s = quiet_period_s
        self.entries = {nnid: CheckpointReceiverEntry() for nnid in nnids}

    def due(self, now: float) -> list[str]:
        """The receivers of a checkpoint made at ``now``, in configured order."""
        return [
            nnid
            for nnid, entry in self.entries.items()
            if entry.is_primary
            or entry.last_upload is None
            or now - entry.last_upload >= self.quiet_period_s
        ]

    def record(self, nnid: str, result: TransferResult | None, now: float) -> None:
        """What ``nnid`` answered an upload made at ``now``; None: no answer (an error)."""
        entry = self.entries[nnid]
        if result is TransferResult.SUCCESS:
            entry.last_upload = now
            entry.is_primary = True
        elif result is not None:
            entry.is_primary = False
