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
from pathlib import Path

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.durable import BestEffortLongFile, PersistentLongFile, fsync_dir
from hadoop_qjm.common.exceptions import (
    HadoopException,
    IllegalArgumentException,
    IllegalStateException,
    IOException,
)
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.file_journal_manager import EditLogFile
from hadoop_qjm.ipc.call_context import remote_ip
from hadoop_qjm.qjournal.protocol import membership as membership_rules
from hadoop_qjm.qjournal.protocol import rules
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalInUseException,
    JournalNotFormattedException,
)
from hadoop_qjm.qjournal.protocol.format_rules import STOP_THE_NAMENODES, FormatCheck
from hadoop_qjm.qjournal.protocol.membership import Config, MembershipRecord
from hadoop_qjm.qjournal.protocol.messages import (
    NewEpochResponse,
    PersistedRecoveryPaxosData,
    RequestInfo,
)
from hadoop_qjm.qjournal.server.jn_storage import JNStorage
from hadoop_qjm.qjournal.server.journal_format_guard import WriterWatch, check_format
from hadoop_qjm.qjournal.server.journal_membership import JournalMembership
from hadoop_qjm.qjournal.server.journal_metrics import JournalMetrics, JournalNodeMetrics
from hadoop_qjm.qjournal.server.journal_node_settings import edits_dir_permission
from hadoop_qjm.qjournal.server.journal_reads import MAX_JOURNALED_EDITS_WAIT_S, JournalReads
from hadoop_qjm.qjournal.server.journal_recovery import JournalRecovery, scan_segment_state
from hadoop_qjm.qjournal.server.journal_scrubber import SegmentReaders
from hadoop_qjm.qjournal.server.journal_write_path import (
    WARN_SYNC_MILLIS_THRESHOLD,
    JournalWritePath,
)
from hadoop_qjm.qjournal.server.journaled_edits_cache import JournaledEditsCache
from hadoop_qjm.qjournal.server.kept_segment_state import KeptSegmentState
from hadoop_qjm.qjournal.server.paxos_record import read_paxos_record
from hadoop_qjm.qjournal.server.scrub_rules import RepairOutcome

__all__ = [
    "MAX_JOURNALED_EDITS_WAIT_S",
    "WARN_SYNC_MILLIS_THRESHOLD",
    "Journal",
    "JournalFaultInjector",
]

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


class Journal(JournalReads, JournalWritePath, JournalRecovery):
    """The journal of one journal id: its storage, its promises, its open segment.

    This class holds the state, the epoch checks and the calls that change them. The
    write path (``journal`` and the writer's next batches, startLogSegment,
    finalizeLogSegment) is :class:`~hadoop_qjm.qjournal.server.journal_write_path.JournalWritePath`,
    the reads (the manifest, the edits cache and its long poll, ``/getJournal``'s open)
    :class:`~hadoop_qjm.qjournal.server.journal_reads.JournalReads`, and recovery
    (prepareRecovery/acceptRecovery, design paper §2.8-2.9)
    :class:`~hadoop_qjm.qjournal.server.journal_recovery.JournalRecovery`.
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
        self._take_request_effects(decision.ipc_serial, decision.committed_txid)
        decision.raise_if_rejected()
        self.writer_watch.saw_writer(req.epoch)

    def _take_request_effects(self, ipc_serial: int | None, committed_txid: int | None) -> None:
        """checkRequest's effects after the promise, in its order (lock held): the new IPC
        serial, then the committed txid (None: keep either). Both :meth:`_check_request`
        and the writer's next batch (``journal_step.Ready``) change them only here."""
        if ipc_serial is not None:
            self.current_epoch_ipc_serial = ipc_serial
        if committed_txid is not None and committed_txid != self.committed_txn_id.get():
            # Unchanged (a writer's heartbeat, a retry): nothing to write. Written at most
            # every COMMITTED_TXID_WRITE_INTERVAL_S (docs/journalnode.md).
            self.committed_txn_id.set_lazily(committed_txid)

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

    def purge_logs_older_than(self, req: RequestInfo, min_txid_to_keep: int) -> None:
        with self._lock:
            self._check_formatted()
            self._check_request(req)
            if self._kept is not None and self._kept.start_txid < min_txid_to_keep:
                self._drop_kept()
            self.storage.purge_data_older_than(min_txid_to_keep)

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
