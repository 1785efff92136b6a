"""Hadoop's binary edit-log format at layout version -67: header, op frames, ops. Pure.

A segment is an 8-byte header (int32 layout version, int32 layout-flags length = 0) and
then op frames (HADOOP-QJM-DIGEST.md §4.2)::

    opcode u8 | length i32 = 4 + 8 + len(body) | txid i64 | body | CRC32(opcode..body) i32

An open segment is padded with 0xFF (OP_INVALID); a reader that meets 0xFF requires every
remaining byte to be 0x00 or 0xFF ("Read extra bytes after the terminator!").

This module is the one entry point for the format: it re-exports the opcodes, the op
classes of every opcode (:mod:`~hadoop_qjm.editlog.edit_log_ops`,
:mod:`~hadoop_qjm.editlog.edit_log_path_ops`,
:mod:`~hadoop_qjm.editlog.edit_log_field_ops`,
:mod:`~hadoop_qjm.editlog.edit_log_token_ops`,
:mod:`~hadoop_qjm.editlog.edit_log_admin_ops`) and the primitive value types, and adds
the framing functions :func:`encode_op`, :func:`decode_op` and :func:`scan_op`. Reading
never trusts a length: a frame longer than the max op size or shorter than 17 bytes is an
error, not an allocation.
"""

from __future__ import annotations

import re
import struct
import zlib

from hadoop_qjm.common.constants import (
    CURRENT_LAYOUT_VERSION,
    DECODED_LAYOUT_VERSIONS,
    FUTURE_LAYOUT_VERSION_FOR_TESTING,
    INVALID_TXID,
)
from hadoop_qjm.common.exceptions import (
    EditLogCorruptionError,
    IllegalArgumentException,
    IOException,
    register_exception,
)
from hadoop_qjm.editlog.edit_log_admin_ops import (
    AddCacheDirectiveInfoOp,
    AddCachePoolOp,
    AddErasureCodingPolicyOp,
    ConcatDeleteOp,
    ModifyCacheDirectiveInfoOp,
    ModifyCachePoolOp,
    RemoveXAttrOp,
    SetAclOp,
    SetXAttrOp,
)
from hadoop_qjm.editlog.edit_log_codec import (
    MAX_UTF8_CHARS,
    AclEntry,
    Block,
    ByteReader,
    PermissionStatus,
    XAttr,
)
from hadoop_qjm.editlog.edit_log_field_ops import (
    AllocateBlockIdOp,
    AllowSnapshotOp,
    AppendOp,
    ClearNSQuotaOp,
    CreateSnapshotOp,
    DeleteSnapshotOp,
    DisableErasureCodingPolicyOp,
    DisallowSnapshotOp,
    EnableErasureCodingPolicyOp,
    FieldsOp,
    ReassignLeaseOp,
    RemoveCacheDirectiveInfoOp,
    RemoveCachePoolOp,
    RemoveErasureCodingPolicyOp,
    RenameSnapshotOp,
    RollingUpgradeFinalizeOp,
    RollingUpgradeStartOp,
    SetGenstampV1Op,
    SetGenstampV2Op,
    SetNSQuotaOp,
    SetQuotaByStorageTypeOp,
    SetQuotaOp,
    SetStoragePolicyOp,
    SymlinkOp,
    TruncateOp,
    UpdateBlocksOp,
)
from hadoop_qjm.editlog.edit_log_ops import (
    AddBlockOp,
    AddOp,
    CloseOp,
    EndLogSegmentOp,
    FSEditLogOp,
    MkdirOp,
    OpaqueOp,
    StartLogSegmentOp,
)
from hadoop_qjm.editlog.edit_log_path_ops import (
    DeleteOp,
    RenameOldOp,
    RenameOp,
    SetOwnerOp,
    SetPermissionsOp,
    SetReplicationOp,
    TimesOp,
)
from hadoop_qjm.editlog.edit_log_token_ops import (
    CancelDelegationTokenOp,
    DelegationKey,
    DelegationTokenIdentifier,
    GetDelegationTokenOp,
    RenewDelegationTokenOp,
    UpdateMasterKeyOp,
)
from hadoop_qjm.editlog.fs_edit_log_op_codes import OBSOLETE_OPCODES, FSEditLogOpCodes

__all__ = [
    # opcodes and ops
    "FSEditLogOpCodes",
    "FSEditLogOp",
    "StartLogSegmentOp",
    "EndLogSegmentOp",
    "MkdirOp",
    "AddOp",
    "CloseOp",
    "DeleteOp",
    "RenameOldOp",
    "RenameOp",
    "TimesOp",
    "SetPermissionsOp",
    "SetOwnerOp",
    "SetReplicationOp",
    "AddBlockOp",
    "OpaqueOp",
    "FieldsOp",
    "DelegationTokenIdentifier",
    "DelegationKey",
    "SetGenstampV1Op",
    "SetGenstampV2Op",
    "AllocateBlockIdOp",
    "SetNSQuotaOp",
    "ClearNSQuotaOp",
    "SetQuotaOp",
    "SetQuotaByStorageTypeOp",
    "ReassignLeaseOp",
    "CreateSnapshotOp",
    "DeleteSnapshotOp",
    "RenameSnapshotOp",
    "AllowSnapshotOp",
    "DisallowSnapshotOp",
    "RemoveCacheDirectiveInfoOp",
    "RemoveCachePoolOp",
    "EnableErasureCodingPolicyOp",
    "DisableErasureCodingPolicyOp",
    "RemoveErasureCodingPolicyOp",
    "RollingUpgradeStartOp",
    "RollingUpgradeFinalizeOp",
    "SetStoragePolicyOp",
    "AppendOp",
    "UpdateBlocksOp",
    "TruncateOp",
    "SymlinkOp",
    "GetDelegationTokenOp",
    "RenewDelegationTokenOp",
    "CancelDelegationTokenOp",
    "UpdateMasterKeyOp",
    "ConcatDeleteOp",
    "SetAclOp",
    "SetXAttrOp",
    "RemoveXAttrOp",
    "AddCacheDirectiveInfoOp",
    "ModifyCacheDirectiveInfoOp",
    "AddCachePoolOp",
    "ModifyCachePoolOp",
    "AddErasureCodingPolicyOp",
    "OP_CLASSES",
    "Block",
    "PermissionStatus",
    "AclEntry",
    "XAttr",
    # framing
    "MIN_OP_LENGTH",
    "DEFAULT_MAX_OP_SIZE",
    "HEADER_LENGTH",
    "OP_INVALID_BYTE",
    "EDITLOG_LENGTH_LAYOUT_VERSION",
    "LAST_UPGRADABLE_LAYOUT_VERSION",
    "LogHeaderCorruptException",
    "ChecksumException",
    "edit_log_header",
    "parse_edit_log_header",
    "encode_op",
    "append_op",
    "decode_op",
    "scan_op",
    "frame_length_at",
    "verify_terminator",
]

#: The smallest frame: opcode 1 + length 4 + txid 8 + empty body + checksum 4.
MIN_OP_LENGTH = 17
#: dfs.namenode.max.op.size default (50 MiB): longer frames are refused unread.
DEFAULT_MAX_OP_SIZE = 52428800
#: Layout version int32 + layout-flags length int32.
HEADER_LENGTH = 8
OP_INVALID_BYTE = 0xFF
#: Ops carry a length prefix from this layout version on (EDITLOG_LENGTH).
EDITLOG_LENGTH_LAYOUT_VERSION = -56
#: Storage.LAST_UPGRADABLE_LAYOUT_VERSION: a reader refuses anything older.
LAST_UPGRADABLE_LAYOUT_VERSION = -16

#: The op class of every opcode Hadoop can read at layout version -67.
OP_CLASSES: dict[FSEditLogOpCodes, type[FSEditLogOp]] = {
    cls.opcode: cls
    for cls in (
        SetGenstampV1Op,
        SetGenstampV2Op,
        AllocateBlockIdOp,
        SetNSQuotaOp,
        ClearNSQuotaOp,
        SetQuotaOp,
        SetQuotaByStorageTypeOp,
        ReassignLeaseOp,
        CreateSnapshotOp,
        DeleteSnapshotOp,
        RenameSnapshotOp,
        AllowSnapshotOp,
        DisallowSnapshotOp,
        RemoveCacheDirectiveInfoOp,
        RemoveCachePoolOp,
        EnableErasureCodingPolicyOp,
        DisableErasureCodingPolicyOp,
        RemoveErasureCodingPolicyOp,
        RollingUpgradeStartOp,
        RollingUpgradeFinalizeOp,
        SetStoragePolicyOp,
        AppendOp,
        UpdateBlocksOp,
        TruncateOp,
        SymlinkOp,
        GetDelegationTokenOp,
        RenewDelegationTokenOp,
        CancelDelegationTokenOp,
        UpdateMasterKeyOp,
        ConcatDeleteOp,
        SetAclOp,
        SetXAttrOp,
        RemoveXAttrOp,
        AddCacheDirectiveInfoOp,
        ModifyCacheDirectiveInfoOp,
        AddCachePoolOp,
        ModifyCachePoolOp,
        AddErasureCodingPolicyOp,
        StartLogSegmentOp,
        EndLogSegmentOp,
        MkdirOp,
        AddOp,
        CloseOp,
        DeleteOp,
        RenameOldOp,
        RenameOp,
        TimesOp,
        SetPermissionsOp,
        SetOwnerOp,
        SetReplicationOp,
        AddBlockOp,
    )
}

_HEADER = struct.Struct(">ii")
_FRAME_HEAD = struct.Struct(">Biq")  # opcode, length, txid
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_NOT_PADDING = re.compile(rb"[^\x00\xff]")


@register_exception
class LogHeaderCorruptException(IOException):
    """The 8-byte header of a segment is missing, truncated or unusable."""

    java_name = (
        "org.apache.hadoop.hdfs.server.namenode.EditLogFileInputStream.LogHeaderCorruptException"
    )


@register_exception
class ChecksumException(EditLogCorruptionError):
    """An op's CRC32 does not match its bytes; ``txid`` is the txid its frame claims."""

    java_name = "org.apache.hadoop.fs.ChecksumException"

    def __init__(self, message: str = "", txid: int = INVALID_TXID) -> None:
        super().__init__(message)
        self.txid = txid


def _java_int(value: int) -> int:
    return value - (1 << 32) if value >= 1 << 31 else value


# ---- header ----------------------------------------------------------------------------------


def edit_log_header(layout_version: int = CURRENT_LAYOUT_VERSION) -> bytes:
    """The 8 bytes that start every segment: the layout version, then 0 layout flags."""
    return _HEADER.pack(layout_version, 0)


def parse_edit_log_header(buf: bytes | bytearray | memoryview, verify_version: bool = False) -> int:
    """Return the layout version of the header at the start of ``buf``.

    Raises :class:`LogHeaderCorruptException` when the header is missing or truncated, or
    its layout version is -1 (a preallocated file whose header was never written); with
    ``verify_version``, also when the version is newer than ours or older than -16
    (EditLogFileInputStream.readLogVersion). Non-zero layout flags are a plain
    :class:`IOException`, as in Hadoop's LayoutFlags.read.
    """
    if len(buf) < 4:
        raise LogHeaderCorruptException("Reached EOF when reading log header")
    layout_version = _I32.unpack_from(buf, 0)[0]
    if verify_version and not (
        FUTURE_LAYOUT_VERSION_FOR_TESTING <= layout_version <= LAST_UPGRADABLE_LAYOUT_VERSION
    ):
        raise LogHeaderCorruptException(
            f"Unexpected version of the file system log file: {layout_version}. "
            f"Current version = {CURRENT_LAYOUT_VERSION}."
        )
    if layout_version == -1:
        raise LogHeaderCorruptException(
            "No header present in log (value is -1), probably due to disk space issues "
            "when it was created. The log has no transactions and will be sidelined."
        )
    if len(buf) < HEADER_LENGTH:
        raise LogHeaderCorruptException("EOF while reading layout flags from log")
    flags = _I32.unpack_from(buf, 4)[0]
    if flags < 0:
        raise IOException(f"The length of the feature flag section was negative at {flags} bytes.")
    if flags > 0:
        raise IOException(
            "Found feature flags which we can't handle. Please upgrade your software."
        )
    return layout_version


# ---- writing ---------------------------------------------------------------------------------


def append_op(out: bytearray, op: FSEditLogOp) -> int:
    """Append the whole frame of ``op`` to ``out``; returns the frame's length.

    This is FSEditLogOp.Writer.writeOp without the intermediate copy that
    :func:`encode_op` makes: the double buffer calls it once per logged transaction and
    journal. Each op is encoded once: every journal's buffer after the first gets the same
    bytes (FSEditLog writes one op to all its journals before it logs the next).
    """
    global _last_framed
    last_op, last_txid, frame = _last_framed
    if last_op is op and last_txid == op.txid:
        out += frame
        return len(frame)
    frame = _frame(op)
    _last_framed = (op, op.txid, frame)
    out += frame
    return len(frame)


# (op, its txid, its frame) of the last op framed; see append_op.
_last_framed: tuple[FSEditLogOp | None, int, bytes] = (None, 0, b"")


def _frame(op: FSEditLogOp) -> bytes:
    if type(op) is MkdirOp:
        frame = _plain_mkdir_frame(op)
        if frame is not None:
            return frame + _U32.pack(zlib.crc32(frame))
    try:
        body = op.encode_body()
        head = _FRAME_HEAD.pack(op.opcode, len(body) + 12, op.txid)
    except (struct.error, OverflowError, ValueError) as e:
        # A field out of its Java type's range: refuse it rather than write a wrapped value.
        raise IllegalArgumentException(f"cannot encode {op!r}: {e}") from None
    return b"".join((head, body, _U32.pack(zlib.crc32(body, zlib.crc32(head)))))


# (path length, tail length) -> the Struct of a whole MKDIR frame but its CRC.
_MKDIR_FRAME_STRUCTS: dict[tuple[int, int], struct.Struct] = {}
# For the PermissionStatus of the last MKDIR framed: it, its "tail" (the encoded status,
# ACL count 0 and an empty XAttrEditLogProto), and path length -> (pack, length field).
_mkdir_frame_cache: tuple[PermissionStatus | None, bytes, dict] = (None, b"", {})
_OP_MKDIR = int(FSEditLogOpCodes.OP_MKDIR)


def _plain_mkdir_frame(op: MkdirOp) -> bytes | None:
    """The frame (without CRC) of a MKDIR with an ASCII path, no ACLs and no xattrs.

    Writers log MKDIRs by the million, and this is what they look like: one struct.pack
    builds the whole frame instead of a body and then a header. None when the op is not
    that plain; MkdirOp.encode_body handles everything.
    """
    global _mkdir_frame_cache
    path = op.path
    if op.acl_entries or op.xattrs or not path.isascii():
        return None
    path_len = len(path)
    if path_len > MAX_UTF8_CHARS:
        return None
    perm = op.permissions
    cached_perm, tail, by_path_len = _mkdir_frame_cache
    if perm is not cached_perm:
        tail = perm.encoded + b"\x00\x00\x00\x00\x00"
        by_path_len = {}
        _mkdir_frame_cache = (perm, tail, by_path_len)
    entry = by_path_len.get(path_len)
    if entry is None:
        key = (path_len, len(tail))
        frame_struct = _MKDIR_FRAME_STRUCTS.get(key)
        if frame_struct is None:
            frame_struct = struct.Struct(f">BiqqH{path_len}sqq{len(tail)}s")
            _MKDIR_FRAME_STRUCTS[key] = frame_struct
        # The length field counts itself, the txid and the body: all but the opcode byte.
        entry = by_path_len[path_len] = (frame_struct.pack, frame_struct.size - 1)
    pack, length = entry
    ts = op.timestamp
    atime = op.atime
    try:
        return pack(
            _OP_MKDIR,
            length,
            op.txid,
            op.inode_id,
            path_len,
            path.encode("ascii"),
            ts,
            ts if atime is None else atime,
            tail,
        )
    except struct.error:
        return None  # an out-of-range field: let the generic path report it


def encode_op(op: FSEditLogOp) -> bytes:
    """The whole frame of ``op``: opcode, length, txid, body, CRC32."""
    out = bytearray()
    append_op(out, op)
    return bytes(out)


# ---- reading ---------------------------------------------------------------------------------


def verify_terminator(buf: bytes | bytearray | memoryview, offset: int) -> None:
    """Every byte of ``buf`` from ``offset`` on must be 0x00 or 0xFF (padding after 0xFF).

    Otherwise a stray 0xFF could silently end the log halfway through (Hadoop's
    Reader.verifyTerminator).
    """
    bad = _NOT_PADDING.search(buf, offset)
    if bad is not None:
        raise EditLogCorruptionError(
            f"Read extra bytes after the terminator! (byte 0x{buf[bad.start()]:02x}, "
            f"{bad.start() - offset + 1} bytes after it)"
        )


def frame_length_at(buf: bytes | bytearray | memoryview, offset: int) -> int | None:
    """The whole frame length the op at ``offset`` claims (length + 5), or None if unknown.

    A streaming reader uses it to learn how many bytes it must have in memory before
    calling :func:`scan_op` or :func:`decode_op`.
    """
    if offset + 5 > len(buf) or buf[offset] == OP_INVALID_BYTE:
        return None
    return _I32.unpack_from(buf, offset + 1)[0] + 5


def _check_frame(buf, offset: int, max_op_size: int) -> tuple[int, int, int]:
    """Validate the frame at ``offset``; returns (opcode byte, txid, frame end).

    The opcode is -1 at a clean end: ``offset`` is at the end of ``buf``, or at a 0xFF
    terminator followed only by padding (then the frame end is the end of ``buf``).
    """
    end = len(buf)
    if offset >= end:
        return -1, INVALID_TXID, offset
    opcode = buf[offset]
    if opcode == OP_INVALID_BYTE:
        verify_terminator(buf, offset + 1)
        return -1, INVALID_TXID, end
    if offset + 5 > end:
        raise EditLogCorruptionError("Op is truncated: no length field")
    op_length = _I32.unpack_from(buf, offset + 1)[0] + 5
    if op_length > max_op_size:
        raise EditLogCorruptionError(
            f"Op {_signed_byte(opcode)} has size {op_length}, but maxOpSize = {max_op_size}"
        )
    if op_length < MIN_OP_LENGTH:
        raise EditLogCorruptionError(
            f"Op {_signed_byte(opcode)} has size {op_length}, but the minimum op size is "
            f"{MIN_OP_LENGTH}"
        )
    frame_end = offset + op_length
    if frame_end > end:
        raise EditLogCorruptionError(
            f"Op {_signed_byte(opcode)} is truncated: it claims {op_length} bytes but only "
            f"{end - offset} remain"
        )
    txid = _FRAME_HEAD.unpack_from(buf, offset)[2]
    stored = _U32.unpack_from(buf, frame_end - 4)[0]
    calculated = zlib.crc32(memoryview(buf)[offset : frame_end - 4])
    if stored != calculated:
        raise ChecksumException(
            f"Transaction is corrupt. Calculated checksum is {_java_int(calculated)} "
            f"but read checksum {_java_int(stored)}",
            txid,
        )
    return opcode, txid, frame_end


def _signed_byte(value: int) -> int:
    return value - 256 if value > 127 else value


def scan_op(
    buf: bytes | bytearray | memoryview, offset: int = 0, max_op_size: int = DEFAULT_MAX_OP_SIZE
) -> tuple[int, int]:
    """Check the frame at ``offset`` (length range, CRC) without decoding its body.

    Returns ``(txid, next_offset)``; ``(INVALID_TXID, ...)`` at a clean end (end of buffer,
    or a 0xFF terminator followed only by padding). Like Hadoop's scanOp it does not look
    at the opcode, so a JournalNode can scan ops of a newer NameNode. Raises
    :class:`EditLogCorruptionError` (a :class:`ChecksumException` for a bad CRC) otherwise,
    including when the frame runs past the end of ``buf``.
    """
    _, txid, frame_end = _check_frame(buf, offset, max_op_size)
    return txid, frame_end


def decode_op(
    buf: bytes | bytearray | memoryview,
    offset: int = 0,
    max_op_size: int = DEFAULT_MAX_OP_SIZE,
    layout_version: int = CURRENT_LAYOUT_VERSION,
) -> tuple[FSEditLogOp | None, int]:
    """Decode the op at ``offset``; returns ``(op, next_offset)``, ``(None, ...)`` at a clean end.

    The frame is checked first (as :func:`scan_op`), then the opcode must be one Hadoop can
    read and a modelled op's body must decode and use every byte of the frame. Bodies are
    decoded only at the current layout version (and the test-only future one, whose bodies
    are the same); at any other the op is an
    :class:`OpaqueOp`. Raises :class:`EditLogCorruptionError`.
    """
    opcode_byte, txid, frame_end = _check_frame(buf, offset, max_op_size)
    if opcode_byte < 0:
        return None, frame_end
    opcode = FSEditLogOpCodes.from_byte(opcode_byte)
    if opcode is None or opcode in OBSOLETE_OPCODES:
        name = opcode.name if opcode is not None else "null"
        raise EditLogCorruptionError(f"Read invalid opcode {name} (byte {opcode_byte})")
    body_start = offset + 13
    body_end = frame_end - 4
    cls = OP_CLASSES.get(opcode) if layout_version in DECODED_LAYOUT_VERSIONS else None
    if cls is None:
        return OpaqueOp(opcode, txid, bytes(buf[body_start:body_end])), frame_end
    reader = ByteReader(memoryview(buf)[body_start:body_end])
    try:
        op = cls.decode_body(txid, reader)
    except EditLogCorruptionError as e:
        raise EditLogCorruptionError(f"{opcode.name} txid {txid}: {e}") from None
    except (ValueError, struct.error, IndexError) as e:
        raise EditLogCorruptionError(f"{opcode.name} txid {txid}: malformed body: {e}") from None
    if reader.remaining():
        raise EditLogCorruptionError(
            f"{opcode.name} txid {txid}: {reader.remaining()} unread bytes at the end of the op body"
        )
    return op, frame_end
