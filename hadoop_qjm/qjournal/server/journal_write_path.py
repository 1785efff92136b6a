"""The write path of a Journal: startLogSegment, the batches, finalizeLogSegment.

Every batch, whichever call brings it, is written by one path,
:meth:`JournalWritePath._write_group_locked`: write → fsync → publish → acknowledge, a
single call being a group of one (etcd-io/raft's ``Ready``: state persisted before the
acknowledgement goes out). Every ``journal`` call is decided by the pure
``journal_step.step``: the writer's next batch (a ``Ready``), or any other call (a
``Decision``: a newer epoch to promise, a rejection with Hadoop's exception and message,
every check of digest §2). A failed write or fsync stops the journal (see
``journal.py``'s module doc).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, INVALID_TXID
from hadoop_qjm.common.exceptions import (
    IllegalArgumentException,
    IllegalStateException,
    IOException,
)
from hadoop_qjm.ipc.call_context import remote_ip
from hadoop_qjm.qjournal.protocol import journal_step, recovery_rules, rules
from hadoop_qjm.qjournal.protocol.exceptions import JournalOutOfSyncException
from hadoop_qjm.qjournal.protocol.journal_call import JournalCall
from hadoop_qjm.qjournal.protocol.messages import RequestInfo
from hadoop_qjm.qjournal.server.journal_checks import JournalCore
from hadoop_qjm.qjournal.server.journal_faults import JournalFaultInjector
from hadoop_qjm.qjournal.server.journal_format_guard import WriterWatch
from hadoop_qjm.qjournal.server.journal_metrics import JournalMetrics
from hadoop_qjm.qjournal.server.journal_recovery import (
    SegmentScanner,
    persisted_paxos_data,
    purge_paxos_decision,
    scan_segment_state,
    segment_md5,
)
from hadoop_qjm.qjournal.server.kept_segment_state import after_append
from hadoop_qjm.qjournal.server.segment_md5 import write_md5_before_rename

__all__ = ["WARN_SYNC_MILLIS_THRESHOLD", "JournalWritePath"]

#: A batch whose fsync takes longer than this is logged (Hadoop: WARN_SYNC_MILLIS_THRESHOLD).
WARN_SYNC_MILLIS_THRESHOLD = 1000


class JournalWritePath:
    """The write path of one journal: ``journal`` and the writer's next batches,
    startLogSegment, finalizeLogSegment.

    Built with the journal's ``core`` (lock, storage, state, checks), the ``scanner`` of
    in-progress segments (and the kept state it keeps), the journal's ``metrics``, the
    ``fault`` hooks, the ``writer_watch`` (told of a started segment) and the ``clock``
    (LastJournalTimestamp).
    """

    def __init__(
        self,
        core: JournalCore,
        scanner: SegmentScanner,
        metrics: JournalMetrics,
        fault: JournalFaultInjector,
        writer_watch: WriterWatch,
        clock: Callable[[], float],
    ) -> None:
        self._lock, self._state, self._checks = core.lock, core.state, core.checks
        self._storage, self._fjm, self._log = core.storage, core.storage.fjm, core.log
        self._journal_id = core.journal_id
        self._metrics = metrics
        self._scanner = scanner
        self._writer_watch = writer_watch
        self._fault = fault
        self._clock = clock

    def journal(
        self, req: RequestInfo, segment_txid: int, first_txid: int, num_txns: int, records: bytes
    ) -> None:
        """Append a batch of serialized ops to the open segment; durable on return.

        The general path: any call, decided by ``journal_step.step`` (the writer's next
        batch, a newer writer's promise, a rejection), its effects applied, then its
        batch written by :meth:`_write_group_locked`, a group of one. The writer's next
        batch usually comes through :meth:`journal_in_order_group` instead.
        """
        with self._lock:
            self._checks.check_formatted()
            self._checks.check_writable()
            call = journal_step.BatchCall(
                *rules.request_numbers(req), segment_txid, first_txid, num_txns
            )
            outcome = journal_step.step(
                self._state.writer_state(),
                call,
                self._journal_id,
                client=remote_ip(),
                request_journal_id=req.journal_id,
            )
            batch = self._apply_step(outcome, req.epoch)
            if batch is None:
                return
            self._fault.before_write_edits()
            first, last, must_sync = batch
            _, error = self._write_group_locked(
                ((first, last, records, not must_sync),), None, alone=True
            )
            if error is not None:
                raise error

    def _apply_step(
        self, outcome: journal_step.Ready | journal_step.Decision, epoch: int
    ) -> journal_step.Batch | None:
        """Apply a ``journal`` call's step (lock held) in checkRequest's and journal()'s
        order, raising its rejection; the batch to write, None if none."""
        checks = self._checks
        if isinstance(outcome, journal_step.Ready):
            checks.take_request_effects(outcome.state.ipc_serial, outcome.committed_txid)
            self._writer_watch.saw_writer(epoch)
            return journal_step.Batch(outcome.first_txid, outcome.last_txid, outcome.must_sync)
        if outcome.request is not None:
            checks.apply_request(outcome.request, epoch)
        if outcome.abort_segment:
            # The writer missed a finalize and a start: stop writing this segment.
            checks.abort_cur_segment()
        if outcome.error is not None:
            raise outcome.error
        return outcome.batch

    def journal_in_order(
        self,
        epoch: int,
        ipc_serial: int,
        committed_txid: int,
        segment_txid: int,
        first_txid: int,
        num_txns: int,
        records: bytes | memoryview,
        acknowledge: Callable[[], None] | None = None,
    ) -> bool:
        """:meth:`journal` for the common case: :meth:`journal_in_order_group` with a
        group of one; False if it is not that case.

        The request comes as its epoch, IPC serial and committed txid
        (INVALID_TXID: none), ``rules.request_numbers``. The common case
        (``journal_step.step``): the writer of the open segment sends its next
        batch. Then every check of :meth:`journal` passes and this has the same
        effects. In any other case it returns False having changed nothing, and the
        caller runs :meth:`journal`, which decides (promises a newer epoch, or
        rejects the call with the usual exception).

        ``acknowledge`` (the RPC server's reply) runs the moment the batch is
        durable and in the journal's state (next txid, highest written txid, edit
        cache), before the metrics count it: whatever runs first after a wait for
        the disk runs slowly on a small machine, and the writer waits only for the
        acknowledgement. It must not block. A metrics reader that saw the
        acknowledgement still sees the batch counted (:attr:`JournalMetrics.batch_lock`).
        """
        with self._lock:
            state = self._state
            if state.storage_failure is not None or not self._storage.is_formatted():
                return False
            # _in_order_batches for a group of one, without the generator: the step, then
            # checkRequest's effects and the write hook (an error there is the call's).
            ready = journal_step.step(
                state.writer_state(),
                journal_step.BatchCall(
                    epoch, ipc_serial, committed_txid, segment_txid, first_txid, num_txns
                ),
            )
            if type(ready) is not journal_step.Ready:
                return False  # not the writer's next batch: the caller serves it by journal()
            self._checks.take_request_effects(ready.state.ipc_serial, ready.committed_txid)
            self._fault.before_write_edits()
            _, error = self._write_group_locked(
                ((ready.first_txid, ready.last_txid, records, not ready.must_sync),),
                None if acknowledge is None else lambda _count: acknowledge(),
                alone=True,
            )
        if error is not None:
            raise error
        return True

    def journal_in_order_group(
        self,
        calls: Sequence[JournalCall],
        acknowledge: Callable[[int], None] | None = None,
    ) -> list[Exception | None]:
        """:meth:`journal_in_order` for several calls read together off one connection (a
        writer's pipelined syncs), with one fsync for all of them: the group fsync
        (docs/journalnode.md; not Hadoop's, which fsyncs once per call).

        Takes the longest prefix of ``calls`` that are each the writer's next batch
        (``journal_step.step``, against the state the batches before it left), writes
        them in order, fdatasyncs once, and only then puts them in the journal's state
        for readers (highest written txid, edit cache) and acknowledges them:
        ``acknowledge(n)`` sends the first n calls' replies (it must not block), as in
        :meth:`journal_in_order`. Returns one outcome per call it handled, in order:
        None (durable), or the exception for that call's error reply. A call that is not
        the in-order case ends the group before anything of it is done (it is not in the
        list; the caller serves it alone, by :meth:`journal`, which decides). A failing
        fault hook ends the group with that call's error (its checkRequest effects
        applied, as :meth:`journal` leaves them) after the calls before it are synced. A
        failed write or fsync fails every call of the group and stops the journal
        (:meth:`JournalChecks.fail_storage`): none of them is acknowledged.
        """
        failed: list[Exception] = []
        with self._lock:
            if self._state.storage_failure is not None or not self._storage.is_formatted():
                return []
            numbers = (
                (
                    journal_step.BatchCall(
                        call.epoch,
                        call.ipc_serial_number,
                        INVALID_TXID if call.committed_txid is None else call.committed_txid,
                        call.segment_txid,
                        call.first_txid,
                        call.num_txns,
                    ),
                    call.records,
                )
                for call in calls
            )
            count, error = self._write_group_locked(
                self._in_order_batches(numbers, failed), acknowledge
            )
        if error is not None:
            return [error] * count
        return [None] * count + failed

    def _in_order_batches(
        self,
        calls: Iterable[tuple[journal_step.BatchCall, bytes | memoryview]],
        failed: list[Exception],
    ) -> Iterator[tuple[int, int, bytes | memoryview, bool]]:
        """The batches of the longest prefix of ``calls`` that are each the writer's next
        (lock held), stepped one by one as the writer takes them, each call's effects
        applied before its batch is handed on; a call whose effects or write hook fail
        ends them, its exception appended to ``failed``."""
        state = self._state.writer_state()
        for call, records in calls:
            ready = journal_step.step(state, call)
            if not isinstance(ready, journal_step.Ready):
                return  # not the writer's next batch: the caller serves it by journal()
            try:
                # checkRequest's effects, in its order, then the write hook (as journal()).
                self._checks.take_request_effects(ready.state.ipc_serial, ready.committed_txid)
                self._fault.before_write_edits()
            except Exception as e:  # noqa: BLE001 - that call's error reply
                failed.append(e)
                return
            state = ready.state
            yield ready.first_txid, ready.last_txid, records, not ready.must_sync

    def _write_group_locked(
        self,
        batches: Iterable[tuple[int, int, bytes | memoryview, bool]],
        acknowledge: Callable[[int], None] | None,
        *,
        alone: bool = False,
    ) -> tuple[int, IOException | None]:
        """The one write path (lock held): write → fsync → publish → acknowledge.

        Appends each checked batch ``(first txid, last txid, records, lagging)`` to the
        open segment in order (a batch is taken from ``batches`` only after the one
        before it is written, so its checks see the next txid that one left), fdatasyncs
        once unless every batch is one the quorum already committed (lagging), and only
        then publishes them (:meth:`_publish_locked`) and acknowledges them.
        Returns how many batches were taken, and None; or, when a write or the fsync
        failed, that count and the IOException every one of them fails with: nothing of
        the group is durable, and the journal stops (:meth:`JournalChecks.fail_storage`).
        ``alone``: ``batches`` is one batch (a call served by itself), written and
        fdatasynced by one call to the segment.
        """
        state = self._state
        segment = state.cur_segment
        written: list[tuple[int, int, bytes | memoryview, int, bool]] = []
        must_sync = False
        started = time.perf_counter()
        try:
            for first_txid, last_txid, records, lagging in batches:
                # The next batch's continuity check needs the next txid now; readers
                # learn of the batch only once it is durable (below).
                written.append((first_txid, last_txid, records, segment.position, lagging))
                must_sync = must_sync or not lagging
                segment.write_batch(records, alone and must_sync)
                state.next_txid = last_txid + 1
            if must_sync and not alone:
                segment.sync()
        except OSError as e:  # a write or the fsync: nothing of the group is durable
            first, last = written[0][0], written[-1][1]
            self._checks.fail_storage(f"writing txns {first}-{last}: {e}")
            error = IOException(f"Failed to write txns {first}-{last}: {e}")
            error.__cause__ = e
            return len(written), error
        if written:
            self._publish_locked(written, must_sync, time.perf_counter() - started, acknowledge)
        return len(written), None

    def _publish_locked(
        self,
        written: list[tuple[int, int, bytes | memoryview, int, bool]],
        fsynced: bool,
        seconds: float,
        acknowledge: Callable[[int], None] | None,
    ) -> None:
        """A group's batches are on disk (``fsynced``: by one fsync): tell readers,
        acknowledge them all, count each batch with the group's write+fsync time."""
        state = self._state
        cache = state.cache
        if cache is not None:
            # In the cache before the highest txid says it is there (getJournaledEdits
            # reads that first, without the lock).
            for first_txid, last_txid, records, _, _ in written:
                cache.store_edits(records, first_txid, last_txid, state.cur_segment_layout_version)
        self._checks.update_highest_written_txid(state.next_txid - 1)
        metrics = self._metrics
        sync_micros = seconds * 1e6
        with metrics.batch_lock:
            try:
                if acknowledge is not None:
                    acknowledge(len(written))  # durable and in the journal's state
            finally:
                for first_txid, last_txid, records, _, lagging in written:
                    num_txns = last_txid - first_txid + 1
                    metrics.batch_written(num_txns, len(records), lagging, sync_micros, False)
                if fsynced:
                    metrics.batches_fsynced()
                state.last_journal_timestamp_ms = int(self._clock() * 1000)
        # After the acknowledgement (the writer does not wait for it), under the lock (no
        # reader sees the state between the write and this).
        kept = state.kept
        if kept is not None and kept.start_txid == state.cur_segment_txid:
            for _, _, records, position, _ in written:
                kept = after_append(kept, position, records)
            state.kept = kept
        if state.edit_waiters:
            with state.written:
                state.written.notify_all()
        if sync_micros > WARN_SYNC_MILLIS_THRESHOLD * 1000:
            if len(written) == 1:
                how = ""
            else:
                how = f" ({len(written)} batches)"
            self._log.warning(
                "Sync of transaction range %d-%d%s took %dms",
                written[0][0],
                state.next_txid - 1,
                how,
                sync_micros / 1000,
            )

    def _checked_md5(self, start_txid: int, end_txid: int) -> str | None:
        """The md5 of the closed open segment ``[start_txid, end_txid]`` if every byte of
        it was checked as it was written (its kept state says so and describes exactly
        the file as closed); else None."""
        kept = self._state.kept
        if (
            kept is None
            or not kept.checked_from_start
            or kept.start_txid != start_txid
            or kept.last_txid != end_txid
        ):
            return None
        try:
            size = os.stat(self._storage.in_progress_edit_log(start_txid)).st_size
        except OSError:
            return None
        return kept.md5_hex if size == kept.valid_length else None

    def _keep_md5(self, start_txid: int, end_txid: int, md5_hex: str | None) -> None:
        """Keep ``md5_hex`` beside the segment about to be finalized (or remove a stale
        one); a failure costs only the md5 (receivers then check every op), never the
        finalize."""
        final = self._storage.finalized_edit_log(start_txid, end_txid)
        try:
            write_md5_before_rename(final, md5_hex)
        except OSError as e:
            self._log.warning("Not keeping the md5 of %s: %s", final.name, e)
            with contextlib.suppress(OSError):
                write_md5_before_rename(final, None)

    def start_log_segment(
        self, req: RequestInfo, txid: int, layout_version: int | None = None
    ) -> None:
        """Open ``edits_inprogress_<txid>``; the caller becomes the writer of its epoch."""
        if layout_version is None:
            layout_version = CURRENT_LAYOUT_VERSION
        state = self._state
        with self._lock:
            self._checks.check_formatted()
            self._checks.check_writable()
            self._checks.check_request(req)
            if state.cur_segment is not None:
                self._log.warning(
                    "Client is requesting a new log segment %d though we are already writing %s. "
                    "Aborting the current segment in order to begin the new one.",
                    txid,
                    state.cur_segment,
                )
                self._checks.abort_cur_segment()
            existing = self._fjm.get_log_file(txid)
            if existing is not None:
                if not existing.is_in_progress:
                    raise IllegalStateException(
                        f"Already have a finalized segment {existing} beginning at {txid}"
                    )
                existing.scan_log()
                if not rules.may_replace_in_progress_segment(
                    existing.first_txid, existing.last_txid, existing.unscannable_layout
                ):
                    raise IllegalStateException(
                        f"The log file {existing} seems to contain valid transactions"
                    )
            if state.last_writer_epoch.get() != req.epoch:
                self._log.info(
                    "Updating lastWriterEpoch from %d to %d",
                    state.last_writer_epoch.get(),
                    req.epoch,
                )
                state.last_writer_epoch.set(req.epoch)
            # A new segment at this txid supersedes any recovery decided for it.
            purge_paxos_decision(self._storage, txid)
            state.drop_kept(txid)
            try:
                state.cur_segment = self._fjm.start_log_segment(txid, layout_version)
            except OSError as e:
                self._checks.fail_storage(f"creating segment {txid}: {e}")
                raise
            if self._scanner.enabled:
                # A new file holds only its header: its scan costs nothing.
                kept = scan_segment_state(self._storage.in_progress_edit_log(txid), txid)
                if kept is not None:
                    kept.checked_from_start = True  # its header, just checked by the scan
                state.kept = kept
            state.cur_segment_txid = txid
            state.cur_segment_layout_version = layout_version
            state.next_txid = txid
            self._writer_watch.segment_started()

    def finalize_log_segment(self, req: RequestInfo, start_txid: int, end_txid: int) -> None:
        """Make ``[start_txid, end_txid]`` a finalized segment (exactly its txns, no padding)."""
        state = self._state
        with self._lock:
            self._checks.check_formatted()
            self._checks.check_writable()
            self._checks.check_request(req)
            needs_validation = True
            checked_md5 = None
            if start_txid == state.cur_segment_txid:
                # Check before closing (Hadoop closes first): a rejected finalize must leave
                # the file byte-identical, so it only drops the open segment, as Hadoop does.
                try:
                    rules.check_finalize_current(
                        state.next_txid,
                        end_txid,
                        start_txid=start_txid,
                        journal_id=self._journal_id,
                    )
                except JournalOutOfSyncException:
                    self._checks.abort_cur_segment()
                    raise
                if state.cur_segment is not None:
                    try:
                        state.cur_segment.close()  # truncates the padding, fsyncs
                    except OSError as e:
                        self._checks.fail_storage(f"closing segment {start_txid}: {e}")
                        raise
                    checked_md5 = self._checked_md5(start_txid, end_txid)
                    state.cur_segment = None
                    state.cur_segment_txid = INVALID_TXID
                    state.cur_segment_layout_version = 0
                needs_validation = False
            elf = self._fjm.get_log_file(start_txid)
            if elf is None:
                raise JournalOutOfSyncException(
                    f"No log file to finalize at transaction ID {start_txid} ; journal id: {self._journal_id}"
                )
            if elf.is_in_progress:
                truncate_to = None
                if needs_validation:
                    self._log.info("Validating log segment %s about to be finalized", elf.path)
                    kept = self._scanner.scan_in_progress(elf)
                    if elf.last_txid != end_txid:
                        raise JournalOutOfSyncException(
                            f"Trying to finalize in-progress log segment {start_txid} to end at txid "
                            f"{end_txid} but log {elf.path} on disk only contains up to txid "
                            f"{elf.last_txid} ; journal id: {self._journal_id}"
                        )
                    # A copy that differs from the one this node accepted in recovery must
                    # never be finalized (the finalized copies must agree everywhere).
                    accepted = persisted_paxos_data(self._storage, start_txid)
                    if accepted is not None and accepted.segment_state.md5 is not None:
                        digest = (
                            kept.md5_hex
                            if kept is not None
                            else segment_md5(elf.path, elf.valid_length)
                        )
                        if recovery_rules.finalize_copy_differs(accepted.segment_state.md5, digest):
                            raise JournalOutOfSyncException(
                                f"Trying to finalize log segment {start_txid} but the copy on "
                                f"disk (md5 {digest}) is not the one accepted in epoch "
                                f"{accepted.accepted_in_epoch} ({accepted.segment_state}) ; "
                                f"journal id: {self._journal_id}"
                            )
                    # A segment installed by recovery still carries its source's padding; the
                    # finalized copies of one segment must be byte-identical everywhere.
                    truncate_to = elf.valid_length
                state.drop_kept(start_txid)  # renamed (and cut) below: no longer open
                try:
                    # Before the rename, whose directory fsync makes both durable; a copy
                    # whose every op was not checked as it was written gets none.
                    self._keep_md5(start_txid, end_txid, checked_md5)
                    self._fjm.finalize_log_segment(start_txid, end_txid, truncate_to=truncate_to)
                except IllegalStateException as e:
                    if isinstance(e.__cause__, OSError):  # the disk failed, not the request
                        self._checks.fail_storage(f"finalizing segment {start_txid}: {e}")
                    raise
            elif end_txid != elf.last_txid:
                raise IllegalArgumentException(
                    f"Trying to re-finalize already finalized log {elf} with different endTxId {end_txid}"
                )
            # Once finalized, no other length can be decided: the paxos record is no longer needed.
            purge_paxos_decision(self._storage, elf.first_txid)
            # The writer pauses here (it rolls): the file catches up with the committed txid.
            state.committed_txn_id.flush()
