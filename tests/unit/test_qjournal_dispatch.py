"""Proxy -> dispatcher -> handler -> fake Journal, in process: every RPC, no socket.

The proxy encodes real frames and the dispatcher decodes them, so this
checks each RPC's argument conversion in both directions.
"""

from __future__ import annotations

import threading
import time

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, INVALID_TXID
from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException
from hadoop_qjm.common.storage_info import NamespaceInfo, StorageInfo
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.protocol import wire
from hadoop_qjm.qjournal.protocol.exceptions import (
    CacheMissException,
    JournalNotFormattedException,
    JournalOutOfSyncException,
    RemoteException,
)
from hadoop_qjm.qjournal.protocol.messages import (
    GetEditLogManifestResponse,
    GetJournalStateResponse,
    NewEpochResponse,
    RequestInfo,
    SegmentState,
)
from hadoop_qjm.qjournal.protocol.thrift_idl import SERVICES, qjournal_thrift
from hadoop_qjm.qjournal.server.journal_node_rpc_server import (
    RPC_METHODS,
    HandlerSlots,
    QJournalProtocolDispatcher,
    QJournalProtocolHandler,
)
from tests.qjournal_fakes import EDITS, MANIFEST, PREPARE_RESPONSE, FakeJournalNode

CLIENT_IP = "10.1.2.3"
NS_INFO = NamespaceInfo(12345, "CID-test", "BP-test", 5, -67, "build-1", "3.4.0")
REQ = RequestInfo("jid1", epoch=3, ipc_serial_number=9, committed_txid=41, name_service_id="ns1")


class LoopbackChannel:
    """Hands each payload straight to the dispatcher (what an in-process transport does)."""

    def __init__(self, dispatcher: QJournalProtocolDispatcher) -> None:
        self.dispatcher = dispatcher
        self.payloads: list[bytes] = []

    def call(self, payload: bytes) -> bytes:
        self.payloads.append(payload)
        return self.dispatcher.process(payload, CLIENT_IP)

    def reset(self) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def jn() -> FakeJournalNode:
    return FakeJournalNode()


@pytest.fixture
def proxy(jn: FakeJournalNode) -> QJournalProtocolProxy:
    dispatcher = QJournalProtocolDispatcher(QJournalProtocolHandler(jn))
    return QJournalProtocolProxy("jn1", 8485, channel=LoopbackChannel(dispatcher))


def test_every_rpc_has_a_handler_method() -> None:
    names = {name for service in SERVICES for name in service.thrift_services}
    assert set(RPC_METHODS) == names
    for method in RPC_METHODS.values():
        assert callable(getattr(QJournalProtocolHandler, method))


def test_journal_id_and_name_service_reach_the_journal_node(
    proxy: QJournalProtocolProxy, jn: FakeJournalNode
) -> None:
    assert proxy.is_formatted("jid1", "ns1") is True
    assert proxy.is_formatted("jid2") is True
    assert jn.lookups == [("jid1", "ns1"), ("jid2", None)]
    assert jn.journal("jid1").calls == [("is_formatted", (), CLIENT_IP)]


def test_false_and_zero_results_are_results(
    proxy: QJournalProtocolProxy, jn: FakeJournalNode
) -> None:
    jn.journal("jid1").results.update(is_formatted=False, get_journal_ctime=0, can_roll_back=False)
    assert proxy.is_formatted("jid1") is False
    assert proxy.get_journal_ctime("jid1") == 0
    storage = StorageInfo(-67, 1, "c", 0)
    assert proxy.can_roll_back("jid1", storage, storage, -67) is False


def test_bad_journal_id_is_illegal_argument(proxy: QJournalProtocolProxy) -> None:
    with pytest.raises(IllegalArgumentException, match="bad journal id: ../x"):
        proxy.is_formatted("../x")


def test_get_journal_state_uses_the_journal_nodes_http_endpoint(
    proxy: QJournalProtocolProxy,
) -> None:
    assert proxy.get_journal_state("jid1") == GetJournalStateResponse(
        7, 8480, "http://127.0.0.1:8480"
    )


def test_writer_rpcs_carry_request_info(proxy: QJournalProtocolProxy, jn: FakeJournalNode) -> None:
    proxy.journal(REQ, 1, 5, 3, b"records")
    proxy.heartbeat(REQ)
    proxy.start_log_segment(REQ, 8)
    proxy.start_log_segment(REQ, 9, layout_version=-60)
    proxy.finalize_log_segment(REQ, 1, 7)
    proxy.purge_logs_older_than(REQ, 5)
    assert proxy.prepare_recovery(REQ, 7) == PREPARE_RESPONSE
    proxy.accept_recovery(REQ, SegmentState(7, 9, True), "http://jn2:8480/getJournal?x=1")
    calls = [(name, args) for name, args, _ in jn.journal("jid1").calls]
    assert calls == [
        ("journal", (REQ, 1, 5, 3, b"records")),
        ("heartbeat", (REQ,)),
        ("start_log_segment", (REQ, 8, CURRENT_LAYOUT_VERSION)),
        ("start_log_segment", (REQ, 9, -60)),
        ("finalize_log_segment", (REQ, 1, 7)),
        ("purge_logs_older_than", (REQ, 5)),
        ("prepare_recovery", (REQ, 7)),
        ("accept_recovery", (REQ, SegmentState(7, 9, True), "http://jn2:8480/getJournal?x=1")),
    ]
    assert jn.lookups == [("jid1", "ns1")] * 8


def test_request_without_committed_txid(proxy: QJournalProtocolProxy, jn: FakeJournalNode) -> None:
    req = RequestInfo("jid1", 1, 0)
    proxy.heartbeat(req)
    received = jn.journal("jid1").calls[0][1][0]
    assert received == req and received.committed_txid == INVALID_TXID


def test_non_writer_rpcs(proxy: QJournalProtocolProxy, jn: FakeJournalNode) -> None:
    proxy.format("jid1", NS_INFO, force=True)
    assert proxy.new_epoch("jid1", NS_INFO, 4) == NewEpochResponse(42)
    expected = GetEditLogManifestResponse(MANIFEST, 8480, "http://127.0.0.1:8480")
    assert proxy.get_edit_log_manifest("jid1", 1, in_progress_ok=True) == expected
    assert proxy.get_edit_log_manifest_from_journal("jid1", 0, False, "ns1") == expected
    assert proxy.get_journaled_edits("jid1", 5, 100) == EDITS
    proxy.discard_segments("jid1", 10)
    assert proxy.get_journal_ctime("jid1") == 1234567890123
    proxy.do_pre_upgrade("jid1")
    storage = StorageInfo(-67, 12345, "CID-test", 9)
    proxy.do_upgrade("jid1", storage)
    proxy.do_finalize("jid1")
    assert proxy.can_roll_back("jid1", storage, StorageInfo(-66, 12345, "CID-test", 1), -66)
    proxy.do_rollback("jid1", "ns1")
    calls = [(name, args) for name, args, _ in jn.journal("jid1").calls]
    assert calls == [
        ("format", (NS_INFO, True)),
        ("new_epoch", (NS_INFO, 4)),
        ("get_edit_log_manifest", (1, True)),
        ("get_edit_log_manifest", (0, False)),
        ("get_journaled_edits", (5, 100)),
        ("discard_segments", (10,)),
        ("get_journal_ctime", ()),
        ("do_pre_upgrade", ()),
        ("do_upgrade", (storage,)),
        ("do_finalize", ()),
        ("can_roll_back", (storage, StorageInfo(-66, 12345, "CID-test", 1), -66)),
        ("do_rollback", ()),
    ]
    assert MANIFEST.committed_txn_id == INVALID_TXID


@pytest.mark.parametrize(
    "exc",
    [
        JournalNotFormattedException("Journal /x not formatted ; journal id: jid1"),
        JournalOutOfSyncException("Can't write, no segment open ; journal id: jid1"),
        IOException("IPC's epoch 1 is less than the last promised epoch 3 ; journal id: jid1"),
        CacheMissException("miss", 9),
    ],
    ids=lambda e: type(e).__name__,
)
def test_journal_exceptions_arrive_typed(
    proxy: QJournalProtocolProxy, jn: FakeJournalNode, exc: Exception
) -> None:
    jn.journal("jid1").errors["heartbeat"] = exc
    with pytest.raises(type(exc)) as raised:
        proxy.heartbeat(REQ)
    assert type(raised.value) is type(exc)
    assert str(raised.value) == str(exc)
    if isinstance(exc, CacheMissException):
        assert raised.value.cache_miss_amount == 9


def test_unexpected_errors_and_bad_results_become_remote_exceptions(
    proxy: QJournalProtocolProxy, jn: FakeJournalNode, caplog: pytest.LogCaptureFixture
) -> None:
    journal = jn.journal("jid1")
    journal.errors["heartbeat"] = ZeroDivisionError("boom")
    with pytest.raises(RemoteException, match="boom") as raised:
        proxy.heartbeat(REQ)
    assert raised.value.class_name == "ZeroDivisionError"
    assert "Unexpected error in heartbeat" in caplog.text
    journal.results["get_journal_ctime"] = "not a number"
    with pytest.raises(RemoteException):
        proxy.get_journal_ctime("jid1")
    # the dispatcher is still fine
    assert proxy.is_formatted("jid1")


def test_the_caller_address_is_visible_to_the_journal(
    proxy: QJournalProtocolProxy, jn: FakeJournalNode
) -> None:
    proxy.heartbeat(REQ)
    assert jn.journal("jid1").calls[0][2] == CLIENT_IP


def test_missing_required_argument_is_rejected_before_the_journal(jn: FakeJournalNode) -> None:
    dispatcher = QJournalProtocolDispatcher(QJournalProtocolHandler(jn))
    args = qjournal_thrift.QJournalProtocol.isFormatted_args()  # no jid
    payload = wire.encode_message("isFormatted", wire.TMessageType.CALL, 1, args)
    reply = dispatcher.process(payload)
    header = wire.decode_message_header(reply)
    result = wire.decode_message_body(
        reply, header, qjournal_thrift.QJournalProtocol.isFormatted_result
    )
    assert result.e.className == IllegalArgumentException.java_name
    assert "jid" in result.e.message
    assert jn.lookups == []


def test_unknown_method_gets_an_application_exception(jn: FakeJournalNode) -> None:
    dispatcher = QJournalProtocolDispatcher(QJournalProtocolHandler(jn))
    args = qjournal_thrift.QJournalProtocol.isFormatted_args(jid="j")
    for name in ("noSuchMethod", "InterQJournalProtocol:isFormatted"):
        reply = dispatcher.process(wire.encode_message(name, wire.TMessageType.CALL, 3, args))
        header = wire.decode_message_header(reply)
        assert (header.type, header.seqid) == (wire.TMessageType.EXCEPTION, 3)


def test_multiplexed_names_are_accepted(jn: FakeJournalNode) -> None:
    dispatcher = QJournalProtocolDispatcher(QJournalProtocolHandler(jn))
    args = qjournal_thrift.QJournalProtocol.isFormatted_args(jid="j")
    reply = dispatcher.process(
        wire.encode_message("QJournalProtocol:isFormatted", wire.TMessageType.CALL, 3, args)
    )
    header = wire.decode_message_header(reply)
    result = wire.decode_message_body(
        reply, header, qjournal_thrift.QJournalProtocol.isFormatted_result
    )
    assert result.success is True


def test_replies_are_not_calls(jn: FakeJournalNode) -> None:
    dispatcher = QJournalProtocolDispatcher(QJournalProtocolHandler(jn))
    result = qjournal_thrift.QJournalProtocol.isFormatted_result(success=True)
    with pytest.raises(wire.ProtocolError):
        dispatcher.process(wire.encode_message("isFormatted", wire.TMessageType.REPLY, 1, result))


def test_a_value_that_does_not_fit_is_illegal_argument(proxy: QJournalProtocolProxy) -> None:
    with pytest.raises(IllegalArgumentException, match="Cannot encode"):
        proxy.journal(REQ, 1, 1, 2**40, b"x")  # numTxns is an i32


class _GatedHandler:
    """is_formatted() blocks until ``gate`` opens; records that it started."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.started = threading.Semaphore(0)

    def is_formatted(self, jid: str, name_service_id: str | None) -> bool:
        self.started.release()
        assert self.gate.wait(30)
        return True


@pytest.mark.timeout(60)
@pytest.mark.parametrize("make_slots", [HandlerSlots, threading.BoundedSemaphore])
def test_only_calls_waiting_for_a_handler_count_as_queued(make_slots) -> None:
    handler = _GatedHandler()
    dispatcher = QJournalProtocolDispatcher(handler, make_slots(1))
    args = qjournal_thrift.QJournalProtocol.isFormatted_args(jid="j")
    payload = wire.encode_message("isFormatted", wire.TMessageType.CALL, 1, args)
    replies: list[bytes] = []
    callers = [
        threading.Thread(target=lambda: replies.append(dispatcher.process(payload)))
        for _ in range(3)
    ]
    callers[0].start()
    assert handler.started.acquire(timeout=30)  # holds the only handler slot
    assert dispatcher.call_queue_length == 0
    for t in callers[1:]:
        t.start()
    deadline = time.monotonic() + 30
    while dispatcher.call_queue_length < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert dispatcher.call_queue_length == 2
    handler.gate.set()
    for t in callers:
        t.join(30)
    assert len(replies) == 3 and dispatcher.call_queue_length == 0


def test_handler_slots_count_like_a_bounded_semaphore() -> None:
    slots = HandlerSlots(2)
    assert slots.acquire() and slots.acquire(blocking=False)
    assert not slots.acquire(blocking=False)
    assert not slots.acquire(timeout=0.01)
    slots.release()
    assert slots.acquire(timeout=0.01)
    slots.release()
    slots.release()
    with pytest.raises(ValueError, match="too many"):
        slots.release()
    with pytest.raises(ValueError):
        HandlerSlots(0)


@pytest.mark.timeout(60)
def test_a_released_handler_slot_wakes_a_waiting_call() -> None:
    slots = HandlerSlots(1)
    assert slots.acquire()
    got: list[bool] = []
    waiter = threading.Thread(target=lambda: got.append(slots.acquire(timeout=30)))
    waiter.start()
    slots.release()
    waiter.join(30)
    assert got == [True]


def test_a_handler_without_the_one_pass_path_gets_every_journal_call() -> None:
    """A handler that only has journal() (a duck-typed one) still gets the calls."""

    class JournalOnly:
        def __init__(self) -> None:
            self.calls: list[tuple] = []

        def journal(self, req_info, first, num, records, segment, ns_id) -> None:
            self.calls.append((req_info.ipcSerialNumber, first, num, records, segment))

    handler = JournalOnly()
    proxy = QJournalProtocolProxy(
        "jn",
        8485,
        channel=LoopbackChannel(QJournalProtocolDispatcher(handler)),  # type: ignore[arg-type]
    )
    proxy.journal(REQ, 1, 42, 2, b"ab")
    assert handler.calls == [(9, 42, 2, b"ab", 1)]
