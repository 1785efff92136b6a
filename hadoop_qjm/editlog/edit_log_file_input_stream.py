"""EditLogFileInputStream and scan_edit_log: reading and validating one segment.

A segment is read through a window of bytes in memory: the whole segment when it is
already in memory (the JournalNode's cache, an HTTP download), or a sliding window filled
with large ``os.pread`` calls over a file. ``pread`` rather than mmap: a segment may be
truncated by its writer while a reader has it open, and a truncated mapping kills the
process with SIGBUS where a read just sees the end of the file.

:func:`scan_edit_log` is Hadoop's EditLogFileInputStream.scanEditLog plus
FSEditLogLoader.scanEditLog (HADOOP-QJM-DIGEST.md §4.6): frame-only scanning (length and
CRC), and on any error a byte-wise resynchronisation that looks for the next op that
decodes completely. It is the hot path of JournalNode start-up and recovery.
"""

from __future__ import annotations

import logging
import os
import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import (
    EditLogCorruptionError,
    IllegalArgumentException,
    IOException,
    always_assert,
)
from hadoop_qjm.editlog.fs_edit_log_op import (
    DEFAULT_MAX_OP_SIZE,
    EDITLOG_LENGTH_LAYOUT_VERSION,
    HEADER_LENGTH,
    MIN_OP_LENGTH,
    OP_INVALID_BYTE,
    FSEditLogOp,
    FSEditLogOpCodes,
    LogHeaderCorruptException,
    decode_op,
    parse_edit_log_header,
    scan_op,
)
from hadoop_qjm.editlog.fs_edit_log_op_codes import OBSOLETE_OPCODES

__all__ = ["EditLogFileInputStream", "EditLogValidation", "scan_edit_log", "READ_CHUNK"]

LOG = logging.getLogger(__name__)

#: How much of a file one refill of the window reads.
READ_CHUNK = 8 * 1024 * 1024

_PADDING = b"\x00\xff"
#: Runs of each padding byte, compared in place against the buffer (memcmp, no copy):
#: a preallocated tail is one run of 0xFF, so the common case never walks it byte by byte.
_RUN = 1 << 20
_PADDING_RUNS = tuple(memoryview(bytes([b]) * _RUN) for b in _PADDING)
_NOT_PADDING = re.compile(rb"[^\x00\xff]")
_FRAME_HEAD = struct.Struct(">Biq")  # opcode, length, txid
_U32 = struct.Struct(">I")
_NO_TXID_LIMIT = 1 << 63
# Bytes that can start an op Hadoop can decode: a cheap first test while resynchronising.
_DECODABLE = bytes(
    1 if code is not FSEditLogOpCodes.OP_INVALID and code not in OBSOLETE_OPCODES else 0
    for code in (FSEditLogOpCodes.from_byte(b) for b in range(256))
)


@dataclass(frozen=True)
class EditLogValidation:
    """What a scan found: the end of the last good op, the first and last txids in the
    segment (INVALID_TXID when none), whether the header was unusable, and whether a
    whole header named a layout too old to scan (its ops, if any, were not read)."""

    valid_length: int
    first_txid: int
    last_txid: int
    has_corrupt_header: bool
    unscannable_layout: bool = False

    @property
    def end_txid(self) -> int:
        """Hadoop's name for ``last_txid``."""
        return self.last_txid


def _one_padding_run(buf: bytes, rel: int) -> bool:
    """Whether ``buf[rel:]`` is all 0x00 or all 0xFF (a quick answer for the usual tail)."""
    for run in _PADDING_RUNS:
        i = rel
        while i < len(buf) and buf.startswith(run[: len(buf) - i], i):
            i += _RUN
        if i >= len(buf):
            return True
    return False


class _Window:
    """Bytes ``[base, base + len(buf))`` of a segment held in memory."""

    __slots__ = ("buf", "base", "fd")

    def __init__(self, data: bytes | None = None, fd: int | None = None) -> None:
        self.buf = data if data is not None else b""
        self.base = 0
        self.fd = fd

    def fill(self, pos: int, n: int) -> int:
        """Make ``[pos, pos + n)`` available if the segment has it; returns ``pos - base``.

        Fewer bytes are available only at the end of the segment.
        """
        rel = pos - self.base
        if self.fd is None or (rel >= 0 and rel + n <= len(self.buf)):
            return rel
        # Never ask for more than the file holds: os.pread allocates what it is asked for,
        # and ``n`` may come from an untrusted length field.
        want = min(max(n, READ_CHUNK), max(0, os.fstat(self.fd).st_size - pos))
        parts = []
        got = 0
        while got < want:
            part = os.pread(self.fd, want - got, pos + got)
            if not part:
                break
            parts.append(part)
            got += len(part)
        self.buf = parts[0] if len(parts) == 1 else b"".join(parts)
        self.base = pos
        return 0

    def frame(self, pos: int, max_op_size: int) -> int:
        """Bring the whole frame at ``pos`` into memory (if its length is plausible)."""
        rel = self.fill(pos, MIN_OP_LENGTH)
        buf = self.buf
        if rel + 5 <= len(buf) and buf[rel] != OP_INVALID_BYTE:
            op_length = int.from_bytes(buf[rel + 1 : rel + 5], "big", signed=True) + 5
            if rel + op_length > len(buf) and MIN_OP_LENGTH <= op_length <= max_op_size:
                rel = self.fill(pos, op_length)
        return rel

    def first_non_padding(self, pos: int) -> int | None:
        """Where the first byte other than 0x00/0xFF is at or after ``pos``; None if none."""
        while True:
            rel = self.fill(pos, 1)
            buf = self.buf
            if rel >= len(buf):
                return None
            if _one_padding_run(buf, rel):
                pos = self.base + len(buf)
                continue
            # Deleting the padding bytes runs at memory speed; the regex only
            # locates a byte that is known to be there (1 MiB preallocated files).
            if buf[rel:].translate(None, _PADDING):
                return self.base + _NOT_PADDING.search(buf, rel).start()
            pos = self.base + len(buf)

    def check_terminator(self, pos: int) -> None:
        """``pos`` holds 0xFF: everything after it must be padding."""
        bad = self.first_non_padding(pos + 1)
        if bad is not None:
            raise EditLogCorruptionError(
                f"Read extra bytes after the terminator! (terminator at {pos}, byte "
                f"0x{self.buf[bad - self.base]:02x} at {bad})"
            )

    def scan_at(self, pos: int, max_op_size: int) -> tuple[int, int] | None:
        """Frame-check the op at ``pos``: (txid, next position), or None at a clean end."""
        rel = self.frame(pos, max_op_size)
        buf = self.buf
        if rel >= len(buf):
            return None
        if buf[rel] == OP_INVALID_BYTE:
            self.check_terminator(pos)
            return None
        txid, end = scan_op(buf, rel, max_op_size)
        return txid, self.base + end

    def decode_at(
        self, pos: int, max_op_size: int, layout_version: int
    ) -> tuple[FSEditLogOp, int] | None:
        """Decode the op at ``pos``: (op, next position), or None at a clean end."""
        rel = self.frame(pos, max_op_size)
        buf = self.buf
        if rel >= len(buf):
            return None
        if buf[rel] == OP_INVALID_BYTE:
            self.check_terminator(pos)
            return None
        op, end = decode_op(buf, rel, max_op_size, layout_version)
        return op, self.base + end  # type: ignore[return-value]

    def resync(
        self, pos: int, max_op_size: int, layout_version: int
    ) -> tuple[FSEditLogOp, int, int] | None:
        """Skip forward one byte at a time from ``pos`` to the next op that fully decodes.

        Returns (op, its position, next position), or None when the rest of the segment is
        padding or holds no decodable op (Hadoop's Reader.readOp(skipBrokenEdits=true)).
        """
        while True:
            rel = self.fill(pos, MIN_OP_LENGTH)
            buf = self.buf
            if rel >= len(buf):
                return None
            b = buf[rel]
            if b == OP_INVALID_BYTE:
                if self.first_non_padding(pos + 1) is None:
                    return None
            elif _DECODABLE[b]:
                try:
                    found = self.decode_at(pos, max_op_size, layout_version)
                except EditLogCorruptionError:
                    found = None
                if found is not None:
                    return found[0], pos, found[1]
            pos += 1


def _open_window(source: str | os.PathLike | bytes | bytearray | memoryview) -> _Window:
    if isinstance(source, (bytes, bytearray, memoryview)):
        return _Window(data=bytes(source) if not isinstance(source, bytes) else source)
    try:
        fd = os.open(source, os.O_RDONLY)
    except OSError as e:
        raise IOException(f"Unable to open edit log {source}: {e.strerror or e}") from e
    return _Window(fd=fd)


def scan_edit_log(
    source: str | os.PathLike | bytes | bytearray | memoryview,
    max_txid_to_scan: int | None = None,
    max_op_size: int = DEFAULT_MAX_OP_SIZE,
) -> EditLogValidation:
    """Validate a segment (a path, or its bytes) and find its last transaction.

    A missing or truncated header, or layout version -1, gives ``has_corrupt_header`` and
    no txids. Ops are checked by frame only; on an error the scan resynchronises byte by
    byte to the next op that decodes, so a torn last op is ignored and garbage between good
    ops is skipped. The scan stops once a txid >= ``max_txid_to_scan`` is seen.
    ``valid_length`` is the end of the last good op (the file size for a clean finalized
    segment; before the padding of an in-progress one). Hadoop reports the start of the op
    where the scan stopped instead; nothing in QJM reads it.
    """
    window = _open_window(source)
    try:
        return _scan(
            window,
            str(source) if window.fd is not None else "<bytes>",
            max_txid_to_scan,
            max_op_size,
        )
    finally:
        if window.fd is not None:
            os.close(window.fd)


def _scan(window: _Window, name: str, max_txid: int | None, max_op_size: int) -> EditLogValidation:
    rel = window.fill(0, HEADER_LENGTH)
    try:
        layout_version = parse_edit_log_header(window.buf[rel : rel + HEADER_LENGTH])
    except LogHeaderCorruptException as e:
        LOG.warning("Log file %s has no valid header: %s", name, e)
        return EditLogValidation(0, INVALID_TXID, INVALID_TXID, True)
    if layout_version > EDITLOG_LENGTH_LAYOUT_VERSION:
        # Hadoop would fall back to a pre-length-prefix reader and find nothing it can use.
        LOG.warning("Log file %s has layout version %d: cannot scan it", name, layout_version)
        return EditLogValidation(HEADER_LENGTH, INVALID_TXID, INVALID_TXID, False, True)
    pos = HEADER_LENGTH  # always the end of the last good op (or of the header)
    first = last = INVALID_TXID
    num_valid = 0
    limit = _NO_TXID_LIMIT if max_txid is None else max_txid
    unpack_head = _FRAME_HEAD.unpack_from
    unpack_crc = _U32.unpack_from
    crc32 = zlib.crc32
    while True:
        # Fast path, inline: whole frames inside the window with a good length and CRC.
        buf = window.buf
        view = memoryview(buf)
        rel = pos - window.base
        buf_end = len(buf)
        while rel >= 0 and rel + MIN_OP_LENGTH <= buf_end:
            opcode, length, txid = unpack_head(buf, rel)
            frame_end = rel + length + 5
            if (
                opcode == OP_INVALID_BYTE
                or length < MIN_OP_LENGTH - 5
                or length + 5 > max_op_size
                or frame_end > buf_end
                or crc32(view[rel : frame_end - 4]) != unpack_crc(buf, frame_end - 4)[0]
            ):
                break
            rel = frame_end
            num_valid += 1
            if first == INVALID_TXID:
                first = txid
            if last == INVALID_TXID or txid > last:
                last = txid
                if last >= limit:
                    break
        pos = window.base + rel if rel >= 0 else pos
        if last != INVALID_TXID and last >= limit:
            break
        # Slow path, one op: refill the window, the terminator, errors and resync.
        try:
            found = window.scan_at(pos, max_op_size)
        except EditLogCorruptionError as e:
            LOG.warning(
                "Caught exception after scanning through %d ops from %s while determining its "
                "valid length. Position was %d: %s",
                num_valid,
                name,
                pos,
                e,
            )
            resynced = window.resync(pos + 1, max_op_size, layout_version)
            if resynced is None:
                LOG.warning("No valid op after position %d of %s", pos, name)
                break
            op, op_pos, next_pos = resynced
            LOG.warning("After resync, position is %d", op_pos)
            found = (op.txid, next_pos)
        if found is None:
            break
        txid, pos = found
        num_valid += 1
        if first == INVALID_TXID:
            first = txid
        if last == INVALID_TXID or txid > last:
            last = txid
            if last >= limit:
                break
    return EditLogValidation(pos, first, last, False)


class EditLogFileInputStream:
    """Reads the ops of one segment, from a file or from bytes in memory.

    ``first_txid``/``last_txid`` are what the segment is expected to hold (INVALID_TXID when
    unknown); with a known ``last_txid`` the stream ends after that op and ignores the rest
    of the file (garbage a crashed writer left after the last finalized txid).
    """

    def __init__(
        self,
        path: str | os.PathLike,
        first_txid: int = INVALID_TXID,
        last_txid: int = INVALID_TXID,
        is_in_progress: bool = False,
        max_op_size: int = DEFAULT_MAX_OP_SIZE,
    ) -> None:
        self.path: Path | None = Path(path)
        self.name = str(path)
        self.first_txid = first_txid
        self.last_txid = last_txid
        self.is_in_progress = is_in_progress
        self.max_op_size = max_op_size
        self._data: bytes | None = None
        self._window: _Window | None = None
        self._state = "UNINIT"
        self._layout_version = 0
        self._pos = 0
        self._cached: FSEditLogOp | None = None
        self._exhausted = False

    @classmethod
    def from_bytes(
        cls,
        data: bytes | bytearray | memoryview,
        first_txid: int = INVALID_TXID,
        last_txid: int = INVALID_TXID,
        is_in_progress: bool = False,
        max_op_size: int = DEFAULT_MAX_OP_SIZE,
        name: str | None = None,
    ) -> EditLogFileInputStream:
        """A stream over a whole segment (header included) already in memory."""
        stream = cls("<bytes>", first_txid, last_txid, is_in_progress, max_op_size)
        stream.path = None
        stream.name = name or f"ByteStringEditLog[{first_txid}, {last_txid}]"
        stream._data = data if isinstance(data, bytes) else bytes(data)
        return stream

    # ---- life cycle ----------------------------------------------------------------------------

    def _init(self, verify_version: bool) -> None:
        if self._data is not None:
            window = _Window(data=self._data)
        else:
            window = _open_window(self.path)  # type: ignore[arg-type]
        try:
            rel = window.fill(0, HEADER_LENGTH)
            header = window.buf[rel : rel + HEADER_LENGTH]
            try:
                layout_version = parse_edit_log_header(header, verify_version)
            except LogHeaderCorruptException as e:
                raise LogHeaderCorruptException(f"{self.name}: {e}") from None
            if verify_version and layout_version > EDITLOG_LENGTH_LAYOUT_VERSION:
                raise IOException(
                    f"{self.name}: layout version {layout_version} predates length-prefixed "
                    "ops; this reader cannot decode it"
                )
        except BaseException:
            self._state = "CLOSED"
            if window.fd is not None:
                os.close(window.fd)
            raise
        self._window = window
        self._layout_version = layout_version
        self._pos = HEADER_LENGTH
        self._state = "OPEN"

    def get_version(self, verify_version: bool = True) -> int:
        """The layout version in the header (read on first use)."""
        if self._state == "UNINIT":
            self._init(verify_version)
        return self._layout_version

    @property
    def layout_version(self) -> int:
        return self.get_version(True)

    version = layout_version

    @property
    def position(self) -> int:
        """Offset in the segment of the next op to read (0 before the header is read)."""
        return self._pos if self._state == "OPEN" else 0

    def length(self) -> int:
        if self._data is not None:
            return len(self._data)
        return os.stat(self.path).st_size  # type: ignore[arg-type]

    @property
    def is_local_log(self) -> bool:
        return self._data is None

    def close(self) -> None:
        if self._window is not None and self._window.fd is not None:
            os.close(self._window.fd)
        self._window = None
        self._state = "CLOSED"

    def __enter__(self) -> EditLogFileInputStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __iter__(self):
        while (op := self.read_op()) is not None:
            yield op

    def __repr__(self) -> str:
        return f"EditLogFileInputStream({self.name})"

    # ---- reading -------------------------------------------------------------------------------

    def read_op(self) -> FSEditLogOp | None:
        """The next op, or None at the end; raises EditLogCorruptionError on a bad op."""
        if self._cached is not None:
            op, self._cached = self._cached, None
            return op
        return self._next_op(skip_broken=False)

    def scan_next_op(self) -> int:
        """The txid of the next op, checking only its frame; INVALID_TXID at the end."""
        if self._cached is not None:
            op, self._cached = self._cached, None
            return op.txid
        if self._state == "UNINIT":
            self._init(True)
        if self._state != "OPEN" or self._exhausted:
            return INVALID_TXID
        try:
            found = self._window.scan_at(self._pos, self.max_op_size)  # type: ignore[union-attr]
        except EditLogCorruptionError as e:
            raise self._located(e) from None
        if found is None:
            return INVALID_TXID
        txid, self._pos = found
        return txid

    def resync(self) -> None:
        """After an error, move to the next op that decodes (kept for the next read)."""
        if self._cached is None:
            try:
                self._cached = self._next_op(skip_broken=True)
            except Exception as e:  # noqa: BLE001 - Hadoop's nextValidOp logs and gives up
                LOG.error("resync: got exception while reading %s: %s", self, e)
                self._cached = None

    def seek(self, offset: int) -> None:
        """Read on from byte ``offset``, which must be where an op starts (known from an
        identical copy: RedundantEditLogInputStream jumps past this copy's damage)."""
        if self._state == "UNINIT":
            self._init(True)
        if self._state != "OPEN":
            raise IOException(f"{self.name} is closed")
        if offset < HEADER_LENGTH:
            raise IllegalArgumentException(f"offset {offset} is inside the header")
        self._pos = offset
        self._cached = None
        self._exhausted = False

    def skip_until(self, txid: int) -> bool:
        """Read past ops below ``txid``; False if the stream ended first."""
        while True:
            op = self.read_op()
            if op is None:
                return False
            if op.txid >= txid:
                self._cached = op
                return True

    def _located(self, error: EditLogCorruptionError) -> EditLogCorruptionError:
        """The same error (same type and fields), its message saying where it happened."""
        error.args = (f"{self.name} at position {self._pos}: {error}",)
        return error

    def _next_op(self, skip_broken: bool) -> FSEditLogOp | None:
        if self._state == "UNINIT":
            try:
                self._init(True)
            except Exception:
                if skip_broken:
                    return None
                raise
        if self._state != "OPEN" or self._exhausted:
            return None
        window = self._window
        always_assert(window is not None, f"{self} is open without a window")
        try:
            found = window.decode_at(self._pos, self.max_op_size, self._layout_version)
        except EditLogCorruptionError as e:
            if not skip_broken:
                raise self._located(e) from None
            resynced = window.resync(self._pos + 1, self.max_op_size, self._layout_version)
            if resynced is None:
                self._exhausted = True  # nothing decodable is left
                return None
            found = (resynced[0], resynced[2])
        if found is None:
            return None
        op, self._pos = found
        if self.last_txid != INVALID_TXID and op.txid >= self.last_txid:
            # A recovered segment may hold garbage after its last txid: ignore the rest.
            self._exhausted = True
        return op
