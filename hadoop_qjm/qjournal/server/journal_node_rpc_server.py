"""The JournalNode's RPC server (Hadoop's JournalNodeRpcServer): QJournalProtocol and
InterQJournalProtocol over Thrift.

Three layers, each usable alone:

* :class:`QJournalProtocolHandler` (its own module, ``qjournal_protocol_handler``) —
  one method per RPC; converts the Thrift
  arguments with ``messages`` and delegates to
  ``journal_node.get_or_create_journal(jid, name_service_id)``. No branching,
  no I/O (STYLE.md habit 2).
* :class:`QJournalProtocolDispatcher` — one framed payload in, one out:
  decodes the call, runs the handler, encodes the result or the error. It
  never raises for a failed call (every exception becomes a
  ``QJournalException`` reply); only undecodable input raises
  :class:`~hadoop_qjm.qjournal.protocol.wire.ProtocolError`. An in-process
  transport can drive it directly, with no socket. A writer's next batch — a
  ``journal`` call in the canonical encoding that ``Journal.journal_in_order``
  takes — is read and written in one pass; anything else takes the general path.
* :func:`JournalNodeRpcServer` (Hadoop's JournalNodeRpcServer) — the sockets: the
  IPC server (:class:`~hadoop_qjm.ipc.server.Server`: an accept thread and one reader
  thread per connection) configured with that dispatcher and a
  :class:`PipelinedBatchReader`; at most ``handler_count`` calls execute at once (Hadoop's
  ``dfs.journalnode.handler.count`` handler threads).

Both services share the port (as in Hadoop, where InterQJournalProtocol is
added to the same RPC server); their method names are disjoint, so the
dispatcher looks up the plain method name and also accepts a
``"Service:method"`` name from a TMultiplexedProtocol client.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Sequence
from typing import Any

from hadoop_qjm.common.exceptions import (
    AuthorizationException,
)
from hadoop_qjm.common.security.caller_identity import CallerIdentity
from hadoop_qjm.ipc import call_context
from hadoop_qjm.ipc.call_context import remote_connection, remote_ip, remote_user
from hadoop_qjm.ipc.dispatcher import HandlerSlots, Rpc, RpcDispatcher, rpc_table
from hadoop_qjm.ipc.server import DEFAULT_HANDLER_COUNT, Server, serve_frames
from hadoop_qjm.qjournal.protocol.exceptions import to_wire
from hadoop_qjm.qjournal.protocol.journal_call import JournalCall, parse_journal_call
from hadoop_qjm.qjournal.protocol.sockets import (
    FrameReader,
    ServerSocketFactoryLike,
    sends_without_waiting,
)
from hadoop_qjm.qjournal.protocol.thrift_idl import SERVICES
from hadoop_qjm.qjournal.protocol.wire import (
    DEFAULT_MAX_FRAME_SIZE,
    ProtocolError,
    TMessageType,
    check_required,
    decode_flat_struct,
    decode_message_body,
    decode_message_header,
    encode_message,
    encode_void_reply,
    read_message_header,
)
from hadoop_qjm.qjournal.server.early_acknowledger import EarlyAcknowledger
from hadoop_qjm.qjournal.server.qjournal_protocol_handler import (
    RPC_METHODS,
    QJournalProtocolHandler,
)

__all__ = [
    "DEFAULT_HANDLER_COUNT",
    "RPC_METHODS",
    "HandlerSlots",
    "PipelinedBatchReader",
    "QJournalProtocolDispatcher",
    "QJournalProtocolHandler",
    "RpcAuthorizer",
    "JournalNodeRpcServer",
    "remote_connection",
    "remote_ip",
    "remote_user",
]

LOG = logging.getLogger(__name__)

#: At most this many calls that arrived together on one connection are served as one
#: group (``QJournalProtocolDispatcher.process_many``): the first one's acknowledgement
#: waits for the writes of all of them.
MAX_CALLS_READ_TOGETHER = 64

# remote_ip/remote_user/remote_connection: the call context every RPC server shares
# (re-exported here for the Journal and its format guard).
_current_remote_user = remote_user  # process() has a parameter of that name


#: ``authorize(rpc_name, identity, remote_ip)``: returns if the call may run, else raises
#: AuthorizationException (and logs and counts the refusal).
RpcAuthorizer = Callable[[str, "str | None", "str | None"], None]


class QJournalProtocolDispatcher(RpcDispatcher):
    """Turns one request payload into one reply payload (see the module docstring).

    At most ``handler_slots`` (a :class:`HandlerSlots` or a semaphore;
    ``None``: no limit) handler calls run at once; decoding and encoding
    happen outside the limit. With an ``authorizer`` every call is checked
    against the caller's identity before the handler sees it — a writer's batch
    on the one-pass path too; a refused call is answered with the
    AuthorizationException.
    """

    def __init__(
        self,
        handler: QJournalProtocolHandler,
        handler_slots: HandlerSlots | threading.Semaphore | None = None,
        authorizer: RpcAuthorizer | None = None,
    ) -> None:
        super().__init__(rpc_table(SERVICES, method_names=RPC_METHODS), handler_slots, LOG)
        self.handler = handler
        self._authorize = authorizer
        # A handler's ``await_<method>`` runs before ``<method>`` takes a slot (long polls).
        self._waits: dict[str, Callable[..., None]] = {
            rpc.method_name: getattr(handler, "await_" + rpc.method_name)
            for rpc in self._rpcs.values()
            if hasattr(handler, "await_" + rpc.method_name)
        }
        # The one-pass path for a writer's next batch, for a handler that has one; with an
        # authorizer each such call is authorized first, as every other call is.
        self._one_pass: Callable[[JournalCall, Callable[[], None] | None], bool] | None = getattr(
            handler, "journal_in_order", None
        )
        # Several of them read together: one fsync for all (process_many).
        self._group: Callable[..., list[Exception | None]] | None = getattr(
            handler, "journal_in_order_group", None
        )

    def process(
        self,
        payload: bytes,
        remote_ip: str | None = None,
        remote_user: str | None = None,
        early: EarlyAcknowledger | None = None,
        *,
        authorized: bool = False,
    ) -> bytes:
        """The reply payload for the request ``payload``.

        ``remote_user`` is the caller's verified identity (default: the
        connection's, :func:`remote_user`). Raises ProtocolError if ``payload``
        is not one well-formed call; the connection it came from should then be
        dropped. With ``early``, a writer's next batch (the one-pass path) is
        acknowledged through it the moment the batch is durable, from inside the
        Journal's lock and before the metrics count it; the reply returned is then
        the same acknowledgement, for :meth:`EarlyAcknowledger.finish` to drop.
        ``authorized``: the authorizer has let this call through already (process_many).
        """
        if self._one_pass is not None:
            # Most calls are a writer's next batch: read and written in one pass.
            call = parse_journal_call(payload)
            if call is not None:
                if self._authorize is not None and not authorized:
                    refusal = self._refusal(
                        self._rpcs["journal"], "journal", call.seqid, remote_ip, remote_user
                    )
                    if refusal is not None:
                        return refusal
                    authorized = True
                reply = self._journal_in_order(call, remote_ip, early)
                if reply is not None:
                    return reply
        name, mtype, seqid, body_offset = read_message_header(payload)
        rpc = self._by_name.get(name)
        if rpc is not None and mtype == TMessageType.CALL:
            # The hot calls (journal, heartbeat) are checked and decoded in one pass.
            args = decode_flat_struct(payload, body_offset, rpc.args_cls)
            if args is not None:
                return self._process_decoded(
                    rpc, name, seqid, args, remote_ip, remote_user, True, authorized
                )
        # Anything else is checked whole (a bad frame raises here), then decoded.
        header = decode_message_header(payload)
        if header.type != TMessageType.CALL:
            raise ProtocolError(f"expected a CALL message, got type {header.type}")
        if rpc is None:
            return self._unknown_method_reply(header.name, header.seqid, remote_ip)
        args = decode_message_body(payload, header, rpc.args_cls)
        return self._process_decoded(
            rpc, header.name, header.seqid, args, remote_ip, remote_user, False, authorized
        )

    def process_many(
        self, payloads: Sequence[bytes], remote_ip: str | None, early: EarlyAcknowledger
    ) -> None:
        """Serve several calls read together off one connection, sending every reply
        through ``early``, in order.

        Two or more ``journal`` calls in a row for one journal (a writer's pipelined
        batches) are written with one fsync and acknowledged together (the group fsync,
        ``Journal.journal_in_order_group``); a call that is not the writer's next batch
        ends its group and is served alone, as :meth:`process` serves it, after the
        replies before it. Raises ProtocolError like :meth:`process`.
        """
        count = len(payloads)
        calls = (
            [parse_journal_call(p) for p in payloads]
            if self._one_pass is not None and self._group is not None
            else [None] * count
        )
        # With an authorizer, each journal call is authorized once, here: a refused one
        # is answered in its turn and ends the group before it.
        refused: dict[int, bytes] = {}
        if self._authorize is not None:
            rpc = self._rpcs["journal"]
            for n, call in enumerate(calls):
                if call is not None:
                    refusal = self._refusal(rpc, "journal", call.seqid, remote_ip, None)
                    if refusal is not None:
                        refused[n] = refusal
                        calls[n] = None
        i = 0
        while i < count:
            if refused and i in refused:
                early.finish(refused[i])
                i += 1
                continue
            call = calls[i]
            if call is not None:
                end = i + 1
                while end < count and calls[end] is not None:
                    if calls[end].journal_id != call.journal_id:  # type: ignore[union-attr]
                        break
                    end += 1
                if end - i > 1:
                    handled = self._journal_group(calls[i:end], remote_ip, early)  # type: ignore[arg-type]
                    if handled:
                        i += handled
                        continue
            early.finish(
                self.process(payloads[i], remote_ip, early=early, authorized=call is not None)
            )
            i += 1

    def _journal_group(
        self, calls: list[JournalCall], remote_ip: str | None, early: EarlyAcknowledger
    ) -> int:
        """Serve the longest prefix of ``calls`` the journal takes as one group; the number
        of calls served (0: none, nothing done)."""
        slots = self._slots
        if slots is not None:
            self._take_slot(slots)
        successes = [encode_void_reply("journal", call.seqid) for call in calls]
        try:
            outcomes = self._group(calls, early.prepare_group(successes))  # type: ignore[misc]
        except Exception as exc:  # unexpected: every call of the group gets the error
            outcomes = [exc] * len(calls)
        finally:
            if slots is not None:
                slots.release()
        rpc = self._rpcs["journal"]
        replies = [
            successes[n]
            if exc is None
            else self._failure_reply(rpc, "journal", calls[n].seqid, remote_ip, exc)
            for n, exc in enumerate(outcomes)
        ]
        early.finish(replies)
        return len(outcomes)

    def _process_decoded(
        self,
        rpc: Rpc,
        name: str,
        seqid: int,
        args: Any,
        remote_ip: str | None,
        remote_user: str | None,
        checked: bool,
        authorized: bool = False,
    ) -> bytes:
        """The reply to a decoded call; ``checked``: its required fields are known to be set;
        ``authorized``: the authorizer has let it through already."""
        if self._authorize is not None and not authorized:
            refusal = self._refusal(rpc, name, seqid, remote_ip, remote_user)
            if refusal is not None:
                return refusal
        try:
            result = self._call(rpc, args, remote_ip, checked)
            if result is None:
                return encode_void_reply(name, seqid)
            return encode_message(name, TMessageType.REPLY, seqid, result)
        except Exception as exc:  # every failure becomes a reply
            # Includes a result the handler returned that cannot be encoded.
            return self._failure_reply(rpc, name, seqid, remote_ip, exc)

    def _refusal(
        self, rpc: Rpc, name: str, seqid: int, remote_ip: str | None, remote_user: str | None
    ) -> bytes | None:
        """The AuthorizationException reply if the authorizer refuses the call (it logs
        and counts the refusal), else None (the call may run). Hadoop's Server.authorize:
        before the handler sees the call's arguments."""
        try:
            self._authorize(  # type: ignore[misc]
                name.rpartition(":")[2],
                remote_user if remote_user is not None else _current_remote_user(),
                remote_ip,
            )
        except AuthorizationException as exc:
            result = rpc.result_cls()
            result.e = to_wire(exc)
            return encode_message(name, TMessageType.REPLY, seqid, result)
        return None

    def _journal_in_order(
        self, call: JournalCall, remote_ip: str | None, early: EarlyAcknowledger | None
    ) -> bytes | None:
        """The reply to ``call`` if the handler took it in one pass; None (nothing done)
        if it must take the general path: not the in-order case, or every handler busy."""
        slots = self._slots
        if slots is not None and not slots.acquire(blocking=False):
            return None  # the general path queues it
        # (The slot is given back after an early acknowledgement: a writer's next call
        # on another connection may find none free for an instant, and queue.)
        reply = encode_void_reply("journal", call.seqid)
        acknowledge = None if early is None else early.prepare(reply)
        # No remote_ip() for this call: only checkRequest's promise of a newer epoch
        # logs it, which is never the in-order case.
        try:
            if not self._one_pass(call, acknowledge):  # type: ignore[misc]
                return None
        except Exception as exc:  # the write failed: the usual error reply
            return self._failure_reply(self._rpcs["journal"], "journal", call.seqid, remote_ip, exc)
        finally:
            if slots is not None:
                slots.release()
        return reply

    def _failure_reply(
        self, rpc: Rpc, name: str, seqid: int, remote_ip: str | None, exc: Exception
    ) -> bytes:
        self._log_failure(name.rpartition(":")[2], remote_ip, exc)
        result = rpc.result_cls()
        result.e = to_wire(exc)
        return encode_message(name, TMessageType.REPLY, seqid, result)

    def _call(self, rpc: Rpc, args: Any, remote_ip: str | None, checked: bool = False) -> Any:
        """The handler's result as the RPC's result struct; None for a call that returns
        nothing (the reply is then an empty struct)."""
        if not checked:
            check_required(args)
        method = getattr(self.handler, rpc.method_name)
        values = [getattr(args, name) for name in rpc.arg_names]
        wait = self._waits.get(rpc.method_name)
        if wait is not None:
            # A long poll (getJournaledEdits' waitMs) waits here, before it takes a
            # handler slot: a waiting standby never holds up a writer's batch.
            wait(*values)
        slots = self._slots
        if slots is not None:
            self._take_slot(slots)  # all handlers busy: this call waits in the queue
        call_context.enter_call(remote_ip)
        try:
            value = method(*values)
        finally:
            call_context.leave_call()
            if slots is not None:
                slots.release()
        if not rpc.returns_value:
            return None
        result = rpc.result_cls()
        result.success = value
        return result


class PipelinedBatchReader:
    """How the JournalNode's server reads a connection (its ``serve_connection``,
    :data:`~hadoop_qjm.ipc.server.ConnectionServer`): the calls of a writer that arrived
    together (its pipelined batches) are served together through ``dispatcher``, so that
    they share one fsync (group fsync, :meth:`QJournalProtocolDispatcher.process_many`), and
    each batch is acknowledged the moment it is durable (:class:`EarlyAcknowledger`).

    Only on a plain, blocking socket or a TLS connection over one (``sends_without_waiting``):
    the acknowledgement must go out without waiting, which neither an SSLSocket nor a
    socket with a timeout (Python waits for it to be writable first) can do; any other
    socket is served one frame at a time
    (:func:`~hadoop_qjm.ipc.server.serve_frames`). The reader thread runs the call itself
    (holding a handler slot inside ``process()``): no hand-off to a handler thread and back.
    """

    def __init__(
        self,
        dispatcher: QJournalProtocolDispatcher,
        max_calls_together: int = MAX_CALLS_READ_TOGETHER,
    ) -> None:
        self.dispatcher = dispatcher
        self.max_calls_together = max_calls_together

    def __call__(self, sock: socket.socket, reader: FrameReader, client_ip: str) -> None:
        process = self.dispatcher.process
        if not sends_without_waiting(sock):
            serve_frames(process, sock, reader, client_ip)
            return
        early = EarlyAcknowledger(sock)
        read_buffered = reader.read_buffered_frame
        while True:
            payload = reader.read_frame()
            if payload is None:
                return
            following = read_buffered()
            if following is None:
                early.finish(process(payload, client_ip, early=early))
                continue
            # Calls that arrived together (a writer's pipelined batches): served
            # together, so that its batches share one fsync (group fsync).
            payloads = [payload, following]
            while len(payloads) < self.max_calls_together:
                following = read_buffered()
                if following is None:
                    break
                payloads.append(following)
            self.dispatcher.process_many(payloads, client_ip, early)


def JournalNodeRpcServer(
    journal_node: Any,
    bind_host: str = "0.0.0.0",
    port: int = 8485,
    handler_count: int = DEFAULT_HANDLER_COUNT,
    max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
    socket_factory: ServerSocketFactoryLike | None = None,
    authorizer: RpcAuthorizer | None = None,
    caller_identity: CallerIdentity | None = None,
) -> Server:
    """The JournalNode's RPC server (Hadoop's JournalNodeRpcServer): the IPC server
    (:class:`~hadoop_qjm.ipc.server.Server`, which says how it binds, serves and stops)
    configured with a :class:`QJournalProtocolDispatcher` of the JournalNode's handler, at
    most ``handler_count`` calls at once (``dfs.journalnode.handler.count``; ≤ 0: 5), and
    the :class:`PipelinedBatchReader` that serves a writer's batches together.

    A ``socket_factory`` that authenticates its peers (mutual TLS) names each connection's
    client, which the calls see as :func:`remote_user` and ``authorizer`` checks (see
    :class:`QJournalProtocolDispatcher`); ``caller_identity`` names the callers
    (``call_context.remote_ugi()``).

    Hadoop's class name on a factory: callers construct one as in Hadoop, and get the generic
    server configured, not a subclass.
    """
    count = handler_count if handler_count > 0 else DEFAULT_HANDLER_COUNT
    dispatcher = QJournalProtocolDispatcher(
        QJournalProtocolHandler(journal_node), HandlerSlots(count), authorizer
    )
    return Server(
        dispatcher,
        bind_host,
        port,
        count,
        max_frame_size,
        socket_factory,
        serve_connection=PipelinedBatchReader(dispatcher),
        caller_identity=caller_identity,
        log=LOG,
    )
