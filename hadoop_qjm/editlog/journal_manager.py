"""JournalManager: what every journal (a local directory, a quorum of JournalNodes) offers."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hadoop_qjm.common.storage_info import StorageInfo

__all__ = ["JournalManager"]


class JournalManager(ABC):
    """The interface FSEditLog writes through (Hadoop's ``JournalManager``)."""

    @abstractmethod
    def start_log_segment(self, txid: int, layout_version: int):
        """Open a new segment whose first transaction is ``txid``; returns an output stream."""

    @abstractmethod
    def finalize_log_segment(self, first_txid: int, last_txid: int) -> None:
        """Mark the segment ``[first_txid, last_txid]`` complete."""

    @abstractmethod
    def recover_unfinalized_segments(self) -> None:
        """Finalize, or move aside, every segment a crashed writer left in progress."""

    @abstractmethod
    def purge_logs_older_than(self, min_txid_to_keep: int) -> None:
        """Remove segments that hold only transactions below ``min_txid_to_keep``."""

    @abstractmethod
    def select_input_streams(self, from_txid: int, in_progress_ok: bool = False) -> list:
        """Streams that together hold the transactions from ``from_txid`` on."""

    def discard_segments(self, start_txid: int) -> None:
        """Move aside every segment starting at or after ``start_txid`` (rollback)."""
        raise NotImplementedError

    # ---- the HA upgrade of the layout (HDFS-5138; docs/journalnode.md, "Upgrades") ----------
    def do_pre_upgrade(self) -> None:
        """Keep the current storage aside (``previous.tmp``) before an upgrade."""
        raise NotImplementedError

    def do_upgrade(self, storage: StorageInfo) -> None:
        """Take ``storage``'s layout version and cTime; the old state becomes ``previous``."""
        raise NotImplementedError

    def do_finalize(self) -> None:
        """Remove ``previous``: the upgrade can no longer be rolled back."""
        raise NotImplementedError

    def can_roll_back(
        self, storage: StorageInfo, prev_storage: StorageInfo, target_layout_version: int
    ) -> bool:
        """Whether ``previous`` exists and holds ``target_layout_version``."""
        raise NotImplementedError

    def do_rollback(self) -> None:
        """Put ``previous`` back as the current storage."""
        raise NotImplementedError

    def get_journal_ctime(self) -> int:
        """The ``cTime`` of the storage's VERSION."""
        raise NotImplementedError

    def check_format(self) -> str | None:
        """Before a format changes anything: raise if this journal may not be formatted now
        (a writer uses it); else what formatting destroys here, in one line, or None."""
        return None

    def set_output_buffer_capacity(self, size: int) -> None:  # noqa: B027 - optional
        """The double-buffer size of the streams :meth:`start_log_segment` returns."""

    def close(self) -> None:  # noqa: B027 - optional
        """Release what the manager holds."""
