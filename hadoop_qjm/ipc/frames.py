"""Frames, purely: bytes in, frames out (TFramedTransport: a 4-byte big-endian length,
then that many bytes of payload).

The one place a frame's length is read and checked. :class:`FrameDecoder` is fed whatever
a socket (or a TLS session) delivered and hands out each complete frame, as h11's receive
buffer hands out lines; the NameNode's server and the pipelined client feed one per
connection, the blocking :class:`~hadoop_qjm.ipc.sockets.FrameReader` reads lengths with
:func:`frame_length`. No sockets or threads here (a pure module, under the purity test).
"""

from __future__ import annotations

import struct

from hadoop_qjm.ipc.exceptions import ProtocolError

__all__ = [
    "DEFAULT_MAX_FRAME_SIZE",
    "FRAME_HEADER",
    "HTTP_REPLY_FRAME_LENGTH",
    "FrameDecoder",
    "HttpReplyError",
    "check_frame_length",
    "frame",
    "frame_length",
]

#: ``ipc.maximum.data.length``'s default in Hadoop (64 MiB).
DEFAULT_MAX_FRAME_SIZE = 64 * 1024 * 1024
#: A frame's length prefix.
FRAME_HEADER = struct.Struct(">i")
#: An HTTP response's first four bytes, ``HTTP``, read as a frame length: what a client
#: pointed at a JournalNode's HTTP port (8480) instead of its RPC port (8485) reads.
HTTP_REPLY_FRAME_LENGTH = int.from_bytes(b"HTTP", "big")  # 1213486160
_unpack_length = FRAME_HEADER.unpack_from


class HttpReplyError(ProtocolError):
    """The peer answered in HTTP: the address is an HTTP port, not an RPC port."""


def check_frame_length(size: int, max_frame_size: int) -> None:
    """Raise ProtocolError unless ``size`` is a frame length in ``[0, max_frame_size]``
    (HttpReplyError for an HTTP answer's ``HTTP``). Checked before anything is allocated
    for it, as Hadoop's Server checks ``ipc.maximum.data.length``."""
    if size == HTTP_REPLY_FRAME_LENGTH:
        raise HttpReplyError(f"Invalid frame length {size}: the peer answered in HTTP")
    if size < 0:
        raise ProtocolError(f"Invalid frame length {size}")
    if size > max_frame_size:
        raise ProtocolError(
            f"Requested data length {size} is longer than maximum configured RPC length "
            f"{max_frame_size}"
        )


def frame_length(data: bytes | bytearray | memoryview, pos: int, max_frame_size: int) -> int:
    """The checked length of the frame whose prefix starts at ``data[pos]``."""
    (size,) = _unpack_length(data, pos)
    if not 0 <= size <= max_frame_size or size == HTTP_REPLY_FRAME_LENGTH:
        check_frame_length(size, max_frame_size)  # raises: the check, only when it fails
    return size


def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """``payload`` with its TFramedTransport length prefix."""
    return FRAME_HEADER.pack(len(payload)) + payload


class FrameDecoder:
    """The frames of one byte stream, as its bytes arrive.

    :meth:`feed` the bytes received; :meth:`next_frame` returns the next complete frame's
    payload, or None until all of it has arrived. A bad length raises ProtocolError as
    soon as its four bytes are there (the stream is then unusable: drop it). Memory
    follows the bytes received, never the length a peer claims.
    """

    __slots__ = ("_data", "_start", "max_frame_size")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        self.max_frame_size = max_frame_size
        self._data = bytearray()
        self._start = 0  # the first byte not yet returned in a frame

    def __len__(self) -> int:
        """Bytes received and not yet returned in a frame."""
        return len(self._data) - self._start

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        if self._start:
            # Frames already returned: drop their bytes before growing the buffer.
            del self._data[: self._start]
            self._start = 0
        self._data += data

    def next_frame(self) -> bytes | None:
        start = self._start
        data = self._data
        if len(data) - start < FRAME_HEADER.size:
            return None
        (size,) = _unpack_length(data, start)
        if not 0 <= size <= self.max_frame_size or size == HTTP_REPLY_FRAME_LENGTH:
            check_frame_length(size, self.max_frame_size)  # raises, as in frame_length
        begin = start + FRAME_HEADER.size
        if len(data) - begin < size:
            return None
        self._start = begin + size
        payload = bytes(data[begin : self._start])
        if self._start == len(data):
            data.clear()
            self._start = 0
        return payload

    def frames(self) -> list[bytes]:
        """Every complete frame received so far, in order."""
        found = []
        while (payload := self.next_frame()) is not None:
            found.append(payload)
        return found
