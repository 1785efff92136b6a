"""Primitive encodings of Hadoop's edit-log op bodies (HADOOP-QJM-DIGEST.md §4.4). Pure.

Everything here is big-endian, as Java's DataOutput writes it:

* the uint16-length "UTF8" string (``FSImageSerialization.writeString``, i.e. Hadoop's
  DeprecatedUTF8): every UTF-16 code unit is encoded on its own in 1, 2 or 3 bytes, so a
  surrogate pair takes 6 bytes (CESU-8-like) and NUL is a plain 0x00;
* the VInt-length ``Text`` string (standard UTF-8) used by PermissionStatus;
* Hadoop's VInt/VLong (``WritableUtils``);
* Block, the ``ArrayWritable<Block>`` and the compact block array, PermissionStatus,
  rpc ids, ACL entries and the length-delimited ``XAttrEditLogProto``.

Decoding goes through :class:`ByteReader`, a cursor over one op body that never reads past
the body's end: a short body raises :class:`EditLogCorruptionError`, never an allocation
driven by an untrusted length.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass, field

from hadoop_qjm.common.exceptions import EditLogCorruptionError
from hadoop_qjm.common.protobuf_wire import encode_varint

__all__ = [
    "ByteReader",
    "Block",
    "PermissionStatus",
    "AclEntry",
    "XAttr",
    "DUMMY_CLIENT_ID",
    "INVALID_CALL_ID",
    "MAX_UTF8_CHARS",
    "to_int64",
    "encode_vlong",
    "encode_utf8",
    "decode_utf8_bytes",
    "encode_text",
    "encode_block_array",
    "encode_compact_block_array",
    "encode_rpc_ids",
    "encode_acl_entries",
    "encode_xattrs",
    "encode_acl_proto",
    "client_id_to_string",
    "fs_action_symbol",
    "ACL_SCOPES",
    "ACL_TYPES",
    "XATTR_NAMESPACES",
]

I8 = struct.Struct(">b")
U8 = struct.Struct(">B")
I16 = struct.Struct(">h")
U16 = struct.Struct(">H")
I32 = struct.Struct(">i")
U32 = struct.Struct(">I")
I64 = struct.Struct(">q")
_BLOCK = struct.Struct(">qqq")

#: RpcConstants.DUMMY_CLIENT_ID / INVALID_CALL_ID: an op logged without retry-cache ids.
DUMMY_CLIENT_ID = b""
INVALID_CALL_ID = -2

#: UTF8.set() truncates longer strings (0xffff / 3 UTF-16 code units) with a warning.
MAX_UTF8_CHARS = 0xFFFF // 3

#: AclEntryScope, AclEntryType and FsAction, by ordinal (the edit log stores ordinals).
ACL_SCOPES = ("ACCESS", "DEFAULT")
ACL_TYPES = ("USER", "GROUP", "MASK", "OTHER")
_FS_ACTION_SYMBOLS = ("---", "--x", "-w-", "-wx", "r--", "r-x", "rw-", "rwx")
#: XAttrProto.XAttrNamespaceProto, by wire value.
XATTR_NAMESPACES = ("USER", "TRUSTED", "SECURITY", "SYSTEM", "RAW")

_INT64_MIN = -(1 << 63)
_UINT64 = 1 << 64


def to_int64(value: int) -> int:
    """Wrap ``value`` into a Java long, as Java's long arithmetic does."""
    value &= _UINT64 - 1
    return value - _UINT64 if value >= 1 << 63 else value


def fs_action_symbol(perm: int) -> str:
    """FsAction.SYMBOL for an ordinal 0..7 (``rwx`` etc.)."""
    return _FS_ACTION_SYMBOLS[perm & 7]


# ---- VInt / VLong (WritableUtils) ------------------------------------------------------------


def encode_vlong(value: int) -> bytes:
    """WritableUtils.writeVLong: 1 byte for -112..127, else a length byte and 1..8 BE bytes."""
    if -112 <= value <= 127:
        return I8.pack(value)
    if not _INT64_MIN <= value < 1 << 63:
        raise ValueError(f"VLong out of range: {value}")
    marker = -112
    if value < 0:
        value = ~value  # one's complement: the magnitude bytes of a negative value
        marker = -120
    nbytes = (value.bit_length() + 7) // 8
    return I8.pack(marker - nbytes) + value.to_bytes(nbytes, "big")


# ---- strings ---------------------------------------------------------------------------------


def encode_utf8(text: str) -> bytes:
    """FSImageSerialization.writeString: uint16 byte length, then one 1-3 byte unit per char.

    Java works on UTF-16 code units, so a supplementary character is written as its two
    surrogates (3 bytes each). Longer strings are truncated to ``MAX_UTF8_CHARS`` code units,
    as Hadoop's UTF8.set() does.
    """
    if text.isascii() and len(text) <= MAX_UTF8_CHARS:
        data = text.encode("ascii")
    else:
        data = _encode_utf8_chars(text)
    return U16.pack(len(data)) + data


def _encode_utf8_chars(text: str) -> bytes:
    if max(text) <= "\uffff" and not any("\ud800" <= c <= "\udfff" for c in text):
        # No surrogates anywhere: standard UTF-8 equals the per-code-unit encoding.
        units_len = len(text)
        if units_len <= MAX_UTF8_CHARS:
            return text.encode("utf-8")
    raw = text.encode("utf-16-be", "surrogatepass")
    units = struct.unpack(f">{len(raw) // 2}H", raw)[:MAX_UTF8_CHARS]
    out = bytearray()
    for code in units:
        if code <= 0x7F:
            out.append(code)
        elif code <= 0x7FF:
            out += bytes((0xC0 | (code >> 6), 0x80 | (code & 0x3F)))
        else:
            out += bytes((0xE0 | (code >> 12), 0x80 | ((code >> 6) & 0x3F), 0x80 | (code & 0x3F)))
    return bytes(out)


def decode_utf8_bytes(data: bytes) -> str:
    """Decode the bytes of a "UTF8" string as Hadoop's UTF8.readChars does."""
    if data.isascii():
        return data.decode("ascii")
    try:
        # Standard UTF-8 (no encoded surrogates, no overlong forms) decodes identically.
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    units: list[int] = []
    i, n = 0, len(data)
    while i < n:
        b = data[i]
        if b < 0x80:
            units.append(b)
            i += 1
        elif b & 0xE0 == 0xC0:
            if i + 1 >= n:
                raise EditLogCorruptionError(f"Truncated UTF8 at {data[i:].hex()}")
            units.append(((b & 0x1F) << 6) | (data[i + 1] & 0x3F))
            i += 2
        elif b & 0xF0 == 0xE0:
            if i + 2 >= n:
                raise EditLogCorruptionError(f"Truncated UTF8 at {data[i:].hex()}")
            units.append(((b & 0x0F) << 12) | ((data[i + 1] & 0x3F) << 6) | (data[i + 2] & 0x3F))
            i += 3
        elif b & 0xF8 == 0xF0:
            if i + 3 >= n:
                raise EditLogCorruptionError(f"Truncated UTF8 at {data[i:].hex()}")
            cp = (
                ((b & 0x07) << 18)
                | ((data[i + 1] & 0x3F) << 12)
                | ((data[i + 2] & 0x3F) << 6)
                | (data[i + 3] & 0x3F)
            )
            if cp > 0x10FFFF:
                raise EditLogCorruptionError(f"Invalid UTF8 at {data[i : i + 4].hex()}")
            if cp >= 0x10000:  # Java appends it as a surrogate pair
                cp -= 0x10000
                units += (0xD800 | (cp >> 10), 0xDC00 | (cp & 0x3FF))
            else:
                units.append(cp)
            i += 4
        else:
            raise EditLogCorruptionError(f"Invalid UTF8 at {data[i : i + 6].hex()}")
    # Pairs of surrogates become one character; a lone surrogate stays as it is (as in Java).
    return struct.pack(f">{len(units)}H", *units).decode("utf-16-be", "surrogatepass")


def encode_text(text: str) -> bytes:
    """Text.writeString: VInt byte length, then standard UTF-8 (unencodable chars become ?)."""
    data = text.encode("utf-8", "replace")
    return encode_vlong(len(data)) + data


# ---- composite values ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Block:
    """A block: id, length in bytes and generation stamp."""

    block_id: int
    num_bytes: int
    gen_stamp: int


@dataclass(frozen=True, slots=True)
class PermissionStatus:
    """Owner, group and mode of an inode (the mode is the raw 16-bit FsPermission short)."""

    user: str
    group: str
    mode: int
    _encoded: bytes | None = field(default=None, init=False, repr=False, compare=False)

    @property
    def encoded(self) -> bytes:
        """Text user, Text group, int16 mode; computed once (hot in MKDIR encoding)."""
        data = self._encoded
        if data is None:
            data = encode_text(self.user) + encode_text(self.group) + U16.pack(self.mode & 0xFFFF)
            object.__setattr__(self, "_encoded", data)
        return data


@dataclass(frozen=True, slots=True)
class AclEntry:
    """One extended ACL entry, as ordinals (see ACL_SCOPES, ACL_TYPES, fs_action_symbol)."""

    scope: int
    type: int
    perm: int
    name: str | None = None


@dataclass(frozen=True, slots=True)
class XAttr:
    """One extended attribute; ``namespace`` indexes XATTR_NAMESPACES."""

    namespace: int
    name: str
    value: bytes | None = None


def encode_block_array(blocks: tuple[Block, ...]) -> bytes:
    """ArrayWritable<Block>: int32 count, then (id, numBytes, genStamp) as three int64."""
    return I32.pack(len(blocks)) + b"".join(
        _BLOCK.pack(b.block_id, b.num_bytes, b.gen_stamp) for b in blocks
    )


def encode_compact_block_array(blocks: tuple[Block, ...]) -> bytes:
    """VInt count, then per block its id and VLong deltas of size and genstamp."""
    parts = [encode_vlong(len(blocks))]
    prev_size = prev_gs = 0
    for b in blocks:
        parts.append(I64.pack(b.block_id))
        parts.append(encode_vlong(to_int64(b.num_bytes - prev_size)))
        parts.append(encode_vlong(to_int64(b.gen_stamp - prev_gs)))
        prev_size, prev_gs = b.num_bytes, b.gen_stamp
    return b"".join(parts)


def encode_rpc_ids(client_id: bytes, call_id: int) -> bytes:
    """FSImageSerialization.writeBytes(clientId) (int16 length + bytes), then int32 callId."""
    return I16.pack(len(client_id)) + client_id + I32.pack(call_id)


def client_id_to_string(client_id: bytes) -> str:
    """ClientId.toString: "" when absent, else the 16 bytes as a UUID."""
    if not client_id:
        return ""
    if len(client_id) == 16:
        return str(uuid.UUID(bytes=bytes(client_id)))
    return client_id.hex()  # Hadoop would refuse; show something rather than fail


def encode_acl_entries(entries: tuple[AclEntry, ...]) -> bytes:
    """int32 count, then per entry one byte scope<<5|type<<3|perm (bit 6: a name follows)."""
    parts = [I32.pack(len(entries))]
    for e in entries:
        v = ((e.scope & 1) << 5) | ((e.type & 3) << 3) | (e.perm & 7)
        if e.name is not None:
            parts.append(U8.pack(v | 0x40))
            parts.append(encode_utf8(e.name))
        else:
            parts.append(U8.pack(v))
    return b"".join(parts)


def _pb_bytes(field_no: int, data: bytes) -> bytes:
    return encode_varint(field_no << 3 | 2) + encode_varint(len(data)) + data


def encode_xattrs(xattrs: tuple[XAttr, ...], src: str | None = None) -> bytes:
    """A length-delimited XAttrEditLogProto holding ``xattrs`` (``00`` when there are none),
    and ``src`` first when given (OP_SET_XATTR and OP_REMOVE_XATTR carry their path in it)."""
    msg = bytearray() if src is None else bytearray(_pb_bytes(1, src.encode("utf-8")))
    for x in xattrs:
        item = (
            encode_varint(1 << 3)
            + encode_varint(x.namespace)
            + _pb_bytes(2, x.name.encode("utf-8"))
        )
        if x.value is not None:
            item += _pb_bytes(3, x.value)
        msg += _pb_bytes(2, item)
    return encode_varint(len(msg)) + bytes(msg)


def encode_acl_proto(src: str, entries: tuple[AclEntry, ...]) -> bytes:
    """A length-delimited AclEditLogProto (OP_SET_ACL): src, then one AclEntryProto each.

    An AclEntryProto is type (1), scope (2), permissions (3) and an optional name (4): the
    enums' wire values are the ordinals of ACL_TYPES, ACL_SCOPES and FsAction.
    """
    msg = bytearray(_pb_bytes(1, src.encode("utf-8")))
    for e in entries:
        item = bytes((0x08, e.type & 3, 0x10, e.scope & 1, 0x18, e.perm & 7))
        if e.name is not None:
            item += _pb_bytes(4, e.name.encode("utf-8"))
        msg += _pb_bytes(2, item)
    return encode_varint(len(msg)) + bytes(msg)


# ---- decoding --------------------------------------------------------------------------------


# Encoded PermissionStatus -> the value: a log holds few distinct owners.
_PERMISSION_CACHE: dict[bytes, PermissionStatus] = {}
_PERMISSION_CACHE_SIZE = 1024


class ByteReader:
    """A cursor over one op body. Every read is bounds-checked against the body's end."""

    __slots__ = ("data", "pos", "end")

    def __init__(self, data: bytes | memoryview, pos: int = 0, end: int | None = None) -> None:
        self.data = data
        self.pos = pos
        self.end = len(data) if end is None else end

    def _need(self, n: int) -> int:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise EditLogCorruptionError(
                f"op body too short: need {n} bytes at body offset {p}, body ends at {self.end}"
            )
        self.pos = p + n
        return p

    def remaining(self) -> int:
        return self.end - self.pos

    def unpack(self, fmt: struct.Struct) -> tuple:
        """Several fixed-size fields at once."""
        return fmt.unpack_from(self.data, self._need(fmt.size))

    def skip_if(self, expected: bytes) -> bool:
        """Consume ``expected`` if the next bytes are exactly it."""
        p = self.pos
        end = p + len(expected)
        if end <= self.end and self.data[p:end] == expected:
            self.pos = end
            return True
        return False

    def i8(self) -> int:
        return I8.unpack_from(self.data, self._need(1))[0]

    def u8(self) -> int:
        return U8.unpack_from(self.data, self._need(1))[0]

    def boolean(self) -> bool:
        return self.u8() != 0

    def i16(self) -> int:
        return I16.unpack_from(self.data, self._need(2))[0]

    def u16(self) -> int:
        return U16.unpack_from(self.data, self._need(2))[0]

    def i32(self) -> int:
        return I32.unpack_from(self.data, self._need(4))[0]

    def i64(self) -> int:
        return I64.unpack_from(self.data, self._need(8))[0]

    def raw(self, n: int) -> bytes:
        p = self._need(n)
        return bytes(self.data[p : p + n])

    def vlong(self) -> int:
        """WritableUtils.readVLong."""
        first = self.i8()
        if first >= -112:
            return first
        nbytes = (-119 - first) if first < -120 else (-111 - first)
        value = int.from_bytes(self.raw(nbytes - 1), "big")
        return ~value if first < -120 else value

    def vint(self) -> int:
        """WritableUtils.readVInt: a VLong that must fit in an int."""
        value = self.vlong()
        if not -(1 << 31) <= value < 1 << 31:
            raise EditLogCorruptionError("value too long to fit in integer")
        return value

    def utf8(self) -> str:
        """FSImageSerialization.readString (uint16 length, per-code-unit UTF8)."""
        return decode_utf8_bytes(self.raw(self.u16()))

    def text(self) -> str:
        """Text.readString (VInt length, standard UTF-8)."""
        n = self.vint()
        if n < 0:
            raise EditLogCorruptionError(f"negative Text length {n}")
        return self.raw(n).decode("utf-8", "replace")

    def permission_status(self) -> PermissionStatus:
        """A PermissionStatus; the few distinct ones of a log are decoded once each."""
        data, start = self.data, self.pos
        # Fast path: user and group under 128 bytes, so each length is a one-byte VInt.
        user_len = data[start] if start < self.end else 255
        if user_len < 128 and start + 1 + user_len < self.end:
            group_len = data[start + 1 + user_len]
            end = start + user_len + group_len + 4
            if group_len < 128 and end <= self.end:
                cached = _PERMISSION_CACHE.get(bytes(data[start:end]))
                if cached is not None:
                    self.pos = end
                    return cached
        user = self.text()
        group = self.text()
        perm = PermissionStatus(user, group, self.u16())
        if len(_PERMISSION_CACHE) >= _PERMISSION_CACHE_SIZE:
            _PERMISSION_CACHE.clear()
        _PERMISSION_CACHE[bytes(data[start : self.pos])] = perm
        return perm

    def block(self) -> Block:
        block_id, num_bytes, gen_stamp = _BLOCK.unpack_from(self.data, self._need(24))
        if num_bytes < 0:
            raise EditLogCorruptionError(f"Unexpected block size: {num_bytes}")
        return Block(block_id, num_bytes, gen_stamp)

    def block_array(self) -> tuple[Block, ...]:
        count = self.i32()
        if count < 0:
            raise EditLogCorruptionError("invalid negative number of blocks")
        if count * 24 > self.remaining():
            raise EditLogCorruptionError(f"invalid number of blocks: {count}")
        return tuple(self.block() for _ in range(count))

    def compact_block_array(self) -> tuple[Block, ...]:
        count = self.vint()
        if count < 0:
            raise EditLogCorruptionError(f"Invalid block array length: {count}")
        if count * 10 > self.remaining():  # each block takes at least 8 + 1 + 1 bytes
            raise EditLogCorruptionError(f"Invalid block array length: {count}")
        blocks = []
        size = gs = 0
        for _ in range(count):
            block_id = self.i64()
            size = to_int64(size + self.vlong())
            gs = to_int64(gs + self.vlong())
            blocks.append(Block(block_id, size, gs))
        return tuple(blocks)

    def rpc_ids(self) -> tuple[bytes, int]:
        n = self.i16()
        if n < 0:
            raise EditLogCorruptionError(f"negative rpc client id length {n}")
        client_id = self.raw(n)
        return client_id, self.i32()

    def acl_entries(self) -> tuple[AclEntry, ...]:
        count = self.i32()
        if count < 0 or count > self.remaining():
            raise EditLogCorruptionError(f"invalid number of ACL entries: {count}")
        entries = []
        for _ in range(count):
            v = self.u8()
            name = self.utf8() if v & 0x40 else None
            entries.append(AclEntry((v >> 5) & 1, (v >> 3) & 3, v & 7, name))
        return tuple(entries)

    def _pb_varint(self) -> int:
        value = shift = 0
        while True:
            b = self.u8()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise EditLogCorruptionError("malformed protobuf varint")

    def _pb_skip(self, wire_type: int) -> None:
        if wire_type == 0:
            self._pb_varint()
        elif wire_type == 1:
            self._need(8)
        elif wire_type == 2:
            self._need(self._pb_varint())
        elif wire_type == 5:
            self._need(4)
        else:
            raise EditLogCorruptionError(f"unsupported protobuf wire type {wire_type}")

    def xattrs(self) -> tuple[XAttr, ...]:
        """A length-delimited XAttrEditLogProto; its ``src`` and unknown fields are skipped."""
        return self.xattr_proto()[1]

    def xattr_proto(self) -> tuple[str | None, tuple[XAttr, ...]]:
        """A length-delimited XAttrEditLogProto: (its src or None, its xattrs)."""
        return self._delimited_list(ByteReader._xattr)

    def acl_proto(self) -> tuple[str | None, tuple[AclEntry, ...]]:
        """A length-delimited AclEditLogProto: (its src, its entries)."""
        return self._delimited_list(ByteReader._acl_entry)

    def _delimited_list(self, read_item) -> tuple:
        """A length-delimited message of an optional string field 1 and repeated field 2."""
        size = self._pb_varint()
        outer = ByteReader(self.data, self._need(size), self.pos)
        src: str | None = None
        found = []
        while outer.remaining():
            tag = outer._pb_varint()
            if tag == (2 << 3 | 2):
                item_len = outer._pb_varint()
                found.append(read_item(ByteReader(self.data, outer._need(item_len), outer.pos)))
            elif tag == (1 << 3 | 2):
                src = outer.raw(outer._pb_varint()).decode("utf-8", "replace")
            else:
                outer._pb_skip(tag & 7)
        return src, tuple(found)

    def _acl_entry(self) -> AclEntry:
        values: dict[int, int] = {}
        name: str | None = None
        while self.remaining():
            tag = self._pb_varint()
            if tag in (1 << 3, 2 << 3, 3 << 3):
                values[tag >> 3] = self._pb_varint()
            elif tag == (4 << 3 | 2):
                name = self.raw(self._pb_varint()).decode("utf-8", "replace")
            else:
                self._pb_skip(tag & 7)
        if len(values) != 3 or values[1] > 3 or values[2] > 1 or values[3] > 7:
            raise EditLogCorruptionError(
                f"AclEntryProto lacks a field or is out of range: {values}"
            )
        return AclEntry(values[2], values[1], values[3], name)

    def _xattr(self) -> XAttr:
        namespace: int | None = None
        name: str | None = None
        value: bytes | None = None
        while self.remaining():
            tag = self._pb_varint()
            if tag == (1 << 3 | 0):
                namespace = self._pb_varint()
            elif tag == (2 << 3 | 2):
                name = self.raw(self._pb_varint()).decode("utf-8", "replace")
            elif tag == (3 << 3 | 2):
                value = self.raw(self._pb_varint())
            else:
                self._pb_skip(tag & 7)
        if namespace is None or name is None or namespace >= len(XATTR_NAMESPACES):
            raise EditLogCorruptionError("XAttrProto lacks its namespace or name")
        return XAttr(namespace, name, value)
