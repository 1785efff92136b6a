"""The op classes of the edit log and their bodies at layout version -67. Pure.

Each class is named after Hadoop's inner class of FSEditLogOp and knows four things: how
to encode its body, how to decode it (:class:`ByteReader` keeps every read inside the
body), which elements Hadoop's offline edits viewer prints (``xml_fields``, in ``toXml``
order) and how to rebuild the op from them (``from_xml``, Hadoop's ``fromXml``). Every
opcode Hadoop reads at layout version -67 has its class (here, in
:mod:`~hadoop_qjm.editlog.edit_log_path_ops`, :mod:`~hadoop_qjm.editlog.edit_log_field_ops`,
:mod:`~hadoop_qjm.editlog.edit_log_token_ops` and
:mod:`~hadoop_qjm.editlog.edit_log_admin_ops`); each was checked byte-exact, both ways,
against Hadoop's ``editsStored`` and ``editsStored.xml``. An :class:`OpaqueOp` is an op of
another layout version: the JournalNode never looks inside a body, only at frames and
checksums.

Ops are "frozen-ish" slotted dataclasses: treat them as immutable values (they compare
and hash by value), but immutability is not enforced, because a frozen dataclass's
``__init__`` costs about 1 µs more per op (``object.__setattr__`` per field) and writers
create ops by the million. The ops that touch one or two paths (delete, rename, times,
permissions, owner, replication) are in :mod:`hadoop_qjm.editlog.edit_log_path_ops`;
framing (opcode, length, txid, CRC) is in :mod:`hadoop_qjm.editlog.fs_edit_log_op`.
"""

from __future__ import annotations

import struct
from dataclasses import KW_ONLY, dataclass, fields
from typing import ClassVar

from hadoop_qjm.common.exceptions import EditLogCorruptionError, IllegalArgumentException
from hadoop_qjm.editlog.edit_log_codec import (
    DUMMY_CLIENT_ID,
    I8,
    I16,
    I64,
    INVALID_CALL_ID,
    U8,
    AclEntry,
    Block,
    ByteReader,
    PermissionStatus,
    XAttr,
    decode_utf8_bytes,
    encode_acl_entries,
    encode_block_array,
    encode_compact_block_array,
    encode_rpc_ids,
    encode_utf8,
    encode_xattrs,
)
from hadoop_qjm.editlog.edit_log_xml import (
    InvalidXmlException,
    Stanza,
    XmlField,
    acl_from_xml,
    acl_xml,
    block_from_xml,
    block_xml,
    blocks_from_xml,
    permission_from_xml,
    permission_xml,
    rpc_from_xml,
    rpc_xml,
    xattr_xml,
    xattrs_from_xml,
    xml_bool,
    xml_byte,
    xml_long,
    xml_short,
)
from hadoop_qjm.editlog.fs_edit_log_op_codes import FSEditLogOpCodes

__all__ = [
    "FSEditLogOp",
    "XmlField",
    "StartLogSegmentOp",
    "EndLogSegmentOp",
    "MkdirOp",
    "AddOp",
    "CloseOp",
    "AddBlockOp",
    "OpaqueOp",
    "DEFAULT_PERMISSIONS",
    "FIRST_USER_INODE_ID",
    "permission_xml",
    "block_xml",
    "rpc_xml",
]

#: What MkdirOp.create() uses when not told otherwise: hdfs:supergroup rwxr-xr-x.
DEFAULT_PERMISSIONS = PermissionStatus("hdfs", "supergroup", 0o755)

#: INodeId.ROOT_INODE_ID is 16385; user inodes come after it.
FIRST_USER_INODE_ID = 16386

_TWO_I64 = struct.Struct(">qq")
_I64_U16 = struct.Struct(">qH")
# ACL count 0 and an empty XAttrEditLogProto: the tail of nearly every MKDIR body.
_NO_ACLS_NO_XATTRS = b"\x00\x00\x00\x00\x00"
_MKDIR_HEAD_CACHE: dict[int, struct.Struct] = {}
_new_object = object.__new__


class FSEditLogOp:
    """One edit-log transaction. Concrete ops are dataclasses with a ``txid`` field."""

    __slots__ = ()
    opcode: ClassVar[FSEditLogOpCodes]
    txid: int

    def encode_body(self) -> bytes:
        """The op-specific bytes between the txid and the checksum."""
        raise NotImplementedError

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> FSEditLogOp:
        """Read the body; the caller checks that every byte of it was used."""
        raise NotImplementedError

    def xml_fields(self) -> list[XmlField]:
        """The elements Hadoop's oev prints after TXID, in its order."""
        return []

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> FSEditLogOp:
        """The op whose ``<DATA>`` is ``st`` (FSEditLogOp.fromXml); TXID is already read."""
        raise NotImplementedError


@dataclass(slots=True, unsafe_hash=True)
class StartLogSegmentOp(FSEditLogOp):
    """OP_START_LOG_SEGMENT: the first transaction of every segment (empty body)."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_START_LOG_SEGMENT
    txid: int

    def encode_body(self) -> bytes:
        return b""

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> StartLogSegmentOp:
        return cls(txid)

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> StartLogSegmentOp:
        return cls(txid)


@dataclass(slots=True, unsafe_hash=True)
class EndLogSegmentOp(FSEditLogOp):
    """OP_END_LOG_SEGMENT: the last transaction of a cleanly closed segment (empty body)."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_END_LOG_SEGMENT
    txid: int

    def encode_body(self) -> bytes:
        return b""

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> EndLogSegmentOp:
        return cls(txid)

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> EndLogSegmentOp:
        return cls(txid)


@dataclass(slots=True, unsafe_hash=True)
class MkdirOp(FSEditLogOp):
    """OP_MKDIR. ``atime`` is None when it equals ``timestamp`` (what Hadoop always writes)."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_MKDIR
    txid: int
    _: KW_ONLY
    inode_id: int
    path: str
    timestamp: int
    permissions: PermissionStatus
    acl_entries: tuple[AclEntry, ...] = ()
    xattrs: tuple[XAttr, ...] = ()
    atime: int | None = None

    @classmethod
    def create(
        cls,
        txid: int,
        path: str,
        *,
        inode_id: int | None = None,
        timestamp: int = 0,
        permissions: PermissionStatus = DEFAULT_PERMISSIONS,
    ) -> MkdirOp:
        """A plain MKDIR; the inode id defaults to one derived from the txid."""
        if inode_id is None:
            inode_id = FIRST_USER_INODE_ID + txid
        if cls is not MkdirOp:
            return cls(
                txid, inode_id=inode_id, path=path, timestamp=timestamp, permissions=permissions
            )
        # Writers create MKDIRs by the million: filling the slots directly is what the
        # dataclass __init__ does, without the cost of its keyword-only call.
        op = _new_object(cls)
        op.txid = txid
        op.inode_id = inode_id
        op.path = path
        op.timestamp = timestamp
        op.permissions = permissions
        op.acl_entries = ()
        op.xattrs = ()
        op.atime = None
        return op

    def encode_body(self) -> bytes:
        path = self.path
        # Hot path of every benchmark and test writer: an ASCII path, no ACLs, no xattrs.
        if path.isascii() and len(path) <= 0xFFFF // 3:
            n = len(path)
            head = _MKDIR_HEAD_CACHE.get(n)
            if head is None:
                head = _MKDIR_HEAD_CACHE.setdefault(n, struct.Struct(f">qH{n}sqq"))
            ts = self.timestamp
            fixed = head.pack(
                self.inode_id, n, path.encode("ascii"), ts, ts if self.atime is None else self.atime
            )
            if not self.acl_entries and not self.xattrs:
                return fixed + self.permissions.encoded + _NO_ACLS_NO_XATTRS
            return b"".join(
                (
                    fixed,
                    self.permissions.encoded,
                    encode_acl_entries(self.acl_entries),
                    encode_xattrs(self.xattrs),
                )
            )
        ts = self.timestamp
        return b"".join(
            (
                I64.pack(self.inode_id),
                encode_utf8(path),
                _TWO_I64.pack(ts, ts if self.atime is None else self.atime),
                self.permissions.encoded,
                encode_acl_entries(self.acl_entries),
                encode_xattrs(self.xattrs),
            )
        )

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> MkdirOp:
        inode_id, path_len = reader.unpack(_I64_U16)
        path = decode_utf8_bytes(reader.raw(path_len))
        # Hadoop reads the atime and ignores it; it is kept for byte-exact re-encoding.
        timestamp, atime = reader.unpack(_TWO_I64)
        permissions = reader.permission_status()
        if reader.skip_if(_NO_ACLS_NO_XATTRS):
            acl_entries: tuple[AclEntry, ...] = ()
            xattrs: tuple[XAttr, ...] = ()
        else:
            acl_entries = reader.acl_entries()
            xattrs = reader.xattrs()
        return cls(
            txid,
            inode_id=inode_id,
            path=path,
            timestamp=timestamp,
            permissions=permissions,
            acl_entries=acl_entries,
            xattrs=xattrs,
            atime=None if atime == timestamp else atime,
        )

    def xml_fields(self) -> list[XmlField]:
        return [
            ("LENGTH", "0"),
            ("INODEID", str(self.inode_id)),
            ("PATH", self.path),
            ("TIMESTAMP", str(self.timestamp)),
            permission_xml(self.permissions),
            *acl_xml(self.acl_entries),
            *xattr_xml(self.xattrs),
        ]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> MkdirOp:
        return cls(
            txid,
            inode_id=xml_long(st, "INODEID"),
            path=st.get("PATH"),
            timestamp=xml_long(st, "TIMESTAMP"),
            permissions=permission_from_xml(st),
            acl_entries=acl_from_xml(st),
            xattrs=xattrs_from_xml(st),
        )


# MkdirOp.create fills these slots itself: keep it in step with the fields.
if [f.name for f in fields(MkdirOp)] != [
    "txid",
    "inode_id",
    "path",
    "timestamp",
    "permissions",
    "acl_entries",
    "xattrs",
    "atime",
]:  # pragma: no cover
    raise ImportError("MkdirOp's fields changed: update MkdirOp.create")


@dataclass(slots=True, unsafe_hash=True)
class _AddCloseOp(FSEditLogOp):
    """The fields OP_ADD and OP_CLOSE share (Hadoop's AddCloseOp)."""

    txid: int
    _: KW_ONLY
    inode_id: int
    path: str
    replication: int
    mtime: int
    atime: int
    block_size: int
    permissions: PermissionStatus
    blocks: tuple[Block, ...] = ()

    def _common_body(self) -> bytes:
        return b"".join(
            (
                I64.pack(self.inode_id),
                encode_utf8(self.path),
                I16.pack(self.replication),
                I64.pack(self.mtime),
                I64.pack(self.atime),
                I64.pack(self.block_size),
                encode_block_array(self.blocks),
                self.permissions.encoded,
            )
        )

    @staticmethod
    def _read_common(reader: ByteReader) -> dict:
        return {
            "inode_id": reader.i64(),
            "path": reader.utf8(),
            "replication": reader.i16(),
            "mtime": reader.i64(),
            "atime": reader.i64(),
            "block_size": reader.i64(),
            "blocks": reader.block_array(),
            "permissions": reader.permission_status(),
        }

    def _common_xml(self, client_name: str, client_machine: str, overwrite: bool) -> list[XmlField]:
        return [
            ("LENGTH", "0"),
            ("INODEID", str(self.inode_id)),
            ("PATH", self.path),
            ("REPLICATION", str(self.replication)),
            ("MTIME", str(self.mtime)),
            ("ATIME", str(self.atime)),
            ("BLOCKSIZE", str(self.block_size)),
            ("CLIENT_NAME", client_name),
            ("CLIENT_MACHINE", client_machine),
            ("OVERWRITE", "true" if overwrite else "false"),
            *(block_xml(b) for b in self.blocks),
            permission_xml(self.permissions),
        ]

    @staticmethod
    def _common_from_xml(st: Stanza) -> dict:
        return {
            "inode_id": xml_long(st, "INODEID"),
            "path": st.get("PATH"),
            "replication": xml_short(st, "REPLICATION"),
            "mtime": xml_long(st, "MTIME"),
            "atime": xml_long(st, "ATIME"),
            "block_size": xml_long(st, "BLOCKSIZE"),
            "blocks": blocks_from_xml(st),
            "permissions": permission_from_xml(st),
        }


@dataclass(slots=True, unsafe_hash=True)
class AddOp(_AddCloseOp):
    """OP_ADD: create (or re-open for append) a file; carries the client and rpc ids."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_ADD
    _: KW_ONLY
    acl_entries: tuple[AclEntry, ...] = ()
    xattrs: tuple[XAttr, ...] = ()
    client_name: str = ""
    client_machine: str = ""
    overwrite: bool = False
    storage_policy_id: int = 0
    erasure_coding_policy_id: int = 0
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self) -> bytes:
        return b"".join(
            (
                self._common_body(),
                encode_acl_entries(self.acl_entries),
                encode_xattrs(self.xattrs),
                encode_utf8(self.client_name),
                encode_utf8(self.client_machine),
                U8.pack(1 if self.overwrite else 0),
                I8.pack(self.storage_policy_id),
                I8.pack(self.erasure_coding_policy_id),
                encode_rpc_ids(self.rpc_client_id, self.rpc_call_id),
            )
        )

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> AddOp:
        common = cls._read_common(reader)
        acl_entries = reader.acl_entries()
        xattrs = reader.xattrs()
        client_name = reader.utf8()
        client_machine = reader.utf8()
        overwrite = reader.boolean()
        storage_policy_id = reader.i8()
        erasure_coding_policy_id = reader.i8()
        client_id, call_id = reader.rpc_ids()
        return cls(
            txid,
            **common,
            acl_entries=acl_entries,
            xattrs=xattrs,
            client_name=client_name,
            client_machine=client_machine,
            overwrite=overwrite,
            storage_policy_id=storage_policy_id,
            erasure_coding_policy_id=erasure_coding_policy_id,
            rpc_client_id=client_id,
            rpc_call_id=call_id,
        )

    def xml_fields(self) -> list[XmlField]:
        return [
            *self._common_xml(self.client_name, self.client_machine, self.overwrite),
            *acl_xml(self.acl_entries),
            ("ERASURE_CODING_POLICY_ID", str(self.erasure_coding_policy_id)),
            *rpc_xml(self.rpc_client_id, self.rpc_call_id),
        ]

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> AddOp:
        # Hadoop's XML has no xattrs and no storage policy for OP_ADD: they come back empty.
        ec_policy = (
            xml_byte(st, "ERASURE_CODING_POLICY_ID") if st.has("ERASURE_CODING_POLICY_ID") else 0
        )
        return cls(
            txid,
            **cls._common_from_xml(st),
            acl_entries=acl_from_xml(st),
            client_name=st.get("CLIENT_NAME"),
            client_machine=st.get("CLIENT_MACHINE"),
            overwrite=st.has("OVERWRITE") and xml_bool(st, "OVERWRITE"),
            erasure_coding_policy_id=ec_policy,
            **rpc_from_xml(st),
        )


@dataclass(slots=True, unsafe_hash=True)
class CloseOp(_AddCloseOp):
    """OP_CLOSE: a file is complete; no client and no rpc ids."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_CLOSE

    def encode_body(self) -> bytes:
        return self._common_body()

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> CloseOp:
        return cls(txid, **cls._read_common(reader))

    def xml_fields(self) -> list[XmlField]:
        return self._common_xml("", "", False)

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> CloseOp:
        return cls(txid, **cls._common_from_xml(st))


@dataclass(slots=True, unsafe_hash=True)
class AddBlockOp(FSEditLogOp):
    """OP_ADD_BLOCK: the file's new last block, and the penultimate one when there is one."""

    opcode: ClassVar[FSEditLogOpCodes] = FSEditLogOpCodes.OP_ADD_BLOCK
    txid: int
    _: KW_ONLY
    path: str
    last_block: Block
    penultimate_block: Block | None = None
    rpc_client_id: bytes = DUMMY_CLIENT_ID
    rpc_call_id: int = INVALID_CALL_ID

    def encode_body(self) -> bytes:
        blocks = (
            (self.last_block,)
            if self.penultimate_block is None
            else (self.penultimate_block, self.last_block)
        )
        return b"".join(
            (
                encode_utf8(self.path),
                encode_compact_block_array(blocks),
                encode_rpc_ids(self.rpc_client_id, self.rpc_call_id),
            )
        )

    @classmethod
    def decode_body(cls, txid: int, reader: ByteReader) -> AddBlockOp:
        path = reader.utf8()
        blocks = reader.compact_block_array()
        if len(blocks) not in (1, 2):
            raise EditLogCorruptionError(f"ADD_BLOCK with {len(blocks)} blocks (expected 1 or 2)")
        client_id, call_id = reader.rpc_ids()
        return cls(
            txid,
            path=path,
            last_block=blocks[-1],
            penultimate_block=blocks[0] if len(blocks) == 2 else None,
            rpc_client_id=client_id,
            rpc_call_id=call_id,
        )

    def xml_fields(self) -> list[XmlField]:
        fields: list[XmlField] = [("PATH", self.path)]
        if self.penultimate_block is not None:
            fields.append(block_xml(self.penultimate_block))
        fields.append(block_xml(self.last_block))
        return fields + rpc_xml(self.rpc_client_id, self.rpc_call_id)

    @classmethod
    def from_xml(cls, txid: int, st: Stanza) -> AddBlockOp:
        blocks = st.all("BLOCK")
        if len(blocks) not in (1, 2):
            raise InvalidXmlException(f"OP_ADD_BLOCK with {len(blocks)} blocks (expected 1 or 2)")
        return cls(
            txid,
            path=st.get("PATH"),
            last_block=block_from_xml(blocks[-1]),
            penultimate_block=block_from_xml(blocks[0]) if len(blocks) == 2 else None,
            **rpc_from_xml(st),
        )


@dataclass(slots=True, unsafe_hash=True)
class OpaqueOp(FSEditLogOp):
    """An op of a layout version whose bodies we do not decode: its frame and checksum are
    still verified, its body kept as bytes."""

    opcode: FSEditLogOpCodes  # type: ignore[misc]  # an instance field here, a ClassVar elsewhere
    txid: int
    body: bytes

    def __post_init__(self) -> None:
        if not isinstance(self.opcode, FSEditLogOpCodes) or (
            self.opcode is FSEditLogOpCodes.OP_INVALID
        ):
            raise IllegalArgumentException(f"not an op's opcode: {self.opcode!r}")

    def encode_body(self) -> bytes:
        return self.body
