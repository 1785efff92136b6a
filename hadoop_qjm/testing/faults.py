"""Fault injection for QJM tests: a proxy that fails calls, and the plans that decide which.

Every fault is decided on the client side, in the call order, by one object
(STYLE.md habits 5 and 8):

* :class:`FaultInjectingProxy` wraps a channel's QJournalProtocol proxy (the
  local transport's or the Thrift one) and asks its ``hooks`` before and
  after every RPC. A hook that raises before the call stops it: the call
  never reaches the JournalNode, and the client sees an IOException whose
  message contains ``"Injected"`` (:data:`INJECTED`).
* :class:`RpcCounter` counts the RPCs to each node and fails the k-th call to
  node i (Hadoop's ``InvocationCountingChannel``, for the double-failure
  sweep of TestQJMWithFaults).
* :class:`RandomFaults` draws every fault of a randomized run from ONE seeded
  ``random.Random``, before each call: the node flips between up and down
  (p=0.1 per call, Hadoop's testRandomized; a down node fails every call);
  the writer crashes (it and every later call of this writer fail, so the
  writer stops between two calls, part-way through a fan-out); a JournalNode
  restarts (local transport: it loses its memory and re-reads its disk); and
  on acceptRecovery, :class:`PaxosCrashInjector` is armed to fail before or
  after the paxos commit point (p=0.1 each). Beyond Hadoop's test, a node may
  also be cut off from a whole writer (a partition that outlasts a failover,
  p=0.1 per writer), and a byte of a finalized segment may flip on one node's disk
  (bit rot, p=0.2 per writer; drawn by the harness from its own RNG, see
  ``randomized._Run.maybe_flip_a_bit``). With the calls made in a fixed order (DirectExecutors),
  the same seed gives the same faults in the same order.

A failure that is not injected is recorded (``unexpected_errors``); an
``AssertionError`` raised by a node is recorded even when the quorum hid it
(the design paper §7.3 greps the logs for it; STYLE.md habit 7).
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from prometheus_client import CollectorRegistry

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.client.executors import DirectExecutor
from hadoop_qjm.qjournal.client.ipc_logger_channel import IPCLoggerChannel
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.protocol.messages import RequestInfo, SegmentState
from hadoop_qjm.qjournal.server.journal import JournalFaultInjector

__all__ = [
    "INJECTED",
    "CallHooks",
    "DownNodes",
    "FaultInjectingProxy",
    "FaultProbabilities",
    "PaxosCrashInjector",
    "RandomFaults",
    "RpcCounter",
    "describe_call",
    "is_injected",
    "thrift_logger_factory",
    "wrap_with",
]

#: Every injected failure's message contains this word (Hadoop's checkException).
INJECTED = "Injected"


def is_injected(error: BaseException) -> bool:
    """True for a failure the harness caused: "Injected" in it, and no AssertionError."""
    text = f"{type(error).__name__}: {error}"
    return (
        INJECTED in text and not isinstance(error, AssertionError) and "AssertionError" not in text
    )


class CallHooks(Protocol):
    """What a :class:`FaultInjectingProxy` asks around each RPC to JournalNode ``node``."""

    def before_call(self, node: int, method: str, args: tuple[Any, ...]) -> None:
        """Raise to fail the call without sending it."""

    def after_call(self, node: int, method: str, error: BaseException | None) -> None:
        """The call returned (``error`` None) or raised ``error``."""


def _describe_arg(arg: Any) -> str:
    if isinstance(arg, RequestInfo):
        return f"e{arg.epoch}#{arg.ipc_serial_number} c{arg.committed_txid}"
    if isinstance(arg, SegmentState):
        return f"[{arg.start_txid}-{arg.end_txid}{' inprogress' if arg.is_in_progress else ''}]"
    if isinstance(arg, (bytes, bytearray, memoryview)):
        return f"<{len(arg)}B>"
    if isinstance(arg, NamespaceInfo):
        return f"ns{arg.namespace_id}"
    if isinstance(arg, str) and "://" in arg:
        # A /getJournal URL: its host is enough (the query repeats the journal id).
        return arg.split("://", 1)[1].split("/", 1)[0]
    return repr(arg)


def describe_call(method: str, args: Sequence[Any]) -> str:
    """A short, deterministic rendering of one RPC for a trace: ``journal(e3#7 c41, 42, 43, 1, <60B>)``."""
    return f"{method}({', '.join(_describe_arg(a) for a in args)})"


class FaultInjectingProxy:
    """Wraps a QJournalProtocol proxy: ``hooks`` run around every RPC of JournalNode ``node``.

    Any public callable of the wrapped proxy but ``close`` is an RPC.
    """

    def __init__(self, inner: Any, node: int, hooks: CallHooks) -> None:
        self._inner = inner
        self._node = node
        self._hooks = hooks

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name.startswith("_") or not callable(attr):
            return attr

        def rpc(*args: Any, **kwargs: Any) -> Any:
            self._hooks.before_call(self._node, name, args)
            try:
                result = attr(*args, **kwargs)
            except BaseException as e:
                self._hooks.after_call(self._node, name, e)
                raise
            self._hooks.after_call(self._node, name, None)
            return result

        return rpc

    def close(self) -> None:
        """Not an RPC: never fails."""
        self._inner.close()

    def __repr__(self) -> str:
        return f"FaultInjectingProxy(jn{self._node}, {self._inner!r})"


class _ErrorLog:
    """Errors the JournalNodes raised that the harness did not inject."""

    def __init__(self) -> None:
        self.unexpected_errors: list[str] = []
        self.assertion_errors: list[str] = []

    def _record(self, node: int, method: str, error: BaseException) -> None:
        if is_injected(error):
            return
        text = f"jn{node} {method}: {type(error).__name__}: {error}"
        self.unexpected_errors.append(text)
        if isinstance(error, AssertionError) or "AssertionError" in text:
            self.assertion_errors.append(text)


class RpcCounter(_ErrorLog):
    """Counts the RPCs to each node; fails the calls numbered in ``fail_at[node]`` (from 1).

    Hadoop's InvocationCountingChannel + failIpcNumber: the failed call never
    reaches the node; later calls go through.
    """

    def __init__(
        self,
        fail_at: Mapping[int, Iterable[int]] | None = None,
        trace: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.fail_at = {node: frozenset(ks) for node, ks in (fail_at or {}).items()}
        self.counts: defaultdict[int, int] = defaultdict(int)
        self.injected = 0
        self._trace = trace

    def before_call(self, node: int, method: str, args: tuple[Any, ...]) -> None:
        self.counts[node] += 1
        k = self.counts[node]
        if k in self.fail_at.get(node, ()):
            self.injected += 1
            if self._trace is not None:
                self._trace(f"jn{node} #{k} {describe_call(method, args)} -> injected failure")
            raise IOException(f"Injected: failed IPC #{k} to jn{node} ({method})")
        if self._trace is not None:
            self._trace(f"jn{node} #{k} {describe_call(method, args)}")

    def after_call(self, node: int, method: str, error: BaseException | None) -> None:
        if error is not None:
            self._record(node, method, error)


class DownNodes(_ErrorLog):
    """Hand-driven partition for scenario tests: every call to a node in ``down`` fails.

    ``trace`` (optional) receives one line per call.
    """

    def __init__(self, trace: Callable[[str], None] | None = None) -> None:
        super().__init__()
        self.down: set[int] = set()
        self._trace = trace

    def set_down(self, *nodes: int) -> None:
        """Exactly ``nodes`` are down from now on."""
        self.down = set(nodes)

    def before_call(self, node: int, method: str, args: tuple[Any, ...]) -> None:
        if self._trace is not None:
            state = " -> injected: down" if node in self.down else ""
            self._trace(f"jn{node} {describe_call(method, args)}{state}")
        if node in self.down:
            raise IOException(f"Injected - jn{node} is down")

    def after_call(self, node: int, method: str, error: BaseException | None) -> None:
        if error is not None:
            self._record(node, method, error)


class PaxosCrashInjector(JournalFaultInjector):
    """A Journal fault injector that, once armed, fails acceptRecovery at the commit point.

    ``arm("before")`` fails the next ``before_persist_paxos_data`` (nothing
    accepted), ``arm("after")`` the next ``after_persist_paxos_data`` (the
    record is durable, the segment not yet installed: the next prepareRecovery
    rolls it forward, HDFS-3955). ``disarm()`` returns whether it fired. One
    injector may serve every node: with DirectExecutors only one acceptRecovery
    runs at a time (Hadoop shares one mock the same way).
    """

    def __init__(self) -> None:
        self.armed: str | None = None
        self.fired = False

    def arm(self, where: str) -> None:
        if where not in ("before", "after"):
            raise ValueError(f"arm 'before' or 'after' the commit point, not {where!r}")
        self.armed, self.fired = where, False

    def disarm(self) -> bool:
        fired, self.armed, self.fired = self.fired, None, False
        return fired

    def before_persist_paxos_data(self) -> None:
        if self.armed == "before":
            self.fired = True
            raise IOException("Injected - faking fault before persisting paxos data")

    def after_persist_paxos_data(self) -> None:
        if self.armed == "after":
            self.fired = True
            raise IOException("Injected - faking fault after persisting paxos data")


@dataclass(frozen=True)
class FaultProbabilities:
    """The per-call probabilities of :class:`RandomFaults` (Hadoop's testRandomized: 0.1)."""

    #: Before every call, the node flips between up and down.
    flap: float = 0.1
    #: On acceptRecovery: fail before the paxos record is written …
    paxos_before: float = 0.1
    #: … or else after it (before the segment is installed).
    paxos_after: float = 0.1
    #: After a paxos fault fired, the node also restarts (needs ``restart``).
    paxos_restart: float = 0.5
    #: Before every call, the writer crashes: this call and every later one fail.
    writer_crash: float = 0.005
    #: Before every call, the node restarts instead of answering (needs ``restart``).
    node_restart: float = 0.005
    #: When a writer starts, one node (chosen at random) is cut off from it for its
    #: whole life: a partition that lasts across a failover (not in Hadoop's test).
    isolate: float = 0.1
    #: When a writer starts, a byte flips inside an op of one node's finalized segment
    #: (bit rot, issue 27): never the newest segment (recovery may still copy it), only
    #: one every node holds, never an op already damaged on another node, so any two
    #: nodes hold every op intact.
    bit_flip: float = 0.2


class RandomFaults(_ErrorLog):
    """Every fault of one randomized run, drawn from ``rng`` in the order of the calls.

    Each writer starts with every node up, as each of Hadoop's
    RandomFaultyChannels does. ``restart(node)`` restarts a JournalNode
    (None: no restarts); ``paxos`` is the injector every Journal was given
    (None: no paxos faults). ``trace`` receives one line per call and per fault.
    """

    def __init__(
        self,
        rng: random.Random,
        num_nodes: int,
        probabilities: FaultProbabilities | None = None,
        *,
        paxos: PaxosCrashInjector | None = None,
        restart: Callable[[int], None] | None = None,
        trace: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        self.rng = rng
        self.p = probabilities or FaultProbabilities()
        self.up = [True] * num_nodes
        self.paxos = paxos
        self.restart = restart
        self.injected = 0
        self.calls = 0
        self.writer = -1
        self.writer_crashed = False
        self.isolated: int | None = None
        self._trace = trace or (lambda line: None)
        self._pending: dict[int, str] = {}

    def start_writer(self, writer: int) -> None:
        """A new writer takes over with every node up (Hadoop: a new channel starts up),
        but maybe one node cut off from it (``isolate``)."""
        self.writer = writer
        self.writer_crashed = False
        self.up = [True] * len(self.up)
        self.isolated = None
        if self.rng.random() < self.p.isolate:
            self.isolated = self.rng.randrange(len(self.up))
            self._trace(f"jn{self.isolated} is cut off from writer {writer}")

    def _fail(self, node: int, call: str, message: str) -> None:
        self.injected += 1
        self._trace(f"jn{node} {call} -> {message}")
        raise IOException(message)

    def before_call(self, node: int, method: str, args: tuple[Any, ...]) -> None:
        self.calls += 1
        rng, p = self.rng, self.p
        call = describe_call(method, args)
        if self.writer_crashed:
            self._fail(node, call, "Injected - the writer has crashed")
        if rng.random() < p.writer_crash:
            self.writer_crashed = True
            self._trace(f"writer {self.writer} crashes")
            self._fail(node, call, "Injected - the writer has crashed")
        if rng.random() < p.flap:
            self.up[node] = not self.up[node]
            self._trace(f"jn{node} is {'up' if self.up[node] else 'down'}")
        if not self.up[node]:
            self._fail(node, call, "Injected - faking being down")
        if node == self.isolated:
            self._fail(node, call, "Injected - cut off from this writer")
        if self.restart is not None and rng.random() < p.node_restart:
            self._trace(f"jn{node} restarts")
            self.restart(node)
            self._fail(node, call, "Injected - JournalNode restarted")
        if method == "accept_recovery" and self.paxos is not None:
            if rng.random() < p.paxos_before:
                self.paxos.arm("before")
            elif rng.random() < p.paxos_after:
                self.paxos.arm("after")
        self._pending[node] = call

    def after_call(self, node: int, method: str, error: BaseException | None) -> None:
        call = self._pending.pop(node, method)
        if self.paxos is not None and method == "accept_recovery" and self.paxos.disarm():
            self.injected += 1
            if self.restart is not None and self.rng.random() < self.p.paxos_restart:
                self._trace(f"jn{node} {call} -> {error}; jn{node} restarts")
                self.restart(node)
                return
        if error is None:
            self._trace(f"jn{node} {call}")
        else:
            self._trace(f"jn{node} {call} -> {type(error).__name__}: {error}")
            self._record(node, method, error)


def wrap_with(hooks: CallHooks) -> Callable[[int, Any], FaultInjectingProxy]:
    """A ``wrap_proxy`` for the logger factories: every proxy asks ``hooks``."""
    return lambda node, proxy: FaultInjectingProxy(proxy, node, hooks)


def thrift_logger_factory(
    addresses: Sequence[tuple[str, int]],
    wrap_proxy: Callable[[int, Any], Any] | None = None,
    *,
    direct: bool = True,
    metrics_registry: CollectorRegistry | None = None,
    timeout_s: float | None = 60.0,
) -> Callable[..., IPCLoggerChannel]:
    """A ``logger_factory`` of IPCLoggerChannels over real Thrift to ``addresses``.

    ``wrap_proxy(node_index, proxy)`` wraps each proxy (the node index is the
    address's position). ``direct`` puts the channels on DirectExecutors, as
    Hadoop's testRandomized does: the client makes its calls in a fixed order,
    although the JournalNodes' own threads keep the run from being exactly
    repeatable.
    """
    index = {(host, int(port)): i for i, (host, port) in enumerate(addresses)}

    def proxy_factory(host: str, port: int) -> Any:
        proxy = QJournalProtocolProxy(host, port, timeout_s=timeout_s)
        return proxy if wrap_proxy is None else wrap_proxy(index[(host, int(port))], proxy)

    def factory(
        conf: Configuration,
        ns_info: NamespaceInfo,
        journal_id: str,
        name_service_id: str | None,
        address: tuple[str, int],
    ) -> IPCLoggerChannel:
        executors: dict[str, Any] = (
            {"executor": DirectExecutor(), "parallel_executor": DirectExecutor()} if direct else {}
        )
        return IPCLoggerChannel(
            conf,
            ns_info,
            journal_id,
            address,
            name_service_id=name_service_id,
            proxy_factory=proxy_factory,
            metrics_registry=metrics_registry,
            **executors,
        )

    return factory
