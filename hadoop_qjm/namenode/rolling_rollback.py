"""``namenode -rollingUpgrade rollback``: back to the namespace of ``-rollingUpgrade prepare``
(Hadoop's FSImage.loadFSImage with ROLLINGUPGRADE(ROLLBACK) and FSImage.rollingRollback).

Run with every NameNode stopped, on the NameNode that holds ``fsimage_rollback_R``::

    load fsimage_rollback_R (verified; none: "No valid image files found", nothing changed)
    every JournalNode answers and none has a live writer (else one line, nothing changed)
    discardSegments(R+1) on every journal: each JournalNode (all must answer) renames
        its segments from R+1 on to <name>.trash and sets committed-txid to R; a
        segment that straddles R+1 is refused; the local edits dirs do the same
    rename fsimage_rollback_R -> fsimage_R   (its .md5 rewritten for the new name)
    purge every fsimage_N with N > R (FSImage's purgeCheckpoinsAfter) and seen_txid = R+1

The NameNode then starts as usual from fsimage_R and writes from R+1 under a new epoch;
the other NameNode ``-bootstrapStandby``s from it.
"""

from __future__ import annotations

import logging
import os

from hadoop_qjm.common.durable import FsyncFunction
from hadoop_qjm.common.exceptions import FileNotFoundException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.fs_image import FSImage
from hadoop_qjm.namenode.fs_namesystem import FSNamesystem
from hadoop_qjm.namenode.name_node_core import JournalFactory, create_journal_set
from hadoop_qjm.namenode.nn_storage import NameNodeDirs, NNStorage
from hadoop_qjm.namenode.rolling_upgrade import rename_rollback_images
from hadoop_qjm.qjournal.protocol.exceptions import JournalInUseException

__all__ = ["DISCARD_FAILED", "rolling_rollback"]

#: Hadoop's QuorumJournalManager.discardSegments failure message.
DISCARD_FAILED = "Could not perform discardSegments of one or more JournalNodes"

LOG = logging.getLogger(__name__)


def rolling_rollback(
    conf: Configuration,
    *,
    journal_factory: JournalFactory | None = None,
    fsync: FsyncFunction = os.fsync,
) -> int:
    """Roll the stopped cluster back to its rollback image (see the module docstring);
    returns the image's txid R."""
    dirs = NameNodeDirs.from_conf(conf)
    storage = NNStorage.from_conf(conf, dirs, fsync=fsync)
    try:
        ns_info = storage.recover_storage_dirs()
        image = FSImage(conf, storage, fsync=fsync)
        image.recover_checkpoints()
        images = storage.inspect_images(regular=False, rollback=True)
        if not images:
            # Hadoop's (FSImageTransactionalStorageInspector.getLatestImages).
            raise FileNotFoundException("No valid image files found")
        txid = image.load_image_from(FSNamesystem(conf), images)
        journals = create_journal_set(conf, dirs, storage, ns_info, journal_factory)
        try:
            for jas in journals.journals:
                _check_nothing_live(jas.manager)
            # Shared journals first (create_journal_set's order): a JournalNode that
            # refuses stops the rollback before any local segment moved.
            for jas in journals.journals:
                jas.manager.discard_segments(txid + 1)
        finally:
            journals.close()
        rename_rollback_images(storage)
        for later in storage.inspect_images():
            if later.txid > txid:
                storage.purge_image(later)
        storage.write_transaction_id_file(txid + 1)
        LOG.info("Rolled back to fsimage_%019d: the edits after txid %d are discarded", txid, txid)
        return txid
    finally:
        storage.close()


def _check_nothing_live(manager: object) -> None:
    """Before any segment moves (discardSegments checks nothing first): every JournalNode
    answers, and none has a live writer — a NameNode still running would lose the edits
    it is acknowledging."""
    live_writers = getattr(manager, "live_writers", None)
    if live_writers is None:
        return  # a local directory: this NameNode holds its lock
    live = live_writers("discardSegments", DISCARD_FAILED)
    if live:
        each = "; ".join(f"{node}: {why}" for node, why in live.items())
        raise JournalInUseException(
            f"Not rolling back: {len(live)} JournalNodes have a live writer ({each}); "
            "nothing was changed; stop every NameNode first"
        )
