"""NNUpgradeUtil: the layout-upgrade transitions of one storage directory (HDFS-5138).

Hadoop's ``NNUpgradeUtil`` and ``Storage.StorageDirectory.doRecover``, for the NameNode's
local directories; every step is a rename whose parent directory is fsynced before the
next step, so a crash anywhere leaves a state ``analyze_storage`` names and
:func:`do_recover` completes or undoes at the next start::

    do_pre_upgrade   current -> previous.tmp; a new current/ with the edits hard-linked
                     [crash: RECOVER_UPGRADE, previous.tmp back to current]
    do_upgrade       current/VERSION with the new layout and cTime; previous.tmp -> previous
                     [crash after VERSION: COMPLETE_UPGRADE, previous.tmp -> previous]
    do_finalize      previous -> finalized.tmp, then removed   [COMPLETE_FINALIZE]
    do_roll_back     current -> removed.tmp, previous -> current, removed.tmp removed
                     [RECOVER_ROLLBACK / COMPLETE_ROLLBACK]

Finalized edit segments are never written again, so a hard link shares their bytes between
``previous/`` and the new ``current/`` safely; everything else is copied or rewritten.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, FUTURE_LAYOUT_VERSION_FOR_TESTING
from hadoop_qjm.common.durable import FsyncFunction, fsync_dir
from hadoop_qjm.common.exceptions import IllegalStateException, IOException, register_exception
from hadoop_qjm.common.java_properties import load_properties
from hadoop_qjm.common.storage import (
    StorageDirectory,
    StorageInfo,
    StorageState,
    inconsistent_state,
)
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys

__all__ = [
    "IncorrectVersionException",
    "can_roll_back",
    "check_no_previous",
    "check_layout_version",
    "do_finalize",
    "do_pre_upgrade",
    "do_recover",
    "do_roll_back",
    "do_upgrade",
    "old_layout_message",
    "read_previous_storage_info",
    "software_layout_version",
]

LOG = logging.getLogger(__name__)

#: Files of current/ a pre-upgrade carries into the new current/: every edit segment (a
#: hard link, as Hadoop's NameNodeFile.EDITS prefix) and the JournalNode set record.
_EDITS_PREFIX = "edits"
_COPIED = ("shared_edits_switch",)


def software_layout_version(conf: Configuration) -> int:
    """The layout this NameNode's software writes: Hadoop's -67, or the project's -68 with
    ``dfs.namenode.testing.future-layout`` (tests only)."""
    future = conf.get_bool(
        keys.DFS_NAMENODE_TESTING_FUTURE_LAYOUT_KEY, keys.DFS_NAMENODE_TESTING_FUTURE_LAYOUT_DEFAULT
    )
    return FUTURE_LAYOUT_VERSION_FOR_TESTING if future else CURRENT_LAYOUT_VERSION


@register_exception
class IncorrectVersionException(IOException):
    """A VERSION of a layout newer than this software's (Hadoop's class of the name)."""

    java_name = "org.apache.hadoop.hdfs.server.common.IncorrectVersionException"


def check_layout_version(root: Path, reported: int, expected: int) -> None:
    """Refuse storage of a layout newer than ours (Storage.setLayoutVersion): the message is
    IncorrectVersionException's, e.g. an old NameNode on an upgraded, unfinalized directory."""
    if reported < expected:
        raise IncorrectVersionException(
            f"Unexpected version of storage directory {os.path.abspath(root)}. "
            f"Reported: {reported}. Expecting = {expected}."
        )


def check_no_previous(sd: StorageDirectory) -> None:
    """An upgrade may begin only where no previous state is kept (FSImage.checkUpgrade)."""
    if sd.previous.exists():
        raise inconsistent_state(
            sd.root,
            "previous fs state should not exist during upgrade. Finalize or rollback first.",
        )


def old_layout_message(reported: int, expected: int) -> str:
    """FSImage.recoverTransitionRead's refusal of an older layout without ``-upgrade``."""
    return (
        f"\nFile system image contains an old layout version {reported}.\n"
        f"An upgrade to version {expected} is required.\n"
        'Please restart NameNode with the "-rollingUpgrade started" option if a rolling '
        'upgrade is already started; or restart NameNode with the "-upgrade" option to '
        "start a new upgrade."
    )


def _rename(src: Path, dst: Path, fsync: FsyncFunction) -> None:
    try:
        os.rename(src, dst)
    except OSError as e:
        raise IOException(f"Failed to rename {src} to {dst}: {e}") from e
    fsync_dir(dst.parent, fsync=fsync)


def _delete_dir(path: Path, fsync: FsyncFunction) -> None:
    """Remove ``path`` and all below it, if it exists; then fsync its parent."""
    if not path.exists():
        return
    try:
        shutil.rmtree(path)
    except OSError as e:
        raise IOException(f"Failed to delete {path}: {e}") from e
    fsync_dir(path.parent, fsync=fsync)


def _check_state(condition: bool, message: str) -> None:
    if not condition:
        raise IllegalStateException(message)


def do_pre_upgrade(sd: StorageDirectory, *, fsync: FsyncFunction = os.fsync) -> None:
    """Rename current/ to previous.tmp/ and make a new current/ holding hard links to
    every edit segment (NNUpgradeUtil.doPreUpgrade)."""
    LOG.info("Starting upgrade of storage directory %s", sd.root)
    cur, prev, tmp = sd.current, sd.previous, sd.previous_tmp
    _check_state(cur.exists(), "Current directory must exist for preupgrade.")
    _check_state(not prev.exists(), "Previous directory must not exist for preupgrade.")
    _check_state(
        not tmp.exists(),
        "Previous.tmp directory must not exist for preupgrade.Consider restarting for recovery.",
    )
    _rename(cur, tmp, fsync)  # commit point: from here a crash is RECOVER_UPGRADE
    try:
        cur.mkdir()
        os.chmod(cur, sd.dir_perm)
        for name in sorted(os.listdir(tmp)):
            if name.startswith(_EDITS_PREFIX):
                os.link(tmp / name, cur / name)
            elif name in _COPIED:
                shutil.copy2(tmp / name, cur / name)
                with open(cur / name, "rb") as f:
                    fsync(f.fileno())
    except OSError as e:
        raise IOException(f"Cannot prepare {cur} for the upgrade: {e}") from e
    fsync_dir(cur, fsync=fsync)
    fsync_dir(sd.root, fsync=fsync)


def do_upgrade(
    sd: StorageDirectory, storage_info: StorageInfo, *, fsync: FsyncFunction = os.fsync
) -> None:
    """Write current/VERSION for ``storage_info`` (the new layout and cTime), then rename
    previous.tmp/ to previous/ (NNUpgradeUtil.doUpgrade)."""
    LOG.info("Performing upgrade of storage directory %s", sd.root)
    sd.write_properties(storage_info)
    _check_state(not sd.previous.exists(), "previous directory must not exist for upgrade.")
    _check_state(sd.previous_tmp.exists(), "previous.tmp directory must exist for upgrade.")
    _rename(sd.previous_tmp, sd.previous, fsync)


def do_finalize(sd: StorageDirectory, *, fsync: FsyncFunction = os.fsync) -> bool:
    """Remove previous/ (NNUpgradeUtil.doFinalize); False if there was none."""
    if not sd.previous.exists():
        LOG.info("Finalize upgrade for %s is not required.", sd.root)
        return False
    LOG.info("Finalizing upgrade of storage directory %s", sd.root)
    _check_state(sd.current.exists(), "Current directory must exist.")
    _rename(sd.previous, sd.finalized_tmp, fsync)  # commit point
    _delete_dir(sd.finalized_tmp, fsync)
    LOG.info("Finalize upgrade for %s is complete.", sd.root)
    return True


def read_previous_storage_info(sd: StorageDirectory) -> StorageInfo:
    """previous/VERSION's layout version, namespace, cluster and cTime."""
    path = sd.previous_version_file
    try:
        props = load_properties(path.read_bytes())
        return StorageInfo(
            int(props["layoutVersion"]),
            int(props["namespaceID"]),
            props["clusterID"],
            int(props["cTime"]),
        )
    except OSError as e:
        raise IOException(f"Cannot read {path}: {e}") from e
    except (KeyError, ValueError) as e:
        raise inconsistent_state(sd.root, f"file {path} is malformed: {e}") from e


def can_roll_back(sd: StorageDirectory, target_layout_version: int) -> bool:
    """True if previous/ holds the state to return to; an IOException if it is of another
    layout than ``target_layout_version`` (NNUpgradeUtil.canRollBack)."""
    if not sd.previous.exists():
        LOG.info("Storage directory %s does not contain previous fs state.", sd.root)
        sd.read_storage_info()  # still readable and consistent
        return False
    previous = read_previous_storage_info(sd)
    if previous.layout_version != target_layout_version:
        raise IOException(
            f"Cannot rollback to storage version {previous.layout_version} using this "
            f"version of the NameNode, which uses storage version {target_layout_version}. "
            "Please use the previous version of HDFS to perform the rollback."
        )
    return True


def do_roll_back(sd: StorageDirectory, *, fsync: FsyncFunction = os.fsync) -> bool:
    """previous/ becomes current/ again (NNUpgradeUtil.doRollBack); False if none."""
    if not sd.previous.exists():
        return False
    _check_state(
        not sd.removed_tmp.exists(),
        "removed.tmp directory must not exist for rollback.Consider restarting for recovery.",
    )
    _check_state(sd.current.exists(), "Current directory must exist for rollback.")
    _rename(sd.current, sd.removed_tmp, fsync)
    _rename(sd.previous, sd.current, fsync)  # commit point
    _delete_dir(sd.removed_tmp, fsync)
    LOG.info("Rollback of %s is complete.", sd.root)
    return True


def do_recover(
    sd: StorageDirectory, state: StorageState, *, fsync: FsyncFunction = os.fsync
) -> None:
    """Finish or undo the transition a crash interrupted (StorageDirectory.doRecover): each
    state's steps, a removal (one path) or a rename (two), in order."""
    cur, prev_ckpt = sd.current, sd.previous_checkpoint
    recoveries: dict[StorageState, tuple[str, tuple[tuple[Path, ...], ...]]] = {
        StorageState.COMPLETE_UPGRADE: (
            "Completing previous upgrade",
            ((sd.previous_tmp, sd.previous),),
        ),
        StorageState.RECOVER_UPGRADE: (
            "Recovering from previous upgrade",
            ((cur,), (sd.previous_tmp, cur)),
        ),
        StorageState.COMPLETE_ROLLBACK: ("Completing previous rollback", ((sd.removed_tmp,),)),
        StorageState.RECOVER_ROLLBACK: (
            "Recovering from previous rollback",
            ((sd.removed_tmp, cur),),
        ),
        StorageState.COMPLETE_FINALIZE: ("Completing previous finalize", ((sd.finalized_tmp,),)),
        StorageState.COMPLETE_CHECKPOINT: (
            "Completing previous checkpoint",
            ((prev_ckpt,), (sd.last_checkpoint_tmp, prev_ckpt)),
        ),
        StorageState.RECOVER_CHECKPOINT: (
            "Recovering from failed checkpoint",
            ((cur,), (sd.last_checkpoint_tmp, cur)),
        ),
    }
    if state not in recoveries:
        return
    what, steps = recoveries[state]
    LOG.info("%s for storage directory %s", what, sd.root)
    for step in steps:
        if len(step) == 1:
            _delete_dir(step[0], fsync)
        else:
            _rename(step[0], step[1], fsync)
