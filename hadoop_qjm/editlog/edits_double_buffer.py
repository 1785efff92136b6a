"""EditsDoubleBuffer: group commit for edit-log writers (Hadoop's class of the same name). Pure.

Writers append ops to the *current* buffer while the previous batch, the *ready* buffer, is
written out and synced; ``set_ready_to_flush`` swaps the two. Both the file output stream
and the quorum client use it, so it knows nothing about where the bytes go: ``flush_to``
hands the ready bytes to a callable or a file object.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import BinaryIO

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import IOException, always_assert
from hadoop_qjm.editlog.fs_edit_log_op import FSEditLogOp, append_op

__all__ = ["EditsDoubleBuffer", "TxnBuffer"]

FlushTarget = Callable[[memoryview], object] | BinaryIO


class TxnBuffer:
    """One side of the double buffer: bytes plus the first txid and the count they hold."""

    __slots__ = ("data", "first_txid", "num_txns")

    def __init__(self) -> None:
        self.data = bytearray()
        self.first_txid = INVALID_TXID
        self.num_txns = 0

    def write_op(self, op: FSEditLogOp) -> None:
        first = self.first_txid
        if first == INVALID_TXID:
            self.first_txid = op.txid
        elif op.txid <= first:
            always_assert(False, f"op txid {op.txid} is not after the buffer's first txid {first}")
        append_op(self.data, op)
        self.num_txns += 1

    def reset(self) -> None:
        self.data = bytearray()
        self.first_txid = INVALID_TXID
        self.num_txns = 0

    def __len__(self) -> int:
        return len(self.data)


class EditsDoubleBuffer:
    """Two :class:`TxnBuffer` s: ops go into ``current``; ``ready`` is being flushed.

    Generalised to k buffers for pipelined syncs (``ready_limit`` k > 1): up to k sealed
    batches wait to be flushed, ``ready`` the oldest and ``queued`` the others, in txid
    order; each :meth:`flush_to` hands over the oldest. With k = 1 (the default) it is
    Hadoop's double buffer, and sealing a second batch before the first was flushed is
    a bug.
    """

    def __init__(self, initial_size: int, ready_limit: int = 1) -> None:
        self.initial_size = initial_size
        self.ready_limit = ready_limit
        self.current = TxnBuffer()
        self.ready = TxnBuffer()
        self.queued: deque[TxnBuffer] = deque()

    def write_op(self, op: FSEditLogOp) -> None:
        """Append the frame of ``op`` to the current buffer."""
        self.current.write_op(op)

    def write_raw(
        self,
        data: bytes | bytearray | memoryview,
        num_txns: int = 0,
        first_txid: int = INVALID_TXID,
    ) -> None:
        """Append already-framed bytes (a JournalNode's ``journal()`` batch).

        ``num_txns`` > 0 counts them as transactions; when the buffer holds none yet and
        ``first_txid`` is not given it is read from the first frame of ``data``.
        """
        buf = self.current
        buf.data += data
        if num_txns > 0:
            if buf.first_txid == INVALID_TXID:
                if first_txid == INVALID_TXID and len(data) >= 13:
                    first_txid = int.from_bytes(bytes(data[5:13]), "big", signed=True)
                buf.first_txid = first_txid
            buf.num_txns += num_txns

    def set_ready_to_flush(self) -> None:
        """Swap the buffers; the previous ready buffer must have been flushed (with
        ``ready_limit`` k > 1: fewer than k sealed batches may still be waiting)."""
        if self.ready.data:
            always_assert(1 + len(self.queued) < self.ready_limit, "previous data not flushed yet")
            self.queued.append(self.current)
            self.current = TxnBuffer()
            return
        always_assert(not self.queued, "previous data not flushed yet")
        self.current, self.ready = self.ready, self.current

    def flush_to(self, out: FlushTarget) -> None:
        """Hand the ready bytes to ``out`` (a callable, or an object with ``write``); empty it.

        If ``out`` raises, the ready buffer is kept, so nothing is silently dropped.
        """
        data = self.ready.data
        if data:
            view = memoryview(data)
            try:
                if callable(out):
                    out(view)
                else:
                    out.write(view)
            finally:
                view.release()
        self.ready.reset()
        if self.queued:
            self.ready = self.queued.popleft()

    def count_sealed_batches(self) -> int:
        """Batches sealed and not flushed yet (0 .. ``ready_limit``)."""
        return (1 if self.ready.data else 0) + len(self.queued)

    def should_force_sync(self) -> bool:
        """True once the current buffer has reached its initial capacity."""
        return len(self.current.data) >= self.initial_size

    def is_flushed(self) -> bool:
        return not self.ready.data and not self.queued

    def count_buffered_bytes(self) -> int:
        queued = sum(len(b.data) for b in self.queued) if self.queued else 0
        return len(self.ready.data) + len(self.current.data) + queued

    def count_ready_bytes(self) -> int:
        return len(self.ready.data)

    def count_ready_txns(self) -> int:
        return self.ready.num_txns

    def first_ready_txid(self) -> int:
        """The first txid of the ready buffer (it must hold at least one transaction)."""
        always_assert(self.ready.first_txid != INVALID_TXID, "no transactions are ready")
        return self.ready.first_txid

    def close(self) -> None:
        """Refuse to close while bytes are still waiting to be flushed."""
        pending = self.count_buffered_bytes()
        if pending:
            raise IOException(
                f"FSEditStream has {pending} bytes still to be flushed and cannot be closed."
            )
