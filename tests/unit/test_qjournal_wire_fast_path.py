"""wire.py's fast path for the hot calls agrees with the checked path, byte for byte.

``decode_flat_struct`` may decline any input (then the dispatcher takes the checked
path), but whatever it returns must be exactly what the checked path decodes; and
``encode_void_reply`` must write the very bytes ``encode_message`` writes.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hadoop_qjm.qjournal.protocol import wire
from hadoop_qjm.qjournal.protocol.thrift_idl import SERVICES, qjournal_thrift
from hadoop_qjm.qjournal.protocol.wire import ProtocolError, TMessageType
from tests.unit.test_qjournal_wire_codecs import _same, instances

_Q = qjournal_thrift.QJournalProtocol
CALLS = [(s, n) for s in SERVICES for n in s.thrift_services]
VOID_CALLS = [
    (s, n)
    for s, n in CALLS
    if not any(spec[1] == "success" for spec in getattr(s, n + "_result").thrift_spec.values())
]


def _checked(payload: bytes, cls: type) -> Any:
    header = wire.decode_message_header(payload)
    return wire.check_required(wire.decode_message_body(payload, header, cls))


def _journal_call(**overrides: Any) -> bytes:
    fields: dict[str, Any] = {
        "reqInfo": qjournal_thrift.RequestInfo("j", 1, 2, 3, "ns"),
        "firstTxnId": 1,
        "numTxns": 2,
        "records": b"records",
        "segmentTxnId": 1,
        "nameServiceId": "ns",
    }
    fields.update(overrides)
    return wire.encode_message("journal", TMessageType.CALL, 5, _Q.journal_args(**fields))


def test_the_hot_calls_take_the_fast_path() -> None:
    for payload, cls in (
        (_journal_call(), _Q.journal_args),
        (_journal_call(nameServiceId=None, reqInfo=qjournal_thrift.RequestInfo("j", 1, 2)), None),
        (
            wire.encode_message(
                "heartbeat",
                TMessageType.CALL,
                9,
                _Q.heartbeat_args(reqInfo=qjournal_thrift.RequestInfo("j", 1, 2)),
            ),
            _Q.heartbeat_args,
        ),
    ):
        cls = cls or _Q.journal_args
        name, mtype, seqid, offset = wire.read_message_header(payload)
        header = wire.decode_message_header(payload)
        assert (name, mtype, seqid, offset) == (
            header.name,
            header.type,
            header.seqid,
            header.body_offset,
        )
        fast = wire.decode_flat_struct(payload, offset, cls)
        assert fast is not None and _same(fast, _checked(payload, cls))


def test_structs_with_containers_are_left_to_the_checked_path() -> None:
    manifest = qjournal_thrift.RemoteEditLogManifest(
        logs=[qjournal_thrift.RemoteEditLog(1, 2, False)], committedTxnId=2
    )
    data = wire.thrift_to_bytes(manifest)
    assert wire.decode_flat_struct(data, 0, qjournal_thrift.RemoteEditLogManifest) is None


@pytest.mark.parametrize("service, name", CALLS, ids=lambda x: x if isinstance(x, str) else "")
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fast_decoder_returns_what_the_checked_path_decodes(
    service: Any, name: str, data: st.DataObject
) -> None:
    cls = getattr(service, name + "_args")
    payload = wire.encode_message(name, TMessageType.CALL, 1, data.draw(instances(cls)))
    offset = wire.read_message_header(payload)[3]
    fast = wire.decode_flat_struct(payload, offset, cls)
    if fast is not None:
        assert _same(fast, _checked(payload, cls))


@settings(max_examples=600, deadline=None)
@given(st.data())
def test_mutated_calls_decode_the_same_or_are_declined(data: st.DataObject) -> None:
    payload = bytearray(_journal_call())
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(payload) - 1))
        payload[pos] = data.draw(st.integers(0, 255))
    if data.draw(st.booleans()):
        del payload[data.draw(st.integers(0, len(payload) - 1)) :]
    payload = bytes(payload)
    try:
        offset = wire.read_message_header(payload)[3]
    except ProtocolError:
        return
    fast = wire.decode_flat_struct(payload, offset, _Q.journal_args)
    if fast is not None:
        # Whatever the fast path accepts, the checked path accepts, with the same content.
        assert _same(fast, _checked(payload, _Q.journal_args))


def test_oversized_and_negative_lengths_are_declined() -> None:
    good = _journal_call()
    offset = wire.read_message_header(good)[3]
    for size in (2**31 - 1, -1):
        # reqInfo, whose journalId claims ``size`` bytes
        evil = good[:offset] + struct.pack(">bh", 12, 1) + struct.pack(">bhi", 11, 1, size)
        assert wire.decode_flat_struct(evil, offset, _Q.journal_args) is None
    assert wire.decode_flat_struct(bytearray(good), offset, _Q.journal_args) is None
    assert wire.decode_flat_struct(good + b"\x00", offset, _Q.journal_args) is None
    missing = _journal_call(records=None)
    assert wire.decode_flat_struct(missing, offset, _Q.journal_args) is None
    bad_utf8 = _journal_call(reqInfo=qjournal_thrift.RequestInfo("j", 1, 2)).replace(
        b"\x00\x00\x00\x01j", b"\x00\x00\x00\x01\xff"
    )
    assert wire.decode_flat_struct(bad_utf8, offset, _Q.journal_args) is None


@pytest.mark.parametrize("service, name", VOID_CALLS, ids=lambda x: x if isinstance(x, str) else "")
@pytest.mark.parametrize("seqid", [0, 1, 2**31 - 1])
def test_a_void_reply_is_what_the_encoder_writes(service: Any, name: str, seqid: int) -> None:
    result = getattr(service, name + "_result")()
    expected = wire.encode_message(name, TMessageType.REPLY, seqid, result)
    assert wire.encode_void_reply(name, seqid) == expected
    prefixed = f"{service.__name__}:{name}"
    assert wire.encode_void_reply(prefixed, seqid) == wire.encode_message(
        prefixed, TMessageType.REPLY, seqid, result
    )


def test_the_dispatcher_answers_both_paths_alike() -> None:
    """A journal() call decoded by the fast path, and the same call with an unknown field
    appended (which only the checked path decodes: Thrift skips it), reach the Journal with
    the same arguments and get the same reply."""
    from hadoop_qjm.qjournal.server.journal_node_rpc_server import (
        QJournalProtocolDispatcher,
        QJournalProtocolHandler,
    )
    from tests.qjournal_fakes import FakeJournalNode

    jn = FakeJournalNode()
    dispatcher = QJournalProtocolDispatcher(QJournalProtocolHandler(jn))
    plain = _journal_call()
    offset = wire.read_message_header(plain)[3]
    assert wire.decode_flat_struct(plain, offset, _Q.journal_args) is not None
    # Field 99 (an i32) before the final STOP of the call's struct.
    extended = plain[:-1] + struct.pack(">bhi", 8, 99, 7) + b"\x00"
    assert wire.decode_flat_struct(extended, offset, _Q.journal_args) is None
    replies = [dispatcher.process(p, "10.0.0.1") for p in (plain, extended)]
    assert replies[0] == replies[1]
    assert replies[0] == wire.encode_message("journal", TMessageType.REPLY, 5, _Q.journal_result())
    calls = jn.journal("j").calls
    assert len(calls) == 2 and calls[0] == calls[1]
