"""NameNodeLayoutVersion: which layout this NameNode's software writes, and the checks of a
directory's layout against it (Hadoop's NameNodeLayoutVersion, Storage.setLayoutVersion,
FSImage.recoverTransitionRead).

The software writes Hadoop's -67, or, for tests only, the project's -68
(``dfs.namenode.testing.future-layout``; docs/ha.md, "Upgrades"). A directory of a newer
layout than the software's is refused (an old NameNode on an upgraded, unfinalized
directory); one of an older layout needs ``namenode -upgrade``, or, while a rolling upgrade
is in progress, ``namenode -rollingUpgrade started`` (HDFS-8432): the new software then
keeps writing the directory's layout (the *effective* one) in every segment and image
until the upgrade is finalized, so that the old software can still read everything::

    storage LV   software LV   -rollingUpgrade started   rolling upgrade   effective LV
    -67          -67           either                    either            -67
    -67          -68           no                        either            refused (old layout)
    -67          -68           yes                       in progress       -67 until finalize
    -67          -68           yes                       none              refused after load
    -66          -68           yes                       either            refused (below -67,
                                                                           the minimum compatible)
"""

from __future__ import annotations

import os
from pathlib import Path

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, FUTURE_LAYOUT_VERSION_FOR_TESTING
from hadoop_qjm.common.exceptions import IOException, register_exception
from hadoop_qjm.common.storage import StorageDirectory, inconsistent_state
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys

__all__ = [
    "MINIMUM_COMPATIBLE_LAYOUT_VERSION",
    "ROLLING_UPGRADE_STARTED",
    "IncorrectVersionException",
    "check_layout_version",
    "check_no_previous",
    "check_rolling_upgrade_layout",
    "effective_layout_version",
    "no_rolling_upgrade_message",
    "old_layout_message",
    "rolling_upgrade_started",
    "software_layout_version",
]

#: NameNodeLayoutVersion.MINIMUM_COMPATIBLE_LAYOUT_VERSION: the oldest layout the software
#: may keep writing through a rolling upgrade. Hadoop's -67 says -61 (TRUNCATE); this port
#: writes only -67's edits and images (-68's are the same bytes), so for both of its layouts
#: it is -67: storage of an older Hadoop needs ``-upgrade``.
MINIMUM_COMPATIBLE_LAYOUT_VERSION = CURRENT_LAYOUT_VERSION

#: ``dfs.namenode.startup`` for ``namenode -rollingUpgrade started`` (Hadoop's
#: StartupOption.ROLLINGUPGRADE with RollingUpgradeStartupOption.STARTED, as
#: NameNode.setStartupOption stores it).
ROLLING_UPGRADE_STARTED = "ROLLINGUPGRADE(STARTED)"


def software_layout_version(conf: Configuration) -> int:
    """The layout this NameNode's software writes: Hadoop's -67, or the project's -68 with
    ``dfs.namenode.testing.future-layout`` (tests only)."""
    future = conf.get_bool(
        keys.DFS_NAMENODE_TESTING_FUTURE_LAYOUT_KEY, keys.DFS_NAMENODE_TESTING_FUTURE_LAYOUT_DEFAULT
    )
    return FUTURE_LAYOUT_VERSION_FOR_TESTING if future else CURRENT_LAYOUT_VERSION


def rolling_upgrade_started(conf: Configuration) -> bool:
    """Whether the NameNode was started with ``-rollingUpgrade started``."""
    option = conf.get_trimmed(keys.DFS_NAMENODE_STARTUP_KEY) or keys.DFS_NAMENODE_STARTUP_DEFAULT
    return option.upper() == ROLLING_UPGRADE_STARTED


def effective_layout_version(
    is_rolling_upgrade: bool, storage_lv: int, min_compat_lv: int, current_lv: int
) -> int:
    """FSNamesystem.getEffectiveLayoutVersion (HDFS-8432): during a rolling upgrade the
    storage's layout, if it is at least the minimum compatible one, so that the old
    software can read what is written and a rollback stays possible; else the software's."""
    if is_rolling_upgrade and storage_lv <= min_compat_lv:
        return storage_lv
    return current_lv


def check_rolling_upgrade_layout(storage_lv: int, software_lv: int, started: bool) -> None:
    """Before anything is loaded (FSImage.recoverTransitionRead): a directory of an older
    layout than the software's is refused unless the NameNode starts into a rolling upgrade
    (``started``), and even then when it is older than the minimum compatible layout."""
    if storage_lv == software_lv:
        return
    if not started:
        raise IOException(old_layout_message(storage_lv, software_lv))
    if storage_lv > MINIMUM_COMPATIBLE_LAYOUT_VERSION:
        raise IOException(
            f"\nFile system image contains an old layout version {storage_lv}.\n"
            f"An upgrade to version {software_lv} is required.\n"
            f"A rolling upgrade cannot keep layout version {storage_lv}: the minimum "
            f"compatible layout version of this software is "
            f'{MINIMUM_COMPATIBLE_LAYOUT_VERSION}. Please restart NameNode with the "-upgrade" '
            "option to start a new upgrade."
        )


def no_rolling_upgrade_message(storage_lv: int, software_lv: int) -> str:
    """``-rollingUpgrade started`` on an older layout whose namespace has no rolling upgrade
    in progress (none prepared, or finalized already): the new software would have to write
    its own layout there, which only ``-upgrade`` may do."""
    return (
        f"\nFile system image contains an old layout version {storage_lv}.\n"
        f"An upgrade to version {software_lv} is required.\n"
        'The NameNode was started with "-rollingUpgrade started" but no rolling upgrade is in '
        'progress: run "dfsadmin -rollingUpgrade prepare" with the old software first, or '
        'restart NameNode with the "-upgrade" option to start a new upgrade.'
    )


@register_exception
class IncorrectVersionException(IOException):
    """A VERSION of a layout newer than this software's (Hadoop's class of the name)."""

    java_name = "org.apache.hadoop.hdfs.server.common.IncorrectVersionException"


def check_layout_version(root: Path, reported: int, expected: int) -> None:
    """Refuse storage of a layout newer than ours (Storage.setLayoutVersion), with
    IncorrectVersionException's message."""
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
