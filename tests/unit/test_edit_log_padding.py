"""Finding the first byte after a segment's terminator that is not padding (0x00 / 0xFF):
the quick path for one run of a padding byte (a preallocated tail) against a literal
reading."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.editlog.edit_log_file_input_stream import _Window

pytestmark = pytest.mark.timeout(60)


def _literal(data: bytes, pos: int) -> int | None:
    return next((i for i in range(pos, len(data)) if data[i] not in (0x00, 0xFF)), None)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.tuples(st.sampled_from([0x00, 0xFF, 0x01, 0x7F]), st.integers(1, 50)), max_size=8
    ),
    pos=st.integers(0, 60),
)
def test_first_non_padding_matches_a_literal_reading(parts, pos: int) -> None:  # noqa: ANN001
    data = b"".join(bytes([b]) * n for b, n in parts)
    assert _Window(data).first_non_padding(pos) == _literal(data, pos)


@pytest.mark.parametrize("fill", [0x00, 0xFF])
def test_a_stray_byte_beyond_the_first_mebibyte_of_padding_is_found(fill: int) -> None:
    size = (1 << 21) + 17  # more than one quick-path run
    data = bytearray([fill]) * size
    assert _Window(bytes(data)).first_non_padding(3) is None
    data[-1] = 0x42
    assert _Window(bytes(data)).first_non_padding(3) == size - 1
    data[-1] = 0xFF - fill  # the other padding byte: mixed padding is still padding
    assert _Window(bytes(data)).first_non_padding(3) is None
