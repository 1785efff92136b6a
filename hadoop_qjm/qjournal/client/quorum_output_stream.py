"""QuorumOutputStream: the edit-log output stream of one segment on a quorum (design paper §2.11).

Ops are buffered in an :class:`EditsDoubleBuffer` (group commit). ``flush()``
sends the ready batch to every JournalNode and waits for a write quorum; then
the batch's last txid becomes the committed txid on every logger, so it
reaches the JournalNodes piggy-backed on the *next* call (one batch late —
durable reads rely on this, digest §10). When the current buffer fills,
``should_force_sync`` tells the writer to sync now instead of growing it
(HDFS-13977).
"""

from __future__ import annotations

import logging
import threading
from typing import Any, NamedTuple

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import IOException, always_assert
from hadoop_qjm.editlog.edits_double_buffer import EditsDoubleBuffer
from hadoop_qjm.editlog.fs_edit_log_op import FSEditLogOp
from hadoop_qjm.qjournal.client.async_logger_set import AsyncLoggerSet

__all__ = ["QuorumOutputStream"]

LOG = logging.getLogger("hadoop_qjm.qjournal.client.quorum_journal_manager")


class _SentBatch(NamedTuple):
    """A batch on its way: its QuorumCall and its last txid."""

    call: Any
    last_txid: int


class QuorumOutputStream:
    """Writes segment ``segment_txid`` through ``loggers`` (Hadoop's QuorumOutputStream)."""

    def __init__(
        self,
        loggers: AsyncLoggerSet,
        segment_txid: int,
        output_buffer_capacity: int,
        write_timeout_ms: int,
    ) -> None:
        self.loggers = loggers
        self.segment_txid = segment_txid
        self.write_timeout_ms = write_timeout_ms
        self._buf: EditsDoubleBuffer | None = EditsDoubleBuffer(output_buffer_capacity)
        self._commit_lock = threading.Lock()
        self._committed_txid = INVALID_TXID

    def _open_buffer(self) -> EditsDoubleBuffer:
        if self._buf is None:
            raise IOException(f"{self} is closed")
        return self._buf

    # ---- writing -------------------------------------------------------------------------------
    def create(self, layout_version: int | None = None) -> None:
        """Unsupported: the JournalNodes write the segment header in startLogSegment."""
        raise NotImplementedError("QuorumOutputStream.create")

    def write(self, op: FSEditLogOp) -> None:
        """Buffer one op."""
        self._open_buffer().write_op(op)

    def write_raw(
        self,
        data: bytes | bytearray | memoryview,
        num_txns: int = 0,
        first_txid: int = INVALID_TXID,
    ) -> None:
        """Buffer already-framed ops (see :meth:`EditsDoubleBuffer.write_raw`)."""
        self._open_buffer().write_raw(data, num_txns, first_txid)

    def set_ready_to_flush(self) -> None:
        """Make everything buffered so far the batch the next :meth:`flush` sends."""
        self._open_buffer().set_ready_to_flush()

    def should_force_sync(self) -> bool:
        """True once the current buffer has reached its capacity (auto-sync, HDFS-13977)."""
        return self._buf is not None and self._buf.should_force_sync()

    def flush(self, durable: bool = True) -> None:
        """Send the ready batch to every JournalNode and wait for a write quorum.

        Raises QuorumException when a majority failed (the batch is then lost
        from the buffer: the writer must abort, as Hadoop's NameNode does) and
        IOException on timeout. ``durable`` is accepted for the stream
        interface; a JournalNode always fsyncs before it answers.
        """
        self.wait_sent(self.send_ready())

    flush_and_sync = flush

    def send_ready(self) -> _SentBatch | None:
        """Send the ready batch to every JournalNode without waiting (None if it is
        empty); :meth:`wait_sent` waits for its quorum. Several batches may be on their
        way at once: each node gets them in order, on one connection (pipelining)."""
        buf = self._open_buffer()
        num_bytes = buf.count_ready_bytes()
        if num_bytes <= 0:
            return None
        num_txns = buf.count_ready_txns()
        first_txid = buf.first_ready_txid()
        always_assert(num_txns > 0, f"{num_bytes} bytes ready but no transactions")
        # A copy: the calls are asynchronous and the buffer is reused right away.
        sent: list[bytes] = []
        buf.flush_to(lambda view: sent.append(bytes(view)))
        data = sent[0]
        call = self.loggers.send_edits(self.segment_txid, first_txid, num_txns, data)
        return _SentBatch(call, first_txid + num_txns - 1)

    def wait_sent(self, sent: _SentBatch | None) -> None:
        """Wait until a write quorum acknowledged the batch ``sent`` (from
        :meth:`send_ready`): QuorumException or IOException as :meth:`flush` raises.

        Then its last txid is committed. Batches may be waited for out of order: a node
        acknowledges a batch only after every earlier one of the segment (one connection,
        in order; a failed call fails the later ones, and the JournalNode refuses a gap),
        so a quorum on a batch is a quorum on everything before it, and the committed
        txid only ever moves forward.
        """
        if sent is None:
            return
        self.loggers.wait_for_write_quorum(sent.call, self.write_timeout_ms, "sendEdits")
        with self._commit_lock:
            if sent.last_txid > self._committed_txid:
                self._committed_txid = sent.last_txid
                # Every logger learns it, even one that is behind: the next call carries it.
                self.loggers.set_committed_txid(sent.last_txid)

    # ---- life cycle ----------------------------------------------------------------------------
    def close(self) -> None:
        """Close; IOException if buffered ops were never flushed."""
        if self._buf is not None:
            self._buf.close()  # raises with unflushed data: the writer may still abort()
            self._buf = None

    def abort(self) -> None:
        """Drop whatever is buffered (the writer is giving up on this segment)."""
        LOG.warning("Aborting %s", self)
        self._buf = None

    def generate_report(self) -> str:
        """Plain text: the segment and each logger's state."""
        return (
            f"Writing segment beginning at txid {self.segment_txid}. \n"
            f"{self.loggers.append_report()}"
        )

    def __enter__(self) -> QuorumOutputStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if exc_info[0] is None:
            self.close()
        else:
            self.abort()

    def __str__(self) -> str:
        return f"QuorumOutputStream starting at txid {self.segment_txid}"
