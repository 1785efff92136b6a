"""Frames on sockets, and the one place sockets are made.

Both the JournalNode RPC server and the client proxy create their sockets
only through a socket factory, so that transport security (mutual TLS) can
be added by passing another factory, without touching either. The factories themselves
are :mod:`hadoop_qjm.common.net`'s (re-exported here), so that the TLS ones in
``common.security`` can build on them; ``hadoop_qjm.qjournal.protocol.sockets`` re-exports
this module.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Callable

from hadoop_qjm.common.exceptions import AccessControlException, IOException
from hadoop_qjm.common.net import (
    ClientSocketFactory,
    ClientSocketFactoryLike,
    PlainSocketFactory,
    ServerSocketFactory,
    ServerSocketFactoryLike,
    as_client_socket_factory,
    as_server_socket_factory,
)
from hadoop_qjm.common.security.tls_connection import TlsConnection
from hadoop_qjm.ipc.connection_context import decode_connection_context, is_connection_context
from hadoop_qjm.ipc.exceptions import ProtocolError
from hadoop_qjm.ipc.frames import (
    FRAME_HEADER,
    HTTP_REPLY_FRAME_LENGTH,
    HttpReplyError,
    frame_length,
)

__all__ = [
    "CLIENT_NOT_CONFIGURED_FOR_TLS",
    "FRAME_READER_BUFFER_SIZE",
    "TLS_PROBE_TIMEOUT_S",
    "ServerSocketFactory",
    "ServerSocketFactoryLike",
    "ClientSocketFactory",
    "ClientSocketFactoryLike",
    "FrameReader",
    "HTTP_REPLY_FRAME_LENGTH",
    "HttpReplyError",
    "PlainSocketFactory",
    "as_client_socket_factory",
    "as_server_socket_factory",
    "call_failed",
    "dropped_by_tls_server",
    "read_frame",
    "sends_without_waiting",
    "server_speaks_tls",
    "write_frame",
]

# Largest single recv(): a frame's bytes are gathered as they arrive, never
# allocated up front from the length the peer claims. Below glibc's mmap threshold
# (128 KiB), so that each recv's buffer does not cost an mmap and a munmap.
_RECV_CHUNK = 64 * 1024
#: FrameReader's fixed buffer: a frame up to this size (length prefix included)
#: usually arrives with one recv_into and no other allocation than its payload —
#: a journal() batch of 1000 ops of 100 bytes (~100 KB) included.
FRAME_READER_BUFFER_SIZE = 256 * 1024


def call_failed(host: str, port: int, error: BaseException) -> IOException:
    """The IOException of a call to ``host:port`` whose reply could not be read."""
    if isinstance(error, HttpReplyError):
        return IOException(f"{host}:{port} is an HTTP port, not a JournalNode RPC port")
    return IOException(f"Call to {host}:{port} failed: {error}")


#: What a plain client's call says when the server it reached speaks TLS
#: (docs/security.md, "What a client sees"): the keys that turn TLS on for a client.
CLIENT_NOT_CONFIGURED_FOR_TLS = (
    "the server speaks TLS but this client is not configured for it: set "
    "hadoop.security.authentication=certificate and dfs.http.policy=HTTPS_ONLY "
    "(core-site.xml, hdfs-site.xml) and ssl.client.keystore.location and "
    "ssl.client.truststore.location in ssl-client.xml"
)
#: The longest the probe of :func:`server_speaks_tls` waits (for its connect, or the answer).
TLS_PROBE_TIMEOUT_S = 2.0
# The first bytes of a TLS record from a server: handshake (its ServerHello) or alert,
# then the major version 3 (SSL 3.0 / TLS 1.x, RFC 8446 §5.1).
_TLS_RECORD_TYPES = (0x15, 0x16)


def server_speaks_tls(host: str, port: int, timeout_s: float = TLS_PROBE_TIMEOUT_S) -> bool:
    """Whether ``host:port`` answers a TLS ClientHello with a TLS record.

    A one-off probe on a new connection: nothing is verified and no certificate is sent;
    the connection is closed once the server's first bytes are seen. A plain Thrift server
    reads the hello as a frame far over its limit and drops the connection: False, as for
    a refused connection or no answer within ``timeout_s``.
    """
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    tls.check_hostname = False
    tls.verify_mode = ssl.CERT_NONE
    outgoing = ssl.MemoryBIO()
    session = tls.wrap_bio(ssl.MemoryBIO(), outgoing)
    with contextlib.suppress(ssl.SSLWantReadError):
        session.do_handshake()  # writes the ClientHello to ``outgoing``, then wants the answer
    try:
        with PlainSocketFactory().connect(host, port, timeout_s) as sock:
            sock.sendall(outgoing.read())
            first = _recv_exact(sock, 2, eof_ok=True)
    except OSError:  # ProtocolError included
        return False
    return len(first) == 2 and first[0] in _TLS_RECORD_TYPES and first[1] == 3


def dropped_by_tls_server(
    host: str, port: int, error: BaseException | None, timeout_s: float | None
) -> AccessControlException | None:
    """The error of a call whose new connection the server reset or closed before
    answering anything (``error``: the OSError, None for a clean close) — when the server
    turns out to speak TLS (:func:`server_speaks_tls`); else None.

    A TLS server reads a plain client's request as a broken handshake and drops the
    connection, which the client sees as "Connection reset by peer": this says why, in
    one sentence naming the keys. Only a plain client's calls ask, and only after such a
    drop, so the probe costs a working call nothing. AccessControlException, as Hadoop's
    client raises when it cannot authenticate the way the server asks (and a failover
    proxy does not retry it: every NameNode of the cluster speaks the same).
    """
    if error is not None and not isinstance(
        error, (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)
    ):
        return None
    probe_s = TLS_PROBE_TIMEOUT_S if timeout_s is None else min(timeout_s, TLS_PROBE_TIMEOUT_S)
    if not server_speaks_tls(host, port, probe_s):
        return None
    return AccessControlException(f"Call to {host}:{port} failed: {CLIENT_NOT_CONFIGURED_FOR_TLS}")


def _recv_exact(sock: socket.socket, size: int, *, eof_ok: bool) -> bytes:
    """``size`` bytes; ``b""`` if ``eof_ok`` and the peer closed before the first one."""
    chunks: list[bytes] = []
    remaining = size
    while remaining:
        chunk = sock.recv(min(remaining, _RECV_CHUNK))
        if not chunk:
            if eof_ok and remaining == size:
                return b""
            raise ProtocolError(
                f"connection closed in the middle of a frame ({size - remaining} of {size} bytes)"
            )
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(sock: socket.socket, max_frame_size: int) -> bytes | None:
    """Read one frame's payload; ``None`` if the peer closed cleanly between frames.

    A length outside ``[0, max_frame_size]`` raises :class:`ProtocolError`
    before anything is allocated for it (Hadoop's Server rejects such a
    length the same way, then drops the connection). Reads exactly the
    frame's bytes; :class:`FrameReader` reads a connection's frames with
    fewer system calls.
    """
    header = _recv_exact(sock, FRAME_HEADER.size, eof_ok=True)
    if not header:
        return None
    size = frame_length(header, 0, max_frame_size)
    return _recv_exact(sock, size, eof_ok=False)


class FrameReader:
    """Reads the frames of one connection, usually with one ``recv_into`` per frame.

    What arrives goes into a fixed buffer of ``buffer_size`` bytes, so a small
    frame's length prefix and payload come in with one system call instead of
    two, and bytes of a following frame (a pipelining peer) wait there for the
    next :meth:`read_frame`. A frame too big for the buffer is gathered as it
    arrives, like :func:`read_frame`: memory follows the bytes received,
    never the length claimed. Not thread-safe: one reader per connection,
    used by one thread at a time.

    ``on_context``: the connection's first frame may be a connection context
    (:mod:`hadoop_qjm.ipc.connection_context`); ``on_context`` gets the user it claims,
    and :meth:`read_frame` returns the frame after it.
    """

    def __init__(
        self,
        sock: socket.socket,
        max_frame_size: int,
        buffer_size: int = FRAME_READER_BUFFER_SIZE,
        on_context: Callable[[str], None] | None = None,
    ) -> None:
        if buffer_size < FRAME_HEADER.size:
            raise ValueError(f"buffer_size {buffer_size} cannot hold a frame length")
        self.sock = sock
        self.max_frame_size = max_frame_size
        self._buf = bytearray(buffer_size)
        self._view = memoryview(self._buf)
        self._start = 0  # the first byte not yet returned
        self._end = 0  # the end of the bytes received
        if on_context is not None:
            # Only the first frame may be a connection context: the check replaces
            # read_frame until then, and costs the calls after it nothing.
            self._on_context = on_context
            self.read_frame = self._read_first_frame  # type: ignore[method-assign]

    def _read_first_frame(self) -> bytes | None:
        self.__dict__.pop("read_frame", None)  # the class's read_frame from now on
        payload = FrameReader.read_frame(self)
        if payload is not None and is_connection_context(payload):
            self._on_context(decode_connection_context(payload))
            payload = FrameReader.read_frame(self)
        return payload

    @property
    def buffered(self) -> int:
        """Bytes received but not yet returned in a frame."""
        return self._end - self._start

    def read_frame(self) -> bytes | None:
        """The next frame's payload; ``None`` if the peer closed cleanly between frames.

        Raises :class:`ProtocolError` like :func:`read_frame`.
        """
        if not self._fill(FRAME_HEADER.size, eof_ok=True):
            return None
        size = frame_length(self._buf, self._start, self.max_frame_size)
        self._start += FRAME_HEADER.size
        if size <= len(self._buf):
            self._fill(size, eof_ok=False)
            start = self._start
            self._start = start + size
            return bytes(self._view[start : start + size])
        # Bigger than the buffer: what is here, then the rest as it arrives.
        head = bytes(self._view[self._start : self._end])
        self._start = self._end = 0
        try:
            rest = _recv_exact(self.sock, size - len(head), eof_ok=False)
        except ProtocolError:
            raise ProtocolError(
                f"connection closed in the middle of a frame ({len(head)}+ of {size} bytes)"
            ) from None
        return head + rest

    def read_buffered_frame(self) -> bytes | None:
        """The next frame if all of it has arrived, else None, never waiting.

        From the buffer; if only part of a frame is there, after one non-blocking
        receive (a plain socket only). None also for a frame bigger than the buffer or
        with an invalid length: :meth:`read_frame` then reads it, or raises. The
        JournalNode serves a pipelining writer's batches that arrived together as one
        group (``QJournalProtocolDispatcher.process_many``).
        """
        start, end = self._start, self._end
        if end - start < FRAME_HEADER.size or not self._frame_buffered(start, end):
            if start == end or not self._receive_now():
                return None
            start, end = self._start, self._end
            if end - start < FRAME_HEADER.size or not self._frame_buffered(start, end):
                return None
        return self.read_frame()  # all of it is here: no receive

    def _frame_buffered(self, start: int, end: int) -> bool:
        (size,) = FRAME_HEADER.unpack_from(self._buf, start)
        return 0 <= size <= self.max_frame_size and end - start - FRAME_HEADER.size >= size

    def _receive_now(self) -> bool:
        """Whatever more has arrived, without waiting, into the space after the buffered
        bytes; False if nothing came (or no space, or an error :meth:`read_frame` will
        meet again). Never on an SSLSocket (no flags) or a socket with a timeout (Python
        waits for it to be readable first)."""
        sock = self.sock
        if (
            self._end == len(self._buf)
            or isinstance(sock, ssl.SSLSocket)
            or sock.gettimeout() not in (None, 0.0)
        ):
            return False
        try:
            received = sock.recv_into(self._view[self._end :], 0, socket.MSG_DONTWAIT)
        except OSError:  # BlockingIOError: nothing yet; anything else: read_frame sees it
            return False
        self._end += received
        return received > 0

    def _fill(self, need: int, *, eof_ok: bool) -> bool:
        """Have ``need`` (≤ the buffer size) bytes buffered; False at a clean EOF if ``eof_ok``."""
        if self._start == self._end:
            self._start = self._end = 0
        while self._end - self._start < need:
            if len(self._buf) - self._start < need:
                # The frame would run past the end: move what we have to the front.
                have = self._end - self._start
                self._buf[:have] = bytes(self._view[self._start : self._end])
                self._start, self._end = 0, have
            received = self.sock.recv_into(self._view[self._end :])
            if not received:
                if eof_ok and self._start == self._end:
                    return False
                raise ProtocolError(
                    f"connection closed in the middle of a frame ({self._end - self._start} "
                    f"bytes of {need} received)"
                )
            self._end += received
        return True


def sends_without_waiting(sock: object) -> bool:
    """Whether ``sock.send(data, MSG_DONTWAIT)`` never waits: a plain blocking socket
    without a timeout (Python would wait for a socket with one to be writable first), or
    a server's TLS connection over one (:class:`TlsConnection`; an SSLSocket takes no
    flags)."""
    return (type(sock) is socket.socket or type(sock) is TlsConnection) and (
        sock.gettimeout() is None  # type: ignore[attr-defined]
    )


def write_frame(sock: socket.socket, payload: bytes) -> None:
    """Send one frame: the length prefix, then ``payload``."""
    sock.sendall(FRAME_HEADER.pack(len(payload)) + payload)
