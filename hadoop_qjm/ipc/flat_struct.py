"""decode_flat_struct: the hot RPCs' structs in one pass (see :mod:`hadoop_qjm.ipc.wire`).

The structs the hot RPCs carry (``journal``, ``heartbeat``: integers, strings, binary and
nested such structs, no containers) are read with ``struct.unpack_from``, each length
checked as it goes. Only the plain, canonical case is decoded; anything else answers
``None`` and the caller takes the checked path, which gives the usual error.
"""

from __future__ import annotations

import struct
from typing import Any, TypeVar

from thriftpy2.thrift import TType

__all__ = ["decode_flat_struct"]

T = TypeVar("T")

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_MAX_DEPTH = 64

# How decode_flat_struct reads each field type it knows: spec type -> wire type.
_FLAT_WIRE_TYPE = {
    TType.I16: TType.I16,
    TType.I32: TType.I32,
    TType.I64: TType.I64,
    TType.STRING: TType.STRING,
    TType.BINARY: TType.STRING,  # binary is a string on the wire
    TType.STRUCT: TType.STRUCT,
}
_FLAT_UNPACK = {TType.I16: _I16, TType.I32: _I32, TType.I64: _I64}
_FIELD_HEADER = struct.Struct(">Bh")

# Per struct class: {(wire type, field id): (name, spec type, unpacker or nested class)} and
# the names of its required fields; None when the class holds a type decode_flat_struct
# leaves to the checked path (containers, bool, double, ...).
_FlatSpec = tuple[dict[tuple[int, int], tuple[str, int, Any]], tuple[str, ...]]
_FLAT_SPECS: dict[type, _FlatSpec | None] = {}


def _flat_spec(cls: type, depth: int = 0) -> _FlatSpec | None:
    try:
        return _FLAT_SPECS[cls]
    except KeyError:
        pass
    fields: dict[tuple[int, int], tuple[str, int, Any]] | None = {}
    required = []
    for fid, spec in cls.thrift_spec.items():
        ttype, name = spec[0], spec[1]
        if ttype not in _FLAT_WIRE_TYPE or depth >= _MAX_DEPTH:
            fields = None
            break
        extra = _FLAT_UNPACK.get(ttype)
        if ttype == TType.STRUCT:
            extra = spec[2]
            if _flat_spec(extra, depth + 1) is None:
                fields = None
                break
        fields[(_FLAT_WIRE_TYPE[ttype], fid)] = (name, ttype, extra)
        if spec[-1]:  # (type, name, [nested,] required)
            required.append(name)
    flat = None if fields is None else (fields, tuple(required))
    _FLAT_SPECS[cls] = flat
    return flat


def _read_flat(data: bytes, pos: int, cls: type) -> tuple[Any, int] | None:
    """The struct ``cls`` at ``pos`` and where it ends, or None (see decode_flat_struct).

    Reading past the end raises IndexError or struct.error, which mean None.
    """
    fields, required = _FLAT_SPECS[cls]  # type: ignore[misc]
    obj = cls()
    while data[pos] != TType.STOP:
        field = fields.get(_FIELD_HEADER.unpack_from(data, pos))
        if field is None:
            return None  # an unknown field, or an unexpected type: thriftpy2 would skip it
        name, ttype, extra = field
        pos += 3
        if ttype == TType.STRUCT:
            nested = _read_flat(data, pos, extra)
            if nested is None:
                return None
            value, pos = nested
        elif extra is not None:
            value = extra.unpack_from(data, pos)[0]
            pos += extra.size
        else:
            size = _I32.unpack_from(data, pos)[0]
            end = pos + 4 + size
            if size < 0 or end > len(data):
                return None
            value = data[pos + 4 : end]
            if ttype == TType.STRING:
                value = str(value, "utf-8")  # UnicodeDecodeError: None
            pos = end
        setattr(obj, name, value)
    for name in required:
        if getattr(obj, name) is None:
            return None
    return obj, pos + 1


def decode_flat_struct(data: bytes, pos: int, cls: type[T]) -> T | None:
    """The struct ``cls`` filling exactly ``data[pos:]``, decoded in one pass; None if it
    is not plainly one (see the module docstring), or ``cls`` holds a container.

    Safe on any bytes: every length is checked before it is used, and nesting follows
    the spec, never the data. A struct it returns has every required field set, so
    :func:`~hadoop_qjm.ipc.wire.check_required` has nothing to find in it.
    """
    if type(data) is not bytes or _flat_spec(cls) is None:
        return None
    try:
        decoded = _read_flat(data, pos, cls)
    except (IndexError, struct.error, UnicodeDecodeError):
        return None
    if decoded is None or decoded[1] != len(data):
        return None
    return decoded[0]
