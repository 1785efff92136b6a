"""The reads of a Journal: the manifest, the edits cache and its long poll, ``/getJournal``.

None of them changes the journal. ``getJournaledEdits`` and its long poll take no
journal lock (they read the highest written txid first, then the cache); the rules
of what they answer are ``journal_read_rules``.
"""

from __future__ import annotations

import os
from typing import BinaryIO

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.remote_edit_log import RemoteEditLog, RemoteEditLogManifest
from hadoop_qjm.qjournal.protocol import journal_read_rules
from hadoop_qjm.qjournal.protocol.exceptions import CacheMissException, NewerTxnIdException
from hadoop_qjm.qjournal.protocol.messages import GetJournaledEditsResponse
from hadoop_qjm.qjournal.server.journal_checks import JournalCore
from hadoop_qjm.qjournal.server.journal_metrics import JournalMetrics
from hadoop_qjm.qjournal.server.journal_scrubber import SegmentReaders
from hadoop_qjm.qjournal.server.segment_md5 import read_stored_md5

__all__ = ["MAX_JOURNALED_EDITS_WAIT_S", "JournalReads"]

#: The longest a getJournaledEdits long poll may wait, whatever the caller asks for.
MAX_JOURNALED_EDITS_WAIT_S = 60.0


class JournalReads:
    """The reads of one journal: the manifest, the edits cache and its long poll, and
    ``/getJournal``'s open.

    Built with the journal's ``core`` (lock, file journal manager, the state: epochs,
    committed and highest written txid, the edits cache and the long poll's condition),
    its ``metrics`` and the ``segment_readers`` that keep the scrubber off a file being
    sent.
    """

    def __init__(
        self, core: JournalCore, metrics: JournalMetrics, segment_readers: SegmentReaders
    ) -> None:
        self._lock, self._state, self._checks = core.lock, core.state, core.checks
        self._fjm = core.storage.fjm
        self._metrics = metrics
        self._segment_readers = segment_readers

    def open_segment_for_read(
        self, segment_txid: int, in_progress_ok: bool = True
    ) -> tuple[BinaryIO, str, int] | None:
        """Open the segment starting at ``segment_txid`` for ``/getJournal``.

        Returns ``(file, file name, size at open time)``, or None when there is no such
        segment (or it is in progress and ``in_progress_ok`` is false). The lookup and the
        open happen under the journal lock, so the file cannot be finalized (renamed) or
        replaced by acceptRecovery in between (GetJournalEditServlet's ``synchronized
        (fjm)``); the size is read from the open file, so the caller sends exactly that
        many bytes even while the writer appends. The caller closes the file.
        """
        with self._lock:
            elf = self._fjm.get_log_file(segment_txid)
            if elf is None or (elf.is_in_progress and not in_progress_ok):
                return None
            f = open(elf.path, "rb")  # noqa: SIM115 - returned to the caller, who closes it
            try:
                size = os.fstat(f.fileno()).st_size
            except BaseException:
                f.close()
                raise
            # A finalized segment's kept md5 (segment_md5), read with the open under the
            # lock, so it is the one of the file opened: /getJournal's X-MD5-Digest.
            md5 = None if elf.is_in_progress else read_stored_md5(elf.path)
            return self._segment_readers.track(f, elf.path, md5), elf.name, size

    def get_edit_log_manifest(
        self, since_txid: int, in_progress_ok: bool = False
    ) -> RemoteEditLogManifest:
        """The segments from ``since_txid`` on; the in-progress one ends at the highest written txid."""
        with self._lock:
            self._checks.check_formatted()
            logs = self._fjm.get_remote_edit_logs(since_txid, in_progress_ok)
            if in_progress_ok:
                # Not a superseded writer's (journal_read_rules.in_progress_listed).
                listed = journal_read_rules.in_progress_listed(
                    self._state.last_writer_epoch.get(), self._state.last_promised_epoch.get()
                )
                for i, log in enumerate(logs):
                    if log.is_in_progress:
                        del logs[i]
                        if listed:
                            logs.append(
                                RemoteEditLog(
                                    log.start_txid, self._state.highest_written_txid, True
                                )
                            )
                        break
            return RemoteEditLogManifest(tuple(logs), self._state.committed_txn_id.get())

    def await_journaled_edits(self, since_txid: int, wait_s: float) -> bool:
        """Wait until this node has written ``since_txid`` (True) or ``wait_s`` passes (False).

        The long poll of getJournaledEdits (its optional ``waitMs``, issue 25): a tailing
        standby asks for the edits after its last txid and is answered as soon as a batch
        holding them is written here. Takes no journal lock and no handler slot; returns
        at once when the edits cache is off (the call that follows then fails as usual).
        """
        wait_s = min(max(wait_s, 0.0), MAX_JOURNALED_EDITS_WAIT_S)
        if (
            self._state.cache is None
            or self._state.highest_written_txid >= since_txid
            or wait_s <= 0
        ):
            return self._state.highest_written_txid >= since_txid
        with self._state.written:
            # Counted before the check inside wait_for: a writer that saw no waiter had
            # already moved the highest txid, which that check then sees.
            self._state.edit_waiters += 1
            try:
                return (
                    self._state.written.wait_for(
                        lambda: (
                            self._state.closed or self._state.highest_written_txid >= since_txid
                        ),
                        wait_s,
                    )
                    and not self._state.closed
                )
            finally:
                self._state.edit_waiters -= 1

    def get_journaled_edits(self, since_txid: int, max_txns: int) -> GetJournaledEditsResponse:
        """Edits from the in-memory cache (``dfs.ha.tail-edits.in-progress``), header included."""
        # The highest txid first: a cache emptied (and replaced) in between then only
        # misses, where the other order could pair a fenced writer's cache with a newer
        # highest txid.
        highest = self._state.highest_written_txid
        cache = self._state.cache
        if cache is None:
            raise IOException(
                "The journal edits cache is not enabled, which is a requirement to fetch journaled "
                "edits via RPC. Please enable it via dfs.ha.tail-edits.in-progress"
            )
        try:
            window = journal_read_rules.journaled_edits_window(since_txid, highest, max_txns)
        except NewerTxnIdException:
            self._metrics.rpc_empty_response()
            raise
        if window is None:
            self._metrics.rpc_empty_response()
            return GetJournaledEditsResponse(0, b"", cache.writer_epoch)
        max_txns = window
        try:
            data, count = cache.retrieve_edits(since_txid, max_txns)
        except CacheMissException as e:
            self._metrics.cache_miss(e.cache_miss_amount)
            raise
        self._metrics.rpc_served(count, len(data))
        return GetJournaledEditsResponse(count, data, cache.writer_epoch)
