"""The ops whose body is a plain sequence of fields, declared once (layout version -67). Pure.

Most of Hadoop's ops write a few fields one after the other and print them in the same
order under fixed element names. Each class here declares that sequence once, in
``FIELDS`` as (attribute, XML tag, kind), and :class:`FieldsOp` derives the body's
encoding, its decoding, the ``toXml`` elements and ``fromXml`` from it, so the four can
never disagree. ``RPC_IDS`` adds the retry-cache ids (RPC_CLIENTID, RPC_CALLID) at the end.
Ops with optional or nested parts are written out in
:mod:`hadoop_qjm.editlog.edit_log_admin_ops`; the delegation-token ops, whose fields are
composite values, are in :mod:`hadoop_qjm.editlog.edit_log_token_ops`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass
from typing import Any, ClassVar

from hadoop_qjm.common.exceptions import EditLogCorruptionError
from hadoop_qjm.editlog.edit_log_codec import (
    DUMMY_CLIENT_ID,
    I8,
    I16,
    I32,
    I64,
    INVALID_CALL_ID,
    U8,
    Block,
    ByteReader,
    PermissionStatus,
    encode_compact_block_array,
    encode_rpc_ids,
    encode_utf8,
)
from hadoop_qjm.editlog.edit_log_ops import FSEditLogOp
from hadoop_qjm.editlog.edit_log_xml import (
    Stanza,
    XmlField,
    block_from_xml,
    block_xml,
    blocks_from_xml,
    permission_from_xml,
    permission_xml,
    rpc_from_xml,
    rpc_xml,
    xml_bool,
    xml_byte,
    xml_int,
    xml_long,
    xml_short,
)
from hadoop_qjm.editlog.fs_edit_log_op_codes import FSEditLogOpCodes as Op

__all__ = [
    "FieldsOp",
    "FieldKind",
    "fields_op",
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
]


def _read_optional_block(reader: ByteReader) -> Block | None:
    blocks = reader.compact_block_array()
    if len(blocks) > 1:
        raise EditLogCorruptionError("Truncate op should have 1 or 0 blocks")
    return blocks[0] if blocks else None


def _optional_block_from_xml(st: Stanza, tag: str) -> Block | None:
    return block_from_xml(st.one(tag)) if st.has(tag) else None


@dataclass(frozen=True, slots=True)
class FieldKind:
    """How one field is written, read, printed and parsed; a FIELDS entry names one of the
    built-in kinds ("str", "long", ...) or gives its own FieldKind."""

    encode: Callable[[Any], bytes] | None
    read: Callable[[ByteReader], Any] | None
    to_xml: Callable[[str, Any], list[XmlField]]
    from_xml: Callable[[Stanza, str], Any]


def _text(tag: str, value: Any) -> list[XmlField]:
    return [(tag, str(value))]


_KINDS: dict[str, FieldKind] = {
    "str": FieldKind(encode_utf8, ByteReader.utf8, lambda t, v: [(t, v)], Stanza.get),
    "long": FieldKind(I64.pack, ByteReader.i64, _text, xml_long),
    "int": FieldKind(I32.pack, ByteReader.i32, _text, xml_int),
    "short": FieldKind(I16.pack, ByteReader.i16, _text, xml_short),
    "byte": FieldKind(I8.pack, ByteReader.i8, _text, xml_byte),
    "bool": FieldKind(
        lambda v: U8.pack(1 if v else 0),
        ByteReader.boolean,
        lambda t, v: [(t, "true" if v else "false")],
        xml_bool,
    ),
    "perm": FieldKind(
        lambda v: v.encoded,
        ByteReader.permission_status,
        lambda t, v: [permission_xml(v)],
        lambda st, t: permission_from_xml(st),
    ),
    "blocks": FieldKind(
        encode_compact_block_array,
        ByteReader.compact_block_array,
        lambda t, v: [block_xml(b) for b in v],
        lambda st, t: blocks_from_xml(st),
    ),
    "optional_block": FieldKind(
        lambda v: encode_compact_block_array(() if v is None else (v,)),
        _read_optional_block,
        lambda t, v: [] if v is None else [block_xml(v)],
        _optional_block_from_xml,
    ),
    # Hadoop prints the pre-optimization LENGTH field as 0; it is not in the body.
    "length": FieldKind(None, None, lambda t, v: [(t, "0")], lambda st, t: None),
}


def _kind(kind: str | FieldKind) -> FieldKind:
    return kind if isinstance(kind, FieldKind) else _KINDS[kind]


class FieldsOp(FSEditLogOp):
    """An op whose body, and whose XML, is its ``FIELDS`` in order (then the rpc ids)."""

    __slots__ = ()
    #: (attribute, XML tag, kind); a "length" entry has no attribute.
    FIELDS: ClassVar[tuple[tuple[str, str, str | FieldKind], ...]] = ()
    RPC_IDS: ClassVar[bool] = False

    def encode_body(self) -> bytes:
        parts = []
        for attr, _, kind in self.FIELDS:
            encode = _kind(kind).encode
            if encode is not None:
                parts.append(encode(getattr(self, attr)))
        if self.RPC_IDS:
            parts.append(encode_rpc_ids(self.rpc_client_id, self.rpc_call_id))  # type: ignore[attr-defined]
        return b"".join(parts)

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> FSEditLogOp:
        values = {}
        for attr, _, kind in cls.FIELDS:
            read = _kind(kind).read
            if read is not None:
                values[attr] = read(reader)
        if cls.RPC_IDS:
            values["rpc_client_id"], values["rpc_call_id"] = reader.rpc_ids()
        return cls(txid, **values)  # type: ignore[call-arg]

    def xml_fields(self) -> list[XmlField]:
        out: list[XmlField] = []
        for attr, tag, kind in self.FIELDS:
            out += _kind(kind).to_xml(tag, getattr(self, attr) if attr else None)
        if self.RPC_IDS:
            out += rpc_xml(self.rpc_client_id, self.rpc_call_id)  # type: ignore[attr-defined]
        return out

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> FSEditLogOp:
        values = {attr: _kind(kind).from_xml(st, tag) for attr, tag, kind in cls.FIELDS if attr}
        if cls.RPC_IDS:
            values.update(rpc_from_xml(st))
        return cls(txid, **values)  # type: ignore[call-arg]


def fields_op(
    opcode: Op, fields: tuple[tuple[str, str, str | FieldKind], ...], rpc_ids: bool = False
):
    """Class decorator: set the opcode, FIELDS and RPC_IDS of a FieldsOp dataclass."""

    def decorate(cls):
        cls.opcode, cls.FIELDS, cls.RPC_IDS = opcode, fields, rpc_ids
        return dataclass(slots=True, unsafe_hash=True)(cls)

    return decorate


# ---- one or two numbers ---------------------------------------------------------------------


@fields_op(Op.OP_SET_GENSTAMP_V1, (("gen_stamp", "GENSTAMP", "long"),))
class SetGenstampV1Op(FieldsOp):
    txid: int
    _: KW_ONLY
    gen_stamp: int


@fields_op(Op.OP_SET_GENSTAMP_V2, (("gen_stamp", "GENSTAMPV2", "long"),))
class SetGenstampV2Op(FieldsOp):
    txid: int
    _: KW_ONLY
    gen_stamp: int


@fields_op(Op.OP_ALLOCATE_BLOCK_ID, (("block_id", "BLOCK_ID", "long"),))
class AllocateBlockIdOp(FieldsOp):
    txid: int
    _: KW_ONLY
    block_id: int


@fields_op(Op.OP_ROLLING_UPGRADE_START, (("time", "STARTTIME", "long"),))
class RollingUpgradeStartOp(FieldsOp):
    txid: int
    _: KW_ONLY
    time: int


@fields_op(Op.OP_ROLLING_UPGRADE_FINALIZE, (("time", "FINALIZETIME", "long"),))
class RollingUpgradeFinalizeOp(FieldsOp):
    txid: int
    _: KW_ONLY
    time: int


# ---- quotas and storage policies --------------------------------------------------------------


@fields_op(Op.OP_SET_NS_QUOTA, (("src", "SRC", "str"), ("ns_quota", "NSQUOTA", "long")))
class SetNSQuotaOp(FieldsOp):
    """Obsolete: Hadoop reads it but no longer writes it."""

    txid: int
    _: KW_ONLY
    src: str
    ns_quota: int


@fields_op(Op.OP_CLEAR_NS_QUOTA, (("src", "SRC", "str"),))
class ClearNSQuotaOp(FieldsOp):
    """Obsolete: Hadoop reads it but no longer writes it."""

    txid: int
    _: KW_ONLY
    src: str


@fields_op(
    Op.OP_SET_QUOTA,
    (("src", "SRC", "str"), ("ns_quota", "NSQUOTA", "long"), ("ds_quota", "DSQUOTA", "long")),
)
class SetQuotaOp(FieldsOp):
    txid: int
    _: KW_ONLY
    src: str
    ns_quota: int
    ds_quota: int


@fields_op(
    Op.OP_SET_QUOTA_BY_STORAGETYPE,
    (
        ("src", "SRC", "str"),
        ("storage_type", "STORAGETYPE", "int"),
        ("ds_quota", "DSQUOTA", "long"),
    ),
)
class SetQuotaByStorageTypeOp(FieldsOp):
    """``storage_type`` is the StorageType ordinal."""

    txid: int
    _: KW_ONLY
    src: str
    storage_type: int
    ds_quota: int


@fields_op(Op.OP_SET_STORAGE_POLICY, (("path", "PATH", "str"), ("policy_id", "POLICYID", "byte")))
class SetStoragePolicyOp(FieldsOp):
    txid: int
    _: KW_ONLY
    path: str
    policy_id: int


# ---- leases, blocks and files ----------------------------------------------------------------


@fields_op(
    Op.OP_REASSIGN_LEASE,
    (
        ("lease_holder", "LEASEHOLDER", "str"),
        ("path", "PATH", "str"),
        ("new_holder", "NEWHOLDER", "str"),
    ),
)
class ReassignLeaseOp(FieldsOp):
    txid: int
    _: KW_ONLY
    lease_holder: str
    path: str
    new_holder: str


@fields_op(
    Op.OP_APPEND,
    (
        ("path", "PATH", "str"),
        ("client_name", "CLIENT_NAME", "str"),
        ("client_machine", "CLIENT_MACHINE", "str"),
        ("new_block", "NEWBLOCK", "bool"),
    ),
    rpc_ids=True,
)
class AppendOp(FieldsOp):
    txid: int
    _: KW_ONLY
    path: str
    client_name: str
    client_machine: str
    new_block: bool = False
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID


@fields_op(
    Op.OP_UPDATE_BLOCKS, (("path", "PATH", "str"), ("blocks", "BLOCK", "blocks")), rpc_ids=True
)
class UpdateBlocksOp(FieldsOp):
    txid: int
    _: KW_ONLY
    path: str
    blocks: tuple[Block, ...] = ()
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID


@fields_op(
    Op.OP_TRUNCATE,
    (
        ("src", "SRC", "str"),
        ("client_name", "CLIENTNAME", "str"),
        ("client_machine", "CLIENTMACHINE", "str"),
        ("new_length", "NEWLENGTH", "long"),
        ("timestamp", "TIMESTAMP", "long"),
        ("truncate_block", "BLOCK", "optional_block"),
    ),
)
class TruncateOp(FieldsOp):
    txid: int
    _: KW_ONLY
    src: str
    client_name: str
    client_machine: str
    new_length: int
    timestamp: int
    truncate_block: Block | None = None


@fields_op(
    Op.OP_SYMLINK,
    (
        ("", "LENGTH", "length"),
        ("inode_id", "INODEID", "long"),
        ("path", "PATH", "str"),
        ("value", "VALUE", "str"),
        ("mtime", "MTIME", "long"),
        ("atime", "ATIME", "long"),
        ("permissions", "PERMISSION_STATUS", "perm"),
    ),
    rpc_ids=True,
)
class SymlinkOp(FieldsOp):
    txid: int
    _: KW_ONLY
    inode_id: int
    path: str
    value: str
    mtime: int
    atime: int
    permissions: PermissionStatus
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID


# ---- snapshots -------------------------------------------------------------------------------

_ROOT = ("snapshot_root", "SNAPSHOTROOT", "str")
_MTIME = ("mtime", "MTIME", "long")


@fields_op(Op.OP_CREATE_SNAPSHOT, (_ROOT, ("snapshot_name", "SNAPSHOTNAME", "str"), _MTIME), True)
class CreateSnapshotOp(FieldsOp):
    txid: int
    _: KW_ONLY
    snapshot_root: str
    snapshot_name: str
    mtime: int
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID


@fields_op(Op.OP_DELETE_SNAPSHOT, (_ROOT, ("snapshot_name", "SNAPSHOTNAME", "str"), _MTIME), True)
class DeleteSnapshotOp(FieldsOp):
    txid: int
    _: KW_ONLY
    snapshot_root: str
    snapshot_name: str
    mtime: int
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID


@fields_op(
    Op.OP_RENAME_SNAPSHOT,
    (
        _ROOT,
        ("snapshot_old_name", "SNAPSHOTOLDNAME", "str"),
        ("snapshot_new_name", "SNAPSHOTNEWNAME", "str"),
        _MTIME,
    ),
    True,
)
class RenameSnapshotOp(FieldsOp):
    txid: int
    _: KW_ONLY
    snapshot_root: str
    snapshot_old_name: str
    snapshot_new_name: str
    mtime: int
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID


@fields_op(Op.OP_ALLOW_SNAPSHOT, (_ROOT,))
class AllowSnapshotOp(FieldsOp):
    txid: int
    _: KW_ONLY
    snapshot_root: str


@fields_op(Op.OP_DISALLOW_SNAPSHOT, (_ROOT,))
class DisallowSnapshotOp(FieldsOp):
    txid: int
    _: KW_ONLY
    snapshot_root: str


# ---- cache pools and directives, erasure coding policies: by name or id ----------------------


@fields_op(Op.OP_REMOVE_CACHE_DIRECTIVE, (("id", "ID", "long"),), True)
class RemoveCacheDirectiveInfoOp(FieldsOp):
    txid: int
    _: KW_ONLY
    id: int
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID


@fields_op(Op.OP_REMOVE_CACHE_POOL, (("pool_name", "POOLNAME", "str"),), True)
class RemoveCachePoolOp(FieldsOp):
    txid: int
    _: KW_ONLY
    pool_name: str
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID


_POLICY = (("ec_policy_name", "POLICYNAME", "str"),)


@fields_op(Op.OP_ENABLE_ERASURE_CODING_POLICY, _POLICY, True)
class EnableErasureCodingPolicyOp(FieldsOp):
    txid: int
    _: KW_ONLY
    ec_policy_name: str
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID


@fields_op(Op.OP_DISABLE_ERASURE_CODING_POLICY, _POLICY, True)
class DisableErasureCodingPolicyOp(FieldsOp):
    txid: int
    _: KW_ONLY
    ec_policy_name: str
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID


@fields_op(Op.OP_REMOVE_ERASURE_CODING_POLICY, _POLICY, True)
class RemoveErasureCodingPolicyOp(FieldsOp):
    txid: int
    _: KW_ONLY
    ec_policy_name: str
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID
