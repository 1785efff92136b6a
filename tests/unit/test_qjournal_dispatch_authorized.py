"""A writer's batches on the one-pass and group paths with an authorizer (TLS on): each
journal call is authorized exactly once, before the handler sees it, and a refused one
touches nothing and is answered with the AuthorizationException in its turn.

In process, no socket: the dispatcher is fed payloads as a connection's reader feeds
them, and the early acknowledgements go to a recording fake.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest

from hadoop_qjm.common.exceptions import AuthorizationException
from hadoop_qjm.ipc import call_context
from hadoop_qjm.qjournal.protocol import wire
from hadoop_qjm.qjournal.protocol.exceptions import from_wire
from hadoop_qjm.qjournal.protocol.journal_call import (
    JournalCall,
    encode_journal_body,
    encode_journal_head,
)
from hadoop_qjm.qjournal.server.journal_node_rpc_server import QJournalProtocolDispatcher

pytestmark = pytest.mark.timeout(30)

CLIENT_IP = "10.1.2.3"
JID = "jid1"


def _payload(seqid: int, first_txid: int) -> bytes:
    head = encode_journal_head(seqid, JID, 3, seqid, first_txid - 1, None)
    return head + encode_journal_body(first_txid, 1, b"x", 1, None)


class OnePassHandler:
    """A handler with the one-pass and group paths, recording what reached it."""

    def __init__(self) -> None:
        self.in_order: list[int] = []  # seqids written on the one-pass path
        self.groups: list[list[int]] = []  # seqids of each group written together
        self.general: list[int] = []  # first txids the general path's journal() got

    def journal_in_order(self, call: JournalCall, acknowledge: Callable[[], None] | None) -> bool:
        self.in_order.append(call.seqid)
        if acknowledge is not None:
            acknowledge()
        return True

    def journal_in_order_group(
        self, calls: Sequence[JournalCall], acknowledge: Callable[[int], None] | None
    ) -> list[Exception | None]:
        self.groups.append([call.seqid for call in calls])
        if acknowledge is not None:
            acknowledge(len(calls))
        return [None] * len(calls)

    def journal(self, req_info, first_txn_id, num_txns, records, segment_txn_id, ns_id) -> None:
        self.general.append(first_txn_id)


class RecordingEarly:
    """An EarlyAcknowledger that records what would go out, in order."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []
        self._prepared: list[bytes] = []
        self._acked = 0

    def prepare(self, reply: bytes) -> Callable[[], None]:
        self._prepared = [reply]
        return lambda: None

    def prepare_group(self, replies: Sequence[bytes]) -> Callable[[int], None]:
        self._prepared = list(replies)
        return lambda count: None

    def finish(self, reply: bytes | list[bytes]) -> None:
        self.sent.extend(reply if isinstance(reply, list) else [reply])


class Authorizer:
    """Lets ``allowed`` through; refuses the rest (and the calls of ``refuse_seqids``),
    recording every check."""

    def __init__(self, allowed: set[str]) -> None:
        self.allowed = allowed
        self.checks: list[tuple[str, str | None, str | None]] = []
        self.refusals = 0

    def __call__(self, rpc: str, identity: str | None, remote_ip: str | None) -> None:
        self.checks.append((rpc, identity, remote_ip))
        if identity not in self.allowed:
            self.refusals += 1
            raise AuthorizationException(f"User {identity} is not authorized to call {rpc}")


def _error(reply: bytes, seqid: int, dispatcher: QJournalProtocolDispatcher) -> Exception | None:
    rpc = dispatcher._rpcs["journal"]
    result = wire.decode_reply(reply, "journal", seqid, rpc.result_cls)
    return None if result.e is None else from_wire(result.e)


@pytest.fixture
def connection_of():
    """Serve the calls of this test as a connection whose certificate names ``identity``."""

    def enter(identity: str) -> None:
        call_context.enter_connection(object(), identity)

    yield enter
    call_context.leave_connection()


def test_an_allowed_batch_takes_the_one_pass_path_authorized_once(connection_of) -> None:
    handler, authorizer = OnePassHandler(), Authorizer({"nn1"})
    dispatcher = QJournalProtocolDispatcher(handler, authorizer=authorizer)  # type: ignore[arg-type]
    connection_of("nn1")
    reply = dispatcher.process(_payload(7, 10), CLIENT_IP)
    assert _error(reply, 7, dispatcher) is None
    assert handler.in_order == [7] and handler.general == []
    assert authorizer.checks == [("journal", "nn1", CLIENT_IP)]


def test_a_refused_batch_reaches_no_path_and_is_refused_once(connection_of) -> None:
    handler, authorizer = OnePassHandler(), Authorizer({"nn1"})
    dispatcher = QJournalProtocolDispatcher(handler, authorizer=authorizer)  # type: ignore[arg-type]
    connection_of("intruder")
    reply = dispatcher.process(_payload(7, 10), CLIENT_IP, early=RecordingEarly())  # type: ignore[arg-type]
    error = _error(reply, 7, dispatcher)
    assert isinstance(error, AuthorizationException)
    assert "intruder is not authorized to call journal" in str(error)
    assert handler.in_order == [] and handler.general == [] and handler.groups == []
    assert authorizer.refusals == 1 and len(authorizer.checks) == 1


def test_batches_read_together_are_one_group_each_authorized_once(connection_of) -> None:
    handler, authorizer = OnePassHandler(), Authorizer({"nn1"})
    dispatcher = QJournalProtocolDispatcher(handler, authorizer=authorizer)  # type: ignore[arg-type]
    connection_of("nn1")
    early = RecordingEarly()
    dispatcher.process_many([_payload(s, 10 + s) for s in (1, 2, 3)], CLIENT_IP, early)  # type: ignore[arg-type]
    assert handler.groups == [[1, 2, 3]] and handler.general == []
    assert [_error(r, s, dispatcher) for r, s in zip(early.sent, (1, 2, 3), strict=True)] == [
        None
    ] * 3
    assert authorizer.checks == [("journal", "nn1", CLIENT_IP)] * 3


def test_a_refused_call_ends_the_group_and_is_answered_in_its_turn(connection_of) -> None:
    class RefuseSecond(Authorizer):
        def __call__(self, rpc, identity, remote_ip) -> None:
            self.checks.append((rpc, identity, remote_ip))
            if len(self.checks) == 2:
                self.refusals += 1
                raise AuthorizationException(f"User {identity} is not authorized to call {rpc}")

    handler, authorizer = OnePassHandler(), RefuseSecond({"nn1"})
    dispatcher = QJournalProtocolDispatcher(handler, authorizer=authorizer)  # type: ignore[arg-type]
    connection_of("nn1")
    early = RecordingEarly()
    dispatcher.process_many([_payload(s, 10 + s) for s in (1, 2, 3, 4)], CLIENT_IP, early)  # type: ignore[arg-type]
    # 1 alone (a group of one takes the one-pass path), 2 refused, then 3 and 4 together.
    assert handler.in_order == [1] and handler.groups == [[3, 4]] and handler.general == []
    errors = [_error(r, s, dispatcher) for r, s in zip(early.sent, (1, 2, 3, 4), strict=True)]
    assert errors[0] is None and errors[2:] == [None, None]
    assert isinstance(errors[1], AuthorizationException)
    assert len(authorizer.checks) == 4 and authorizer.refusals == 1
