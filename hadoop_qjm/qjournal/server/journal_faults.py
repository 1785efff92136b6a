"""The Journal's fault hooks (STYLE.md habit 4): :class:`JournalFaultInjector`.

Its own module so that the Journal's collaborators (the write path, recovery) are built
with it without importing the Journal. ``journal.py`` re-exports it.
"""

from __future__ import annotations

__all__ = ["JournalFaultInjector"]


class JournalFaultInjector:
    """Fault hooks on both sides of acceptRecovery's commit point (and around a write).

    The default does nothing; tests pass a subclass whose hooks raise, to crash
    the JournalNode exactly there (design paper §2.8, HDFS-3955).
    """

    def before_persist_paxos_data(self) -> None:
        """Called after the download, before the paxos record is written."""

    def after_persist_paxos_data(self) -> None:
        """Called after the paxos record is durable, before the segment is renamed."""

    def before_write_edits(self) -> None:
        """Called before a journal() batch is written (HDFS-17710's writeEdits hook)."""
