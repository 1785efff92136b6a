"""ipc.frames' FrameDecoder: bytes in, frames out, however the bytes are split; a bad
length refused as soon as its four bytes arrive (h11's receive buffer is the model)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.ipc.exceptions import ProtocolError
from hadoop_qjm.ipc.frames import (
    FRAME_HEADER,
    HTTP_REPLY_FRAME_LENGTH,
    FrameDecoder,
    HttpReplyError,
    frame,
)

pytestmark = pytest.mark.timeout(60)


def _naive_frames(stream: bytes) -> tuple[list[bytes], int]:
    """A literal reading of TFramedTransport: the frames, and the bytes left over."""
    found, pos = [], 0
    while len(stream) - pos >= 4:
        size = int.from_bytes(stream[pos : pos + 4], "big", signed=True)
        if len(stream) - pos - 4 < size:
            break
        found.append(stream[pos + 4 : pos + 4 + size])
        pos += 4 + size
    return found, len(stream) - pos


@settings(max_examples=200, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=3000), max_size=10),
)
def test_any_split_of_the_bytes_gives_the_frames_a_literal_reading_does(payloads, cuts) -> None:
    stream = b"".join(frame(p) for p in payloads) + b"\x00\x00"  # and part of a next length
    decoder = FrameDecoder(1024)
    got = []
    edges = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    for start, end in zip(edges, edges[1:], strict=False):
        decoder.feed(stream[start:end])
        got.extend(decoder.frames())
    assert (got, len(decoder)) == _naive_frames(stream)
    assert got == payloads


def test_a_frame_is_returned_only_once_all_of_it_has_arrived() -> None:
    decoder = FrameDecoder()
    data = frame(b"hello")
    decoder.feed(data[:6])
    assert decoder.next_frame() is None
    assert len(decoder) == 6
    decoder.feed(data[6:])
    assert decoder.next_frame() == b"hello"
    assert decoder.next_frame() is None
    assert len(decoder) == 0


@pytest.mark.parametrize(
    ("size", "error", "text"),
    [
        (-1, ProtocolError, "Invalid frame length -1"),
        (101, ProtocolError, "Requested data length 101 is longer than maximum configured RPC"),
        (HTTP_REPLY_FRAME_LENGTH, HttpReplyError, "the peer answered in HTTP"),
    ],
)
def test_a_bad_length_is_refused_when_its_four_bytes_arrive(size, error, text) -> None:
    decoder = FrameDecoder(max_frame_size=100)
    decoder.feed(frame(b"ok") + FRAME_HEADER.pack(size)[:3])
    assert decoder.next_frame() == b"ok"
    assert decoder.next_frame() is None  # three bytes of the length: nothing to judge yet
    decoder.feed(FRAME_HEADER.pack(size)[3:])
    with pytest.raises(error, match=text):
        decoder.next_frame()


def test_a_frame_of_exactly_the_maximum_passes() -> None:
    decoder = FrameDecoder(max_frame_size=3)
    decoder.feed(frame(b"abc") + frame(b""))
    assert decoder.frames() == [b"abc", b""]
