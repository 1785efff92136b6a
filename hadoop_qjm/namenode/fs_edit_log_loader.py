"""FSEditLogLoader: applies edit-log ops to an :class:`FSDirectory` (Hadoop's class of the name).

:meth:`FSEditLogLoader.apply` is the one place an op changes the namespace: the live
:class:`~hadoop_qjm.namenode.fs_namesystem.FSNamesystem` validates a request, logs the op
and hands the *same* op to ``apply``; start-up and the standby replay the edit log through
``apply`` too. So a namespace rebuilt from an image and the edits after it equals the one
that wrote them (HDFS-1073 §4.4).

The semantics are Hadoop's ``*ForEditLog`` paths: a MKDIR of an existing path and a
DELETE of a missing one are ignored, an old-style RENAME that cannot happen is ignored,
an OP_ADD with ``overwrite`` replaces an existing file, parents' mtimes only move forward.
What cannot be applied (a missing parent, a file where a directory must be, an op this
NameNode does not model) raises :class:`EditLogApplyException`.

:meth:`FSEditLogLoader.load_edits` replays streams in txid order and checks that the txids
are contiguous (FSEditLogLoader.loadEditRecords): a gap or an out-of-order op is an error
naming the txids.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import FileNotFoundException, IOException
from hadoop_qjm.editlog.fs_edit_log_op import (
    AddOp,
    CloseOp,
    DeleteOp,
    EndLogSegmentOp,
    FSEditLogOp,
    MkdirOp,
    RenameOldOp,
    RenameOp,
    RollingUpgradeFinalizeOp,
    RollingUpgradeStartOp,
    SetOwnerOp,
    SetPermissionsOp,
    SetReplicationOp,
    StartLogSegmentOp,
    TimesOp,
)
from hadoop_qjm.namenode.fs_directory import (
    FSDirectory,
    INode,
    INodeDirectory,
    INodeFile,
    INodesInPath,
    path_components,
)
from hadoop_qjm.namenode.protocol.exceptions import RollingUpgradeException

__all__ = ["FSEditLogLoader", "EditLogApplyException", "RENAME_OVERWRITE", "rename_old_target"]

LOG = logging.getLogger(__name__)

#: Options.Rename.OVERWRITE's wire value (RenameOp.options).
RENAME_OVERWRITE = 1


class EditLogApplyException(IOException):
    """An op that cannot be applied to the namespace as it stands."""

    java_name = "org.apache.hadoop.hdfs.server.namenode.EditLogApplyException"


def rename_old_target(fs_dir: FSDirectory, src: str, dst: str) -> str:
    """The real destination of an old-style rename: into ``dst`` when it is a directory."""
    node = fs_dir.get_inode(dst)
    if node is not None and node.is_dir:
        name = path_components(src)[-1] if path_components(src) else ""
        return dst.rstrip("/") + "/" + name
    return dst


class FSEditLogLoader:
    """Applies ops to ``fs_dir``; not thread-safe (the namesystem's lock guards it)."""

    def __init__(
        self,
        fs_dir: FSDirectory,
        layout_version: int = CURRENT_LAYOUT_VERSION,
        on_rolling_upgrade_finalized: Callable[[], None] | None = None,
    ) -> None:
        self.fs_dir = fs_dir
        #: The software's layout: edits of a newer one are refused (readLogVersion).
        self.layout_version = layout_version
        #: Hears of each FINALIZE applied (None: nobody).
        self._on_rolling_upgrade_finalized = on_rolling_upgrade_finalized
        self._handlers: dict[type, Callable[[FSEditLogOp], None]] = {
            MkdirOp: self._apply_mkdir,
            AddOp: self._apply_add,
            CloseOp: self._apply_close,
            DeleteOp: self._apply_delete,
            RenameOldOp: self._apply_rename_old,
            RenameOp: self._apply_rename,
            SetPermissionsOp: self._apply_set_permissions,
            SetOwnerOp: self._apply_set_owner,
            TimesOp: self._apply_times,
            SetReplicationOp: self._apply_set_replication,
            StartLogSegmentOp: _ignore,
            EndLogSegmentOp: _ignore,
            RollingUpgradeStartOp: self._apply_rolling_upgrade_start,
            RollingUpgradeFinalizeOp: self._apply_rolling_upgrade_finalize,
        }

    # ---- one op ----------------------------------------------------------------------------------
    def apply(self, op: FSEditLogOp) -> None:
        """Change the namespace as ``op`` says (see the module docstring)."""
        handler = self._handlers.get(type(op))
        if handler is None:
            raise EditLogApplyException(
                f"Cannot apply {op.opcode.name} (txid {op.txid}): this NameNode does not "
                "model that operation"
            )
        handler(op)

    def _parent_dir(self, iip: INodesInPath, what: str) -> INodeDirectory:
        parent = iip.parent
        if parent is None or not parent.is_dir:
            raise EditLogApplyException(
                f"Cannot {what} {iip.path}: parent {iip.parent_path} is "
                f"{'missing' if parent is None else 'a file'}"
            )
        return parent  # type: ignore[return-value]

    def apply_mkdir(self, op: MkdirOp, parent: INodeDirectory) -> INode:
        """:meth:`apply` of a live MKDIR in ``parent``, its path's parent directory: the
        caller resolved the path under the namesystem lock it still holds, so walking the
        path again would find that same directory. Returns the directory at the op's path."""
        if not parent.is_dir:
            raise EditLogApplyException(f"Cannot create directory {op.path}: parent is a file")
        name = op.path.rpartition("/")[2]
        existing = parent.children.get(name)
        if existing is not None:
            self.fs_dir.update_last_inode_id(op.inode_id)
            LOG.warning("Ignoring MKDIR of existing path %s (txid %d)", op.path, op.txid)
            return existing
        return self._add_directory(op, parent, name)

    def _apply_mkdir(self, op: MkdirOp) -> None:  # FSDirMkdirOp.mkdirForEditLog
        iip = self.fs_dir.resolve(op.path)
        parent = self._parent_dir(iip, "create directory")
        if iip.last is not None:
            self.fs_dir.update_last_inode_id(op.inode_id)
            LOG.warning("Ignoring MKDIR of existing path %s (txid %d)", op.path, op.txid)
            return
        self._add_directory(op, parent, iip.last_name)

    def _add_directory(self, op: MkdirOp, parent: INodeDirectory, name: str) -> INode:
        inode_id = self.fs_dir.update_last_inode_id(op.inode_id)
        perm = op.permissions
        # A directory has no access time: MKDIR's atime field is read and ignored.
        node = INodeDirectory(inode_id, name, perm.user, perm.group, perm.mode, op.timestamp, 0)
        self.fs_dir.add_child(parent, node)
        return node

    def _apply_add(self, op: AddOp) -> None:  # FSEditLogLoader OP_ADD (no append)
        fs_dir = self.fs_dir
        iip = fs_dir.resolve(op.path)
        old = iip.last
        if old is not None and op.overwrite and not old.is_dir:
            self._delete(old, op.mtime)
            old = None
        if old is not None:
            raise EditLogApplyException(
                f"Cannot add {op.path} (txid {op.txid}): it exists and re-opening a file "
                "for append is not supported"
            )
        parent = self._parent_dir(iip, "add file")
        inode_id = fs_dir.update_last_inode_id(op.inode_id)
        perm = op.permissions
        node = INodeFile(
            inode_id,
            iip.last_name,
            perm.user,
            perm.group,
            perm.mode,
            op.mtime,
            op.atime,
            replication=op.replication,
            block_size=op.block_size,
            client_name=op.client_name,
            client_machine=op.client_machine,
        )
        fs_dir.add_child(parent, node)

    def _apply_close(self, op: CloseOp) -> None:  # FSEditLogLoader OP_CLOSE
        node = self.fs_dir.get_inode(op.path)
        if node is None:
            raise FileNotFoundException(f"File does not exist: {op.path}")
        if node.is_dir:
            raise FileNotFoundException(f"Path is not a file: {op.path}")
        if not node.under_construction:  # type: ignore[attr-defined]
            raise EditLogApplyException(f"File is not under construction: {op.path}")
        node.atime = op.atime
        node.mtime = op.mtime
        node.client_name = None  # type: ignore[attr-defined]
        node.client_machine = ""  # type: ignore[attr-defined]

    def _apply_delete(self, op: DeleteOp) -> None:  # FSDirDeleteOp.deleteForEditLog
        iip = self.fs_dir.resolve(op.path)
        node = iip.last
        if node is None or node is self.fs_dir.root:
            LOG.debug("Ignoring DELETE of %s (txid %d): missing or the root", op.path, op.txid)
            return
        self._delete(node, op.timestamp)

    def _delete(self, node: INode, mtime: int) -> None:
        parent = node.parent
        self.fs_dir.remove(node)
        if parent is not None:
            parent.update_modification_time(mtime)

    def _apply_rename_old(self, op: RenameOldOp) -> None:  # FSDirRenameOp.renameForEditLog
        if op.src == op.dst:
            return  # a rename onto itself succeeds and changes nothing
        dst = rename_old_target(self.fs_dir, op.src, op.dst)
        if not self.rename_old(op.src, dst, op.timestamp):
            LOG.warning("Ignoring RENAME_OLD %s -> %s (txid %d)", op.src, op.dst, op.txid)

    def rename_old(self, src: str, dst: str, timestamp: int) -> bool:
        """The old rename's move (unprotectedRenameTo): False instead of any error."""
        fs_dir = self.fs_dir
        src_iip = fs_dir.resolve(src)
        node = src_iip.last
        if node is None or node is fs_dir.root:
            return False
        if dst == src_iip.path:
            return True
        if dst.startswith(src_iip.path + "/"):
            return False  # into its own subtree
        dst_iip = fs_dir.resolve(dst)
        dst_parent = dst_iip.parent
        if dst_iip.last is not None or dst_parent is None or not dst_parent.is_dir:
            return False
        self._move(node, dst_parent, dst_iip.last_name, timestamp)  # type: ignore[arg-type]
        return True

    def _apply_rename(self, op: RenameOp) -> None:  # FSDirRenameOp.renameForEditLog (rename2)
        fs_dir = self.fs_dir
        src_iip = fs_dir.resolve(op.src)
        dst_iip = fs_dir.resolve(op.dst)
        node = src_iip.last
        dst_parent = dst_iip.parent
        if (
            node is None
            or node is fs_dir.root
            or dst_parent is None
            or not dst_parent.is_dir
            or op.dst.startswith(src_iip.path + "/")
            or dst_iip.path == src_iip.path
        ):
            raise EditLogApplyException(f"Cannot rename {op.src} to {op.dst} (txid {op.txid})")
        existing = dst_iip.last
        if existing is not None:
            replaceable = (
                RENAME_OVERWRITE in op.options
                and existing.is_dir == node.is_dir
                and not (existing.is_dir and existing.children)  # type: ignore[attr-defined]
            )
            if not replaceable:
                raise EditLogApplyException(
                    f"Cannot rename {op.src} to {op.dst} (txid {op.txid}): the destination "
                    "exists and may not be replaced"
                )
            fs_dir.remove(existing)
        self._move(node, dst_parent, dst_iip.last_name, op.timestamp)  # type: ignore[arg-type]

    def _move(self, node: INode, dst_parent: INodeDirectory, name: str, timestamp: int) -> None:
        src_parent = node.parent
        self.fs_dir.move(node, dst_parent, name)
        # RenameOperation.updateMtimeAndLease: both parents move forward to the rename time.
        if src_parent is not None:
            src_parent.update_modification_time(timestamp)
        dst_parent.update_modification_time(timestamp)

    def _existing(self, path: str) -> INode:
        node = self.fs_dir.get_inode(path)
        if node is None:
            raise FileNotFoundException(f"File does not exist: {path}")
        return node

    def _apply_set_permissions(self, op: SetPermissionsOp) -> None:
        node = self._existing(op.src)
        node.mode = op.permission & 0o1777

    def _apply_set_owner(self, op: SetOwnerOp) -> None:
        node = self._existing(op.src)
        if op.username is not None:
            node.user = op.username
        if op.groupname is not None:
            node.group = op.groupname

    def _apply_times(self, op: TimesOp) -> None:  # FSDirAttrOp.unprotectedSetTimes(force)
        node = self.fs_dir.get_inode(op.path)
        if node is None:
            LOG.warning("Ignoring TIMES of missing %s (txid %d)", op.path, op.txid)
            return
        if op.mtime != -1:
            node.mtime = op.mtime
        if op.atime != -1:
            node.atime = op.atime

    def _apply_set_replication(self, op: SetReplicationOp) -> None:
        node = self.fs_dir.get_inode(op.path)
        if node is not None and not node.is_dir:
            node.replication = op.replication  # type: ignore[attr-defined]

    def _apply_rolling_upgrade_start(self, op: RollingUpgradeStartOp) -> None:
        # FSEditLogLoader OP_ROLLING_UPGRADE_START -> startRollingUpgradeInternal.
        if self.fs_dir.rolling_upgrade_start_time:
            raise RollingUpgradeException(
                "Failed to start rolling upgrade since a rolling upgrade is already in "
                f"progress (started at {self.fs_dir.rolling_upgrade_start_time})"
            )
        self.fs_dir.rolling_upgrade_start_time = op.time

    def _apply_rolling_upgrade_finalize(self, op: RollingUpgradeFinalizeOp) -> None:
        # Only when one is in progress: a FINALIZE without its START is fine (the image
        # after the START was saved before a restart), as Hadoop's loader says.
        self.fs_dir.rolling_upgrade_start_time = 0
        # Then, as Hadoop's case OP_ROLLING_UPGRADE_FINALIZE, the storage's version.
        if self._on_rolling_upgrade_finalized is not None:
            self._on_rolling_upgrade_finalized()

    # ---- streams ---------------------------------------------------------------------------------
    def load_edits(
        self,
        streams: Iterable,
        expected_start_txid: int,
        *,
        on_op: Callable[[FSEditLogOp], None] | None = None,
    ) -> int:
        """Apply every op of ``streams`` (in order) from ``expected_start_txid`` on.

        Returns the last txid applied (``expected_start_txid - 1`` when there was none).
        A txid above the expected one is a gap, and one below it an out-of-order edit:
        either raises IOException naming both txids, as Hadoop does outside recovery
        mode (streams are positioned at their first wanted txid, so a txid seen again
        means two copies of the log disagree, and neither may be applied silently).
        """
        expected = expected_start_txid
        for stream in streams:
            LOG.info("Reading %s expecting start txid #%d", stream, expected)
            checked = False
            while True:
                op = stream.read_op()
                if op is None:
                    break
                if not checked:  # the stream is open: its header was read
                    self._check_layout_version(stream)
                    checked = True
                txid = op.txid
                if txid < expected:
                    raise IOException(
                        "There appears to be an out-of-order edit in the edit log.  We "
                        f"expected txid {expected}, but got txid {txid}."
                    )
                if txid > expected:
                    raise IOException(
                        "There appears to be a gap in the edit log.  We expected txid "
                        f"{expected}, but got txid {txid}."
                    )
                try:
                    self.apply(op)
                except OSError as e:
                    raise EditLogApplyException(
                        f"Error replaying edit log at {getattr(stream, 'name', stream)}: {e}. "
                        f"Expected transaction ID was {expected}"
                    ) from e
                if on_op is not None:
                    on_op(op)
                expected = txid + 1
        return expected - 1

    def _check_layout_version(self, stream: object) -> None:
        """Edits of a layout newer than this software's (an old standby tailing the edits of
        an upgraded active) are refused, as EditLogFileInputStream.readLogVersion does."""
        version = getattr(stream, "layout_version", None)
        if isinstance(version, int) and version < self.layout_version:
            raise IOException(
                f"Unexpected version of the file system log file: {version}. "
                f"Current version = {self.layout_version}."
            )


def _ignore(op: FSEditLogOp) -> None:
    """Segment markers change nothing in the namespace."""
