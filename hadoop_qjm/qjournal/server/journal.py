"""Journal: one journal id on a JournalNode (HADOOP-QJM-DIGEST.md §2; design paper §2.3–2.11).

Every mutation has the same shape (STYLE.md habit 3): take the journal's lock,
check the journal is formatted, apply the protocol rule (``rules.py``), then do
the disk I/O and fsync before returning. A storage failure (a failed write or
fsync) stops the journal: every later mutation fails until the JournalNode is
restarted, because after a failed fsync the state of the file is unknown and
acknowledging anything more could lose an edit. (A restart re-reads the files
through the page cache, which may still hold bytes the failed fsync did not make
durable: only a reboot clears that. Such bytes are never acknowledged; in recovery
they are at most a proposal, and every node that takes a copy fsyncs it first.)
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import BinaryIO

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, INVALID_TXID
from hadoop_qjm.common.durable import BestEffortLongFile, PersistentLongFile, fsync_dir
from hadoop_qjm.common.exceptions import (
    HadoopException,
    IllegalArgumentException,
    IllegalStateException,
    IOException,
)
from hadoop_qjm.common.remote_edit_log import RemoteEditLog, RemoteEditLogManifest
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.file_journal_manager import EditLogFile
from hadoop_qjm.qjournal.protocol import journal_read_rules, journal_step, recovery_rules, rules
from hadoop_qjm.qjournal.protocol import membership as membership_rules
from hadoop_qjm.qjournal.protocol.exceptions import (
    CacheMissException,
    JournalInUseException,
    JournalNotFormattedException,
    JournalOutOfSyncException,
    NewerTxnIdException,
    SegmentMismatchException,
)
from hadoop_qjm.qjournal.protocol.format_rules import STOP_THE_NAMENODES, FormatCheck
from hadoop_qjm.qjournal.protocol.journal_call import JournalCall
from hadoop_qjm.qjournal.protocol.membership import Config, MembershipRecord
from hadoop_qjm.qjournal.protocol.messages import (
    GetJournaledEditsResponse,
    NewEpochResponse,
    PersistedRecoveryPaxosData,
    RequestInfo,
)
from hadoop_qjm.qjournal.server.jn_storage import JNStorage
from hadoop_qjm.qjournal.server.journal_format_guard import WriterWatch, check_format
from hadoop_qjm.qjournal.server.journal_membership import JournalMembership
from hadoop_qjm.qjournal.server.journal_metrics import JournalMetrics, JournalNodeMetrics
from hadoop_qjm.qjournal.server.journal_node_rpc_server import remote_ip
from hadoop_qjm.qjournal.server.journal_node_settings import edits_dir_permission
from hadoop_qjm.qjournal.server.journal_recovery import (
    JournalRecovery,
    scan_segment_state,
    segment_md5,
)
from hadoop_qjm.qjournal.server.journal_scrubber import SegmentReaders
from hadoop_qjm.qjournal.server.journaled_edits_cache import JournaledEditsCache
from hadoop_qjm.qjournal.server.kept_segment_state import KeptSegmentState, after_append
from hadoop_qjm.qjournal.server.paxos_record import read_paxos_record
from hadoop_qjm.qjournal.server.scrub_rules import RepairOutcome

__all__ = ["Journal", "JournalFaultInjector"]

LOG = logging.getLogger(__name__)

LAST_PROMISED_FILENAME = "last-promised-epoch"
LAST_WRITER_EPOCH = "last-writer-epoch"
COMMITTED_TXID_FILENAME = "committed-txid"
#: The committed-txid file is rewritten at most this often while calls carry a newer
#: value; always when a segment is finalized and when the journal closes, and at once
#: when discardSegments lowers it. Hadoop rewrites it on every call that moves it; it
#: is a hint read as a lower bound either way (docs/journalnode.md, "committed-txid").
COMMITTED_TXID_WRITE_INTERVAL_S = 0.1
#: Keep what a scan of the open segment would find (issue 25; docs/journalnode.md).
KEPT_SEGMENT_STATE_KEY = keys.DFS_JOURNALNODE_KEPT_SEGMENT_STATE_KEY
#: Compare the kept state with a fresh scan at every use (tests and fault runs only).
KEPT_SEGMENT_STATE_VERIFY_KEY = "dfs.journalnode.kept-segment-state.verify"
#: The longest a getJournaledEdits long poll may wait, whatever the caller asks for.
MAX_JOURNALED_EDITS_WAIT_S = 60.0
#: A batch whose fsync takes longer than this is logged (Hadoop: WARN_SYNC_MILLIS_THRESHOLD).
WARN_SYNC_MILLIS_THRESHOLD = 1000


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


class Journal(JournalRecovery):
    """The journal of one journal id: its storage, its promises, its open segment.

    Recovery (prepareRecovery/acceptRecovery, design paper §2.8-2.9) lives in the
    :class:`~hadoop_qjm.qjournal.server.journal_recovery.JournalRecovery` mixin; this
    class holds the state and the write path.
    """

    def __init__(
        self,
        conf,
        log_dir: str | os.PathLike[str],
        journal_id: str,
        *,
        metrics: JournalNodeMetrics | None = None,
        fault_injector: JournalFaultInjector | None = None,
        fetcher=None,
        clock=time.time,
    ) -> None:
        rules.validate_journal_id(journal_id)
        self.conf = conf
        self.journal_id = journal_id
        self.log = logging.LoggerAdapter(LOG, {"journal_id": journal_id})
        self._lock = threading.RLock()
        self._fault = fault_injector or JournalFaultInjector()
        self._fetch = fetcher
        self._clock = clock
        self.storage = JNStorage(conf, log_dir, edits_dir_permission(conf))
        self.fjm = self.storage.fjm
        self._cur_segment = None
        self.cur_segment_txid = INVALID_TXID
        self.cur_segment_layout_version = 0
        self.next_txid = INVALID_TXID
        self.highest_written_txid = 0
        self.current_epoch_ipc_serial = -1
        self.last_journal_timestamp_ms = 0
        #: The writer and its segment's start, for format's live-writer check (issue 33).
        self.writer_watch = WriterWatch(conf, clock)
        self._storage_failure: str | None = None
        in_progress = conf.get_bool("dfs.ha.tail-edits.in-progress", False) if conf else False
        self.cache = JournaledEditsCache(conf) if in_progress else None
        self._kept: KeptSegmentState | None = None
        self._kept_enabled = (
            conf.get_bool(KEPT_SEGMENT_STATE_KEY, keys.DFS_JOURNALNODE_KEPT_SEGMENT_STATE_DEFAULT)
            if conf
            else True
        )
        self._kept_verify = (
            conf.get_bool(KEPT_SEGMENT_STATE_VERIFY_KEY, False) if conf else False
        ) and self._kept_enabled
        # getJournaledEdits long polls wait on this for a batch past their txid.
        self._written = threading.Condition(threading.Lock())
        self._edit_waiters = 0
        self._closed = False
        self._refresh_cached_data()
        self._drop_edits_cache()  # tagged with the promise just read
        latest = self.scan_storage_for_latest_edits()
        if latest is not None:
            self._update_highest_written_txid(latest.last_txid)
        self.metrics: JournalMetrics = (metrics or JournalNodeMetrics()).for_journal(self)
        #: Segment files open for /getJournal: the scrubber leaves them alone (issue 27).
        self.segment_readers = SegmentReaders()

    # ---- persistent state -----------------------------------------------------------------------
    def _refresh_cached_data(self) -> None:
        current = self.storage.current_dir
        if getattr(self, "committed_txn_id", None) is not None:
            self.committed_txn_id.close()
        self.last_promised_epoch = PersistentLongFile(current / LAST_PROMISED_FILENAME, 0)
        self.last_writer_epoch = PersistentLongFile(current / LAST_WRITER_EPOCH, 0)
        self.committed_txn_id = BestEffortLongFile(
            current / COMMITTED_TXID_FILENAME, INVALID_TXID, COMMITTED_TXID_WRITE_INTERVAL_S
        )
        self.membership = JournalMembership(current, self.journal_id)

    def _update_highest_written_txid(self, txid: int) -> None:
        self.highest_written_txid = txid
        self.fjm.last_readable_txid = txid

    # ---- read-only views ------------------------------------------------------------------------
    def is_formatted(self) -> bool:
        return self.storage.is_formatted()

    def get_last_promised_epoch(self) -> int:
        """The promise (getJournalState); JournalNotFormattedException if unformatted."""
        with self._lock:
            self._check_formatted()
            return self.last_promised_epoch.get()

    def get_membership_text(self) -> str | None:
        """This node's membership record (getJournalState; not Hadoop's), None if the set
        never changed (docs/journalnode.md, "Online, by joint consensus")."""
        with self._lock:
            self._check_formatted()
            record = self.membership.record
            return None if record is None else record.to_text()

    def set_membership(
        self, req: RequestInfo, record: str, ns_info: NamespaceInfo | None = None
    ) -> None:
        """Replace the membership record: a set change's step, by the writer (not Hadoop's).
        A joining node is asked with the writer's ``ns_info``: it must be of that namespace."""
        with self._lock:
            self._check_formatted()
            if ns_info is not None:
                self.storage.check_consistent_namespace(ns_info)
            self._check_request(req)
            self.membership.set(MembershipRecord.parse(record), req.epoch)

    def adopt_membership(self, record: str) -> str:
        """Take the membership record a majority of the peers agree on (self-format,
        ``journalnode -bootstrap``), unless this node holds it or a newer one, or it is no
        legal successor of this node's; says which."""
        proposed = MembershipRecord.parse(record)
        with self._lock:
            self._check_formatted()
            current = self.membership.record
            if current is not None and current.key >= proposed.key:
                return f"kept this node's membership record {current}"
            reason = membership_rules.check_successor(current, proposed)
            if reason is not None:
                return f"kept this node's membership record: {reason}"
            self.membership.set(proposed)
            return f"took the membership record {proposed}"

    def get_last_writer_epoch(self) -> int:
        with self._lock:
            self._check_formatted()
            return self.last_writer_epoch.get()

    def get_committed_txid(self) -> int:
        with self._lock:
            return self.committed_txn_id.get() if self.is_formatted() else INVALID_TXID

    def get_journal_ctime(self) -> int:
        with self._lock:
            self._check_formatted()
            return self.storage.storage_info.ctime

    def get_storage_info(self):
        """The journal's StorageInfo (its VERSION), for a peer formatting itself (HDFS-16690)."""
        with self._lock:
            self._check_formatted()
            return self.storage.storage_info

    def metric_last_promised_epoch(self) -> int:
        try:
            return self.last_promised_epoch.get() if self.is_formatted() else 0
        except (OSError, HadoopException):
            return -1

    def metric_last_writer_epoch(self) -> int:
        try:
            return self.last_writer_epoch.get() if self.is_formatted() else 0
        except (OSError, HadoopException):
            return -1

    def current_lag_txns(self) -> int:
        """max(committed - highest written, 0); 0 while nothing is committed (Hadoop)."""
        try:
            committed = self.committed_txn_id.get() if self.is_formatted() else INVALID_TXID
        except (OSError, HadoopException):
            return 0
        if committed <= 0:
            return 0
        return max(committed - self.highest_written_txid, 0)

    def open_segment_for_read(
        self, segment_txid: int, in_progress_ok: bool = True
    ) -> tuple[BinaryIO, str, int] | None:
        """Open the segment starting at ``segment_txid`` for ``/getJournal``.

        Returns ``(file, file name, size at open time)``, or None when there is no such
        segment (or it is in progress and ``in_progress_ok`` is false). The lookup and the
        open happen under the journal lock, so the file cannot be finalized (renamed) or
        replaced by acceptRecovery in between (GetJournalEditServlet's ``synchronized
        (fjm)``); the size is read from the open file, so the caller sends exactly that
        many bytes even while the writer appends. The caller closes the file.
        """
        with self._lock:
            elf = self.fjm.get_log_file(segment_txid)
            if elf is None or (elf.is_in_progress and not in_progress_ok):
                return None
            f = open(elf.path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
            try:
                size = os.fstat(f.fileno()).st_size
            except BaseException:
                f.close()
                raise
            return self.segment_readers.track(f, elf.path), elf.name, size

    @property
    def is_segment_open(self) -> bool:
        return self._cur_segment is not None

    @property
    def kept_segment_state(self) -> KeptSegmentState | None:
        """What a scan of the open (or last scanned) in-progress segment would find, kept
        without reading it; None when not kept (the next use scans)."""
        return self._kept

    def scanned_segment_state(self, segment_txid: int) -> KeptSegmentState | None:
        """A fresh scan of ``edits_inprogress_<segment_txid>``, for comparison with
        :attr:`kept_segment_state` (tests, the fault harness)."""
        with self._lock:
            return scan_segment_state(self.storage.in_progress_edit_log(segment_txid), segment_txid)

    # ---- checks ---------------------------------------------------------------------------------
    def _check_formatted(self) -> None:
        if not self.storage.is_formatted():
            raise JournalNotFormattedException(
                f"Journal {self.storage} not formatted ; journal id: {self.journal_id}"
            )

    def _check_writable(self) -> None:
        if self._storage_failure is not None:
            raise IOException(
                f"Journal {self.journal_id} stopped accepting writes after a storage failure "
                f"({self._storage_failure}); restart the JournalNode"
            )

    def _check_request(self, req: RequestInfo) -> None:
        """Epoch promise, IPC serial and committed txid (digest §2 checkRequest)."""
        decision = rules.check_request(
            rules.EpochState(
                self.last_promised_epoch.get(),
                self.current_epoch_ipc_serial,
                self.committed_txn_id.get(),
            ),
            req,
            client=remote_ip(),
        )
        if decision.promise_epoch is not None:
            # A newer writer has arrived: the promise fences every older one.
            self._promise(decision.promise_epoch)
        if decision.ipc_serial is not None:
            self.current_epoch_ipc_serial = decision.ipc_serial
        committed = decision.committed_txid
        if committed is not None and committed != self.committed_txn_id.get():
            # Unchanged (a writer's heartbeat, a retry): nothing to write. Written at most
            # every COMMITTED_TXID_WRITE_INTERVAL_S (docs/journalnode.md).
            self.committed_txn_id.set_lazily(committed)
        decision.raise_if_rejected()
        self.writer_watch.saw_writer(req.epoch)

    def _promise(self, epoch: int) -> None:
        """Promise ``epoch`` (lock held, already checked to be newer): persist it, accept
        any serial next, and forget the cache, whose tail the new writer may cut."""
        self.log.info(
            "Updating lastPromisedEpoch from %d to %d", self.last_promised_epoch.get(), epoch
        )
        self.last_promised_epoch.set(epoch)
        self.current_epoch_ipc_serial = rules.INITIAL_IPC_SERIAL
        self._drop_edits_cache()

    def _check_write_request(self, req: RequestInfo) -> None:
        self._check_request(req)
        rules.check_writer_epoch(req.epoch, self.last_writer_epoch.get(), self.journal_id)

    # ---- the protocol ---------------------------------------------------------------------------
    def can_format(self) -> FormatCheck:
        """``canFormat`` (not Hadoop's): whether a writer uses this journal, and what a
        format would destroy; changes nothing (journal_format_guard)."""
        with self._lock:
            return check_format(self)

    def format(self, ns_info: NamespaceInfo, force: bool = False) -> None:
        """Format (or, with ``force``, re-format) this journal's storage; never while a
        writer uses it, even with ``force`` (JournalInUseException, issue 33)."""
        with self._lock:
            if ns_info.namespace_id == 0:
                raise IllegalArgumentException(
                    f"can't format with uninitialized namespace info: {ns_info}"
                )
            in_use = check_format(self).live_writer
            if in_use is not None:
                raise JournalInUseException(f"Not formatting: {in_use}; {STOP_THE_NAMENODES}")
            current = self.storage.current_dir
            if not force and current.is_dir() and any(current.iterdir()):
                raise IOException(
                    "Can't format the storage directory because the current directory is not empty."
                )
            self._abort_cur_segment()
            self._drop_kept()
            self.committed_txn_id.close(flush=False)  # its directory is recreated
            self.storage.format(ns_info)
            self._refresh_cached_data()
            self._update_highest_written_txid(0)
            self.current_epoch_ipc_serial = -1
            self._storage_failure = None
            self._drop_edits_cache()
            self.writer_watch.forget()

    def new_epoch(
        self,
        ns_info: NamespaceInfo,
        epoch: int,
        writer_config: str | None = None,
        writer_record: str | None = None,
    ) -> NewEpochResponse:
        """Promise never to accept an epoch below ``epoch``; report the latest segment.

        Not Hadoop's: ``writer_config``, the set the writer counts — once the
        journal's set changed, only a writer using the recorded one is promised;
        ``writer_record``, the record the writer follows — a newer one than this
        node's is taken first (a node that missed a step catches up).
        """
        with self._lock:
            self._check_formatted()
            self.storage.check_consistent_namespace(ns_info)
            rules.check_new_epoch(epoch, self.last_promised_epoch.get(), self.journal_id)
            # Only a writer that would win this node's promise may bring it a record.
            if writer_record is not None:
                self.membership.catch_up(MembershipRecord.parse(writer_record), writer_config)
            self.membership.check_writer(
                None if writer_config is None else Config.parse(writer_config)
            )
            self._promise(epoch)
            self.writer_watch.saw_writer(epoch)
            self._abort_cur_segment()
            latest = self.scan_storage_for_latest_edits()
            return NewEpochResponse(latest.first_txid if latest is not None else None)

    def heartbeat(self, req: RequestInfo) -> None:
        with self._lock:
            self._check_formatted()
            self._check_request(req)

    def journal(
        self, req: RequestInfo, segment_txid: int, first_txid: int, num_txns: int, records: bytes
    ) -> None:
        """Append a batch of serialized ops to the open segment; durable on return.

        The general path: any call, decided by ``rules``' step functions (a newer
        writer's promise, a rejection). The writer's next batch usually comes through
        :meth:`journal_in_order_group` instead; both write by :meth:`_write_group_locked`.
        """
        with self._lock:
            self._check_formatted()
            self._check_writable()
            rules.check_num_txns(num_txns, self.journal_id)
            self._check_write_request(req)
            if num_txns == 0:
                return  # the legacy "only update the committed txid" call
            try:
                rules.check_journal_batch(
                    self.cur_segment_txid if self._cur_segment is not None else None,
                    self.next_txid,
                    segment_txid,
                    first_txid,
                    num_txns=num_txns,
                    journal_id=self.journal_id,
                )
            except SegmentMismatchException:
                # The writer missed a finalize and a start: stop writing this segment.
                self._abort_cur_segment()
                raise
            last_txid = first_txid + num_txns - 1
            # A batch the quorum already committed (we are catching up) need not be fsynced.
            lagging = last_txid <= self.committed_txn_id.get()
            self._fault.before_write_edits()
            _, error = self._write_group_locked(((first_txid, last_txid, records, lagging),), None)
            if error is not None:
                raise error

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
        failed: list[Exception] = []
        with self._lock:
            if self._storage_failure is not None or not self.storage.is_formatted():
                return False
            call = journal_step.BatchCall(
                epoch, ipc_serial, committed_txid, segment_txid, first_txid, num_txns
            )
            count, error = self._write_group_locked(
                self._in_order_batches(((call, records),), failed),
                None if acknowledge is None else lambda _count: acknowledge(),
            )
        if error is not None:
            raise error
        if failed:
            raise failed[0]
        return count == 1

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
        (:meth:`_fail_storage`): none of them is acknowledged.
        """
        failed: list[Exception] = []
        with self._lock:
            if self._storage_failure is not None or not self.storage.is_formatted():
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
        state = journal_step.WriterState(
            self.last_promised_epoch.get(),
            self.current_epoch_ipc_serial,
            self.committed_txn_id.get(),
            self.last_writer_epoch.get(),
            self.cur_segment_txid if self._cur_segment is not None else None,
            self.next_txid,
        )
        for call, records in calls:
            ready = journal_step.step(state, call)
            if ready is None:
                return
            try:
                # checkRequest's effects, in its order, then the write hook (as journal()).
                self.current_epoch_ipc_serial = ready.state.ipc_serial
                if ready.committed_txid is not None:
                    self.committed_txn_id.set_lazily(ready.committed_txid)
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
    ) -> tuple[int, IOException | None]:
        """The one write path (lock held): write → fsync → publish → acknowledge.

        Appends each checked batch ``(first txid, last txid, records, lagging)`` to the
        open segment in order (a batch is taken from ``batches`` only after the one
        before it is written, so its checks see the next txid that one left), fdatasyncs
        once unless every batch is one the quorum already committed (lagging), and only
        then publishes them (:meth:`_publish_locked`) and acknowledges them.
        Returns how many batches were taken, and None; or, when a write or the fsync
        failed, that count and the IOException every one of them fails with: nothing of
        the group is durable, and the journal stops (:meth:`_fail_storage`).
        """
        segment = self._cur_segment
        written: list[tuple[int, int, bytes | memoryview, int, bool]] = []
        must_sync = False
        started = time.perf_counter()
        try:
            for first_txid, last_txid, records, lagging in batches:
                # The next batch's continuity check needs the next txid now; readers
                # learn of the batch only once it is durable (below).
                written.append((first_txid, last_txid, records, segment.position, lagging))
                segment.write_batch(records, False)
                self.next_txid = last_txid + 1
                must_sync = must_sync or not lagging
            if must_sync:
                segment.sync()
        except OSError as e:  # a write or the fsync: nothing of the group is durable
            first, last = written[0][0], written[-1][1]
            self._fail_storage(f"writing txns {first}-{last}: {e}")
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
        cache = self.cache
        if cache is not None:
            # In the cache before the highest txid says it is there (getJournaledEdits
            # reads that first, without the lock).
            for first_txid, last_txid, records, _, _ in written:
                cache.store_edits(records, first_txid, last_txid, self.cur_segment_layout_version)
        self._update_highest_written_txid(self.next_txid - 1)
        metrics = self.metrics
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
                self.last_journal_timestamp_ms = int(self._clock() * 1000)
        # After the acknowledgement (the writer does not wait for it), under the lock (no
        # reader sees the state between the write and this).
        kept = self._kept
        if kept is not None and kept.start_txid == self.cur_segment_txid:
            for _, _, records, position, _ in written:
                kept = after_append(kept, position, records)
            self._kept = kept
        if self._edit_waiters:
            with self._written:
                self._written.notify_all()
        if sync_micros > WARN_SYNC_MILLIS_THRESHOLD * 1000:
            if len(written) == 1:
                how = ""
            else:
                how = f" ({len(written)} batches)"
            self.log.warning(
                "Sync of transaction range %d-%d%s took %dms",
                written[0][0],
                self.next_txid - 1,
                how,
                sync_micros / 1000,
            )

    def start_log_segment(
        self, req: RequestInfo, txid: int, layout_version: int | None = None
    ) -> None:
        """Open ``edits_inprogress_<txid>``; the caller becomes the writer of its epoch."""
        if layout_version is None:
            layout_version = CURRENT_LAYOUT_VERSION
        with self._lock:
            self._check_formatted()
            self._check_writable()
            self._check_request(req)
            if self._cur_segment is not None:
                self.log.warning(
                    "Client is requesting a new log segment %d though we are already writing %s. "
                    "Aborting the current segment in order to begin the new one.",
                    txid,
                    self._cur_segment,
                )
                self._abort_cur_segment()
            existing = self.fjm.get_log_file(txid)
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
            if self.last_writer_epoch.get() != req.epoch:
                self.log.info(
                    "Updating lastWriterEpoch from %d to %d",
                    self.last_writer_epoch.get(),
                    req.epoch,
                )
                self.last_writer_epoch.set(req.epoch)
            # A new segment at this txid supersedes any recovery decided for it.
            self._purge_paxos_decision(txid)
            self._drop_kept(txid)
            try:
                self._cur_segment = self.fjm.start_log_segment(txid, layout_version)
            except OSError as e:
                self._fail_storage(f"creating segment {txid}: {e}")
                raise
            if self._kept_enabled:
                # A new file holds only its header: its scan costs nothing.
                self._kept = scan_segment_state(self.storage.in_progress_edit_log(txid), txid)
            self.cur_segment_txid = txid
            self.cur_segment_layout_version = layout_version
            self.next_txid = txid
            self.writer_watch.segment_started()

    def finalize_log_segment(self, req: RequestInfo, start_txid: int, end_txid: int) -> None:
        """Make ``[start_txid, end_txid]`` a finalized segment (exactly its txns, no padding)."""
        with self._lock:
            self._check_formatted()
            self._check_writable()
            self._check_request(req)
            needs_validation = True
            if start_txid == self.cur_segment_txid:
                # Check before closing (Hadoop closes first): a rejected finalize must leave
                # the file byte-identical, so it only drops the open segment, as Hadoop does.
                try:
                    rules.check_finalize_current(
                        self.next_txid, end_txid, start_txid=start_txid, journal_id=self.journal_id
                    )
                except JournalOutOfSyncException:
                    self._abort_cur_segment()
                    raise
                if self._cur_segment is not None:
                    try:
                        self._cur_segment.close()  # truncates the padding, fsyncs
                    except OSError as e:
                        self._fail_storage(f"closing segment {start_txid}: {e}")
                        raise
                    self._cur_segment = None
                    self.cur_segment_txid = INVALID_TXID
                    self.cur_segment_layout_version = 0
                needs_validation = False
            elf = self.fjm.get_log_file(start_txid)
            if elf is None:
                raise JournalOutOfSyncException(
                    f"No log file to finalize at transaction ID {start_txid} ; journal id: {self.journal_id}"
                )
            if elf.is_in_progress:
                truncate_to = None
                if needs_validation:
                    self.log.info("Validating log segment %s about to be finalized", elf.path)
                    kept = self._scan_in_progress(elf)
                    if elf.last_txid != end_txid:
                        raise JournalOutOfSyncException(
                            f"Trying to finalize in-progress log segment {start_txid} to end at txid "
                            f"{end_txid} but log {elf.path} on disk only contains up to txid "
                            f"{elf.last_txid} ; journal id: {self.journal_id}"
                        )
                    # A copy that differs from the one this node accepted in recovery must
                    # never be finalized (the finalized copies must agree everywhere).
                    accepted = self._get_persisted_paxos_data(start_txid)
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
                                f"journal id: {self.journal_id}"
                            )
                    # A segment installed by recovery still carries its source's padding; the
                    # finalized copies of one segment must be byte-identical everywhere.
                    truncate_to = elf.valid_length
                self._drop_kept(start_txid)  # renamed (and cut) below: no longer open
                try:
                    self.fjm.finalize_log_segment(start_txid, end_txid, truncate_to=truncate_to)
                except IllegalStateException as e:
                    if isinstance(e.__cause__, OSError):  # the disk failed, not the request
                        self._fail_storage(f"finalizing segment {start_txid}: {e}")
                    raise
            elif end_txid != elf.last_txid:
                raise IllegalArgumentException(
                    f"Trying to re-finalize already finalized log {elf} with different endTxId {end_txid}"
                )
            # Once finalized, no other length can be decided: the paxos record is no longer needed.
            self._purge_paxos_decision(elf.first_txid)
            # The writer pauses here (it rolls): the file catches up with the committed txid.
            self.committed_txn_id.flush()

    def purge_logs_older_than(self, req: RequestInfo, min_txid_to_keep: int) -> None:
        with self._lock:
            self._check_formatted()
            self._check_request(req)
            if self._kept is not None and self._kept.start_txid < min_txid_to_keep:
                self._drop_kept()
            self.storage.purge_data_older_than(min_txid_to_keep)

    def get_edit_log_manifest(
        self, since_txid: int, in_progress_ok: bool = False
    ) -> RemoteEditLogManifest:
        """The segments from ``since_txid`` on; the in-progress one ends at the highest written txid."""
        with self._lock:
            self._check_formatted()
            logs = self.fjm.get_remote_edit_logs(since_txid, in_progress_ok)
            if in_progress_ok:
                # Not a superseded writer's (journal_read_rules.in_progress_listed).
                listed = journal_read_rules.in_progress_listed(
                    self.last_writer_epoch.get(), self.last_promised_epoch.get()
                )
                for i, log in enumerate(logs):
                    if log.is_in_progress:
                        del logs[i]
                        if listed:
                            logs.append(
                                RemoteEditLog(log.start_txid, self.highest_written_txid, True)
                            )
                        break
            return RemoteEditLogManifest(tuple(logs), self.committed_txn_id.get())

    def await_journaled_edits(self, since_txid: int, wait_s: float) -> bool:
        """Wait until this node has written ``since_txid`` (True) or ``wait_s`` passes (False).

        The long poll of getJournaledEdits (its optional ``waitMs``, issue 25): a tailing
        standby asks for the edits after its last txid and is answered as soon as a batch
        holding them is written here. Takes no journal lock and no handler slot; returns
        at once when the edits cache is off (the call that follows then fails as usual).
        """
        wait_s = min(max(wait_s, 0.0), MAX_JOURNALED_EDITS_WAIT_S)
        if self.cache is None or self.highest_written_txid >= since_txid or wait_s <= 0:
            return self.highest_written_txid >= since_txid
        with self._written:
            # Counted before the check inside wait_for: a writer that saw no waiter had
            # already moved the highest txid, which that check then sees.
            self._edit_waiters += 1
            try:
                return (
                    self._written.wait_for(
                        lambda: self._closed or self.highest_written_txid >= since_txid, wait_s
                    )
                    and not self._closed
                )
            finally:
                self._edit_waiters -= 1

    def get_journaled_edits(self, since_txid: int, max_txns: int) -> GetJournaledEditsResponse:
        """Edits from the in-memory cache (``dfs.ha.tail-edits.in-progress``), header included."""
        # The highest txid first: a cache emptied (and replaced) in between then only
        # misses, where the other order could pair a fenced writer's cache with a newer
        # highest txid.
        highest = self.highest_written_txid
        cache = self.cache
        if cache is None:
            raise IOException(
                "The journal edits cache is not enabled, which is a requirement to fetch journaled "
                "edits via RPC. Please enable it via dfs.ha.tail-edits.in-progress"
            )
        try:
            window = journal_read_rules.journaled_edits_window(since_txid, highest, max_txns)
        except NewerTxnIdException:
            self.metrics.rpc_empty_response()
            raise
        if window is None:
            self.metrics.rpc_empty_response()
            return GetJournaledEditsResponse(0, b"", cache.writer_epoch)
        max_txns = window
        try:
            data, count = cache.retrieve_edits(since_txid, max_txns)
        except CacheMissException as e:
            self.metrics.cache_miss(e.cache_miss_amount)
            raise
        self.metrics.rpc_served(count, len(data))
        return GetJournaledEditsResponse(count, data, cache.writer_epoch)

    # ---- upgrade and rollback (HDFS-5138): not supported yet ------------------------------------
    def _upgrade_unsupported(self, operation: str):
        raise IOException(
            f"{operation} is not supported by this JournalNode yet; journal {self.journal_id} "
            "is unchanged"
        )

    def do_pre_upgrade(self) -> None:
        self._upgrade_unsupported("doPreUpgrade")

    def do_upgrade(self, storage_info) -> None:
        self._upgrade_unsupported("doUpgrade")

    def do_finalize(self) -> None:
        self._upgrade_unsupported("doFinalize")

    def can_roll_back(self, storage, prev_storage, target_layout_version) -> bool:
        self._upgrade_unsupported("canRollBack")

    def do_rollback(self) -> None:
        self._upgrade_unsupported("doRollback")

    def discard_segments(self, start_txid: int) -> None:
        """Move aside every segment from ``start_txid`` on (rolling-upgrade rollback)."""
        with self._lock:
            self._check_formatted()
            self._drop_kept()
            self.fjm.discard_segments(start_txid)
            self.committed_txn_id.set(start_txid - 1)
            self._drop_edits_cache()

    # ---- helpers --------------------------------------------------------------------------------
    def scan_storage_for_latest_edits(self) -> EditLogFile | None:
        """The newest segment holding a transaction; empty newer ones are renamed ``.empty``."""
        if not self.storage.current_dir.is_dir():
            return None
        files = self.fjm.get_log_files(0)
        while files:
            latest = files.pop()
            if latest.is_in_progress:
                self._scan_in_progress(latest)  # the kept state, when it describes it
            else:
                latest.scan_log()
            self.log.info("Latest log is %s", latest)
            if latest.last_txid == INVALID_TXID:
                self.log.warning(
                    "Latest log %s has no transactions. moving it aside and looking for previous log",
                    latest,
                )
                self._drop_kept(latest.first_txid)
                latest.move_aside_empty_file()
            else:
                return latest
        self.log.info("No files in %s", self.storage)
        return None

    def _abort_cur_segment(self) -> None:
        if self._cur_segment is None:
            return
        try:
            self._cur_segment.abort()
        except OSError as e:
            self.log.warning("Unable to abort segment %d: %s", self.cur_segment_txid, e)
        self._cur_segment = None
        self.cur_segment_txid = INVALID_TXID
        self.cur_segment_layout_version = 0
        self.next_txid = INVALID_TXID

    def _drop_edits_cache(self) -> None:
        """Forget every cached batch (lock held). Done whenever what the cache holds may no
        longer be this node's committed history: a newer writer's promise (the open
        segment's tail may be cut or replaced by its recovery), a segment installed by
        acceptRecovery (another writer's copy), a discard, a format. The cache then
        refills from the next writer's batches; a reader asking for older txns misses and
        reads the segment files instead. (Hadoop keeps the cache across all of these, so
        a standby could be served a fenced writer's uncommitted txns.)"""
        if self.cache is not None:
            epoch = self.last_promised_epoch.get() if self.storage.is_formatted() else 0
            self.cache = JournaledEditsCache(self.conf, writer_epoch=epoch)

    def _fail_storage(self, what: str) -> None:
        """After a failed write or fsync nothing more may be acknowledged (see the module doc)."""
        self.log.error("Storage failure %s: this journal stops accepting writes", what)
        self._storage_failure = what
        self._drop_kept()  # what the file holds after a failed write is unknown
        self._abort_cur_segment()

    def _purge_paxos_decision(self, segment_txid: int) -> None:
        path = self.storage.paxos_file(segment_txid)
        try:
            path.unlink()
        except FileNotFoundError:
            return
        except OSError as e:
            raise IOException(f"Unable to delete paxos file {path}: {e}") from e
        fsync_dir(path.parent)

    def _get_persisted_paxos_data(self, segment_txid: int) -> PersistedRecoveryPaxosData | None:
        data = read_paxos_record(self.storage.paxos_file(segment_txid))
        if data is not None and data.segment_state.start_txid != segment_txid:
            raise IllegalStateException(f"Bad persisted data for segment {segment_txid}: {data}")
        return data

    def replace_damaged_segment(
        self, path: Path, replacement: Path | None, readers: SegmentReaders
    ) -> RepairOutcome:
        """The scrubber's change (issue 27): move the damaged finalized segment ``path``
        aside as ``<name>.corrupt`` and, if given, rename the fsynced ``replacement`` to its
        name. Returns :class:`RepairOutcome` IN_USE (a reader has it open: nothing done),
        GONE (purged meanwhile) or DONE. The commit point is the fsync of the directory after the
        second rename; a crash before it leaves the segment missing here, which the
        syncer fills from a peer."""
        with self._lock:
            self._check_formatted()
            if readers.in_use(path):
                return RepairOutcome.IN_USE
            if not path.exists():
                return RepairOutcome.GONE
            aside = path.with_name(path.name + ".corrupt")
            os.replace(path, aside)
            if replacement is not None:
                os.replace(replacement, path)
            fsync_dir(path.parent)
            return RepairOutcome.DONE

    def close(self) -> None:
        """Release the segment, the committed-txid file and the storage lock."""
        with self._lock:
            self._abort_cur_segment()
            self._drop_kept()
            with self._written:
                self._closed = True
                self._written.notify_all()
            try:
                self.committed_txn_id.close()
            finally:
                self.storage.close()
                self.metrics.node.forget(self.journal_id)

    def __str__(self) -> str:
        return f"Journal({self.journal_id} at {self.storage.log_dir})"
