"""EditLogFileOutputStream, EditLogFileInputStream and scan_edit_log on real files.

Hadoop's TestEditLogFileOutputStream and TestEditLogFileInputStream, plus the torn-tail
and garbage cases of HADOOP-QJM-DIGEST.md §4.6.
"""

from __future__ import annotations

import errno
import os
import tempfile
import threading
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import EditLogCorruptionError, IOException
from hadoop_qjm.editlog import edit_log_file_input_stream as input_module
from hadoop_qjm.editlog import edit_log_file_output_stream as output_module
from hadoop_qjm.editlog.edit_log_file_input_stream import (
    EditLogFileInputStream,
    EditLogValidation,
    scan_edit_log,
)
from hadoop_qjm.editlog.edit_log_file_output_stream import (
    PREALLOCATION_LENGTH,
    EditLogFileOutputStream,
)
from hadoop_qjm.editlog.fs_edit_log_op import (
    HEADER_LENGTH,
    EndLogSegmentOp,
    LogHeaderCorruptException,
    MkdirOp,
    StartLogSegmentOp,
    edit_log_header,
    encode_op,
)
from tests.unit.test_scan_edit_log import damaged_segments, naive_scan

MIB = PREALLOCATION_LENGTH


def _ops(first: int, last: int) -> list:
    return [MkdirOp.create(txid, f"tx {txid}") for txid in range(first, last + 1)]


def _segment(first: int, last: int) -> bytes:
    return edit_log_header() + b"".join(encode_op(op) for op in _ops(first, last))


def _write_segment(path: Path, ops: list, close: bool = True) -> EditLogFileOutputStream:
    stream = EditLogFileOutputStream(path)
    stream.create()
    for op in ops:
        stream.write(op)
    stream.set_ready_to_flush()
    stream.flush()
    if close:
        stream.close()
    return stream


# ---- EditLogFileOutputStream -------------------------------------------------------------------


def test_create_writes_the_header_and_preallocates(tmp_path: Path) -> None:
    path = tmp_path / "edits_inprogress_0000000000000000001"
    stream = EditLogFileOutputStream(path)
    stream.create()
    data = path.read_bytes()
    assert len(data) == MIB
    assert data[:HEADER_LENGTH] == edit_log_header()
    assert set(data[HEADER_LENGTH:]) == {0xFF}
    assert stream.position == HEADER_LENGTH
    stream.close()
    assert path.read_bytes() == edit_log_header()


def test_open_file_is_padded_and_closed_file_is_not(tmp_path: Path) -> None:
    path = tmp_path / "seg"
    ops = [StartLogSegmentOp(1), *_ops(2, 50), EndLogSegmentOp(51)]
    stream = _write_segment(path, ops, close=False)
    expected = edit_log_header() + b"".join(encode_op(op) for op in ops)
    size = path.stat().st_size
    assert size % MIB == 0 and size > 0
    assert path.read_bytes()[: len(expected)] == expected
    assert scan_edit_log(path) == EditLogValidation(len(expected), 1, 51, False)
    stream.close()
    assert path.read_bytes() == expected


def test_raw_writes_preallocate_in_whole_mebibytes(tmp_path: Path) -> None:
    # Hadoop's TestEditLogFileOutputStream.testRawWrites.
    path = tmp_path / "raw"
    stream = EditLogFileOutputStream(path)
    stream.create()
    small = bytes([1, 2, 3, 4, 5, 8, 7])
    for _ in range(2):  # the second small write lands in space preallocated by the first
        stream.write_raw(small)
        stream.set_ready_to_flush()
        stream.flush()
        assert path.stat().st_size == MIB
    zeros = bytes(4096)
    remaining = 3 * MIB
    while remaining > 0:
        n = min(remaining, len(zeros))
        stream.write_raw(zeros[:n])
        remaining -= n
    stream.set_ready_to_flush()
    stream.flush()
    assert path.stat().st_size == 4 * MIB  # a 3 MiB write gives a 4 MiB file
    stream.abort()
    assert path.stat().st_size == 4 * MIB  # abort leaves the padding


def test_close_then_abort_is_fine_and_double_close_is_not(tmp_path: Path) -> None:
    stream = EditLogFileOutputStream(tmp_path / "a")
    stream.create()
    stream.close()
    stream.abort()
    with pytest.raises(IOException, match="Trying to use aborted output stream"):
        stream.close()

    second = EditLogFileOutputStream(tmp_path / "b")
    second.create()
    second.close()
    with pytest.raises(IOException, match="Trying to use aborted output stream"):
        second.close()


def test_use_after_abort(tmp_path: Path) -> None:
    stream = EditLogFileOutputStream(tmp_path / "a")
    stream.create()
    stream.abort()
    stream.abort()
    for action in (
        lambda: stream.write(MkdirOp.create(1, "/a")),
        lambda: stream.write_raw(b"x"),
        stream.set_ready_to_flush,
        stream.flush,
        stream.close,
    ):
        with pytest.raises(IOException, match="Trying to use aborted output stream"):
            action()


def test_close_with_unflushed_data_fails(tmp_path: Path) -> None:
    stream = EditLogFileOutputStream(tmp_path / "a")
    stream.create()
    stream.write(MkdirOp.create(1, "/a"))
    with pytest.raises(IOException, match="still to be flushed"):
        stream.close()
    assert not stream.is_open


def test_should_force_sync(tmp_path: Path) -> None:
    frame = len(encode_op(MkdirOp.create(1, "tx 1")))
    stream = EditLogFileOutputStream(tmp_path / "a", initial_size=3 * frame)
    stream.create()
    for txid in (1, 2):
        stream.write(MkdirOp.create(txid, f"tx {txid}"))
        assert not stream.should_force_sync()
    stream.write(MkdirOp.create(3, "tx 3"))
    assert stream.should_force_sync()
    stream.abort()


def test_durable_flush_syncs_and_non_durable_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(output_module.os, "fdatasync", lambda fd: (calls.append(fd), real(fd)))
    stream = EditLogFileOutputStream(tmp_path / "a")
    stream.create()
    assert len(calls) == 1
    stream.write(MkdirOp.create(1, "/a"))
    stream.set_ready_to_flush()
    stream.flush(durable=False)
    assert len(calls) == 1
    stream.write(MkdirOp.create(2, "/b"))
    stream.set_ready_to_flush()
    stream.flush()
    assert len(calls) == 2
    stream.close()


def test_noeditlogchannelflush_writes_o_sync_and_never_fdatasyncs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """dfs.namenode.edits.noeditlogchannelflush (Hadoop's "rws" file, no FileChannel.force):
    the segment's fd is O_SYNC, so each write is durable when it returns, and none of the
    ways a batch is made durable (flush, write_batch, sync, the pipelined wait_sent) calls
    fdatasync; the bytes are the same. FileJournalManager takes it from its conf."""
    import fcntl

    from hadoop_qjm.conf import Configuration
    from hadoop_qjm.editlog.file_journal_manager import FileJournalManager

    calls: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(output_module.os, "fdatasync", lambda fd: (calls.append(fd), real(fd)))
    conf = Configuration()
    conf.set("dfs.namenode.edits.noeditlogchannelflush", "true")
    fjm = FileJournalManager(conf, tmp_path)
    stream = fjm.start_log_segment(1, -67)
    assert stream.sync_writes and fcntl.fcntl(stream._fd, fcntl.F_GETFL) & os.O_SYNC
    stream.write(MkdirOp.create(1, "/a"))
    stream.set_ready_to_flush()
    stream.flush()
    stream.write_batch(encode_op(MkdirOp.create(2, "/b")))
    stream.sync()
    stream.write(MkdirOp.create(3, "/c"))
    stream.set_ready_to_flush()
    stream.wait_sent(stream.send_ready())
    assert calls == []
    stream.close()
    plain = FileJournalManager(Configuration(), tmp_path / "plain")
    (tmp_path / "plain").mkdir()
    other = plain.start_log_segment(1, -67)
    assert not other.sync_writes and not fcntl.fcntl(other._fd, fcntl.F_GETFL) & os.O_SYNC
    other.abort()
    segment = tmp_path / "edits_inprogress_0000000000000000001"
    with EditLogFileInputStream(segment, 1, is_in_progress=True) as reader:
        assert [op.path for op in reader] == ["/a", "/b", "/c"]


def test_pipelined_batches_reach_the_file_in_order_only_when_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pipelined syncs (issue 23): a sent batch is written only by ``wait_sent`` (after
    the quorum, HDFS-2874), every earlier batch with it, in txid order; one fdatasync
    that started after a batch was written makes it durable (a group fsync)."""
    calls: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(output_module.os, "fdatasync", lambda fd: (calls.append(fd), real(fd)))
    path = tmp_path / "a"
    stream = EditLogFileOutputStream(path)
    stream.create()
    stream.set_pipeline_depth(3)
    header_only = stream.position
    tickets = []
    for op in _ops(1, 3):
        stream.write(op)
        stream.set_ready_to_flush()
        tickets.append(stream.send_ready())
    assert stream.position == header_only, "a batch reached the file before it was waited for"
    syncs = len(calls)
    stream.wait_sent(tickets[1])  # the second: the first goes with it, the third stays
    assert len(calls) == syncs + 1
    assert path.read_bytes()[: stream.position] == _segment(1, 2)
    stream.wait_sent(tickets[0])  # already synced by the second's fdatasync
    assert len(calls) == syncs + 1
    stream.wait_sent(tickets[2])
    assert len(calls) == syncs + 2
    stream.close()
    assert path.read_bytes() == _segment(1, 3)


@pytest.mark.timeout(30)
def test_a_pipelined_sync_never_counts_on_an_fdatasync_beside_a_failed_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two pipelined batches' ``wait_sent`` on one file (issue 23 review). When writeback
    fails, the kernel reports it to one fdatasync of the file only (one open file, one
    error sequence: the fsyncgate lesson), so an fdatasync that ran beside the failing
    one may return 0 for pages the failure lost. The fake kernel below does exactly that;
    batch 1's ``wait_sent`` may succeed only on an fdatasync that ended before the
    failing one began.

        batch 1: write ---- fdatasync ..................... returns 0 (error went to 2)
        batch 2:        write ---- fdatasync -> EIO
    """
    events: list[tuple[str, int]] = []
    first_entered = threading.Event()
    second_failed = threading.Event()

    def kernel_fdatasync(fd: int) -> None:
        call = 1 + sum(1 for what, _ in events if what == "start")
        events.append(("start", call))
        if call == 1:
            first_entered.set()
            # Ends once the second fdatasync has failed, or after a bound if that one
            # cannot start meanwhile.
            second_failed.wait(2.0)
            events.append(("end", call))
            return
        events.append(("fail", call))
        second_failed.set()
        raise OSError(errno.EIO, "Input/output error")

    stream = EditLogFileOutputStream(tmp_path / "a")
    stream.create()
    stream.set_pipeline_depth(2)
    tickets = []
    for op in _ops(1, 2):
        stream.write(op)
        stream.set_ready_to_flush()
        tickets.append(stream.send_ready())
    monkeypatch.setattr(output_module.os, "fdatasync", kernel_fdatasync)
    outcomes: dict[int, BaseException | None] = {}

    def wait(n: int) -> None:
        try:
            stream.wait_sent(tickets[n - 1])
            outcomes[n] = None
        except BaseException as e:  # noqa: BLE001 - the outcome is what is checked
            outcomes[n] = e

    first = threading.Thread(target=wait, args=(1,))
    first.start()
    assert first_entered.wait(10.0), "batch 1's fdatasync never started"
    second = threading.Thread(target=wait, args=(2,))
    second.start()
    second.join(10.0)
    first.join(10.0)
    assert not first.is_alive() and not second.is_alive()
    assert isinstance(outcomes[2], IOException)
    if outcomes[1] is None:
        assert events.index(("end", 1)) < events.index(("start", 2)), (
            f"batch 1 counted on an fdatasync that overlapped a failed one: {events}"
        )
    # Whatever came first, the stream is poisoned now.
    with pytest.raises(IOException, match="failed earlier"):
        stream.wait_sent(tickets[1])
    stream.abort()


@pytest.mark.timeout(30)
def test_abort_during_a_write_closes_the_fd_only_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """abort() from another thread (a required journal failing) while a flush is in its
    pwrite: abort returns at once, but the fd stays open until the write is done. Closed
    under the writer, its number would go to the next file opened, and the edit bytes
    would land there."""
    stream = EditLogFileOutputStream(tmp_path / "a")
    stream.create()
    for op in _ops(1, 3):
        stream.write(op)
    stream.set_ready_to_flush()
    real_pwrite = os.pwrite
    in_write, go_on = threading.Event(), threading.Event()
    fds: list[int] = []

    def slow_pwrite(fd: int, data, pos: int) -> int:
        fds.append(fd)
        in_write.set()
        go_on.wait(10.0)
        return real_pwrite(fd, data, pos)

    monkeypatch.setattr(output_module.os, "pwrite", slow_pwrite)
    outcome: list[BaseException | None] = []

    def flush() -> None:
        try:
            stream.flush()
            outcome.append(None)
        except BaseException as e:  # noqa: BLE001 - the outcome is what is checked
            outcome.append(e)

    writer = threading.Thread(target=flush)
    writer.start()
    try:
        assert in_write.wait(10.0), "the flush never wrote"
        stream.abort()
        assert not stream.is_open
        other = os.open(tmp_path / "other", os.O_RDWR | os.O_CREAT, 0o644)
    finally:
        go_on.set()
        writer.join(10.0)
    monkeypatch.undo()
    try:
        assert not writer.is_alive()
        assert other != fds[0], "the segment's fd was closed under its writer"
        assert os.fstat(other).st_size == 0
        assert outcome[0] is None or isinstance(outcome[0], IOException), outcome
    finally:
        os.close(other)
    # The writer closed the fd as it left: its number is free, or another file's now.
    try:
        assert os.readlink(f"/proc/self/fd/{fds[0]}") != str(tmp_path / "a")
    except FileNotFoundError:
        pass
    assert scan_edit_log(tmp_path / "a").last_txid == 3  # the write went to its own file


def test_a_failed_sync_raises_and_poisons_the_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = EditLogFileOutputStream(tmp_path / "a")
    stream.create()

    def failing_sync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(output_module.os, "fdatasync", failing_sync)
    stream.write(MkdirOp.create(1, "/a"))
    stream.set_ready_to_flush()
    with pytest.raises(IOException, match="Input/output error"):
        stream.flush()
    monkeypatch.undo()
    # Never retried, never pretended: every later use fails too.
    with pytest.raises(IOException, match="failed earlier"):
        stream.write(MkdirOp.create(2, "/b"))
    with pytest.raises(IOException, match="failed earlier"):
        stream.flush()
    with pytest.raises(IOException):
        stream.close()
    assert not stream.is_open


# ---- EditLogFileInputStream --------------------------------------------------------------------


def test_read_back_what_was_written(tmp_path: Path) -> None:
    path = tmp_path / "seg"
    ops = [StartLogSegmentOp(1), *_ops(2, 20), EndLogSegmentOp(21)]
    _write_segment(path, ops)
    with EditLogFileInputStream(path, 1, 21) as stream:
        assert stream.layout_version == -67
        assert stream.position == HEADER_LENGTH
        assert list(stream) == ops
        assert stream.read_op() is None
        assert stream.position == path.stat().st_size
    with EditLogFileInputStream(path) as stream:
        assert [stream.scan_next_op() for _ in range(22)] == [*range(1, 22), INVALID_TXID]
    in_memory = EditLogFileInputStream.from_bytes(path.read_bytes(), 1, 21)
    assert list(in_memory) == ops
    assert in_memory.length() == path.stat().st_size


def test_read_an_open_padded_segment(tmp_path: Path) -> None:
    path = tmp_path / "seg"
    stream = _write_segment(path, _ops(1, 10), close=False)
    with EditLogFileInputStream(path, 1, is_in_progress=True) as reader:
        assert list(reader) == _ops(1, 10)
    stream.abort()


def test_a_known_last_txid_ends_the_stream(tmp_path: Path) -> None:
    path = tmp_path / "seg"
    path.write_bytes(_segment(1, 5) + b"garbage a crashed writer left")
    with EditLogFileInputStream(path, 1, 5) as stream:
        assert list(stream) == _ops(1, 5)
    with EditLogFileInputStream(path, 1, 3) as stream:
        assert list(stream) == _ops(1, 3)
    with EditLogFileInputStream(path) as stream:  # unknown end: the garbage is an error
        with pytest.raises(EditLogCorruptionError):
            list(stream)


def test_skip_until(tmp_path: Path) -> None:
    stream = EditLogFileInputStream.from_bytes(_segment(1, 10))
    assert stream.skip_until(7)
    assert stream.read_op() == MkdirOp.create(7, "tx 7")
    assert not stream.skip_until(20)


def test_corrupt_last_checksum(tmp_path: Path) -> None:
    # Hadoop's TestEditLogFileInputStream.testScanCorruptEditLog.
    data = bytearray(_segment(1, 2))
    data[-1] ^= 0xFF
    path = tmp_path / "corrupt"
    path.write_bytes(bytes(data))
    with EditLogFileInputStream(path) as stream:
        assert stream.scan_next_op() == 1
        with pytest.raises(EditLogCorruptionError, match="Transaction is corrupt."):
            stream.scan_next_op()
    with EditLogFileInputStream(path) as stream:
        assert stream.read_op() == MkdirOp.create(1, "tx 1")
        with pytest.raises(EditLogCorruptionError, match="Transaction is corrupt."):
            stream.read_op()
    validation = scan_edit_log(path)
    assert (validation.first_txid, validation.last_txid) == (1, 1)
    assert validation.valid_length == len(_segment(1, 1))


def test_resync_skips_to_the_next_good_op() -> None:
    garbage = bytes(range(1, 60))
    data = _segment(1, 3) + garbage + b"".join(encode_op(op) for op in _ops(4, 6))
    stream = EditLogFileInputStream.from_bytes(data)
    assert [stream.read_op() for _ in range(3)] == _ops(1, 3)
    with pytest.raises(EditLogCorruptionError):
        stream.read_op()
    stream.resync()
    assert list(stream) == _ops(4, 6)


@pytest.mark.parametrize(
    "data,message",
    [
        (b"", "Reached EOF when reading log header"),
        (b"\xff\xff\xff", "Reached EOF when reading log header"),
        (b"\xff" * 100, "Unexpected version"),
        (b"GARBAGE!GARBAGE!", "Unexpected version"),
    ],
)
def test_reading_a_bad_header(data: bytes, message: str) -> None:
    stream = EditLogFileInputStream.from_bytes(data)
    with pytest.raises(LogHeaderCorruptException, match=message):
        stream.read_op()
    assert stream.read_op() is None  # the stream is closed after a header failure


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(IOException, match="No such file"):
        EditLogFileInputStream(tmp_path / "nope").read_op()


def test_max_op_size_is_enforced_on_read(tmp_path: Path) -> None:
    path = tmp_path / "seg"
    path.write_bytes(_segment(1, 3))
    with EditLogFileInputStream(path, max_op_size=40) as stream:
        with pytest.raises(EditLogCorruptionError, match="maxOpSize = 40"):
            stream.read_op()


# ---- scan_edit_log -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [b"", b"\xff\xff\xff", b"\xff" * 5000, b"\xff\xff\xff\xbd\x00\x00"],
    ids=["empty", "truncated", "all-0xFF", "truncated-flags"],
)
def test_corrupt_header(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "edits_inprogress_0000000000000000001"
    path.write_bytes(data)
    expected = EditLogValidation(0, INVALID_TXID, INVALID_TXID, True)
    assert scan_edit_log(path) == expected
    assert scan_edit_log(data) == expected


def test_header_only_segment_has_no_transactions(tmp_path: Path) -> None:
    path = tmp_path / "seg"
    path.write_bytes(edit_log_header() + b"\xff" * 100)
    assert scan_edit_log(path) == EditLogValidation(
        HEADER_LENGTH, INVALID_TXID, INVALID_TXID, False
    )


def test_torn_last_op_at_every_byte_offset(tmp_path: Path) -> None:
    whole = _segment(1, 5)
    good = len(_segment(1, 4))
    for cut in range(good, len(whole)):
        torn = whole[:cut]
        expected = EditLogValidation(good, 1, 4, False)
        assert scan_edit_log(torn) == expected, cut
        assert scan_edit_log(torn + b"\xff" * 300) == expected, cut  # torn, then padding
    # On disk too, for a few of them.
    for cut in (good + 1, good + 13, len(whole) - 1):
        path = tmp_path / f"torn-{cut}"
        path.write_bytes(whole[:cut])
        assert scan_edit_log(path) == EditLogValidation(good, 1, 4, False)
    assert scan_edit_log(whole) == EditLogValidation(len(whole), 1, 5, False)


def test_garbage_between_good_ops_is_skipped() -> None:
    garbage = bytes((i * 37 + 11) % 251 for i in range(200))
    tail = b"".join(encode_op(op) for op in _ops(4, 6))
    data = _segment(1, 3) + garbage + tail
    assert scan_edit_log(data) == EditLogValidation(len(data), 1, 6, False)


def test_extra_bytes_after_the_terminator() -> None:
    data = _segment(1, 3) + b"\xff" * 10 + b"x" + b"\xff" * 10
    assert scan_edit_log(data) == EditLogValidation(len(_segment(1, 3)), 1, 3, False)
    # ...and an op after them is found by resync.
    data = _segment(1, 3) + b"\xff" * 10 + b"x" + encode_op(MkdirOp.create(4, "tx 4"))
    assert scan_edit_log(data) == EditLogValidation(len(data), 1, 4, False)


def test_scan_stops_at_max_txid() -> None:
    data = _segment(1, 10)
    assert scan_edit_log(data, max_txid_to_scan=4) == EditLogValidation(
        len(_segment(1, 4)), 1, 4, False
    )


def test_scan_of_a_large_file_crosses_the_read_window(tmp_path: Path) -> None:
    path = tmp_path / "big"
    path.write_bytes(_segment(1, 3000))
    old = input_module.READ_CHUNK
    input_module.READ_CHUNK = 1000  # many refills, frames split across them
    try:
        assert scan_edit_log(path) == EditLogValidation(path.stat().st_size, 1, 3000, False)
        for limit in range(1, 60):  # wherever the limit falls against the window
            expected = EditLogValidation(len(_segment(1, limit)), 1, limit, False)
            assert scan_edit_log(path, max_txid_to_scan=limit) == expected
        with EditLogFileInputStream(path) as stream:
            assert sum(1 for _ in stream) == 3000
    finally:
        input_module.READ_CHUNK = old


def test_a_huge_claimed_length_is_not_allocated(tmp_path: Path) -> None:
    # A frame claiming 40 MB (under the 50 MiB max op size) in a tiny file.
    path = tmp_path / "liar"
    path.write_bytes(_segment(1, 2) + b"\x03\x02\x62\x5a\x00" + b"\x00" * 40)
    tracemalloc.start()
    try:
        validation = scan_edit_log(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (validation.last_txid, validation.has_corrupt_header) == (2, False)
    assert peak < 4 * MIB


@settings(max_examples=100, deadline=None)
@given(damaged_segments(), st.none() | st.integers(1, 14), st.integers(1, 200))
def test_file_scan_through_a_small_window_agrees_with_the_naive_version(
    data: bytes, max_txid: int | None, chunk: int
) -> None:
    old = input_module.READ_CHUNK
    input_module.READ_CHUNK = chunk
    try:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "edits"
            path.write_bytes(data)
            assert scan_edit_log(path, max_txid) == naive_scan(data, max_txid)
    finally:
        input_module.READ_CHUNK = old


def test_write_batch_writes_what_the_buffered_path_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The JournalNode's direct path: the same file, byte for byte, one fdatasync per batch."""
    batches = [
        b"".join(encode_op(MkdirOp.create(t, f"/d{t}" * 100)) for t in range(s, s + 100))
        for s in range(1, 2001, 100)
    ]
    buffered = EditLogFileOutputStream(tmp_path / "buffered")
    buffered.create()
    for batch in batches:
        buffered.write_raw(batch)
        buffered.set_ready_to_flush()
        buffered.flush()
    calls: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(output_module.os, "fdatasync", lambda fd: (calls.append(fd), real(fd)))
    direct = EditLogFileOutputStream(tmp_path / "direct")
    direct.create()
    calls.clear()
    for i, batch in enumerate(batches):
        if i == 3:
            # Something already buffered goes first: the batch's first op here.
            first_op = encode_op(MkdirOp.create(301, "/d301" * 100))
            direct.write_raw(first_op)
            batch = batch[len(first_op) :]
        direct.write_batch(batch, durable=i != 5)
    assert len(calls) == len(batches) - 1
    assert direct.position > PREALLOCATION_LENGTH  # it preallocated more than once
    direct.close()
    buffered.close()
    assert (tmp_path / "direct").read_bytes() == (tmp_path / "buffered").read_bytes()
    assert scan_edit_log(tmp_path / "direct").last_txid == 2000


def test_a_failed_sync_of_a_direct_batch_poisons_the_stream(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream = EditLogFileOutputStream(tmp_path / "a")
    stream.create()

    def failing_sync(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(output_module.os, "fdatasync", failing_sync)
    with pytest.raises(IOException, match="Input/output error"):
        stream.write_batch(encode_op(MkdirOp.create(1, "/a")))
    monkeypatch.undo()
    with pytest.raises(IOException, match="failed earlier"):
        stream.write_batch(encode_op(MkdirOp.create(2, "/b")))
    stream.abort()
