"""NamespaceAccess: who is calling the namesystem, what they may do, and the audit of it.

The permission half of Hadoop's FSDirectory and the audit half of its FSNamesystem: the
NameNode's own user (``fs_owner``) and ``dfs.permissions.superusergroup``,
``dfs.permissions.enabled``, ``getPermissionChecker()`` for the current caller,
``resolvePath``'s traverse check, ``checkPermission`` and ``checkOwner``, and
``logAuditEvent`` when a call ends. :class:`~hadoop_qjm.namenode.fs_namesystem.FSNamesystem`
wraps each call in :meth:`NamespaceAccess.call`::

    with access.call("mkdirs", src) as call:     # the caller and their checker
        with lock:
            iip = access.resolve(fs_dir, src, call.pc)          # traverse
            access.check(call.pc, iip, ancestor_access=WRITE)   # AccessControlException
            ...
            call.status(node)                                   # the audit line's perm
        edit_log.log_sync(txid)
    # the audit line: allowed=true; or allowed=false if an AccessControlException left
"""

from __future__ import annotations

import getpass
from collections.abc import Callable

from hadoop_qjm.common.exceptions import AccessControlException, InvalidPathException
from hadoop_qjm.common.security.user_group_information import (
    UserGroupInformation,
    is_superuser,
)
from hadoop_qjm.namenode.fs_directory import FSDirectory, INode, INodesInPath, is_valid_name
from hadoop_qjm.namenode.fs_namesystem_audit_logger import FSNamesystemAuditLogger
from hadoop_qjm.namenode.fs_permission_checker import FSPermissionChecker

__all__ = ["AuditedCall", "NamespaceAccess", "superuser_names"]


def superuser_names(fs_owner: str) -> frozenset[str]:
    """The superusers by name (``is_superuser``'s owners): the NameNode's own user, and the
    OS user running it where a test named another owner of / (``fs_owner``): in a
    deployment they are one. The namespace's checks and the admin calls' use the same."""
    return frozenset({fs_owner, getpass.getuser()})


class NamespaceAccess:
    """The access rules of one namesystem (see the module docstring).

    ``caller`` returns who is calling (None: :attr:`login_user` always, the NameNode's
    own user); ``remote_ip`` the client's address for the audit log (None inside the
    NameNode).
    """

    def __init__(
        self,
        fs_owner: str,
        supergroup: str,
        permissions_enabled: bool,
        caller: Callable[[], UserGroupInformation] | None,
        remote_ip: Callable[[], str | None],
        audit_logger: FSNamesystemAuditLogger | None = None,
    ) -> None:
        self.fs_owner = fs_owner
        self.superusers = superuser_names(fs_owner)
        self.supergroup = supergroup
        self.permissions_enabled = permissions_enabled
        #: The NameNode's own user: the superuser its internal calls run as (Hadoop's
        #: login user).
        self.login_user = UserGroupInformation(fs_owner)
        self._caller = caller or (lambda: self.login_user)
        self.remote_ip = remote_ip
        self.audit = audit_logger or FSNamesystemAuditLogger()
        self._checkers: dict[UserGroupInformation, FSPermissionChecker] = {}

    def call(self, cmd: str, src: str | None, dst: str | None = None) -> AuditedCall:
        """The current caller's checker for one call of ``cmd`` (Hadoop's audit command
        name), which audits the call when it ends."""
        ugi = self._caller()
        checker = self._checkers.get(ugi)
        if checker is None:
            checker = self._checker(ugi)
        return AuditedCall(self, ugi, checker, cmd, src, dst)

    def _checker(self, ugi: UserGroupInformation) -> FSPermissionChecker:
        """A new checker for ``ugi``, kept for its next calls: a checker is immutable and a
        UserGroupInformation a frozen value, so one checker serves every call of one
        identity (Hadoop builds one per call; its group lookup is cached instead)."""
        checker = FSPermissionChecker(
            ugi.short_user_name, ugi.groups, is_superuser(ugi, self.superusers, self.supergroup)
        )
        if len(self._checkers) >= 1024:
            self._checkers.clear()
        self._checkers[ugi] = checker
        return checker

    def resolve(
        self,
        fs_dir: FSDirectory,
        src: str,
        pc: FSPermissionChecker,
        invalid: Callable[[str], Exception] | None = None,
    ) -> INodesInPath:
        """Resolve ``src`` and check the traverse (FSDirectory.resolvePath); an invalid
        name raises ``invalid(src)`` (InvalidPathException)."""
        if not isinstance(src, str) or not is_valid_name(src):
            raise (invalid or InvalidPathException)(src)
        iip = fs_dir.resolve(src)
        if self.permissions_enabled:
            pc.check_traverse(iip)
            iip.traversed = True
        else:
            iip.check_traverse()
        return iip

    def check(self, pc: FSPermissionChecker, iip: INodesInPath, **access) -> None:
        """FSDirectory.checkPermission: the caller's access (FSPermissionChecker's
        arguments), unless permissions are off or the caller is a superuser."""
        if self.permissions_enabled and not pc.is_super:
            pc.check_permission(iip, **access)

    @staticmethod
    def check_owner(pc: FSPermissionChecker, iip: INodesInPath) -> None:
        """FSDirectory.checkOwner, whether or not permissions are enabled: Hadoop's chmod,
        chgrp and chown always check."""
        if not pc.is_super:
            pc.check_permission(iip, do_check_owner=True)


class AuditedCall:
    """One namespace call: ``ugi``, its checker ``pc``, and what its audit line will say.

    ``succeeded`` is the line's ``allowed`` (None: no line, as Hadoop for a rename that
    returns False); :meth:`status` sets its ``perm`` from the inode the call left.
    Leaving the ``with`` block writes the line; an AccessControlException writes
    ``allowed=false`` and counts the refusal.
    """

    __slots__ = ("_access", "ugi", "pc", "cmd", "src", "dst", "perm", "succeeded")

    def __init__(
        self,
        access: NamespaceAccess,
        ugi: UserGroupInformation,
        pc: FSPermissionChecker,
        cmd: str,
        src: str | None,
        dst: str | None,
    ) -> None:
        self._access = access
        self.ugi = ugi
        self.pc = pc
        self.cmd = cmd
        self.src = src
        self.dst = dst
        self.perm: str | None = None
        self.succeeded: bool | None = True

    def status(self, node: INode | None) -> None:
        self.perm = self._access.audit.perm_of(node)

    def status_created(self, iip: INodesInPath) -> None:
        """:meth:`status` of the inode the call created at ``iip``'s path (resolved before
        it was created), looked up only if a line is wanted: down from the deepest node
        that existed, without resolving the path again."""
        if self._access.audit.enabled:
            depth = iip.existing_depth()
            node = iip.inodes[depth - 1]
            for name in iip.components[depth - 1 :]:
                node = node.children[name]  # type: ignore[union-attr]
            self.perm = self._access.audit.perm_of(node)

    def __enter__(self) -> AuditedCall:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        audit = self._access.audit
        if exc_type is None:
            if not audit.enabled:
                return  # no line is wanted: build none of its fields
            if self.succeeded is None:
                return
            succeeded, perm = self.succeeded, self.perm
        elif issubclass(exc_type, AccessControlException):
            audit.count_denied(self.cmd.split(" ", 1)[0])
            succeeded, perm = False, None
        else:
            return  # Hadoop audits only allowed calls and AccessControlExceptions
        src = self.src if isinstance(self.src, str) else None
        dst = self.dst if isinstance(self.dst, str) else None
        audit.log_audit_event(
            succeeded, self.ugi, self._access.remote_ip(), self.cmd, src, dst, perm
        )
