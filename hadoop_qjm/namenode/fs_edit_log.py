"""FSEditLog: transaction ids, segments and group commit (Hadoop's class of the name).

Writing (HDFS-1073 §1, §3):

* :meth:`FSEditLog.log_edit` gives ``op`` the next txid and buffers it in every journal's
  stream, under the edit log's lock (callers hold the namesystem lock too, so ops are
  logged in the order they are applied).
* :meth:`FSEditLog.log_sync` makes a txid durable. Hadoop's group commit: one thread at a
  time syncs. It swaps the double buffers under the lock (``set_ready_to_flush``), then
  flushes *without* the lock, so other handler threads keep logging into the other half;
  threads whose txid the running sync covers wait on a Condition and return when it is
  done; the next thread to find its txid unsynced flushes everything buffered meanwhile,
  so one flush covers a whole batch of threads. A thread returns only once its txid is
  durable on every required journal (and enough optional ones).
* Segments: :meth:`open_for_write` starts ``edits_inprogress_<last+1>`` with
  OP_START_LOG_SEGMENT; :meth:`end_current_log_segment` logs OP_END_LOG_SEGMENT, syncs and
  finalizes; :meth:`roll_edit_log` is both.

Failure: if the journals cannot sync (a required journal failed, or too few remain) the
NameNode must stop — otherwise a client would be told an edit is durable when it is not.
The ``terminate`` callback decides how (the daemon exits with status 1; tests record the
call); when it returns, the caller gets :class:`ExitException` with the same message, and
so does every later call: the edit log is dead.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, INVALID_TXID
from hadoop_qjm.common.exceptions import (
    ExitException,
    IllegalArgumentException,
    IllegalStateException,
    IOException,
    one_line_message,
    trace_if_bug,
)
from hadoop_qjm.conf.dfs_config_keys import (
    DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_DEFAULT,
    DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_KEY,
)
from hadoop_qjm.editlog.fs_edit_log_op import EndLogSegmentOp, FSEditLogOp, StartLogSegmentOp
from hadoop_qjm.editlog.redundant_edit_log_input_stream import RedundantEditLogInputStream
from hadoop_qjm.namenode.fs_edit_log_state import (  # noqa: F401 - re-exported
    EditLogState,
    EditLogStats,
    check_for_gaps,
)
from hadoop_qjm.namenode.journal_set import JournalSet, JournalSetFailure, JournalSetOutputStream

__all__ = [
    "FSEditLog",
    "EditLogState",
    "EditLogStats",
    "TerminateCallback",
    "terminate_process",
    "check_for_gaps",
]

LOG = logging.getLogger(__name__)

#: ``terminate(status, message)``: stop the NameNode (ExitUtil.terminate).
TerminateCallback = Callable[[int, str], None]


def terminate_process(status: int, message: str) -> None:
    """The default: log the reason, flush the logs and ``os._exit(status)`` at once.

    Like Hadoop's ExitUtil.terminate it does not unwind: no finally block may run and
    report success for an edit that never became durable.
    """
    LOG.critical("Terminating with status %d: %s", status, message)
    logging.shutdown()
    os._exit(status)


def _first_lines(error: BaseException, limit: int = 4) -> str:
    """The first lines of ``error``'s message (and its cause's), joined: the reason a
    terminated NameNode logs, e.g. the JournalNodes' "IPC's epoch 1 is less than ..."."""
    lines: list[str] = []
    seen = error
    while seen is not None and len(lines) < limit:
        lines.extend(line.strip() for line in str(seen).splitlines() if line.strip())
        seen = seen.__cause__
    return "; ".join(dict.fromkeys(lines[:limit])) or type(error).__name__


class FSEditLog:
    """The edit log of one NameNode over ``journal_set``."""

    def __init__(
        self,
        journal_set: JournalSet,
        *,
        terminate: TerminateCallback = terminate_process,
        on_segment_started: Callable[[int], None] | None = None,
        pipeline_depth: int = DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_DEFAULT,
    ) -> None:
        if pipeline_depth < 1:
            raise IllegalArgumentException(
                f"{DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_KEY} must be at least 1, "
                f"not {pipeline_depth}"
            )
        self.journal_set = journal_set
        #: The layout version of the segments it starts (the storage's: -67, or after
        #: ``namenode -upgrade`` the software's).
        self.layout_version = CURRENT_LAYOUT_VERSION
        #: Syncs that may be unacknowledged at once (1: Hadoop's double buffer).
        self.pipeline_depth = pipeline_depth
        if pipeline_depth > 1:
            LOG.info("Edit log syncs pipelined: up to %d in flight", pipeline_depth)
        self._terminate_callback = terminate
        #: Called with the first txid of every segment started (FSImage writes seen_txid).
        self.on_segment_started = on_segment_started
        self._lock = threading.RLock()
        self._cond = threading.Condition(self._lock)
        self._state = EditLogState.UNINITIALIZED
        self._txid = 0  # the last txid handed out
        self._synctxid = 0  # every txid up to here is durable
        #: Batches sealed and not yet acknowledged (at most ``pipeline_depth``), whether
        #: one is being sent right now, and the last txid of the newest sealed batch.
        self._in_flight = 0
        self._max_in_flight = 0
        self._sending = False
        self._sent_txid = 0
        self._auto_sync_scheduled = False
        self._ending_segment = False
        self._cur_segment_txid = INVALID_TXID
        self._stream: JournalSetOutputStream | None = None
        self._my_txid = threading.local()
        self._fatal: str | None = None
        self._num_txns = 0
        self._num_syncs = 0
        #: Why the last select_input_streams could not read a shared journal (one line).
        self.shared_read_error: str | None = None
        self._num_batched = 0

    # ---- state -----------------------------------------------------------------------------------
    @property
    def state(self) -> EditLogState:
        return self._state

    def is_open_for_write(self) -> bool:
        return self._state in (EditLogState.IN_SEGMENT, EditLogState.BETWEEN_LOG_SEGMENTS)

    def is_segment_open(self) -> bool:
        return self._state is EditLogState.IN_SEGMENT

    @property
    def last_written_txid(self) -> int:
        return self._txid

    @property
    def failure(self) -> str | None:
        """Why the edit log died (it could not make edits durable and terminated the
        NameNode), else None. A dead log refuses every call."""
        return self._fatal

    @property
    def synced_txid(self) -> int:
        """Every txid up to this one is durable."""
        return self._synctxid

    @property
    def my_last_txid(self) -> int:
        """The last txid the calling thread logged (0 if none): what log_sync() waits for."""
        return getattr(self._my_txid, "value", 0)

    @property
    def cur_segment_txid(self) -> int:
        with self._cond:
            if self._state is not EditLogState.IN_SEGMENT:
                raise IllegalStateException(f"Bad state: {self._state.value}")
            return self._cur_segment_txid

    def stats(self) -> EditLogStats:
        with self._cond:
            return EditLogStats(
                self._num_txns,
                self._num_syncs,
                self._num_batched,
                self._txid,
                self._synctxid,
                self._in_flight,
                self._max_in_flight,
            )

    def set_next_txid(self, next_txid: int) -> None:
        """The next txid to hand out (after loading the namespace up to ``next_txid - 1``)."""
        with self._cond:
            if not (self._synctxid <= self._txid and next_txid > self._txid):
                raise IllegalStateException(
                    f"May not decrease txid. synctxid={self._synctxid} txid={self._txid} "
                    f"nextTxId={next_txid}"
                )
            self._txid = next_txid - 1
            self._synctxid = self._sent_txid = self._txid

    # ---- life cycle ------------------------------------------------------------------------------
    def init_journals_for_write(self) -> None:
        with self._cond:
            self._check_state(EditLogState.UNINITIALIZED, EditLogState.OPEN_FOR_READING)
            self._state = EditLogState.BETWEEN_LOG_SEGMENTS

    def init_shared_journals_for_read(self) -> None:
        with self._cond:
            if self._state is EditLogState.UNINITIALIZED:
                self._state = EditLogState.OPEN_FOR_READING

    def recover_unclosed_streams(self, terminate_on_failure: bool = True) -> None:
        """Finalize what crashed writers left in progress in every journal.

        As in Hadoop, a journal that cannot recover is disabled and the failure is left
        for the next segment start to report; a *required* journal failing terminates.
        Without ``terminate_on_failure`` (a standby becoming active) a failure that leaves
        the log unwritable is raised instead (JournalSetFailure): nothing has been written
        yet, so the NameNode can go on as a standby and be asked again later.
        """
        with self._cond:
            self._check_state(EditLogState.BETWEEN_LOG_SEGMENTS)
            try:
                self.journal_set.recover_unfinalized_segments()
            except JournalSetFailure as e:
                if not terminate_on_failure:
                    raise
                if e.required:
                    self._die(str(e))
                LOG.error("Unable to recover unclosed segments: %s", e)

    def open_for_write(self, layout_version: int | None = None) -> None:
        """Start the segment at ``last_written_txid + 1``.

        Refuses if any journal already holds that txid: writing it again would fork the
        log (FSEditLog.openForWrite).
        """
        with self._cond:
            self._check_state(EditLogState.BETWEEN_LOG_SEGMENTS)
            segment_txid = self._txid + 1
            streams = self.journal_set.select_input_streams(segment_txid, in_progress_ok=True)
            if streams:
                names = ", ".join(s.name for s in streams)
                for s in streams:
                    s.close()
                raise IllegalStateException(
                    f"Cannot start writing at txid {segment_txid} when there is a stream "
                    f"available for read: {names}"
                )
            self.start_log_segment_and_write_header_txn(segment_txid, layout_version)

    def start_log_segment_and_write_header_txn(
        self, segment_txid: int, layout_version: int | None = None
    ) -> None:
        if layout_version is None:
            layout_version = self.layout_version
        with self._cond:
            self._check_alive()
            self._check_state(EditLogState.BETWEEN_LOG_SEGMENTS)
            if segment_txid != self._txid + 1:
                raise IllegalStateException(
                    f"Cannot start log segment at txid {segment_txid} when next expected "
                    f"{self._txid + 1}"
                )
            LOG.info("Starting log segment at %d", segment_txid)
            try:
                self._stream = self.journal_set.start_log_segment(segment_txid, layout_version)
            except JournalSetFailure as e:
                self._die(
                    f"Unable to start log segment {segment_txid}: too few journals "
                    "successfully started.",
                    e,
                )
            if self.pipeline_depth > 1:
                self._stream.set_pipeline_depth(self.pipeline_depth)
            self._cur_segment_txid = segment_txid
            self._state = EditLogState.IN_SEGMENT
            txid = self.log_edit(StartLogSegmentOp(0))
        self.log_sync(txid)
        if self.on_segment_started is not None:
            self.on_segment_started(segment_txid)

    def end_current_log_segment(self, write_end_txn: bool = True) -> int:
        """Log OP_END_LOG_SEGMENT, sync, finalize the segment; returns its last txid."""
        with self._cond:
            self._check_state(EditLogState.IN_SEGMENT)
            LOG.info("Ending log segment %d, %d", self._cur_segment_txid, self._txid)
            if write_end_txn:
                self.log_edit(EndLogSegmentOp(0))
            # Nothing may follow OP_END_LOG_SEGMENT: writers wait while the sync below
            # releases the lock (callers normally hold the namesystem lock as well).
            self._ending_segment = True
            try:
                self.log_sync_all()
                last_txid = self._txid
                try:
                    self.journal_set.finalize_log_segment(self._cur_segment_txid, last_txid)
                except JournalSetFailure as e:
                    self._die(
                        f"Unable to finalize log segment {self._cur_segment_txid}-{last_txid}: {e}",
                        e,
                    )
                self._stream = None
                self._state = EditLogState.BETWEEN_LOG_SEGMENTS
                return last_txid
            finally:
                self._ending_segment = False
                self._cond.notify_all()

    def roll_edit_log(
        self,
        layout_version: int | None = None,
        between: Callable[[], None] | None = None,
    ) -> int:
        """End the current segment and start the next; returns the new segment's first txid.

        ``between`` runs with no segment open (a JournalNode set change's step); the next
        segment starts whether it succeeded or not, and its error is raised after.
        """
        with self._cond:
            self.end_current_log_segment(True)
            next_txid = self._txid + 1
            try:
                if between is not None:
                    between()
            finally:
                self.start_log_segment_and_write_header_txn(next_txid, layout_version)
            return next_txid

    def close(self) -> None:
        """End the open segment (if any) and close every journal."""
        with self._cond:
            if self._state is EditLogState.CLOSED:
                return
            self._wait_for_sync_to_finish()
            try:
                if self._state is EditLogState.IN_SEGMENT and self._fatal is None:
                    self.end_current_log_segment(True)
            finally:
                self.journal_set.close()
                self._state = EditLogState.CLOSED

    def abort(self) -> None:
        """Drop the open segment without finalizing it (a crash, or a fatal error)."""
        with self._cond:
            self.journal_set.abort_all_journals()
            self.journal_set.close()
            self._stream = None
            self._state = EditLogState.CLOSED
            self._cond.notify_all()

    def purge_logs_older_than(self, min_txid_to_keep: int) -> None:
        """Remove segments wholly below ``min_txid_to_keep`` from every journal."""
        with self._cond:
            if not self.is_open_for_write() or min_txid_to_keep == 0:
                return  # a standby must not purge the shared journal
            if self._state is EditLogState.IN_SEGMENT and min_txid_to_keep > self._cur_segment_txid:
                raise IllegalStateException(
                    f"cannot purge logs older than txid {min_txid_to_keep} when current "
                    f"segment starts at {self._cur_segment_txid}"
                )
            try:
                self.journal_set.purge_logs_older_than(min_txid_to_keep)
            except JournalSetFailure as e:
                if e.required:
                    self._die(str(e))
                LOG.warning("Purging logs older than %d failed: %s", min_txid_to_keep, e)

    # ---- writing ---------------------------------------------------------------------------------
    def log_edit(self, op: FSEditLogOp) -> int:
        """Give ``op`` the next txid and buffer it in every journal; returns the txid.

        Durable only after :meth:`log_sync`. When a buffer is full the caller syncs at
        once and other writers wait for that (HDFS-13977's auto-sync).
        """
        with self._lock:  # the condition's own lock: no Condition.__enter__ frame per op
            self._check_alive()
            if self._state is not EditLogState.IN_SEGMENT:
                raise IllegalStateException(f"bad state: {self._state.value}")
            while self._auto_sync_scheduled or self._ending_segment:
                self._cond.wait()
                self._check_alive()
            self._txid += 1
            txid = self._txid
            op.txid = txid
            self._my_txid.value = txid
            self._num_txns += 1
            try:
                self._stream.write(op)  # type: ignore[union-attr]
            except JournalSetFailure as e:
                if e.required:
                    self._die(f"Could not write txid {txid} to a required journal: {e}", e)
                # Too few journals are left: log_sync finds none to flush and terminates.
                LOG.error("Could not write txid %d to the journals: %s", txid, e)
            need_sync = self._stream is not None and self._stream.should_force_sync()
            if need_sync:
                self._auto_sync_scheduled = True
        if need_sync:
            self.log_sync(txid)
        return txid

    def log_sync_all(self) -> None:
        """Sync everything logged so far, by any thread."""
        with self._cond:
            txid = self._txid
        self.log_sync(txid)

    def log_sync(self, txid: int | None = None) -> None:
        """Return once ``txid`` (default: this thread's last logged one) is durable.

        With ``pipeline_depth`` k > 1 up to k batches are on their way at once: a thread
        whose txid is in no batch yet seals one (everything logged so far) and sends it as
        soon as fewer than k are unacknowledged and no other batch is being sent (so the
        batches leave in txid order), then waits for its durability *outside* the lock.
        It returns only when every earlier batch is durable too: the synced txid moves
        in txid order, one batch at a time.
        """
        mytxid = getattr(self._my_txid, "value", 0) if txid is None else txid
        sync = flushed = False
        released = [False]  # whether this thread gave back the sending flag already
        batch_end = prev_end = 0
        depth = self.pipeline_depth
        try:
            with self._cond:
                try:
                    while mytxid > self._synctxid and (
                        mytxid <= self._sent_txid or self._sending or self._in_flight >= depth
                    ):
                        # Its batch is on its way, or it must wait for a slot (k=1: the
                        # running sync). No notify on the way out: only a batch that
                        # ends wakes anyone (one wake-up per group commit).
                        self._cond.wait()
                        self._check_alive()
                        self._check_not_aborted(mytxid)
                    if mytxid <= self._synctxid:
                        self._num_batched += 1
                        return
                    self._check_alive()
                    # This thread syncs: everything logged so far goes in this batch.
                    prev_end = self._sent_txid
                    batch_end = self._txid
                    self._sent_txid = batch_end
                    self._sending = True
                    self._in_flight += 1
                    self._max_in_flight = max(self._max_in_flight, self._in_flight)
                    sync = True
                    stream = self._stream
                    try:
                        if stream is None or self.journal_set.is_empty() or not stream.has_active:
                            raise IOException("No journals available to flush")
                        stream.set_ready_to_flush()
                    except OSError as e:
                        self._die(
                            "Could not sync enough journals to persistent storage due to "
                            f"{e}. Unsynced transactions: {self._txid - self._synctxid}",
                            e,
                        )
                finally:
                    self._done_with_auto_sync_scheduling()
            try:
                if depth == 1:
                    stream.flush()  # the lock is not held: others keep logging meanwhile
                else:
                    self._send_and_wait(stream, released)
                flushed = True
            except OSError as e:
                with self._cond:
                    self._die(
                        "Could not sync enough journals to persistent storage. "
                        f"Unsynced transactions: {self._txid - self._synctxid}. "
                        f"Cause: {_first_lines(e)}",
                        e,
                    )
        finally:
            if sync:
                with self._cond:
                    if not released[0]:  # else the next batch's sender may own it by now
                        self._sending = False
                    # Only a flush that succeeded advances synctxid: a waiter must never
                    # take a failed sync for a durable one. Nor one that ended after the
                    # log died in another thread (its flush may have skipped the journals
                    # that thread aborted). Acks stay in txid order: a batch counts only
                    # once every batch before it did (a failed one kills the log).
                    # Nor one that ended after abort() took the journals' streams away:
                    # the flush skipped the optional ones it found gone.
                    while (
                        flushed
                        and self._fatal is None
                        and self._synctxid < prev_end
                        and self._state is not EditLogState.CLOSED
                    ):
                        self._cond.wait()
                    counts = flushed and self._fatal is None
                    counts = counts and self._state is not EditLogState.CLOSED
                    if counts and batch_end > self._synctxid:
                        self._synctxid = batch_end
                        self._num_syncs += 1
                    self._in_flight -= 1
                    self._cond.notify_all()
                    if flushed:  # no exception is on its way out: report the log's death
                        self._check_alive()
                        self._check_not_aborted(mytxid)

    def _send_and_wait(self, stream: JournalSetOutputStream, released: list[bool]) -> None:
        """A pipelined sync's I/O, without the lock: send the sealed batch (the next
        syncer may seal and send its own once this one is on its way: ``released[0]``
        says so), then wait until it is durable. Any failure kills the log: later
        batches must not count."""
        try:
            try:
                sent = stream.send_ready()
            finally:
                with self._cond:
                    self._sending = False
                    released[0] = True
                    self._cond.notify_all()  # the next batch may go
            stream.wait_sent(sent)
        except OSError:
            raise
        except Exception as e:  # noqa: BLE001 - a batch in the middle of the pipe is lost
            with self._cond:
                self._die(f"Unexpected failure syncing the edit log: {_first_lines(e)}", e)

    def _check_not_aborted(self, txid: int) -> None:
        """After abort() (a crash) nothing more becomes durable: a sync still waiting
        for ``txid`` gets IOException (the outcome is unknown), never success."""
        if self._state is EditLogState.CLOSED and txid > self._synctxid:
            raise IOException(f"The edit log was aborted before txid {txid} was durable")

    def _done_with_auto_sync_scheduling(self) -> None:
        if self._auto_sync_scheduled:
            self._auto_sync_scheduled = False
            self._cond.notify_all()

    def _wait_for_sync_to_finish(self) -> None:
        while self._in_flight:
            self._cond.wait()

    # ---- reading ---------------------------------------------------------------------------------
    def select_input_streams(
        self,
        from_txid: int,
        to_at_least_txid: int = 0,
        in_progress_ok: bool = False,
        only_durable_txns: bool = False,
        *,
        require_shared: bool = False,
    ) -> list[RedundantEditLogInputStream]:
        """One stream per segment from ``from_txid`` on, in order, over every journal;
        IOException if they do not reach ``to_at_least_txid`` without a gap, or, with
        ``require_shared``, if a shared journal could not list its streams (Hadoop skips
        it: a standby would then see "nothing new" where it cannot read at all)."""
        failures: list = []
        streams = self.journal_set.select_input_streams(
            from_txid, in_progress_ok, only_durable_txns, failures=failures
        )
        try:
            shared_failures = [(jas, e) for jas, e in failures if jas.shared]
            self.shared_read_error = None
            if shared_failures:
                jas, error = shared_failures[0]
                uri = getattr(jas.manager, "uri", jas.manager)
                self.shared_read_error = f"{uri}: {one_line_message(error)}"
                if require_shared:
                    raise IOException(
                        f"Unable to read the shared edits {self.shared_read_error}"
                    ) from error
            check_for_gaps(streams, from_txid, to_at_least_txid)
        except IOException:
            for s in streams:
                s.close()
            raise
        return streams

    # ---- failure ---------------------------------------------------------------------------------
    def _check_alive(self) -> None:
        if self._fatal is not None:
            raise ExitException(1, self._fatal)

    def _check_state(self, *allowed: EditLogState) -> None:
        self._check_alive()
        if self._state not in allowed:
            raise IllegalStateException(f"Bad state: {self._state.value}")

    def _die(self, message: str, cause: BaseException | None = None) -> None:
        """Terminate (once), then raise ExitException(message) here and in every later call."""
        first = self._fatal is None
        if first:
            self._fatal = message
            LOG.critical(message, exc_info=trace_if_bug(cause))
            self.journal_set.abort_all_journals()
            self._cond.notify_all()
            self._terminate_callback(1, message)
        raise ExitException(1, self._fatal or message) from cause
