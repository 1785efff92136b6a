"""The few pieces of protobuf's wire format the project writes by hand (pure).

Hadoop stores some records as protobuf messages: the xattrs and ACL entries inside edit-log
ops (:mod:`hadoop_qjm.editlog.edit_log_codec`), the ZKFC's ActiveNodeInfo in ZooKeeper
(:mod:`hadoop_qjm.ha.election_rules`), the JournalNode's paxos record
(:mod:`hadoop_qjm.qjournal.server.paxos_record`). They need only varints and
length-delimited fields; a reader skips the fields it does not know, as protobuf's
parsers do.
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = [
    "WIRE_FIXED32",
    "WIRE_FIXED64",
    "WIRE_LEN",
    "WIRE_VARINT",
    "decode_varint",
    "encode_len_field",
    "encode_varint",
    "encode_varint_field",
    "iter_fields",
]

WIRE_VARINT = 0
WIRE_FIXED64 = 1
WIRE_LEN = 2
WIRE_FIXED32 = 5

_UINT64_MASK = (1 << 64) - 1
#: A varint encodes at most 64 bits: ten bytes.
_MAX_VARINT_BYTES = 10


def encode_varint(value: int) -> bytes:
    """A non-negative integer as a base-128 varint (a negative int32 must be passed as its
    64-bit two's complement, as protobuf encodes it)."""
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def encode_varint_field(field: int, value: int) -> bytes:
    """Field ``field`` as a varint: uint64, int64 (a negative value as its two's complement,
    ten bytes) or bool (0/1)."""
    return encode_varint(field << 3 | WIRE_VARINT) + encode_varint(value & _UINT64_MASK)


def encode_len_field(field: int, payload: bytes) -> bytes:
    """Field ``field`` as a length-delimited value: bytes, a string's UTF-8, a message."""
    return encode_varint(field << 3 | WIRE_LEN) + encode_varint(len(payload)) + payload


def decode_varint(data: bytes, pos: int) -> tuple[int, int]:
    """The varint at ``data[pos:]`` and the position after it.

    ValueError if the data ends inside it or it is longer than ten bytes (protobuf's
    "malformed varint"); bits beyond the 64th are dropped, as Java's parser drops them.
    """
    result = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= len(data):
            raise ValueError("the data ends inside a varint")
        byte = data[pos + i]
        result |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            return result & _UINT64_MASK, pos + i + 1
    raise ValueError("malformed varint (longer than ten bytes)")


def iter_fields(data: bytes) -> Iterator[tuple[int, int, int | bytes]]:
    """``(field number, wire type, value)`` for each field of the message ``data``.

    A varint's value is an int (unsigned 64-bit), a length-delimited value is its bytes,
    a fixed32/fixed64 value its raw bytes. ValueError for a message cut short, field number
    0, or a wire type other than those four (groups are deprecated; nothing we read has
    them).
    """
    pos = 0
    while pos < len(data):
        key, pos = decode_varint(data, pos)
        field, wire_type = key >> 3, key & 7
        if field == 0:
            raise ValueError("field number 0")
        value: int | bytes
        if wire_type == WIRE_VARINT:
            value, pos = decode_varint(data, pos)
        elif wire_type in (WIRE_LEN, WIRE_FIXED64, WIRE_FIXED32):
            if wire_type == WIRE_LEN:
                size, pos = decode_varint(data, pos)
            else:
                size = 8 if wire_type == WIRE_FIXED64 else 4
            if pos + size > len(data):
                raise ValueError(f"field {field} needs {size} bytes, {len(data) - pos} are left")
            value = bytes(data[pos : pos + size])
            pos += size
        else:
            raise ValueError(f"field {field} has unsupported wire type {wire_type}")
        yield field, wire_type, value
