"""The state, connection and call order of an IPCLoggerChannel (digest §5).

:class:`LoggerChannelBase` is what IPCLoggerChannel (``ipc_logger_channel.py``, the
protocol's calls and the write path) stands on: the epoch, the IPC serial numbers and
the committed txid of each RequestInfo; the writer's view of the node's progress
(:class:`~hadoop_qjm.qjournal.client.logger_progress.LoggerProgress`); the proxy and its
transport; the node's HTTP endpoint for ``/getJournal``; and the ordering of the calls —
one single-thread executor for the state-changing calls, a parallel pool for reads, and
the count of journal calls sent directly that ``wait_for_all_pending_calls`` waits for.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

from prometheus_client import REGISTRY, CollectorRegistry

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import (
    IllegalArgumentException,
    IllegalStateException,
    IOException,
)
from hadoop_qjm.common.storage_info import NamespaceInfo, StorageInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.qjournal.client.async_logger import AsyncLogger
from hadoop_qjm.qjournal.client.executors import parallel_executor as new_parallel_executor
from hadoop_qjm.qjournal.client.executors import single_thread_executor
from hadoop_qjm.qjournal.client.ipc_logger_channel_metrics import (
    IPCLoggerChannelMetrics,
    LatencySeries,
)
from hadoop_qjm.qjournal.client.logger_progress import LoggerProgress
from hadoop_qjm.qjournal.client.pipelined_channel import (
    MAX_BUSY_POLL_US,
    ReadRepliesWhileWaiting,
    read_replies_while_waiting,
)
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.protocol.journal_url import get_journal_url, http_server_url
from hadoop_qjm.qjournal.protocol.messages import RequestInfo
from hadoop_qjm.qjournal.protocol.sockets import ClientSocketFactoryLike, PlainSocketFactory

__all__ = ["IPC_CLIENT_RPC_TIMEOUT_KEY", "LoggerChannelBase", "ProxyFactory"]

LOG = logging.getLogger("hadoop_qjm.qjournal.client.quorum_journal_manager")

#: Hadoop's ``ipc.client.rpc-timeout.ms``: 0 (the default) waits for a reply forever,
#: leaving timeouts to the quorum calls.
IPC_CLIENT_RPC_TIMEOUT_KEY = "ipc.client.rpc-timeout.ms"

T = TypeVar("T")
ProxyFactory = Callable[[str, int], Any]


def _replies_reader(conf: Configuration) -> ReadRepliesWhileWaiting:
    """The assist reading this process's replies, with the configured busy poll
    (IllegalArgumentException for one below 0 or above ``MAX_BUSY_POLL_US``)."""
    key = keys.DFS_QJOURNAL_BUSY_POLL_KEY
    busy_poll_us = conf.get_time_duration(key, keys.DFS_QJOURNAL_BUSY_POLL_DEFAULT, "us")
    if not 0 <= busy_poll_us <= MAX_BUSY_POLL_US:
        raise IllegalArgumentException(
            f"{key} must be between 0 and {MAX_BUSY_POLL_US} (microseconds): {busy_poll_us}"
        )
    if busy_poll_us == 0:
        return read_replies_while_waiting
    return ReadRepliesWhileWaiting(busy_poll_us / 1e6)


class LoggerChannelBase(AsyncLogger):
    """IPCLoggerChannel's state, proxy, HTTP endpoint and call order (see the module)."""

    def __init__(
        self,
        conf: Configuration,
        ns_info: NamespaceInfo,
        journal_id: str,
        address: tuple[str, int],
        *,
        name_service_id: str | None = None,
        proxy_factory: ProxyFactory | None = None,
        executor: Executor | None = None,
        parallel_executor: Executor | None = None,
        clock: Callable[[], float] = time.monotonic,
        metrics_registry: CollectorRegistry | None = None,
        socket_factory: ClientSocketFactoryLike | None = None,
    ) -> None:
        self.conf = conf
        self._socket_factory = socket_factory
        self.ns_info = ns_info
        self.journal_id = journal_id
        self.name_service_id = name_service_id
        self.host, self.port = address[0], int(address[1])
        self._clock = clock
        self._proxy_factory = proxy_factory or self._default_proxy_factory
        # The write path's shortcut (see send_edits) needs the real executor: an injected
        # one (a DirectExecutor) keeps every call in the caller's thread, in order.
        self._may_send_directly = executor is None
        #: How a thread waiting for this channel's answers reads them itself (QuorumCall's
        #: assist); None when the replies come through the executor. The busy poll is
        #: read (and a bad value refused) either way.
        replies_reader = _replies_reader(conf)
        self.assist_wait = (
            replies_reader
            if executor is None and proxy_factory is None and self._pipelined_transport()
            else None
        )
        # Orders the calls to this node: taken to submit to the executor and to send a
        # journal directly, so a direct send never overtakes a call still in the executor.
        self._order_lock = threading.Lock()
        self._in_executor = 0  # calls submitted to the real executor, not done (_order_lock)
        self._lock = threading.Lock()
        # Journal calls sent directly and not answered yet (_lock): what
        # wait_for_all_pending_calls waits for, woken by each answer.
        self._direct_in_flight = self._direct_waiters = 0
        self._direct_idle = threading.Condition(self._lock)
        self._proxy: Any = None
        self._closed = False
        limit_mb = conf.get_int(
            keys.DFS_QJOURNAL_QUEUE_SIZE_LIMIT_KEY, keys.DFS_QJOURNAL_QUEUE_SIZE_LIMIT_DEFAULT
        )
        name = str(self)
        self._executor = executor or single_thread_executor(name)
        self._parallel_executor = parallel_executor or new_parallel_executor(
            name,
            conf.get_int(
                keys.DFS_QJOURNAL_PARALLEL_READ_NUM_THREADS_KEY,
                keys.DFS_QJOURNAL_PARALLEL_READ_NUM_THREADS_DEFAULT,
            ),
        )
        # State below is guarded by _lock.
        self._ipc_serial = 0
        self._epoch = -1
        self._http_server_url: str | None = None
        #: The queue, the acks, the commits and the out-of-sync state (logger_progress.py).
        self._progress = LoggerProgress(limit_mb * 1024 * 1024, INVALID_TXID)
        self._metrics = IPCLoggerChannelMetrics.for_registry(metrics_registry or REGISTRY)
        self._metrics.add(self)
        # This channel's two latency series, looked up once (on the first journal call):
        # a label lookup per observation costs the writer's critical path.
        self._latency_series: LatencySeries | None = None

    def _pipelined_transport(self) -> bool:
        """Whether the default proxy uses a PipelinedChannel: plain TCP, or our TLS factory
        (whose context the channel drives through memory BIOs). Another factory — a test's —
        keeps the blocking channel; hence exact types."""
        from hadoop_qjm.common.security.tls_sockets import TlsClientSocketFactory

        return self._socket_factory is None or type(self._socket_factory) in (
            PlainSocketFactory,
            TlsClientSocketFactory,
        )

    def _default_proxy_factory(self, host: str, port: int) -> Any:
        timeout_ms = self.conf.get_time_duration(IPC_CLIENT_RPC_TIMEOUT_KEY, 0, "ms")
        return QJournalProtocolProxy(
            host,
            port,
            timeout_s=timeout_ms / 1000 if timeout_ms else None,
            socket_factory=self._socket_factory,
            # Replies read by the shared reader (pipelined_channel.py).
            pipelined=self._pipelined_transport(),
        )

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    def __repr__(self) -> str:
        return f"IPCLoggerChannel({self}, {self.journal_id})"

    # ---- local state ---------------------------------------------------------------------------
    def set_epoch(self, epoch: int) -> None:
        with self._lock:
            self._epoch = epoch

    def set_committed_txid(self, txid: int) -> None:
        with self._lock:
            self._progress.commit(txid, self._clock())

    @property
    def epoch(self) -> int:
        with self._lock:
            return self._epoch

    @property
    def next_ipc_serial(self) -> int:
        with self._lock:
            return self._ipc_serial

    @property
    def committed_txid(self) -> int:
        with self._lock:
            return self._progress.committed_txid

    @property
    def is_out_of_sync(self) -> bool:
        """True after a failed journal call, until the next successful startLogSegment."""
        with self._lock:
            return self._progress.out_of_sync

    @property
    def queued_edits_size(self) -> int:
        """Bytes of edits handed to this channel (sent directly, or waiting in or sent by
        the executor) and not answered yet: what ``dfs.qjournal.queued-edits.limit.mb``
        bounds."""
        with self._lock:
            return self._progress.queued_bytes

    @property
    def queued_edits_txns(self) -> int:
        with self._lock:
            return self._progress.queued_txns

    @property
    def highest_acked_txid(self) -> int:
        with self._lock:
            return self._progress.highest_acked_txid

    @property
    def lag_txns(self) -> int:
        """How many committed txns this node has not acknowledged."""
        with self._lock:
            return self._progress.lag_txns

    @property
    def lag_time_ms(self) -> int:
        """Time between the last commit and the submission of the last batch this node acked."""
        with self._lock:
            return self._progress.lag_time_ms

    def append_report(self) -> str:
        with self._lock:
            return self._progress.append_report()

    def _create_request(self) -> RequestInfo:
        with self._lock:
            return self._create_request_locked()

    def _create_request_locked(self) -> RequestInfo:
        if self._epoch <= 0:
            raise IllegalStateException(f"bad epoch: {self._epoch}")
        serial = self._ipc_serial
        self._ipc_serial += 1
        return RequestInfo(
            self.journal_id,
            self._epoch,
            serial,
            self._progress.committed_txid,
            self.name_service_id,
        )

    def _get_proxy(self) -> Any:
        # Only executor threads call this; the lock guards against close().
        with self._lock:
            if self._closed:
                raise IOException(f"Channel to {self} is closed")
            if self._proxy is None:
                self._proxy = self._proxy_factory(self.host, self.port)
            return self._proxy

    # ---- the HTTP endpoint ---------------------------------------------------------------------
    def _set_http_server(self, from_url: str | None, http_port: int) -> None:
        """Where this node serves /getJournal: scheme and port from its answer, our host name.

        The node may report a wildcard bind address; the RPC host name we reach
        it by is the one that works from here (Hadoop's getHttpServerURI).
        """
        url = http_server_url(self.host, from_url, http_port)
        with self._lock:
            self._http_server_url = url

    @property
    def http_server_url(self) -> str | None:
        """``scheme://host:port`` of the node's HTTP server, once getJournalState told it."""
        with self._lock:
            return self._http_server_url

    @property
    def has_http_server_endpoint(self) -> bool:
        with self._lock:
            return self._http_server_url is not None

    def build_url_to_fetch_logs(self, segment_txid: int) -> str:
        if segment_txid <= 0:
            raise IllegalArgumentException(f"Invalid segment: {segment_txid}")
        with self._lock:
            base = self._http_server_url
        if base is None:
            raise IllegalStateException("No HTTP/HTTPS endpoint")
        storage_info = self.ns_info.to_colon_separated_string()
        return get_journal_url(base, self.journal_id, segment_txid, storage_info, True)

    # ---- submitting ----------------------------------------------------------------------------
    # ---- the administrative calls (rollback's discard, the HA upgrade; HDFS-5138) ------------
    def discard_segments(self, start_txid: int) -> Future[None]:
        return self._submit(
            lambda: self._get_proxy().discard_segments(
                self.journal_id, start_txid, self.name_service_id
            )
        )

    def get_journal_ctime(self) -> Future[int]:
        return self._submit(
            lambda: self._get_proxy().get_journal_ctime(self.journal_id, self.name_service_id)
        )

    def do_pre_upgrade(self) -> Future[None]:
        return self._submit(lambda: self._get_proxy().do_pre_upgrade(self.journal_id))

    def do_upgrade(self, storage: StorageInfo) -> Future[None]:
        return self._submit(lambda: self._get_proxy().do_upgrade(self.journal_id, storage))

    def do_finalize(self) -> Future[None]:
        return self._submit(
            lambda: self._get_proxy().do_finalize(self.journal_id, self.name_service_id)
        )

    def can_roll_back(
        self, storage: StorageInfo, prev_storage: StorageInfo, target_layout_version: int
    ) -> Future[bool]:
        return self._submit(
            lambda: self._get_proxy().can_roll_back(
                self.journal_id,
                storage,
                prev_storage,
                target_layout_version,
                self.name_service_id,
            )
        )

    def do_rollback(self) -> Future[None]:
        return self._submit(
            lambda: self._get_proxy().do_rollback(self.journal_id, self.name_service_id)
        )

    def _submit(self, fn: Callable[[], T]) -> Future[T]:
        if not self._may_send_directly:
            # An injected executor: no direct send to keep behind its calls (and a
            # DirectExecutor runs the call here, under the lock the count would take).
            # Its calls are ordered by that executor alone: the fault harness's, which
            # makes every call from one thread.
            return self._executor.submit(fn)

        def run() -> T:
            try:
                return fn()
            finally:
                # Counted done before the future is: whoever its answer wakes finds
                # the channel free for the shortcut (the node has answered the call).
                with self._order_lock:
                    self._in_executor -= 1

        with self._order_lock:
            future = self._executor.submit(run)
            self._in_executor += 1
        future.add_done_callback(self._executor_call_cancelled)
        return future

    def _executor_call_cancelled(self, future: Future[Any]) -> None:
        """A call cancelled before it ran (QuorumCall.cancel_calls) never runs: done here."""
        if future.cancelled():
            with self._order_lock:
                self._in_executor -= 1

    def _submit_parallel(self, fn: Callable[[], T]) -> Future[T]:
        return self._parallel_executor.submit(fn)

    def wait_for_all_pending_calls(self) -> None:
        """Block until every state-changing call made so far has been answered (and any
        batch sent directly meanwhile: for a caller that has stopped writing)."""
        with self._lock:
            self._direct_waiters += 1
            try:
                # The process's reply reader answers them (this thread reads none).
                while self._direct_in_flight > 0:
                    self._direct_idle.wait()
            finally:
                self._direct_waiters -= 1
        self._submit(lambda: None).result()

    # ---- life cycle ----------------------------------------------------------------------------
    def close(self) -> None:
        """No more calls; queued ones fail fast; a call in flight is interrupted."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            proxy, self._proxy = self._proxy, None
        self._executor.shutdown(wait=False)
        self._parallel_executor.shutdown(wait=False)
        if proxy is not None:
            try:
                proxy.close()
            except Exception:  # noqa: BLE001 - closing anyway
                LOG.exception("Error closing the proxy to %s", self)
        self._metrics.remove(self)
