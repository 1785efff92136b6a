"""The mutable state of one Journal, in one object (issue 34, item 1).

:class:`JournalState` is what the Journal's calls read and change: its promises and the
committed txid (files under ``current/``), the open segment and its txids, the kept scan
state of that segment, the highest written txid, the IPC serial, the storage failure
that stops the journal, the edits cache and the long poll's condition. The Journal and
its collaborators (``JournalChecks``, ``JournalWritePath``, ``JournalReads``,
``JournalRecovery``) share one instance, and change it only under the journal's lock
(the long poll's fields under ``written``, which a waiter takes without the journal's).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.durable import BestEffortLongFile, PersistentLongFile
from hadoop_qjm.qjournal.protocol import rules
from hadoop_qjm.qjournal.protocol.journal_step import WriterState
from hadoop_qjm.qjournal.server.journal_membership import JournalMembership

if TYPE_CHECKING:
    from hadoop_qjm.editlog.edit_log_file_output_stream import EditLogFileOutputStream
    from hadoop_qjm.qjournal.server.journaled_edits_cache import JournaledEditsCache
    from hadoop_qjm.qjournal.server.kept_segment_state import KeptSegmentState

__all__ = [
    "COMMITTED_TXID_FILENAME",
    "COMMITTED_TXID_WRITE_INTERVAL_S",
    "LAST_PROMISED_FILENAME",
    "LAST_WRITER_EPOCH",
    "JournalState",
]

LAST_PROMISED_FILENAME = "last-promised-epoch"
LAST_WRITER_EPOCH = "last-writer-epoch"
COMMITTED_TXID_FILENAME = "committed-txid"
#: The committed-txid file is rewritten at most this often while calls carry a newer
#: value; always when a segment is finalized and when the journal closes, and at once
#: when discardSegments lowers it. Hadoop rewrites it on every call that moves it; it
#: is a hint read as a lower bound either way (docs/journalnode.md, "committed-txid").
COMMITTED_TXID_WRITE_INTERVAL_S = 0.1


def _new_condition() -> threading.Condition:
    return threading.Condition(threading.Lock())


@dataclass(eq=False)
class JournalState:
    """One journal's mutable state (see the module doc); built by :meth:`load`."""

    last_promised_epoch: PersistentLongFile
    last_writer_epoch: PersistentLongFile
    committed_txn_id: BestEffortLongFile
    membership: JournalMembership
    #: The open segment (None: none), its first txid and layout, the txid it expects next.
    cur_segment: EditLogFileOutputStream | None = None
    cur_segment_txid: int = INVALID_TXID
    cur_segment_layout_version: int = 0
    next_txid: int = INVALID_TXID
    highest_written_txid: int = 0
    #: Journal.java's in-memory ``currentEpochIpcSerial``.
    current_epoch_ipc_serial: int = rules.INITIAL_IPC_SERIAL
    last_journal_timestamp_ms: int = 0
    #: What failed (a write, an fsync): set, the journal accepts no more writes.
    storage_failure: str | None = None
    #: doPreUpgrade done, doUpgrade not yet: the journal takes no other call (journal_upgrade).
    pre_upgraded: bool = False
    #: What a scan of the open (or last scanned) in-progress segment would find (issue 25).
    kept: KeptSegmentState | None = None
    #: Recent batches for getJournaledEdits (``dfs.ha.tail-edits.in-progress``), or None.
    cache: JournaledEditsCache | None = None
    #: getJournaledEdits long polls wait on this for a batch past their txid.
    written: threading.Condition = field(default_factory=_new_condition)
    edit_waiters: int = 0
    closed: bool = False

    @classmethod
    def load(cls, current: Path, journal_id: str) -> JournalState:
        """The state of the journal whose ``current/`` directory is ``current``."""
        return cls(*_files(current, journal_id))

    def reload(self, current: Path, journal_id: str) -> None:
        """Open the promise, committed-txid and membership files again (after a format),
        closing the committed-txid file open now."""
        self.committed_txn_id.close()
        (
            self.last_promised_epoch,
            self.last_writer_epoch,
            self.committed_txn_id,
            self.membership,
        ) = _files(current, journal_id)

    def writer_state(self) -> WriterState:
        """What ``journal_step.step`` checks a ``journal`` call against."""
        return WriterState(
            self.last_promised_epoch.get(),
            self.current_epoch_ipc_serial,
            self.committed_txn_id.get(),
            self.last_writer_epoch.get(),
            self.cur_segment_txid if self.cur_segment is not None else None,
            self.next_txid,
        )

    def forget_open_segment(self) -> None:
        """No segment is open any more (closed by a finalize, which leaves ``next_txid``
        where writing stopped; an abort resets that too)."""
        self.cur_segment = None
        self.cur_segment_txid = INVALID_TXID
        self.cur_segment_layout_version = 0

    def drop_kept(self, segment_txid: int | None = None) -> None:
        """Forget the kept state (of ``segment_txid`` only, when given): its file changed."""
        if self.kept is not None and segment_txid in (None, self.kept.start_txid):
            self.kept = None


def _files(
    current: Path, journal_id: str
) -> tuple[PersistentLongFile, PersistentLongFile, BestEffortLongFile, JournalMembership]:
    return (
        PersistentLongFile(current / LAST_PROMISED_FILENAME, 0),
        PersistentLongFile(current / LAST_WRITER_EPOCH, 0),
        BestEffortLongFile(
            current / COMMITTED_TXID_FILENAME, INVALID_TXID, COMMITTED_TXID_WRITE_INTERVAL_S
        ),
        JournalMembership(current, journal_id),
    )
