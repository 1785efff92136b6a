"""The JournalNode scrubber's rules, as pure code (issue 27; STYLE.md habit 1).

* :class:`SegmentVerifier` — is a finalized segment intact? Fed its bytes in pieces of
  any size, it checks the header, then every op's frame (length and CRC32) and that the
  txids run from the first to the last txid the file name promises, one by one. Unlike
  :func:`~hadoop_qjm.editlog.edit_log_file_input_stream.scan_edit_log` it never
  resynchronises: the first bad byte is a finding. Bytes after the last txid are ignored,
  as every reader ignores them.
* :func:`throttle_delay` — how long to pause so reading stays under a rate.
* :func:`is_copy_confirmed` — may a peer's copy replace a damaged one?
* :func:`vouched_md5` — may a download's md5 stand in for checking its every op?

No file, socket or thread code here; the scrubber (``journal_scrubber.py``) does the I/O.
"""

from __future__ import annotations

import re
import struct
import zlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum

from hadoop_qjm.common.exceptions import EditLogCorruptionError, HadoopException
from hadoop_qjm.editlog.fs_edit_log_op import (
    HEADER_LENGTH,
    MIN_OP_LENGTH,
    OP_INVALID_BYTE,
    parse_edit_log_header,
    scan_op,
)

__all__ = [
    "ScrubFinding",
    "SegmentVerifier",
    "is_copy_confirmed",
    "throttle_delay",
    "vouched_md5",
]

_LENGTH_TXID = struct.Struct(">iq").unpack_from  # after the opcode byte
_U32 = struct.Struct(">I").unpack_from


@dataclass(frozen=True)
class ScrubFinding:
    """Where a segment is damaged: the txid that cannot be read, the byte offset of its
    op (or of the header), and why."""

    txid: int
    position: int
    reason: str

    def __str__(self) -> str:
        return f"txid {self.txid} at position {self.position}: {self.reason}"


class SegmentVerifier:
    """Checks one finalized segment ``[first_txid, last_txid]`` fed in pieces.

    ``feed`` returns False once a finding is made (the rest need not be read);
    :meth:`finish` returns the finding, or None for an intact segment.
    ``valid_length`` is the end of the last txid's op once it has been seen.
    """

    def __init__(self, first_txid: int, last_txid: int, max_op_size: int) -> None:
        self.first_txid = first_txid
        self.last_txid = last_txid
        self.max_op_size = max_op_size
        self._buf = bytearray()
        self._base = 0  # the offset in the segment of _buf[0]
        self._next_txid = first_txid
        self._header_ok = False
        self.finding: ScrubFinding | None = None
        self.valid_length = -1
        self.bytes_seen = 0

    @property
    def done(self) -> bool:
        return self.finding is not None or self.valid_length >= 0

    def feed(self, data: bytes) -> bool:
        """Take the next bytes of the segment; False once a finding is made."""
        self.bytes_seen += len(data)
        if self.done:
            return self.finding is None
        self._buf += data
        self._consume(final=False)
        return self.finding is None

    def finish(self) -> ScrubFinding | None:
        """The end of the file: the finding, if any (a segment that ends early is one)."""
        if not self.done:
            self._consume(final=True)
        if not self.done:
            self._find("the segment ends before this txid")
        return self.finding

    def _find(self, reason: str) -> None:
        txid = self._next_txid if self._header_ok else self.first_txid
        self.finding = ScrubFinding(txid, self._base, reason)

    def _consume(self, final: bool) -> None:
        buf = self._buf
        pos = 0
        if not self._header_ok:
            if len(buf) < HEADER_LENGTH:
                if final:
                    self._find("the header is truncated")
                return
            try:
                parse_edit_log_header(bytes(buf[:HEADER_LENGTH]))
            except (HadoopException, ValueError) as e:
                self._find(f"bad header: {e}")
                return
            self._header_ok = True
            pos = HEADER_LENGTH
        pos = self._walk(pos)
        while self._next_txid <= self.last_txid and self.valid_length < 0:
            if len(buf) - pos < 5:
                break
            length = int.from_bytes(buf[pos + 1 : pos + 5], "big", signed=True) + 5
            plausible = MIN_OP_LENGTH <= length <= self.max_op_size and buf[pos] != OP_INVALID_BYTE
            if plausible and len(buf) - pos < length and not final:
                break  # the rest of this op is still to come
            at = self._base + pos
            try:
                txid, end = scan_op(buf, pos, self.max_op_size)
            except EditLogCorruptionError as e:
                self.finding = ScrubFinding(self._next_txid, at, str(e))
                return
            if txid != self._next_txid:
                self.finding = ScrubFinding(
                    self._next_txid, at, f"found txid {txid} where txid {self._next_txid} belongs"
                )
                return
            self._next_txid += 1
            pos = end
            if txid == self.last_txid:
                self.valid_length = self._base + pos
            else:
                pos = self._walk(pos)
        del buf[:pos]
        self._base += pos

    def _walk(self, pos: int) -> int:
        """The fast path over well-formed ops: each op's length read, its CRC32 computed
        over the slice (zlib's, in C) and compared, its txid checked — the same checks as
        ``scan_op``, without a call per op. It stops, returning the position reached, at
        the first op it cannot vouch for (too short to tell, implausible, incomplete, a
        CRC or txid that does not match): the per-op path then decides, with its message
        (a torn or garbled op is found there exactly as before)."""
        buf = self._buf
        n = len(buf)
        next_txid, last_txid, max_op = self._next_txid, self.last_txid, self.max_op_size
        crc32 = zlib.crc32
        with memoryview(buf) as view:
            while next_txid <= last_txid and n - pos >= 17:
                length, txid = _LENGTH_TXID(buf, pos + 1)
                length += 5
                end = pos + length
                if (
                    buf[pos] == OP_INVALID_BYTE
                    or not MIN_OP_LENGTH <= length <= max_op
                    or end > n
                    or txid != next_txid
                    or _U32(buf, end - 4)[0] != crc32(view[pos : end - 4])
                ):
                    break
                pos = end
                if next_txid == last_txid:
                    self.valid_length = self._base + pos
                next_txid += 1
        self._next_txid = next_txid
        return pos


_MD5_HEX = re.compile(r"[0-9a-f]{32}", re.ASCII)


def vouched_md5(md5_header: str | None, served_name: str | None, wanted_name: str) -> str | None:
    """The md5 a peer's ``/getJournal`` answer vouches for: its ``X-MD5-Digest`` (the md5
    it kept from bytes that verified) when the answer is the very segment asked for
    (``X-Image-Edits-Name``). A copy whose md5 matches it may be installed without its
    ops checked again here; None means every op must be (issue 39 item 3)."""
    if md5_header is None or served_name != wanted_name:
        return None
    md5 = md5_header.strip().lower()
    return md5 if _MD5_HEX.fullmatch(md5) else None


def throttle_delay(bytes_done: int, elapsed_s: float, bytes_per_s: float) -> float:
    """Seconds to pause so that ``bytes_done`` bytes over ``elapsed_s`` (plus the pause)
    stay at or under ``bytes_per_s``; 0 when already under it."""
    if bytes_per_s <= 0:
        return 0.0
    return max(0.0, bytes_done / bytes_per_s - elapsed_s)


def is_copy_confirmed(verified: bool, md5: str, other_peers_md5s: Iterable[str]) -> bool:
    """A peer's copy may replace a damaged segment only if it verifies itself and a second
    peer holds the same bytes (equal md5): never one unconfirmed copy (issue 27)."""
    return verified and any(md5 == other for other in other_peers_md5s)


def confirmed_copy(copies: Sequence[tuple[bool, str]]) -> int | None:
    """The first of the peers' ``copies`` (``(verified, md5)`` each, in the peers' order)
    that :func:`is_copy_confirmed` by the others, as its index; None if there is none."""
    for j, (verified, md5) in enumerate(copies):
        others = [m for k, (_, m) in enumerate(copies) if k != j]
        if is_copy_confirmed(verified, md5, others):
            return j
    return None


class RepairOutcome(str, Enum):
    """What ``Journal.replace_damaged_segment`` did (its values are the words it logs)."""

    #: A reader has the segment open: nothing done (retried next pass).
    IN_USE = "in use"
    #: Purged meanwhile: nothing to do.
    GONE = "gone"
    #: Moved aside as ``<name>.corrupt`` (and replaced, when a confirmed copy was given).
    DONE = "done"
