"""FSImage: loading and saving the namespace (Hadoop's FSImage, HDFS-1073 §4-§5, §9.2).

Loading (§4.4): delete half-written checkpoints (§4.3), take the newest ``fsimage_N``
whose MD5 and checksum verify — a bad one is skipped with a warning for the next older
one, which retention keeps the edits for — then replay the edits from N+1 over every
journal: one stream per segment, contiguous, and reaching at least the largest
``seen_txid`` (a gap is an error naming the missing txid).

Saving (§5), :meth:`FSImage.save_namespace`, under the namesystem lock::

    end the segment at N (OP_END_LOG_SEGMENT, sync, finalize)      [after_end_segment]
    write fsimage.ckpt_N in every image dir, fsync                   [during_image_write]
    write fsimage_N.md5                                              [after_image_written]
    rename fsimage.ckpt_N -> fsimage_N, fsync dir  <- commit point   [after_rename]
    start edits_inprogress_N+1 (OP_START_LOG_SEGMENT)                [after_start_segment]
    seen_txid = N+1                                                  [before_purge]
    purge old images and edits (retention)

A crash at any step is repaired by start-up recovery: the finalized segment and the old
image still describe the namespace until the rename; afterwards the new image does. The
bracketed names are the hooks of :class:`SaveNamespaceFaultInjector`.

:func:`checkpoint_offline` is §9.2's offline checkpoint of one directory.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from hadoop_qjm.common.durable import FsyncFunction, fsync_dir
from hadoop_qjm.common.exceptions import FileNotFoundException, IOException
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.file_journal_manager import FileJournalManager
from hadoop_qjm.editlog.redundant_edit_log_input_stream import chain_and_make_redundant_streams
from hadoop_qjm.namenode.fs_edit_log import FSEditLog
from hadoop_qjm.namenode.fs_image_format import (
    CheckpointInProgressException,
    read_image,
    save_md5_file,
    serialize_image,
    write_image,
)
from hadoop_qjm.namenode.fs_namesystem import FSNamesystem
from hadoop_qjm.namenode.nn_storage import (
    NameNodeDirType,
    NNStorage,
    NNStorageDirectory,
    checkpoint_file_name,
    image_file_name,
    rollback_image_file_name,
)
from hadoop_qjm.namenode.nn_storage_retention_manager import NNStorageRetentionManager

__all__ = ["FSImage", "SaveNamespaceFaultInjector", "checkpoint_offline"]

LOG = logging.getLogger(__name__)


class SaveNamespaceFaultInjector:
    """Hooks at each step of save_namespace; they do nothing unless a test overrides one
    (STYLE.md habit 4). Raising an Exception there is an I/O error (the edit log is
    reopened, as Hadoop does); raising a BaseException that is not an Exception is a
    crash: nothing more runs, and a fresh NameNode must recover from what is on disk."""

    def after_end_segment(self, txid: int) -> None:
        """The segment ending at ``txid`` is finalized; no image has been written."""

    def during_image_write(self, path: Path) -> None:
        """Half of ``fsimage.ckpt_N`` is written."""

    def after_image_written(self, path: Path) -> None:
        """``fsimage.ckpt_N`` is complete and fsynced and its .md5 written; not renamed."""

    def after_rename(self, path: Path) -> None:
        """``fsimage_N`` is in place (the commit point); the directory is not fsynced yet."""

    def after_start_segment(self, txid: int) -> None:
        """``edits_inprogress_<txid>`` is open; seen_txid still names the old segment."""

    def before_purge(self) -> None:
        """seen_txid is updated; old images and edits are not purged yet."""


class FSImage:
    """Images on ``storage``, and the edit log they go with."""

    def __init__(
        self,
        conf: Configuration,
        storage: NNStorage,
        *,
        fault_injector: SaveNamespaceFaultInjector | None = None,
        fsync: FsyncFunction = os.fsync,
    ) -> None:
        self.conf = conf
        self.storage = storage
        self.fault = fault_injector or SaveNamespaceFaultInjector()
        self._fsync = fsync
        self.edit_log: FSEditLog | None = None
        self.retention = NNStorageRetentionManager(conf, storage)
        #: The last txid reflected in the namespace (image + edits loaded).
        self.last_applied_txid = 0
        #: The txid of the newest image written or loaded.
        self.most_recent_checkpoint_txid = 0

    @property
    def last_applied_or_written_txid(self) -> int:
        """The newer of the last txid applied and the edit log's last written one
        (FSImage.getLastAppliedOrWrittenTxId): what /jmx's JournalTransactionInfo reports."""
        written = self.edit_log.last_written_txid if self.edit_log is not None else 0
        return max(self.last_applied_txid, written)

    def attach_edit_log(self, edit_log: FSEditLog) -> None:
        """Use ``edit_log``; every segment it starts is recorded in seen_txid."""
        self.edit_log = edit_log
        edit_log.on_segment_started = self._on_segment_started

    def _on_segment_started(self, txid: int) -> None:
        self.fault.after_start_segment(txid)
        # So that a restart knows the edits reach at least here, even if an edits
        # directory goes missing (FSImage.rollEditLog / openEditLogForWrite).
        self.storage.write_transaction_id_file(txid)

    # ---- format ----------------------------------------------------------------------------------
    def format(self, namesystem: FSNamesystem, ns_info: NamespaceInfo) -> None:
        """Format the local directories and save ``fsimage_0`` (FSImage.format's local part)."""
        self.storage.format(ns_info)
        self.save_image_in_all_dirs(namesystem, 0)

    # ---- loading ---------------------------------------------------------------------------------
    def recover_checkpoints(self) -> None:
        """Delete what an interrupted checkpoint left (HDFS-1073 §4.3)."""
        self.storage.delete_checkpoint_leftovers()

    def load_image(self, namesystem: FSNamesystem) -> int:
        """Load the newest valid image into ``namesystem``; returns its txid."""
        # Either kind, as Hadoop's regular start (NameNodeFile.IMAGE and IMAGE_ROLLBACK):
        # a rollback image saved by a non-HA prepare is newer than every regular one.
        images = self.storage.inspect_images(rollback=True)
        if not images:
            raise FileNotFoundException("No valid image files found")
        return self.load_image_from(namesystem, images)

    def load_image_from(self, namesystem: FSNamesystem, images: list) -> int:
        """Load the first valid image of ``images`` (newest first); returns its txid."""
        expected_nsid = self.storage.ns_info.namespace_id if self.storage.ns_info else None
        for image in images:
            try:
                loaded = read_image(image.path)
                if loaded.txid != image.txid:
                    raise IOException(f"{image.path} claims to hold txid {loaded.txid}")
                if expected_nsid is not None and loaded.namespace_id != expected_nsid:
                    raise IOException(
                        f"{image.path} belongs to namespace {loaded.namespace_id}, not "
                        f"{expected_nsid}"
                    )
            except OSError as e:
                LOG.warning("Failed to load image from %s: %s; trying an older one", image.path, e)
                continue
            if not self.storage.inspect_images(regular=False, rollback=True):
                # An image's rolling upgrade counts only while its rollback image exists
                # (FSImageFormatProtobuf: hasRollingUpgradeStartTime && hasRollbackFSImage).
                loaded.fs_dir.rolling_upgrade_start_time = 0
            namesystem.set_directory(loaded.fs_dir)
            LOG.info("Loaded image %s (txid %d)", image.path, image.txid)
            self.last_applied_txid = self.most_recent_checkpoint_txid = image.txid
            return image.txid
        raise IOException("Failed to load FSImage file, see error(s) above for more info.")

    def load(
        self,
        namesystem: FSNamesystem,
        edit_log: FSEditLog | None,
        to_at_least_txid: int | None = None,
    ) -> int:
        """Load the image, then every edit after it; returns the last txid applied.

        ``to_at_least_txid`` defaults to the largest seen_txid: the edits must reach it.
        """
        txid = self.load_image(namesystem)
        if edit_log is not None:
            if to_at_least_txid is None:
                to_at_least_txid = self.storage.read_max_seen_txid()
            streams = edit_log.select_input_streams(txid + 1, to_at_least_txid)
            try:
                txid = namesystem.load_edits(streams, txid + 1)
            finally:
                for stream in streams:
                    stream.close()
        self.last_applied_txid = txid
        LOG.info("Namespace loaded up to txid %d", txid)
        return txid

    # ---- saving ----------------------------------------------------------------------------------
    def save_namespace(self, namesystem: FSNamesystem, *, rollback: bool = False) -> int:
        """The HDFS-1073 saveNamespace (see the module docstring); returns the image txid.
        ``rollback`` saves ``fsimage_rollback_N`` and purges nothing (Hadoop's
        purgeOldStorage(IMAGE_ROLLBACK) keeps the edits)."""
        with namesystem.lock:
            edit_log = self.edit_log
            was_open = edit_log is not None and edit_log.is_segment_open()
            if was_open:
                txid = edit_log.end_current_log_segment(True)  # type: ignore[union-attr]
                self.fault.after_end_segment(txid)
            else:
                # A standby (edit log open for reading) saves what it has applied.
                writing = edit_log is not None and edit_log.is_open_for_write()
                txid = edit_log.last_written_txid if writing else self.last_applied_txid  # type: ignore[union-attr]
            try:
                self.save_image_in_all_dirs(namesystem, txid, rollback=rollback)
            except Exception:
                # An I/O error: writing goes on in a new segment anyway (Hadoop's finally).
                # A BaseException that is no Exception (a test's simulated crash) skips this.
                if was_open:
                    edit_log.start_log_segment_and_write_header_txn(txid + 1)  # type: ignore[union-attr]
                raise
            if was_open:
                # _on_segment_started records seen_txid = txid + 1.
                edit_log.start_log_segment_and_write_header_txn(txid + 1)  # type: ignore[union-attr]
            self.last_applied_txid = txid
            self.fault.before_purge()
            if not rollback:
                self.retention.purge_old_storage(edit_log)
            return txid

    def roll_edit_log(self, namesystem: FSNamesystem) -> int:
        """Finalize the current segment and start the next; returns its first txid."""
        if self.edit_log is None:
            raise IOException("No edit log to roll")
        with namesystem.lock:
            return self.edit_log.roll_edit_log(between=self._finish_pending_switch)

    def _shared_qjm(self) -> Any:
        """The QuorumJournalManager of the shared edits, or None."""
        from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager

        shared = [
            jas.manager
            for jas in (self.edit_log.journal_set.journals if self.edit_log else [])
            if jas.shared and isinstance(jas.manager, QuorumJournalManager)
        ]
        return shared[0] if len(shared) == 1 else None

    def _finish_pending_switch(self) -> None:
        """At a roll: a writer on a joint configuration (it adopted one after a failover,
        or an earlier attempt stopped short) tries to finish the switch. Failing leaves it
        joint, which is safe; the roll goes on."""
        qjm = self._shared_qjm()
        if qjm is None or not qjm.config.is_joint:
            return
        from hadoop_qjm.qjournal.client.membership_change import finish_reconfiguration

        try:
            finish_reconfiguration(
                qjm, self.most_recent_checkpoint_txid + 1, self.edit_log.last_written_txid
            )
        except IOException as e:
            LOG.warning("The JournalNode set change is not finished yet: %s", e)

    def reconfigure_shared_edits(self, namesystem: FSNamesystem, uri: str) -> str:
        """Move the shared edits to the JournalNodes of ``uri`` by joint consensus
        (docs/journalnode.md, "Online, by joint consensus"): at one roll the joint
        configuration begins, at the next the new set takes over once it holds the
        history a restart reads (from the newest checkpoint on). Run it again after an
        interruption: a switch already begun to the same set is finished."""
        from hadoop_qjm.qjournal.client.membership_change import (
            begin_reconfiguration,
            finish_reconfiguration,
            members_of_uri,
        )

        if self.edit_log is None:
            raise IOException("No edit log to reconfigure")
        qjm = self._shared_qjm()
        if qjm is None:
            raise IOException("the shared edits are not on a qjournal:// URI")
        _, new = members_of_uri(uri)
        since = self.most_recent_checkpoint_txid + 1
        with namesystem.lock:
            if not (qjm.config.is_joint and qjm.config.new == new):
                self.edit_log.roll_edit_log(between=lambda: begin_reconfiguration(qjm, uri))
            edit_log = self.edit_log
            edit_log.roll_edit_log(
                between=lambda: finish_reconfiguration(qjm, since, edit_log.last_written_txid)
            )
        return qjm.config.describe()

    def save_image_in_all_dirs(
        self, namesystem: FSNamesystem, txid: int, *, rollback: bool = False
    ) -> None:
        """Write ``fsimage_<txid>`` (``rollback``: ``fsimage_rollback_<txid>``, which is no
        checkpoint for retention) in every image directory (FSImage.saveFSImageInAllDirs)."""
        name = rollback_image_file_name if rollback else image_file_name
        ns_info = self.storage.ns_info
        if ns_info is None:
            raise IOException("The storage has no namespace info")
        if not self.storage.image_dirs():
            raise IOException("No image directories available!")
        with namesystem.lock:
            data = serialize_image(
                namesystem.dir, txid, ns_info.namespace_id, ns_info.layout_version
            )
        written: list[NNStorageDirectory] = []
        for sd in self.storage.image_dirs():
            try:
                self._save_checkpoint(sd, data, txid, name(txid))
                written.append(sd)
            except CheckpointInProgressException:
                # Not this directory's fault: give up this save, leave theirs alone.
                for done in written:
                    (done.current / checkpoint_file_name(txid)).unlink(missing_ok=True)
                raise
            except OSError as e:
                self.storage.report_error(sd, e)
        if not self.storage.image_dirs():
            raise IOException("Failed to save in any storage directories while saving namespace.")
        for sd in self.storage.image_dirs():
            self._rename_checkpoint(sd, txid, name(txid))
        if not rollback:
            self.most_recent_checkpoint_txid = txid

    def _save_checkpoint(self, sd: NNStorageDirectory, data: bytes, txid: int, name: str) -> None:
        ckpt = sd.current / checkpoint_file_name(txid)
        # Exclusive: an image upload of the same txid (PUT /imagetransfer) may be writing
        # this very file; neither may truncate the other's (ImageServlet's checkpointing
        # guard). Crash leftovers are gone: start-up deletes them (recover_checkpoints).
        md5_hex = write_image(
            ckpt, data, fsync=self._fsync, halfway=self.fault.during_image_write, exclusive=True
        )
        save_md5_file(sd.current / name, md5_hex, fsync=self._fsync)
        self.fault.after_image_written(ckpt)

    def _rename_checkpoint(self, sd: NNStorageDirectory, txid: int, name: str) -> None:
        ckpt = sd.current / checkpoint_file_name(txid)
        final = sd.current / name
        try:
            os.replace(ckpt, final)  # the commit point of this directory's image
        except OSError as e:
            self.storage.report_error(sd, e)
            return
        self.fault.after_rename(final)
        fsync_dir(sd.current, fsync=self._fsync)


def checkpoint_offline(directory: str | os.PathLike[str], conf: Configuration | None = None) -> int:
    """Load the newest image of ``directory`` and its finalized edits; save a new image.

    HDFS-1073 §9.2: in-progress edits are not read (roll the NameNode first for an
    up-to-date checkpoint); the directory's lock keeps a running NameNode out. Returns
    the txid of the image now newest (unchanged if there were no edits after it).
    """
    conf = conf if conf is not None else Configuration()
    sd = NNStorageDirectory(Path(directory), NameNodeDirType.IMAGE_AND_EDITS)
    storage = NNStorage([sd])
    storage.recover_storage_dirs()
    try:
        image = FSImage(conf, storage)
        image.recover_checkpoints()
        namesystem = FSNamesystem(conf)
        txid = image.load_image(namesystem)
        journal = FileJournalManager(conf, sd.sd)
        streams = chain_and_make_redundant_streams(
            journal.select_input_streams(txid + 1, in_progress_ok=False), txid + 1
        )
        try:
            last = namesystem.load_edits(streams, txid + 1)
        finally:
            for stream in streams:
                stream.close()
        if last > txid:
            image.save_image_in_all_dirs(namesystem, last)
            image.retention.purge_old_storage(None)
            LOG.info("Saved offline checkpoint fsimage_%d in %s", last, directory)
        else:
            LOG.info("No finalized edits after fsimage_%d in %s: nothing to do", txid, directory)
        return last
    finally:
        storage.close()
