"""The ops with optional, repeated or protobuf-encoded parts (layout version -67). Pure.

Concat (a source list), ACLs and xattrs (length-delimited protobuf messages), cache
directives and pools (a flags word saying which optional fields follow) and new erasure
coding policies (a list of extra options). Conventions are those of
:mod:`hadoop_qjm.editlog.edit_log_ops`; the flat ops are in
:mod:`hadoop_qjm.editlog.edit_log_field_ops`.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import ClassVar

from hadoop_qjm.common.exceptions import EditLogCorruptionError
from hadoop_qjm.editlog.edit_log_codec import (
    DUMMY_CLIENT_ID,
    I16,
    I32,
    I64,
    INVALID_CALL_ID,
    U16,
    AclEntry,
    ByteReader,
    XAttr,
    encode_acl_proto,
    encode_rpc_ids,
    encode_utf8,
    encode_xattrs,
)
from hadoop_qjm.editlog.edit_log_ops import FSEditLogOp
from hadoop_qjm.editlog.edit_log_xml import (
    InvalidXmlException,
    Stanza,
    XmlField,
    acl_from_xml,
    acl_xml,
    rpc_from_xml,
    rpc_xml,
    xattr_xml,
    xattrs_from_xml,
    xml_int,
    xml_long,
    xml_short,
)
from hadoop_qjm.editlog.fs_edit_log_op_codes import FSEditLogOpCodes as Op

__all__ = [
    "ConcatDeleteOp",
    "SetAclOp",
    "SetXAttrOp",
    "RemoveXAttrOp",
    "AddCacheDirectiveInfoOp",
    "ModifyCacheDirectiveInfoOp",
    "AddCachePoolOp",
    "ModifyCachePoolOp",
    "AddErasureCodingPolicyOp",
]


def _rpc(op) -> bytes:
    return encode_rpc_ids(op.rpc_client_id, op.rpc_call_id)


@dataclass(slots=True, unsafe_hash=True)
class ConcatDeleteOp(FSEditLogOp):
    """OP_CONCAT_DELETE: ``srcs`` were appended to ``trg`` and deleted."""

    opcode: ClassVar[Op] = Op.OP_CONCAT_DELETE
    txid: int
    _: KW_ONLY
    trg: str
    srcs: tuple[str, ...]
    timestamp: int
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self) -> bytes:
        # The sources are an ArrayWritable of DeprecatedUTF8: int32 count, then the strings.
        return b"".join(
            (
                encode_utf8(self.trg),
                I32.pack(len(self.srcs)),
                *(encode_utf8(s) for s in self.srcs),
                I64.pack(self.timestamp),
                _rpc(self),
            )
        )

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> ConcatDeleteOp:
        trg = reader.utf8()
        count = reader.i32()
        if count < 0 or count * 2 > reader.remaining():
            raise EditLogCorruptionError(f"ConcatDeleteOp with {count} sources")
        srcs = tuple(reader.utf8() for _ in range(count))
        timestamp = reader.i64()
        client_id, call_id = reader.rpc_ids()
        return cls(
            txid,
            trg=trg,
            srcs=srcs,
            timestamp=timestamp,
            rpc_client_id=client_id,
            rpc_call_id=call_id,
        )

    def xml_fields(self) -> list[XmlField]:
        sources: list[XmlField] = [(f"SOURCE{i}", s) for i, s in enumerate(self.srcs, 1)]
        return [
            ("LENGTH", "0"),
            ("TRG", self.trg),
            ("TIMESTAMP", str(self.timestamp)),
            ("SOURCES", sources),
            *rpc_xml(self.rpc_client_id, self.rpc_call_id),
        ]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> ConcatDeleteOp:
        sources = st.one("SOURCES")
        srcs = []
        while sources.has(f"SOURCE{len(srcs) + 1}"):
            srcs.append(sources.get(f"SOURCE{len(srcs) + 1}"))
        return cls(
            txid,
            trg=st.get("TRG"),
            srcs=tuple(srcs),
            timestamp=xml_long(st, "TIMESTAMP"),
            **rpc_from_xml(st),
        )


@dataclass(slots=True, unsafe_hash=True)
class SetAclOp(FSEditLogOp):
    """OP_SET_ACL: the whole ACL of ``src``, as one AclEditLogProto."""

    opcode: ClassVar[Op] = Op.OP_SET_ACL
    txid: int
    _: KW_ONLY
    src: str
    acl_entries: tuple[AclEntry, ...] = ()

    def encode_body(self) -> bytes:
        return encode_acl_proto(self.src, self.acl_entries)

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> SetAclOp:
        src, entries = reader.acl_proto()
        return cls(txid, src=src or "", acl_entries=entries)

    def xml_fields(self) -> list[XmlField]:
        return [("SRC", self.src), *acl_xml(self.acl_entries)]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> SetAclOp:
        return cls(txid, src=st.get("SRC"), acl_entries=acl_from_xml(st))


@dataclass(slots=True, unsafe_hash=True)
class _XAttrOp(FSEditLogOp):
    """OP_SET_XATTR and OP_REMOVE_XATTR: an XAttrEditLogProto with its src, then rpc ids."""

    txid: int
    _: KW_ONLY
    src: str
    xattrs: tuple[XAttr, ...] = ()
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self) -> bytes:
        return encode_xattrs(self.xattrs, self.src) + _rpc(self)

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> _XAttrOp:
        src, xattrs = reader.xattr_proto()
        client_id, call_id = reader.rpc_ids()
        return cls(txid, src=src or "", xattrs=xattrs, rpc_client_id=client_id, rpc_call_id=call_id)

    def xml_fields(self) -> list[XmlField]:
        return [
            ("SRC", self.src),
            *xattr_xml(self.xattrs),
            *rpc_xml(self.rpc_client_id, self.rpc_call_id),
        ]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> _XAttrOp:
        return cls(txid, src=st.get("SRC"), xattrs=xattrs_from_xml(st), **rpc_from_xml(st))


@dataclass(slots=True, unsafe_hash=True)
class SetXAttrOp(_XAttrOp):
    opcode: ClassVar[Op] = Op.OP_SET_XATTR


@dataclass(slots=True, unsafe_hash=True)
class RemoveXAttrOp(_XAttrOp):
    opcode: ClassVar[Op] = Op.OP_REMOVE_XATTR


# ---- optional fields behind a flags word -----------------------------------------------------
#
# (attribute, XML tag, flag bit, kind) in the order both the body and the XML list them.

_STRING, _SHORT, _LONG, _MODE = "string", "short", "long", "mode"


def _encode_optional(op, fields) -> bytes:
    flags = 0
    parts = []
    for attr, _, bit, kind in fields:
        value = getattr(op, attr)
        if value is None:
            continue
        flags |= bit
        if kind == _STRING:
            parts.append(encode_utf8(value))
        elif kind == _LONG:
            parts.append(I64.pack(value))
        elif kind == _MODE:
            parts.append(U16.pack(value & 0xFFFF))
        else:
            parts.append(I16.pack(value))
    return I32.pack(flags) + b"".join(parts)


def _read_optional(reader: ByteReader, fields, what: str) -> dict:
    flags = reader.i32()
    known = 0
    values: dict = {}
    for attr, _, bit, kind in fields:
        known |= bit
        if not flags & bit:
            values[attr] = None
        elif kind == _STRING:
            values[attr] = reader.utf8()
        elif kind == _LONG:
            values[attr] = reader.i64()
        elif kind == _MODE:
            values[attr] = reader.u16()
        else:
            values[attr] = reader.i16()
    if flags & ~known:
        raise EditLogCorruptionError(f"unknown flags set in {what}: {flags}")
    return values


def _optional_xml(op, fields) -> list[XmlField]:
    out: list[XmlField] = []
    for attr, tag, _, kind in fields:
        value = getattr(op, attr)
        if value is not None:
            out.append((tag, str(value & 0o1777) if kind == _MODE else str(value)))
    return out


def _optional_from_xml(st: Stanza, fields) -> dict:
    values: dict = {}
    for attr, tag, _, kind in fields:
        if not st.has(tag):
            values[attr] = None
        elif kind == _STRING:
            values[attr] = st.get(tag)
        elif kind == _LONG:
            values[attr] = xml_long(st, tag)
        elif kind == _MODE:
            values[attr] = xml_short(st, tag) & 0xFFFF
        else:
            values[attr] = xml_short(st, tag)
    return values


_DIRECTIVE_FIELDS = (
    ("path", "PATH", 0x1, _STRING),
    ("replication", "REPLICATION", 0x2, _SHORT),
    ("pool", "POOL", 0x4, _STRING),
    ("expiration", "EXPIRATION", 0x8, _LONG),
)


@dataclass(slots=True, unsafe_hash=True)
class _CacheDirectiveOp(FSEditLogOp):
    """A CacheDirectiveInfo: its id, then only the fields that are set (absolute expiry)."""

    txid: int
    _: KW_ONLY
    id: int
    path: str | None = None
    replication: int | None = None
    pool: str | None = None
    expiration: int | None = None
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self) -> bytes:
        return I64.pack(self.id) + _encode_optional(self, _DIRECTIVE_FIELDS) + _rpc(self)

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> _CacheDirectiveOp:
        directive_id = reader.i64()
        values = _read_optional(reader, _DIRECTIVE_FIELDS, "CacheDirectiveInfo")
        client_id, call_id = reader.rpc_ids()
        return cls(txid, id=directive_id, **values, rpc_client_id=client_id, rpc_call_id=call_id)

    def xml_fields(self) -> list[XmlField]:
        return [
            ("ID", str(self.id)),
            *_optional_xml(self, _DIRECTIVE_FIELDS),
            *rpc_xml(self.rpc_client_id, self.rpc_call_id),
        ]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> _CacheDirectiveOp:
        values = _optional_from_xml(st, _DIRECTIVE_FIELDS)
        return cls(txid, id=xml_long(st, "ID"), **values, **rpc_from_xml(st))


@dataclass(slots=True, unsafe_hash=True)
class AddCacheDirectiveInfoOp(_CacheDirectiveOp):
    opcode: ClassVar[Op] = Op.OP_ADD_CACHE_DIRECTIVE


@dataclass(slots=True, unsafe_hash=True)
class ModifyCacheDirectiveInfoOp(_CacheDirectiveOp):
    opcode: ClassVar[Op] = Op.OP_MODIFY_CACHE_DIRECTIVE


_POOL_FIELDS = (
    ("owner_name", "OWNERNAME", 0x1, _STRING),
    ("group_name", "GROUPNAME", 0x2, _STRING),
    ("mode", "MODE", 0x4, _MODE),
    ("limit", "LIMIT", 0x8, _LONG),
    ("max_relative_expiry", "MAXRELATIVEEXPIRY", 0x10, _LONG),
    ("default_replication", "DEFAULTREPLICATION", 0x20, _SHORT),
)


@dataclass(slots=True, unsafe_hash=True)
class _CachePoolOp(FSEditLogOp):
    """A CachePoolInfo: its name, then only the fields that are set."""

    txid: int
    _: KW_ONLY
    pool_name: str
    owner_name: str | None = None
    group_name: str | None = None
    mode: int | None = None
    limit: int | None = None
    max_relative_expiry: int | None = None
    default_replication: int | None = None
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self) -> bytes:
        return encode_utf8(self.pool_name) + _encode_optional(self, _POOL_FIELDS) + _rpc(self)

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> _CachePoolOp:
        pool_name = reader.utf8()
        values = _read_optional(reader, _POOL_FIELDS, "CachePoolInfo")
        client_id, call_id = reader.rpc_ids()
        return cls(
            txid, pool_name=pool_name, **values, rpc_client_id=client_id, rpc_call_id=call_id
        )

    def xml_fields(self) -> list[XmlField]:
        return [
            ("POOLNAME", self.pool_name),
            *_optional_xml(self, _POOL_FIELDS),
            *rpc_xml(self.rpc_client_id, self.rpc_call_id),
        ]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> _CachePoolOp:
        values = _optional_from_xml(st, _POOL_FIELDS)
        return cls(txid, pool_name=st.get("POOLNAME"), **values, **rpc_from_xml(st))


@dataclass(slots=True, unsafe_hash=True)
class AddCachePoolOp(_CachePoolOp):
    opcode: ClassVar[Op] = Op.OP_ADD_CACHE_POOL


@dataclass(slots=True, unsafe_hash=True)
class ModifyCachePoolOp(_CachePoolOp):
    opcode: ClassVar[Op] = Op.OP_MODIFY_CACHE_POOL


@dataclass(slots=True, unsafe_hash=True)
class AddErasureCodingPolicyOp(FSEditLogOp):
    """OP_ADD_ERASURE_CODING_POLICY: an ECSchema (codec, units, options) and a cell size.

    ``extra_options`` keeps the (key, value) pairs in the order they were written.
    """

    opcode: ClassVar[Op] = Op.OP_ADD_ERASURE_CODING_POLICY
    txid: int
    _: KW_ONLY
    codec_name: str
    num_data_units: int
    num_parity_units: int
    cell_size: int
    extra_options: tuple[tuple[str, str], ...] = ()
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self) -> bytes:
        return b"".join(
            (
                encode_utf8(self.codec_name),
                I32.pack(self.num_data_units),
                I32.pack(self.num_parity_units),
                I32.pack(self.cell_size),
                I32.pack(len(self.extra_options)),
                *(encode_utf8(k) + encode_utf8(v) for k, v in self.extra_options),
                _rpc(self),
            )
        )

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> AddErasureCodingPolicyOp:
        codec = reader.utf8()
        data_units, parity_units, cell_size, count = (reader.i32() for _ in range(4))
        if count < 0 or count * 4 > reader.remaining():
            raise EditLogCorruptionError(f"erasure coding policy with {count} extra options")
        options = tuple((reader.utf8(), reader.utf8()) for _ in range(count))
        client_id, call_id = reader.rpc_ids()
        return cls(
            txid,
            codec_name=codec,
            num_data_units=data_units,
            num_parity_units=parity_units,
            cell_size=cell_size,
            extra_options=options,
            rpc_client_id=client_id,
            rpc_call_id=call_id,
        )

    def xml_fields(self) -> list[XmlField]:
        return [
            ("CODEC", self.codec_name),
            ("DATAUNITS", str(self.num_data_units)),
            ("PARITYUNITS", str(self.num_parity_units)),
            ("CELLSIZE", str(self.cell_size)),
            ("EXTRAOPTIONS", str(len(self.extra_options))),
            *(("EXTRAOPTION", [("KEY", k), ("VALUE", v)]) for k, v in self.extra_options),
            *rpc_xml(self.rpc_client_id, self.rpc_call_id),
        ]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> AddErasureCodingPolicyOp:
        count = xml_int(st, "EXTRAOPTIONS")
        options = st.children.get("EXTRAOPTION", []) if count else []
        if len(options) != count:
            raise InvalidXmlException(
                f"<EXTRAOPTIONS> says {count} but there are {len(options)} <EXTRAOPTION>s"
            )
        return cls(
            txid,
            codec_name=st.get("CODEC"),
            num_data_units=xml_int(st, "DATAUNITS"),
            num_parity_units=xml_int(st, "PARITYUNITS"),
            cell_size=xml_int(st, "CELLSIZE"),
            extra_options=tuple((o.get("KEY"), o.get("VALUE")) for o in options),
            **rpc_from_xml(st),
        )
