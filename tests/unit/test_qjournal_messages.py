"""messages.py and wire.py: every message survives Thrift; untrusted bytes are safe."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, INVALID_TXID
from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.common.remote_edit_log import RemoteEditLog, RemoteEditLogManifest
from hadoop_qjm.common.storage_info import NamespaceInfo, StorageInfo
from hadoop_qjm.qjournal.protocol import messages, wire
from hadoop_qjm.qjournal.protocol.messages import (
    GetEditLogManifestResponse,
    GetJournaledEditsResponse,
    GetJournalStateResponse,
    NewEpochResponse,
    PersistedRecoveryPaxosData,
    PrepareRecoveryResponse,
    RequestInfo,
    SegmentState,
    deserialize,
    from_thrift,
    layout_version_from_thrift,
    roundtrip,
    serialize,
    to_thrift,
)
from hadoop_qjm.qjournal.protocol.thrift_idl import SERVICES, qjournal_thrift
from hadoop_qjm.qjournal.protocol.wire import ProtocolError, TMessageType

I64 = st.integers(-(2**63), 2**63 - 1)
I32 = st.integers(-(2**31), 2**31 - 1)
TXID = st.one_of(st.just(INVALID_TXID), st.integers(0, 2**63 - 1))
TEXT = st.text(max_size=20)

SEGMENT = st.builds(SegmentState, TXID, TXID, st.booleans())
REQUEST = st.builds(RequestInfo, TEXT, I64, I64, TXID, st.one_of(st.none(), TEXT))
STORAGE = st.builds(StorageInfo, I32, I32, TEXT, I64)
NSINFO = st.builds(NamespaceInfo, I32, TEXT, TEXT, I64, I32, TEXT, TEXT)
LOGS = st.lists(st.integers(0, 10**6), max_size=5, unique=True).map(
    lambda starts: tuple(RemoteEditLog(s * 10, s * 10 + 9, s % 2 == 0) for s in sorted(starts))
)
MANIFEST = st.builds(RemoteEditLogManifest, LOGS, TXID)
MESSAGES = st.one_of(
    REQUEST,
    SEGMENT,
    st.builds(PersistedRecoveryPaxosData, SEGMENT, I64),
    STORAGE,
    NSINFO,
    MANIFEST,
    st.builds(GetJournalStateResponse, I64, I32, st.one_of(st.none(), TEXT)),
    st.builds(NewEpochResponse, st.one_of(st.none(), TXID)),
    st.builds(
        PrepareRecoveryResponse,
        st.one_of(st.none(), SEGMENT),
        st.one_of(st.none(), I64),
        I64,
        st.one_of(st.none(), TXID),
    ),
    st.builds(GetEditLogManifestResponse, MANIFEST, I32, st.one_of(st.none(), TEXT)),
    st.builds(GetJournaledEditsResponse, I32, st.binary(max_size=64)),
)


@settings(max_examples=300, deadline=None)
@given(MESSAGES)
def test_every_message_round_trips_through_thrift(msg: object) -> None:
    back = roundtrip(msg)
    assert back == msg
    assert type(back) is type(msg)


EXAMPLES = [
    RequestInfo("myjournal", 3, 17, 100, "ns1"),
    RequestInfo("myjournal", 3, 0),
    SegmentState(1, 3, False),
    PersistedRecoveryPaxosData(SegmentState(4, 9, True), 5),
    StorageInfo(-67, 12345, "CID-1", 0),
    NamespaceInfo(12345, "CID-1", "BP-1", 7, -67, "build", "3.4.0"),
    RemoteEditLogManifest((RemoteEditLog(1, 3), RemoteEditLog(4, 9, True)), INVALID_TXID),
    GetJournalStateResponse(2, 8480, "http://127.0.0.1:8480"),
    NewEpochResponse(None),
    NewEpochResponse(4),
    PrepareRecoveryResponse(None, None, 0, None),
    PrepareRecoveryResponse(SegmentState(1, 5, True), 2, 3, 4),
    GetEditLogManifestResponse(RemoteEditLogManifest((), INVALID_TXID), 8480, None),
    GetJournaledEditsResponse(0, b""),
    GetJournaledEditsResponse(3, b"\x00\xff" * 100),
    GetJournaledEditsResponse(3, b"\x00\xff" * 100, 7),
]


@pytest.mark.parametrize("msg", EXAMPLES, ids=lambda m: type(m).__name__)
def test_examples_round_trip(msg: object) -> None:
    assert roundtrip(msg) == msg
    assert deserialize(type(msg), serialize(msg)) == msg


def test_invalid_committed_txid_survives_as_minus_12345() -> None:
    manifest = RemoteEditLogManifest((RemoteEditLog(1, 2),), INVALID_TXID)
    tmanifest = to_thrift(manifest)
    # Hadoop always sets the field, INVALID included; signed i64 keeps -12345.
    assert tmanifest.committedTxnId == -12345
    assert roundtrip(manifest).committed_txn_id == -12345
    resp = roundtrip(GetEditLogManifestResponse(manifest, 1, None))
    assert resp.manifest.committed_txn_id == INVALID_TXID


def test_request_without_committed_txid_omits_the_field() -> None:
    req = RequestInfo("j", 1, 0)
    assert not req.has_committed_txid
    assert to_thrift(req).committedTxId is None
    assert roundtrip(req).committed_txid == INVALID_TXID
    req = RequestInfo("j", 1, 0, committed_txid=0)
    assert req.has_committed_txid
    assert to_thrift(req).committedTxId == 0


def test_missing_required_field_is_illegal_argument() -> None:
    treq = qjournal_thrift.RequestInfo(journalId="j", epoch=1)  # no ipcSerialNumber
    with pytest.raises(IllegalArgumentException, match="ipcSerialNumber"):
        from_thrift(treq)
    tns = to_thrift(NamespaceInfo(1, "c", "bp"))
    tns.storageInfo.clusterID = None  # nested
    with pytest.raises(IllegalArgumentException, match="clusterID"):
        from_thrift(tns)


def test_optional_fields_absent_on_the_wire_decode_to_defaults() -> None:
    data = wire.thrift_to_bytes(qjournal_thrift.GetJournaledEditsResponse(txnCount=0))
    assert deserialize(GetJournaledEditsResponse, data) == GetJournaledEditsResponse(0, b"")
    tmanifest = qjournal_thrift.RemoteEditLogManifest(logs=[])
    assert from_thrift(tmanifest).committed_txn_id == INVALID_TXID


def test_layout_version_defaults_to_current() -> None:
    assert layout_version_from_thrift(None) == CURRENT_LAYOUT_VERSION
    assert layout_version_from_thrift(-60) == -60


def test_conversion_of_unknown_types_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        to_thrift(object())
    with pytest.raises(TypeError):
        from_thrift(object())
    assert to_thrift(None) is None and from_thrift(None) is None and roundtrip(None) is None


def test_segment_state_prints_like_hadoop_text_format() -> None:
    assert str(SegmentState(1, 3, True)) == "startTxId: 1 endTxId: 3 isInProgress: true"


# ------------------------------------------------------------------ the IDL


def test_services_have_hadoops_rpc_names_and_do_not_overlap() -> None:
    q, inter = (set(s.thrift_services) for s in SERVICES)
    assert {
        "isFormatted",
        "getJournalState",
        "format",
        "newEpoch",
        "journal",
        "heartbeat",
        "startLogSegment",
        "finalizeLogSegment",
        "purgeLogs",
        "getEditLogManifest",
        "getJournaledEdits",
        "prepareRecovery",
        "acceptRecovery",
        "discardSegments",
        "getJournalCTime",
        "doPreUpgrade",
        "doUpgrade",
        "doFinalize",
        "canRollBack",
        "doRollback",
        "setMembership",  # not Hadoop's: a JournalNode set change (docs/journalnode.md)
        "canFormat",  # not Hadoop's: is a writer using the journal? (issue 33)
    } == q
    assert inter == {"getEditLogManifestFromJournal", "getStorageInfo"}
    assert not q & inter


def test_argument_field_ids_follow_hadoops_proto() -> None:
    spec = qjournal_thrift.QJournalProtocol.journal_args.thrift_spec
    assert {fid: s[1] for fid, s in spec.items()} == {
        1: "reqInfo",
        2: "firstTxnId",
        3: "numTxns",
        4: "records",
        5: "segmentTxnId",
        6: "nameServiceId",
    }
    spec = qjournal_thrift.QJournalProtocol.getEditLogManifest_args.thrift_spec
    assert 3 not in spec  # retired "forReading"
    assert qjournal_thrift.QJournalProtocol.format_args().force is False


# ------------------------------------------------------------ wire, checked


def _call_payload(name: str, body: object, seqid: int = 7) -> bytes:
    return wire.encode_message(name, TMessageType.CALL, seqid, body)


def test_message_encode_decode() -> None:
    args = qjournal_thrift.QJournalProtocol.isFormatted_args(jid="j", nameServiceId=None)
    payload = _call_payload("isFormatted", args)
    header = wire.decode_message_header(payload)
    assert (header.name, header.type, header.seqid) == ("isFormatted", TMessageType.CALL, 7)
    back = wire.decode_message_body(
        payload, header, qjournal_thrift.QJournalProtocol.isFormatted_args
    )
    assert back.jid == "j"


def _string_field_claiming(length: int) -> bytes:
    name = b"isFormatted"
    return (
        struct.pack(">iI", -2147418112 | TMessageType.CALL, len(name))
        + name
        + struct.pack(">i", 1)
        + struct.pack(">bhi", 11, 1, length)
        + b"abc"
    )


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\x00",
        b"GET / HTTP/1.1\r\n\r\n",
        _string_field_claiming(2**31 - 1),
        _string_field_claiming(-5),
        # a list claiming 2^31-1 elements of an unknown type (a no-op to skip)
        struct.pack(">iI", -2147418112 | 1, 1)
        + b"x"
        + struct.pack(">i", 1)
        + struct.pack(">bhbi", 15, 9, 1, 2**31 - 1)
        + b"\x00",
        # a valid call followed by trailing bytes
        _call_payload("heartbeat", qjournal_thrift.QJournalProtocol.heartbeat_args()) + b"\x00",
        # nesting deeper than any message needs
        struct.pack(">iI", -2147418112 | 1, 1)
        + b"x"
        + struct.pack(">i", 1)
        + b"\x0c\x00\x01" * 100,
    ],
    ids=[
        "empty",
        "byte",
        "http",
        "huge-string",
        "negative-string",
        "huge-list",
        "trailing",
        "deep",
    ],
)
def test_malformed_messages_are_protocol_errors(payload: bytes) -> None:
    with pytest.raises(ProtocolError):
        wire.decode_message_header(payload)


def test_invalid_utf8_in_a_string_field_is_a_protocol_error() -> None:
    payload = (
        struct.pack(">iI", -2147418112 | 1, 11)
        + b"isFormatted"
        + struct.pack(">i", 1)
        + struct.pack(">bhi", 11, 1, 2)
        + b"\xff\xfe"
        + b"\x00"
    )
    header = wire.decode_message_header(payload)
    with pytest.raises(ProtocolError):
        wire.decode_message_body(payload, header, qjournal_thrift.QJournalProtocol.isFormatted_args)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=200))
def test_random_bytes_only_ever_raise_protocol_error(data: bytes) -> None:
    try:
        header = wire.decode_message_header(data)
    except ProtocolError:
        return
    for service in SERVICES:
        if header.name in service.thrift_services:
            try:
                wire.decode_message_body(data, header, getattr(service, header.name + "_args"))
            except ProtocolError:
                pass


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_valid_messages_only_ever_raise_protocol_error(data: st.DataObject) -> None:
    req = qjournal_thrift.QJournalProtocol.journal_args(
        reqInfo=to_thrift(RequestInfo("j", 1, 2, 3, "ns")),
        firstTxnId=1,
        numTxns=2,
        records=b"records",
        segmentTxnId=1,
    )
    payload = bytearray(_call_payload("journal", req))
    for _ in range(data.draw(st.integers(1, 4))):
        pos = data.draw(st.integers(0, len(payload) - 1))
        payload[pos] = data.draw(st.integers(0, 255))
    try:
        header = wire.decode_message_header(bytes(payload))
        if header.name == "journal":
            wire.decode_message_body(
                bytes(payload), header, qjournal_thrift.QJournalProtocol.journal_args
            )
    except ProtocolError:
        pass


def test_thrift_from_bytes_rejects_trailing_and_garbage() -> None:
    good = messages.serialize(SegmentState(1, 2, True))
    with pytest.raises(ProtocolError):
        wire.thrift_from_bytes(qjournal_thrift.SegmentState, good + b"\x00")
    with pytest.raises(ProtocolError):
        wire.thrift_from_bytes(qjournal_thrift.SegmentState, good[:-3])
    # a field of the wrong wire type is skipped by thriftpy2 → required check fails later
    wrong = struct.pack(">bhi", 8, 1, 5) + b"\x00"
    tseg = wire.thrift_from_bytes(qjournal_thrift.SegmentState, wrong)
    with pytest.raises(IllegalArgumentException):
        from_thrift(tseg)
