"""RpcMetrics: what an RPC server counts (Hadoop's ``org.apache.hadoop.ipc.metrics.RpcMetrics``,
the ``RpcActivityForPort<port>`` bean; on ``/prom`` as ``rpc_rpc_queue_time_num_ops{port}``, …).

Both servers count here: :class:`~hadoop_qjm.ipc.server.Server` (a connection's reader runs
its calls; RpcQueueTime is the wait for a handler slot) and
:class:`~hadoop_qjm.ipc.selector_server.IpcServer` (RpcQueueTime is the wait in the call
queue). RpcProcessingTime is from the request read to the handler done (the per-connection
server: to its next read, the reply written; calls read together, a writer's pipelined
batches, each count the group's time). Times are milliseconds, averaged since start (Hadoop
averages over each metrics period).

The hot path takes no lock: each thread that serves calls counts into its own
:class:`CallCounts` (one writer, plain integers), which :meth:`RpcMetrics.bean` sums; a
count is folded into the totals when its thread is done with it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily

__all__ = ["CallCounts", "RpcCollector", "RpcMetrics", "rpc_activity_bean"]

_NS_PER_MS = 1_000_000


class CallCounts:
    """The calls one thread served, and the time they queued and ran (ns)."""

    __slots__ = ("calls", "queue_ns", "processing_ns")

    def __init__(self) -> None:
        self.calls = 0
        self.queue_ns = 0
        self.processing_ns = 0


class RpcMetrics:
    """One RPC server's counts; ``open_connections()`` and ``call_queue_length()`` read the
    server's gauges (NumOpenConnections, CallQueueLength)."""

    def __init__(
        self,
        open_connections: Callable[[], int] = lambda: 0,
        call_queue_length: Callable[[], int] = lambda: 0,
    ) -> None:
        self._open_connections = open_connections
        self._call_queue_length = call_queue_length
        self._lock = threading.Lock()
        self._live: set[CallCounts] = set()
        self._done = CallCounts()
        self._slot_wait_ns = 0
        self.authentication_failures = 0
        self.authentication_successes = 0

    def counts(self) -> CallCounts:
        """A new count for one thread (a connection's reader, a handler)."""
        counts = CallCounts()
        with self._lock:
            self._live.add(counts)
        return counts

    def retire(self, counts: CallCounts) -> None:
        """``counts``' thread is done: keep its numbers in the totals."""
        with self._lock:
            self._live.discard(counts)
            done = self._done
            done.calls += counts.calls
            done.queue_ns += counts.queue_ns
            done.processing_ns += counts.processing_ns

    def add_queue_time(self, ns: int) -> None:
        """A call waited ``ns`` for a handler slot (the slow path only)."""
        with self._lock:
            self._slot_wait_ns += ns

    def authenticated(self, ok: bool) -> None:
        """A connection proved who it is (a verified TLS handshake), or failed to."""
        with self._lock:
            if ok:
                self.authentication_successes += 1
            else:
                self.authentication_failures += 1

    def totals(self) -> CallCounts:
        """Everything counted so far."""
        total = CallCounts()
        with self._lock:
            for counts in (self._done, *self._live):
                total.calls += counts.calls
                total.queue_ns += counts.queue_ns
                total.processing_ns += counts.processing_ns
            total.queue_ns += self._slot_wait_ns
        return total

    def attributes(self) -> dict[str, int | float]:
        """The bean's attributes, under Hadoop's names."""
        total = self.totals()
        calls = total.calls

        def avg_ms(ns: int) -> float:
            return ns / calls / _NS_PER_MS if calls else 0.0

        return {
            "RpcQueueTimeNumOps": calls,
            "RpcQueueTimeAvgTime": avg_ms(total.queue_ns),
            "RpcProcessingTimeNumOps": calls,
            "RpcProcessingTimeAvgTime": avg_ms(total.processing_ns),
            "RpcAuthenticationFailures": self.authentication_failures,
            "RpcAuthenticationSuccesses": self.authentication_successes,
            "NumOpenConnections": self._open_connections(),
            "CallQueueLength": self._call_queue_length(),
            "TotalRequests": calls,
        }


def rpc_activity_bean(service: str, port: int, metrics: RpcMetrics) -> dict[str, object]:
    """``Hadoop:service=<service>,name=RpcActivityForPort<port>``."""
    return {
        "name": f"Hadoop:service={service},name=RpcActivityForPort{port}",
        "modelerType": f"RpcActivityForPort{port}",
        "tag.port": str(port),
        "tag.Context": "rpc",
        **metrics.attributes(),
    }


class RpcCollector:
    """The RpcActivity of the server ``server()`` returns (None: not bound yet) for a
    Prometheus registry, as Hadoop's PrometheusMetricsSink names it: record ``rpc``, each
    metric in snake case, label ``port`` (``rpc_rpc_queue_time_num_ops{port="8485"}``)."""

    def __init__(self, server: Callable[[], Any]) -> None:
        self._server = server

    def collect(self) -> Iterator[object]:
        server = self._server()
        if server is None:
            return
        port = str(server.address[1])
        for name, value in server.rpc_metrics.attributes().items():
            snake = "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")
            # Untyped as Hadoop's sink writes them: a counter would get a _total suffix.
            family = GaugeMetricFamily(f"rpc_{snake}", f"{name} (RpcActivity)", labels=["port"])
            family.add_metric([port], value)
            yield family
