"""IPCLoggerChannel: the AsyncLogger of one JournalNode over QJournalProtocol (digest §5).

* Every state-changing call runs on one single-thread executor, so the calls
  to one node happen in the order the writer made them (design paper §2.11
  step 3); reads that may overlap them (getEditLogManifest,
  getJournaledEdits) run on a small parallel pool
  (``dfs.qjournal.parallel-read.num-threads``).
* The write path's exception: a ``journal`` call is written to the socket by
  the writer's own thread when nothing waits in the executor (so it cannot
  overtake an earlier call), and its reply is answered by the shared reply
  reader (``pipelined_channel.py``): it completes the call's future, or, for the
  writer's fan-out (:meth:`IPCLoggerChannel.send_edits_directly`), hands the
  answer straight to the batch's QuorumCall — no thread hand-off on the writer's
  critical path. Calls may then be in flight together on the
  connection; an answer that comes back after an earlier call of the node
  failed counts as failed ("Journal disabled until next roll"), as Hadoop's
  executor would never have sent it. Plain TCP or our TLS factory (driven
  through memory BIOs) with the default executor only: a DirectExecutor (the
  fault harness) or another socket factory keeps every call on the executor
  path.
* Writer calls carry a RequestInfo: the journal id, the epoch (≤ 0 is
  IllegalStateException "bad epoch"), an IPC serial number that starts at 0
  and is never reset, and the committed txid.
* Un-acked edits are bounded by ``dfs.qjournal.queued-edits.limit.mb``: a
  batch that would go over the limit while something is queued fails at once
  with LoggerTooFarBehindException, so a slow node cannot make the writer
  run out of memory (§2.2: "the queue of pending edits eclipses a
  configurable maximum length").
* After a failed ``journal`` call the node is *out of sync* until the next
  successful startLogSegment: sendEdits and finalizeLogSegment fail at once
  with "Journal disabled until next roll", after a heartbeat sent at most
  once a second so the node still learns the committed txid (HDFS-3726).

Collaborators are parameters (STYLE.md habit 5): the proxy factory, both
executors (a :class:`DirectExecutor` makes every call run in the caller's
thread), the clock, and the Prometheus registry of the client metrics
(design paper §6).
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from prometheus_client import CollectorRegistry

from hadoop_qjm.common.exceptions import (
    IllegalArgumentException,
    IOException,
    always_assert,
    register_exception,
)
from hadoop_qjm.common.remote_edit_log import RemoteEditLogManifest
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.client.ipc_logger_channel_base import (
    IPC_CLIENT_RPC_TIMEOUT_KEY,
    LoggerChannelBase,
)
from hadoop_qjm.qjournal.client.logger_progress import HEARTBEAT_INTERVAL_S, DirectAnswer
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy, journal_body
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalOutOfSyncException,
    LoggerTooFarBehindException,
)
from hadoop_qjm.qjournal.protocol.messages import (
    CanFormatResponse,
    GetJournaledEditsResponse,
    GetJournalStateResponse,
    NewEpochResponse,
    PrepareRecoveryResponse,
    SegmentState,
)
from hadoop_qjm.qjournal.protocol.sockets import ClientSocketFactoryLike

__all__ = [
    "IPCLoggerChannel",
    "UnknownHostException",
    "ipc_logger_channel_factory",
    "HEARTBEAT_INTERVAL_S",
    "WARN_JOURNAL_MILLIS_THRESHOLD",
    "IPC_CLIENT_RPC_TIMEOUT_KEY",
]

LOG = logging.getLogger("hadoop_qjm.qjournal.client.quorum_journal_manager")

#: A journal call slower than this is logged.
WARN_JOURNAL_MILLIS_THRESHOLD = 1000


@register_exception
class UnknownHostException(IOException):
    """A JournalNode host name does not resolve."""

    java_name = "java.net.UnknownHostException"


#: ``on_answer(None, None)`` (done) or ``on_answer(None, error)``: a direct journal
#: call's answer (the QuorumCall's answerer's signature; the result is always None).
Answer = Callable[[None, BaseException | None], None]


def _settle(future: Future[None]) -> Answer:
    """``answer(None, error)`` completing ``future``: its result None, or ``error``."""

    def answer(_: None, error: BaseException | None) -> None:
        if error is None:
            future.set_result(None)
        else:
            future.set_exception(error)

    return answer


def _failed(error: BaseException) -> Future[Any]:
    future: Future[Any] = Future()
    future.set_exception(error)
    return future


class IPCLoggerChannel(LoggerChannelBase):
    """The channel to the JournalNode at ``address`` (``(host, port)``) for ``journal_id``.

    ``socket_factory`` makes the default proxy's connections (the QuorumJournalManager
    passes its SSLFactory's: mutual TLS when security is on); ``proxy_factory`` replaces
    the proxy altogether.
    """

    # ---- calls without an epoch ----------------------------------------------------------------
    def is_formatted(self) -> Future[bool]:
        return self._submit(
            lambda: self._get_proxy().is_formatted(self.journal_id, self.name_service_id)
        )

    def _fetch_journal_state(self) -> GetJournalStateResponse:
        response = self._get_proxy().get_journal_state(self.journal_id, self.name_service_id)
        self._set_http_server(response.from_url, response.http_port)
        return response

    def get_journal_state(self) -> Future[GetJournalStateResponse]:
        return self._submit(self._fetch_journal_state)

    def new_epoch(
        self, epoch: int, writer_config: str | None = None, writer_record: str | None = None
    ) -> Future[NewEpochResponse]:
        return self._submit(
            lambda: self._get_proxy().new_epoch(
                self.journal_id,
                self.ns_info,
                epoch,
                self.name_service_id,
                writer_config,
                writer_record,
            )
        )

    def set_membership(self, record: str, check_namespace: bool = False) -> Future[None]:
        ns_info = self.ns_info if check_namespace else None
        return self._submit(
            lambda: self._get_proxy().set_membership(self._create_request(), record, ns_info)
        )

    def can_format(self) -> Future[CanFormatResponse]:
        return self._submit(
            lambda: self._get_proxy().can_format(self.journal_id, self.name_service_id)
        )

    def format(self, ns_info: NamespaceInfo, force: bool = False) -> Future[None]:
        return self._submit(
            lambda: self._get_proxy().format(self.journal_id, ns_info, force, self.name_service_id)
        )

    def get_edit_log_manifest(
        self, from_txid: int, in_progress_ok: bool = False
    ) -> Future[RemoteEditLogManifest]:
        def call() -> RemoteEditLogManifest:
            response = self._get_proxy().get_edit_log_manifest(
                self.journal_id, from_txid, in_progress_ok, self.name_service_id
            )
            # The logs it lists are fetched from this endpoint.
            self._set_http_server(response.from_url, response.http_port)
            return response.manifest

        return self._submit_parallel(call)

    def get_journaled_edits(
        self, from_txid: int, max_txns: int, wait_ms: int | None = None
    ) -> Future[GetJournaledEditsResponse]:
        return self._submit_parallel(
            lambda: self._get_proxy().get_journaled_edits(
                self.journal_id, from_txid, max_txns, self.name_service_id, wait_ms
            )
        )

    # ---- writing -------------------------------------------------------------------------------
    def send_edits(
        self, segment_txid: int, first_txid: int, num_txns: int, data: bytes
    ) -> Future[None]:
        future: Future[None] = Future()
        future.set_running_or_notify_cancel()  # sent at once, if at all: not cancellable
        if self.send_edits_directly(segment_txid, first_txid, num_txns, data, _settle(future)):
            return future
        size = len(data)
        try:
            self._reserve_queue_space(size, num_txns)
        except LoggerTooFarBehindException as e:
            return _failed(e)
        # The lag is measured from when the batch was handed to us.
        submit_time = self._clock()
        try:
            future = self._submit(
                lambda: self._do_send_edits(segment_txid, first_txid, num_txns, data, submit_time)
            )
            # Released however the call ends (at once if it already ran).
            future.add_done_callback(lambda _: self._unreserve_queue_space(size, num_txns))
        except BaseException:
            self._unreserve_queue_space(size, num_txns)
            raise
        return future

    def send_edits_directly(
        self,
        segment_txid: int,
        first_txid: int,
        num_txns: int,
        data: bytes,
        on_answer: Answer,
    ) -> bool:
        """:meth:`send_edits` by the shortcut only, with no future: the journal call is
        sent from this thread, without the executor, and ``on_answer(None, None)`` or
        ``on_answer(None, error)`` runs once, when the node answered or the call failed
        (in the thread reading its reply). False, with nothing sent or reserved, when
        the shortcut may not be taken: the caller then uses :meth:`send_edits`. Raises
        what :meth:`send_edits` raises.

        The shortcut of the write path (docs/quorum-client.md, "The write path"):
        the request is written to the socket here and the shared reply reader
        answers — no thread hand-off either way. Only when nothing is waiting in
        the executor (calls stay in order), the node is in sync (out of sync, the
        executor path fails the batch and heartbeats), the connection is open
        (connecting could block the writer) and the batch fits the queue limit
        (the executor path fails it with LoggerTooFarBehindException).
        """
        if not self._may_send_directly:
            return False
        proxy = self._proxy
        if (
            proxy is None
            or type(proxy) is not QJournalProtocolProxy
            or not proxy.connected
            or self._progress.out_of_sync
        ):
            return False
        # The lag is measured from when the batch was handed to us.
        submit_time = self._clock()
        body = journal_body(segment_txid, first_txid, num_txns, data, self.name_service_id)
        size = len(data)
        with self._order_lock:
            if self._in_executor:
                return False
            with self._lock:
                progress = self._progress
                if (
                    progress.out_of_sync
                    or self._closed
                    or self._epoch <= 0  # the executor path fails the call as it should
                    or not progress.fits(size)
                ):
                    return False
                sync_epoch = progress.sync_epoch
                request = self._create_request_locked()
                progress.queue(size, num_txns)
                self._direct_in_flight += 1
            # Whichever ends the call first — its answer, or the send failing — releases
            # what it holds (queue space, the in-flight count); the other does nothing.
            ended = [False]

            def on_reply(error: BaseException | None) -> None:
                self._direct_journal_done(
                    ended, on_answer, error, sync_epoch, first_txid, num_txns, size, submit_time
                )

            try:
                proxy.journal_async(request, body, on_reply)
            except BaseException:  # the caller counts the call as failed
                self._end_direct_call(ended, size, num_txns)
                raise
        return True

    def _end_direct_call(self, ended: list[bool], size: int, num_txns: int) -> None:
        """A direct call that could not be sent: release what it held, unless its answer
        (a failure while it was being sent) already did."""
        with self._lock:
            if ended[0]:
                return
            ended[0] = True
            self._progress.dequeue(size, num_txns)
        self._direct_call_ended()

    def _direct_call_ended(self) -> None:
        with self._lock:
            self._direct_in_flight -= 1
            if self._direct_in_flight < 0:  # (not always_assert: no message built per call)
                always_assert(False, f"{self}: a direct call ended twice")
            if self._direct_waiters:
                self._direct_idle.notify_all()

    def _direct_journal_done(
        self,
        ended: list[bool],
        on_answer: Answer,
        error: BaseException | None,
        sync_epoch: int,
        first_txid: int,
        num_txns: int,
        size: int,
        submit_time: float,
    ) -> None:
        """The answer to a journal call sent directly (in the thread reading replies).

        Never raises: it runs in whichever thread read the reply (or failed the call).
        Each step after the bookkeeping is guarded on its own, so that the answer is
        given and the call ended whatever the logging or the metrics do.
        """
        with self._lock:
            if ended[0]:
                return  # its send failed and the caller was told so
            ended[0] = True
            outcome = self._progress.answered(
                failed=error is not None,
                io_failure=isinstance(error, OSError),
                sent_sync_epoch=sync_epoch,
                first_txid=first_txid,
                num_txns=num_txns,
                size=size,
                submit_time=submit_time,
            )
        if outcome is DirectAnswer.STALE:
            # An earlier call failed after this one went out. Hadoop would not have
            # sent this one at all (its executor runs one call at a time): so it fails.
            error = JournalOutOfSyncException("Journal disabled until next roll")
        went_out_of_sync = outcome is DirectAnswer.WENT_OUT_OF_SYNC
        # (Plain try blocks: free when nothing raises, and this runs for every reply.)
        try:
            now = self._clock()
            if went_out_of_sync:  # the calls in flight behind it fail with it, unlogged
                try:
                    self._log_journal_failure(first_txid, num_txns, error)  # type: ignore[arg-type]
                except Exception:  # noqa: BLE001 - the answer must still be given
                    self._log_unexpected("logging the failure", first_txid, num_txns)
            try:
                on_answer(None, error)
            except Exception:  # noqa: BLE001 - a caller's bug must not break the reply reader
                self._log_unexpected("giving the answer", first_txid, num_txns)
            try:
                self._record_journal_latency(
                    first_txid, num_txns, size, now - submit_time, now - submit_time
                )
            except Exception:  # noqa: BLE001 - metrics must not break the reply reader
                self._log_unexpected("recording the latency", first_txid, num_txns)
        finally:
            self._direct_call_ended()

    def _log_unexpected(self, step: str, first_txid: int, num_txns: int) -> None:
        LOG.exception(
            "Unexpected error %s of %s for txns %d-%d",
            step,
            self,
            first_txid,
            first_txid + num_txns - 1,
        )

    def _log_journal_failure(self, first_txid: int, num_txns: int, error: BaseException) -> None:
        if self._closed:
            # Our own close() ended it (the writer got its quorum and closed the journal
            # while this node was behind): nothing for an operator to act on, so no WARNING.
            # The node catches up at the next segment or the next writer's recovery.
            LOG.info(
                "Txns %d-%d not written to %s: the journal was closed first (%s)",
                first_txid,
                first_txid + num_txns - 1,
                self,
                error,
            )
            return
        LOG.warning(
            "Remote journal %s failed to write txns %d-%d. Will try to write to this JN "
            "again after the next log roll: %s",
            self,
            first_txid,
            first_txid + num_txns - 1,
            error,
            exc_info=LOG.isEnabledFor(logging.DEBUG),
        )

    def _do_send_edits(
        self, segment_txid: int, first_txid: int, num_txns: int, data: bytes, submit_time: float
    ) -> None:
        self._throw_if_out_of_sync()
        rpc_start = self._clock()
        try:
            self._get_proxy().journal(
                self._create_request(), segment_txid, first_txid, num_txns, data
            )
        except OSError as e:
            self._log_journal_failure(first_txid, num_txns, e)
            with self._lock:
                self._progress.journal_failed()
            raise
        else:
            with self._lock:
                self._progress.acked(first_txid, num_txns, submit_time)
        finally:
            now = self._clock()
            self._record_journal_latency(
                first_txid, num_txns, len(data), now - rpc_start, now - submit_time
            )

    def _record_journal_latency(
        self, first_txid: int, num_txns: int, size: int, rpc_s: float, end_to_end_s: float
    ) -> None:
        """After each journal call, answered or failed (the bench overrides it to time RPCs)."""
        self._observe_latency(rpc_s, end_to_end_s)
        if rpc_s * 1000 > WARN_JOURNAL_MILLIS_THRESHOLD:
            LOG.warning(
                "Took %dms to send a batch of %d edits (%d bytes) to remote journal %s",
                rpc_s * 1000,
                num_txns,
                size,
                self,
            )

    def _observe_latency(self, rpc_s: float, end_to_end_s: float) -> None:
        series = self._latency_series
        if series is None:
            series = self._latency_series = self._metrics.series(self)
        series.observe(rpc_s, end_to_end_s)

    def _throw_if_out_of_sync(self) -> None:
        if self.is_out_of_sync:
            # Still tell the node the committed txid (lag metrics, recovery's sanity check).
            self._heartbeat_if_necessary()
            raise JournalOutOfSyncException("Journal disabled until next roll")

    def _heartbeat_if_necessary(self) -> None:
        now = self._clock()
        with self._lock:
            due = self._progress.heartbeat_due(now)
        if not due:
            return
        try:
            self._get_proxy().heartbeat(self._create_request())
        finally:
            # Not more often than the interval, even if they fail.
            now = self._clock()
            with self._lock:
                self._progress.heartbeat_sent(now)

    def heartbeat_if_necessary(self) -> Future[None]:
        return self._submit(self._heartbeat_if_necessary)

    def _reserve_queue_space(self, size: int, num_txns: int) -> None:
        if size < 0:
            raise IllegalArgumentException(f"negative batch size {size}")
        with self._lock:
            progress = self._progress
            if not progress.fits(size):
                raise LoggerTooFarBehindException(
                    f"{self} is too far behind: {progress.queued_bytes} bytes of edits are "
                    f"queued and {size} more would pass the limit of "
                    f"{progress.queue_limit_bytes} bytes"
                )
            progress.queue(size, num_txns)

    def _unreserve_queue_space(self, size: int, num_txns: int) -> None:
        with self._lock:
            self._progress.dequeue(size, num_txns)

    def start_log_segment(self, txid: int, layout_version: int) -> Future[None]:
        def call() -> None:
            self._get_proxy().start_log_segment(self._create_request(), txid, layout_version)
            with self._lock:
                was_out_of_sync = self._progress.resynced()
            if was_out_of_sync:
                LOG.info(
                    "Restarting previously-stopped writes to %s in segment starting at txid %d",
                    self,
                    txid,
                )

        return self._submit(call)

    def _finalize_log_segment(self, start_txid: int, end_txid: int) -> None:
        self._throw_if_out_of_sync()
        self._get_proxy().finalize_log_segment(self._create_request(), start_txid, end_txid)

    def finalize_log_segment(self, start_txid: int, end_txid: int) -> Future[None]:
        return self._submit(lambda: self._finalize_log_segment(start_txid, end_txid))

    def finalize_log_segment_after(
        self, accepted: Future[None], start_txid: int, end_txid: int
    ) -> Future[None]:
        if accepted.done():
            return super().finalize_log_segment_after(accepted, start_txid, end_txid)

        # Still accepting: queued now, behind the accept on this channel's executor
        # (calls run in order), ahead of any later call; sent only if the accept succeeded.
        def call() -> None:
            accepted.result()
            self._finalize_log_segment(start_txid, end_txid)

        return self._submit(call)

    def purge_logs_older_than(self, min_txid_to_keep: int) -> Future[None]:
        return self._submit(
            lambda: self._get_proxy().purge_logs_older_than(
                self._create_request(), min_txid_to_keep
            )
        )

    # ---- recovery ------------------------------------------------------------------------------
    def prepare_recovery(self, segment_txid: int) -> Future[PrepareRecoveryResponse]:
        def call() -> PrepareRecoveryResponse:
            if not self.has_http_server_endpoint:
                # Learn the HTTP endpoint now: the writer may pick this node as the source.
                self._fetch_journal_state()
            return self._get_proxy().prepare_recovery(self._create_request(), segment_txid)

        return self._submit(call)

    def accept_recovery(self, segment_state: SegmentState, from_url: str) -> Future[None]:
        return self._submit(
            lambda: self._get_proxy().accept_recovery(
                self._create_request(), segment_state, from_url
            )
        )


def ipc_logger_channel_factory(
    conf: Configuration,
    ns_info: NamespaceInfo,
    journal_id: str,
    name_service_id: str | None,
    address: tuple[str, int],
    *,
    metrics_registry: CollectorRegistry | None = None,
    socket_factory: ClientSocketFactoryLike | None = None,
) -> IPCLoggerChannel:
    """QuorumJournalManager's default logger factory; the host must resolve."""
    host, port = address
    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as e:
        raise UnknownHostException(f"{host}: {e}") from None
    return IPCLoggerChannel(
        conf,
        ns_info,
        journal_id,
        address,
        name_service_id=name_service_id,
        metrics_registry=metrics_registry,
        socket_factory=socket_factory,
    )
