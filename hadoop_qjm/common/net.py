"""Socket factories: the one place the RPC servers and clients make their sockets
(Hadoop's ``org.apache.hadoop.net``: ``StandardSocketFactory``), and java.net's errors
(:mod:`hadoop_qjm.common.net_exceptions`, re-exported here).

:class:`PlainSocketFactory` is plain TCP; ``common.security.tls_sockets`` builds the
mutual-TLS factories on it. Frames on these sockets are :mod:`hadoop_qjm.ipc.sockets`'.
"""

from __future__ import annotations

import socket
from collections.abc import Callable
from typing import Protocol

from hadoop_qjm.common.net_exceptions import (
    BindException,
    ConnectException,
    SocketTimeoutException,
    UnknownHostException,
)

__all__ = [
    "BindException",
    "ClientSocketFactory",
    "ClientSocketFactoryLike",
    "ConnectException",
    "PlainSocketFactory",
    "ServerSocketFactory",
    "ServerSocketFactoryLike",
    "SocketTimeoutException",
    "UnknownHostException",
    "as_client_socket_factory",
    "as_server_socket_factory",
]


class ServerSocketFactory(Protocol):
    """Makes a server's listening socket and prepares each accepted connection."""

    def listen(self, host: str, port: int, backlog: int) -> socket.socket:
        """A bound, listening socket; raise BindException if the address is unusable."""
        ...

    def wrap_accepted(self, conn: socket.socket) -> socket.socket:
        """The socket to serve ``conn`` on (e.g. after a TLS handshake).

        Called in the connection's own thread, so a slow handshake never
        blocks the accept loop.
        """
        ...

    def peer_identity(self, sock: socket.socket) -> str | None:
        """Who is at the other end of ``sock`` (a socket :meth:`wrap_accepted` returned):
        the verified certificate's identity, or None (plain TCP)."""
        ...


class ClientSocketFactory(Protocol):
    """Makes a client's connected socket."""

    def connect(self, host: str, port: int, timeout_s: float | None) -> socket.socket:
        """A socket connected to ``host:port``; raise OSError on failure."""
        ...


class PlainSocketFactory:
    """Plain TCP with TCP_NODELAY on both sides.

    The JournalNode sets ``ipc.server.tcpnodelay`` (JournalNodeRpcServer):
    each call is one small request whose latency is the writer's commit
    latency, so Nagle's delay must not apply.
    """

    def listen(self, host: str, port: int, backlog: int = 128) -> socket.socket:
        bind_host = host or "0.0.0.0"
        try:
            infos = socket.getaddrinfo(
                bind_host, port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE
            )
            family, type_, proto, _, addr = infos[0]
            sock = socket.socket(family, type_, proto)
        except OSError as e:
            raise BindException(
                f"Problem binding to [{bind_host}:{port}] java.net.BindException: {e}"
            ) from e
        try:
            # Like Java's ServerSocket: a restarted daemon can rebind its port
            # while old connections sit in TIME_WAIT.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(addr)
            sock.listen(backlog)
        except OSError as e:
            sock.close()
            raise BindException(
                f"Problem binding to [{bind_host}:{port}] java.net.BindException: {e.strerror or e}"
            ) from e
        return sock

    def wrap_accepted(self, conn: socket.socket) -> socket.socket:
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def peer_identity(self, sock: socket.socket) -> str | None:
        return None  # plain TCP proves nothing about the peer

    def connect(self, host: str, port: int, timeout_s: float | None) -> socket.socket:
        sock = socket.create_connection((host, port), timeout=timeout_s)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return sock


#: A server socket factory, or just a ``(host, port) -> listening socket`` callable
#: (the form the JournalNode's HTTP server takes).
ServerSocketFactoryLike = ServerSocketFactory | Callable[[str, int], socket.socket]
#: A client socket factory, or just a ``(host, port, timeout_s) -> socket`` callable.
ClientSocketFactoryLike = ClientSocketFactory | Callable[[str, int, float | None], socket.socket]


class _CallableServerSocketFactory(PlainSocketFactory):
    def __init__(self, listen: Callable[[str, int], socket.socket]) -> None:
        self._listen = listen

    def listen(self, host: str, port: int, backlog: int = 128) -> socket.socket:
        return self._listen(host, port)


class _CallableClientSocketFactory(PlainSocketFactory):
    def __init__(self, connect: Callable[[str, int, float | None], socket.socket]) -> None:
        self._connect = connect

    def connect(self, host: str, port: int, timeout_s: float | None) -> socket.socket:
        return self._connect(host, port, timeout_s)


def as_server_socket_factory(factory: ServerSocketFactoryLike | None) -> ServerSocketFactory:
    """``factory`` as a :class:`ServerSocketFactory` (``None``: plain TCP)."""
    if factory is None:
        return PlainSocketFactory()
    if hasattr(factory, "listen"):
        return factory  # type: ignore[return-value]
    return _CallableServerSocketFactory(factory)  # type: ignore[arg-type]


def as_client_socket_factory(factory: ClientSocketFactoryLike | None) -> ClientSocketFactory:
    """``factory`` as a :class:`ClientSocketFactory` (``None``: plain TCP)."""
    if factory is None:
        return PlainSocketFactory()
    if hasattr(factory, "connect"):
        return factory  # type: ignore[return-value]
    return _CallableClientSocketFactory(factory)  # type: ignore[arg-type]
