"""One dispatcher for every RPC server: the RPC table, its aliases, the handler slots, the
call queue count and the failure log (Hadoop's ``Server``'s call handling).

:class:`RpcDispatcher` is what the JournalNode's ``QJournalProtocolDispatcher`` (which adds
its one-pass write path) and :class:`ThriftServiceDispatcher` (the NameNode's and the
ZKFC's services, any handler callables) share. Either turns one request payload into one
reply payload and never raises for a failed call (every error becomes a reply); only
undecodable input raises ProtocolError, and the connection it came from is then dropped.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from thriftpy2.thrift import TApplicationException

from hadoop_qjm.common.exceptions import HadoopException, IllegalArgumentException
from hadoop_qjm.ipc import call_context
from hadoop_qjm.ipc.exceptions import ProtocolError, wire_class_name, wire_message
from hadoop_qjm.ipc.wire import (
    TMessageType,
    check_required,
    decode_message_body,
    decode_message_header,
    encode_message,
)

__all__ = [
    "HandlerSlots",
    "Rpc",
    "RpcDispatcher",
    "RpcObserver",
    "ThriftServiceDispatcher",
    "rpc_table",
]

LOG = logging.getLogger(__name__)

#: ``observer(rpc_name, ok)``: called after every call a dispatcher ran (metrics).
RpcObserver = Callable[[str, bool], None]


@dataclass(frozen=True)
class Rpc:
    """One RPC of a service: its Thrift classes and its handler (a callable, or the name
    of the handler object's method)."""

    service_name: str
    name: str
    args_cls: type
    result_cls: type
    arg_names: tuple[str, ...]
    returns_value: bool
    handler: Callable[..., Any] | None = None
    method_name: str = ""
    #: The argument values of an ``args_cls`` instance in IDL order, as a tuple (one
    #: C-level attrgetter per RPC, where a list comprehension ran per call).
    arg_values: Callable[[Any], tuple] = field(default=lambda _args: (), compare=False)


def rpc_table(
    services: Iterable[Any],
    handlers: Mapping[str, Callable[..., Any]] | None = None,
    method_names: Mapping[str, str] | None = None,
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
            arg_names = tuple(spec[1] for spec in args_cls.thrift_spec.values())
            table[name] = Rpc(
                service_name=service.__name__,
                name=name,
                args_cls=args_cls,
                result_cls=result_cls,
                arg_names=arg_names,
                returns_value=any(spec[1] == "success" for spec in result_cls.thrift_spec.values()),
                handler=None if handlers is None else handlers[name],
                method_name="" if method_names is None else method_names[name],
                arg_values=_arg_values(arg_names),
            )
    return table


def _arg_values(names: tuple[str, ...]) -> Callable[[Any], tuple]:
    if not names:
        return lambda _args: ()
    getter = attrgetter(*names)
    if len(names) == 1:
        return lambda args: (getter(args),)
    return getter


class HandlerSlots:
    """A bounded counting semaphore for the handler limit, cheap on the fast path.

    Same ``acquire(blocking=True, timeout=None) -> bool`` / ``release()`` as
    ``threading.BoundedSemaphore``, but the tokens sit in a C-implemented
    ``queue.SimpleQueue``: taking and returning a free slot costs a fraction
    of the Condition-based semaphore's Python code, on every call.
    """

    __slots__ = ("_tokens", "count")

    def __init__(self, count: int) -> None:
        if count <= 0:
            raise ValueError(f"handler count must be positive: {count}")
        self.count = count
        self._tokens: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(count):
            self._tokens.put(None)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take a slot; False if none became free (non-blocking, or after ``timeout``)."""
        try:
            self._tokens.get(blocking, timeout)
        except queue.Empty:
            return False
        return True

    def release(self) -> None:
        """Give a slot back; ValueError if more are given back than were taken."""
        if self._tokens.qsize() >= self.count:
            raise ValueError("HandlerSlots released too many times")
        self._tokens.put(None)


class RpcDispatcher:
    """What every dispatcher shares (see the module docstring).

    ``rpcs`` is the table (:func:`rpc_table`); a call may name its RPC plainly or as
    ``"Service:method"`` (a TMultiplexedProtocol client; an empty service name passes
    too). At most ``handler_slots`` handler calls run at once (``None``: no limit).
    Failures are logged on ``log`` (the server's own logger, which ``log4j`` names).
    """

    def __init__(
        self,
        rpcs: dict[str, Rpc],
        handler_slots: HandlerSlots | threading.Semaphore | None,
        log: logging.Logger = LOG,
    ) -> None:
        self._rpcs = rpcs
        self._by_name = dict(rpcs)
        for name, rpc in rpcs.items():
            self._by_name[f"{rpc.service_name}:{name}"] = self._by_name[f":{name}"] = rpc
        self._slots = handler_slots
        self._log = log
        self._stats_lock = threading.Lock()
        self._queued = 0
        #: The server's RpcMetrics (set by :class:`~hadoop_qjm.ipc.server.Server`): a
        #: call's wait for a handler slot is its RpcQueueTime.
        self.rpc_metrics: Any = None

    @property
    def call_queue_length(self) -> int:
        """Calls decoded and waiting for a free handler (Hadoop's CallQueueLength metric)."""
        with self._stats_lock:
            return self._queued

    def _take_slot(self, slots: HandlerSlots | threading.Semaphore) -> None:
        """Wait for a handler slot, counted in :attr:`call_queue_length` meanwhile."""
        if slots.acquire(blocking=False):
            return
        with self._stats_lock:
            self._queued += 1
        waited_from = time.perf_counter_ns()
        try:
            slots.acquire()
        finally:
            with self._stats_lock:
                self._queued -= 1
            if self.rpc_metrics is not None:
                self.rpc_metrics.add_queue_time(time.perf_counter_ns() - waited_from)

    def _unknown_method_reply(self, name: str, seqid: int, remote_ip: str | None) -> bytes:
        self._log.warning("Unknown RPC %r from %s", name, remote_ip)
        error = TApplicationException(
            TApplicationException.UNKNOWN_METHOD, f"Unknown method {name}"
        )
        return encode_message(name, TMessageType.EXCEPTION, seqid, error)

    def _log_failure(self, rpc_name: str, remote_ip: str | None, exc: Exception) -> None:
        if isinstance(exc, (HadoopException, OSError)):
            # Expected protocol outcomes (a fenced writer, an unformatted journal, a
            # missing file): Hadoop's IPC server logs these tersely at INFO.
            self._log.info(
                "%s from %s failed: %s: %s", rpc_name, remote_ip, type(exc).__name__, exc
            )
        else:
            self._log.error("Unexpected error in %s from %s", rpc_name, remote_ip, exc_info=exc)


class ThriftServiceDispatcher(RpcDispatcher):
    """Turns one request payload into one reply payload, for any services.

    ``handlers`` maps each RPC name of ``services`` to a callable taking the RPC's Thrift
    arguments in IDL order and returning its Thrift result value. ``exception_cls`` is the
    IDL's error struct (``className``, ``message``). At most ``handler_slots`` handler
    calls run at once (``None``: no limit); a handler may give its slot back early
    (:func:`~hadoop_qjm.ipc.call_context.release_handler_slot`). ``observer(rpc_name,
    ok)`` sees every call; ``authorize(rpc)``, when given, runs before each handler and
    raises (AuthorizationException) to refuse the call (service-level authorization).
    """

    def __init__(
        self,
        services: Iterable[Any],
        handlers: Mapping[str, Callable[..., Any]],
        exception_cls: type,
        handler_slots: threading.Semaphore | None = None,
        observer: RpcObserver | None = None,
        log: logging.Logger = LOG,
        authorize: Callable[[Rpc], None] | None = None,
    ) -> None:
        super().__init__(rpc_table(services, handlers), handler_slots, log)
        self._exception_cls = exception_cls
        self._observer = observer
        self._authorize = authorize

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
            return self._unknown_method_reply(header.name, header.seqid, remote_ip)
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
        result = rpc.result_cls()
        result.e = self._exception_cls(className=wire_class_name(exc), message=wire_message(exc))
        return encode_message(name, TMessageType.REPLY, seqid, result)

    def _call(self, rpc: Rpc, args: Any, remote_ip: str | None) -> Any:
        if self._authorize is not None:  # Hadoop's Server.authorize, before the handler
            self._authorize(rpc)
        check_required(args)
        values = rpc.arg_values(args)
        slots = self._slots
        if slots is not None:
            self._take_slot(slots)
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
