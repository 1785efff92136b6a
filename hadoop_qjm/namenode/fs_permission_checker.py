"""FSPermissionChecker: Hadoop's permission rules over a resolved path (pure).

One checker per call, for one caller (Hadoop's ``FSPermissionChecker``, without ACLs and
attribute providers). :meth:`FSPermissionChecker.check_permission` is Hadoop's
``checkPermission(inodesInPath, doCheckOwner, ancestorAccess, parentAccess, access,
subAccess, ignoreEmptyDir)``, in Hadoop's order:

1. traverse: every existing ancestor of the last component must be a directory
   (ParentNotDirectoryException) that the caller may execute (``x``);
2. the sticky bit of the parent, when ``parent_access`` implies WRITE and the last
   component exists: only the parent's or the node's owner may remove or rename it;
3. ``ancestor_access`` on the closest existing ancestor; 4. ``parent_access`` on the
   parent; 5. ``access`` on the node itself; 6. ``sub_access`` on the node and every
   directory below it (with the sticky bit of each, as Hadoop); 7. ownership.

Whose bits apply: the owner's if the caller is the owner, else the group's if the caller is
in the node's group, else the others' (hasPermission). A superuser skips all of it (the
caller checks :attr:`FSPermissionChecker.is_super`, as Hadoop's FSDirectory does);
:meth:`check_traverse` is the traverse a resolution always does (a superuser's checks
only that the ancestors are directories). Every refusal is an AccessControlException with
Hadoop's message, e.g. ``Permission denied: user=alice, access=WRITE,
inode="/data":bob:supergroup:drwxr-xr-x``.
"""

from __future__ import annotations

from collections.abc import Iterable

from hadoop_qjm.common.exceptions import AccessControlException, ParentNotDirectoryException
from hadoop_qjm.common.fs_permission import FsAction, FsPermission
from hadoop_qjm.namenode.fs_directory import INode, INodesInPath, join_path

__all__ = ["FSPermissionChecker", "FsAction", "inode_string"]

#: FSExceptionMessages.PERMISSION_DENIED_BY_STICKY_BIT
PERMISSION_DENIED_BY_STICKY_BIT = "Permission denied by sticky bit"


def inode_string(node: INode) -> str:
    """``owner:group:drwxr-xr-x`` as Hadoop's messages show an inode."""
    kind = "d" if node.is_dir else "-"
    return f"{node.user}:{node.group}:{kind}{FsPermission(node.mode)}"


class FSPermissionChecker:
    """The checks for one caller: ``user``, ``groups``, and whether the caller is a
    superuser (:func:`~hadoop_qjm.common.security.user_group_information.is_superuser`:
    Hadoop's constructor works it out from fsOwner, supergroup and the caller's UGI)."""

    __slots__ = ("user", "groups", "is_super")

    def __init__(self, user: str, groups: Iterable[str], is_super: bool) -> None:
        self.user = user
        self.groups = frozenset(groups)
        self.is_super = is_super

    def is_member_of_group(self, group: str | None) -> bool:
        return group in self.groups

    def check_superuser_privilege(self) -> None:
        """checkSuperuserPrivilege: refuse a caller who is not a superuser."""
        if not self.is_super:
            raise AccessControlException(
                f"Access denied for user {self.user}. Superuser privilege is required"
            )

    # ---- the rules ------------------------------------------------------------------------------
    def has_permission(self, node: INode, access: FsAction) -> bool:
        """Whether the owner's, the group's or the others' bits of ``node`` (whichever class
        the caller is in) include ``access``."""
        mode = node.mode
        if self.user == node.user:
            bits = mode >> 6
        elif node.group in self.groups:
            bits = mode >> 3
        else:
            bits = mode
        return (bits & access) == access

    def check_traverse(self, iip: INodesInPath) -> None:
        """What resolving a path checks (FSPermissionChecker.checkTraverse): the existing
        ancestors are directories, and, unless the caller is a superuser, executable."""
        if self.is_super:
            iip.check_traverse()
        else:
            self.check_permission(iip)

    def check_permission(
        self,
        iip: INodesInPath,
        do_check_owner: bool = False,
        ancestor_access: FsAction | None = None,
        parent_access: FsAction | None = None,
        access: FsAction | None = None,
        sub_access: FsAction | None = None,
        ignore_empty_dir: bool = False,
    ) -> None:
        """Hadoop's checkPermission (see the module docstring for the order). The traverse
        is skipped for a path whose resolution already checked it (``iip.traversed``):
        the same nodes, the same caller, under the same lock, so the same outcome."""
        inodes = iip.inodes
        length = len(inodes)
        ancestor = length - 2
        while ancestor >= 0 and inodes[ancestor] is None:
            ancestor -= 1
        if not iip.traversed:
            for i in range(ancestor + 1):
                node = inodes[i]
                if not node.is_dir:  # type: ignore[union-attr]
                    raise ParentNotDirectoryException(
                        f"{join_path(iip.components[:i])} (is not a directory)"
                    )
                self._check(iip, i, FsAction.EXECUTE)
        last = inodes[-1]
        if (
            parent_access is not None
            and parent_access.implies(FsAction.WRITE)
            and length > 1
            and last is not None
        ):
            self._check_sticky_bit(iip, length - 2)
        if ancestor_access is not None and length > 1:
            self._check(iip, ancestor, ancestor_access)
        if parent_access is not None and length > 1:
            self._check(iip, length - 2, parent_access)
        if access is not None:
            self._check(iip, length - 1, access)
        if sub_access is not None:
            self._check_sub_access(last, sub_access, ignore_empty_dir)
        if do_check_owner:
            self._check_owner(iip, length - 1)

    def _check(self, iip: INodesInPath, i: int, access: FsAction) -> None:
        node = iip.inodes[i] if i >= 0 else None
        if node is not None and not self.has_permission(node, access):
            raise self._denied(node, join_path(iip.components[:i]), access)

    def _denied(self, node: INode, path: str, access: FsAction) -> AccessControlException:
        return AccessControlException(
            f'Permission denied: user={self.user}, access={access}, inode="{path}":'
            + inode_string(node)
        )

    def _check_owner(self, iip: INodesInPath, i: int) -> None:
        node = iip.inodes[i]
        if node is not None and node.user == self.user:
            return
        raise AccessControlException(
            f"Permission denied. user={self.user} is not the owner of "
            f"inode={join_path(iip.components[:i])}"
        )

    def _sticky_bit_violated(self, parent: INode, node: INode) -> bool:
        return parent.user != self.user and node.user != self.user

    def _check_sticky_bit(self, iip: INodesInPath, index: int) -> None:
        parent, node = iip.inodes[index], iip.inodes[index + 1]
        if not parent.mode & 0o1000 or not self._sticky_bit_violated(parent, node):  # type: ignore[union-attr]
            return
        raise self._sticky_bit_error(
            join_path(iip.components[: index + 1]),
            node,  # type: ignore[arg-type]
            join_path(iip.components[:index]),
            parent,  # type: ignore[arg-type]
        )

    def _sticky_bit_error(
        self, path: str, node: INode, parent_path: str, parent: INode
    ) -> AccessControlException:
        return AccessControlException(
            f'{PERMISSION_DENIED_BY_STICKY_BIT}: user={self.user}, path="{path}":'
            f'{inode_string(node)}, parent="{parent_path}":{inode_string(parent)}'
        )

    def _check_sub_access(self, top: INode | None, access: FsAction, ignore_empty: bool) -> None:
        """checkSubAccess: ``access`` on ``top`` and every directory under it (an empty one
        skipped with ``ignore_empty``), and no child a sticky directory protects.

        Walked as Hadoop walks it (a stack, children in name order), so the same refusal
        is reported first. As Hadoop, a sticky-bit refusal below ``top`` names the
        directory's path but shows ``top``'s owner, group and mode as the parent's.
        """
        if top is None or not top.is_dir:
            return
        stack = [top]
        while stack:
            directory = stack.pop()
            children = [directory.children[n] for n in sorted(directory.children)]  # type: ignore[attr-defined]
            if not (ignore_empty and not children):
                if not self.has_permission(directory, access):
                    raise self._denied(directory, directory.full_path(), access)
                if directory.mode & 0o1000:
                    for child in children:
                        if self._sticky_bit_violated(directory, child):
                            raise self._sticky_bit_error(
                                child.full_path(), child, directory.full_path(), top
                            )
            stack.extend(child for child in children if child.is_dir)
