"""scan_edit_log against a naive version of Hadoop's algorithm (STYLE.md habit 9). No disk.

The naive scanner works on the whole buffer with the frame functions only: scan each op
by its frame; on an error, try every later offset until an op decodes completely (or the
rest is padding). scan_edit_log must agree with it on any damage to a segment, whatever
its window and fast path do.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import EditLogCorruptionError
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogValidation, scan_edit_log
from hadoop_qjm.editlog.fs_edit_log_op import (
    HEADER_LENGTH,
    EndLogSegmentOp,
    FSEditLogOpCodes,
    LogHeaderCorruptException,
    MkdirOp,
    OpaqueOp,
    StartLogSegmentOp,
    decode_op,
    edit_log_header,
    encode_op,
    parse_edit_log_header,
    scan_op,
)


def naive_scan(data: bytes, max_txid: int | None = None) -> EditLogValidation:
    try:
        parse_edit_log_header(data)
    except LogHeaderCorruptException:
        return EditLogValidation(0, INVALID_TXID, INVALID_TXID, True)
    pos = HEADER_LENGTH
    first = last = INVALID_TXID
    while True:
        try:
            txid, end = scan_op(data, pos)
            if txid == INVALID_TXID and (pos >= len(data) or data[pos] == 0xFF):
                break
        except EditLogCorruptionError:
            found = None
            for candidate in range(pos + 1, len(data)):
                try:
                    op, end = decode_op(data, candidate)
                except EditLogCorruptionError:
                    continue
                if op is not None:
                    found = op
                break  # an op, or a clean end at a terminator
            if found is None:
                break
            txid = found.txid
        pos = end
        if first == INVALID_TXID:
            first = txid
        if last == INVALID_TXID or txid > last:
            last = txid
        if max_txid is not None and last >= max_txid:
            break
    return EditLogValidation(pos, first, last, False)


def _segment(num_ops: int) -> bytes:
    ops = [StartLogSegmentOp(1)]
    for txid in range(2, num_ops + 1):
        if txid % 3 == 0:
            ops.append(OpaqueOp(FSEditLogOpCodes.OP_SET_GENSTAMP_V2, txid, txid.to_bytes(8, "big")))
        else:
            ops.append(MkdirOp.create(txid, f"/dir/tx {txid}"))
    ops.append(EndLogSegmentOp(num_ops + 1))
    return edit_log_header() + b"".join(encode_op(op) for op in ops)


@st.composite
def damaged_segments(draw) -> bytes:
    data = bytearray(_segment(draw(st.integers(1, 12))))
    for _ in range(draw(st.integers(0, 3))):
        kind = draw(st.sampled_from(["flip", "truncate", "insert", "pad", "overwrite"]))
        at = draw(st.integers(HEADER_LENGTH, len(data)))  # header damage: tested elsewhere
        if kind == "flip" and at < len(data):
            data[at] ^= draw(st.integers(1, 255))
        elif kind == "truncate":
            del data[at:]
        elif kind == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=40))
        elif kind == "pad":
            data += draw(st.sampled_from([b"\xff", b"\x00"])) * draw(st.integers(1, 300))
        elif kind == "overwrite":
            chunk = draw(st.binary(min_size=1, max_size=20))
            data[at : at + len(chunk)] = chunk
    return bytes(data)


@settings(max_examples=300, deadline=None)
@given(damaged_segments(), st.none() | st.integers(1, 14))
def test_scan_agrees_with_the_naive_version(data: bytes, max_txid: int | None) -> None:
    assert scan_edit_log(data, max_txid) == naive_scan(data, max_txid)


def test_naive_version_on_a_clean_segment() -> None:
    data = _segment(10)
    assert naive_scan(data) == scan_edit_log(data) == EditLogValidation(len(data), 1, 11, False)
