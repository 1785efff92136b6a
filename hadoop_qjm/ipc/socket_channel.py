"""SocketChannel: the blocking transport of a QJournalProtocolProxy (and of the NameNode's
and ZKFC's RPC clients): one framed socket to ``host:port``, connected lazily and again
after a failure, one call at a time.

A call is never resent — after a broken connection nobody knows whether the server
executed it — unless its caller says it changes nothing (``resend_if_dropped``, the
proxy's ``RESENT_READS``) and the connection was one kept from an earlier call, found
closed by the server before any reply (it restarted since; issue 33).

The connect/timeout/TLS part of every RPC client (``qjournal.client.socket_channel``
re-exports it).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import socket
import ssl
import struct
import threading
from typing import Protocol

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.net_exceptions import ConnectException, SocketTimeoutException
from hadoop_qjm.ipc.connection_context import connection_context_frame
from hadoop_qjm.ipc.exceptions import ProtocolError
from hadoop_qjm.ipc.frames import DEFAULT_MAX_FRAME_SIZE, frame
from hadoop_qjm.ipc.sockets import (
    ClientSocketFactory,
    ClientSocketFactoryLike,
    FrameReader,
    PlainSocketFactory,
    as_client_socket_factory,
    call_failed,
    dropped_by_tls_server,
    write_frame,
)
from hadoop_qjm.ipc.tls_session import TlsSession

__all__ = [
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_TIMEOUT_S",
    "HADOOP_USER_NAME",
    "RpcChannel",
    "SocketChannel",
    "close_socket",
    "connect",
    "login_user_name",
]

#: The environment variable that names the user a client claims without TLS (Hadoop's).
HADOOP_USER_NAME = "HADOOP_USER_NAME"


def login_user_name() -> str:
    """The user this process claims over plain TCP (Hadoop's simple authentication):
    ``HADOOP_USER_NAME`` if set, else the OS user it runs as."""
    return os.environ.get(HADOOP_USER_NAME, "").strip() or getpass.getuser()


#: ``ipc.client.connect.timeout`` (20 s).
DEFAULT_CONNECT_TIMEOUT_S = 20.0
#: How long a call waits for its reply. Hadoop's IPC client waits forever and
#: leaves timing out to QuorumCall; a bound here frees the logger's executor
#: from a JournalNode that stopped answering.
DEFAULT_TIMEOUT_S = 60.0

#: How a kept connection the server closed shows up on the next call.
_DROPPED = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class RpcChannel(Protocol):
    """Carries one request payload to a server and brings back its reply payload.

    Raises IOException if the exchange failed. :class:`SocketChannel` is the
    real one; an in-process transport can hand payloads straight to a
    ``QJournalProtocolDispatcher``.
    """

    def call(self, payload: bytes) -> bytes: ...

    def reset(self) -> None:
        """Forget the connection (the next call makes a new one)."""
        ...

    def close(self) -> None: ...


_TIMEVAL = struct.Struct("@ll")


def connect(
    host: str,
    port: int,
    factory: ClientSocketFactory,
    timeout_s: float | None,
    *,
    tls_over_memory: bool = False,
) -> tuple[socket.socket, TlsSession | None]:
    """A socket connected to ``host:port`` by ``factory`` within ``timeout_s``; every RPC
    client connects here. ConnectException if it cannot.

    ``tls_over_memory`` (the pipelined client): a TLS factory's connection is plain TCP
    and a :class:`~hadoop_qjm.ipc.tls_session.TlsSession` over it, handshaken here with
    the factory's context (the second value; None for a plain connection).
    """
    context = getattr(factory, "context", None) if tls_over_memory else None
    tls = None
    try:
        if isinstance(context, ssl.SSLContext):
            sock = PlainSocketFactory().connect(host, port, timeout_s)
            tls = TlsSession(context, host.strip("[]"))
            try:
                tls.handshake(sock, timeout_s)
            except BaseException:
                sock.close()
                raise
        else:
            sock = factory.connect(host, port, timeout_s)
    except OSError as e:
        raise ConnectException(f"Call to {host}:{port} failed on connection exception: {e}") from e
    return sock, tls


def close_socket(sock: socket.socket) -> None:
    """Shut ``sock`` down (which wakes a thread blocked in recv() on it), then close it."""
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def _set_call_timeout(sock: socket.socket, timeout_s: float | None) -> None:
    """Bound each send and receive on ``sock`` by ``timeout_s`` (None: no bound).

    A plain TCP socket stays blocking, with the kernel's SO_RCVTIMEO / SO_SNDTIMEO
    (a timeout then raises BlockingIOError): Python's own socket timeout would poll()
    before every send and receive, two more system calls on each call's path. The
    bound applies to each wait, as Hadoop's ``ipc.client.rpc-timeout.ms`` does (a peer
    that keeps reading, however slowly, keeps a large send going). Other sockets (TLS)
    use Python's timeout.
    """
    if type(sock) is not socket.socket or timeout_s is None or timeout_s <= 0:
        sock.settimeout(timeout_s)
        return
    sock.settimeout(None)
    seconds = int(timeout_s)
    micros = int((timeout_s - seconds) * 1_000_000)
    if seconds == 0:
        micros = max(micros, 1)  # {0, 0} would mean "no timeout"
    timeval = _TIMEVAL.pack(seconds, micros)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, timeval)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, timeval)


class SocketChannel:
    """A lazily (re)connected framed socket to ``host:port``."""

    def __init__(
        self,
        host: str,
        port: int,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        connect_timeout_s: float | None = DEFAULT_CONNECT_TIMEOUT_S,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        socket_factory: ClientSocketFactoryLike | None = None,
        user: str | None = None,
    ) -> None:
        self.host = host
        #: Who this client says it is in each connection's context (None: the login user,
        #: :func:`login_user_name`, read when a connection is made).
        self.user = user
        self.port = port
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.max_frame_size = max_frame_size
        self._socket_factory: ClientSocketFactory = as_client_socket_factory(socket_factory)
        self._sock_lock = threading.Lock()  # guards _sock and _closed, never held across I/O
        self._sock: socket.socket | None = None
        self._reader: FrameReader | None = None  # reads _sock's replies
        self._answered = False  # whether _sock brought a reply yet
        self._context: bytes | None = None  # the connection context, due before a call
        self._plain = getattr(self._socket_factory, "context", None) is None
        self._closed = False

    def _connect(self) -> tuple[socket.socket, FrameReader]:
        with self._sock_lock:
            if self._closed:
                raise IOException(f"Connection to {self.host}:{self.port} is closed")
            if self._sock is not None and self._reader is not None:
                return self._sock, self._reader
        sock, _ = connect(self.host, self.port, self._socket_factory, self.connect_timeout_s)
        _set_call_timeout(sock, self.timeout_s)
        reader = FrameReader(sock, self.max_frame_size)
        with self._sock_lock:
            if self._closed:  # close() ran while we were connecting
                sock.close()
                raise IOException(f"Connection to {self.host}:{self.port} is closed")
            self._sock, self._reader = sock, reader
            self._answered = False
            self._context = connection_context_frame(self.user or login_user_name())
        return sock, reader

    def call(self, payload: bytes, *, resend_if_dropped: bool = False) -> bytes:
        """The reply to ``payload``. ``resend_if_dropped`` (a call that changes nothing):
        a connection that answered before and is found closed by the server before any
        reply (it restarted) gets the call once more on a new connection."""
        with self._sock_lock:
            kept = resend_if_dropped and self._sock is not None and self._answered
        sock, reader = self._connect()
        try:
            context, self._context = self._context, None
            if context is None:
                write_frame(sock, payload)
            else:  # the new connection's context, in the same send as its first call
                sock.sendall(context + frame(payload))
            reply = reader.read_frame()
        except (TimeoutError, BlockingIOError) as e:  # BlockingIOError: SO_RCVTIMEO passed
            self.reset()
            raise SocketTimeoutException(
                f"Call to {self.host}:{self.port} timed out after {self.timeout_s} s"
            ) from e
        except OSError as e:  # ProtocolError included
            self.reset()
            if kept and isinstance(e, _DROPPED):
                return self.call(payload)
            raise self._dropped_unanswered(e) or call_failed(self.host, self.port, e) from e
        if reply is None:
            self.reset()
            if kept:
                return self.call(payload)
            error = ProtocolError("connection closed by the server")
            raise self._dropped_unanswered(None) or IOException(
                f"Call to {self.host}:{self.port} failed: {error}"
            ) from error
        self._answered = True
        return reply

    def _dropped_unanswered(self, error: OSError | None) -> IOException | None:
        """Why a plain connection was dropped before its first reply, when the server
        speaks TLS (:func:`dropped_by_tls_server`); None otherwise."""
        if not self._plain or self._answered:
            return None
        return dropped_by_tls_server(self.host, self.port, error, self.connect_timeout_s)

    def reset(self) -> None:
        with self._sock_lock:
            sock, self._sock, self._reader = self._sock, None, None
        if sock is not None:
            close_socket(sock)

    def close(self) -> None:
        with self._sock_lock:
            self._closed = True
        self.reset()
