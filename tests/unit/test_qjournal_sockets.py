"""sockets.py's FrameReader: frames back from however the bytes arrive, memory bounded."""

from __future__ import annotations

import socket
import struct
import threading
import tracemalloc
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.qjournal.protocol.sockets import (
    FrameReader,
    HttpReplyError,
    call_failed,
    read_frame,
    write_frame,
)
from hadoop_qjm.qjournal.protocol.wire import ProtocolError, frame

MiB = 1024 * 1024


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    a, b = socket.socketpair()
    a.settimeout(30)
    b.settimeout(30)
    yield a, b
    a.close()
    b.close()


def test_frames_sent_together_come_back_one_by_one(pair) -> None:
    a, b = pair
    payloads = [b"", b"x", b"hello" * 1000, b"\x00\x01\x02"]
    a.sendall(b"".join(frame(p) for p in payloads))
    a.shutdown(socket.SHUT_WR)
    reader = FrameReader(b, 1 * MiB)
    assert [reader.read_frame() for _ in payloads] == payloads
    assert reader.read_frame() is None
    assert reader.read_frame() is None


@settings(max_examples=60, deadline=None)
@given(
    payloads=st.lists(st.binary(max_size=300), min_size=1, max_size=6),
    cuts=st.lists(st.integers(1, 50), max_size=40),
    buffer_size=st.sampled_from([4, 5, 16, 64, 1024]),
)
def test_any_split_of_the_bytes_gives_the_same_frames(
    payloads: list[bytes], cuts: list[int], buffer_size: int
) -> None:
    data = b"".join(frame(p) for p in payloads)
    a, b = socket.socketpair()
    with a, b:
        b.settimeout(30)

        def send() -> None:
            pos = 0
            for cut in cuts:
                a.sendall(data[pos : pos + cut])
                pos += cut
            a.sendall(data[pos:])
            a.shutdown(socket.SHUT_WR)

        sender = threading.Thread(target=send)
        sender.start()
        reader = FrameReader(b, 1 * MiB, buffer_size=buffer_size)
        got = [reader.read_frame() for _ in payloads]
        assert reader.read_frame() is None
        sender.join(30)
    assert got == payloads


def test_a_frame_bigger_than_the_buffer(pair) -> None:
    a, b = pair
    big = bytes(range(256)) * 1000
    sender = threading.Thread(target=lambda: a.sendall(frame(big) + frame(b"after")))
    sender.start()
    reader = FrameReader(b, 1 * MiB, buffer_size=1024)
    assert reader.read_frame() == big
    assert reader.read_frame() == b"after"
    sender.join(30)


@pytest.mark.parametrize(
    "data",
    [b"\x00\x00", struct.pack(">i", 10) + b"short", struct.pack(">i", 100_000) + b"x" * 10],
    ids=["in-length", "in-payload", "in-big-payload"],
)
def test_eof_inside_a_frame_is_a_protocol_error(pair, data: bytes) -> None:
    a, b = pair
    a.sendall(data)
    a.shutdown(socket.SHUT_WR)
    with pytest.raises(ProtocolError, match="middle of a frame"):
        FrameReader(b, 1 * MiB, buffer_size=1024).read_frame()


@pytest.mark.parametrize("use_reader", [True, False], ids=["FrameReader", "read_frame"])
@pytest.mark.parametrize("length", [-1, 2**31 - 1, MiB + 1])
def test_a_bad_length_is_rejected_before_anything_is_allocated(
    pair, length: int, use_reader: bool
) -> None:
    a, b = pair
    a.sendall(struct.pack(">i", length) + b"abc")
    with pytest.raises(ProtocolError, match="length"):
        if use_reader:
            FrameReader(b, MiB).read_frame()
        else:
            read_frame(b, MiB)


def test_memory_follows_the_bytes_received_not_the_length_claimed(pair) -> None:
    a, b = pair
    a.sendall(struct.pack(">i", 60 * MiB) + b"y" * 1000)  # claims 60 MiB, sends 1000 bytes
    a.shutdown(socket.SHUT_WR)
    tracemalloc.start()
    try:
        with pytest.raises(ProtocolError):
            FrameReader(b, 64 * MiB).read_frame()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < MiB


def test_read_frame_and_write_frame_still_work_alone(pair) -> None:
    a, b = pair
    write_frame(a, b"one")
    write_frame(a, b"two")
    a.shutdown(socket.SHUT_WR)
    assert read_frame(b, MiB) == b"one"
    assert read_frame(b, MiB) == b"two"
    assert read_frame(b, MiB) is None


def test_the_buffer_must_hold_a_length(pair) -> None:
    with pytest.raises(ValueError):
        FrameReader(pair[0], MiB, buffer_size=3)


def test_read_buffered_frame_returns_only_frames_that_have_arrived_whole() -> None:
    a, b = socket.socketpair()
    with a, b:  # blocking sockets without a timeout, as the JournalNode's
        reader = FrameReader(b, 1 * MiB, buffer_size=1024)
        assert reader.read_buffered_frame() is None  # nothing buffered: no receive
        second = frame(b"second")
        a.sendall(frame(b"first") + frame(b"") + second[:5])
        assert reader.read_frame() == b"first"
        assert reader.read_buffered_frame() == b""
        assert reader.read_buffered_frame() is None  # part of a frame: never waits
        a.sendall(second[5:])
        # The rest has arrived (socketpair: in b's buffer once sendall returns).
        assert reader.read_buffered_frame() == b"second"
        a.sendall(frame(b"x" * 2000))  # bigger than the buffer: read_frame's to read
        assert reader.read_frame() == b"x" * 2000
        a.sendall(struct.pack(">i", -1))
        assert reader.read_buffered_frame() is None  # invalid: read_frame raises
        with pytest.raises(ProtocolError):
            reader.read_frame()


def test_an_http_reply_is_named_as_such(pair) -> None:
    """b"HTTP" read as a frame length is 1213486160 (issue 33 item 13): an HTTP port."""
    a, b = pair
    a.sendall(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n")
    with pytest.raises(HttpReplyError):
        FrameReader(b, 1 * MiB).read_frame()
    error = call_failed("jn1", 8480, HttpReplyError("Invalid frame length 1213486160"))
    assert str(error) == "jn1:8480 is an HTTP port, not a JournalNode RPC port"
    assert type(error) is IOException
