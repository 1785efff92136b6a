"""The checks every call of a Journal makes, and the state changes its parts share.

:class:`JournalChecks` is the one place of checkRequest (digest §2) and its effects
(the promise, the IPC serial, the committed txid), of the formatted and writable
checks, and of the few changes of :class:`~hadoop_qjm.qjournal.server.journal_state.JournalState`
that the Journal, its write path and its recovery all make: aborting the open segment,
stopping the journal after a storage failure, moving the highest written txid,
forgetting the edits cache. Every method runs with the journal's lock held.
:class:`JournalCore` bundles what every part of a Journal is built with.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.ipc.call_context import remote_ip
from hadoop_qjm.qjournal.protocol import rules
from hadoop_qjm.qjournal.protocol.exceptions import JournalNotFormattedException
from hadoop_qjm.qjournal.protocol.messages import RequestInfo
from hadoop_qjm.qjournal.server.jn_storage import JNStorage
from hadoop_qjm.qjournal.server.journal_format_guard import WriterWatch
from hadoop_qjm.qjournal.server.journal_state import JournalState
from hadoop_qjm.qjournal.server.journaled_edits_cache import JournaledEditsCache

__all__ = ["JournalChecks", "JournalCore"]


class JournalChecks:
    """The shared checks and state changes of one journal (lock held for each).

    ``storage`` is the journal's; ``state`` the :class:`JournalState` every part shares;
    ``writer_watch`` learns of every writer call that passes the epoch check; ``conf``
    configures a new edits cache; ``log`` carries the journal id.
    """

    def __init__(
        self,
        conf,  # noqa: ANN001 - a Configuration or None
        journal_id: str,
        storage: JNStorage,
        state: JournalState,
        writer_watch: WriterWatch,
        log: logging.LoggerAdapter,
    ) -> None:
        self._conf = conf
        self._journal_id = journal_id
        self._storage = storage
        self._state = state
        self._writer_watch = writer_watch
        self._log = log

    # ---- checks ---------------------------------------------------------------------------------
    def check_formatted(self) -> None:
        if not self._storage.is_formatted():
            raise JournalNotFormattedException(
                f"Journal {self._storage} not formatted ; journal id: {self._journal_id}"
            )
        if self._state.pre_upgraded:
            raise IOException(
                f"Journal {self._journal_id} is being upgraded (doPreUpgrade done, doUpgrade "
                "not yet): it takes no other call; restarting the JournalNode undoes the "
                "pre-upgrade"
            )

    def check_writable(self) -> None:
        failure = self._state.storage_failure
        if failure is not None:
            raise IOException(
                f"Journal {self._journal_id} stopped accepting writes after a storage failure "
                f"({failure}); restart the JournalNode"
            )

    def check_request(self, req: RequestInfo) -> None:
        """Epoch promise, IPC serial and committed txid (digest §2 checkRequest)."""
        state = self._state
        decision = rules.check_request(
            rules.EpochState(
                state.last_promised_epoch.get(),
                state.current_epoch_ipc_serial,
                state.committed_txn_id.get(),
            ),
            req,
            client=remote_ip(),
        )
        self.apply_request(decision, req.epoch)

    def apply_request(self, decision: rules.EpochDecision, epoch: int) -> None:
        """Apply checkRequest's ``decision`` for a call of ``epoch``, in Hadoop's order: a
        newer promise, the serial and committed txid, then the rejection, if any; an
        accepted call's writer is seen by the format guard."""
        if decision.promise_epoch is not None:
            # A newer writer has arrived: the promise fences every older one.
            self.promise(decision.promise_epoch)
        self.take_request_effects(decision.ipc_serial, decision.committed_txid)
        decision.raise_if_rejected()
        self._writer_watch.saw_writer(epoch)

    def check_write_request(self, req: RequestInfo) -> None:
        self.check_request(req)
        rules.check_writer_epoch(req.epoch, self._state.last_writer_epoch.get(), self._journal_id)

    # ---- checkRequest's effects -----------------------------------------------------------------
    def take_request_effects(self, ipc_serial: int | None, committed_txid: int | None) -> None:
        """checkRequest's effects after the promise, in its order: the new IPC serial, then
        the committed txid (None: keep either). Every caller (:meth:`check_request`, the
        writer's next batch, ``journal_step.Ready``) changes them only here."""
        state = self._state
        if ipc_serial is not None:
            state.current_epoch_ipc_serial = ipc_serial
        if committed_txid is not None and committed_txid != state.committed_txn_id.get():
            # Unchanged (a writer's heartbeat, a retry): nothing to write. Written at most
            # every COMMITTED_TXID_WRITE_INTERVAL_S (docs/journalnode.md).
            state.committed_txn_id.set_lazily(committed_txid)

    def promise(self, epoch: int) -> None:
        """Promise ``epoch`` (already checked to be newer): persist it, accept any serial
        next, and forget the cache, whose tail the new writer may cut."""
        state = self._state
        self._log.info(
            "Updating lastPromisedEpoch from %d to %d", state.last_promised_epoch.get(), epoch
        )
        state.last_promised_epoch.set(epoch)
        state.current_epoch_ipc_serial = rules.INITIAL_IPC_SERIAL
        self.drop_edits_cache()

    # ---- shared state changes -------------------------------------------------------------------
    def drop_edits_cache(self) -> None:
        """Forget every cached batch. Done whenever what the cache holds may no longer be
        this node's committed history: a newer writer's promise (the open segment's tail
        may be cut or replaced by its recovery), a segment installed by acceptRecovery
        (another writer's copy), a discard, a format. The cache then refills from the next
        writer's batches; a reader asking for older txns misses and reads the segment
        files instead. (Hadoop keeps the cache across all of these, so a standby could be
        served a fenced writer's uncommitted txns.)"""
        state = self._state
        if state.cache is not None:
            epoch = state.last_promised_epoch.get() if self._storage.is_formatted() else 0
            state.cache = JournaledEditsCache(self._conf, writer_epoch=epoch)

    def abort_cur_segment(self) -> None:
        state = self._state
        if state.cur_segment is None:
            return
        try:
            state.cur_segment.abort()
        except OSError as e:
            self._log.warning("Unable to abort segment %d: %s", state.cur_segment_txid, e)
        state.forget_open_segment()
        state.next_txid = INVALID_TXID

    def fail_storage(self, what: str) -> None:
        """After a failed write or fsync nothing more may be acknowledged (``journal.py``'s
        module doc)."""
        self._log.error("Storage failure %s: this journal stops accepting writes", what)
        self._state.storage_failure = what
        self._state.drop_kept()  # what the file holds after a failed write is unknown
        self.abort_cur_segment()

    def update_highest_written_txid(self, txid: int) -> None:
        self._state.highest_written_txid = txid
        self._storage.fjm.last_readable_txid = txid


@dataclass(frozen=True, slots=True, eq=False)
class JournalCore:
    """What every part of one Journal works on: its id (in messages), its lock (held for
    every change), its storage, the :class:`JournalState` they share, the shared
    :class:`JournalChecks` and its log."""

    journal_id: str
    lock: threading.RLock
    storage: JNStorage
    state: JournalState
    checks: JournalChecks
    log: logging.LoggerAdapter
