"""NameNodeLayoutVersion: which layout this NameNode's software writes, and the checks of a
directory's layout against it (Hadoop's NameNodeLayoutVersion, Storage.setLayoutVersion,
FSImage.recoverTransitionRead).

The software writes Hadoop's -67, or, for tests only, the project's -68
(``dfs.namenode.testing.future-layout``; docs/ha.md, "Upgrades"). A directory of a newer
layout than the software's is refused (an old NameNode on an upgraded, unfinalized
directory); one of an older layout needs ``namenode -upgrade``.
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
    "IncorrectVersionException",
    "check_layout_version",
    "check_no_previous",
    "old_layout_message",
    "software_layout_version",
]


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
