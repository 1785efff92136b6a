"""RemoteEditLog and RemoteEditLogManifest: which segments a journal holds."""

from __future__ import annotations

from dataclasses import dataclass, field

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import IllegalStateException

__all__ = ["RemoteEditLog", "RemoteEditLogManifest"]


@dataclass(frozen=True, order=True)
class RemoteEditLog:
    """One segment: ``[start_txid, end_txid]``; an in-progress one may have an unknown end."""

    start_txid: int
    end_txid: int = INVALID_TXID
    is_in_progress: bool = False

    def __str__(self) -> str:
        return f"[{self.start_txid},{self.end_txid}]" + (
            " (in progress)" if self.is_in_progress else ""
        )


@dataclass(frozen=True)
class RemoteEditLogManifest:
    """The segments of a journal, sorted by start txid, plus the committed txid."""

    logs: tuple[RemoteEditLog, ...] = field(default_factory=tuple)
    committed_txn_id: int = INVALID_TXID

    def __post_init__(self) -> None:
        object.__setattr__(self, "logs", tuple(self.logs))
        self.check_state()

    def check_state(self) -> None:
        """No two logs may overlap (Hadoop: "Invalid log manifest")."""
        prev: RemoteEditLog | None = None
        for log in sorted(self.logs):
            if prev is not None and log.start_txid <= prev.end_txid:
                raise IllegalStateException(
                    f"Invalid log manifest (log {log} overlaps {prev})\n{self}"
                )
            prev = log

    def __str__(self) -> str:
        logs = ", ".join(str(log) for log in self.logs)
        return f"[{logs}], CommittedTxId: {self.committed_txn_id}"
