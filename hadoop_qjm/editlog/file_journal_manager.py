"""FileJournalManager: edit-log segments in one local ``current/`` directory.

Segment files are named as Hadoop names them::

    edits_inprogress_0000000000000000001              open (may end in 0xFF padding)
    edits_0000000000000000001-0000000000000000003     finalized (exactly its transactions)

A file with a suffix (``.empty``, ``.corrupt``, ``.trash``, ``.epoch=N``,
``.stale``) has been moved aside: every scanner ignores it, only purging
removes it.
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path

from hadoop_qjm.common import nn_upgrade_util
from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.durable import fsync_dir
from hadoop_qjm.common.exceptions import CorruptionException, IllegalStateException, IOException
from hadoop_qjm.common.remote_edit_log import RemoteEditLog
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream, scan_edit_log
from hadoop_qjm.editlog.edit_log_file_output_stream import EditLogFileOutputStream
from hadoop_qjm.editlog.journal_manager import JournalManager

__all__ = [
    "FileJournalManager",
    "EditLogFile",
    "inprogress_edits_file_name",
    "finalized_edits_file_name",
    "match_edit_logs",
]

LOG = logging.getLogger(__name__)

EDITS_REGEX = re.compile(r"edits_(\d+)-(\d+)", re.ASCII)
EDITS_INPROGRESS_REGEX = re.compile(r"edits_inprogress_(\d+)", re.ASCII)
EDITS_INPROGRESS_STALE_REGEX = re.compile(r"edits_inprogress_(\d+)(\..*)", re.ASCII)

#: Hadoop's default double-buffer size for a local edits stream (512 KiB).
DEFAULT_OUTPUT_BUFFER_CAPACITY = 512 * 1024


def inprogress_edits_file_name(txid: int) -> str:
    return f"edits_inprogress_{txid:019d}"


def finalized_edits_file_name(start_txid: int, end_txid: int) -> str:
    return f"edits_{start_txid:019d}-{end_txid:019d}"


@dataclass
class EditLogFile:
    """One segment file, with what is known of its transactions.

    ``last_txid`` is taken from the name for a finalized file; an in-progress
    file's is unknown (INVALID_TXID) until :meth:`scan_log`.
    """

    path: Path
    first_txid: int
    last_txid: int
    is_in_progress: bool
    has_corrupt_header: bool = False
    valid_length: int = -1
    unscannable_layout: bool = False  # a whole header of a layout too old to scan

    @property
    def name(self) -> str:
        return self.path.name

    def contains_txid(self, txid: int) -> bool:
        return self.first_txid <= txid <= self.last_txid

    def length(self) -> int:
        return self.path.stat().st_size

    def scan_log(self, max_txid_to_scan: int | None = None) -> None:
        """Validate the file; sets ``last_txid``, ``has_corrupt_header``, ``valid_length``
        and ``unscannable_layout``."""
        validation = scan_edit_log(self.path, max_txid_to_scan)
        self.last_txid = validation.last_txid
        self.has_corrupt_header = validation.has_corrupt_header
        self.valid_length = validation.valid_length
        self.unscannable_layout = validation.unscannable_layout

    def move_aside_corrupt_file(self) -> None:
        self._rename_self(".corrupt")

    def move_aside_empty_file(self) -> None:
        self._rename_self(".empty")

    def move_aside_trash_file(self) -> None:
        self._rename_self(".trash")

    def move_aside_stale_inprogress_file(self) -> None:
        self._rename_self(".stale")

    def _rename_self(self, suffix: str) -> None:
        target = self.path.with_name(self.path.name + suffix)
        try:
            os.replace(self.path, target)  # replaces an earlier moved-aside file of that name
            fsync_dir(self.path.parent)
        except OSError as e:
            raise IOException(f"Couldn't rename log {self.path} to {target}: {e}") from e
        LOG.info("Moved aside %s as %s", self.path, target.name)
        self.path = target

    def __str__(self) -> str:
        return (
            f"EditLogFile(file={self.path},first={self.first_txid:019d},"
            f"last={self.last_txid:019d},inProgress={self.is_in_progress},"
            f"hasCorruptHeader={self.has_corrupt_header})"
        )


def match_edit_logs(
    current_dir: Path, for_purging: bool = False, start_txid: int | None = None
) -> list[EditLogFile]:
    """The segment files of ``current_dir`` (moved-aside ones only when ``for_purging``);
    with ``start_txid``, only those starting there (the others are skipped before a path is
    made for them: a JournalNode's directory may hold thousands)."""
    try:
        names = os.listdir(current_dir)
    except FileNotFoundError:
        return []
    except OSError as e:
        raise IOException(f"Unable to list {current_dir}: {e}") from e
    logs: list[EditLogFile] = []
    digits = None if start_txid is None else str(start_txid)
    for name in names:
        if digits is not None and digits not in name:
            continue  # (a cheap necessary condition: the name holds the txid's digits)
        if (m := EDITS_REGEX.fullmatch(name)) is not None:
            start, end = int(m.group(1)), int(m.group(2))
            if start_txid is not None and start != start_txid:
                continue
            if start > end:
                LOG.error("Ignoring %s: its start txid is after its end txid", current_dir / name)
                continue
            logs.append(EditLogFile(current_dir / name, start, end, False))
            continue
        m = EDITS_INPROGRESS_REGEX.fullmatch(name)
        if m is None and for_purging:
            m = EDITS_INPROGRESS_STALE_REGEX.fullmatch(name)
        if m is not None:
            start = int(m.group(1))
            if start_txid is None or start == start_txid:
                logs.append(EditLogFile(current_dir / name, start, INVALID_TXID, True))
    return logs


def _sort_and_check(logs: list[EditLogFile]) -> list[EditLogFile]:
    logs.sort(key=lambda log: (log.first_txid, log.is_in_progress))
    for previous, log in zip(logs, logs[1:]):
        if previous.first_txid == log.first_txid:
            raise IllegalStateException(
                f"More than one log segment in {log.path.parent} starting at txid "
                f"{log.first_txid}: {previous.name}, {log.name}"
            )
    return logs


class FileJournalManager(JournalManager):
    """Segments in one directory (Hadoop's ``FileJournalManager``).

    ``sd`` is a StorageDirectory (its ``current`` directory is used) or the path of
    the ``current`` directory itself.
    """

    def __init__(self, conf=None, sd=None, *, max_op_size: int | None = None) -> None:
        if sd is None:
            raise IllegalStateException("FileJournalManager needs a storage directory")
        current = getattr(sd, "current", None)
        self.storage_directory = sd if current is not None else None
        self.current_dir = Path(current if current is not None else sd)
        if max_op_size is None and conf is not None:
            max_op_size = conf.get_int("dfs.namenode.max.op.size", 50 * 1024 * 1024)
        self.max_op_size = max_op_size
        self.output_buffer_capacity = DEFAULT_OUTPUT_BUFFER_CAPACITY
        #: dfs.namenode.edits.noeditlogchannelflush: segments written O_SYNC, no fdatasync.
        self.sync_writes = conf is not None and conf.get_bool(
            keys.DFS_NAMENODE_EDITS_NOEDITLOGCHANNELFLUSH_KEY,
            keys.DFS_NAMENODE_EDITS_NOEDITLOGCHANNELFLUSH_DEFAULT,
        )
        self.current_in_progress: Path | None = None
        #: Scans of in-progress files stop here (the JournalNode sets its highest written txid).
        self.last_readable_txid: int | None = None

    def __str__(self) -> str:
        return f"FileJournalManager(root={self.current_dir.parent})"

    # ---- writing --------------------------------------------------------------------------------
    def set_output_buffer_capacity(self, size: int) -> None:
        self.output_buffer_capacity = size

    def start_log_segment(self, txid: int, layout_version: int) -> EditLogFileOutputStream:
        path = self.current_dir / inprogress_edits_file_name(txid)
        stream = EditLogFileOutputStream(
            path, self.output_buffer_capacity, sync_writes=self.sync_writes
        )
        stream.create(layout_version)
        fsync_dir(self.current_dir)
        self.current_in_progress = path
        return stream

    def finalize_log_segment(
        self, first_txid: int, last_txid: int, truncate_to: int | None = None
    ) -> None:
        """Rename ``edits_inprogress_<first>`` to ``edits_<first>-<last>``.

        ``truncate_to`` (the validated length) first cuts the file to exactly its
        transactions, so a finalized segment never carries padding or a torn tail, and
        fsyncs it whether or not it had to cut: the file may hold bytes never synced (a
        lagging JournalNode's batches, a segment aborted by a new writer), and a
        finalized name must only ever name durable contents. A failure here is an
        :class:`IllegalStateException` whose cause is the ``OSError``.
        """
        src = self.current_dir / inprogress_edits_file_name(first_txid)
        dst = self.current_dir / finalized_edits_file_name(first_txid, last_txid)
        LOG.info("Finalizing edits file %s -> %s", src, dst.name)
        if dst.exists():
            raise IllegalStateException(
                f"Can't finalize edits file {src} since finalized file {dst} already exists"
            )
        try:
            if truncate_to is not None and truncate_to >= 0:
                with open(src, "r+b") as f:
                    if os.fstat(f.fileno()).st_size != truncate_to:
                        f.truncate(truncate_to)
                    os.fsync(f.fileno())
            os.rename(src, dst)
            fsync_dir(self.current_dir)
        except OSError as e:
            raise IllegalStateException(f"Unable to finalize edits file {src}: {e}") from e
        if src == self.current_in_progress:
            self.current_in_progress = None

    # ---- listing --------------------------------------------------------------------------------
    def get_log_files(self, from_txid: int) -> list[EditLogFile]:
        """Segments starting at or after ``from_txid``, or finalized ones holding it; sorted.

        As in Hadoop, an in-progress file starting before ``from_txid`` is not listed (its end
        is unknown until scanned); :meth:`select_input_streams` scans such files itself.
        """
        logs = [
            log
            for log in match_edit_logs(self.current_dir)
            if log.first_txid >= from_txid or log.contains_txid(from_txid)
        ]
        return _sort_and_check(logs)

    def get_log_file(self, start_txid: int) -> EditLogFile | None:
        """The one segment starting at ``start_txid``, or None."""
        found = match_edit_logs(self.current_dir, start_txid=start_txid)
        if not found:
            return None
        return _sort_and_check(found)[0]

    def _scan_in_progress(self, log: EditLogFile) -> bool:
        """Scan an in-progress segment up to the last readable txid; False if unusable."""
        try:
            log.scan_log(self.last_readable_txid)
        except OSError as e:
            LOG.error("Got IOException while trying to validate %s: %s", log, e)
            return False
        return not log.has_corrupt_header

    def get_remote_edit_logs(
        self, first_txid: int, in_progress_ok: bool = False
    ) -> list[RemoteEditLog]:
        """The segments a reader starting at ``first_txid`` needs (Hadoop's getRemoteEditLogs)."""
        result: list[RemoteEditLog] = []
        for log in _sort_and_check(match_edit_logs(self.current_dir)):
            if log.is_in_progress and not (in_progress_ok and self._scan_in_progress(log)):
                continue
            if log.first_txid >= first_txid or log.contains_txid(first_txid):
                result.append(RemoteEditLog(log.first_txid, log.last_txid, log.is_in_progress))
        return result

    def select_input_streams(
        self, from_txid: int, in_progress_ok: bool = False, only_durable_txns: bool = False
    ) -> list[EditLogFileInputStream]:
        """Streams over the segments holding ``from_txid`` and later, in txid order."""
        streams: list[EditLogFileInputStream] = []
        for log in _sort_and_check(match_edit_logs(self.current_dir)):
            if log.is_in_progress and not (in_progress_ok and self._scan_in_progress(log)):
                continue
            if log.last_txid < from_txid:
                continue
            streams.append(
                EditLogFileInputStream(
                    log.path,
                    log.first_txid,
                    log.last_txid,
                    is_in_progress=log.is_in_progress,
                    **({"max_op_size": self.max_op_size} if self.max_op_size else {}),
                )
            )
        return streams

    # ---- recovery and retention -----------------------------------------------------------------
    def recover_unfinalized_segments(self) -> None:
        """Finalize each in-progress segment a crashed writer left behind (but the current one).

        * zero length: deleted;
        * corrupt header: renamed ``.corrupt`` and CorruptionException raised;
        * no transactions: renamed ``.empty``;
        * otherwise: finalized at its last valid txid.
        """
        for log in self.get_log_files(0):
            if log.path == self.current_in_progress or not log.is_in_progress:
                continue
            if log.length() == 0:
                LOG.info("Deleting zero-length edit log file %s", log)
                try:
                    log.path.unlink()
                    fsync_dir(self.current_dir)
                except OSError as e:
                    raise IOException(f"Unable to delete file {log.path}: {e}") from e
                continue
            log.scan_log()
            if log.has_corrupt_header:
                log.move_aside_corrupt_file()
                raise CorruptionException(f"In-progress edit log file is corrupt: {log}")
            if log.last_txid == INVALID_TXID:
                LOG.info("Moving aside edit log file that seems to have zero transactions %s", log)
                log.move_aside_empty_file()
                continue
            self.finalize_log_segment(log.first_txid, log.last_txid, truncate_to=log.valid_length)

    def purge_logs_older_than(self, min_txid_to_keep: int) -> None:
        """Delete segments (moved-aside in-progress ones too) wholly below ``min_txid_to_keep``."""
        LOG.info("Purging logs older than %d", min_txid_to_keep)
        for log in match_edit_logs(self.current_dir, for_purging=True):
            if log.first_txid < min_txid_to_keep and log.last_txid < min_txid_to_keep:
                try:
                    log.path.unlink()
                except OSError as e:
                    LOG.warning("Unable to purge %s: %s", log.path, e)

    def discard_segments(self, start_txid: int) -> None:
        """Rename every segment starting at or after ``start_txid`` to ``<name>.trash``
        (each rename fsynced); IllegalStateException, with nothing renamed, if a segment
        holds txns on both sides of ``start_txid``. Hadoop checks only finalized segments
        (an in-progress one's end is unknown until scanned); an in-progress one is scanned
        here, since its txns past ``start_txid`` would come back when it is recovered."""
        to_trash: list[EditLogFile] = []
        for log in match_edit_logs(self.current_dir):
            if log.first_txid >= start_txid:
                to_trash.append(log)
                continue
            if log.is_in_progress:
                log.scan_log()
            if log.last_txid >= start_txid:
                raise IllegalStateException(
                    f"Segment {log} crosses the discard point {start_txid}: "
                    "cannot discard part of a segment"
                )
        for log in to_trash:
            log.move_aside_trash_file()

    # ---- the upgrade of a shared edits directory (NNUpgradeUtil, on its StorageDirectory) ----
    def _sd(self):  # noqa: ANN202 - a StorageDirectory
        if self.storage_directory is None:
            raise IllegalStateException(f"{self} has no storage directory to upgrade")
        return self.storage_directory

    def do_pre_upgrade(self) -> None:
        LOG.info("Starting upgrade of edits directory %s", self.current_dir.parent)
        try:
            nn_upgrade_util.do_pre_upgrade(self._sd())
        except (OSError, IllegalStateException) as e:
            LOG.error(
                "Failed to move aside pre-upgrade storage in image directory %s: %s",
                self.current_dir.parent,
                e,
            )
            raise

    def do_upgrade(self, storage: StorageInfo) -> None:
        nn_upgrade_util.do_upgrade(self._sd(), storage)

    def do_finalize(self) -> None:
        nn_upgrade_util.do_finalize(self._sd())

    def can_roll_back(
        self, storage: StorageInfo, prev_storage: StorageInfo, target_layout_version: int
    ) -> bool:
        return nn_upgrade_util.can_roll_back(
            self._sd(), storage, prev_storage, target_layout_version
        )

    def do_rollback(self) -> None:
        nn_upgrade_util.do_roll_back(self._sd())

    def get_journal_ctime(self) -> int:
        return self._sd().read_storage_info().ctime

    def has_some_data(self) -> bool:
        return self.current_dir.exists() and any(self.current_dir.iterdir())

    def close(self) -> None:
        self.current_in_progress = None
