"""JNStorage: one journal's directory on a JournalNode (HADOOP-QJM-DIGEST.md §3).

::

    <root>/in_use.lock
    <root>/current/VERSION                   storageType=JOURNAL_NODE
    <root>/current/last-promised-epoch       text, atomic
    <root>/current/last-writer-epoch         text, atomic
    <root>/current/committed-txid            8 bytes big-endian, best effort
    <root>/current/paxos/<segTxId>           accepted recoveries (see paxos_record.py)
    <root>/current/edits_inprogress_<19d>    edits_<19d>-<19d>
    <root>/current/edits_inprogress_<19d>.epoch=<E>   acceptRecovery's download
    <root>/edits.sync/                       the JournalNodeSyncer's downloads
    <root>/previous/                         an upgrade not finalized yet (for a rollback)
    <root>/previous.tmp/ removed.tmp/ finalized.tmp/   a step a crash interrupted
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path

from hadoop_qjm.common import nn_upgrade_util
from hadoop_qjm.common.durable import FsyncFunction, fsync_dir, unlink_durable
from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException
from hadoop_qjm.common.storage import NODE_TYPE_JOURNAL_NODE, StorageDirectory, StorageState
from hadoop_qjm.common.storage_info import NamespaceInfo, StorageInfo
from hadoop_qjm.editlog.file_journal_manager import (
    FileJournalManager,
    finalized_edits_file_name,
    inprogress_edits_file_name,
)

__all__ = ["JNStorage"]

LOG = logging.getLogger(__name__)

PAXOS_DIR = "paxos"
EDITS_SYNC_DIR = "edits.sync"
_PAXOS_FILE = re.compile(r"\d+")
_SEGMENT_MD5_FILE = re.compile(r"edits_(\d+)-(\d+)\.md5(\.tmp)?", re.ASCII)
_NO_RECOVERY = (StorageState.NORMAL, StorageState.NON_EXISTENT, StorageState.NOT_FORMATTED)


class JNStorage:
    """The storage of one journal: its StorageDirectory, its VERSION and its FileJournalManager.

    The directory is locked for the life of this object (``in_use.lock``).
    """

    def __init__(
        self,
        conf,
        log_dir: str | os.PathLike[str],
        dir_perm: int = 0o700,
        *,
        fsync: FsyncFunction = os.fsync,
    ) -> None:
        self.log_dir = Path(log_dir)
        self._fsync = fsync
        self.sd = StorageDirectory(self.log_dir, NODE_TYPE_JOURNAL_NODE, dir_perm, fsync=fsync)
        self.fjm = FileJournalManager(conf, self.sd)
        self.storage_info: StorageInfo | None = None
        self.state = StorageState.NON_EXISTENT
        try:
            self.analyze_storage()
        except BaseException:
            self.sd.unlock()  # a directory this JournalNode cannot use stays as it was
            raise

    # ---- state ----------------------------------------------------------------------------------
    def analyze_storage(self) -> None:
        """Lock the directory (if it exists) and read VERSION if it is formatted.

        A directory a crash left in the middle of an upgrade, rollback or finalize
        (``previous.tmp/``, ``removed.tmp/``, ``finalized.tmp/``) is first completed or
        recovered as Hadoop's JNStorage.analyzeAndRecoverStorage does (StorageDirectory's
        doRecover), then analyzed again: Hadoop reports such a journal unformatted until
        the next restart; here it is formatted at once, and a peer cannot format it."""
        self.state = self.sd.analyze_storage()
        if self.state not in _NO_RECOVERY:
            LOG.info("Journal storage %s needs %s", self.sd, self.state.value)
            nn_upgrade_util.do_recover(self.sd, self.state, fsync=self._fsync)
            self.state = self.sd.analyze_storage()
        if self.state == StorageState.NORMAL:
            self.storage_info = self.sd.read_storage_info()
        else:
            self.storage_info = None

    def is_formatted(self) -> bool:
        return self.state == StorageState.NORMAL

    def format(self, ns_info: NamespaceInfo) -> None:
        """Recreate ``current/`` with a VERSION for ``ns_info`` and an empty ``paxos/``."""
        if ns_info.namespace_id == 0:
            raise IllegalArgumentException(
                f"can't format with uninitialized namespace info: {ns_info}"
            )
        LOG.info("Formatting journal %s with nsid: %d", self.sd, ns_info.namespace_id)
        self.sd.analyze_storage(startup_option_format=True)  # creates the root, takes the lock
        self.sd.format(ns_info.storage_info())
        self.paxos_dir.mkdir(exist_ok=True)
        fsync_dir(self.sd.current, fsync=self._fsync)
        self.analyze_storage()

    def check_consistent_namespace(self, ns_info: NamespaceInfo) -> None:
        """The namespace and cluster ids of a caller must be this journal's."""
        mine = self.storage_info
        if mine is None:
            return
        if ns_info.namespace_id != mine.namespace_id:
            raise IOException(
                f"Incompatible namespaceID for journal {self.sd}: NameNode has nsId "
                f"{ns_info.namespace_id} but storage has nsId {mine.namespace_id}"
            )
        if ns_info.cluster_id != mine.cluster_id:
            raise IOException(
                f"Incompatible clusterID for journal {self.sd}: NameNode has clusterId "
                f"'{ns_info.cluster_id}' but storage has clusterId '{mine.cluster_id}'"
            )

    def close(self) -> None:
        self.sd.unlock()

    # ---- paths ----------------------------------------------------------------------------------
    @property
    def current_dir(self) -> Path:
        return self.sd.current

    @property
    def paxos_dir(self) -> Path:
        return self.sd.current / PAXOS_DIR

    @property
    def edits_sync_dir(self) -> Path:
        return self.log_dir / EDITS_SYNC_DIR

    def paxos_file(self, segment_txid: int) -> Path:
        return self.paxos_dir / str(segment_txid)

    def in_progress_edit_log(self, start_txid: int) -> Path:
        return self.sd.current / inprogress_edits_file_name(start_txid)

    def finalized_edit_log(self, start_txid: int, end_txid: int) -> Path:
        return self.sd.current / finalized_edits_file_name(start_txid, end_txid)

    def temporary_edits_file(self, start_txid: int, epoch: int) -> Path:
        """Where acceptRecovery downloads a segment before its commit point."""
        return self.sd.current / f"{inprogress_edits_file_name(start_txid)}.epoch={epoch}"

    def synced_edits_tmp(self, start_txid: int, end_txid: int) -> Path:
        return self.edits_sync_dir / finalized_edits_file_name(start_txid, end_txid)

    # ---- retention ------------------------------------------------------------------------------
    def purge_data_older_than(self, min_txid_to_keep: int) -> None:
        """Delete segments and paxos records wholly below ``min_txid_to_keep``.

        Failures are logged, not raised (Hadoop's JNStorage.purgeMatching).
        """
        self.fjm.purge_logs_older_than(min_txid_to_keep)
        # The md5s kept beside the purged segments (segment_md5), and any a crash left
        # without its segment or half written (.tmp): all below the txid kept.
        try:
            old = [
                self.sd.current / name
                for name in os.listdir(self.sd.current)
                if (m := _SEGMENT_MD5_FILE.fullmatch(name)) and int(m.group(2)) < min_txid_to_keep
            ]
        except OSError:
            old = []
        try:
            names = os.listdir(self.paxos_dir)
        except OSError:
            names = []
        old += [
            self.paxos_dir / name
            for name in names
            if _PAXOS_FILE.fullmatch(name) and int(name) < min_txid_to_keep
        ]
        # The directory is fsynced after the unlinks: a purge acknowledged to the writer
        # must not bring old records back after a power cut.
        for path, e in unlink_durable(old, fsync=self._fsync):
            LOG.warning("Unable to purge %s: %s", path, e)

    def __str__(self) -> str:
        return str(self.sd)
