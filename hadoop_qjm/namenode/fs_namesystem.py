"""FSNamesystem: the namespace operations a NameNode serves (Hadoop's FSNamesystem + FSDir*Op).

Every mutation has the same shape (STYLE.md habit 3, Hadoop's pattern)::

    with self.lock:                      # one writer at a time; readers too (an RLock)
        validate the request             # Hadoop's exception types and messages
        op = <the op Hadoop logs>        # MKDIR, ADD+CLOSE, DELETE, RENAME_OLD/RENAME, ...
        txid = edit_log.log_edit(op)     # txid assigned, op buffered in every journal
        loader.apply(op)                 # the code that replays edits (FSEditLogLoader)
    edit_log.log_sync(txid)              # outside the lock: group commit (HDFS-1073 §1)

Because the live change *is* ``FSEditLogLoader.apply(op)``, replaying the edit log into a
fresh namesystem rebuilds exactly this namespace. ``log_sync`` runs after the lock is
released, so while one handler thread waits for its flush others keep logging into the
other half of the double buffer, and one flush makes many of them durable.

Each call checks the caller's permissions as Hadoop's FSDir*Op do, then is audited
(:mod:`~hadoop_qjm.namenode.namespace_access`); a refusal is an AccessControlException
raised before anything is logged or changed. There is no safe mode; files have no blocks. ``rename`` is ClientProtocol.rename (logged as OP_RENAME_OLD, a
``dst`` that is a directory receives ``src`` inside it, failures return False);
``rename2`` is ClientProtocol.rename2 (OP_RENAME, POSIX-like, failures raise).
"""

from __future__ import annotations

import getpass
import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

from hadoop_qjm.common.exceptions import (
    AccessControlException,
    FileAlreadyExistsException,
    FileNotFoundException,
    HadoopAssertionError,
    IllegalArgumentException,
    IllegalStateException,
    InvalidPathException,
    IOException,
    PathIsNotEmptyDirectoryException,
)
from hadoop_qjm.common.fs_permission import FsAction, FsPermission, get_umask
from hadoop_qjm.common.security.user_group_information import UserGroupInformation
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.fs_edit_log_op import (
    AddOp,
    CloseOp,
    DeleteOp,
    FSEditLogOp,
    PermissionStatus,
    RenameOldOp,
    RenameOp,
    SetOwnerOp,
    SetPermissionsOp,
    TimesOp,
)
from hadoop_qjm.ipc import call_context
from hadoop_qjm.namenode.fs_dir_mkdir_op import PermissionStatuses, mkdir_ops, verify_parent_dir
from hadoop_qjm.namenode.fs_dir_rename_op import check_rename2, rename_old_refused
from hadoop_qjm.namenode.fs_directory import (
    FileStatus,
    FSDirectory,
    INodeDirectory,
    INodesInPath,
    is_valid_name,
)
from hadoop_qjm.namenode.fs_edit_log_loader import FSEditLogLoader, rename_old_target
from hadoop_qjm.namenode.fs_limits import (
    MAX_PATH_DEPTH,
    MAX_PATH_LENGTH,
    check_component_length,
    check_mode,
    check_path_length,
    check_principal,
)
from hadoop_qjm.namenode.fs_permission_checker import FSPermissionChecker
from hadoop_qjm.namenode.name_node_layout_version import software_layout_version
from hadoop_qjm.namenode.namespace_access import NamespaceAccess

__all__ = ["FSNamesystem", "EditLogWriter", "MAX_PATH_LENGTH", "MAX_PATH_DEPTH"]

LOG = logging.getLogger(__name__)

_RENAME_NONE, _RENAME_OVERWRITE = 0, 1
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1


class EditLogWriter(Protocol):
    """What the namesystem needs of :class:`~hadoop_qjm.namenode.fs_edit_log.FSEditLog`."""

    def log_edit(self, op: FSEditLogOp) -> int: ...

    def log_sync(self, txid: int | None = None) -> None: ...


def _now_ms() -> int:
    return int(time.time() * 1000)


class FSNamesystem:
    """The namespace, its lock and the operations on it.

    ``edit_log`` is None while the namespace is being loaded (or in an offline tool):
    reads work, mutations raise IllegalStateException. ``clock`` returns milliseconds.
    ``caller`` returns who is calling (default: the NameNode's own user, a superuser, as
    Hadoop's internal calls run), ``remote_ip`` the client's address for the audit log
    (default: the RPC call's, None inside the NameNode).
    """

    def __init__(
        self,
        conf: Configuration | None = None,
        *,
        edit_log: EditLogWriter | None = None,
        clock: Callable[[], int] = _now_ms,
        fs_owner: str | None = None,
        supergroup: str | None = None,
        caller: Callable[[], UserGroupInformation] | None = None,
        remote_ip: Callable[[], str | None] = call_context.remote_ip,
        on_rolling_upgrade_finalized: Callable[[], None] | None = None,
    ) -> None:
        """``on_rolling_upgrade_finalized``: called as each OP_ROLLING_UPGRADE_FINALIZE is
        applied (the storage's VERSION then takes the software's layout)."""
        conf = conf if conf is not None else Configuration()
        self.fs_owner = fs_owner or getpass.getuser()
        self.supergroup = supergroup or conf.get_trimmed(
            keys.DFS_PERMISSIONS_SUPERUSERGROUP_KEY, keys.DFS_PERMISSIONS_SUPERUSERGROUP_DEFAULT
        )
        self.default_replication = conf.get_int(
            keys.DFS_REPLICATION_KEY, keys.DFS_REPLICATION_DEFAULT
        )
        self.default_block_size = conf.get_storage_size(
            keys.DFS_BLOCK_SIZE_KEY, keys.DFS_BLOCK_SIZE_DEFAULT
        )
        self.max_component_length = conf.get_int(
            keys.DFS_NAMENODE_MAX_COMPONENT_LENGTH_KEY,
            keys.DFS_NAMENODE_MAX_COMPONENT_LENGTH_DEFAULT,
        )
        enabled = conf.get_bool(keys.DFS_PERMISSIONS_ENABLED_KEY, True)
        #: Who is calling, what they may do (dfs.permissions.enabled), and the audit log.
        self.access = NamespaceAccess(self.fs_owner, self.supergroup, enabled, caller, remote_ip)
        #: Applied to the default modes (0777 directories, 0666 files) of a call given none.
        self.umask = get_umask(conf)
        #: Shared PermissionStatus objects: the MKDIR encoder caches by identity.
        self._statuses = PermissionStatuses()
        self._checked_modes: dict[tuple[str, int], PermissionStatus] = {}
        #: Held for every read and every mutation; also by save_namespace and rolls.
        self.lock = threading.RLock()
        self.layout_version = software_layout_version(conf)  # the newest edits it applies
        self.edit_log = edit_log
        self._clock = clock
        self._on_rolling_upgrade_finalized = on_rolling_upgrade_finalized
        self.set_directory(FSDirectory(self.fs_owner, self.supergroup, 0o755, 0))

    def set_directory(self, fs_dir: FSDirectory) -> None:
        """Replace the whole namespace (an image was loaded)."""
        with self.lock:
            self.dir = fs_dir
            self.loader = FSEditLogLoader(
                fs_dir, self.layout_version, self._on_rolling_upgrade_finalized
            )

    # ---- helpers ---------------------------------------------------------------------------------
    def _writer(self) -> EditLogWriter:
        if self.edit_log is None:
            raise IllegalStateException("The namesystem is not open for write")
        return self.edit_log

    def _log_and_apply(self, ops: list[FSEditLogOp], parent: INodeDirectory | None = None) -> int:
        """Log each op, then apply it through the loader; returns the last txid. ``parent``:
        where a chain of MKDIRs (each in the one before) starts, as this caller resolved it."""
        writer = self._writer()
        txid = 0
        for op in ops:
            txid = writer.log_edit(op)
            try:
                if parent is None:
                    self.loader.apply(op)
                else:
                    parent = self.loader.apply_mkdir(op, parent)  # type: ignore[arg-type]
            except Exception as e:
                # Validation admitted an op the loader refuses: the log and the namespace
                # now disagree, which is a bug, never a client error.
                raise HadoopAssertionError(f"logged {op!r} but could not apply it: {e}") from e
        return txid

    def _sync(self, txid: int) -> None:
        if txid > 0:
            self._writer().log_sync(txid)

    def _resolve(
        self, src: str, pc: FSPermissionChecker, invalid: Callable[[str], Exception] | None = None
    ) -> INodesInPath:
        return self.access.resolve(self.dir, src, pc, invalid)

    def _check_component_length(self, components: list[str]) -> None:
        check_component_length(components, -1, self.max_component_length)

    def _permission(
        self, permission: PermissionStatus | int | None, default_mode: int, owner: str
    ) -> PermissionStatus:
        """A PermissionStatus as given, or a mode (None: ``default_mode`` with the umask
        applied) owned by ``owner`` (NameNodeRpcServer: the caller's short name)."""
        if permission is None:
            permission = FsPermission(default_mode).apply_umask(self.umask).mode
        if type(permission) is int:  # not a bool: check_mode refuses those
            # Most calls give a mode: one checked status per (caller, mode), kept.
            key = (owner, permission)
            status = self._checked_modes.get(key)
            if status is None:
                status = self._checked(PermissionStatus(owner, None, permission))
                if len(self._checked_modes) >= 1024:
                    self._checked_modes.clear()
                self._checked_modes[key] = status
            return status
        if isinstance(permission, int):
            permission = PermissionStatus(owner, None, permission)  # type: ignore[arg-type]
        return self._checked(permission)  # type: ignore[arg-type]

    @staticmethod
    def _checked(permission: PermissionStatus) -> PermissionStatus:
        check_principal(permission.user, "user")
        if permission.group is not None:
            check_principal(permission.group, "group")
        check_mode(permission.mode)
        return permission

    def _now(self) -> int:
        return int(self._clock())

    # ---- mutations -------------------------------------------------------------------------------
    def mkdirs(
        self,
        src: str,
        permission: PermissionStatus | int | None = None,
        create_parent: bool = True,
    ) -> bool:
        """Create directory ``src`` (and, with ``create_parent``, its missing ancestors).

        One OP_MKDIR per directory created; an existing directory is success without an
        op. ``permission``: a PermissionStatus (a None group inherits the parent's), a mode
        (owner: the caller), or None for 0777 less the umask. Ancestors created on the way
        get the mode plus u+wx (FSDirMkdirOp.addImplicitUwx). The caller needs WRITE on
        the closest existing ancestor.
        """
        check_path_length(src, "mkdirs")
        with self.access.call("mkdirs", src) as call:
            with self.lock:
                iip = self._resolve(src, call.pc)
                last = iip.last
                if last is not None:
                    if last.is_dir:
                        call.status(last)
                        return True
                    raise FileAlreadyExistsException(f"Path is not a directory: {iip.path}")
                self.access.check(call.pc, iip, ancestor_access=FsAction.WRITE)
                perm = self._permission(permission, 0o777, call.pc.user)
                if not create_parent:
                    verify_parent_dir(iip)
                ops = mkdir_ops(
                    self.dir,
                    iip,
                    perm,
                    len(iip.components),
                    self._now(),
                    self.max_component_length,
                    self._statuses,
                )
                txid = self._log_and_apply(ops, iip.inodes[iip.existing_depth() - 1])
                call.status_created(iip)
            self._sync(txid)
        return True

    def create(
        self,
        src: str,
        permission: PermissionStatus | int | None = None,
        overwrite: bool = False,
        *,
        create_parent: bool = True,
        replication: int | None = None,
        block_size: int | None = None,
        client_name: str = "",
        client_machine: str = "127.0.0.1",
    ) -> FileStatus:
        """Create the empty file ``src``: OP_ADD, then OP_CLOSE (it has no blocks to wait for).

        Missing ancestors are created first (OP_MKDIR each) unless ``create_parent`` is
        False. An existing file is replaced only with ``overwrite`` (the ADD op carries the
        flag; replaying it deletes the old file). The caller needs WRITE on the closest
        existing ancestor, and on the file it replaces (FSDirWriteFileOp.startFile).
        """
        check_path_length(src, "create")
        replication = self.default_replication if replication is None else replication
        block_size = self.default_block_size if block_size is None else block_size
        if not 1 <= replication <= 32767:
            raise IllegalArgumentException(f"Invalid replication factor {replication} for {src}")
        if not 0 < block_size <= _I64_MAX:
            raise IllegalArgumentException(f"Invalid block size {block_size} for {src}")
        check_principal(client_name, "client")
        check_principal(client_machine, "client machine")
        with self.access.call("create", src) as call:
            with self.lock:
                pc = call.pc
                iip = self._resolve(src, pc)
                self.access.check(pc, iip, ancestor_access=FsAction.WRITE)
                last = iip.last
                if last is not None:
                    if last.is_dir:
                        raise FileAlreadyExistsException(
                            f"{iip.path} already exists as a directory"
                        )
                    if overwrite:
                        self.access.check(pc, iip, access=FsAction.WRITE)
                    else:
                        raise FileAlreadyExistsException(
                            f"{iip.path} for client {client_machine} already exists"
                        )
                if not iip.components:
                    raise InvalidPathException(src)
                if not create_parent:
                    verify_parent_dir(iip)
                perm = self._permission(permission, 0o666, pc.user)
                now = self._now()
                ops = mkdir_ops(
                    self.dir,
                    iip,
                    perm,
                    len(iip.components) - 1,
                    now,
                    self.max_component_length,
                    self._statuses,
                )
                parent = iip.parent
                group = perm.group
                if group is None:
                    # The new file inherits the group of its (possibly just-created) parent.
                    group = parent.group if parent is not None else ops[-1].permissions.group  # type: ignore[attr-defined]
                self._check_component_length(iip.components)
                # What OP_ADD and OP_CLOSE both carry.
                file_fields = dict(
                    path=iip.path,
                    replication=replication,
                    mtime=now,
                    atime=now,
                    block_size=block_size,
                    permissions=self._statuses.get(perm.user, group, perm.mode),
                )
                inode_id = self.dir.peek_next_inode_id(len(ops) + 1)
                ops.append(
                    AddOp(
                        0,
                        inode_id=inode_id,
                        client_name=client_name,
                        client_machine=client_machine,
                        overwrite=last is not None,
                        **file_fields,
                    )
                )
                # logCloseFile leaves the inode id at 0 (Hadoop's editsStored shows it so).
                ops.append(CloseOp(0, inode_id=0, **file_fields))
                txid = self._log_and_apply(ops)
                node = self.dir.get_inode(iip.path)
                status = self.dir.file_status(node, iip.path)  # type: ignore[arg-type]
                call.status(node)
            self._sync(txid)
        return status

    def delete(self, src: str, recursive: bool) -> bool:
        """Delete ``src``; False if it does not exist (or is the root). OP_DELETE.

        The caller needs WRITE on the parent (and to own the node or the parent if the
        parent is sticky) and ALL on every non-empty directory of the subtree
        (FSDirDeleteOp.delete). As Hadoop, a delete that finds nothing is audited as
        ``allowed=false``.
        """
        with self.access.call("delete", src) as call:
            with self.lock:
                iip = self._resolve(src, call.pc)
                self.access.check(
                    call.pc,
                    iip,
                    parent_access=FsAction.WRITE,
                    sub_access=FsAction.ALL,
                    ignore_empty_dir=True,
                )
                node = iip.last
                if node is None:
                    LOG.debug("failed to remove %s because it does not exist", src)
                    call.succeeded = False
                    return False
                if not recursive and node.is_dir and node.children:  # type: ignore[attr-defined]
                    raise PathIsNotEmptyDirectoryException(f"{iip.path} is non empty")
                if node is self.dir.root:
                    LOG.warning("failed to remove / because the root is not allowed to be deleted")
                    call.succeeded = False
                    return False
                txid = self._log_and_apply([DeleteOp(0, path=iip.path, timestamp=self._now())])
            self._sync(txid)
        return True

    def rename(self, src: str, dst: str) -> bool:
        """ClientProtocol.rename: move ``src`` to ``dst``, or into ``dst`` if it is a directory.

        Returns False (nothing logged) when the source is missing or the root, the target
        exists, its parent is missing, or it lies under the source. Logged as
        OP_RENAME_OLD with the real target path. The caller needs WRITE on the source's
        parent (and the sticky bit's ownership) and on the target's closest existing
        ancestor (FSDirRenameOp.renameTo).
        """
        if not isinstance(dst, str) or not is_valid_name(dst):
            raise IOException(f"Invalid name: {dst}")
        check_path_length(dst, "rename")
        with self.access.call("rename", src, dst) as call:
            call.succeeded = None  # Hadoop audits a rename that returns False not at all
            with self.lock:
                if not isinstance(src, str) or not is_valid_name(src):
                    return False
                src_iip = self._resolve(src, call.pc)
                dst_iip = self._resolve(dst, call.pc)
                actual = rename_old_target(self.dir, src_iip.path, dst_iip.path)
                target = dst_iip if actual == dst_iip.path else self.dir.resolve(actual)
                self.access.check(call.pc, src_iip, parent_access=FsAction.WRITE)
                self.access.check(call.pc, target, ancestor_access=FsAction.WRITE)
                if rename_old_refused(self.dir.root, src_iip, target):
                    return False
                if actual != src_iip.path:
                    self._check_component_length(target.components)
                op = RenameOldOp(0, src=src_iip.path, dst=actual, timestamp=self._now())
                txid = self._log_and_apply([op])
                call.succeeded = True
                call.status(src_iip.last)
            self._sync(txid)
        return True

    def rename2(self, src: str, dst: str, overwrite: bool = False) -> None:
        """ClientProtocol.rename2: POSIX-like rename; every refusal raises. OP_RENAME.
        Permissions as :meth:`rename`'s, on ``dst`` itself."""
        if not isinstance(dst, str) or not is_valid_name(dst):
            raise InvalidPathException(f"Invalid name: {dst}")
        check_path_length(dst, "rename")
        # FSNamesystem.renameTo's command: "rename (options=[NONE])" (the Options.Rename list).
        cmd = f"rename (options=[{'OVERWRITE' if overwrite else 'NONE'}])"
        with self.access.call(cmd, src, dst) as call:
            with self.lock:
                src_iip = self._resolve(src, call.pc)
                dst_iip = self._resolve(dst, call.pc)
                self.access.check(call.pc, src_iip, parent_access=FsAction.WRITE)
                self.access.check(call.pc, dst_iip, ancestor_access=FsAction.WRITE)
                txid = self._rename2_op(src_iip, dst_iip, overwrite)
                call.status(src_iip.last)
            self._sync(txid)

    def _rename2_op(self, src_iip: INodesInPath, dst_iip: INodesInPath, overwrite: bool) -> int:
        """FSDirRenameOp.unprotectedRenameTo's checks, then OP_RENAME; returns its txid."""
        check_rename2(self.dir.root, src_iip, dst_iip, overwrite)
        self._check_component_length(dst_iip.components)
        option = _RENAME_OVERWRITE if overwrite else _RENAME_NONE
        op = RenameOp(
            0, src=src_iip.path, dst=dst_iip.path, timestamp=self._now(), options=(option,)
        )
        return self._log_and_apply([op])

    def set_permission(self, src: str, mode: int) -> None:
        """Set the mode bits of ``src`` (sticky + rwx are kept). OP_SET_PERMISSIONS.
        Only the owner or a superuser may."""
        check_mode(mode)
        with self.access.call("setPermission", src) as call:
            with self.lock:
                iip = self._existing(src, call.pc)
                self.access.check_owner(call.pc, iip)
                txid = self._log_and_apply([SetPermissionsOp(0, src=iip.path, permission=mode)])
                call.status(iip.last)
            self._sync(txid)

    def set_owner(self, src: str, username: str | None, groupname: str | None) -> None:
        """Set the owner and/or group of ``src``; None (or "") leaves one as it is.

        A superuser may set any; the owner may only set a group they belong to (and
        "change" the owner to themselves), as FSDirAttrOp.setOwner.
        """
        username = username or None  # the edit log reads "" back as "unchanged"
        groupname = groupname or None
        for name, what in ((username, "user"), (groupname, "group")):
            if name is not None:
                check_principal(name, what)
        with self.access.call("setOwner", src) as call:
            pc = call.pc
            with self.lock:
                iip = self._existing(src, pc)
                self.access.check_owner(pc, iip)
                if not pc.is_super:
                    if username is not None and username != pc.user:
                        raise AccessControlException(
                            f"User {pc.user} is not a super user "
                            "(non-super user cannot change owner)."
                        )
                    if groupname is not None and not pc.is_member_of_group(groupname):
                        raise AccessControlException(
                            f"User {pc.user} does not belong to {groupname}"
                        )
                op = SetOwnerOp(0, src=iip.path, username=username, groupname=groupname)
                txid = self._log_and_apply([op])
                call.status(iip.last)
            self._sync(txid)

    def set_times(self, src: str, mtime: int, atime: int) -> None:
        """Set mtime and/or atime of ``src`` (-1 leaves one unchanged). OP_TIMES.
        The caller needs WRITE on ``src``."""
        for value in (mtime, atime):
            if not isinstance(value, int) or not _I64_MIN <= value <= _I64_MAX:
                raise IllegalArgumentException(f"Invalid time {value!r}")
        with self.access.call("setTimes", src) as call:
            with self.lock:
                iip = self._resolve(src, call.pc)
                self.access.check(call.pc, iip, access=FsAction.WRITE)
                if iip.last is None:
                    raise FileNotFoundException(f"File/Directory {iip.path} does not exist.")
                op = TimesOp(0, path=iip.path, mtime=mtime, atime=atime)
                txid = self._log_and_apply([op])
                call.status(iip.last)
            self._sync(txid)

    def _existing(self, src: str, pc: FSPermissionChecker) -> INodesInPath:
        iip = self._resolve(src, pc)
        if iip.last is None:
            raise FileNotFoundException(f"File does not exist: {src}")
        return iip

    # ---- reads -----------------------------------------------------------------------------------
    def get_file_info(self, src: str) -> FileStatus | None:
        """The status of ``src``, or None if it does not exist (the caller needs to
        traverse its ancestors)."""
        with self.access.call("getfileinfo", src) as call, self.lock:
            iip = self._resolve(src, call.pc, _invalid_file_name)
            node = iip.last
            return None if node is None else self.dir.file_status(node, iip.path)

    def get_listing(self, src: str, start_after: str = "") -> list[FileStatus]:
        """The children of directory ``src`` in name order (after ``start_after``);
        a file lists as itself. FileNotFoundException if ``src`` does not exist.
        Listing a directory takes READ_EXECUTE on it."""
        with self.access.call("listStatus", src) as call, self.lock:
            iip = self._resolve(src, call.pc, _invalid_file_name)
            node = iip.last
            if node is not None and node.is_dir:
                self.access.check(call.pc, iip, access=FsAction.READ_EXECUTE)
            if node is None:
                raise FileNotFoundException(f"File {src} does not exist.")
            if not node.is_dir:
                return [self.dir.file_status(node, iip.path)]
            children = node.children  # type: ignore[attr-defined]
            prefix = iip.path.rstrip("/") + "/"
            return [
                self.dir.file_status(children[name], prefix + name)
                for name in sorted(children)
                if name > start_after
            ]

    def log_admin_op(self, op: FSEditLogOp) -> int:
        """Log, apply and sync an op of the NameNode's own (a rolling upgrade's)."""
        with self.lock:
            txid = self._log_and_apply([op])
        self._sync(txid)
        return txid

    # ---- loading ---------------------------------------------------------------------------------
    def load_edits(self, streams, expected_start_txid: int) -> int:
        """Replay ``streams`` from ``expected_start_txid``; returns the last txid applied."""
        with self.lock:
            return self.loader.load_edits(streams, expected_start_txid)

    @property
    def files_total(self) -> int:
        """Inodes in the namespace, the root included (FSNamesystem.getFilesTotal)."""
        return self.dir.inode_count

    @property
    def last_inode_id(self) -> int:
        return self.dir.last_inode_id

    def snapshot(self) -> list[tuple]:
        """A comparable picture of the namespace (see FSDirectory.snapshot)."""
        with self.lock:
            return self.dir.snapshot()

    @property
    def root(self) -> INodeDirectory:
        return self.dir.root


def _invalid_file_name(src: str) -> InvalidPathException:
    return InvalidPathException(f"Invalid file name: {src}")
