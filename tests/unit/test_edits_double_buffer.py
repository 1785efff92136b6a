"""EditsDoubleBuffer: group commit bookkeeping, with no file behind it."""

from __future__ import annotations

import io

import pytest

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import HadoopAssertionError, IOException
from hadoop_qjm.editlog.edits_double_buffer import EditsDoubleBuffer
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp, decode_op, encode_op


def _op(txid: int) -> MkdirOp:
    return MkdirOp.create(txid, f"tx {txid}")


def test_ops_move_from_current_to_ready_to_the_target() -> None:
    buf = EditsDoubleBuffer(1024)
    for txid in (1, 2, 3):
        buf.write_op(_op(txid))
    assert buf.is_flushed()
    assert buf.count_buffered_bytes() == sum(len(encode_op(_op(t))) for t in (1, 2, 3))
    buf.set_ready_to_flush()
    assert not buf.is_flushed()
    assert buf.count_ready_txns() == 3
    assert buf.first_ready_txid() == 1
    buf.write_op(_op(4))  # goes into the other buffer while the ready one is flushed
    out = io.BytesIO()
    buf.flush_to(out)
    assert out.getvalue() == b"".join(encode_op(_op(t)) for t in (1, 2, 3))
    assert buf.is_flushed()
    assert buf.count_ready_txns() == 0
    buf.set_ready_to_flush()
    chunks: list[bytes] = []
    buf.flush_to(lambda view: chunks.append(bytes(view)))
    assert chunks == [encode_op(_op(4))]
    buf.close()


def test_swapping_before_the_ready_buffer_is_flushed_is_a_bug() -> None:
    buf = EditsDoubleBuffer(1024)
    buf.write_op(_op(1))
    buf.set_ready_to_flush()
    with pytest.raises(HadoopAssertionError, match="not flushed"):
        buf.set_ready_to_flush()


def test_k_buffers_hold_k_sealed_batches_flushed_oldest_first() -> None:
    """Pipelined syncs (issue 23): ``ready_limit`` k sealed batches may wait at once."""
    buf = EditsDoubleBuffer(1024, ready_limit=3)
    for txid in (1, 2, 3):
        buf.write_op(_op(txid))
        buf.set_ready_to_flush()
    assert buf.count_sealed_batches() == 3
    buf.write_op(_op(4))
    with pytest.raises(HadoopAssertionError, match="not flushed"):
        buf.set_ready_to_flush()  # a fourth with three waiting
    assert buf.count_buffered_bytes() == sum(len(encode_op(_op(t))) for t in (1, 2, 3, 4))
    chunks: list[bytes] = []
    for expected in (1, 2, 3):
        assert buf.first_ready_txid() == expected
        buf.flush_to(lambda view: chunks.append(bytes(view)))
    assert chunks == [encode_op(_op(t)) for t in (1, 2, 3)]
    assert buf.is_flushed() and buf.count_sealed_batches() == 0
    buf.set_ready_to_flush()
    assert buf.first_ready_txid() == 4


def test_txids_in_a_buffer_must_increase() -> None:
    buf = EditsDoubleBuffer(1024)
    buf.write_op(_op(5))
    with pytest.raises(HadoopAssertionError):
        buf.write_op(_op(5))


def test_should_force_sync_past_the_capacity() -> None:
    frame = len(encode_op(_op(1)))
    buf = EditsDoubleBuffer(frame * 2)
    buf.write_op(_op(1))
    assert not buf.should_force_sync()
    buf.write_op(_op(2))
    assert buf.should_force_sync()


def test_raw_writes_can_count_transactions() -> None:
    buf = EditsDoubleBuffer(1024)
    data = encode_op(_op(7)) + encode_op(_op(8))
    buf.write_raw(data, num_txns=2)
    buf.set_ready_to_flush()
    assert buf.count_ready_txns() == 2
    assert buf.first_ready_txid() == 7  # read from the first frame
    assert buf.count_ready_bytes() == len(data)
    buf.flush_to(io.BytesIO())
    buf.write_raw(b"\x01\x02")  # uncounted bytes (a header, say)
    buf.set_ready_to_flush()
    assert buf.count_ready_txns() == 0
    with pytest.raises(HadoopAssertionError):
        buf.first_ready_txid()


def test_close_refuses_unflushed_data() -> None:
    buf = EditsDoubleBuffer(1024)
    buf.write_op(_op(1))
    with pytest.raises(IOException, match="still to be flushed"):
        buf.close()


def test_a_failed_flush_keeps_the_ready_data() -> None:
    buf = EditsDoubleBuffer(1024)
    buf.write_op(_op(1))
    buf.set_ready_to_flush()

    def failing(view: memoryview) -> None:
        raise OSError(5, "Input/output error")

    with pytest.raises(OSError):
        buf.flush_to(failing)
    assert buf.count_ready_txns() == 1
    out = io.BytesIO()
    buf.flush_to(out)
    op, _ = decode_op(out.getvalue())
    assert op == _op(1)
    assert buf.ready.first_txid == INVALID_TXID
