"""Any Thrift service over the JournalNode's RPC machinery: one dispatcher, one caller.

The NameNode's services travel exactly as QJournalProtocol does — the same frames and
pre-decode checks (:mod:`hadoop_qjm.qjournal.protocol.wire`), the same sockets and socket
factories (:mod:`hadoop_qjm.qjournal.protocol.sockets`, the JournalNode's
``JournalNodeRpcServer`` accept/reader loop, the quorum client's ``SocketChannel``) and
the same error mapping (:func:`~hadoop_qjm.qjournal.protocol.exceptions.to_wire` /
``from_wire``): an error is its Java class name and message, and the client raises the
typed exception. What differs is only the table of services, so this module provides:

* :class:`ThriftServiceDispatcher` — one request payload in, one reply payload out, for
  any services and any handler callables (QJournalProtocolDispatcher's contract: a failed
  call becomes a reply, only undecodable input raises ProtocolError);
* :class:`ThriftServiceCaller` — the client half: encode a call, send it on an
  ``RpcChannel``, match and decode the reply, raise the typed error.

:func:`release_handler_slot` lets a handler give back its slot while it waits for
something other than the CPU (the NameNode's handlers, while their edit is synced:
Hadoop's async edit logging frees the handler the same way).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from thriftpy2.thrift import TApplicationException

from hadoop_qjm.common.exceptions import HadoopException, IllegalArgumentException, IOException
from hadoop_qjm.ipc import call_context
from hadoop_qjm.ipc.call_context import release_handler_slot, remote_ip
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import RpcChannel
from hadoop_qjm.qjournal.protocol.exceptions import from_wire, to_wire
from hadoop_qjm.qjournal.protocol.wire import (
    ProtocolError,
    TMessageType,
    check_required,
    decode_message_body,
    decode_message_header,
    decode_reply,
    encode_message,
)

__all__ = [
    "Rpc",
    "RpcObserver",
    "ThriftServiceCaller",
    "ThriftServiceDispatcher",
    "release_handler_slot",
    "remote_ip",
    "rpc_table",
]

LOG = logging.getLogger(__name__)

#: ``observer(rpc_name, ok)``: called after every call a dispatcher ran (metrics).
RpcObserver = Callable[[str, bool], None]


@dataclass(frozen=True)
class Rpc:
    """One RPC of a service: its Thrift classes and its handler."""

    service_name: str
    name: str
    args_cls: type
    result_cls: type
    arg_names: tuple[str, ...]
    returns_value: bool
    handler: Callable[..., Any] | None = None


def rpc_table(
    services: Iterable[Any], handlers: Mapping[str, Callable[..., Any]] | None = None
) -> dict[str, Rpc]:
    """Every RPC of ``services`` by name; ``handlers`` (RPC name -> callable), when
    given, must cover every one. Method names must be unique across the services."""
    table: dict[str, Rpc] = {}
    for service in services:
        for name in service.thrift_services:
            if name in table:
                raise IllegalArgumentException(f"RPC {name} is defined by two services")
            if handlers is not None and name not in handlers:
                raise IllegalArgumentException(f"No handler for RPC {service.__name__}.{name}")
            args_cls = getattr(service, name + "_args")
            result_cls = getattr(service, name + "_result")
            table[name] = Rpc(
                service_name=service.__name__,
                name=name,
                args_cls=args_cls,
                result_cls=result_cls,
                arg_names=tuple(spec[1] for spec in args_cls.thrift_spec.values()),
                returns_value=any(spec[1] == "success" for spec in result_cls.thrift_spec.values()),
                handler=None if handlers is None else handlers[name],
            )
    return table


class ThriftServiceDispatcher:
    """Turns one request payload into one reply payload.

    ``handlers`` maps each RPC name of ``services`` to a callable taking the RPC's Thrift
    arguments in IDL order and returning its Thrift result value. ``exception_cls`` is the
    IDL's error struct (``className``, ``message``). At most ``handler_slots`` handler
    calls run at once (``None``: no limit). ``observer(rpc_name, ok)`` sees every call.
    """

    def __init__(
        self,
        services: Iterable[Any],
        handlers: Mapping[str, Callable[..., Any]],
        exception_cls: type,
        handler_slots: threading.Semaphore | None = None,
        observer: RpcObserver | None = None,
    ) -> None:
        self._rpcs = rpc_table(services, handlers)
        self._by_name = dict(self._rpcs)
        for name, rpc in self._rpcs.items():
            self._by_name[f"{rpc.service_name}:{name}"] = self._by_name[f":{name}"] = rpc
        self._exception_cls = exception_cls
        self._slots = handler_slots
        self._observer = observer
        self._stats_lock = threading.Lock()
        self._queued = 0

    @property
    def call_queue_length(self) -> int:
        """Calls decoded and waiting for a free handler (Hadoop's CallQueueLength)."""
        with self._stats_lock:
            return self._queued

    def process(self, payload: bytes, remote_ip: str | None = None) -> bytes:
        """The reply payload for the request ``payload``.

        Raises ProtocolError if ``payload`` is not one well-formed call; the connection it
        came from should then be dropped.
        """
        header = decode_message_header(payload)
        if header.type != TMessageType.CALL:
            raise ProtocolError(f"expected a CALL message, got type {header.type}")
        rpc = self._by_name.get(header.name)
        if rpc is None:
            LOG.warning("Unknown RPC %r from %s", header.name, remote_ip)
            error = TApplicationException(
                TApplicationException.UNKNOWN_METHOD, f"Unknown method {header.name}"
            )
            return encode_message(header.name, TMessageType.EXCEPTION, header.seqid, error)
        args = decode_message_body(payload, header, rpc.args_cls)
        try:
            result = self._call(rpc, args, remote_ip)
            reply = encode_message(header.name, TMessageType.REPLY, header.seqid, result)
        except Exception as exc:  # every failure becomes a reply
            self._log_failure(rpc.name, remote_ip, exc)
            reply = self._error_reply(rpc, header.name, header.seqid, exc)
            ok = False
        else:
            ok = True
        if self._observer is not None:
            self._observer(rpc.name, ok)
        return reply

    def error_reply(self, payload: bytes, exc: Exception) -> bytes:
        """The reply answering the call ``payload`` (which :meth:`process` accepted) with
        ``exc``: for a call whose reply was postponed and then failed."""
        header = decode_message_header(payload)
        rpc = self._by_name[header.name]
        self._log_failure(rpc.name, None, exc)
        return self._error_reply(rpc, header.name, header.seqid, exc)

    def _error_reply(self, rpc: Rpc, name: str, seqid: int, exc: Exception) -> bytes:
        wire = to_wire(exc)
        result = rpc.result_cls()
        result.e = self._exception_cls(className=wire.className, message=wire.message)
        return encode_message(name, TMessageType.REPLY, seqid, result)

    def _call(self, rpc: Rpc, args: Any, remote_ip: str | None) -> Any:
        check_required(args)
        values = [getattr(args, name) for name in rpc.arg_names]
        slots = self._slots
        if slots is not None and not slots.acquire(blocking=False):
            with self._stats_lock:
                self._queued += 1
            try:
                slots.acquire()
            finally:
                with self._stats_lock:
                    self._queued -= 1
        call_context.enter_call(remote_ip, slots)
        try:
            value = rpc.handler(*values)  # type: ignore[misc]
        finally:
            held = call_context.leave_call()
            if held is not None:
                held.release()
        result = rpc.result_cls()
        if rpc.returns_value:
            result.success = value
        return result

    @staticmethod
    def _log_failure(rpc_name: str, remote_ip: str | None, exc: Exception) -> None:
        if isinstance(exc, (HadoopException, OSError)):
            # Expected outcomes (a missing file, a non-empty directory): logged tersely,
            # as Hadoop's IPC server does for exceptions it was told are terse.
            LOG.info("%s from %s failed: %s: %s", rpc_name, remote_ip, type(exc).__name__, exc)
        else:
            LOG.error("Unexpected error in %s from %s", rpc_name, remote_ip, exc_info=exc)


class ThriftServiceCaller:
    """The client half: one call at a time on ``channel`` (a SocketChannel or a fake).

    ``peer`` names the server in error messages. Calls from several threads are
    serialized; :meth:`close` may be called from any thread. A call is never retried.
    """

    def __init__(self, channel: RpcChannel, peer: str, services: Iterable[Any]) -> None:
        self._channel = channel
        self.peer = peer
        self._rpcs = rpc_table(services)
        self._lock = threading.Lock()
        self._seqid = 0

    def close(self) -> None:
        self._channel.close()

    def call(self, name: str, **kwargs: Any) -> Any:
        """Call RPC ``name`` with Thrift arguments ``kwargs``; return its result value."""
        rpc = self._rpcs[name]
        try:
            request = rpc.args_cls(**kwargs)
        except TypeError as e:
            raise IllegalArgumentException(f"Bad arguments for {name}: {e}") from e
        with self._lock:
            self._seqid = (self._seqid + 1) & 0x7FFFFFFF
            seqid = self._seqid
            try:
                payload = encode_message(name, TMessageType.CALL, seqid, request)
            except Exception as e:  # struct.error etc.: a value does not fit its field
                raise IllegalArgumentException(f"Cannot encode {name} call: {e}") from e
            reply = self._channel.call(payload)
            try:
                result = decode_reply(reply, name, seqid, rpc.result_cls)
            except ProtocolError as e:
                self._channel.reset()  # a reply we cannot match: the stream is suspect
                raise IOException(f"Call to {self.peer} failed: {e}") from e
        if result.e is not None:
            raise from_wire(
                SimpleNamespace(
                    className=result.e.className, message=result.e.message, cacheMissAmount=None
                )
            )
        if not rpc.returns_value:
            return None
        if result.success is None:
            raise IOException(f"{name} to {self.peer} returned no result")
        return result.success
