"""``hdfs-py bench edits``: how fast the edit-log file streams write, scan and read.

Serialises N MKDIR ops of about 100 bytes through :class:`EditLogFileOutputStream`,
flushing and fdatasync-ing every K ops; scans the segment back with
:func:`scan_edit_log` (the JournalNode's start-up and recovery path) and reads it with
``read_op``. For scale it measures, in the same run and directory, the raw rate of
``os.write`` + ``os.fdatasync`` with the same number of flushes of the same size: the
ceiling any writer on this disk has. Goals are printed, never asserted.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Sequence

from hadoop_qjm.common.command_line import CommandParser
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream, scan_edit_log
from hadoop_qjm.editlog.edit_log_file_output_stream import EditLogFileOutputStream
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp, encode_op

__all__ = ["run", "make_batch", "SERIALIZE_GOAL", "SCAN_GOAL"]

#: Goals on the 2-core reference machine (ops/s); printed beside the results.
SERIALIZE_GOAL = 200_000
SCAN_GOAL = 300_000

# With this prefix an op's frame is 100 bytes (17 of framing, 83 of MKDIR body).
_PATH_PREFIX = "/bench/edit/tx "
_TIMESTAMP = 1_700_000_000_000


def make_batch(first_txid: int, count: int) -> bytes:
    """``count`` MKDIR ops of about 100 bytes each."""
    return b"".join(
        encode_op(MkdirOp.create(txid, f"/bench/dir-{txid:012d}-padding"))
        for txid in range(first_txid, first_txid + count)
    )


def _path(txid: int) -> str:
    return f"{_PATH_PREFIX}{txid:019d}"


def _serialize(path: str, num_ops: int, flush_every: int) -> tuple[float, int, int]:
    """Write the ops; returns (seconds, flushes, bytes written after the header)."""
    stream = EditLogFileOutputStream(path, initial_size=1 << 20)
    stream.create()
    header = stream.position
    flushes = 0
    write = stream.write
    create = MkdirOp.create
    start = time.perf_counter()
    for txid in range(1, num_ops + 1):
        write(create(txid, f"{_PATH_PREFIX}{txid:019d}", timestamp=_TIMESTAMP))
        if txid % flush_every == 0:
            stream.set_ready_to_flush()
            stream.flush()
            flushes += 1
    if num_ops % flush_every:
        stream.set_ready_to_flush()
        stream.flush()
        flushes += 1
    elapsed = time.perf_counter() - start
    written = stream.position - header
    stream.close()
    return elapsed, flushes, written


def _raw_write_rate(path: str, flushes: int, total_bytes: int) -> float:
    """Seconds for ``flushes`` appends of equal size, each followed by fdatasync."""
    chunk = b"\x5a" * max(1, total_bytes // max(1, flushes))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        start = time.perf_counter()
        for _ in range(flushes):
            os.write(fd, chunk)
            os.fdatasync(fd)
        return time.perf_counter() - start
    finally:
        os.close(fd)


def _scan(path: str, num_ops: int) -> float:
    start = time.perf_counter()
    validation = scan_edit_log(path)
    elapsed = time.perf_counter() - start
    if validation.last_txid != num_ops or validation.has_corrupt_header:
        raise IOException(f"scan found {validation}, expected txids 1..{num_ops}")
    return elapsed


def _read(path: str, num_ops: int) -> float:
    count = 0
    start = time.perf_counter()
    with EditLogFileInputStream(path) as stream:
        read_op = stream.read_op
        while read_op() is not None:
            count += 1
    elapsed = time.perf_counter() - start
    if count != num_ops:
        raise IOException(f"read {count} ops, expected {num_ops}")
    return elapsed


def _line(label: str, ops_per_s: float, goal: int | None = None) -> str:
    text = f"  {label:<44} {ops_per_s:>12,.0f} ops/s"
    if goal is not None:
        verdict = "met" if ops_per_s >= goal else "NOT met"
        text += f"   (goal >= {goal:,}: {verdict})"
    return text


def run(argv: Sequence[str], conf) -> int:
    """Entry point of ``hdfs-py bench edits``."""
    parser = CommandParser(prog="hdfs-py bench edits", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=1_000_000, help="MKDIR ops (1000000)")
    parser.add_argument("--flush-every", type=int, default=1000, help="ops per flush (1000)")
    parser.add_argument("--dir", default=None, help="directory for the files (a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the files")
    args = parser.parse_args(list(argv))
    if args.ops < 1 or args.flush_every < 1:
        parser.error("--ops and --flush-every must be positive")

    workdir = tempfile.mkdtemp(prefix="bench-edits-", dir=args.dir)
    try:
        edits = os.path.join(workdir, "edits_inprogress_0000000000000000001")
        op_bytes = len(encode_op(MkdirOp.create(1, _path(1), timestamp=_TIMESTAMP)))
        print(
            f"bench edits: {args.ops:,} MKDIR ops of {op_bytes} bytes, flush + fdatasync every "
            f"{args.flush_every:,} ops, in {workdir}"
        )
        ser_s, flushes, written = _serialize(edits, args.ops, args.flush_every)
        raw_s = _raw_write_rate(os.path.join(workdir, "raw"), flushes, written)
        scan_s = _scan(edits, args.ops)
        read_s = _read(edits, args.ops)
        serialize_rate = args.ops / ser_s
        raw_rate = args.ops / raw_s
        print(_line("serialize (EditLogFileOutputStream)", serialize_rate, SERIALIZE_GOAL))
        print(
            _line(
                f"raw os.write+fdatasync, {flushes:,} x {written // max(1, flushes):,} B",
                raw_rate,
            )
        )
        print(f"  {'serialize / raw':<44} {serialize_rate / raw_rate:>12.2f}")
        print(_line("scan (scan_edit_log, frames + CRC)", args.ops / scan_s, SCAN_GOAL))
        print(_line("read (EditLogFileInputStream.read_op)", args.ops / read_s))
    finally:
        if args.keep:
            print(f"kept {workdir}")
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    return 0
