"""wire.py's two codecs: thriftpy2's compiled one and its pure-Python one agree.

The compiled codec ("cybin") is the default because it is several times
faster; it must write the very bytes the pure one writes, decode every
well-formed struct to the very object the pure one does, and — the safety
argument of wire.py — only ever decode bytes ``check_struct`` accepted.
"""

from __future__ import annotations

import io
import struct
from typing import Any

import pytest
import thriftpy2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from thriftpy2.thrift import TApplicationException, TType

from hadoop_qjm.qjournal.protocol import wire
from hadoop_qjm.qjournal.protocol.thrift_idl import SERVICES, qjournal_thrift
from hadoop_qjm.qjournal.protocol.wire import ProtocolError, TMessageType

pytestmark = pytest.mark.skipif(
    "cybin" not in wire.CODECS, reason="thriftpy2 was installed without its C extensions"
)

I64 = st.integers(-(2**63), 2**63 - 1)
# No lone surrogates: they cannot be UTF-8 encoded at all.
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)

_SCALARS: dict[int, st.SearchStrategy[Any]] = {
    TType.BOOL: st.booleans(),
    TType.BYTE: st.integers(-128, 127),
    TType.I16: st.integers(-(2**15), 2**15 - 1),
    TType.I32: st.integers(-(2**31), 2**31 - 1),
    TType.I64: I64,
    TType.DOUBLE: st.floats(allow_nan=False),
    TType.STRING: TEXT,
    TType.BINARY: st.binary(max_size=64),
}


def _values(ttype: int, spec: Any) -> st.SearchStrategy[Any]:
    if ttype in _SCALARS:
        return _SCALARS[ttype]
    if ttype == TType.STRUCT:
        return instances(spec)
    if ttype in (TType.LIST, TType.SET):
        etype, espec = spec if isinstance(spec, tuple) else (spec, None)
        return st.lists(_values(etype, espec), max_size=3)
    raise AssertionError(f"no strategy for Thrift type {ttype}")


def instances(cls: type) -> st.SearchStrategy[Any]:
    """Instances of the Thrift struct ``cls``, each optional field set or left at its default."""
    defaults = cls()
    fields = {}
    for spec in cls.thrift_spec.values():
        values = _values(spec[0], spec[2] if len(spec) > 3 else None)
        unset = st.just(getattr(defaults, spec[1], None))
        fields[spec[1]] = values if spec[-1] else st.one_of(unset, values)
    return st.builds(cls, **fields)


def _struct_classes() -> list[type]:
    classes = {
        obj
        for obj in vars(qjournal_thrift).values()
        if isinstance(obj, type) and hasattr(obj, "thrift_spec")
    }
    for service in SERVICES:
        for name in service.thrift_services:
            classes.add(getattr(service, name + "_args"))
            classes.add(getattr(service, name + "_result"))
    classes.add(TApplicationException)
    return sorted(classes, key=lambda c: c.__name__)


STRUCTS = _struct_classes()


def _plain(value: Any) -> Any:
    """A struct as nested (class, fields) tuples: Thrift exceptions compare by identity."""
    if hasattr(value, "thrift_spec"):
        return type(value), {s[1]: _plain(getattr(value, s[1])) for s in value.thrift_spec.values()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _same(a: Any, b: Any) -> bool:
    return _plain(a) == _plain(b)


def test_every_rpc_and_struct_is_covered() -> None:
    names = {cls.__name__ for cls in STRUCTS}
    assert {"journal_args", "journal_result", "RequestInfo", "QJournalException"} <= names
    assert "getEditLogManifestFromJournal_args" in names
    assert len(STRUCTS) > 2 * sum(len(s.thrift_services) for s in SERVICES)


@pytest.mark.parametrize("cls", STRUCTS, ids=lambda c: c.__name__)
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_both_codecs_write_the_same_bytes_and_read_the_same_struct(
    cls: type, data: st.DataObject
) -> None:
    obj = data.draw(instances(cls))
    pure = wire.thrift_to_bytes(obj, codec="pure")
    assert wire.thrift_to_bytes(obj, codec="cybin") == pure
    from_pure = wire.thrift_from_bytes(cls, pure, codec="pure")
    from_cybin = wire.thrift_from_bytes(cls, pure, codec="cybin")
    assert _same(from_cybin, from_pure) and _same(from_pure, obj)


@pytest.mark.parametrize(
    "service,name",
    [(s, n) for s in SERVICES for n in s.thrift_services],
    ids=lambda x: x if isinstance(x, str) else x.__name__,
)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), seqid=st.integers(0, 2**31 - 1))
def test_both_codecs_agree_on_every_call_and_reply(
    service: Any, name: str, data: st.DataObject, seqid: int
) -> None:
    for suffix, mtype in (("_args", TMessageType.CALL), ("_result", TMessageType.REPLY)):
        cls = getattr(service, name + suffix)
        body = data.draw(instances(cls))
        payload = wire.encode_message(name, mtype, seqid, body, codec="pure")
        assert wire.encode_message(name, mtype, seqid, body, codec="cybin") == payload
        header = wire.decode_message_header(payload)
        assert (header.name, header.type, header.seqid) == (name, mtype, seqid)
        decoded = {
            codec: wire.decode_message_body(payload, header, cls, codec=codec)
            for codec in wire.CODECS
        }
        assert _same(decoded["cybin"], decoded["pure"]) and _same(decoded["pure"], body)


def test_the_default_codec_is_the_compiled_one() -> None:
    assert wire.DEFAULT_CODEC == "cybin"
    with pytest.raises(ValueError, match="unknown Thrift codec"):
        wire.thrift_to_bytes(qjournal_thrift.SegmentState(1, 2, True), codec="json")


def test_a_value_that_does_not_fit_fails_to_encode_in_both() -> None:
    args = qjournal_thrift.QJournalProtocol.journal_args(numTxns=2**40)  # an i32
    for codec in wire.CODECS:
        with pytest.raises(Exception):  # noqa: B017 - each codec raises its own type
            wire.encode_message("journal", TMessageType.CALL, 1, args, codec=codec)


def _journal_call() -> bytes:
    args = qjournal_thrift.QJournalProtocol.journal_args(
        reqInfo=qjournal_thrift.RequestInfo("j", 1, 2, 3, "ns"),
        firstTxnId=1,
        numTxns=2,
        records=b"records",
        segmentTxnId=1,
        nameServiceId="ns",
    )
    return wire.encode_message("journal", TMessageType.CALL, 5, args)


@settings(max_examples=400, deadline=None)
@given(st.data())
def test_mutated_calls_decode_or_raise_protocol_error_in_both_codecs(data: st.DataObject) -> None:
    payload = bytearray(_journal_call())
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(payload) - 1))
        payload[pos] = data.draw(st.integers(0, 255))
    try:
        header = wire.decode_message_header(bytes(payload))
    except ProtocolError:
        return
    for codec in wire.CODECS:
        try:
            wire.decode_message_body(
                bytes(payload), header, qjournal_thrift.QJournalProtocol.journal_args, codec=codec
            )
        except ProtocolError:
            pass


def test_a_header_from_other_bytes_does_not_skip_the_check() -> None:
    good = _journal_call()
    header = wire.decode_message_header(good)
    # Same length, same header, a body claiming a 2 GiB string: checked again, rejected.
    evil = bytearray(good)
    evil[header.body_offset :] = struct.pack(">bhi", 11, 6, 2**31 - 1).ljust(
        len(good) - header.body_offset, b"\x00"
    )
    for payload in (bytes(evil), evil, memoryview(bytes(evil))):
        for codec in wire.CODECS:
            with pytest.raises(ProtocolError):
                wire.decode_message_body(
                    payload, header, qjournal_thrift.QJournalProtocol.journal_args, codec=codec
                )


_MAP_IDL = """
struct WithMap {
  1: optional map<i32, i32> m,
}
struct HoldsMap {
  1: optional list<WithMap> items,
}
"""


def test_a_struct_with_a_map_is_decoded_by_the_pure_codec() -> None:
    module = thriftpy2.load_fp(io.StringIO(_MAP_IDL), module_name="codec_test_map_thrift")
    assert not wire._cybin_safe(module.WithMap)
    assert not wire._cybin_safe(module.HoldsMap)
    assert wire._cybin_safe(qjournal_thrift.QJournalProtocol.journal_args)
    assert wire._cybin_safe(qjournal_thrift.RemoteEditLogManifest)
    good = module.WithMap(m={1: 2, -3: 4})
    assert wire.thrift_from_bytes(module.WithMap, wire.thrift_to_bytes(good)) == good
    # A map whose wire key type is string: check_struct walks a string, but
    # thriftpy2's readers treat its length as the declared i32 key and run off
    # the end; from there the compiled reader would trust a length nobody
    # checked. The pure reader stops at the end of the bytes.
    hostile = (
        struct.pack(">bhbbi", TType.MAP, 1, TType.STRING, TType.I32, 1)
        + struct.pack(">i", 4)
        + b"abcd"
        + bytes(
            [TType.STRING, 0, 9, 0x7F]
        )  # the value, read as a field header by a misaligned reader
        + b"\x00"
    )
    assert wire.check_struct(hostile) == len(hostile)
    with pytest.raises(ProtocolError):
        wire.thrift_from_bytes(module.WithMap, hostile)
