"""journal_call: the journal call's canonical encoding, written and read in one pass.

The encoder must write exactly what thriftpy2 writes for ``journal_args``; the parser
must read back exactly what the checked decoder reads, or decline (None) — never raise,
never accept what the general path would not.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.qjournal.protocol import wire
from hadoop_qjm.qjournal.protocol.journal_call import (
    JournalCall,
    encode_journal_body,
    encode_journal_head,
    parse_journal_call,
)
from hadoop_qjm.qjournal.protocol.thrift_idl import qjournal_thrift
from hadoop_qjm.qjournal.protocol.wire import TMessageType

_Q = qjournal_thrift.QJournalProtocol
I64 = st.integers(-(2**63), 2**63 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
TEXT = st.text(max_size=12)


def thrift_encoded(call: JournalCall) -> bytes:
    """What thriftpy2 writes for the same call."""
    req = qjournal_thrift.RequestInfo(
        call.journal_id,
        call.epoch,
        call.ipc_serial_number,
        call.committed_txid,
        call.req_name_service_id,
    )
    args = _Q.journal_args(
        reqInfo=req,
        firstTxnId=call.first_txid,
        numTxns=call.num_txns,
        records=call.records,
        segmentTxnId=call.segment_txid,
        nameServiceId=call.name_service_id,
    )
    return wire.encode_message("journal", TMessageType.CALL, call.seqid, args)


def encoded(call: JournalCall) -> bytes:
    head = encode_journal_head(
        call.seqid,
        call.journal_id,
        call.epoch,
        call.ipc_serial_number,
        call.committed_txid,
        call.req_name_service_id,
    )
    body = encode_journal_body(
        call.first_txid, call.num_txns, call.records, call.segment_txid, call.name_service_id
    )
    return head + body


calls = st.builds(
    JournalCall,
    seqid=I32,
    journal_id=TEXT,
    epoch=I64,
    ipc_serial_number=I64,
    committed_txid=st.none() | I64,
    req_name_service_id=st.none() | TEXT,
    first_txid=I64,
    num_txns=I32,
    records=st.binary(max_size=64),
    segment_txid=I64,
    name_service_id=st.none() | TEXT,
)

SAMPLE = JournalCall(7, "jid", 3, 12, 99, "ns1", 100, 2, b"\x09" * 20, 1, "ns1")


@settings(max_examples=300, deadline=None)
@given(calls)
def test_encoding_is_thriftpy2s_and_parses_back(call):
    payload = encoded(call)
    assert payload == thrift_encoded(call)
    assert parse_journal_call(payload) == call


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_never_raise(data):
    parsed = parse_journal_call(b"\x80\x01\x00\x01\x00\x00\x00\x07journal" + data)
    assert parsed is None or isinstance(parsed, JournalCall)


@settings(max_examples=200, deadline=None)
@given(calls, st.data())
def test_a_parsed_mutation_is_what_the_checked_decoder_reads(call, data):
    """Flip one byte: the parser either declines, or reads what the checked path reads."""
    payload = bytearray(encoded(call))
    i = data.draw(st.integers(0, len(payload) - 1))
    payload[i] ^= data.draw(st.integers(1, 255))
    payload = bytes(payload)
    parsed = parse_journal_call(payload)
    if parsed is None:
        return
    header = wire.decode_message_header(payload)
    args = wire.check_required(wire.decode_message_body(payload, header, _Q.journal_args))
    assert header.name == "journal" and header.type == TMessageType.CALL
    assert parsed.seqid == header.seqid
    req = args.reqInfo
    assert (
        parsed.journal_id,
        parsed.epoch,
        parsed.ipc_serial_number,
        parsed.committed_txid,
        parsed.req_name_service_id,
    ) == (req.journalId, req.epoch, req.ipcSerialNumber, req.committedTxId, req.nameServiceId)
    assert (
        parsed.first_txid,
        parsed.num_txns,
        parsed.records,
        parsed.segment_txid,
        parsed.name_service_id,
    ) == (args.firstTxnId, args.numTxns, args.records, args.segmentTxnId, args.nameServiceId)


def test_every_truncation_is_declined():
    payload = encoded(SAMPLE)
    for end in range(len(payload)):
        assert parse_journal_call(payload[:end]) is None, end


def test_trailing_bytes_are_declined():
    assert parse_journal_call(encoded(SAMPLE) + b"\x00") is None


def test_other_field_orders_are_declined_but_still_valid():
    """Fields in another order are valid Thrift: the general path decodes them."""
    req = qjournal_thrift.RequestInfo("jid", 3, 12, 99, None)
    head = wire.encode_message(
        "journal", TMessageType.CALL, 5, _Q.journal_args(reqInfo=req, firstTxnId=100)
    )[:-1]
    # numTxns (3), records (4), segmentTxnId (5) — but segmentTxnId first.
    body = (
        struct.pack(">bhq", 10, 5, 1)
        + struct.pack(">bhi", 8, 3, 2)
        + struct.pack(">bhi", 11, 4, 3)
        + b"abc\x00"
    )
    payload = head + body
    assert parse_journal_call(payload) is None
    header = wire.decode_message_header(payload)
    args = wire.decode_message_body(payload, header, _Q.journal_args)
    assert (args.segmentTxnId, args.numTxns, args.records) == (1, 2, b"abc")


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x80\x01\x00\x02\x00\x00\x00\x07journal",  # a REPLY
        b"\x80\x01\x00\x01\x00\x00\x00\x09heartbeat\x00\x00\x00\x01\x00",
        bytearray(b"x"),  # not bytes
    ],
)
def test_other_messages_are_declined(payload):
    assert parse_journal_call(payload) is None


def test_invalid_utf8_and_negative_lengths_are_declined():
    good = encoded(SAMPLE._replace(journal_id="ab"))
    at = good.index(b"ab")
    assert parse_journal_call(good[:at] + b"\xff\xfe" + good[at + 2 :]) is None
    length_at = at - 4
    negative = good[:length_at] + struct.pack(">i", -1) + good[at:]
    assert parse_journal_call(negative) is None


def test_numbers_that_do_not_fit_raise_struct_error():
    with pytest.raises(struct.error):
        encode_journal_head(2**31, "j", 1, 1, None, None)
    with pytest.raises(struct.error):
        encode_journal_body(2**63, 1, b"", 1, None)
