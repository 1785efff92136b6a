"""The layout upgrade of a NameNode and its shared edits (HDFS-5138; docs/ha.md, "Upgrades").

Hadoop's ``FSImage.doUpgrade`` / ``doRollback`` / ``finalizeUpgrade`` and
``FSEditLog.doPreUpgradeOfSharedLog`` & co., over the local directories
(:mod:`~hadoop_qjm.namenode.nn_upgrade_util`) and every shared journal (the
QuorumJournalManager's ``do_pre_upgrade`` … calls, which wait for *every* JournalNode)::

    namenode -upgrade   (NameNodeCore(upgrade=True): the NameNode then runs, active)
        every JournalNode's cTime read first: one missing refuses before anything changes
        recover the journals (a new epoch), load the image and the edits
        local dirs: do_pre_upgrade;   shared log: do_pre_upgrade (undone locally if refused)
        fsimage_<last txid> with the new layout in every new current/
        shared log: do_upgrade(new storage info);   local dirs: do_upgrade
    dfsadmin -finalizeUpgrade   local dirs: do_finalize; the active also the shared log's
    namenode -rollback  (every NameNode stopped; run with the old software)
        every local dir and every JournalNode: can_roll_back to this software's layout
        local dirs: do_roll_back;   shared log: do_rollback

The software's layout version is -67 (Hadoop's), or the project's test-only -68 with
``dfs.namenode.testing.future-layout`` (:func:`software_layout_version`).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from hadoop_qjm.common import nn_upgrade_util as util
from hadoop_qjm.common.durable import fsync_dir
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.storage import StorageState
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.file_journal_manager import FileJournalManager
from hadoop_qjm.namenode.name_node_layout_version import software_layout_version
from hadoop_qjm.namenode.nn_storage import NameNodeDirs, NNStorage
from hadoop_qjm.namenode.shared_edits_switch import SHARED_EDITS_SWITCH_FILE

__all__ = [
    "check_shared_log_ctime",
    "do_rollback",
    "do_upgrade",
    "finalize_upgrade",
    "finalize_upgrade_of",
    "is_upgrade_finalized",
    "shared_journals",
    "software_layout_version",
]

LOG = logging.getLogger(__name__)


def is_upgrade_finalized(storage: NNStorage) -> bool:
    """No local directory keeps a previous/ (FSImageStorageInspector.isUpgradeFinalized)."""
    return not any(d.sd.previous.exists() for d in storage.dirs)


def shared_journals(journal_set: Any) -> list[Any]:
    """The shared journals that are not local directories (the QuorumJournalManager); a
    ``file:`` shared directory is one of the local storage directories."""
    return [
        jas.manager
        for jas in journal_set.journals
        if jas.shared and not isinstance(jas.manager, FileJournalManager)
    ]


def check_shared_log_ctime(journal_set: Any, storage: NNStorage) -> None:
    """Before ``-upgrade`` changes anything: every JournalNode answers its cTime (one down
    refuses here), and none is newer than ours (FSImage.initEditLog for UPGRADE)."""
    ns_info = storage.ns_info
    for journal in shared_journals(journal_set):
        shared_ctime = journal.get_journal_ctime()
        if ns_info is not None and ns_info.ctime < shared_ctime:
            raise IOException(
                "It looks like the shared log is already being upgraded but this NN has not "
                "been upgraded yet. You should restart this NameNode with the "
                "'-bootstrapStandby' option to bring this NN in sync with the other."
            )


def do_upgrade(
    image: Any,
    namesystem: Any,
    *,
    clock: Callable[[], float] = time.time,
) -> NamespaceInfo:
    """FSImage.doUpgrade, once the namespace is loaded and no segment of the image's edit
    log is open: keep every directory's and JournalNode's state as previous/, save the
    image at the last txid with the software's layout version and a new cTime. Returns
    the new storage info."""
    storage: NNStorage = image.storage
    edit_log = image.edit_log
    layout_version = storage.software_layout_version
    old = storage.ns_info
    if old is None:
        raise IOException("The storage has no namespace info")
    new = replace(old, layout_version=layout_version, ctime=int(clock() * 1000))
    LOG.info(
        "Starting upgrade of local storage directories.\n   old LV = %d; old CTime = %d.\n"
        "   new LV = %d; new CTime = %d",
        old.layout_version,
        old.ctime,
        new.layout_version,
        new.ctime,
    )
    shared = shared_journals(edit_log.journal_set)
    prepared = []
    for d in list(storage.dirs):
        try:
            util.do_pre_upgrade(d.sd, fsync=storage.fsync)
            prepared.append(d)
            _carry_over_switch_record(d.sd, storage.fsync)
        except OSError as e:
            LOG.error("Failed to move aside pre-upgrade storage in %s: %s", d.root, e)
            storage.report_error(d, e)
    try:
        for journal in shared:
            journal.do_pre_upgrade()
    except BaseException:
        # The JournalNodes refused: put the local directories back as they were, as a
        # restart's recovery would (RECOVER_UPGRADE), so that nothing has changed.
        for d in prepared:
            util.do_recover(d.sd, StorageState.RECOVER_UPGRADE, fsync=storage.fsync)
        raise
    storage.ns_info = new
    image.save_image_in_all_dirs(namesystem, edit_log.last_written_txid)
    for journal in shared:  # the shared edits first, as Hadoop
        journal.do_upgrade(new)
    for d in list(storage.dirs):
        try:
            util.do_upgrade(d.sd, new, fsync=storage.fsync)
        except OSError as e:
            storage.report_error(d, e)
    if storage.removed:
        raise IOException(
            f"Upgrade failed in {len(storage.removed)} storage directory(ies), previously logged."
        )
    edit_log.layout_version = layout_version
    return new


def _carry_over_switch_record(sd: Any, fsync: Any) -> None:
    """The JournalNode set this NameNode moved to (docs/ha.md, "Changing the JournalNode
    set") goes on into the new current/: a copy, as the record is rewritten in place."""
    kept = sd.previous_tmp / SHARED_EDITS_SWITCH_FILE
    if kept.exists():
        shutil.copy2(kept, sd.current / SHARED_EDITS_SWITCH_FILE)
        with open(sd.current / SHARED_EDITS_SWITCH_FILE, "rb") as f:
            fsync(f.fileno())
        fsync_dir(sd.current, fsync=fsync)


def finalize_upgrade(storage: NNStorage, journal_set: Any, finalize_shared_log: bool) -> bool:
    """``dfsadmin -finalizeUpgrade`` on one NameNode (FSImage.finalizeUpgrade): the shared
    log first when ``finalize_shared_log`` (an HA active; a JournalNode down refuses before
    the local state is touched), then every local previous/. Returns False, having changed
    nothing, when no local directory had an upgrade to finalize."""
    ns_info = storage.ns_info
    LOG.info(
        "Finalizing upgrade for local dirs. \n   cur LV = %s; cur CTime = %s",
        ns_info.layout_version if ns_info else "?",
        ns_info.ctime if ns_info else "?",
    )
    if is_upgrade_finalized(storage):
        return False
    if finalize_shared_log and journal_set is not None:
        for journal in shared_journals(journal_set):
            journal.do_finalize()
    for d in storage.dirs:
        util.do_finalize(d.sd, fsync=storage.fsync)
    return True


def do_rollback(
    conf: Configuration,
    make_journals: Callable[[NameNodeDirs, NNStorage, NamespaceInfo], Any] | None = None,
    *,
    fsync: Any = os.fsync,
) -> NamespaceInfo:
    """``namenode -rollback`` (FSImage.doRollback), every NameNode stopped: return every
    local directory and every JournalNode to its previous/ state, which must be of this
    software's layout. Nothing changes unless each of them can; returns the restored
    storage info. ``make_journals(dirs, storage, ns_info)`` opens the shared journals."""
    layout_version = software_layout_version(conf)
    dirs = NameNodeDirs.from_conf(conf)
    storage = NNStorage.from_conf(conf, dirs, fsync=fsync)
    journals = None
    try:
        previous = None
        can = False
        for d in storage.dirs:
            d.sd.analyze_storage()  # locks: a running NameNode refuses the rollback here
            if util.can_roll_back(d.sd, None, None, layout_version):
                LOG.info("Can perform rollback for %s", d.root)
                previous = previous or d.sd.read_storage_info(previous=True)
                can = True
        current = storage.dirs[0].sd.read_storage_info()
        if dirs.journal_uris and make_journals is not None:
            journals = make_journals(dirs, storage, current)  # type: ignore[arg-type]
            for journal in shared_journals(journals):
                if journal.can_roll_back(current, previous or current, layout_version):
                    LOG.info("Can perform rollback for shared edit log.")
                    can = True
        if not can:
            raise IOException(
                "Cannot rollback. None of the storage directories contain previous fs state."
            )
        for d in storage.dirs:
            LOG.info("Rolling back storage directory %s.", d.root)
            util.do_roll_back(d.sd, fsync=fsync)
        if journals is not None:
            for journal in shared_journals(journals):
                journal.do_rollback()
        return storage.dirs[0].sd.read_storage_info()  # type: ignore[return-value]
    finally:
        if journals is not None:
            journals.close()
        storage.close()


def finalize_upgrade_of(core: Any, active: bool) -> bool:
    """:func:`finalize_upgrade` of a running NameNode's ``core`` under its namesystem lock
    (``active``: the JournalNodes' too)."""
    with core.namesystem.lock:
        journals = core.edit_log.journal_set if core.edit_log is not None else None
        return finalize_upgrade(core.storage, journals, active)
