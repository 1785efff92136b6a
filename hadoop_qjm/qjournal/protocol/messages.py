"""QJournalProtocol's messages as frozen dataclasses, and their Thrift translation.

This is the only module that converts between the Thrift structs of
``qjournal.thrift`` and Python objects (Hadoop needs PBHelper plus two
translator layers for this). Everything above the wire — the Journal, the
JournalNode, IPCLoggerChannel — speaks these dataclasses and the ones in
``hadoop_qjm.common`` (NamespaceInfo, StorageInfo, RemoteEditLog,
RemoteEditLogManifest).

``INVALID_TXID`` (-12345) travels as a plain signed i64: Hadoop's uint64
fields need a two's-complement round trip for it (digest §1); Thrift's i64
does not.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, INVALID_TXID
from hadoop_qjm.common.remote_edit_log import RemoteEditLog, RemoteEditLogManifest
from hadoop_qjm.common.storage_info import NamespaceInfo, StorageInfo
from hadoop_qjm.qjournal.protocol.format_rules import FormatCheck
from hadoop_qjm.qjournal.protocol.thrift_idl import qjournal_thrift as _t
from hadoop_qjm.qjournal.protocol.wire import check_required, thrift_from_bytes, thrift_to_bytes

__all__ = [
    "RequestInfo",
    "namespace_info_from_thrift",
    "SegmentState",
    "PersistedRecoveryPaxosData",
    "CanFormatResponse",
    "GetJournalStateResponse",
    "NewEpochResponse",
    "PrepareRecoveryResponse",
    "GetEditLogManifestResponse",
    "GetJournaledEditsResponse",
    "layout_version_from_thrift",
    "to_thrift",
    "from_thrift",
    "serialize",
    "deserialize",
    "roundtrip",
]

T = TypeVar("T")


@dataclass(frozen=True)
class RequestInfo:
    """RequestInfoProto: who is writing, in which epoch, and the IPC's serial number.

    ``committed_txid`` is the writer's highest quorum-acked txid, or
    ``INVALID_TXID`` when it has none (then it is not sent).
    """

    journal_id: str
    epoch: int
    ipc_serial_number: int
    committed_txid: int = INVALID_TXID
    name_service_id: str | None = None

    @property
    def has_committed_txid(self) -> bool:
        """Hadoop's ``RequestInfo.hasCommittedTxId()``."""
        return self.committed_txid != INVALID_TXID


@dataclass(frozen=True)
class SegmentState:
    """SegmentStateProto: a log segment's txid range and whether it is still open."""

    start_txid: int
    end_txid: int
    is_in_progress: bool
    #: Hex MD5 of the segment's bytes up to its last txn: the content proxy (see the IDL).
    #: Not part of equality: two states describe the same range whatever their digests.
    md5: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        # Hadoop logs these with TextFormat.shortDebugString.
        in_progress = "true" if self.is_in_progress else "false"
        text = f"startTxId: {self.start_txid} endTxId: {self.end_txid} isInProgress: {in_progress}"
        return text + (f" md5: {self.md5}" if self.md5 else "")


@dataclass(frozen=True)
class PersistedRecoveryPaxosData:
    """What ``acceptRecovery`` records in ``paxos/<segment txid>``."""

    segment_state: SegmentState
    accepted_in_epoch: int


@dataclass(frozen=True)
class GetJournalStateResponse:
    """The JournalNode's promise for a journal, and where its HTTP server is."""

    last_promised_epoch: int
    http_port: int
    from_url: str | None = None
    #: The node's membership record (its text), None if the set never changed.
    membership: str | None = None


#: canFormat's answer (not Hadoop's; issue 33): the pure rule's FormatCheck.
CanFormatResponse = FormatCheck


@dataclass(frozen=True)
class NewEpochResponse:
    """``newEpoch``'s answer: the first txid of the newest segment holding txns, if any."""

    last_segment_txid: int | None = None


@dataclass(frozen=True)
class PrepareRecoveryResponse:
    """Paxos phase 1's answer for one segment (digest §2, prepareRecovery step 5)."""

    segment_state: SegmentState | None
    accepted_in_epoch: int | None
    last_writer_epoch: int
    last_committed_txid: int | None = None


@dataclass(frozen=True)
class GetEditLogManifestResponse:
    """The journal's segments, and where its HTTP server is to fetch them."""

    manifest: RemoteEditLogManifest
    http_port: int
    from_url: str | None = None


@dataclass(frozen=True)
class GetJournaledEditsResponse:
    """Edits served from the JournalNode's cache: file header plus whole ops, and the
    epoch of the writer that wrote them (0: not known)."""

    txn_count: int
    edit_log: bytes = b""
    writer_epoch: int = 0


# --------------------------------------------------------------- to Thrift


def _request_info_to(r: RequestInfo) -> Any:
    return _t.RequestInfo(
        journalId=r.journal_id,
        epoch=r.epoch,
        ipcSerialNumber=r.ipc_serial_number,
        # Hadoop's client sets the field only when it has a committed txid.
        committedTxId=r.committed_txid if r.has_committed_txid else None,
        nameServiceId=r.name_service_id,
    )


def _segment_state_to(s: SegmentState) -> Any:
    return _t.SegmentState(
        startTxId=s.start_txid,
        endTxId=s.end_txid,
        isInProgress=bool(s.is_in_progress),
        md5=s.md5,
    )


def _optional_segment_state_to(s: SegmentState | None) -> Any:
    return None if s is None else _segment_state_to(s)


def _paxos_data_to(p: PersistedRecoveryPaxosData) -> Any:
    return _t.PersistedRecoveryPaxosData(
        segmentState=_segment_state_to(p.segment_state), acceptedInEpoch=p.accepted_in_epoch
    )


def _storage_info_to(s: StorageInfo) -> Any:
    return _t.StorageInfo(
        layoutVersion=s.layout_version,
        namespaceID=s.namespace_id,
        clusterID=s.cluster_id,
        cTime=s.ctime,
    )


def _namespace_info_to(n: NamespaceInfo) -> Any:
    return _t.NamespaceInfo(
        buildVersion=n.build_version,
        blockPoolID=n.block_pool_id,
        storageInfo=_storage_info_to(n.storage_info()),
        softwareVersion=n.software_version,
    )


def _remote_edit_log_to(log: RemoteEditLog) -> Any:
    return _t.RemoteEditLog(
        startTxId=log.start_txid, endTxId=log.end_txid, isInProgress=bool(log.is_in_progress)
    )


def _manifest_to(m: RemoteEditLogManifest) -> Any:
    # Hadoop always sets committedTxnId, INVALID_TXID included.
    return _t.RemoteEditLogManifest(
        logs=[_remote_edit_log_to(log) for log in m.logs], committedTxnId=m.committed_txn_id
    )


def _journal_state_to(r: GetJournalStateResponse) -> Any:
    return _t.GetJournalStateResponse(
        lastPromisedEpoch=r.last_promised_epoch,
        httpPort=r.http_port,
        fromURL=r.from_url,
        membership=r.membership,
    )


def _can_format_to(r: FormatCheck) -> Any:
    return _t.CanFormatResponse(
        liveWriter=r.live_writer, segmentCount=r.segment_count, txnCount=r.txn_count
    )


def _new_epoch_to(r: NewEpochResponse) -> Any:
    return _t.NewEpochResponse(lastSegmentTxId=r.last_segment_txid)


def _prepare_recovery_to(r: PrepareRecoveryResponse) -> Any:
    return _t.PrepareRecoveryResponse(
        segmentState=_optional_segment_state_to(r.segment_state),
        acceptedInEpoch=r.accepted_in_epoch,
        lastWriterEpoch=r.last_writer_epoch,
        lastCommittedTxId=r.last_committed_txid,
    )


def _manifest_response_to(r: GetEditLogManifestResponse) -> Any:
    return _t.GetEditLogManifestResponse(
        manifest=_manifest_to(r.manifest), httpPort=r.http_port, fromURL=r.from_url
    )


def _journaled_edits_to(r: GetJournaledEditsResponse) -> Any:
    return _t.GetJournaledEditsResponse(
        txnCount=r.txn_count, editLog=bytes(r.edit_log), writerEpoch=r.writer_epoch
    )


# ------------------------------------------------------------- from Thrift


def _request_info_from(t: Any) -> RequestInfo:
    return RequestInfo(
        journal_id=t.journalId,
        epoch=t.epoch,
        ipc_serial_number=t.ipcSerialNumber,
        committed_txid=INVALID_TXID if t.committedTxId is None else t.committedTxId,
        name_service_id=t.nameServiceId,
    )


def _segment_state_from(t: Any) -> SegmentState:
    return SegmentState(t.startTxId, t.endTxId, bool(t.isInProgress), t.md5)


def _optional_segment_state_from(t: Any) -> SegmentState | None:
    return None if t is None else _segment_state_from(t)


def _paxos_data_from(t: Any) -> PersistedRecoveryPaxosData:
    return PersistedRecoveryPaxosData(_segment_state_from(t.segmentState), t.acceptedInEpoch)


def _storage_info_from(t: Any) -> StorageInfo:
    return StorageInfo(
        layout_version=t.layoutVersion,
        namespace_id=t.namespaceID,
        cluster_id=t.clusterID,
        ctime=t.cTime,
    )


def namespace_info_from_thrift(t: Any) -> NamespaceInfo:
    """A NamespaceInfo struct (QJournal's, or the NameNode protocol's: same fields)."""
    s = t.storageInfo
    return NamespaceInfo(
        namespace_id=s.namespaceID,
        cluster_id=s.clusterID,
        block_pool_id=t.blockPoolID,
        ctime=s.cTime,
        layout_version=s.layoutVersion,
        build_version=t.buildVersion,
        software_version=t.softwareVersion,
    )


def _remote_edit_log_from(t: Any) -> RemoteEditLog:
    return RemoteEditLog(t.startTxId, t.endTxId, bool(t.isInProgress))


def _manifest_from(t: Any) -> RemoteEditLogManifest:
    committed = INVALID_TXID if t.committedTxnId is None else t.committedTxnId
    return RemoteEditLogManifest(tuple(_remote_edit_log_from(x) for x in t.logs), committed)


def _journal_state_from(t: Any) -> GetJournalStateResponse:
    return GetJournalStateResponse(t.lastPromisedEpoch, t.httpPort, t.fromURL, t.membership)


def _can_format_from(t: Any) -> FormatCheck:
    return FormatCheck(t.liveWriter, t.segmentCount, t.txnCount)


def _new_epoch_from(t: Any) -> NewEpochResponse:
    return NewEpochResponse(t.lastSegmentTxId)


def _prepare_recovery_from(t: Any) -> PrepareRecoveryResponse:
    return PrepareRecoveryResponse(
        segment_state=_optional_segment_state_from(t.segmentState),
        accepted_in_epoch=t.acceptedInEpoch,
        last_writer_epoch=t.lastWriterEpoch,
        last_committed_txid=t.lastCommittedTxId,
    )


def _manifest_response_from(t: Any) -> GetEditLogManifestResponse:
    return GetEditLogManifestResponse(_manifest_from(t.manifest), t.httpPort, t.fromURL)


def _journaled_edits_from(t: Any) -> GetJournaledEditsResponse:
    return GetJournaledEditsResponse(
        t.txnCount,
        b"" if t.editLog is None else bytes(t.editLog),
        t.writerEpoch or 0,
    )


# Exact types: NamespaceInfo is a StorageInfo subclass with its own struct.
_TO: dict[type, Callable[[Any], Any]] = {
    RequestInfo: _request_info_to,
    SegmentState: _segment_state_to,
    PersistedRecoveryPaxosData: _paxos_data_to,
    StorageInfo: _storage_info_to,
    NamespaceInfo: _namespace_info_to,
    RemoteEditLog: _remote_edit_log_to,
    RemoteEditLogManifest: _manifest_to,
    GetJournalStateResponse: _journal_state_to,
    FormatCheck: _can_format_to,
    NewEpochResponse: _new_epoch_to,
    PrepareRecoveryResponse: _prepare_recovery_to,
    GetEditLogManifestResponse: _manifest_response_to,
    GetJournaledEditsResponse: _journaled_edits_to,
}

_FROM: dict[type, Callable[[Any], Any]] = {
    _t.RequestInfo: _request_info_from,
    _t.SegmentState: _segment_state_from,
    _t.PersistedRecoveryPaxosData: _paxos_data_from,
    _t.StorageInfo: _storage_info_from,
    _t.NamespaceInfo: namespace_info_from_thrift,
    _t.RemoteEditLog: _remote_edit_log_from,
    _t.RemoteEditLogManifest: _manifest_from,
    _t.GetJournalStateResponse: _journal_state_from,
    _t.CanFormatResponse: _can_format_from,
    _t.NewEpochResponse: _new_epoch_from,
    _t.PrepareRecoveryResponse: _prepare_recovery_from,
    _t.GetEditLogManifestResponse: _manifest_response_from,
    _t.GetJournaledEditsResponse: _journaled_edits_from,
}

_THRIFT_CLASS: dict[type, type] = {
    RequestInfo: _t.RequestInfo,
    SegmentState: _t.SegmentState,
    PersistedRecoveryPaxosData: _t.PersistedRecoveryPaxosData,
    StorageInfo: _t.StorageInfo,
    NamespaceInfo: _t.NamespaceInfo,
    RemoteEditLog: _t.RemoteEditLog,
    RemoteEditLogManifest: _t.RemoteEditLogManifest,
    GetJournalStateResponse: _t.GetJournalStateResponse,
    FormatCheck: _t.CanFormatResponse,
    NewEpochResponse: _t.NewEpochResponse,
    PrepareRecoveryResponse: _t.PrepareRecoveryResponse,
    GetEditLogManifestResponse: _t.GetEditLogManifestResponse,
    GetJournaledEditsResponse: _t.GetJournaledEditsResponse,
}


def to_thrift(obj: Any) -> Any:
    """The Thrift struct for one of our messages (``None`` stays ``None``)."""
    if obj is None:
        return None
    try:
        convert = _TO[type(obj)]
    except KeyError:
        raise TypeError(f"no Thrift struct for {type(obj).__name__}") from None
    return convert(obj)


def from_thrift(tobj: Any) -> Any:
    """Our message for a received Thrift struct (``None`` stays ``None``).

    Raises IllegalArgumentException if a field Hadoop requires is missing.
    """
    if tobj is None:
        return None
    try:
        convert = _FROM[type(tobj)]
    except KeyError:
        raise TypeError(f"not a QJournalProtocol struct: {type(tobj).__name__}") from None
    return convert(check_required(tobj))


def layout_version_from_thrift(layout_version: int | None) -> int:
    """``startLogSegment``'s optional layout version: absent means the current one.

    (QJournalProtocolServerSideTranslatorPB does the same.)
    """
    return CURRENT_LAYOUT_VERSION if layout_version is None else layout_version


def serialize(obj: Any) -> bytes:
    """``obj`` (one of our messages) as Thrift binary-protocol bytes."""
    return thrift_to_bytes(to_thrift(obj))


def deserialize(cls: type[T], data: bytes) -> T:
    """The message of type ``cls`` encoded in ``data`` by :func:`serialize`."""
    try:
        tcls = _THRIFT_CLASS[cls]
    except KeyError:
        raise TypeError(f"no Thrift struct for {cls.__name__}") from None
    return from_thrift(thrift_from_bytes(tcls, data))


def roundtrip(obj: T) -> T:
    """``obj`` after a trip through its Thrift struct and binary serialization.

    An in-process transport passes every request and response through this,
    so it sees exactly what a socket would deliver.
    """
    if obj is None:
        return None  # type: ignore[return-value]
    return deserialize(type(obj), serialize(obj))
