"""JournaledEditsCache: recent batches in memory, for tailing over RPC (HDFS-13150).

Batches are kept exactly as ``journal()`` received them, contiguous in txid,
oldest evicted first once the capacity is passed. ``retrieve_edits`` returns
the 8-byte file header followed by whole ops starting exactly at the requested
txid, so a reader parses the result as a tiny edit-log file.

Capacity: ``dfs.journalnode.edit-cache-size.bytes`` when set; otherwise
``dfs.journalnode.edit-cache-size.fraction`` (0.5) of a notional heap. Python has
no max heap, so the heap is taken as the JVM's default (a quarter of physical
memory), capped at 1 GiB.
"""

from __future__ import annotations

import bisect
import logging
import threading

import psutil

from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.editlog.fs_edit_log_op import edit_log_header, scan_op
from hadoop_qjm.qjournal.protocol.exceptions import CacheMissException

__all__ = ["JournaledEditsCache", "cache_capacity"]

LOG = logging.getLogger(__name__)

_HEAP_CAP = 1 << 30
_INVALID = -1


def cache_capacity(conf) -> int:
    """The configured capacity in bytes (see the module doc)."""
    if conf is not None and conf.get_trimmed("dfs.journalnode.edit-cache-size.bytes"):
        return conf.get_storage_size("dfs.journalnode.edit-cache-size.bytes", 0)
    fraction = 0.5
    if conf is not None:
        fraction = conf.get_float("dfs.journalnode.edit-cache-size.fraction", 0.5)
    if not 0.0 < fraction < 1.0:
        raise IllegalArgumentException(
            "dfs.journalnode.edit-cache-size.fraction should be between 0.0 and 1.0 (exclusive), "
            f"but it is {fraction}"
        )
    heap = min(psutil.virtual_memory().total // 4, _HEAP_CAP)
    return int(heap * fraction)


class JournaledEditsCache:
    """A bounded map ``first txid -> batch bytes`` over one contiguous txid range."""

    def __init__(self, conf=None, capacity: int | None = None, writer_epoch: int = 0) -> None:
        self.capacity = cache_capacity(conf) if capacity is None else capacity
        # The journal empties its cache (makes a new one) whenever it promises a newer
        # epoch, so every batch this one ever holds comes from the writer of this epoch.
        self.writer_epoch = writer_epoch
        self._lock = threading.RLock()
        self._starts: list[int] = []  # batch first txids, ascending
        self._batches: dict[int, tuple[int, bytes]] = {}  # first -> (last, data)
        self._head = 0  # index of the oldest live entry in _starts
        self.size = 0
        self.lowest_txid = _INVALID
        self.highest_txid = _INVALID
        self.initial_txid = _INVALID
        self.layout_version: int | None = None
        self._header = b""

    # ---- writing --------------------------------------------------------------------------------
    def store_edits(
        self, data: bytes, first_txid: int, last_txid: int, layout_version: int
    ) -> None:
        """Add a batch just written to disk. Bad ranges are logged and ignored, never raised."""
        if last_txid < first_txid or first_txid < 0:
            LOG.error("Ignoring edits with an invalid txid range %d-%d", first_txid, last_txid)
            return
        with self._lock:
            if (
                layout_version != self.layout_version
                or self.highest_txid == _INVALID
                or first_txid != self.highest_txid + 1
            ):
                self._reset(first_txid, layout_version)
            if len(data) > self.capacity:
                LOG.warning(
                    "A single batch of edits was too large to fit into the cache: start txn = %d, "
                    "end txn = %d, input length = %d. The cache size (%d) or cache fraction must be "
                    "increased for it to work properly (current capacity %d). Cache is now empty.",
                    first_txid,
                    last_txid,
                    len(data),
                    self.capacity,
                    self.capacity,
                )
                self._reset(_INVALID, layout_version)
                return
            while self.size + len(data) > self.capacity and self._head < len(self._starts):
                self._evict_oldest()
            self._starts.append(first_txid)
            self._batches[first_txid] = (last_txid, bytes(data))
            self.size += len(data)
            if self.lowest_txid == _INVALID:
                self.lowest_txid = first_txid
            self.highest_txid = last_txid

    def _reset(self, initial_txid: int, layout_version: int) -> None:
        self._starts, self._batches, self._head, self.size = [], {}, 0, 0
        self.lowest_txid = _INVALID
        self.highest_txid = _INVALID
        self.initial_txid = initial_txid
        self.layout_version = layout_version
        self._header = edit_log_header(layout_version)

    def _evict_oldest(self) -> None:
        first = self._starts[self._head]
        last, data = self._batches.pop(first)
        self._head += 1
        self.size -= len(data)
        self.lowest_txid = self._starts[self._head] if self._head < len(self._starts) else _INVALID
        if self.lowest_txid == _INVALID:
            self.highest_txid = _INVALID
        if self._head > 1024 and self._head * 2 > len(self._starts):
            self._starts = self._starts[self._head :]
            self._head = 0

    # ---- reading --------------------------------------------------------------------------------
    def retrieve_edits(self, since_txid: int, max_txns: int) -> tuple[bytes, int]:
        """``(header + ops, count)``: up to ``max_txns`` ops starting exactly at ``since_txid``.

        CacheMissException when ``since_txid`` is older than what the cache holds, with
        the number of transactions by which it missed.
        """
        with self._lock:
            if self.lowest_txid == _INVALID or since_txid < self.lowest_txid:
                if self.lowest_txid == _INVALID:
                    amount = 0
                elif since_txid < self.initial_txid:
                    amount = self.initial_txid - since_txid
                else:
                    amount = self.lowest_txid - since_txid
                raise CacheMissException(
                    f"Cache does not have transactions starting at {since_txid} "
                    f"(lowest cached txid is {self.lowest_txid})",
                    cache_miss_amount=amount,
                )
            if since_txid > self.highest_txid or max_txns <= 0:
                return b"", 0
            starts = self._starts
            index = bisect.bisect_right(starts, since_txid, self._head) - 1
            want_last = since_txid + max_txns - 1
            parts = [self._header]
            count = 0
            while index < len(starts) and starts[index] <= want_last:
                first = starts[index]
                last, data = self._batches[first]
                lo = first
                start_offset = 0
                end_offset = len(data)
                if first < since_txid or last > want_last:
                    start_offset, end_offset, lo, last = _slice_ops(
                        data, first, since_txid, want_last
                    )
                parts.append(data[start_offset:end_offset])
                count += last - max(lo, since_txid) + 1
                index += 1
            return b"".join(parts), count


def _slice_ops(data: bytes, first: int, since: int, until: int) -> tuple[int, int, int, int]:
    """Byte offsets of the ops ``since..until`` within a batch whose first txid is ``first``."""
    offset = 0
    start_offset = None
    last = first - 1
    view = memoryview(data)
    while offset < len(data):
        txid, next_offset = scan_op(view, offset)
        if txid >= since and start_offset is None:
            start_offset = offset
        if txid > until:
            return (
                (start_offset if start_offset is not None else offset),
                offset,
                max(first, since),
                last,
            )
        last = txid
        offset = next_offset
    return (
        (start_offset if start_offset is not None else len(data)),
        len(data),
        max(first, since),
        last,
    )
