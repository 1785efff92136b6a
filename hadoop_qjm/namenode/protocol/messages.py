"""The NameNode protocols' messages, and the only Thrift <-> Python translation for them.

Python code on both sides speaks :class:`~hadoop_qjm.namenode.fs_directory.FileStatus`,
:class:`DirectoryListing`, :class:`~hadoop_qjm.common.storage_info.NamespaceInfo`,
:class:`CheckpointSignature` and :class:`HAServiceStatus`; the functions here build and
read the Thrift structs of ``namenode.thrift``.

Paths follow Hadoop's HdfsFileStatus: a status on the wire carries only the inode's
*local name* (empty for the path that was asked about), and the client rebuilds the full
path from the path it asked for (``HdfsFileStatus.makeQualified``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hadoop_qjm.common.storage_info import NamespaceInfo, StorageInfo
from hadoop_qjm.ha.ha_service_protocol import HARequestSource, HAServiceState
from hadoop_qjm.namenode.fs_directory import FileStatus, path_components
from hadoop_qjm.namenode.protocol.thrift_idl import namenode_thrift as _t
from hadoop_qjm.namenode.rolling_upgrade import RollingUpgradeInfo
from hadoop_qjm.qjournal.protocol.messages import namespace_info_from_thrift

__all__ = [
    "CREATE_FLAG_CREATE",
    "CREATE_FLAG_OVERWRITE",
    "CheckpointSignature",
    "DirectoryListing",
    "HARequestSource",
    "HAServiceState",
    "HAServiceStatus",
    "checkpoint_signature_from_thrift",
    "checkpoint_signature_to_thrift",
    "file_status_from_thrift",
    "file_status_to_thrift",
    "listing_from_thrift",
    "listing_to_thrift",
    "local_name",
    "namespace_info_from_thrift",
    "namespace_info_to_thrift",
    "normalize_path",
    "rolling_upgrade_info_from_thrift",
    "rolling_upgrade_info_to_thrift",
    "service_status_from_thrift",
    "service_status_to_thrift",
]

#: CreateFlagProto bits.
CREATE_FLAG_CREATE = 0x01
CREATE_FLAG_OVERWRITE = 0x02


@dataclass(frozen=True)
class HAServiceStatus:
    """GetServiceStatusResponseProto."""

    state: HAServiceState
    ready_to_become_active: bool | None = None
    not_ready_reason: str | None = None


@dataclass(frozen=True)
class DirectoryListing:
    """One batch of a directory listing; ``remaining_entries`` are still to come."""

    partial_listing: tuple[FileStatus, ...]
    remaining_entries: int

    @property
    def has_more(self) -> bool:
        return self.remaining_entries > 0

    @property
    def last_name(self) -> str:
        """The local name to pass as ``start_after`` for the next batch."""
        return self.partial_listing[-1].name if self.partial_listing else ""


@dataclass(frozen=True)
class CheckpointSignature:
    """CheckpointSignatureProto: what rollEditLog returns."""

    block_pool_id: str
    most_recent_checkpoint_txid: int
    cur_segment_txid: int
    storage_info: StorageInfo


def normalize_path(src: str) -> str:
    """``src`` without repeated or trailing slashes (``/a//b/`` -> ``/a/b``)."""
    return "/" + "/".join(path_components(src))


def local_name(status: FileStatus, listed: str) -> str:
    """The name ``status`` travels with: "" for the path that was asked about itself."""
    return "" if status.path == normalize_path(listed) else status.name


def _join(parent: str, name: str) -> str:
    if not name:
        return parent
    return parent.rstrip("/") + "/" + name


# ---- FileStatus ----------------------------------------------------------------------------------
def file_status_to_thrift(status: FileStatus, name: str) -> Any:
    """``status`` as an HdfsFileStatus carrying the local name ``name``."""
    return _t.HdfsFileStatus(
        fileType=_t.FileType.IS_DIR if status.is_dir else _t.FileType.IS_FILE,
        path=name,
        length=status.length,
        permission=_t.FsPermission(perm=status.permission),
        owner=status.owner,
        group=status.group,
        modification_time=status.modification_time,
        access_time=status.access_time,
        block_replication=status.replication,
        blocksize=status.block_size,
        fileId=status.file_id,
        childrenNum=status.children_num,
    )


def file_status_from_thrift(t: Any, parent: str) -> FileStatus:
    """The FileStatus of ``t``, whose local name is relative to ``parent`` ("" = parent)."""
    return FileStatus(
        path=_join(parent, t.path or ""),
        is_dir=t.fileType == _t.FileType.IS_DIR,
        length=t.length,
        replication=t.block_replication or 0,
        block_size=t.blocksize or 0,
        modification_time=t.modification_time,
        access_time=t.access_time,
        permission=t.permission.perm,
        owner=t.owner,
        group=t.group,
        file_id=t.fileId or 0,
        children_num=-1 if t.childrenNum is None else t.childrenNum,
    )


def listing_to_thrift(statuses: list[FileStatus], listed: str, limit: int) -> Any:
    """The first ``limit`` of ``statuses`` (the listing of ``listed``) as a DirectoryListing."""
    batch = statuses[:limit] if limit > 0 else statuses
    return _t.DirectoryListing(
        partialListing=[file_status_to_thrift(s, local_name(s, listed)) for s in batch],
        remainingEntries=len(statuses) - len(batch),
    )


def listing_from_thrift(t: Any, listed: str) -> DirectoryListing:
    return DirectoryListing(
        tuple(file_status_from_thrift(s, normalize_path(listed)) for s in t.partialListing),
        t.remainingEntries,
    )


# ---- NamespaceInfo, CheckpointSignature ----------------------------------------------------------
def _storage_info_to(s: StorageInfo) -> Any:
    return _t.StorageInfo(
        layoutVersion=s.layout_version,
        namespaceID=s.namespace_id,
        clusterID=s.cluster_id,
        cTime=s.ctime,
    )


def _storage_info_from(t: Any) -> StorageInfo:
    return StorageInfo(t.layoutVersion, t.namespaceID, t.clusterID, t.cTime)


def namespace_info_to_thrift(ns: NamespaceInfo, state: HAServiceState | None = None) -> Any:
    return _t.NamespaceInfo(
        buildVersion=ns.build_version,
        blockPoolID=ns.block_pool_id,
        storageInfo=_storage_info_to(ns.storage_info()),
        softwareVersion=ns.software_version,
        state=None if state is None else int(state),
    )


def checkpoint_signature_to_thrift(sig: CheckpointSignature) -> Any:
    return _t.CheckpointSignature(
        blockPoolId=sig.block_pool_id,
        mostRecentCheckpointTxId=sig.most_recent_checkpoint_txid,
        curSegmentTxId=sig.cur_segment_txid,
        storageInfo=_storage_info_to(sig.storage_info),
    )


def checkpoint_signature_from_thrift(t: Any) -> CheckpointSignature:
    return CheckpointSignature(
        t.blockPoolId,
        t.mostRecentCheckpointTxId,
        t.curSegmentTxId,
        _storage_info_from(t.storageInfo),
    )


# ---- HA ------------------------------------------------------------------------------------------
def service_status_to_thrift(status: HAServiceStatus) -> Any:
    return _t.GetServiceStatusResponse(
        state=int(status.state),
        readyToBecomeActive=status.ready_to_become_active,
        notReadyReason=status.not_ready_reason,
    )


def service_status_from_thrift(t: Any) -> HAServiceStatus:
    return HAServiceStatus(HAServiceState(t.state), t.readyToBecomeActive, t.notReadyReason)


# ---- rolling upgrade -----------------------------------------------------------------------------
def rolling_upgrade_info_to_thrift(info: RollingUpgradeInfo | None) -> Any:
    if info is None:
        return _t.RollingUpgradeResponse()
    return _t.RollingUpgradeResponse(
        rollingUpgradeInfo=_t.RollingUpgradeInfo(
            blockPoolId=info.block_pool_id,
            startTime=info.start_time,
            finalizeTime=info.finalize_time,
            createdRollbackImage=info.created_rollback_images,
        )
    )


def rolling_upgrade_info_from_thrift(t: Any) -> RollingUpgradeInfo | None:
    info = t.rollingUpgradeInfo
    if info is None:
        return None
    return RollingUpgradeInfo(
        info.blockPoolId, info.startTime, info.finalizeTime, info.createdRollbackImage
    )
