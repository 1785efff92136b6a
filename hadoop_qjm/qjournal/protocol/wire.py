"""Bytes on the wire: Thrift binary-protocol messages and structs, and their frames.

A call is one TFramedTransport frame (4-byte big-endian length, then the
payload) holding one strict TBinaryProtocol message: the message header
(version|type, name, seqid) and one struct (the call's ``<rpc>_args`` or
``<rpc>_result``). Stock Thrift clients and servers with a framed transport
and the binary protocol interoperate with ours.

Untrusted bytes are checked before thriftpy2 sees them: :func:`check_struct`
walks the encoding and rejects unknown types, negative or impossible lengths
and container sizes that the remaining bytes cannot hold. Without it a tiny
frame could make the decoder allocate a claimed 2 GiB string (the Cython
decoder mallocs the claimed length) or loop 2^31 times skipping elements of
an unknown type. Decoding then uses thriftpy2's pure-Python binary protocol
over a strict in-memory reader, so its work is bounded by the payload size.

No sockets here: see ``sockets.py``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, TypeVar

from thriftpy2.protocol.binary import TBinaryProtocol
from thriftpy2.thrift import TMessageType, TType

from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FRAME_HEADER",
    "ProtocolError",
    "MessageHeader",
    "TMessageType",
    "check_required",
    "check_struct",
    "decode_message_body",
    "decode_message_header",
    "encode_message",
    "frame",
    "thrift_from_bytes",
    "thrift_to_bytes",
]

#: ``ipc.maximum.data.length``'s default: the largest frame either side accepts.
DEFAULT_MAX_FRAME_SIZE = 64 * 1024 * 1024

#: The TFramedTransport length prefix.
FRAME_HEADER = struct.Struct(">i")

_I32 = struct.Struct(">i")
_VERSION_1 = -2147418112  # 0x80010000 as a signed i32
_VERSION_MASK = -65536  # 0xffff0000
_MAX_DEPTH = 64

# Encoded size of each fixed-width type, and the smallest encoding of the
# others, to bound container sizes by the bytes left.
_FIXED_SIZE = {
    TType.BOOL: 1,
    TType.BYTE: 1,
    TType.I16: 2,
    TType.I32: 4,
    TType.I64: 8,
    TType.DOUBLE: 8,
}
_MIN_SIZE = {
    **_FIXED_SIZE,
    TType.STRING: 4,
    TType.STRUCT: 1,
    TType.MAP: 6,
    TType.SET: 5,
    TType.LIST: 5,
}

T = TypeVar("T")


class ProtocolError(IOException):
    """The peer sent bytes that are not one well-formed framed Thrift message.

    The receiving side drops the connection: after garbage nothing further on
    it can be trusted to be aligned to a frame.
    """


class _Reader:
    """A strict read-only transport: a short read is an error, never a short result."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes | bytearray | memoryview, pos: int = 0) -> None:
        self._data = memoryview(data)
        self._pos = pos

    def read(self, size: int) -> bytes:
        end = self._pos + size
        if size < 0 or end > len(self._data):
            raise ProtocolError(f"truncated Thrift data: wanted {size} bytes at {self._pos}")
        chunk = bytes(self._data[self._pos : end])
        self._pos = end
        return chunk

    @property
    def remaining(self) -> int:
        return len(self._data) - self._pos


class _Writer:
    """A write-only transport collecting the pieces the protocol writes."""

    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def write(self, data: bytes) -> None:
        self._parts.append(data)

    def flush(self) -> None:
        pass

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


def _protocol(trans: Any) -> TBinaryProtocol:
    # strict_decode: a string field with invalid UTF-8 is an error, not bytes.
    return TBinaryProtocol(trans, strict_read=True, strict_write=True, strict_decode=True)


# ------------------------------------------------------------------ checking


def _i32_at(data: memoryview, pos: int) -> int:
    if pos + 4 > len(data):
        raise ProtocolError(f"truncated Thrift data: wanted 4 bytes at {pos}")
    return _I32.unpack_from(data, pos)[0]


def _check_count(data: memoryview, pos: int, count: int, min_size: int) -> None:
    if count < 0 or count * min_size > len(data) - pos:
        raise ProtocolError(f"impossible container size {count} at {pos}")


def _check_value(data: memoryview, pos: int, ttype: int, depth: int) -> int:
    """Return the position after one encoded value of ``ttype`` starting at ``pos``."""
    if ttype in _FIXED_SIZE:
        end = pos + _FIXED_SIZE[ttype]
    elif ttype == TType.STRING:
        size = _i32_at(data, pos)
        if size < 0:
            raise ProtocolError(f"negative string length {size} at {pos}")
        end = pos + 4 + size
    elif ttype == TType.STRUCT:
        if depth >= _MAX_DEPTH:
            raise ProtocolError("Thrift data nested too deeply")
        while True:
            if pos >= len(data):
                raise ProtocolError("truncated Thrift struct")
            ftype = data[pos]
            if ftype == TType.STOP:
                return pos + 1
            pos = _check_value(data, pos + 3, ftype, depth + 1)
    elif ttype in (TType.LIST, TType.SET):
        if depth >= _MAX_DEPTH or pos + 5 > len(data):
            raise ProtocolError("truncated or too deeply nested Thrift list")
        etype, count, pos = data[pos], _i32_at(data, pos + 1), pos + 5
        _check_count(data, pos, count, _MIN_SIZE.get(etype, 1))
        if etype in _FIXED_SIZE:
            return pos + count * _FIXED_SIZE[etype]
        for _ in range(count):
            pos = _check_value(data, pos, etype, depth + 1)
        return pos
    elif ttype == TType.MAP:
        if depth >= _MAX_DEPTH or pos + 6 > len(data):
            raise ProtocolError("truncated or too deeply nested Thrift map")
        ktype, vtype, count, pos = data[pos], data[pos + 1], _i32_at(data, pos + 2), pos + 6
        _check_count(data, pos, count, _MIN_SIZE.get(ktype, 1) + _MIN_SIZE.get(vtype, 1))
        for _ in range(count):
            pos = _check_value(data, pos, ktype, depth + 1)
            pos = _check_value(data, pos, vtype, depth + 1)
        return pos
    else:
        raise ProtocolError(f"unknown Thrift type {ttype} at {pos - 3}")
    if end > len(data):
        raise ProtocolError(f"truncated Thrift value of type {ttype} at {pos}")
    return end


def check_struct(data: bytes | bytearray | memoryview, pos: int = 0) -> int:
    """Check that one binary-encoded struct starts at ``pos``; return where it ends.

    Raises :class:`ProtocolError` for anything thriftpy2 should not be asked
    to decode (see the module docstring).
    """
    return _check_value(memoryview(data), pos, TType.STRUCT, 0)


def check_required(tobj: Any) -> Any:
    """Raise IllegalArgumentException if a ``required`` field of ``tobj`` (or of a
    struct inside it) is unset; return ``tobj``.

    Thrift itself does not enforce requiredness on either side; a peer that
    omits a field Hadoop requires gets a clear error instead of a ``None``
    deep inside the Journal.
    """
    for spec in tobj.thrift_spec.values():
        name, required = spec[1], spec[-1]
        value = getattr(tobj, name, None)
        if value is None:
            if required:
                raise IllegalArgumentException(
                    f"Missing required field '{name}' in {type(tobj).__name__}"
                )
        elif hasattr(value, "thrift_spec"):
            check_required(value)
        elif isinstance(value, list):
            for item in value:
                if hasattr(item, "thrift_spec"):
                    check_required(item)
    return tobj


# ------------------------------------------------------------------ structs


def thrift_to_bytes(tobj: Any) -> bytes:
    """Serialize one Thrift struct (or exception) with the binary protocol."""
    writer = _Writer()
    _protocol(writer).write_struct(tobj)
    return writer.getvalue()


def thrift_from_bytes(cls: type[T], data: bytes | bytearray | memoryview) -> T:
    """Deserialize one struct of class ``cls``; the data must hold exactly that struct."""
    end = check_struct(data)
    if end != len(data):
        raise ProtocolError(f"{len(data) - end} trailing bytes after a Thrift struct")
    obj = cls()
    try:
        _protocol(_Reader(data)).read_struct(obj)
    except ProtocolError:
        raise
    except Exception as e:  # struct.error, UnicodeDecodeError, … from thriftpy2
        raise ProtocolError(f"undecodable {cls.__name__}: {e}") from e
    return obj


# ------------------------------------------------------------------ messages


@dataclass(frozen=True)
class MessageHeader:
    """The header of a binary-protocol message; the body struct follows at ``body_offset``."""

    name: str
    type: int
    seqid: int
    body_offset: int


def encode_message(name: str, mtype: int, seqid: int, body: Any) -> bytes:
    """One message (header and body struct) as a frame payload (without the length)."""
    writer = _Writer()
    proto = _protocol(writer)
    proto.write_message_begin(name, mtype, seqid)
    proto.write_struct(body)
    proto.write_message_end()
    return writer.getvalue()


def frame(payload: bytes) -> bytes:
    """``payload`` with its TFramedTransport length prefix."""
    return FRAME_HEADER.pack(len(payload)) + payload


def decode_message_header(payload: bytes | bytearray | memoryview) -> MessageHeader:
    """Check that ``payload`` is exactly one strict binary message and read its header."""
    data = memoryview(payload)
    version = _i32_at(data, 0)
    if version >= 0 or (version & _VERSION_MASK) != _VERSION_1:
        raise ProtocolError(f"bad Thrift message version word {version & 0xFFFFFFFF:#010x}")
    mtype = version & 0xFF
    if mtype not in (TMessageType.CALL, TMessageType.REPLY, TMessageType.EXCEPTION):
        raise ProtocolError(f"unsupported Thrift message type {mtype}")
    name_len = _i32_at(data, 4)
    if name_len < 0 or 8 + name_len + 4 > len(data):
        raise ProtocolError(f"bad Thrift message name length {name_len}")
    try:
        name = bytes(data[8 : 8 + name_len]).decode("utf-8")
    except UnicodeDecodeError as e:
        raise ProtocolError("Thrift message name is not UTF-8") from e
    seqid = _i32_at(data, 8 + name_len)
    body_offset = 12 + name_len
    end = check_struct(data, body_offset)
    if end != len(data):
        raise ProtocolError(f"{len(data) - end} trailing bytes after a Thrift message")
    return MessageHeader(name, mtype, seqid, body_offset)


def decode_message_body(
    payload: bytes | bytearray | memoryview, header: MessageHeader, cls: type[T]
) -> T:
    """Decode the body struct of a message whose header :func:`decode_message_header` read."""
    obj = cls()
    try:
        _protocol(_Reader(payload, header.body_offset)).read_struct(obj)
    except ProtocolError:
        raise
    except Exception as e:  # struct.error, UnicodeDecodeError, … from thriftpy2
        raise ProtocolError(f"undecodable {header.name} message: {e}") from e
    return obj
