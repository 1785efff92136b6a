"""The upgrade steps of one storage directory, and the recovery of one a crash interrupted.

Hadoop's ``NNUpgradeUtil`` (what a NameNode name dir, a FileJournalManager and a
JournalNode's journal each do for ``-upgrade``, ``-finalize`` and ``-rollback``) and
``Storage.StorageDirectory.doRecover`` (what start-up does with a directory a crash left
in the middle of one), with Hadoop's checks and messages::

    do_pre_upgrade   current/ -> previous.tmp/; a new current/ holding the edits files
    do_upgrade       current/VERSION (new layout, cTime); previous.tmp/ -> previous/
    do_finalize      previous/ -> finalized.tmp/, removed
    can_roll_back    previous/ holds the target layout (False when there is no previous/)
    do_roll_back     current/ -> removed.tmp/, previous/ -> current/, removed.tmp/ removed
    do_recover       finishes or undoes what a crash interrupted (StorageState)

Every rename, create and delete is followed by an fsync of the directory holding the
entry (the power-cut model, docs/journalnode.md). The commit point of an upgrade is the
``current/VERSION`` that :func:`do_upgrade` writes: before it, start-up finds
RECOVER_UPGRADE and puts ``previous.tmp/`` back as ``current/``; after it,
COMPLETE_UPGRADE and renames ``previous.tmp/`` to ``previous/``. A rollback's is the
rename of ``previous/`` to ``current/``.

One difference from Hadoop, invisible once a step is done: an in-progress segment is
copied into the new ``current/``, not hard-linked, because finalizing one truncates its
padding in place, which would change the copy ``previous/`` keeps for a rollback.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from hadoop_qjm.common.durable import FsyncFunction, fsync_dir
from hadoop_qjm.common.exceptions import IllegalStateException, IOException
from hadoop_qjm.common.storage import StorageDirectory, StorageState, inconsistent_state
from hadoop_qjm.common.storage_info import StorageInfo

__all__ = [
    "can_roll_back",
    "check_consistent",
    "check_upgrade",
    "do_finalize",
    "do_pre_upgrade",
    "do_recover",
    "do_roll_back",
    "do_upgrade",
]

LOG = logging.getLogger(__name__)

#: NNStorage.NameNodeFile.EDITS: the files doPreUpgrade carries into the new current/.
_EDITS_PREFIX = "edits"
_IN_PROGRESS_PREFIX = "edits_inprogress_"


def _rename(src: Path, dst: Path, *, fsync: FsyncFunction) -> None:
    """Storage.rename, made durable: the parent directory is fsynced after the rename."""
    try:
        os.rename(src, dst)
    except OSError as e:
        raise IOException(
            f"Failed to rename {os.path.realpath(src)} to {os.path.realpath(dst)} "
            f"due to failure in native rename. {e}"
        ) from e
    fsync_dir(dst.parent, fsync=fsync)


def _delete_dir(path: Path, *, fsync: FsyncFunction) -> None:
    """Storage.deleteDir, made durable (an absent ``path`` is nothing to do)."""
    if not path.exists():
        return
    try:
        shutil.rmtree(path)
    except OSError as e:
        raise IOException(f"Failed to delete {os.path.realpath(path)}: {e}") from e
    fsync_dir(path.parent, fsync=fsync)


def _check_state(condition: bool, message: str) -> None:
    """Preconditions.checkState."""
    if not condition:
        raise IllegalStateException(message)


def do_pre_upgrade(sd: StorageDirectory, *, fsync: FsyncFunction = os.fsync) -> None:
    """NNUpgradeUtil.doPreUpgrade: rename ``current/`` to ``previous.tmp/`` and make a new
    ``current/`` holding every ``edits*`` file of the old one (finalized ones hard-linked,
    in-progress ones copied: see the module doc). Refuses (IllegalStateException, nothing
    changed) without ``current/``, or with ``previous/`` or ``previous.tmp/`` present."""
    LOG.info("Starting upgrade of storage directory %s", sd.root)
    current, previous, tmp = sd.current, sd.previous, sd.previous_tmp
    _check_state(current.exists(), "Current directory must exist for preupgrade.")
    _check_state(not previous.exists(), "Previous directory must not exist for preupgrade.")
    _check_state(
        not tmp.exists(),
        "Previous.tmp directory must not exist for preupgrade.Consider restarting for recovery.",
    )
    _rename(current, tmp, fsync=fsync)
    try:
        current.mkdir()
        os.chmod(current, sd.dir_perm)  # mkdir's mode is filtered by the umask
    except OSError as e:
        raise IOException(f"Cannot create directory {current}: {e}") from e
    fsync_dir(sd.root, fsync=fsync)
    for name in sorted(os.listdir(tmp)):
        if not name.startswith(_EDITS_PREFIX) or not (tmp / name).is_file():
            continue
        if name.startswith(_IN_PROGRESS_PREFIX):
            shutil.copy2(tmp / name, current / name)
            with open(current / name, "rb") as f:
                fsync(f.fileno())
        else:
            os.link(tmp / name, current / name)
    fsync_dir(current, fsync=fsync)


def check_upgrade(sd: StorageDirectory) -> None:
    """doUpgrade's preconditions: no ``previous/``, a ``previous.tmp/`` (IllegalStateException)."""
    _check_state(not sd.previous.exists(), "previous directory must not exist for upgrade.")
    _check_state(sd.previous_tmp.exists(), "previous.tmp directory must exist for upgrade.")


def do_upgrade(
    sd: StorageDirectory, storage_info: StorageInfo, *, fsync: FsyncFunction = os.fsync
) -> None:
    """NNUpgradeUtil.doUpgrade: write ``current/VERSION`` for ``storage_info`` (the commit
    point), then rename ``previous.tmp/`` to ``previous/``. The checks come first (Hadoop
    writes VERSION before them), so a refused call changes nothing."""
    LOG.info("Performing upgrade of storage directory %s", sd.root)
    check_upgrade(sd)
    sd.write_properties(storage_info)
    _rename(sd.previous_tmp, sd.previous, fsync=fsync)


def do_finalize(sd: StorageDirectory, *, fsync: FsyncFunction = os.fsync) -> None:
    """NNUpgradeUtil.doFinalize: remove ``previous/`` (through ``finalized.tmp/``); nothing
    to do without one. Rollback is impossible afterwards."""
    if not sd.previous.exists():
        LOG.info("Directory %s does not exist.", sd.previous)
        LOG.info("Finalize upgrade for %s is not required.", sd.root)
        return
    LOG.info("Finalizing upgrade of storage directory %s", sd.root)
    _check_state(sd.current.exists(), "Current directory must exist.")
    _rename(sd.previous, sd.finalized_tmp, fsync=fsync)
    _delete_dir(sd.finalized_tmp, fsync=fsync)
    LOG.info("Finalize upgrade for %s is complete.", sd.root)


def check_consistent(
    sd: StorageDirectory, found: StorageInfo, expected: StorageInfo | None
) -> None:
    """StorageInfo.readProperties' checks of a caller's StorageInfo against a VERSION file:
    namespaceID and clusterID agree where both are set (InconsistentFSStateException)."""
    if expected is None:
        return
    if expected.namespace_id and found.namespace_id and expected.namespace_id != found.namespace_id:
        raise inconsistent_state(sd.root, "namespaceID is incompatible with others.")
    if expected.cluster_id and found.cluster_id and expected.cluster_id != found.cluster_id:
        raise inconsistent_state(sd.root, "cluster Id is incompatible with others.")


def can_roll_back(
    sd: StorageDirectory,
    storage: StorageInfo | None,
    prev_storage: StorageInfo | None,
    target_layout_version: int,
) -> bool:
    """NNUpgradeUtil.canRollBack: True iff ``previous/`` exists and its VERSION has
    ``target_layout_version``; without ``previous/``, ``current/VERSION`` is read (and
    checked against ``storage``) and the answer is False. A ``previous/`` of another layout
    raises IOException with Hadoop's message; changes nothing."""
    if not sd.previous.exists():
        LOG.info("Storage directory %s does not contain previous fs state.", sd.root)
        check_consistent(sd, sd.read_storage_info(), storage)
        return False
    prev = sd.read_storage_info(previous=True)
    check_consistent(sd, prev, prev_storage)
    if prev.layout_version != target_layout_version:
        raise IOException(
            f"Cannot rollback to storage version {prev.layout_version} using this version of "
            f"the NameNode, which uses storage version {target_layout_version}. "
            "Please use the previous version of HDFS to perform the rollback."
        )
    return True


def do_roll_back(sd: StorageDirectory, *, fsync: FsyncFunction = os.fsync) -> None:
    """NNUpgradeUtil.doRollBack: ``current/`` becomes ``removed.tmp/`` (then removed) and
    ``previous/`` becomes ``current/`` (the commit point); nothing to do without
    ``previous/``."""
    if not sd.previous.exists():
        return
    removed = sd.removed_tmp
    _check_state(
        not removed.exists(),
        "removed.tmp directory must not exist for rollback.Consider restarting for recovery.",
    )
    _check_state(sd.current.exists(), "Current directory must exist for rollback.")
    _rename(sd.current, removed, fsync=fsync)
    _rename(sd.previous, sd.current, fsync=fsync)
    _delete_dir(removed, fsync=fsync)
    LOG.info("Rollback of %s is complete.", sd.root)


def do_recover(
    sd: StorageDirectory, state: StorageState, *, fsync: FsyncFunction = os.fsync
) -> None:
    """Storage.StorageDirectory.doRecover: finish or undo the transition ``state`` (what
    ``sd.analyze_storage()`` found) names. Hadoop deletes some directories in the
    background; here every delete is done, and made durable, before this returns."""
    root, current = os.path.realpath(sd.root), sd.current
    if state is StorageState.COMPLETE_UPGRADE:  # mv previous.tmp -> previous
        LOG.info("Completing previous upgrade for storage directory %s", root)
        _rename(sd.previous_tmp, sd.previous, fsync=fsync)
    elif state is StorageState.RECOVER_UPGRADE:  # mv previous.tmp -> current
        LOG.info("Recovering storage directory %s from previous upgrade", root)
        _delete_dir(current, fsync=fsync)
        _rename(sd.previous_tmp, current, fsync=fsync)
    elif state is StorageState.COMPLETE_ROLLBACK:  # rm removed.tmp
        LOG.info("Completing previous rollback for storage directory %s", root)
        _delete_dir(sd.removed_tmp, fsync=fsync)
    elif state is StorageState.RECOVER_ROLLBACK:  # mv removed.tmp -> current
        LOG.info("Recovering storage directory %s from previous rollback", root)
        _rename(sd.removed_tmp, current, fsync=fsync)
    elif state is StorageState.COMPLETE_FINALIZE:  # rm finalized.tmp
        LOG.info("Completing previous finalize for storage directory %s", root)
        _delete_dir(sd.finalized_tmp, fsync=fsync)
    elif state is StorageState.COMPLETE_CHECKPOINT:  # mv lastcheckpoint.tmp -> previous.checkpoint
        LOG.info("Completing previous checkpoint for storage directory %s", root)
        _delete_dir(sd.previous_checkpoint, fsync=fsync)
        _rename(sd.last_checkpoint_tmp, sd.previous_checkpoint, fsync=fsync)
    elif state is StorageState.RECOVER_CHECKPOINT:  # mv lastcheckpoint.tmp -> current
        LOG.info("Recovering storage directory %s from failed checkpoint", root)
        _delete_dir(current, fsync=fsync)
        _rename(sd.last_checkpoint_tmp, current, fsync=fsync)
    else:
        raise IOException(f"Unexpected FS state: {state.value} for storage directory: {root}")
