"""``namenode -initializeSharedEdits``: turn a NameNode's local edits into shared edits.

HADOOP-QJM-DIGEST.md §9 (NameNode.initializeSharedEdits and copyEditLogSegmentsToSharedDir),
for a NameNode going from non-HA to HA:

1. Load the namespace from the *local* directories only (the configuration without
   ``dfs.namenode.shared.edits.dir``): lock them, finalize what a crash left in progress,
   load the newest image and the edits after it.
2. Over the shared edits only: confirm (force, -nonInteractive, or ask) that destroying
   what they hold is fine, write VERSION in a shared file directory, and format every
   JournalNode with the *existing* namespace info.
3. Become the shared journal's writer (for a quorum journal: newEpoch, hence epoch 1), then
   copy every local edit after the last checkpoint op by op: start a segment at the first
   op of each local segment, end it (finalize) after its OP_END_LOG_SEGMENT, or at the end
   of the stream for a segment that had none (one that a crash left in progress).

Nothing is written to the local directories but the finalization of an unfinished segment.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import ExitException, IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.file_journal_manager import FileJournalManager
from hadoop_qjm.editlog.fs_edit_log_op import EndLogSegmentOp
from hadoop_qjm.namenode.fs_edit_log import FSEditLog
from hadoop_qjm.namenode.fs_image import FSImage
from hadoop_qjm.namenode.fs_namesystem import FSNamesystem
from hadoop_qjm.namenode.journal_set import JournalSet
from hadoop_qjm.namenode.name_node_core import (
    JournalFactory,
    confirm_format,
    create_journal_set,
)
from hadoop_qjm.namenode.nn_storage import (
    NameNodeDirs,
    NameNodeDirType,
    NNStorage,
    NNStorageDirectory,
    uri_path,
)

__all__ = ["SharedEditsCopy", "initialize_shared_edits"]

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class SharedEditsCopy:
    """What :func:`initialize_shared_edits` did."""

    shared_uris: tuple[str, ...]
    namespace_id: int
    #: The newest image's txid: the copy starts right after it.
    checkpoint_txid: int
    first_txid: int
    last_txid: int
    segments: int

    @property
    def txns(self) -> int:
        return self.last_txid - self.first_txid + 1 if self.last_txid >= self.first_txid else 0


def _refuse_termination(status: int, message: str) -> None:
    """A command must not exit the process from inside the edit log: raise instead."""
    raise ExitException(status, message)


def initialize_shared_edits(
    conf: Configuration,
    *,
    force: bool = False,
    confirm: Callable[[Sequence[str]], bool] | None = None,
    journal_factory: JournalFactory | None = None,
) -> SharedEditsCopy:
    """Do it (see the module docstring); ``force`` and ``confirm`` as for -format."""
    dirs = NameNodeDirs.from_conf(conf)
    if not dirs.shared_uris:
        raise IOException(
            f"No shared edits directory configured: set {keys.DFS_NAMENODE_SHARED_EDITS_DIR_KEY}"
        )
    local_conf = conf.copy()
    local_conf.unset(keys.DFS_NAMENODE_SHARED_EDITS_DIR_KEY)
    local_dirs = NameNodeDirs.from_conf(local_conf)
    storage = NNStorage.from_conf(local_conf, local_dirs)
    ns_info = storage.recover_storage_dirs()  # locks the local directories
    local_journals: JournalSet | None = None
    try:
        image = FSImage(local_conf, storage)
        image.recover_checkpoints()
        local_journals = create_journal_set(local_conf, local_dirs, storage, ns_info)
        local_log = FSEditLog(local_journals, terminate=_refuse_termination)
        local_log.init_journals_for_write()
        local_log.recover_unclosed_streams()  # a crashed writer's segment is finalized
        image.load(FSNamesystem(local_conf), local_log)
        checkpoint = image.most_recent_checkpoint_txid
        shared_uris = tuple(uri for uri in dirs.edits_uris if uri in dirs.shared_uris)
        first, last, segments = _format_and_copy(
            conf, dirs, ns_info, local_log, checkpoint, force, confirm, journal_factory
        )
    finally:
        if local_journals is not None:
            local_journals.close()
        storage.close()
    LOG.info(
        "Copied txids %d-%d (%d segments) after fsimage_%d to %s",
        first,
        last,
        segments,
        checkpoint,
        ", ".join(shared_uris),
    )
    return SharedEditsCopy(shared_uris, ns_info.namespace_id, checkpoint, first, last, segments)


def _format_and_copy(
    conf: Configuration,
    dirs: NameNodeDirs,
    ns_info,
    local_log: FSEditLog,
    checkpoint: int,
    force: bool,
    confirm: Callable[[Sequence[str]], bool] | None,
    journal_factory: JournalFactory | None,
) -> tuple[int, int, int]:
    """Steps 2 and 3 over the shared locations; returns (first txid, last txid, segments)."""
    shared_storage = NNStorage(
        [
            NNStorageDirectory(uri_path(uri), NameNodeDirType.EDITS, shared=True)
            for uri in dirs.shared_uris
            if uri.startswith("file:")
        ]
    )
    journals = create_journal_set(
        conf, dirs, shared_storage, ns_info, journal_factory, shared_only=True
    )
    try:
        remote = [
            jas for jas in journals.journals if not isinstance(jas.manager, FileJournalManager)
        ]
        with_data = shared_storage.has_some_data() + [
            str(getattr(jas.manager, "uri", jas.manager))
            for jas in remote
            if jas.manager.has_some_data()  # type: ignore[attr-defined]
        ]
        confirm_format(conf, with_data, force=force, confirm=confirm)
        for jas in remote:
            jas.manager.check_format()  # a writer on any JournalNode: nothing changes anywhere
        shared_storage.format(ns_info)  # VERSION in shared directories, with the existing nsInfo
        for jas in remote:
            jas.manager.format(ns_info, force)  # type: ignore[attr-defined]
        shared_log = FSEditLog(journals, terminate=_refuse_termination)
        shared_log.init_journals_for_write()
        shared_log.recover_unclosed_streams()  # become the writer: newEpoch on the quorum
        copied = _copy_edits(local_log, journals, checkpoint + 1)
        _let_every_journal_node_catch_up(remote, _FINAL_CALLS_WAIT_S)
        return copied
    finally:
        journals.close()
        shared_storage.close()


#: How long the command waits, at most, for the JournalNodes outside the quorum.
_FINAL_CALLS_WAIT_S = 20.0


def _let_every_journal_node_catch_up(remote: list, timeout_s: float) -> None:
    """Wait, at most ``timeout_s``, until every JournalNode has answered the calls queued
    for it (a quorum call returns with a majority). A node left behind would keep the last
    segment in progress, written seconds ago, and refuse the next format as a live
    writer's journal (issue 33) for ``dfs.journalnode.format.live-writer.window.ms``."""
    waiters = []
    for jas in remote:
        loggers = getattr(jas.manager, "loggers", None)
        if loggers is not None:
            waiter = threading.Thread(
                target=loggers.wait_for_all_pending_calls,
                name="initializeSharedEdits: last calls",
                daemon=True,  # a hung JournalNode never holds the command past the bound
            )
            waiter.start()
            waiters.append(waiter)
    deadline = time.monotonic() + timeout_s
    for waiter in waiters:
        waiter.join(max(0.0, deadline - time.monotonic()))


def _copy_edits(local_log: FSEditLog, journals: JournalSet, from_txid: int) -> tuple[int, int, int]:
    """Copy every local op from ``from_txid`` on, segment by segment (see the module doc)."""
    streams = local_log.select_input_streams(from_txid, 0)
    expected = from_txid
    segments = 0
    try:
        for stream in streams:
            LOG.info("Copying %s to the shared edits", stream.name)
            out = None
            segment_txid = expected
            for op in stream:
                if op.txid < expected:
                    continue  # already copied (streams may overlap at their start)
                if op.txid > expected:
                    raise IOException(
                        f"There appears to be a gap in the edit log.  We expected txid "
                        f"{expected}, but got txid {op.txid}."
                    )
                if out is None:
                    segment_txid = op.txid
                    out = journals.start_log_segment(segment_txid, CURRENT_LAYOUT_VERSION)
                out.write(op)
                if out.should_force_sync():
                    _flush(out)
                expected += 1
                if isinstance(op, EndLogSegmentOp):
                    _flush(out)
                    journals.finalize_log_segment(segment_txid, op.txid)
                    segments += 1
                    out = None
            if out is not None:  # a segment without OP_END_LOG_SEGMENT (a crashed writer's)
                _flush(out)
                journals.finalize_log_segment(segment_txid, expected - 1)
                segments += 1
    finally:
        for stream in streams:
            stream.close()
    return from_txid, expected - 1, segments


def _flush(out) -> None:
    out.set_ready_to_flush()
    out.flush()
