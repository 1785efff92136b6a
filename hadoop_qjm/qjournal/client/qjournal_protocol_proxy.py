"""QJournalProtocolProxy: a JournalNode's QJournalProtocol, called over Thrift.

The client half of ``JournalNodeRpcServer``: Hadoop's
QJournalProtocolTranslatorPB plus its RPC proxy. Methods take and return the
dataclasses of ``messages`` and raise the typed exceptions of
``exceptions`` — the JournalNode's own (``JournalOutOfSyncException``, …),
or an IOException subclass when the call could not complete
(``ConnectException``, ``SocketTimeoutException``, a broken connection).

Thread safety: any thread may call. On the default blocking transport calls
on one proxy are serialized (one in flight per connection); a ``pipelined``
proxy (a :class:`PipelinedChannel`, which IPCLoggerChannel uses over plain
TCP) sends calls in the order they are made and lets several be in flight,
their replies read by the shared reply reader — :meth:`journal_async` does
not even wait for its own. :meth:`close` may be called from any thread and
interrupts a call in progress.

Connections are made lazily and after a failure re-made by the next call. A
call is never retried: after a broken connection nobody knows whether the
JournalNode executed it, and the caller (the quorum logic) decides — except
for the reads of :data:`RESENT_READS`.
"""

from __future__ import annotations

import struct
import threading
from collections.abc import Callable
from typing import Any

from hadoop_qjm.common.exceptions import (
    IllegalArgumentException,
    IllegalStateException,
    IOException,
)
from hadoop_qjm.common.storage_info import NamespaceInfo, StorageInfo
from hadoop_qjm.qjournal.client.pipelined_channel import PipelinedChannel
from hadoop_qjm.qjournal.client.socket_channel import (
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_TIMEOUT_S,
    RpcChannel,
    SocketChannel,
)
from hadoop_qjm.qjournal.protocol.exceptions import from_wire
from hadoop_qjm.qjournal.protocol.journal_call import encode_journal_body, encode_journal_head
from hadoop_qjm.qjournal.protocol.messages import (
    CanFormatResponse,
    GetEditLogManifestResponse,
    GetJournaledEditsResponse,
    GetJournalStateResponse,
    NewEpochResponse,
    PrepareRecoveryResponse,
    RequestInfo,
    SegmentState,
    from_thrift,
    to_thrift,
)
from hadoop_qjm.qjournal.protocol.sockets import ClientSocketFactoryLike
from hadoop_qjm.qjournal.protocol.thrift_idl import qjournal_thrift
from hadoop_qjm.qjournal.protocol.wire import (
    DEFAULT_MAX_FRAME_SIZE,
    ProtocolError,
    TMessageType,
    decode_reply,
    encode_message,
    encode_void_reply,
)

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_TIMEOUT_S",
    "QJournalProtocolProxy",
    "RESENT_READS",
    "RpcChannel",
    "journal_body",
    "SocketChannel",
]

_Q = qjournal_thrift.QJournalProtocol
_INTER_Q = qjournal_thrift.InterQJournalProtocol

#: The syncer's reads of a peer, which change nothing: on a kept connection the peer
#: closed (it restarted) they are resent once on a new one, as TransferSession resends
#: a GET, instead of failing the round for a whole sync interval (issue 33).
RESENT_READS = frozenset({"getEditLogManifestFromJournal", "getStorageInfo", "getJournalState"})


# (service, rpc) -> (args class, result class, whether the result has a value).
_RPC_CLASSES: dict[tuple[Any, str], tuple[type, type, bool]] = {}


def _rpc_classes(service: Any, rpc: str) -> tuple[type, type, bool]:
    classes = _RPC_CLASSES.get((service, rpc))
    if classes is None:
        result_cls = getattr(service, rpc + "_result")
        classes = _RPC_CLASSES[(service, rpc)] = (
            getattr(service, rpc + "_args"),
            result_cls,
            any(spec[1] == "success" for spec in result_cls.thrift_spec.values()),
        )
    return classes


# A successful journal reply is this, the seqid, and an empty struct's STOP byte
# (encode_void_reply's bytes).
_JOURNAL_DONE = encode_void_reply("journal", 0)[:-5]
_SEQID = struct.Struct(">i")

# The last batch's encoded journal body: every node's call of one flush shares it.
_journal_body_cache: tuple[Any, tuple[int, int, int, str | None], bytes] | None = None


#: What encoding a journal call may raise for a value that cannot be encoded: a number
#: that does not fit its field, a string that is not valid Unicode, a wrong type.
_ENCODING_ERRORS = (struct.error, UnicodeEncodeError, AttributeError, TypeError)


def journal_body(
    segment_txid: int, first_txid: int, num_txns: int, records: bytes, ns_id: str | None
) -> bytes:
    """The ``journal_args`` fields after reqInfo, encoded (with the closing STOP byte).

    Encoded once per batch: a writer sends the same ``records`` object to
    every JournalNode, so the calls after the first find it here. (Thrift
    decoders take fields in any order; :meth:`QJournalProtocolProxy.journal_async`
    puts each node's reqInfo before this.)
    """
    global _journal_body_cache
    key = (segment_txid, first_txid, num_txns, ns_id)
    cached = _journal_body_cache
    if cached is not None and cached[0] is records and cached[1] == key:
        return cached[2]
    try:
        body = encode_journal_body(first_txid, num_txns, bytes(records), segment_txid, ns_id)
    except _ENCODING_ERRORS as e:  # e.g. a value does not fit its field
        raise IllegalArgumentException(f"Cannot encode journal call: {e}") from e
    _journal_body_cache = (records, key, body)
    return body


def _journal_head(seqid: int, req: RequestInfo) -> bytes:
    """The message header and ``req`` of a journal call (see :func:`journal_body`)."""
    try:
        return encode_journal_head(
            seqid,
            req.journal_id,
            req.epoch,
            req.ipc_serial_number,
            req.committed_txid if req.has_committed_txid else None,
            req.name_service_id,
        )
    except _ENCODING_ERRORS as e:
        raise IllegalArgumentException(f"Cannot encode journal call: {e}") from e


class QJournalProtocolProxy:
    """Client of one JournalNode's QJournalProtocol and InterQJournalProtocol.

    ``timeout_s`` bounds each call's wait for its reply (``None``: no bound);
    ``connect_timeout_s`` each connection attempt. ``channel`` replaces the
    socket transport (then host and port only name the peer in messages).
    """

    def __init__(
        self,
        host: str,
        port: int,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        *,
        connect_timeout_s: float | None = DEFAULT_CONNECT_TIMEOUT_S,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        socket_factory: ClientSocketFactoryLike | None = None,
        channel: RpcChannel | None = None,
        pipelined: bool = False,
    ) -> None:
        self.host = host
        self.port = port
        if channel is None:
            channel_cls = PipelinedChannel if pipelined else SocketChannel
            channel = channel_cls(
                host, port, timeout_s, connect_timeout_s, max_frame_size, socket_factory
            )
        self._channel: RpcChannel = channel
        # Calls may be in flight together on a pipelined channel: the lock then only
        # covers numbering and sending a call, not waiting for its reply.
        self._async: PipelinedChannel | None = (
            channel if isinstance(channel, PipelinedChannel) else None
        )
        self._lock = threading.Lock()
        self._seqid = 0

    def __repr__(self) -> str:
        return f"QJournalProtocolProxy({self.host}:{self.port})"

    def close(self) -> None:
        """Close the connection; later calls raise IOException. Safe from any thread."""
        self._channel.close()

    def __enter__(self) -> QJournalProtocolProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ------------------------------------------------------------ plumbing

    @property
    def pipelined(self) -> bool:
        """Whether calls may be sent without waiting (:meth:`journal_async`)."""
        return self._async is not None

    @property
    def connected(self) -> bool:
        """Whether a pipelined connection is open, so sending a call will not connect."""
        return self._async is not None and self._async.connected

    def _next_seqid(self) -> int:
        self._seqid = (self._seqid + 1) & 0x7FFFFFFF
        return self._seqid

    def _call(self, service: Any, rpc: str, **kwargs: Any) -> Any:
        args_cls, result_cls, returns_value = _rpc_classes(service, rpc)
        try:
            request = args_cls(**kwargs)
        except TypeError as e:
            raise IllegalArgumentException(f"Bad arguments for {rpc}: {e}") from e
        if self._async is not None:
            done = threading.Event()
            answer: list[Any] = []

            def on_reply(reply: bytes | None, error: BaseException | None) -> None:
                answer.append((reply, error))
                done.set()

            with self._lock:  # numbered and sent in the same order
                seqid = self._next_seqid()
                payload = self._encode(rpc, seqid, request)
                self._async.send_async([payload], on_reply)
            self._async.wait(done)
            reply, error = answer[0]
            if error is not None:
                raise self._async.call_failure(error)
            return self._decode_reply(rpc, seqid, reply, result_cls, returns_value)
        with self._lock:
            seqid = self._next_seqid()
            payload = self._encode(rpc, seqid, request)
            if rpc in RESENT_READS and isinstance(self._channel, SocketChannel):
                reply = self._channel.call(payload, resend_if_dropped=True)
            else:
                reply = self._channel.call(payload)
            return self._decode_reply(rpc, seqid, reply, result_cls, returns_value)

    @staticmethod
    def _encode(rpc: str, seqid: int, request: Any) -> bytes:
        try:
            return encode_message(rpc, TMessageType.CALL, seqid, request)
        except Exception as e:  # struct.error etc.: a value does not fit its field
            raise IllegalArgumentException(f"Cannot encode {rpc} call: {e}") from e

    def _decode_reply(
        self, rpc: str, seqid: int, reply: bytes, result_cls: type, returns_value: bool
    ) -> Any:
        """The call's result, or its exception raised (a remote one as its own type)."""
        try:
            result = decode_reply(reply, rpc, seqid, result_cls)
        except ProtocolError as e:
            # A reply we cannot match to this call: the stream is suspect.
            self._channel.reset()
            raise IOException(f"Call to {self.host}:{self.port} failed: {e}") from e
        if result.e is not None:
            raise from_wire(result.e)
        if not returns_value:
            return None
        if result.success is None:
            raise IOException(f"{rpc} to {self.host}:{self.port} returned no result")
        return result.success

    # ------------------------------------------------------- QJournalProtocol

    def is_formatted(self, jid: str, ns_id: str | None = None) -> bool:
        """Whether the journal's storage is formatted."""
        return self._call(_Q, "isFormatted", jid=jid, nameServiceId=ns_id)

    def get_journal_state(self, jid: str, ns_id: str | None = None) -> GetJournalStateResponse:
        """The journal's last promised epoch and the JournalNode's HTTP endpoint."""
        return from_thrift(self._call(_Q, "getJournalState", jid=jid, nameServiceId=ns_id))

    def can_format(self, jid: str, ns_id: str | None = None) -> CanFormatResponse:
        """Whether the node may format the journal now, and what that destroys (not Hadoop's)."""
        return from_thrift(self._call(_Q, "canFormat", jid=jid, nameServiceId=ns_id))

    def format(
        self, jid: str, ns_info: NamespaceInfo, force: bool = False, ns_id: str | None = None
    ) -> None:
        """Format the journal's storage for ``ns_info``."""
        self._call(
            _Q, "format", jid=jid, nsInfo=to_thrift(ns_info), nameServiceId=ns_id, force=force
        )

    def new_epoch(
        self,
        jid: str,
        ns_info: NamespaceInfo,
        epoch: int,
        ns_id: str | None = None,
        writer_config: str | None = None,
        writer_record: str | None = None,
    ) -> NewEpochResponse:
        """Ask the journal to promise ``epoch`` (fencing every lower one); ``writer_config``
        (not Hadoop's) is the set the writer counts, for the node's membership check."""
        return from_thrift(
            self._call(
                _Q,
                "newEpoch",
                jid=jid,
                nsInfo=to_thrift(ns_info),
                epoch=epoch,
                nameServiceId=ns_id,
                writerConfig=writer_config,
                writerRecord=writer_record,
            )
        )

    def set_membership(
        self, req: RequestInfo, record: str, ns_info: NamespaceInfo | None = None
    ) -> None:
        """Replace the journal's membership record (not Hadoop's; a set change's step);
        with ``ns_info``, the journal must be of that namespace."""
        self._call(
            _Q, "setMembership", reqInfo=to_thrift(req), record=record, nsInfo=to_thrift(ns_info)
        )

    def journal(
        self, req: RequestInfo, segment_txid: int, first_txid: int, num_txns: int, records: bytes
    ) -> None:
        """Append ``num_txns`` serialized ops starting at ``first_txid`` to the open segment."""
        body = journal_body(segment_txid, first_txid, num_txns, records, req.name_service_id)
        if self._async is not None:
            done = threading.Event()
            errors: list[BaseException | None] = []

            def callback(error: BaseException | None) -> None:
                errors.append(error)
                done.set()

            self.journal_async(req, body, callback, connect=True)
            self._async.wait(done)
            if errors[0] is not None:
                raise self._async.call_failure(errors[0])
            return
        with self._lock:
            seqid = self._next_seqid()
            reply = self._channel.call(_journal_head(seqid, req) + body)
        self._check_journal_reply(seqid, reply)

    def _check_journal_reply(self, seqid: int, reply: bytes) -> None:
        """Return if ``reply`` says the journal call ``seqid`` was done; else raise its
        error. The usual answer, "done" (an empty journal_result), is one exact byte
        string: compared, not decoded. Anything else is decoded in full."""
        if reply != encode_void_reply("journal", seqid):
            _, result_cls, _ = _rpc_classes(_Q, "journal")
            self._decode_reply("journal", seqid, reply, result_cls, False)

    def journal_async(
        self,
        req: RequestInfo,
        body: bytes,
        callback: Callable[[BaseException | None], None],
        *,
        connect: bool = False,
    ) -> None:
        """Send a ``journal`` call without waiting (a :attr:`pipelined` proxy only).

        ``body`` is :func:`journal_body` of the batch (shared by every node's
        call); the RequestInfo is this node's. ``callback(None)`` or
        ``callback(error)`` runs when the reply came, in the reply reader's
        thread (or here, if the call could not be sent). Without ``connect`` a
        closed connection fails the call instead of connecting (which can block:
        the writer's direct path must not).
        """
        channel = self._async
        if channel is None:
            raise IllegalStateException(f"{self} is not pipelined")
        with self._lock:
            seqid = self._next_seqid()
            # The message header and the reqInfo field: the shared body (the other
            # fields, then STOP) completes the struct.
            head = _journal_head(seqid, req)

            def on_reply(reply: bytes | None, error: BaseException | None) -> None:
                # "Done" compared inline (the reply of almost every call), else decoded.
                if error is None and reply != _JOURNAL_DONE + _SEQID.pack(seqid) + b"\x00":
                    try:
                        self._check_journal_reply(seqid, reply)  # type: ignore[arg-type]
                    except Exception as e:  # noqa: BLE001 - the call's answer
                        error = e
                callback(error)

            channel.send_async([head, body], on_reply, connect=connect)

    def heartbeat(self, req: RequestInfo) -> None:
        """Only run the epoch/serial/committed-txid checks."""
        self._call(_Q, "heartbeat", reqInfo=to_thrift(req))

    def start_log_segment(
        self, req: RequestInfo, txid: int, layout_version: int | None = None
    ) -> None:
        """Open segment ``txid``; ``layout_version`` None means the JournalNode's current one."""
        self._call(
            _Q, "startLogSegment", reqInfo=to_thrift(req), txid=txid, layoutVersion=layout_version
        )

    def finalize_log_segment(self, req: RequestInfo, start_txid: int, end_txid: int) -> None:
        """Finalize segment ``start_txid`` as ``[start_txid, end_txid]``."""
        self._call(
            _Q, "finalizeLogSegment", reqInfo=to_thrift(req), startTxId=start_txid, endTxId=end_txid
        )

    def purge_logs_older_than(self, req: RequestInfo, min_txid_to_keep: int) -> None:
        """Delete segments and paxos records wholly below ``min_txid_to_keep`` (RPC purgeLogs)."""
        self._call(_Q, "purgeLogs", reqInfo=to_thrift(req), minTxIdToKeep=min_txid_to_keep)

    def get_edit_log_manifest(
        self, jid: str, since_txid: int, in_progress_ok: bool = False, ns_id: str | None = None
    ) -> GetEditLogManifestResponse:
        """The journal's segments from ``since_txid`` on (a ``RemoteEditLogManifest``)."""
        return from_thrift(
            self._call(
                _Q,
                "getEditLogManifest",
                jid=jid,
                sinceTxId=since_txid,
                inProgressOk=in_progress_ok,
                nameServiceId=ns_id,
            )
        )

    def get_journaled_edits(
        self,
        jid: str,
        since_txid: int,
        max_txns: int,
        ns_id: str | None = None,
        wait_ms: int | None = None,
    ) -> GetJournaledEditsResponse:
        """Up to ``max_txns`` ops from ``since_txid``, served from the JournalNode's cache.

        With ``wait_ms`` the node answers once it has written ``since_txid`` or after
        that long (a long poll; not in Hadoop, whose nodes ignore the field)."""
        return from_thrift(
            self._call(
                _Q,
                "getJournaledEdits",
                jid=jid,
                sinceTxId=since_txid,
                maxTxns=max_txns,
                nameServiceId=ns_id,
                waitMs=wait_ms,
            )
        )

    def prepare_recovery(self, req: RequestInfo, segment_txid: int) -> PrepareRecoveryResponse:
        """Paxos phase 1 of segment recovery."""
        return from_thrift(
            self._call(_Q, "prepareRecovery", reqInfo=to_thrift(req), segmentTxId=segment_txid)
        )

    def accept_recovery(self, req: RequestInfo, segment_state: SegmentState, from_url: str) -> None:
        """Paxos phase 2: adopt ``segment_state``, downloading it from ``from_url`` if needed."""
        self._call(
            _Q,
            "acceptRecovery",
            reqInfo=to_thrift(req),
            stateToAccept=to_thrift(segment_state),
            fromURL=from_url,
        )

    def discard_segments(self, jid: str, start_txid: int, ns_id: str | None = None) -> None:
        """Move segments starting at or after ``start_txid`` aside (rolling-upgrade rollback)."""
        self._call(_Q, "discardSegments", jid=jid, startTxId=start_txid, nameServiceId=ns_id)

    def get_journal_ctime(self, jid: str, ns_id: str | None = None) -> int:
        """The ``cTime`` of the journal's VERSION file."""
        return self._call(_Q, "getJournalCTime", jid=jid, nameServiceId=ns_id)

    def do_pre_upgrade(self, jid: str) -> None:
        """Upgrade step 1: keep the current storage as ``previous.tmp``."""
        self._call(_Q, "doPreUpgrade", jid=jid)

    def do_upgrade(self, jid: str, storage_info: StorageInfo) -> None:
        """Upgrade step 2: write the new VERSION, keep ``previous``."""
        self._call(_Q, "doUpgrade", jid=jid, sInfo=to_thrift(storage_info))

    def do_finalize(self, jid: str, ns_id: str | None = None) -> None:
        """Finalize an upgrade: remove ``previous``."""
        self._call(_Q, "doFinalize", jid=jid, nameServiceId=ns_id)

    def can_roll_back(
        self,
        jid: str,
        storage: StorageInfo,
        prev_storage: StorageInfo,
        target_layout_version: int,
        ns_id: str | None = None,
    ) -> bool:
        """Whether the journal can roll back to ``prev_storage``."""
        return self._call(
            _Q,
            "canRollBack",
            jid=jid,
            storage=to_thrift(storage),
            prevStorage=to_thrift(prev_storage),
            targetLayoutVersion=target_layout_version,
            nameServiceId=ns_id,
        )

    def do_rollback(self, jid: str, ns_id: str | None = None) -> None:
        """Roll back an upgrade: ``previous`` becomes ``current``."""
        self._call(_Q, "doRollback", jid=jid, nameserviceId=ns_id)

    # -------------------------------------------------- InterQJournalProtocol

    def get_edit_log_manifest_from_journal(
        self, jid: str, since_txid: int, in_progress_ok: bool = False, ns_id: str | None = None
    ) -> GetEditLogManifestResponse:
        """InterQJournalProtocol: the peer JournalNode's manifest (the syncer's call)."""
        return from_thrift(
            self._call(
                _INTER_Q,
                "getEditLogManifestFromJournal",
                jid=jid,
                sinceTxId=since_txid,
                inProgressOk=in_progress_ok,
                nameServiceId=ns_id,
            )
        )

    def get_storage_info(self, jid: str, ns_id: str | None = None) -> StorageInfo:
        """InterQJournalProtocol: the peer's storage info of ``jid`` (HDFS-16690's call);
        JournalNotFormattedException when the peer's copy is unformatted."""
        return from_thrift(self._call(_INTER_Q, "getStorageInfo", jid=jid, nameServiceId=ns_id))
