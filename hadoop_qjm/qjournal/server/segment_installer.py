"""The JournalNodeSyncer's installs, one thread behind its downloads (issue 39 item 3).

A segment the syncer received into ``edits.sync/`` (checked: its md5 matched the one
its peer kept, or every op verified) counts only once it is durable in ``current/``:
its data fdatasynced, its ``.md5`` written, renamed to its finalized name, the directory
fsynced (``Journal.move_tmp_segment_to_current``). Those steps wait on the disk, not
the CPU; done in the receiving thread they doubled a catch-up's time on a loaded disk.
:class:`SegmentInstaller` does them in a thread of its own, in txid order, while the
next segment is being received: nothing is installed before its own fdatasync (on the
descriptor the download wrote through, so that a write-back error since is seen), and
nothing after a failed install (the round stops there, as Hadoop's does at its first
failure; the segment received meanwhile is deleted).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from hadoop_qjm.common.exceptions import HadoopException, IOException
from hadoop_qjm.common.remote_edit_log import RemoteEditLog

__all__ = ["ReceivedSegment", "SegmentInstaller"]

LOG = logging.getLogger(__name__)

#: fdatasync where the platform has it: the file's data and size, not its timestamps.
_fdatasync = getattr(os, "fdatasync", os.fsync)


@dataclass(frozen=True)
class ReceivedSegment:
    """A segment received into ``tmp``, not yet durable: from ``peer``, ``size`` bytes
    (``took``: the download's size and rate, for the log), ``md5`` the one its peer kept
    and the bytes matched (None: its ops were checked instead). ``fd`` is a descriptor
    of the file as it was written (an ``os.dup`` of the writer's): its fdatasync reports
    an error of the write-back started since, which one opened afterwards need not."""

    log: RemoteEditLog
    peer: tuple[str, int]
    tmp: Path
    final: Path
    size: int
    md5: str | None
    took: str
    fd: int

    def discard(self) -> None:
        """Close :attr:`fd` and remove ``tmp`` (gone already once it was installed)."""
        with contextlib.suppress(OSError):
            os.close(self.fd)
        with contextlib.suppress(OSError):
            self.tmp.unlink()


class SegmentInstaller:
    """Installs one round's received segments, in order, in one thread.

    ``on_segment(log, nbytes)`` is called (in that thread) after each install;
    :meth:`close` waits for the last one and returns what was installed.
    """

    def __init__(
        self,
        journal,
        committed_bound: int | None,
        on_segment: Callable[[RemoteEditLog, int], object] | None = None,
    ) -> None:
        self.journal = journal
        self.committed_bound = committed_bound
        self.on_segment = on_segment
        #: Set by the first install that fails: nothing is installed after it.
        self.failed = threading.Event()
        self.installed: list[tuple[RemoteEditLog, int]] = []
        self._pool: ThreadPoolExecutor | None = None

    def add_existing(self, log: RemoteEditLog, size: int) -> None:
        """A segment already here (another round installed it): counted in order."""
        self.submit_call(lambda: self._done(log, size))

    def submit(self, received: ReceivedSegment) -> None:
        """Install ``received`` after those submitted before it (its tmp file is the
        installer's from now on: installed or deleted)."""
        self.submit_call(lambda: self._install(received))

    def submit_call(self, call: Callable[[], None]) -> None:
        if self._pool is None:
            name = f"JournalNodeSyncer-install-{self.journal.journal_id}"
            self._pool = ThreadPoolExecutor(1, thread_name_prefix=name)
        self._pool.submit(call)

    def close(self) -> list[tuple[RemoteEditLog, int]]:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
        return self.installed

    def _done(self, log: RemoteEditLog, size: int) -> None:
        if self.failed.is_set():
            return
        self.installed.append((log, size))
        if self.on_segment is not None:
            self.on_segment(log, size)

    def _install(self, r: ReceivedSegment) -> None:
        try:
            if self.failed.is_set():
                return
            if not self._durable_install(r):
                self.failed.set()
                return
            self.journal.metrics.edit_log_synced()
            LOG.info("Synced %s from %s:%d: %s", r.final.name, r.peer[0], r.peer[1], r.took)
            self._done(r.log, r.size)
        except Exception as e:  # noqa: BLE001 - a failed install stops the round, no more
            LOG.warning("Failed to sync %s from %s:%d: %s", r.final.name, *r.peer, e)
            self.failed.set()
        finally:
            r.discard()

    def _durable_install(self, r: ReceivedSegment) -> bool:
        try:
            _fdatasync(r.fd)  # the writer's own file: its write-back errors reach us
        except OSError as e:  # never retried, never ignored: the copy is not installed
            raise IOException(f"Failed to fdatasync {r.tmp}: {e}") from e
        try:
            installed = self.journal.move_tmp_segment_to_current(
                r.tmp,
                r.final,
                r.log.start_txid,
                r.log.end_txid,
                self.committed_bound,
                md5=r.md5,
            )
        except (OSError, HadoopException) as e:
            LOG.warning("Failed to sync %s from %s:%d: %s", r.final.name, *r.peer, e)
            return False
        if not installed:
            LOG.info("Not installing %s (%s) yet: beyond the committed txid", r.final.name, r.took)
        return installed
