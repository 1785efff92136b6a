"""The membership record of one journal on a JournalNode (``current/membership``).

The I/O edge of ``protocol/membership.py``: reads the record once, replaces it
durably (write temp → fsync → rename → fsync dir; the rename is the commit
point, with the fault hooks of :class:`~hadoop_qjm.common.durable.AtomicFileWriter`
on both sides) and only by a legal successor, and applies the node's check to
a writer's ``newEpoch``. Design and safety argument: docs/journalnode.md,
"Online, by joint consensus: the design".

The caller (the Journal) holds the journal's lock and has checked that the
journal is formatted and the writer's epoch, as for every mutation (STYLE.md
habit 3).
"""

from __future__ import annotations

import os
from pathlib import Path

from hadoop_qjm.common.durable import CommitHook, FsyncFunction, atomic_replace
from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.qjournal.protocol import membership
from hadoop_qjm.qjournal.protocol.exceptions import JournalMembershipException
from hadoop_qjm.qjournal.protocol.membership import Config, MembershipRecord

__all__ = ["JournalMembership", "MEMBERSHIP_FILE"]

MEMBERSHIP_FILE = "membership"

_HEADER = (
    "# The JournalNode set of this journal (docs/journalnode.md, "
    '"Growing and shrinking the set"). Written by the writer; do not edit.\n'
)


class JournalMembership:
    """``current/membership`` of one journal: absent until the first set change."""

    def __init__(
        self,
        current_dir: str | os.PathLike[str],
        journal_id: str,
        *,
        fsync: FsyncFunction = os.fsync,
        hook: CommitHook | None = None,
    ) -> None:
        self.path = Path(current_dir) / MEMBERSHIP_FILE
        self.journal_id = journal_id
        self._fsync = fsync
        self._hook = hook
        self._record: MembershipRecord | None = None
        self._loaded = False

    @property
    def record(self) -> MembershipRecord | None:
        """The record on disk (read once; None if the set never changed)."""
        if not self._loaded:
            try:
                text = self.path.read_text(encoding="utf-8")
            except FileNotFoundError:
                self._record = None
            else:
                try:
                    self._record = MembershipRecord.parse(text)
                except IllegalArgumentException as e:
                    # A damaged record must not read as "never changed": that would
                    # let an old writer in. Refuse until an operator looks.
                    raise JournalMembershipException(
                        f"{self.path} is damaged ({e}); restore it from a peer"
                    ) from None
            self._loaded = True
        return self._record

    def set(self, proposed: MembershipRecord, writer_epoch: int | None = None) -> None:
        """Replace the record by ``proposed`` if it is a legal successor; durable on return.

        ``writer_epoch``: the epoch of the (epoch-checked) call; a writer may only
        write records of its own epoch, so a record's epoch names who decided it.
        """
        if writer_epoch is not None and proposed.epoch != writer_epoch:
            raise JournalMembershipException(
                f"the record {proposed} is not of the writer's epoch {writer_epoch}; "
                f"journal id: {self.journal_id}"
            )
        current = self.record
        if current == proposed:
            return  # a retried call: already durable
        reason = membership.check_successor(current, proposed)
        if reason is not None:
            raise JournalMembershipException(f"{reason}; journal id: {self.journal_id}")
        atomic_replace(
            self.path,
            (_HEADER + proposed.to_text()).encode("utf-8"),
            fsync=self._fsync,
            hook=self._hook,
        )
        self._record = proposed

    def catch_up(self, record: MembershipRecord, writer_config: str | None) -> None:
        """Take ``record`` (the one a writer follows, sent with its newEpoch) if it is a
        newer legal successor of this node's and names the writer's configuration; else
        keep this node's (the check that follows decides)."""
        if writer_config is None or record.config.to_text() != writer_config:
            return
        current = self.record
        if current is not None and record.key <= current.key:
            return
        if membership.check_successor(current, record) is None:
            self.set(record)

    def check_writer(self, writer_config: Config | None) -> None:
        """Raise JournalMembershipException if this node may not promise an epoch to a
        writer using ``writer_config`` (None: a client that sends none, as Hadoop's)."""
        reason = membership.check_writer(self.record, writer_config, self.journal_id)
        if reason is not None:
            raise JournalMembershipException(reason)

    def forget(self) -> None:
        """The journal was (re)formatted: its ``current/`` is new, read the record again."""
        self._loaded = False
        self._record = None
