"""The MKDIR ops of a mkdirs, or of a create's missing parents (Hadoop's FSDirMkdirOp),
over a resolved path (pure: no lock, no I/O; the namesystem holds its lock around them).

* :func:`verify_parent_dir` — FSDirectory.verifyParentDir, for a call that may not create
  parents;
* :class:`PermissionStatuses` — one shared PermissionStatus per (user, group, mode), which
  the MKDIR encoder caches by identity;
* :func:`mkdir_ops` — one MKDIR per missing directory, ancestors with u+wx
  (FSDirMkdirOp.addImplicitUwx), each name checked against
  ``dfs.namenode.fs-limits.max-component-length``.
"""

from __future__ import annotations

from hadoop_qjm.common.exceptions import FileNotFoundException, ParentNotDirectoryException
from hadoop_qjm.editlog.fs_edit_log_op import FSEditLogOp, MkdirOp, PermissionStatus
from hadoop_qjm.namenode.fs_directory import FSDirectory, INodesInPath
from hadoop_qjm.namenode.fs_limits import check_component_length

__all__ = ["PermissionStatuses", "mkdir_ops", "verify_parent_dir"]


def verify_parent_dir(iip: INodesInPath) -> None:
    """FileNotFoundException or ParentNotDirectoryException unless the parent of ``iip``
    is an existing directory (the root has none to check)."""
    if len(iip.components) > 1:
        parent = iip.parent
        if parent is None:
            raise FileNotFoundException(f"Parent directory doesn't exist: {iip.parent_path}")
        if not parent.is_dir:
            raise ParentNotDirectoryException(f"Parent path is not a directory: {iip.parent_path}")


class PermissionStatuses:
    """Shared PermissionStatus objects, at most ``limit`` kept."""

    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._kept: dict[tuple[str, str, int], PermissionStatus] = {}

    def get(self, user: str, group: str, mode: int) -> PermissionStatus:
        key = (user, group, mode)
        perm = self._kept.get(key)
        if perm is None:
            if len(self._kept) >= self.limit:
                self._kept.clear()
            perm = self._kept[key] = PermissionStatus(user, group, mode)
        return perm


def mkdir_ops(
    fs_dir: FSDirectory,
    iip: INodesInPath,
    perm: PermissionStatus,
    upto: int,
    now: int,
    max_component_length: int,
    statuses: PermissionStatuses,
) -> list[FSEditLogOp]:
    """MKDIR ops for the missing directories among ``iip.components[:upto]``; the last
    component gets ``perm``'s mode, the ancestors it plus u+wx. A None group is the
    deepest existing directory's."""
    depth = iip.existing_depth()  # inodes[depth - 1] is the deepest existing node
    parent = iip.inodes[depth - 1]
    components = iip.components
    group = perm.group if perm.group is not None else parent.group  # type: ignore[union-attr]
    last = len(components) - 1
    ops: list[FSEditLogOp] = []
    for i in range(depth - 1, upto):
        check_component_length(components, i, max_component_length)
        mode = perm.mode if i == last else perm.mode | 0o300
        ops.append(
            MkdirOp(
                0,
                inode_id=fs_dir.peek_next_inode_id(len(ops) + 1),
                path="/" + "/".join(components[: i + 1]),
                timestamp=now,
                permissions=statuses.get(perm.user, group, mode),
            )
        )
    return ops
