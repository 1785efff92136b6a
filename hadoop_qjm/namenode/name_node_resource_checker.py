"""NameNodeResourceChecker: the free space of the volumes of the NameNode's directories.

The volumes are those of every local edits directory (required when listed in
``dfs.namenode.edits.dir.required``, as in Hadoop) and of every name directory (redundant:
an image directory without room cannot take the next checkpoint); directories on one
device are one volume. Each check asks ``statvfs`` for the bytes still available and
applies :func:`~hadoop_qjm.namenode.name_node_resource_policy.check_volumes`
(``dfs.namenode.resource.du.reserved``, ``dfs.namenode.resource.checked.volumes.minimum``).
Hadoop's extra ``dfs.namenode.resource.checked.volumes`` are not supported.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode.name_node_resource_policy import (
    CheckedVolume,
    ResourceVerdict,
    check_volumes,
    group_by_volume,
)
from hadoop_qjm.namenode.nn_storage import NameNodeDirs, uri_path

__all__ = ["NameNodeResourceChecker"]

LOG = logging.getLogger(__name__)


def _device(path: str) -> Any:
    try:
        return os.stat(path).st_dev
    except OSError:
        return ("missing", path)  # its own volume; its check reports no space


def _available_bytes(statvfs: Callable[[str], Any], path: str) -> int:
    """What an unprivileged writer may still use (DF.getAvailable); 0 if it cannot be
    asked — a directory that vanished leaves the NameNode no room there either."""
    try:
        st = statvfs(path)
    except OSError as e:
        LOG.warning("Cannot check the space available on the volume of %s: %s", path, e)
        return 0
    return st.f_bavail * st.f_frsize


class NameNodeResourceChecker:
    """Checks the volumes of ``dirs`` (see the module docstring). ``statvfs`` and
    ``device_of(path)`` are the file system calls (tests pass fakes)."""

    def __init__(
        self,
        conf: Configuration,
        dirs: NameNodeDirs,
        *,
        statvfs: Callable[[str], Any] = os.statvfs,
        device_of: Callable[[str], Any] = _device,
    ) -> None:
        self.reserved_bytes = conf.get_storage_size(
            keys.DFS_NAMENODE_DU_RESERVED_KEY, keys.DFS_NAMENODE_DU_RESERVED_DEFAULT
        )
        self.minimum_redundant = conf.get_int(
            keys.DFS_NAMENODE_CHECKED_VOLUMES_MINIMUM_KEY,
            keys.DFS_NAMENODE_CHECKED_VOLUMES_MINIMUM_DEFAULT,
        )
        self._statvfs = statvfs
        local = [
            (str(uri_path(uri)), uri in dirs.required_uris)
            for uri in dirs.edits_uris
            if uri.startswith("file:")
        ]
        local += [(str(uri_path(uri)), False) for uri in dirs.image_uris]
        self.volumes = group_by_volume((path, device_of(path), req) for path, req in local)

    def check(self) -> ResourceVerdict:
        """Ask each volume for its free space now and apply the policy."""
        volumes = [
            CheckedVolume(directories, _available_bytes(self._statvfs, directories[0]), required)
            for directories, required in self.volumes
        ]
        verdict = check_volumes(volumes, self.reserved_bytes, self.minimum_redundant)
        for volume in verdict.short:
            LOG.warning(
                "Space available on volume '%s' is %d, which is below the configured reserved "
                "amount %d",
                volume.name,
                volume.available_bytes,
                self.reserved_bytes,
            )
        return verdict
