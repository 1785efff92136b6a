"""The ops that change one or two paths: delete, rename, times, permissions, owner,
replication (bodies at layout version -67, HADOOP-QJM-DIGEST.md §4.5). Pure.

See :mod:`hadoop_qjm.editlog.edit_log_ops` for the conventions every op class follows.
"""

from __future__ import annotations

import struct
from dataclasses import KW_ONLY, dataclass
from typing import ClassVar

from hadoop_qjm.common.exceptions import EditLogCorruptionError, IllegalArgumentException
from hadoop_qjm.editlog.edit_log_codec import (
    DUMMY_CLIENT_ID,
    I16,
    I32,
    I64,
    INVALID_CALL_ID,
    U16,
    ByteReader,
    encode_rpc_ids,
    encode_utf8,
)
from hadoop_qjm.editlog.edit_log_ops import FSEditLogOp
from hadoop_qjm.editlog.edit_log_xml import (
    InvalidXmlException,
    Stanza,
    XmlField,
    rpc_from_xml,
    rpc_xml,
    xml_long,
    xml_short,
)
from hadoop_qjm.editlog.fs_edit_log_op_codes import FSEditLogOpCodes

__all__ = [
    "DeleteOp",
    "RenameOldOp",
    "RenameOp",
    "TimesOp",
    "SetPermissionsOp",
    "SetOwnerOp",
    "SetReplicationOp",
    "RENAME_OPTIONS",
]

#: Options.Rename, by wire value.
RENAME_OPTIONS = ("NONE", "OVERWRITE", "TO_TRASH")

_TWO_I64 = struct.Struct(">qq")


@dataclass(slots=True, unsafe_hash=True)
class DeleteOp(FSEditLogOp):
    """OP_DELETE."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_DELETE
    txid: int
    _: KW_ONLY
    path: str
    timestamp: int
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self) -> bytes:
        return b"".join(
            (
                encode_utf8(self.path),
                I64.pack(self.timestamp),
                encode_rpc_ids(self.rpc_client_id, self.rpc_call_id),
            )
        )

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> DeleteOp:
        path = reader.utf8()
        timestamp = reader.i64()
        client_id, call_id = reader.rpc_ids()
        return cls(
            txid, path=path, timestamp=timestamp, rpc_client_id=client_id, rpc_call_id=call_id
        )

    def xml_fields(self) -> list[XmlField]:
        return [
            ("LENGTH", "0"),
            ("PATH", self.path),
            ("TIMESTAMP", str(self.timestamp)),
            *rpc_xml(self.rpc_client_id, self.rpc_call_id),
        ]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> DeleteOp:
        return cls(
            txid, path=st.get("PATH"), timestamp=xml_long(st, "TIMESTAMP"), **rpc_from_xml(st)
        )


@dataclass(slots=True, unsafe_hash=True)
class RenameOldOp(FSEditLogOp):
    """OP_RENAME_OLD: the original rename (no options)."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_RENAME_OLD
    txid: int
    _: KW_ONLY
    src: str
    dst: str
    timestamp: int
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self) -> bytes:
        return b"".join(
            (
                encode_utf8(self.src),
                encode_utf8(self.dst),
                I64.pack(self.timestamp),
                encode_rpc_ids(self.rpc_client_id, self.rpc_call_id),
            )
        )

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> RenameOldOp:
        src = reader.utf8()
        dst = reader.utf8()
        timestamp = reader.i64()
        client_id, call_id = reader.rpc_ids()
        return cls(
            txid,
            src=src,
            dst=dst,
            timestamp=timestamp,
            rpc_client_id=client_id,
            rpc_call_id=call_id,
        )

    def xml_fields(self) -> list[XmlField]:
        return [
            ("LENGTH", "0"),
            ("SRC", self.src),
            ("DST", self.dst),
            ("TIMESTAMP", str(self.timestamp)),
            *rpc_xml(self.rpc_client_id, self.rpc_call_id),
        ]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> RenameOldOp:
        return cls(
            txid,
            src=st.get("SRC"),
            dst=st.get("DST"),
            timestamp=xml_long(st, "TIMESTAMP"),
            **rpc_from_xml(st),
        )


@dataclass(slots=True, unsafe_hash=True)
class RenameOp(FSEditLogOp):
    """OP_RENAME (rename2): ``options`` are Options.Rename values (see RENAME_OPTIONS)."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_RENAME
    txid: int
    _: KW_ONLY
    src: str
    dst: str
    timestamp: int
    options: tuple[int, ...] = ()
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID

    def __post_init__(self) -> None:
        for opt in self.options:
            if not 0 <= opt < len(RENAME_OPTIONS):
                raise IllegalArgumentException(f"unknown rename option {opt}")

    def encode_body(self) -> bytes:
        return b"".join(
            (
                encode_utf8(self.src),
                encode_utf8(self.dst),
                I64.pack(self.timestamp),
                I32.pack(len(self.options)),  # a BytesWritable of the option bytes
                bytes(self.options),
                encode_rpc_ids(self.rpc_client_id, self.rpc_call_id),
            )
        )

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> RenameOp:
        src = reader.utf8()
        dst = reader.utf8()
        timestamp = reader.i64()
        n = reader.i32()
        options = tuple(reader.raw(n))
        if any(opt >= len(RENAME_OPTIONS) for opt in options):
            raise EditLogCorruptionError(f"unknown rename option in {options}")
        client_id, call_id = reader.rpc_ids()
        return cls(
            txid,
            src=src,
            dst=dst,
            timestamp=timestamp,
            options=options,
            rpc_client_id=client_id,
            rpc_call_id=call_id,
        )

    def xml_fields(self) -> list[XmlField]:
        return [
            ("LENGTH", "0"),
            ("SRC", self.src),
            ("DST", self.dst),
            ("TIMESTAMP", str(self.timestamp)),
            ("OPTIONS", "|".join(RENAME_OPTIONS[o] for o in self.options)),
            *rpc_xml(self.rpc_client_id, self.rpc_call_id),
        ]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> RenameOp:
        options = []
        for name in st.get("OPTIONS").strip().split("|"):
            if not name:
                continue  # "" is no option (Hadoop skips empty names too)
            if name not in RENAME_OPTIONS:
                raise InvalidXmlException(f"error parsing Rename value: {name!r}")
            options.append(RENAME_OPTIONS.index(name))
        return cls(
            txid,
            src=st.get("SRC"),
            dst=st.get("DST"),
            timestamp=xml_long(st, "TIMESTAMP"),
            options=tuple(options),
            **rpc_from_xml(st),
        )


@dataclass(slots=True, unsafe_hash=True)
class TimesOp(FSEditLogOp):
    """OP_TIMES: set mtime and atime."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_TIMES
    txid: int
    _: KW_ONLY
    path: str
    mtime: int
    atime: int

    def encode_body(self) -> bytes:
        return encode_utf8(self.path) + _TWO_I64.pack(self.mtime, self.atime)

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> TimesOp:
        path = reader.utf8()
        mtime = reader.i64()
        return cls(txid, path=path, mtime=mtime, atime=reader.i64())

    def xml_fields(self) -> list[XmlField]:
        return [
            ("LENGTH", "0"),
            ("PATH", self.path),
            ("MTIME", str(self.mtime)),
            ("ATIME", str(self.atime)),
        ]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> TimesOp:
        return cls(
            txid, path=st.get("PATH"), mtime=xml_long(st, "MTIME"), atime=xml_long(st, "ATIME")
        )


@dataclass(slots=True, unsafe_hash=True)
class SetPermissionsOp(FSEditLogOp):
    """OP_SET_PERMISSIONS: ``permission`` is the raw FsPermission short (no owner here)."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_SET_PERMISSIONS
    txid: int
    _: KW_ONLY
    src: str
    permission: int

    def encode_body(self) -> bytes:
        return encode_utf8(self.src) + U16.pack(self.permission & 0xFFFF)

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> SetPermissionsOp:
        src = reader.utf8()
        return cls(txid, src=src, permission=reader.u16())

    def xml_fields(self) -> list[XmlField]:
        return [("SRC", self.src), ("MODE", str(self.permission & 0o1777))]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> SetPermissionsOp:
        return cls(txid, src=st.get("SRC"), permission=xml_short(st, "MODE") & 0xFFFF)


@dataclass(slots=True, unsafe_hash=True)
class SetOwnerOp(FSEditLogOp):
    """OP_SET_OWNER: an absent user or group is None (written as "")."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_SET_OWNER
    txid: int
    _: KW_ONLY
    src: str
    username: str | None = None
    groupname: str | None = None

    def encode_body(self) -> bytes:
        return (
            encode_utf8(self.src)
            + encode_utf8(self.username or "")
            + encode_utf8(self.groupname or "")
        )

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> SetOwnerOp:
        src = reader.utf8()
        username = reader.utf8() or None  # readString_EmptyAsNull
        groupname = reader.utf8() or None
        return cls(txid, src=src, username=username, groupname=groupname)

    def xml_fields(self) -> list[XmlField]:
        fields: list[XmlField] = [("SRC", self.src)]
        if self.username is not None:
            fields.append(("USERNAME", self.username))
        if self.groupname is not None:
            fields.append(("GROUPNAME", self.groupname))
        return fields

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> SetOwnerOp:
        return cls(
            txid,
            src=st.get("SRC"),
            username=st.get_or_none("USERNAME") or None,
            groupname=st.get_or_none("GROUPNAME") or None,
        )


@dataclass(slots=True, unsafe_hash=True)
class SetReplicationOp(FSEditLogOp):
    """OP_SET_REPLICATION."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_SET_REPLICATION
    txid: int
    _: KW_ONLY
    path: str
    replication: int

    def encode_body(self) -> bytes:
        return encode_utf8(self.path) + I16.pack(self.replication)

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> SetReplicationOp:
        path = reader.utf8()
        return cls(txid, path=path, replication=reader.i16())

    def xml_fields(self) -> list[XmlField]:
        return [("PATH", self.path), ("REPLICATION", str(self.replication))]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> SetReplicationOp:
        return cls(txid, path=st.get("PATH"), replication=xml_short(st, "REPLICATION"))
