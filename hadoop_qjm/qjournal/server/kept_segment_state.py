"""What a scan of an open segment would find, kept as the segment is written (issue 25).

A JournalNode answers newEpoch, prepareRecovery, acceptRecovery and
finalizeLogSegment with three facts about an in-progress segment: its last
valid txid, the byte offset where its last whole op ends (``valid_length``),
and the md5 of the file up to there. Found by a scan (``scan_edit_log``) they
cost about 1 µs per txn each time; the failover would then take time in
proportion to what was written. :class:`KeptSegmentState` holds them instead:
set from one scan (or from a fresh segment's header) and moved forward by each
batch appended through ``journal()``, with a running md5.

The rule that keeps it equal to a scan (:func:`after_append`): a batch moves the
state forward only when it is appended exactly where the last whole op ends and
every byte of it is whole, well-framed ops — then a scan of the file would walk
over the batch's frames one by one exactly as it walks over the rest, and stop
in the padding after it. Anything else (a batch with a bad frame, a write past
a torn tail) gives None: the state is dropped, and the next use scans again.
Every other change of the file (a recovery download installed, a truncation, a
discard, a format) drops or recomputes the state at the Journal (the edge).

Pure: no file, socket, thread or Thrift code (tests/unit/test_rules_purity.py).
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from dataclasses import dataclass, field

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.editlog.fs_edit_log_op import DEFAULT_MAX_OP_SIZE, MIN_OP_LENGTH, OP_INVALID_BYTE

__all__ = ["KeptSegmentState", "after_append", "batch_scan"]

_FRAME_HEAD = struct.Struct(">Biq")  # opcode, length, txid (as scan_edit_log reads them)
_U32 = struct.Struct(">I")


@dataclass
class KeptSegmentState:
    """The scan of ``edits_inprogress_<start_txid>`` without reading it.

    ``file_id`` names the file the state describes (its inode): a file replaced
    behind the Journal's back is never taken for the one kept.
    """

    start_txid: int
    last_txid: int
    valid_length: int
    md5: hashlib._Hash = field(repr=False)
    file_id: int = 0
    #: Every byte from the header on was checked as it was written: the header by the
    #: scan of a new segment, then each batch's ops (frame, CRC32) with txids running on
    #: from the segment's first one by one — what the scrubber's SegmentVerifier checks.
    #: Only then is :attr:`md5` kept beside the finalized segment (``segment_md5``).
    #: False for a state set from a scan of older bytes (after a restart, a recovery).
    checked_from_start: bool = False

    @property
    def md5_hex(self) -> str:
        return self.md5.hexdigest()

    def facts(self) -> tuple[int, int, int, str]:
        """(start txid, last txid, valid length, md5): what a scan is compared on."""
        return self.start_txid, self.last_txid, self.valid_length, self.md5_hex


def batch_scan(
    records: bytes | bytearray | memoryview, max_op_size: int = DEFAULT_MAX_OP_SIZE
) -> int | None:
    """The highest txid of ``records`` if it is only whole ops that a scan takes on its
    fast path (length in range, CRC good, not a terminator); INVALID_TXID for no bytes;
    None otherwise."""
    scanned = _scan(records, max_op_size)
    return None if scanned is None else scanned[1]


def _scan(
    records: bytes | bytearray | memoryview, max_op_size: int
) -> tuple[int, int, bool] | None:
    """(first txid, highest txid, whether each op's txid is the one before plus one) of
    ``records`` as :func:`batch_scan` takes them; INVALID_TXID twice for no bytes."""
    view = memoryview(records)
    end = len(view)
    pos = 0
    first = last = prev = INVALID_TXID
    in_order = True
    unpack_head = _FRAME_HEAD.unpack_from
    unpack_crc = _U32.unpack_from
    crc32 = zlib.crc32
    while pos < end:
        if pos + MIN_OP_LENGTH > end:
            return None
        opcode, length, txid = unpack_head(view, pos)
        frame_end = pos + length + 5
        if (
            opcode == OP_INVALID_BYTE
            or length < MIN_OP_LENGTH - 5
            or length + 5 > max_op_size
            or frame_end > end
            or crc32(view[pos : frame_end - 4]) != unpack_crc(view, frame_end - 4)[0]
        ):
            return None
        if first == INVALID_TXID:
            first = txid
        elif txid != prev + 1:
            in_order = False
        if last == INVALID_TXID or txid > last:
            last = txid
        prev = txid
        pos = frame_end
    return first, last, in_order


def after_append(
    state: KeptSegmentState,
    position: int,
    records: bytes | bytearray | memoryview,
    max_op_size: int = DEFAULT_MAX_OP_SIZE,
) -> KeptSegmentState | None:
    """``state`` moved past ``records`` written at byte ``position``; None when a scan of
    the file could find anything else (see the module doc). Updates ``state`` in place."""
    if position != state.valid_length:
        return None
    scanned = _scan(records, max_op_size)
    if scanned is None:
        return None
    first, last, in_order = scanned
    if state.checked_from_start and first != INVALID_TXID:
        expected = state.start_txid if state.last_txid == INVALID_TXID else state.last_txid + 1
        state.checked_from_start = in_order and first == expected
    state.md5.update(records)
    state.valid_length += len(records)
    if last != INVALID_TXID and (state.last_txid == INVALID_TXID or last > state.last_txid):
        state.last_txid = last
    return state
