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
an unknown type.

Two codecs do the encoding and, once a struct has been checked, the decoding
(``CODECS``; the results are byte-for-byte and field-for-field the same):

* ``"cybin"`` — thriftpy2's compiled protocol, the default when installed.
  It is several times faster (a 10 KB ``journal`` call encodes in ~2 µs
  instead of ~11, decodes in ~3 instead of ~17): on the JournalNode's fsync
  path every microsecond counts. It only ever sees bytes :func:`check_struct`
  accepted, and only for structs whose spec holds no map: it walks exactly
  the structure the check walked, so every length it reads was bounded by the
  bytes present. (Its map reader reinterprets a string-typed key or value as
  the declared type, which could misalign it; a struct with a map, were one
  ever added to the IDL, is decoded by the pure codec instead.)
* ``"pure"`` — thriftpy2's pure-Python protocol over a strict in-memory
  reader, whose short read is an error: work bounded by the payload size
  whatever the bytes.

A third decoder, :func:`decode_flat_struct`, reads the structs the hot RPCs
carry (``journal``, ``heartbeat``: integers, strings, binary and nested such
structs, no containers) in one pass of ``struct.unpack_from``, checking each
length as it goes. It decodes only the plain, canonical case and answers
``None`` for anything else (an unknown field, a wire type other than the
spec's, a missing required field, invalid UTF-8, trailing bytes); the caller
then takes the checked path above, which gives the usual error. So it never
changes what is accepted, only how fast.

No sockets here: see ``sockets.py``. Frames, ``ProtocolError`` and
``DEFAULT_MAX_FRAME_SIZE`` are re-exported here from :mod:`~hadoop_qjm.ipc.frames` and
:mod:`~hadoop_qjm.ipc.exceptions`, :func:`decode_flat_struct` from
:mod:`~hadoop_qjm.ipc.flat_struct` (``hadoop_qjm.qjournal.protocol.wire`` re-exports all of
this module).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Any, TypeVar

from thriftpy2.protocol.binary import TBinaryProtocol
from thriftpy2.thrift import TApplicationException, TMessageType, TType

try:  # absent when thriftpy2 was installed without its C extensions
    from thriftpy2.protocol.cybin import TCyBinaryProtocol
    from thriftpy2.transport.memory import TCyMemoryBuffer
except ImportError:  # pragma: no cover - the pure codec serves alone
    TCyBinaryProtocol = TCyMemoryBuffer = None

from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.ipc.exceptions import ProtocolError, RemoteException
from hadoop_qjm.ipc.flat_struct import decode_flat_struct
from hadoop_qjm.ipc.frames import DEFAULT_MAX_FRAME_SIZE, FRAME_HEADER, frame

__all__ = [
    "CODECS",
    "DEFAULT_CODEC",
    "DEFAULT_MAX_FRAME_SIZE",
    "FRAME_HEADER",
    "ProtocolError",
    "MessageHeader",
    "TMessageType",
    "check_message_body",
    "check_required",
    "check_struct",
    "decode_flat_struct",
    "decode_message_body",
    "decode_message_header",
    "decode_reply",
    "encode_message",
    "encode_void_reply",
    "frame",
    "read_message_header",
    "thrift_from_bytes",
    "thrift_to_bytes",
]

#: The codecs available here, the default first (see the module docstring).
CODECS: tuple[str, ...] = ("cybin", "pure") if TCyBinaryProtocol is not None else ("pure",)
DEFAULT_CODEC = CODECS[0]

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_I32_PAIR = struct.Struct(">ii")
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


def _cy_protocol(trans: Any) -> Any:
    return TCyBinaryProtocol(
        trans, strict_read=True, strict_write=True, decode_response=True, strict_decode=True
    )


def _check_codec(codec: str) -> None:
    if codec not in CODECS:
        raise ValueError(f"unknown Thrift codec {codec!r}; available: {', '.join(CODECS)}")


def _encode(message: tuple[str, int, int] | None, body: Any, codec: str) -> bytes:
    """``body`` (after a message header if ``message`` is (name, type, seqid)) as bytes."""
    if codec == "cybin":
        cy_buf = TCyMemoryBuffer()
        cy_proto = _cy_protocol(cy_buf)
        if message is not None:
            cy_proto.write_message_begin(*message)
        cy_proto.write_struct(body)
        return cy_buf.getvalue()
    _check_codec(codec)
    writer = _Writer()
    proto = _protocol(writer)
    if message is not None:
        proto.write_message_begin(*message)
    proto.write_struct(body)
    return writer.getvalue()


# Struct classes (by identity) whose spec, nested structs included, holds no map.
_CYBIN_SAFE: dict[type, bool] = {}


def _spec_has_map(spec: Any, seen: set[type]) -> bool:
    """Whether a field or element spec (a type, or (type, sub-spec)) contains a map."""
    ttype, sub = (spec[0], spec[1]) if isinstance(spec, tuple) else (spec, None)
    if ttype == TType.MAP:
        return True
    if ttype == TType.STRUCT:
        return _struct_has_map(sub, seen)
    if ttype in (TType.LIST, TType.SET):
        return _spec_has_map(sub, seen)
    return False


def _struct_has_map(cls: type, seen: set[type]) -> bool:
    if cls in seen:  # a recursive struct: its fields are being looked at already
        return False
    seen.add(cls)
    return any(
        _spec_has_map((spec[0], spec[2] if len(spec) > 3 else None), seen)
        for spec in cls.thrift_spec.values()
    )


def _cybin_safe(cls: type) -> bool:
    safe = _CYBIN_SAFE.get(cls)
    if safe is None:
        safe = _CYBIN_SAFE[cls] = not _struct_has_map(cls, set())
    return safe


def _read_checked_struct(
    data: bytes | bytearray | memoryview, pos: int, end: int, obj: Any, codec: str, what: str
) -> None:
    """Fill ``obj`` from the struct at ``data[pos:end]``, which :func:`check_struct` accepted.

    Raises ProtocolError (naming ``what``) for anything the decoder rejects
    (invalid UTF-8, …).
    """
    _check_codec(codec)
    try:
        if codec == "cybin" and _cybin_safe(type(obj)):
            cy_buf = TCyMemoryBuffer()
            cy_buf.write(memoryview(data)[pos:end])
            _cy_protocol(cy_buf).read_struct(obj)
            # Both walks agree by construction; make a disagreement loud, not silent.
            if cy_buf.getvalue():
                raise ProtocolError("the decoder stopped before the end of the struct")
        else:
            _protocol(_Reader(data, pos)).read_struct(obj)
    except Exception as e:  # struct.error, UnicodeDecodeError, … from thriftpy2
        raise ProtocolError(f"undecodable {what}: {e}") from e


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
        n = len(data)
        while True:
            if pos >= n:
                raise ProtocolError("truncated Thrift struct")
            ftype = data[pos]
            if ftype == TType.STOP:
                return pos + 1
            # Fixed-size and string fields inline: they are most fields, and a
            # call per field is most of this walk's cost.
            pos += 3
            size = _FIXED_SIZE.get(ftype)
            if size is None and ftype == TType.STRING:
                if pos + 4 > n:
                    raise ProtocolError(f"truncated Thrift data: wanted 4 bytes at {pos}")
                size = _I32.unpack_from(data, pos)[0]
                if size < 0:
                    raise ProtocolError(f"negative string length {size} at {pos}")
                size += 4
            if size is None:
                pos = _check_value(data, pos, ftype, depth + 1)
            elif pos + size > n:
                raise ProtocolError(f"truncated Thrift value of type {ftype} at {pos}")
            else:
                pos += size
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
    if not isinstance(data, (bytes, bytearray)):
        data = memoryview(data).cast("B")
    return _check_value(data, pos, TType.STRUCT, 0)


# Per struct class: its fields as (name, required) pairs, in spec order.
_FIELDS: dict[type, tuple[tuple[str, bool], ...]] = {}
# Values that cannot hold a struct: no need to look inside.
_SCALARS = (int, str, bytes, bool, float)


def check_required(tobj: Any) -> Any:
    """Raise IllegalArgumentException if a ``required`` field of ``tobj`` (or of a
    struct inside it) is unset; return ``tobj``.

    Thrift itself does not enforce requiredness on either side; a peer that
    omits a field Hadoop requires gets a clear error instead of a ``None``
    deep inside the Journal.
    """
    cls = type(tobj)
    fields = _FIELDS.get(cls)
    if fields is None:
        fields = _FIELDS[cls] = tuple(
            (spec[1], bool(spec[-1])) for spec in tobj.thrift_spec.values()
        )
    for name, required in fields:
        value = getattr(tobj, name, None)
        if value is None:
            if required:
                raise IllegalArgumentException(f"Missing required field '{name}' in {cls.__name__}")
        elif type(value) in _SCALARS:
            continue
        elif hasattr(value, "thrift_spec"):
            check_required(value)
        elif isinstance(value, list):
            for item in value:
                if hasattr(item, "thrift_spec"):
                    check_required(item)
    return tobj


# ------------------------------------------------------------------ structs


def thrift_to_bytes(tobj: Any, *, codec: str = DEFAULT_CODEC) -> bytes:
    """Serialize one Thrift struct (or exception) with the binary protocol."""
    return _encode(None, tobj, codec)


def thrift_from_bytes(
    cls: type[T], data: bytes | bytearray | memoryview, *, codec: str = DEFAULT_CODEC
) -> T:
    """Deserialize one struct of class ``cls``; the data must hold exactly that struct."""
    if not isinstance(data, (bytes, bytearray)):
        data = memoryview(data).cast("B")
    end = check_struct(data)
    if end != len(data):
        raise ProtocolError(f"{len(data) - end} trailing bytes after a Thrift struct")
    obj = cls()
    _read_checked_struct(data, 0, end, obj, codec, cls.__name__)
    return obj


def read_message_header(payload: bytes) -> tuple[str, int, int, int]:
    """``(name, type, seqid, body offset)`` of the message in ``payload``, without checking
    its body: the caller must (:func:`decode_flat_struct`, else :func:`check_message_body`).

    A tuple, not a :class:`MessageHeader`: this is the per-call fast path."""
    return _read_header(payload)


def check_message_body(payload: bytes | bytearray | memoryview, body_offset: int) -> None:
    """Check that ``payload`` from ``body_offset`` on is exactly one well-formed struct."""
    data = payload if isinstance(payload, (bytes, bytearray)) else memoryview(payload).cast("B")
    end = check_struct(data, body_offset)
    if end != len(data):
        raise ProtocolError(f"{len(data) - end} trailing bytes after a Thrift message")


# ------------------------------------------------------------------ messages


@dataclass(frozen=True)
class MessageHeader:
    """The header of a binary-protocol message; the body struct follows at ``body_offset``."""

    name: str
    type: int
    seqid: int
    body_offset: int
    # The immutable payload whose body decode_message_header checked, if any:
    # decoding that very object needs no second check.
    checked_payload: bytes | None = field(default=None, repr=False, compare=False)


def encode_message(
    name: str, mtype: int, seqid: int, body: Any, *, codec: str = DEFAULT_CODEC
) -> bytes:
    """One message (header and body struct) as a frame payload (without the length)."""
    return _encode((name, mtype, seqid), body, codec)


_VOID_REPLY_PREFIXES: dict[str, bytes] = {}


def encode_void_reply(name: str, seqid: int) -> bytes:
    """``encode_message(name, REPLY, seqid, <name>_result())`` for a call that returns nothing
    and succeeded: the header, then an empty struct. The same bytes, without the encoder."""
    prefix = _VOID_REPLY_PREFIXES.get(name)
    if prefix is None:
        encoded = name.encode("utf-8")
        prefix = _I32_PAIR.pack(_VERSION_1 | TMessageType.REPLY, len(encoded)) + encoded
        _VOID_REPLY_PREFIXES[name] = prefix
    return prefix + _I32.pack(seqid) + b"\x00"


def decode_message_header(payload: bytes | bytearray | memoryview) -> MessageHeader:
    """Check that ``payload`` is exactly one strict binary message and read its header."""
    name, mtype, seqid, body_offset = _read_header(payload)
    check_message_body(payload, body_offset)
    checked = payload if type(payload) is bytes else None
    return MessageHeader(name, mtype, seqid, body_offset, checked)


def _read_header(payload: bytes | bytearray | memoryview) -> tuple[str, int, int, int]:
    data = payload if isinstance(payload, (bytes, bytearray)) else memoryview(payload).cast("B")
    if len(data) < 8:
        raise ProtocolError(f"truncated Thrift message header ({len(data)} bytes)")
    version, name_len = _I32_PAIR.unpack_from(data, 0)
    if version >= 0 or (version & _VERSION_MASK) != _VERSION_1:
        raise ProtocolError(f"bad Thrift message version word {version & 0xFFFFFFFF:#010x}")
    mtype = version & 0xFF
    if mtype not in (TMessageType.CALL, TMessageType.REPLY, TMessageType.EXCEPTION):
        raise ProtocolError(f"unsupported Thrift message type {mtype}")
    body_offset = 12 + name_len
    if name_len < 0 or body_offset > len(data):
        raise ProtocolError(f"bad Thrift message name length {name_len}")
    try:
        name = str(data[8 : 8 + name_len], "utf-8")
    except UnicodeDecodeError as e:
        raise ProtocolError("Thrift message name is not UTF-8") from e
    (seqid,) = _I32.unpack_from(data, 8 + name_len)
    return name, mtype, seqid, body_offset


def decode_message_body(
    payload: bytes | bytearray | memoryview,
    header: MessageHeader,
    cls: type[T],
    *,
    codec: str = DEFAULT_CODEC,
) -> T:
    """Decode the body struct of a message whose header :func:`decode_message_header` read."""
    data = payload if isinstance(payload, (bytes, bytearray)) else memoryview(payload).cast("B")
    # The decoder's safety must not rest on the caller passing the header of
    # this very payload: unless the header checked this same immutable object,
    # check again.
    if header.checked_payload is not payload:
        end = check_struct(data, header.body_offset)
        if end != len(data):
            raise ProtocolError(f"{len(data) - end} trailing bytes after a Thrift message")
    obj = cls()
    _read_checked_struct(data, header.body_offset, len(data), obj, codec, f"{header.name} message")
    return obj


def decode_reply(reply: bytes, rpc: str, seqid: int, result_cls: type[T]) -> T:
    """The ``<rpc>_result`` struct of the reply to call ``seqid``.

    Raises ProtocolError for a reply that cannot be this call's (another seqid, not a
    REPLY): the connection is then suspect. A TApplicationException reply is raised as
    RemoteException (class ``org.apache.thrift.TApplicationException``).
    """
    header = decode_message_header(reply)
    if header.seqid != seqid:
        raise ProtocolError(f"reply seqid {header.seqid} != {seqid}")
    if header.type == TMessageType.EXCEPTION:
        error = decode_message_body(reply, header, TApplicationException)
        raise RemoteException(
            error.message or f"{rpc} failed on the server",
            class_name="org.apache.thrift.TApplicationException",
        )
    if header.type != TMessageType.REPLY:
        raise ProtocolError(f"unexpected message type {header.type}")
    return decode_message_body(reply, header, result_cls)
