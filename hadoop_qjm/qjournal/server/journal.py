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

import functools
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.durable import BestEffortLongFile, PersistentLongFile, fsync_dir
from hadoop_qjm.common.exceptions import (
    HadoopException,
    IllegalArgumentException,
    IOException,
)
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.file_journal_manager import EditLogFile
from hadoop_qjm.qjournal.protocol import membership as membership_rules
from hadoop_qjm.qjournal.protocol import rules
from hadoop_qjm.qjournal.protocol.exceptions import JournalInUseException
from hadoop_qjm.qjournal.protocol.format_rules import STOP_THE_NAMENODES, FormatCheck
from hadoop_qjm.qjournal.protocol.membership import Config, MembershipRecord
from hadoop_qjm.qjournal.protocol.messages import (
    NewEpochResponse,
    RequestInfo,
)
from hadoop_qjm.qjournal.server.jn_storage import JNStorage
from hadoop_qjm.qjournal.server.journal_checks import JournalChecks, JournalCore
from hadoop_qjm.qjournal.server.journal_faults import JournalFaultInjector
from hadoop_qjm.qjournal.server.journal_format_guard import WriterWatch, check_format
from hadoop_qjm.qjournal.server.journal_membership import JournalMembership
from hadoop_qjm.qjournal.server.journal_metrics import JournalMetrics, JournalNodeMetrics
from hadoop_qjm.qjournal.server.journal_node_settings import edits_dir_permission
from hadoop_qjm.qjournal.server.journal_reads import MAX_JOURNALED_EDITS_WAIT_S, JournalReads
from hadoop_qjm.qjournal.server.journal_recovery import (
    JournalRecovery,
    PaxosRecordWriter,
    SegmentScanner,
    scan_segment_state,
)
from hadoop_qjm.qjournal.server.journal_scrubber import SegmentReaders
from hadoop_qjm.qjournal.server.journal_state import JournalState
from hadoop_qjm.qjournal.server.journal_upgrade import JournalUpgrade
from hadoop_qjm.qjournal.server.journal_write_path import (
    WARN_SYNC_MILLIS_THRESHOLD,
    JournalWritePath,
)
from hadoop_qjm.qjournal.server.journaled_edits_cache import JournaledEditsCache
from hadoop_qjm.qjournal.server.kept_segment_state import KeptSegmentState
from hadoop_qjm.qjournal.server.paxos_record import write_paxos_record
from hadoop_qjm.qjournal.server.scrub_rules import RepairOutcome
from hadoop_qjm.qjournal.server.segment_md5 import (
    remove_stored_md5,
    save_md5,
    write_md5_before_rename,
)

__all__ = [
    "MAX_JOURNALED_EDITS_WAIT_S",
    "WARN_SYNC_MILLIS_THRESHOLD",
    "Journal",
    "JournalFaultInjector",
]

LOG = logging.getLogger(__name__)

#: Keep what a scan of the open segment would find (issue 25; docs/journalnode.md).
KEPT_SEGMENT_STATE_KEY = keys.DFS_JOURNALNODE_KEPT_SEGMENT_STATE_KEY
#: Compare the kept state with a fresh scan at every use (tests and fault runs only).
KEPT_SEGMENT_STATE_VERIFY_KEY = "dfs.journalnode.kept-segment-state.verify"


class _StateView:
    """A Journal attribute that reads (and, ``writable``, sets) a field of its
    :class:`JournalState`: the names the handler, the metrics, the format guard and
    tests read on a Journal."""

    def __init__(self, field: str, *, writable: bool = False) -> None:
        self._field = field
        self._writable = writable

    def __get__(self, journal: Journal | None, owner: type | None = None):  # noqa: ANN204
        if journal is None:
            return self
        return getattr(journal._state, self._field)

    def __set__(self, journal: Journal, value: object) -> None:
        if not self._writable:
            raise AttributeError(f"Journal.{self._field} is read-only")
        setattr(journal._state, self._field, value)


def _delegated(collaborator: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """A public method of Journal that is one of its collaborators' (the attribute named
    ``collaborator``): it calls that collaborator's method, and carries its docstring and
    signature (``functools.wraps``)."""
    name = method.__name__

    @functools.wraps(method)
    def call(journal: Journal, *args: Any, **kwargs: Any) -> Any:
        return getattr(getattr(journal, collaborator), name)(*args, **kwargs)

    return call


class Journal:
    """The journal of one journal id: its storage, its promises, its open segment.

    Its mutable state is one :class:`~hadoop_qjm.qjournal.server.journal_state.JournalState`,
    shared with its collaborators, each built with what it uses and called under the
    journal's lock: the checks of every call and the state changes they share
    (:class:`~hadoop_qjm.qjournal.server.journal_checks.JournalChecks`), the write path
    (``journal`` and the writer's next batches, startLogSegment, finalizeLogSegment:
    :class:`~hadoop_qjm.qjournal.server.journal_write_path.JournalWritePath`), the reads
    (the manifest, the edits cache and its long poll, ``/getJournal``'s open:
    :class:`~hadoop_qjm.qjournal.server.journal_reads.JournalReads`) and recovery
    (prepareRecovery/acceptRecovery, design paper §2.8-2.9:
    :class:`~hadoop_qjm.qjournal.server.journal_recovery.JournalRecovery`) and the HA
    upgrade (HDFS-5138: :class:`~hadoop_qjm.qjournal.server.journal_upgrade.JournalUpgrade`).
    This class keeps the rest (format, newEpoch, the membership record, purge, discard, the
    scrubber's repair) and delegates the protocol's other calls.

    ``write_paxos_record`` persists an accepted recovery's paxos record (default:
    Hadoop's format, ``paxos_record.write_paxos_record``; the randomized harness passes
    one that writes what Hadoop's JournalNode writes).
    """

    last_promised_epoch: PersistentLongFile = _StateView("last_promised_epoch")
    last_writer_epoch: PersistentLongFile = _StateView("last_writer_epoch")
    committed_txn_id: BestEffortLongFile = _StateView("committed_txn_id")
    membership: JournalMembership = _StateView("membership")
    cache: JournaledEditsCache | None = _StateView("cache")
    cur_segment_txid: int = _StateView("cur_segment_txid")
    cur_segment_layout_version: int = _StateView("cur_segment_layout_version")
    next_txid: int = _StateView("next_txid")
    highest_written_txid: int = _StateView("highest_written_txid")
    current_epoch_ipc_serial: int = _StateView("current_epoch_ipc_serial")
    last_journal_timestamp_ms: int = _StateView("last_journal_timestamp_ms", writable=True)
    _cur_segment = _StateView("cur_segment")
    _kept: KeptSegmentState | None = _StateView("kept")
    _edit_waiters: int = _StateView("edit_waiters")

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
        write_paxos_record: PaxosRecordWriter = write_paxos_record,
    ) -> None:
        rules.validate_journal_id(journal_id)
        self.conf = conf
        self.journal_id = journal_id
        self.log = logging.LoggerAdapter(LOG, {"journal_id": journal_id})
        self._lock = threading.RLock()
        self._fault = fault_injector or JournalFaultInjector()
        self.storage = JNStorage(conf, log_dir, edits_dir_permission(conf))
        self.fjm = self.storage.fjm
        #: The writer and its segment's start, for format's live-writer check (issue 33).
        self.writer_watch = WriterWatch(conf, clock)
        self._state = state = JournalState.load(self.storage.current_dir, journal_id)
        in_progress = conf.get_bool("dfs.ha.tail-edits.in-progress", False) if conf else False
        if in_progress:
            state.cache = JournaledEditsCache(conf)
        kept_enabled = (
            conf.get_bool(KEPT_SEGMENT_STATE_KEY, keys.DFS_JOURNALNODE_KEPT_SEGMENT_STATE_DEFAULT)
            if conf
            else True
        )
        kept_verify = conf.get_bool(KEPT_SEGMENT_STATE_VERIFY_KEY, False) if conf else False
        self._checks = checks = JournalChecks(
            conf, journal_id, self.storage, state, self.writer_watch, self.log
        )
        self._scanner = SegmentScanner(state, self.log, enabled=kept_enabled, verify=kept_verify)
        checks.drop_edits_cache()  # tagged with the promise just read
        latest = self.scan_storage_for_latest_edits()
        if latest is not None:
            checks.update_highest_written_txid(latest.last_txid)
        self.metrics: JournalMetrics = (metrics or JournalNodeMetrics()).for_journal(self)
        #: Segment files open for /getJournal: the scrubber leaves them alone (issue 27).
        self.segment_readers = SegmentReaders()
        core = JournalCore(journal_id, self._lock, self.storage, state, checks, self.log)
        self._writes = JournalWritePath(
            core, self._scanner, self.metrics, self._fault, self.writer_watch, clock
        )
        self._reads = JournalReads(core, self.metrics, self.segment_readers)
        self._recovery = JournalRecovery(
            core, conf, self._scanner, self._fault, fetch=fetcher, write_record=write_paxos_record
        )
        self._upgrade = JournalUpgrade(core)

    # ---- read-only views ------------------------------------------------------------------------
    def is_formatted(self) -> bool:
        return self.storage.is_formatted()

    def get_last_promised_epoch(self) -> int:
        """The promise (getJournalState); JournalNotFormattedException if unformatted."""
        with self._lock:
            self._checks.check_formatted()
            return self.last_promised_epoch.get()

    def get_membership_text(self) -> str | None:
        """This node's membership record (getJournalState; not Hadoop's), None if the set
        never changed (docs/journalnode.md, "Online, by joint consensus")."""
        with self._lock:
            self._checks.check_formatted()
            record = self.membership.record
            return None if record is None else record.to_text()

    def set_membership(
        self, req: RequestInfo, record: str, ns_info: NamespaceInfo | None = None
    ) -> None:
        """Replace the membership record: a set change's step, by the writer (not Hadoop's).
        A joining node is asked with the writer's ``ns_info``: it must be of that namespace."""
        with self._lock:
            self._checks.check_formatted()
            if ns_info is not None:
                self.storage.check_consistent_namespace(ns_info)
            self._checks.check_request(req)
            self.membership.set(MembershipRecord.parse(record), req.epoch)

    def adopt_membership(self, record: str) -> str:
        """Take the membership record a majority of the peers agree on (self-format,
        ``journalnode -bootstrap``), unless this node holds it or a newer one, or it is no
        legal successor of this node's; says which."""
        proposed = MembershipRecord.parse(record)
        with self._lock:
            self._checks.check_formatted()
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
            self._checks.check_formatted()
            return self.last_writer_epoch.get()

    def get_committed_txid(self) -> int:
        with self._lock:
            return self.committed_txn_id.get() if self.is_formatted() else INVALID_TXID

    def get_journal_ctime(self) -> int:
        with self._lock:
            self._checks.check_formatted()
            return self.storage.storage_info.ctime

    def get_storage_info(self):
        """The journal's StorageInfo (its VERSION), for a peer formatting itself (HDFS-16690)."""
        with self._lock:
            self._checks.check_formatted()
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
        return self._state.cur_segment is not None

    @property
    def kept_segment_state(self) -> KeptSegmentState | None:
        """What a scan of the open (or last scanned) in-progress segment would find, kept
        without reading it; None when not kept (the next use scans)."""
        return self._state.kept

    def scanned_segment_state(self, segment_txid: int) -> KeptSegmentState | None:
        """A fresh scan of ``edits_inprogress_<segment_txid>``, for comparison with
        :attr:`kept_segment_state` (tests, the fault harness)."""
        with self._lock:
            return scan_segment_state(self.storage.in_progress_edit_log(segment_txid), segment_txid)

    # ---- the calls of the collaborators ---------------------------------------------------------
    open_segment_for_read = _delegated("_reads", JournalReads.open_segment_for_read)
    get_edit_log_manifest = _delegated("_reads", JournalReads.get_edit_log_manifest)
    await_journaled_edits = _delegated("_reads", JournalReads.await_journaled_edits)
    get_journaled_edits = _delegated("_reads", JournalReads.get_journaled_edits)
    journal = _delegated("_writes", JournalWritePath.journal)
    journal_in_order = _delegated("_writes", JournalWritePath.journal_in_order)
    journal_in_order_group = _delegated("_writes", JournalWritePath.journal_in_order_group)
    start_log_segment = _delegated("_writes", JournalWritePath.start_log_segment)
    finalize_log_segment = _delegated("_writes", JournalWritePath.finalize_log_segment)
    prepare_recovery = _delegated("_recovery", JournalRecovery.prepare_recovery)
    accept_recovery = _delegated("_recovery", JournalRecovery.accept_recovery)
    move_tmp_segment_to_current = _delegated(
        "_recovery", JournalRecovery.move_tmp_segment_to_current
    )

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
            state = self._state
            self._checks.abort_cur_segment()
            state.drop_kept()
            state.committed_txn_id.close(flush=False)  # its directory is recreated
            self.storage.format(ns_info)
            state.reload(current, self.journal_id)
            self._checks.update_highest_written_txid(0)
            state.current_epoch_ipc_serial = -1
            state.storage_failure = None
            self._checks.drop_edits_cache()
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
            self._checks.check_formatted()
            self.storage.check_consistent_namespace(ns_info)
            rules.check_new_epoch(epoch, self.last_promised_epoch.get(), self.journal_id)
            # Only a writer that would win this node's promise may bring it a record.
            if writer_record is not None:
                self.membership.catch_up(MembershipRecord.parse(writer_record), writer_config)
            self.membership.check_writer(
                None if writer_config is None else Config.parse(writer_config)
            )
            self._checks.promise(epoch)
            self.writer_watch.saw_writer(epoch)
            self._checks.abort_cur_segment()
            latest = self.scan_storage_for_latest_edits()
            return NewEpochResponse(latest.first_txid if latest is not None else None)

    def heartbeat(self, req: RequestInfo) -> None:
        with self._lock:
            self._checks.check_formatted()
            self._checks.check_request(req)

    def purge_logs_older_than(self, req: RequestInfo, min_txid_to_keep: int) -> None:
        with self._lock:
            self._checks.check_formatted()
            self._checks.check_request(req)
            kept = self._state.kept
            if kept is not None and kept.start_txid < min_txid_to_keep:
                self._state.drop_kept()
            self.storage.purge_data_older_than(min_txid_to_keep)

    # ---- upgrade and rollback (HDFS-5138; journal_upgrade) --------------------------------------
    do_pre_upgrade = _delegated("_upgrade", JournalUpgrade.do_pre_upgrade)
    do_upgrade = _delegated("_upgrade", JournalUpgrade.do_upgrade)
    do_finalize = _delegated("_upgrade", JournalUpgrade.do_finalize)
    can_roll_back = _delegated("_upgrade", JournalUpgrade.can_roll_back)

    def do_rollback(self) -> None:
        """``previous/`` back as ``current/`` (JournalUpgrade.do_rollback), then its
        segments scanned again for the highest written txid."""
        with self._lock:
            self._upgrade.do_rollback()
            latest = self.scan_storage_for_latest_edits()
            self._checks.update_highest_written_txid(0 if latest is None else latest.last_txid)

    def discard_segments(self, start_txid: int) -> None:
        """Rename every segment from ``start_txid`` on ``<name>.trash`` (rolling-upgrade
        rollback; a segment holding txns on both sides refuses it all) and lower the
        committed txid to ``start_txid - 1``, fsynced: a power cut must not bring back a
        value above what the journal holds, which the next writer could not go below."""
        with self._lock:
            self._checks.check_formatted()
            self._checks.abort_cur_segment()
            self._state.drop_kept()
            trashed = [
                log.path
                for log in self.fjm.get_log_files(0)
                if not log.is_in_progress and log.first_txid >= start_txid
            ]
            self.fjm.discard_segments(start_txid)
            # Their kept md5s go too: new txns may be finalized under the same names.
            remove_stored_md5(p for p in trashed if not p.exists())
            self.committed_txn_id.set_durably(start_txid - 1)
            latest = self.scan_storage_for_latest_edits()
            self._checks.update_highest_written_txid(0 if latest is None else latest.last_txid)
            self._checks.drop_edits_cache()

    # ---- helpers --------------------------------------------------------------------------------
    def scan_storage_for_latest_edits(self) -> EditLogFile | None:
        """The newest segment holding a transaction; empty newer ones are renamed ``.empty``."""
        if not self.storage.current_dir.is_dir():
            return None
        files = self.fjm.get_log_files(0)
        while files:
            latest = files.pop()
            if latest.is_in_progress:
                self._scanner.scan_in_progress(latest)  # the kept state, when it describes it
            else:
                latest.scan_log()
            self.log.info("Latest log is %s", latest)
            if latest.last_txid == INVALID_TXID:
                self.log.warning(
                    "Latest log %s has no transactions. moving it aside and looking for previous log",
                    latest,
                )
                self._state.drop_kept(latest.first_txid)
                latest.move_aside_empty_file()
            else:
                return latest
        self.log.info("No files in %s", self.storage)
        return None

    def replace_damaged_segment(
        self,
        path: Path,
        replacement: Path | None,
        readers: SegmentReaders,
        replacement_md5: str | None = None,
    ) -> RepairOutcome:
        """The scrubber's change (issue 27): move the damaged finalized segment ``path``
        aside as ``<name>.corrupt`` and, if given, rename the fsynced ``replacement`` to its
        name. Returns :class:`RepairOutcome` IN_USE (a reader has it open: nothing done),
        GONE (purged meanwhile) or DONE. The commit point is the fsync of the directory after the
        second rename; a crash before it leaves the segment missing here, which the
        syncer fills from a peer. The md5 kept beside it (``segment_md5``) becomes
        ``replacement_md5`` (the confirmed copy's), or goes with the damaged file."""
        with self._lock:
            self._checks.check_formatted()
            if readers.in_use(path):
                return RepairOutcome.IN_USE
            if not path.exists():
                return RepairOutcome.GONE
            aside = path.with_name(path.name + ".corrupt")
            os.replace(path, aside)
            write_md5_before_rename(path, replacement_md5 if replacement is not None else None)
            if replacement is not None:
                os.replace(replacement, path)
            fsync_dir(path.parent)
            return RepairOutcome.DONE

    def keep_verified_md5(self, path: Path, file_id: int, size: int, md5_hex: str) -> bool:
        """The scrubber's: keep ``md5_hex``, the md5 of finalized segment ``path`` (inode
        ``file_id``, ``size`` bytes) whose every op it just verified, beside it
        (``segment_md5``); False, nothing written, if the file changed meanwhile."""
        with self._lock:
            try:
                st = os.stat(path)
            except FileNotFoundError:
                return False
            if (st.st_ino, st.st_size) != (file_id, size):
                return False
            save_md5(path, md5_hex)
            return True

    def close(self) -> None:
        """Release the segment, the committed-txid file and the storage lock."""
        with self._lock:
            self._checks.abort_cur_segment()
            state = self._state
            state.drop_kept()
            with state.written:
                state.closed = True
                state.written.notify_all()
            try:
                state.committed_txn_id.close()
            finally:
                self.storage.close()
                self.metrics.node.forget(self.journal_id)

    def __str__(self) -> str:
        return f"Journal({self.journal_id} at {self.storage.log_dir})"
