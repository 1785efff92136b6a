"""RollingAuditFileHandler: the ``RFAAUDIT`` appender, one line per call for little CPU.

Hadoop's audit appender is a log4j RollingFileAppender with the layout
``%d{ISO8601} %p %c{2}: %m%n``. Python's RotatingFileHandler gives the same file, but a
line through it costs more than the namespace call it records: a LogRecord, the
timestamp formatted from scratch, and ``shouldRollover`` formatting the line a second time
and seeking to the end of the file to learn its size. This handler writes the same bytes
with the second's timestamp kept until the second changes, the file's size counted as it
writes, and :meth:`append` for a logger that has its line already and no record to make
(:class:`~hadoop_qjm.namenode.fs_namesystem_audit_logger.FSNamesystemAuditLogger`).

Each line is flushed as it is written (log4j's ``immediateFlush``); the file is rolled to
``.1`` … ``.<backups>`` once a line would take it to ``max_bytes``.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from logging.handlers import RotatingFileHandler

__all__ = ["WRITER_LINGER_S", "RollingAuditFileHandler"]

#: With a writer thread, how long a listed line may wait for others to join its write.
WRITER_LINGER_S = 0.005


class RollingAuditFileHandler(RotatingFileHandler):
    """Lines ``<ISO8601 time> INFO <logger_name>: <message>`` into ``path`` (the audit
    logger writes at INFO only; :meth:`emit` formats any other record as it says)."""

    def __init__(self, path: str, max_bytes: int, backups: int, logger_name: str) -> None:
        super().__init__(path, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
        self._tail = f" INFO {logger_name}: "
        self._second = -1
        self._stamp = ""
        self._size = os.fstat(self.stream.fileno()).st_size
        self._pending_lock = threading.Lock()
        self._pending: list[str] = []
        self._writing = False
        self._writer: threading.Thread | None = None
        self._wakeup = threading.Event()
        self._signalled = False
        self._stopping = False
        self._stopped = threading.Event()

    def _timestamp(self, now: float) -> str:
        second = int(now)
        if second != self._second:
            self._stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(second))
            self._second = second
        return f"{self._stamp},{int((now - second) * 1000):03d}"

    def append(self, message: str) -> None:
        """Write ``message`` as one line stamped now, at this handler's level and name.

        The handlers of many RPC threads audit at once. None of them waits for another's
        write: the line joins a list under a lock held for nothing else, and the thread
        that finds no write in progress writes everything listed, in order, until the
        list is empty. Each line is in the file when the write that took it returns.
        """
        line = f"{self._timestamp(time.time())}{self._tail}{message}\n"
        with self._pending_lock:
            self._pending.append(line)
            if self._writer is not None:  # asynchronous: the writer thread takes it
                if not self._signalled:
                    self._signalled = True
                    self._wakeup.set()
                return
            if self._writing:
                return  # the thread writing now takes this line with its next write
            self._writing = True
        try:
            while True:
                with self._pending_lock:
                    lines, self._pending = self._pending, []
                    if not lines:
                        self._writing = False
                        return
                self.acquire()
                try:
                    self._write("".join(lines))
                finally:
                    self.release()
        except BaseException:
            with self._pending_lock:
                self._writing = False
            raise

    def start_writer(self) -> bool:
        """From now on :meth:`append` only lists the line, and one background thread
        writes what is listed, many lines to a write (``dfs.namenode.audit.log.async``).
        False when the writer runs already (another owner started it)."""
        with self._pending_lock:
            if self._writer is not None:
                return False
            self._stopping = False
            self._stopped.clear()
            self._writer = threading.Thread(
                target=self._write_listed, name="audit-log-writer", daemon=True
            )
        self._writer.start()
        return True

    def stop_writer(self) -> None:
        """Write every line listed so far, join the writer thread; lines are written by
        their callers again (idempotent)."""
        with self._pending_lock:
            writer = self._writer
            if writer is None:
                return
            self._stopping = True
            self._stopped.set()
            self._wakeup.set()
        writer.join()

    def _write_listed(self) -> None:
        while True:
            self._wakeup.wait()
            if not self._stopping:
                # let the lines of the next few ms join this write: one write (and one
                # wake-up of this thread) per WRITER_LINGER_S, not one per line
                self._stopped.wait(WRITER_LINGER_S)
            with self._pending_lock:
                self._wakeup.clear()
                self._signalled = False
                lines, self._pending = self._pending, []
                if self._stopping and not lines:
                    self._writer = None  # appends after this write their own lines
                    return
            if lines:
                self.acquire()
                try:
                    self._write("".join(lines))
                except Exception:  # the daemon's log says why; the lines are lost
                    logging.getLogger(__name__).exception("cannot write the audit log")
                finally:
                    self.release()
            if self._stopping:
                self._wakeup.set()  # once more: what was listed while this wrote

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = f"{self.format(record)}\n"
            self._write(text)  # Handler.handle holds the lock
        except Exception:
            self.handleError(record)

    def _write(self, text: str) -> None:
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
        if self.maxBytes > 0 and self._size and self._size + size > self.maxBytes:
            self.doRollover()
            self._size = 0
        if self.stream is None:  # closed by the daemon's stop; reopened as logging does
            self.stream = self._open()
            self._size = os.fstat(self.stream.fileno()).st_size
        self.stream.write(text)
        self.stream.flush()
        self._size += size
