"""EditLogFileOutputStream: writes one segment file (Hadoop's class of the same name).

Ops go into an :class:`EditsDoubleBuffer`; ``set_ready_to_flush`` + ``flush`` write the
ready batch and ``os.fdatasync`` it. Before a flush whose data would pass the end of the
file, the file is extended with whole 1 MiB chunks of 0xFF (OP_INVALID), so the size of an
open segment is a multiple of 1 MiB and a sync rarely has to commit a size change
(HADOOP-QJM-DIGEST.md §4.2). ``close`` truncates the padding; ``abort`` leaves it, and a
reader stops at the first 0xFF.

A failed write or sync is never retried: the error is raised, and every later use of the
stream raises too, because after a failed fsync the kernel may have dropped the dirty pages
(the "fsyncgate" lesson) and only the caller can decide what is durable.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, INVALID_TXID
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.editlog.edits_double_buffer import EditsDoubleBuffer
from hadoop_qjm.editlog.fs_edit_log_op import FSEditLogOp, edit_log_header

__all__ = [
    "EditLogFileOutputStream",
    "PREALLOCATION_LENGTH",
    "DEFAULT_OUTPUT_BUFFER_CAPACITY",
]

LOG = logging.getLogger(__name__)

#: Preallocation step: 1 MiB of OP_INVALID.
PREALLOCATION_LENGTH = 1024 * 1024
#: FSEditLog's default double-buffer size (512 KiB).
DEFAULT_OUTPUT_BUFFER_CAPACITY = 512 * 1024

_FILL = b"\xff" * PREALLOCATION_LENGTH
_ABORTED = "Trying to use aborted output stream"


class EditLogFileOutputStream:
    """An edit-log segment file open for writing.

    ``initial_size`` is the double buffer's capacity: :meth:`should_force_sync` turns true
    once the current buffer reaches it.
    """

    def __init__(
        self,
        path: str | os.PathLike,
        initial_size: int = DEFAULT_OUTPUT_BUFFER_CAPACITY,
        *,
        sync_writes: bool = False,
    ) -> None:
        self.path = Path(path)
        self.double_buf: EditsDoubleBuffer | None = EditsDoubleBuffer(initial_size)
        #: ``dfs.namenode.edits.noeditlogchannelflush``: the file is opened O_SYNC (Hadoop's
        #: RandomAccessFile "rws"), so every write is durable when it returns and no
        #: fdatasync follows it (Hadoop skips FileChannel.force).
        self.sync_writes = sync_writes
        flags = os.O_RDWR | os.O_CREAT | (os.O_SYNC if sync_writes else 0)
        try:
            self._fd: int | None = os.open(self.path, flags, 0o644)
        except OSError as e:
            raise IOException(f"Unable to open edit log {self.path}: {e}") from e
        # Like Hadoop, an existing file is appended to until create() truncates it.
        self._pos = os.fstat(self._fd).st_size
        self._size = self._pos
        self._failed: BaseException | None = None
        # Pipelined syncs: batches numbered by send_ready, written and synced so far.
        self._write_lock = threading.Lock()
        # One wait_sent fdatasync at a time, its outcome recorded before the next starts
        # (see wait_sent).
        self._sync_lock = threading.Lock()
        self._batches_sealed = self._batches_written = self._batches_synced = 0
        # The fd's users (a write or fdatasync in progress, see _using_fd) and the close
        # that abort() leaves to the last of them: closed under a user, the fd's number
        # could be handed to another file before the user's pwrite lands.
        self._fd_guard = threading.Lock()
        self._fd_users = 0
        self._close_when_unused: int | None = None

    # ---- state ---------------------------------------------------------------------------------

    @property
    def position(self) -> int:
        """Bytes of data written to the file so far (the padding excluded)."""
        return self._pos

    @property
    def is_open(self) -> bool:
        return self._fd is not None

    def _check_usable(self) -> EditsDoubleBuffer:
        if self._fd is None or self.double_buf is None:
            raise IOException(_ABORTED)
        if self._failed is not None:
            raise IOException(
                f"Edit log {self.path} failed earlier and must not be used: {self._failed}"
            )
        return self.double_buf

    @contextlib.contextmanager
    def _using_fd(self) -> Iterator[int]:
        """The open fd, kept open until the block ends even if abort() runs meanwhile."""
        fd = self._take_fd()
        try:
            yield fd
        finally:
            self._give_back_fd()

    def _take_fd(self) -> int:
        """The open fd, kept open until :meth:`_give_back_fd` even if abort() runs
        meanwhile (:meth:`_using_fd` without a generator: the JournalNode's write path
        takes it twice per batch)."""
        with self._fd_guard:
            fd = self._fd
            if fd is None:
                raise IOException(_ABORTED)
            self._fd_users += 1
        return fd

    def _give_back_fd(self) -> None:
        with self._fd_guard:
            self._fd_users -= 1
            fd = self._close_when_unused if self._fd_users == 0 else None
            if fd is not None:
                self._close_when_unused = None
        if fd is not None:
            self._close_fd(fd)

    def _retire_fd(self) -> None:
        """Make the stream unusable; close its fd now, or when its last user is done."""
        with self._fd_guard:
            fd, self._fd = self._fd, None
            self.double_buf = None
            if fd is None:
                return
            if self._fd_users:
                self._close_when_unused = fd
                return
        self._close_fd(fd)

    def _close_fd(self, fd: int) -> None:
        try:
            os.close(fd)
        except OSError as e:  # whatever mattered was synced, or is already failed
            LOG.warning("Error closing %s: %s", self.path, e)

    # ---- writing -------------------------------------------------------------------------------

    def create(self, layout_version: int = CURRENT_LAYOUT_VERSION) -> None:
        """Truncate the file and write, flush and sync the 8-byte header."""
        buf = self._check_usable()
        try:
            with self._using_fd() as fd:
                os.ftruncate(fd, 0)
        except OSError as e:
            self._fail(e)
            raise IOException(f"Unable to truncate edit log {self.path}: {e}") from e
        self._pos = self._size = 0
        buf.write_raw(edit_log_header(layout_version))
        self.set_ready_to_flush()
        self.flush()

    def write(self, op: FSEditLogOp) -> None:
        """Buffer one op."""
        buf = self.double_buf
        if buf is None or self._failed is not None:
            buf = self._check_usable()  # raises
        buf.current.write_op(op)

    def write_raw(
        self,
        data: bytes | bytearray | memoryview,
        num_txns: int = 0,
        first_txid: int = INVALID_TXID,
    ) -> None:
        """Buffer already-framed bytes (see :meth:`EditsDoubleBuffer.write_raw`)."""
        self._check_usable().write_raw(data, num_txns, first_txid)

    def set_ready_to_flush(self) -> None:
        """Make everything buffered so far the next batch :meth:`flush` writes."""
        self._check_usable().set_ready_to_flush()

    def should_force_sync(self) -> bool:
        """True once the current buffer has reached ``initial_size``."""
        return self.double_buf is not None and self.double_buf.should_force_sync()

    def flush(self, durable: bool = True) -> None:
        """Write the ready batch (preallocating first) and, if ``durable``, fdatasync it."""
        buf = self._check_usable()
        if buf.is_flushed():
            LOG.debug("Nothing to flush in %s", self.path)
            return
        try:
            with self._using_fd() as fd:
                self._preallocate(fd, buf.count_ready_bytes())
                buf.flush_to(functools.partial(self._write_at_position, fd))
                if durable:
                    self._fdatasync(fd)
        except OSError as e:
            self._fail(e)
            raise IOException(f"Unable to write edit log {self.path}: {e}") from e

    flush_and_sync = flush

    def set_pipeline_depth(self, depth: int) -> None:
        """Let up to ``depth`` sealed batches wait for :meth:`wait_sent` (pipelined syncs)."""
        self._check_usable().ready_limit = depth

    def send_ready(self) -> int:
        """The pipelined first half of :meth:`flush`: number the batch sealed last; it
        is written by :meth:`wait_sent`. Nothing reaches the file here: the JournalSet
        waits for the shared journals' quorum before the local ones get a batch
        (HDFS-2874), so a local copy never holds a txn the JournalNodes may have lost."""
        self._check_usable()
        self._batches_sealed += 1
        return self._batches_sealed

    def wait_sent(self, batch: int) -> None:
        """Write every sealed batch up to ``batch`` (in order, whoever comes first) and
        fdatasync them; return at once if a sync that started after ``batch`` was written
        has already finished (a group fsync).

        The fdatasyncs run one at a time, each only while no earlier one failed: when
        writeback fails the kernel reports it to one fdatasync of the file only (the
        fsyncgate lesson), so one running beside a failing one could return 0 for pages
        that failure lost. Writing the next batches goes on meanwhile."""
        try:
            with self._write_lock:
                buf = self._check_usable()
                if self._batches_written < batch:
                    with self._using_fd() as fd:
                        write = functools.partial(self._write_at_position, fd)
                        while self._batches_written < batch:
                            self._preallocate(fd, buf.count_ready_bytes())
                            buf.flush_to(write)
                            self._batches_written += 1
            with self._sync_lock:
                with self._write_lock:
                    if self._batches_synced >= batch:
                        return  # an fdatasync that started after it was written succeeded
                    self._check_usable()  # a failed one poisons the file: never retried
                    written = self._batches_written
                with self._using_fd() as fd:
                    try:
                        self._fdatasync(fd)
                    except OSError as e:
                        self._fail(e)  # before the next fdatasync may start
                        raise
                self._batches_synced = written
        except OSError as e:
            self._fail(e)
            raise IOException(f"Unable to write edit log {self.path}: {e}") from e

    def write_batch(self, data: bytes | bytearray | memoryview, durable: bool = True) -> None:
        """Write already-framed bytes straight to the file and, if ``durable``, fdatasync them.

        What ``write_raw`` + ``set_ready_to_flush`` + ``flush`` do, for a writer that hands
        over whole batches (the JournalNode writes exactly what each ``journal()`` call
        carries): the same bytes land at the same place, with no copy into the double buffer.
        Anything already buffered is written first, so the order never changes.
        """
        buf = self._check_usable()
        if buf.count_buffered_bytes():
            buf.write_raw(data)
            buf.set_ready_to_flush()
            self.flush(durable)
            return
        try:
            fd = self._take_fd()
            try:
                self._preallocate(fd, len(data))
                self._write_at_position(fd, data)
                if durable:
                    self._fdatasync(fd)
            finally:
                self._give_back_fd()
        except OSError as e:
            self._fail(e)
            raise IOException(f"Unable to write edit log {self.path}: {e}") from e

    def sync(self) -> None:
        """fdatasync everything written so far (the JournalNode's group fsync: several
        batches written with ``write_batch(..., durable=False)``, then one sync)."""
        self._check_usable()
        try:
            fd = self._take_fd()
            try:
                self._fdatasync(fd)
            finally:
                self._give_back_fd()
        except OSError as e:
            self._fail(e)
            raise IOException(f"Unable to sync edit log {self.path}: {e}") from e

    def _fdatasync(self, fd: int) -> None:
        if not self.sync_writes:  # O_SYNC: each write was durable when it returned
            os.fdatasync(fd)

    def _write_at_position(self, fd: int, data: bytes | bytearray | memoryview) -> None:
        pos = self._pos
        total = len(data)
        written = os.pwrite(fd, data, pos)
        if written < total:  # rare: a short write; go on from where it stopped
            view = memoryview(data)
            while written < total:
                written += os.pwrite(fd, view[written:], pos + written)
        self._pos = pos + total

    def _preallocate(self, fd: int, nbytes: int) -> None:
        """Extend the file with 1 MiB chunks of 0xFF until ``nbytes`` fit after the position."""
        need = nbytes - (self._size - self._pos)
        if need <= 0:
            return
        old_size = self._size
        while need > 0:
            written = 0
            while written < PREALLOCATION_LENGTH:
                written += os.pwrite(fd, _FILL[written:], self._size + written)
            self._size += PREALLOCATION_LENGTH
            need -= PREALLOCATION_LENGTH
        LOG.debug("Preallocated %d bytes at the end of %s", self._size - old_size, self.path)

    def _fail(self, error: BaseException) -> None:
        if self._failed is None:
            self._failed = error

    # ---- closing -------------------------------------------------------------------------------

    def close(self) -> None:
        """Truncate the padding after the last op, sync and close.

        Raises if the stream was already closed or aborted, or if data is still buffered.
        """
        with self._using_fd() as fd:  # raises on an aborted stream
            try:
                buf = self.double_buf  # (read once: an abort() may clear it)
                if buf is not None:
                    buf.close()
                if self._failed is None:
                    os.ftruncate(fd, self._pos)
                    self._size = self._pos
                    os.fsync(fd)
            except OSError as e:
                self._fail(e)
                raise IOException(f"Unable to close edit log {self.path}: {e}") from e
            finally:
                self._retire_fd()  # closed as this block ends (or by a writer still in)
        if self._failed is not None:
            raise IOException(f"Edit log {self.path} failed earlier: {self._failed}")

    def abort(self) -> None:
        """Close without truncating; a no-op on a closed or aborted stream. It never
        waits: a write or fdatasync in progress in another thread keeps the fd open until
        it ends (its batch counts for nothing: FSEditLog.log_sync)."""
        self._retire_fd()

    def __enter__(self) -> EditLogFileOutputStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if exc_info[0] is None and self._fd is not None:
            self.close()
        else:
            self.abort()

    def __repr__(self) -> str:
        return f"EditLogFileOutputStream({self.path})"
