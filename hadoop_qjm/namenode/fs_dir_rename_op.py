"""The rules of the two renames (Hadoop's FSDirRenameOp), over resolved paths (pure).

* :func:`rename_old_refused` — ClientProtocol.rename (OP_RENAME_OLD): when it returns
  False instead of moving anything;
* :func:`check_rename2` — ClientProtocol.rename2 (OP_RENAME): every refusal, with
  Hadoop's exception and message (FSDirRenameOp.unprotectedRenameTo's checks, in its
  order).

The permission checks come first and are the namesystem's
(:class:`~hadoop_qjm.namenode.namespace_access.NamespaceAccess`).
"""

from __future__ import annotations

from hadoop_qjm.common.exceptions import (
    FileAlreadyExistsException,
    FileNotFoundException,
    IOException,
    ParentNotDirectoryException,
)
from hadoop_qjm.namenode.fs_directory import INode, INodesInPath

__all__ = ["check_rename2", "rename_old_refused"]


def rename_old_refused(root: INode, src_iip: INodesInPath, target: INodesInPath) -> bool:
    """Whether the old rename of ``src_iip`` to ``target`` (the real target: inside the
    destination when it is a directory) returns False: the source is missing or the root,
    or the target lies under the source, exists, or has no parent directory."""
    node = src_iip.last
    if node is None or node is root:
        return True
    if target.path == src_iip.path:
        return False
    if target.path.startswith(src_iip.path + "/"):
        return True
    parent = target.parent
    return target.last is not None or parent is None or not parent.is_dir


def check_rename2(
    root: INode, src_iip: INodesInPath, dst_iip: INodesInPath, overwrite: bool
) -> None:
    """Raise what rename2 of ``src_iip`` to ``dst_iip`` refuses with, if anything."""
    src_path, dst_path = src_iip.path, dst_iip.path
    node = src_iip.last
    if node is None:
        raise FileNotFoundException(f"rename source {src_path} is not found.")
    if node is root:
        raise IOException("rename source cannot be the root")
    if dst_path == src_path:
        raise FileAlreadyExistsException(
            f"The source {src_path} and destination {dst_path} are the same"
        )
    if dst_path.startswith(src_path + "/"):
        raise IOException(
            f"Rename destination {dst_path} is a directory or file under source {src_path}"
        )
    if not dst_iip.components:
        raise IOException("rename destination cannot be the root")
    existing = dst_iip.last
    if existing is not None:
        if existing.is_dir != node.is_dir:
            raise IOException(
                f"Source {src_path} and destination {dst_path} must both be directories"
            )
        if not overwrite:
            raise FileAlreadyExistsException(f"rename destination {dst_path} already exists")
        if existing.is_dir and existing.children:  # type: ignore[attr-defined]
            raise IOException(f"rename destination directory is not empty: {dst_path}")
    parent = dst_iip.parent
    if parent is None:
        raise FileNotFoundException(f"rename destination parent {dst_path} not found.")
    if not parent.is_dir:
        raise ParentNotDirectoryException(f"rename destination parent {dst_path} is a file.")
