"""Reading around damaged copies of a finalized segment (issue 27).

Every picture shows the copies of segment [1, 9]; ``x`` is an op whose bytes are damaged
(its CRC fails), ``.`` an intact op::

    txid   1 2 3 4 5 6 7 8 9
    jn0    . . x . . . . . .
    jn1    . . . . . x . . .
    jn2    . . . . . . . x .
"""

from __future__ import annotations

import pytest

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.editlog.fs_edit_log_op import ChecksumException, edit_log_header
from hadoop_qjm.editlog.redundant_edit_log_input_stream import (
    AllCopiesFailedException,
    RedundantEditLogInputStream,
    chain_and_make_redundant_streams,
)
from hadoop_qjm.testing.qjm_test_util import create_txn_data

pytestmark = pytest.mark.timeout(30)


def copy(name: str, *damaged: int, first: int = 1, last: int = 9) -> EditLogFileInputStream:
    """A finalized copy of [first, last] with one byte flipped inside each damaged op."""
    data = bytearray(edit_log_header() + create_txn_data(first, last - first + 1))
    for txid in damaged:
        offset = 8 + len(create_txn_data(first, txid - first)) + 20
        data[offset] ^= 0x01
    return EditLogFileInputStream.from_bytes(bytes(data), first, last, False, name=name)


def test_three_copies_damaged_at_different_txids_still_read_every_op() -> None:
    # The picture at the top: each op is read from a copy that holds it intact; jn0 is
    # used again past its own damage once jn1 and jn2 have failed.
    stream = RedundantEditLogInputStream([copy("jn0", 3), copy("jn1", 6), copy("jn2", 8)], 1)
    assert [op.txid for op in stream] == list(range(1, 10))
    assert [(f.name, f.txid) for f in stream.failures] == [("jn0", 3), ("jn1", 6), ("jn2", 8)]


def test_all_copies_damaged_at_the_same_txid_fail_with_one_error_naming_each() -> None:
    #   txid   1 2 3 4 5 6 7 8 9
    #   jn0-2  . . . . x . . . .
    stream = RedundantEditLogInputStream([copy(f"jn{i}", 5) for i in range(3)], 1)
    read = []
    with pytest.raises(AllCopiesFailedException) as raised:
        for op in stream:
            read.append(op.txid)
    assert read == [1, 2, 3, 4]  # nothing past the last good txid
    error = raised.value
    assert error.txid == 5
    assert [(f.name, f.txid) for f in error.failures] == [("jn0", 5), ("jn1", 5), ("jn2", 5)]
    offset = 8 + len(create_txn_data(1, 4))
    for name in ("jn0", "jn1", "jn2"):
        assert f"{name} at position {offset}" in str(error)
    assert "Calculated checksum" in str(error)


def test_a_single_damaged_copy_raises_its_own_error() -> None:
    stream = RedundantEditLogInputStream([copy("jn0", 5)], 1)
    with pytest.raises(ChecksumException, match="jn0 at position"):
        list(stream)


def test_late_copies_are_asked_for_when_every_copy_held_failed() -> None:
    #   txid   1 2 3 4 5 6 7 8 9
    #   jn0    . . . x . . . . .
    #   jn1    . . . x . . . . .
    #   jn2    . . . . . . . . .     not in the manifest: answered late
    asked = []

    def more_copies(segment_txid: int, txid: int):
        asked.append((segment_txid, txid))
        return [copy("jn0", 4), copy("jn2")]  # jn0 is held already: ignored

    [stream] = chain_and_make_redundant_streams(
        [copy("jn0", 4), copy("jn1", 4)], 1, more_copies=more_copies
    )
    assert [op.txid for op in stream] == list(range(1, 10))
    assert asked == [(1, 4)]
    assert [s.name for s in stream.streams] == ["jn0", "jn1", "jn2"]


def test_when_late_copies_fail_too_the_error_names_every_copy_tried() -> None:
    stream = RedundantEditLogInputStream(
        [copy("jn0", 4), copy("jn1", 4)],
        1,
        more_copies=lambda segment_txid, txid: [copy("jn2", 4)],
    )
    with pytest.raises(AllCopiesFailedException) as raised:
        list(stream)
    assert [f.name for f in raised.value.failures] == ["jn0", "jn1", "jn2"]


def test_no_late_copy_keeps_the_first_error_chain() -> None:
    stream = RedundantEditLogInputStream(
        [copy("jn0", 4), copy("jn1", 6)], 1, more_copies=lambda segment_txid, txid: []
    )
    # jn0 fails at 4, jn1 gives 4 and 5 and fails at 6; jn0 gives 6.. by offset.
    assert [op.txid for op in stream] == list(range(1, 10))


def test_a_shorter_in_progress_copy_is_not_read_past_its_damage() -> None:
    # Offsets are only trusted between finalized copies of the same length.
    data = bytearray(edit_log_header() + create_txn_data(1, 9))
    offset = 8 + len(create_txn_data(1, 2)) + 20
    data[offset] ^= 0x01
    in_progress = EditLogFileInputStream.from_bytes(bytes(data), 1, 9, True, name="ip")
    stream = RedundantEditLogInputStream([in_progress, copy("jn1", 6)], 1)
    with pytest.raises(IOException):
        list(stream)


def test_reading_from_the_middle_steps_over_damage_below_the_start() -> None:
    #   txid   1 2 3 4 5 6 7 8 9
    #   jn0    . x . . . . x . .     read from txid 5: jn0 steps over 2 and fails at 7,
    #   jn1    . . . x . . . . .     jn1 steps over 4 and gives 7.. .
    stream = RedundantEditLogInputStream([copy("jn0", 2, 7), copy("jn1", 4)], 5)
    assert [op.txid for op in stream] == [5, 6, 7, 8, 9]
    assert [(f.name, f.txid) for f in stream.failures] == [("jn0", 7)]
