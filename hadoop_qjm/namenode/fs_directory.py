"""FSDirectory: the NameNode's in-memory namespace tree (Hadoop's FSDirectory and INodes).

A tree of :class:`INodeDirectory` and block-less :class:`INodeFile` nodes, each with an
inode id, a permission (user, group, mode) and modification/access times. The root is
inode 16385 (Hadoop's ``INodeId.ROOT_INODE_ID``); user inodes count up from there.

This module holds the tree and the *unprotected* primitives every change is built from
(add a child, remove a subtree, move a node); it neither validates a client's request nor
logs anything. :class:`~hadoop_qjm.namenode.fs_edit_log_loader.FSEditLogLoader` applies
ops with these primitives, both when an op is replayed from the edit log and when the
live :class:`~hadoop_qjm.namenode.fs_namesystem.FSNamesystem` applies the op it has just
logged — one code path, so a replayed namespace equals the live one (HDFS-1073 §4.4).

Path rules are Hadoop's ``DFSUtil.isValidName`` and ``INodesInPath``: absolute, no ``.``,
``..`` or ``:`` component, no empty component in the middle. Resolving a path whose
non-final component is a file raises ParentNotDirectoryException("<prefix> (is not a
directory)"), as FSPermissionChecker.checkTraverse does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from hadoop_qjm.common.exceptions import ParentNotDirectoryException, always_assert

__all__ = [
    "ROOT_INODE_ID",
    "GRANDFATHER_INODE_ID",
    "PERMISSION_MASK",
    "SURROGATE",
    "INode",
    "INodeDirectory",
    "INodeFile",
    "INodesInPath",
    "FileStatus",
    "FSDirectory",
    "is_valid_name",
    "path_components",
    "join_path",
]

#: INodeId.ROOT_INODE_ID: the root directory's inode id; user inodes are allocated above it.
ROOT_INODE_ID = 16385
#: INodeId.GRANDFATHER_INODE_ID: "no inode id" in an op (an old layout, or OP_CLOSE).
GRANDFATHER_INODE_ID = 0
#: FsPermission keeps the sticky bit and the nine rwx bits of the 16-bit short.
PERMISSION_MASK = 0o1777

#: A lone UTF-16 surrogate code point: the edit log's string encoding cannot keep one.
SURROGATE = re.compile("[\ud800-\udfff]")


def is_valid_name(src: str) -> bool:
    """Hadoop's DFSUtil.isValidName: absolute; no ``.``, ``..`` or ``:`` component; no ``//``.

    A trailing ``/`` is allowed. Surrogate code points are refused too: the edit log's
    string encoding would turn a lone pair into one character, and a replayed namespace
    must equal the live one.
    """
    # Every call's path comes here: string searches in C, the split only for a path with
    # a component that starts with a dot. An empty component other than the first and
    # the last is a "//".
    if not src.startswith("/") or ":" in src or "//" in src:
        return False
    if not src.isascii() and SURROGATE.search(src):
        return False
    if "/." in src:
        for part in src.split("/"):
            if part == "." or part == "..":
                return False
    return True


def path_components(src: str) -> list[str]:
    """The names along ``src`` below the root (``/a/b/`` -> ``["a", "b"]``)."""
    return list(filter(None, src.split("/")))


def join_path(components: list[str] | tuple[str, ...]) -> str:
    """``["a", "b"]`` -> ``/a/b``; ``[]`` -> ``/``."""
    return "/" + "/".join(components)


class INode:
    """What files and directories share: id, name, parent, permission and times."""

    __slots__ = ("inode_id", "name", "parent", "user", "group", "mode", "mtime", "atime")
    is_dir = False

    def __init__(
        self,
        inode_id: int,
        name: str,
        user: str,
        group: str | None,
        mode: int,
        mtime: int,
        atime: int,
    ) -> None:
        self.inode_id = inode_id
        self.name = name
        self.parent: INodeDirectory | None = None
        self.user = user
        #: None until the node is added to a directory, which then gives it its own group.
        self.group = group
        self.mode = mode & PERMISSION_MASK
        self.mtime = mtime
        self.atime = atime

    def update_modification_time(self, mtime: int) -> None:
        """Move the mtime forward only (INode.updateModificationTime)."""
        if mtime > self.mtime:
            self.mtime = mtime

    def full_path(self) -> str:
        names: list[str] = []
        node: INode | None = self
        while node is not None and node.parent is not None:
            names.append(node.name)
            node = node.parent
        return join_path(names[::-1])

    def __repr__(self) -> str:
        kind = "dir" if self.is_dir else "file"
        return f"<{kind} {self.full_path()} id={self.inode_id}>"


class INodeDirectory(INode):
    """A directory; ``children`` maps a name to its inode."""

    __slots__ = ("children",)
    is_dir = True

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.children: dict[str, INode] = {}


class INodeFile(INode):
    """A file without blocks; ``client_name`` is set while it is under construction."""

    __slots__ = ("replication", "block_size", "client_name", "client_machine")

    def __init__(
        self,
        *args,
        replication: int,
        block_size: int,
        client_name: str | None = None,
        client_machine: str = "",
        **kwargs,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.replication = replication
        self.block_size = block_size
        self.client_name = client_name
        self.client_machine = client_machine

    @property
    def under_construction(self) -> bool:
        return self.client_name is not None


@dataclass(frozen=True, slots=True)
class FileStatus:
    """What getFileInfo / getListing return for one inode (HdfsFileStatus without blocks)."""

    path: str
    is_dir: bool
    length: int
    replication: int
    block_size: int
    modification_time: int
    access_time: int
    permission: int
    owner: str
    group: str
    file_id: int
    children_num: int

    @property
    def name(self) -> str:
        """The last component of ``path`` ("" for the root)."""
        return self.path.rsplit("/", 1)[-1]


class INodesInPath:
    """A resolved path: the inode of each prefix, None from the first missing one on.

    ``inodes[0]`` is the root; ``inodes[i]`` is the node of ``components[:i]``.
    """

    __slots__ = ("path", "components", "inodes", "traversed")

    def __init__(self, path: str, components: list[str], inodes: list[INode | None]) -> None:
        self.path = path
        self.components = components
        self.inodes = inodes
        #: The caller's traverse (x on every existing ancestor) was checked when the path
        #: was resolved, so a later check of the same path need not walk it again.
        self.traversed = False

    @property
    def last(self) -> INode | None:
        return self.inodes[-1]

    @property
    def parent(self) -> INode | None:
        """The node of the parent path; None for the root or when it is missing."""
        return self.inodes[-2] if len(self.inodes) > 1 else None

    @property
    def parent_path(self) -> str:
        return join_path(self.components[:-1])

    @property
    def last_name(self) -> str:
        return self.components[-1] if self.components else ""

    def existing_depth(self) -> int:
        """How many leading entries of ``inodes`` exist (at least 1: the root)."""
        depth = 0
        for node in self.inodes:
            if node is None:
                break
            depth += 1
        return depth

    def check_traverse(self) -> None:
        """Every existing node above the last must be a directory (checkTraverse)."""
        for i, node in enumerate(self.inodes[:-1]):
            if node is None:
                return
            if not node.is_dir:
                raise ParentNotDirectoryException(
                    f"{join_path(self.components[:i])} (is not a directory)"
                )


class FSDirectory:
    """The tree, the inode-id counter and the primitives that change them."""

    def __init__(
        self, root_user: str, root_group: str, root_mode: int = 0o755, root_mtime: int = 0
    ) -> None:
        self.root = INodeDirectory(
            ROOT_INODE_ID, "", root_user, root_group, root_mode, root_mtime, 0
        )
        #: The highest inode id in use (INodeId's counter); new inodes get the next one.
        self.last_inode_id = ROOT_INODE_ID
        self.inode_count = 1
        #: When the rolling upgrade in progress started (ms; 0: none): OP_ROLLING_UPGRADE_START
        #: sets it, _FINALIZE clears it, the image keeps it (FSNamesystem.rollingUpgradeInfo).
        self.rolling_upgrade_start_time = 0

    # ---- lookup ----------------------------------------------------------------------------------
    def resolve(self, src: str) -> INodesInPath:
        """The inodes along ``src`` (which must be absolute); never raises."""
        components = path_components(src)
        inodes: list[INode | None] = [self.root]
        node: INode | None = self.root
        for name in components:
            if node is not None and node.is_dir:
                node = node.children.get(name)  # type: ignore[attr-defined]
            else:
                node = None
            inodes.append(node)
        return INodesInPath(join_path(components), components, inodes)

    def get_inode(self, src: str) -> INode | None:
        return self.resolve(src).last

    # ---- inode ids -------------------------------------------------------------------------------
    def allocate_inode_id(self) -> int:
        """Reserve the next inode id (the caller logs it in an op, then applies the op)."""
        self.last_inode_id += 1
        return self.last_inode_id

    def peek_next_inode_id(self, offset: int = 1) -> int:
        return self.last_inode_id + offset

    def update_last_inode_id(self, inode_id: int) -> int:
        """An op's inode id: 0 allocates one, a larger one moves the counter
        (FSEditLogLoader.getAndUpdateLastInodeId)."""
        if inode_id == GRANDFATHER_INODE_ID:
            return self.allocate_inode_id()
        if inode_id > self.last_inode_id:
            self.last_inode_id = inode_id
        return inode_id

    # ---- primitives ------------------------------------------------------------------------------
    def add_child(self, parent: INodeDirectory, node: INode) -> bool:
        """Link ``node`` under ``parent``; False if the name is taken.

        Like INodeDirectory.addChild: a node without a group takes its parent's, and the
        parent's mtime moves forward to the node's.
        """
        if node.name in parent.children:
            return False
        if node.group is None:
            node.group = parent.group
        parent.children[node.name] = node
        node.parent = parent
        parent.update_modification_time(node.mtime)
        self.inode_count += _count(node)
        return True

    def remove(self, node: INode) -> None:
        """Unlink ``node`` (and its subtree) from its parent; the root cannot be removed."""
        parent = node.parent
        always_assert(parent is not None, f"cannot remove {node!r}: it has no parent")
        del parent.children[node.name]
        node.parent = None
        self.inode_count -= _count(node)

    def move(self, node: INode, new_parent: INodeDirectory, new_name: str) -> None:
        """Unlink ``node`` and link it as ``new_parent/new_name`` (the name must be free)."""
        self.remove(node)
        node.name = new_name
        added = self.add_child(new_parent, node)
        always_assert(added, f"{new_name} already exists in {new_parent!r}")

    # ---- reading ---------------------------------------------------------------------------------
    def file_status(self, node: INode, path: str | None = None) -> FileStatus:
        if path is None:
            path = node.full_path()
        if node.is_dir:
            return FileStatus(
                path=path,
                is_dir=True,
                length=0,
                replication=0,
                block_size=0,
                modification_time=node.mtime,
                access_time=node.atime,
                permission=node.mode,
                owner=node.user,
                group=node.group or "",
                file_id=node.inode_id,
                children_num=len(node.children),  # type: ignore[attr-defined]
            )
        return FileStatus(
            path=path,
            is_dir=False,
            length=0,
            replication=node.replication,  # type: ignore[attr-defined]
            block_size=node.block_size,  # type: ignore[attr-defined]
            modification_time=node.mtime,
            access_time=node.atime,
            permission=node.mode,
            owner=node.user,
            group=node.group or "",
            file_id=node.inode_id,
            children_num=0,
        )

    def walk(self) -> Iterator[tuple[str, INode]]:
        """Every inode with its path, parents before children, children in name order."""
        stack: list[tuple[str, INode]] = [("/", self.root)]
        while stack:
            path, node = stack.pop()
            yield path, node
            if node.is_dir:
                prefix = path if path.endswith("/") else path + "/"
                children = node.children  # type: ignore[attr-defined]
                for name in sorted(children, reverse=True):
                    stack.append((prefix + name, children[name]))

    def snapshot(self) -> list[tuple]:
        """A comparable picture of the whole namespace (tests compare live and replayed)."""
        out: list[tuple] = [("last_inode_id", self.last_inode_id)]
        for path, node in self.walk():
            extra: tuple = ()
            if not node.is_dir:
                extra = (node.replication, node.block_size, node.client_name, node.client_machine)  # type: ignore[attr-defined]
            out.append(
                (
                    path,
                    node.is_dir,
                    node.inode_id,
                    node.user,
                    node.group,
                    node.mode,
                    node.mtime,
                    node.atime,
                )
                + extra
            )
        return out


def _count(node: INode) -> int:
    if not node.is_dir:
        return 1
    total = 1
    stack = [node]
    while stack:
        for child in stack.pop().children.values():  # type: ignore[attr-defined]
            total += 1
            if child.is_dir:
                stack.append(child)
    return total
