"""The RPC server the JournalNode, the NameNode (over TLS) and the ZKFC each configure
with their dispatcher (Hadoop's ``ipc.Server``): an accept thread and one reader thread per
connection, which runs the calls of its connection itself.

The dispatcher's ``process(payload, client_ip) -> reply`` answers each frame (see
:mod:`hadoop_qjm.ipc.dispatcher`, :func:`serve_frames`); a daemon that reads its
connections another way passes its own ``serve_connection`` (the JournalNode's, which
answers a writer's pipelined batches together).
"""

from __future__ import annotations

import contextlib
import logging
import select
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hadoop_qjm.common.exceptions import IllegalStateException
from hadoop_qjm.common.net import (
    ServerSocketFactory,
    ServerSocketFactoryLike,
    as_server_socket_factory,
)
from hadoop_qjm.common.security.caller_identity import CallerIdentity
from hadoop_qjm.common.security.tls_connection import TlsConnection
from hadoop_qjm.ipc import call_context
from hadoop_qjm.ipc.exceptions import ProtocolError
from hadoop_qjm.ipc.frames import DEFAULT_MAX_FRAME_SIZE
from hadoop_qjm.ipc.rpc_metrics import CallCounts, RpcMetrics
from hadoop_qjm.ipc.sockets import FrameReader, write_frame

__all__ = ["DEFAULT_HANDLER_COUNT", "ConnectionServer", "Server", "serve_frames"]

LOG = logging.getLogger(__name__)

#: ``dfs.journalnode.handler.count``'s default; a count ≤ 0 falls back to it.
DEFAULT_HANDLER_COUNT = 5

#: ``serve_connection(sock, reader, client_ip)``: answer the frames ``reader`` reads off
#: ``sock`` (one accepted connection, its TLS handshake done) until the peer closes it;
#: raises ProtocolError (the connection is dropped) or OSError. It runs in the
#: connection's reader thread, under the connection's call context.
ConnectionServer = Callable[[socket.socket, FrameReader, str], None]


def serve_frames(
    process: Callable[[bytes, str], bytes], sock: socket.socket, reader: FrameReader, client_ip: str
) -> None:
    """Answer each frame of one connection in turn with ``process(payload, client_ip)``,
    until the peer closes it (the default ``serve_connection``)."""
    while True:
        payload = reader.read_frame()
        if payload is None:
            return
        write_frame(sock, process(payload, client_ip))


#: The calls' clock: monotonic, and the cheapest of Python's ns clocks.
_clock = time.perf_counter_ns


class _CountingFrameReader:
    """A connection's FrameReader that counts its calls into ``counts`` (RpcMetrics): a
    call runs from its frame's read to the next blocking read, when its reply is out;
    frames read together (``read_buffered_frame``) all count the group's time."""

    __slots__ = ("_reader", "_counts", "_since", "_pending")

    def __init__(self, reader: FrameReader, counts: CallCounts) -> None:
        self._reader = reader
        self._counts = counts
        self._since = 0
        self._pending = 0

    def read_frame(self) -> bytes | None:
        pending = self._pending
        if pending:  # the calls read before are done (finish(), inlined: the hot path)
            counts = self._counts
            counts.calls += pending
            counts.processing_ns += (_clock() - self._since) * pending
            self._pending = 0
        payload = self._reader.read_frame()
        if payload is not None:
            self._since = _clock()
            self._pending = 1
        return payload

    def read_buffered_frame(self) -> bytes | None:
        payload = self._reader.read_buffered_frame()
        if payload is not None:
            self._pending += 1
        return payload

    def finish(self) -> None:
        """Count the calls read since the last blocking read."""
        pending = self._pending
        if pending:
            counts = self._counts
            counts.calls += pending
            counts.processing_ns += (_clock() - self._since) * pending
            self._pending = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)


@dataclass
class _Connection:
    sock: socket.socket
    peer: str
    thread: threading.Thread | None = field(default=None)
    #: False once the connection is closed (read without a lock: a flag set once).
    open: bool = True

    def is_open(self) -> bool:
        """Whether the connection is still open: not closed here, and its peer has not
        closed or reset its end. The kernel knows of a peer's FIN the moment it arrives,
        before this connection's reader thread wakes to read it: a caller asking right
        after the peer closed (``hdfs namenode -rollingUpgrade rollback`` run as the last
        NameNode stops) sees it gone, not still connected."""
        if not self.open:
            return False
        try:
            fd = self.sock.fileno()
        except (OSError, ValueError):
            return False
        if fd < 0:
            return False
        poller = select.poll()
        poller.register(fd, _PEER_GONE)
        gone = bool(poller.poll(0))
        return self.open and not gone


#: poll() events that say a connection's peer is gone: its FIN (POLLRDHUP, Linux), a
#: hang-up or an error (a reset).
_PEER_GONE = getattr(select, "POLLRDHUP", 0x2000) | select.POLLHUP | select.POLLERR


class Server:
    """The IPC server (Hadoop's ``ipc.Server``): an accept thread and one reader thread per
    connection, each call handed to ``dispatcher`` (its ``process(payload, client_ip)``);
    the JournalNode, the NameNode's TLS port and the ZKFC configure one with their own RPC
    tables, and the JournalNode with its own ``serve_connection`` (:data:`ConnectionServer`;
    default :func:`serve_frames` over the dispatcher).

    Binds in the constructor (a busy port fails here with BindException, as in Hadoop),
    serves after :meth:`start`, and :meth:`stop` closes the listening socket and every
    connection and joins every thread. Frames longer than ``max_frame_size``
    (``ipc.maximum.data.length``) or undecodable input drop that one connection; the server
    keeps serving everyone else.

    ``socket_factory`` makes the sockets: a :class:`~hadoop_qjm.common.net.ServerSocketFactory`,
    or a plain ``(host, port) -> listening socket`` callable (as the HTTP server takes);
    ``None`` is plain TCP. A factory that authenticates its peers (mutual TLS) names each
    connection's client, which the calls see as ``call_context.remote_user()``; the
    caller's user and groups (``call_context.remote_ugi()``) come from ``caller_identity``
    (default: the CN, groups of this host) over TLS, else from the connection context the
    client sends before its first call.
    ``handler_count`` (≤ 0: :data:`DEFAULT_HANDLER_COUNT`) is what the dispatcher's handler
    slots were made for; the server itself runs every connection's calls in its reader.
    """

    def __init__(
        self,
        dispatcher: Any,
        bind_host: str = "0.0.0.0",
        port: int = 8485,
        handler_count: int = DEFAULT_HANDLER_COUNT,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        socket_factory: ServerSocketFactoryLike | None = None,
        *,
        serve_connection: ConnectionServer | None = None,
        caller_identity: CallerIdentity | None = None,
        log: logging.Logger = LOG,
    ) -> None:
        self.dispatcher = dispatcher
        self.caller_identity = caller_identity or CallerIdentity()
        self._serve_connection: ConnectionServer = serve_connection or self._serve_frames
        self.handler_count = handler_count if handler_count > 0 else DEFAULT_HANDLER_COUNT
        self.max_frame_size = max_frame_size
        self._socket_factory: ServerSocketFactory = as_server_socket_factory(socket_factory)
        self._log = log
        self._lock = threading.Lock()
        self._connections: list[_Connection] = []
        # Every reader thread not yet known to have ended: a reader leaves
        # _connections just before its thread ends, and stop() joins it anyway.
        self._readers: list[threading.Thread] = []
        self._stopped = threading.Event()
        self._accept_thread: threading.Thread | None = None
        log.info("RPC server is binding to %s:%d", bind_host, port)
        self._listener = self._socket_factory.listen(bind_host, port, 128)
        self._address: tuple[str, int] = self._listener.getsockname()[:2]
        # Wakes the accept loop on stop(): closing a socket another thread is
        # blocked on does not reliably wake it.
        self._wake_r, self._wake_w = socket.socketpair()
        #: Hadoop's RpcMetrics (the RpcActivityForPort<port> bean).
        self.rpc_metrics = RpcMetrics(
            lambda: self.num_open_connections,
            lambda: getattr(self.dispatcher, "call_queue_length", 0),
        )
        if hasattr(dispatcher, "rpc_metrics"):
            dispatcher.rpc_metrics = self.rpc_metrics  # it counts the waits for a slot

    @property
    def port(self) -> int:
        """The bound port (the real one when constructed with port 0)."""
        return self._address[1]

    @property
    def address(self) -> tuple[str, int]:
        """The bound (host, port)."""
        return self._address

    @property
    def num_open_connections(self) -> int:
        """Connections being served (Hadoop's NumOpenConnections metric)."""
        with self._lock:
            return len(self._connections)

    def start(self) -> None:
        """Start accepting connections."""
        with self._lock:
            if self._accept_thread is not None or self._stopped.is_set():
                raise IllegalStateException(f"{type(self).__name__} already started or stopped")
            self._accept_thread = threading.Thread(
                target=self._accept_loop, name=f"IPC Server listener on {self.port}", daemon=True
            )
            self._accept_thread.start()
        self._log.info("IPC Server listener on %d: starting", self.port)

    def stop(self, timeout_s: float | None = None) -> None:
        """Stop: close the listening socket and every connection, join every thread.

        Idempotent. A call executing in the Journal finishes first (its
        reply is then dropped). ``timeout_s`` bounds each join.
        """
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
            connections = list(self._connections)
            readers = list(self._readers)
            accept_thread = self._accept_thread
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if accept_thread is not None:
            accept_thread.join(timeout_s)
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()
        for conn in connections:
            # shutdown() wakes a reader blocked in recv(); the reader closes
            # its own socket, so no other thread reuses the fd under it.
            with contextlib.suppress(OSError):
                conn.sock.shutdown(socket.SHUT_RDWR)
        current = threading.current_thread()
        for thread in readers:
            if thread is not current:
                thread.join(timeout_s)
        self._log.info("Stopped RPC server on %s:%d", *self._address)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ------------------------------------------------------------ threads

    def _accept_loop(self) -> None:
        self._listener.setblocking(False)
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while not self._stopped.is_set():
                for key, _ in selector.select():
                    if key.fileobj is self._wake_r:
                        return
                    self._accept_one()

    def _accept_one(self) -> None:
        try:
            sock, addr = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            if self._stopped.is_set():
                return
            # E.g. EMFILE: the listener stays readable, so back off instead
            # of spinning; stop() interrupts the wait.
            self._log.warning("IPC Server listener on %d: accept failed: %s", self.port, e)
            self._stopped.wait(0.1)
            return
        sock.setblocking(True)
        conn = _Connection(sock, f"{addr[0]}:{addr[1]}")
        with self._lock:
            if self._stopped.is_set():
                sock.close()
                return
            conn.thread = threading.Thread(
                target=self._serve,
                args=(conn, addr[0]),
                name=f"IPC reader {conn.peer}",
                daemon=True,
            )
            self._connections.append(conn)
            self._readers = [t for t in self._readers if t.is_alive()]
            self._readers.append(conn.thread)
            conn.thread.start()

    def _serve(self, conn: _Connection, client_ip: str) -> None:
        counts = self.rpc_metrics.counts()
        reader: _CountingFrameReader | None = None
        try:
            wrapped = self._handshake(conn.sock)
            with self._lock:
                conn.sock = wrapped
            if self._stopped.is_set():
                return
            # This thread runs every call of the connection: its identity is the
            # connection's (Hadoop's Server.getRemoteUser()).
            identify = getattr(self._socket_factory, "peer_identity", None)
            getpeercert = getattr(wrapped, "getpeercert", None)
            user = self.caller_identity.connection_user(getpeercert() if getpeercert else None)
            call_context.enter_connection(
                conn, identify(wrapped) if identify is not None else None, user
            )
            reader = _CountingFrameReader(
                FrameReader(wrapped, self.max_frame_size, on_context=user.claim), counts
            )
            self._serve_connection(wrapped, reader, client_ip)  # type: ignore[arg-type]
        except ProtocolError as e:
            self._log.warning("Dropping connection from %s: %s", conn.peer, e)
        except OSError as e:
            if not self._stopped.is_set():
                self._log.info("Connection from %s closed: %s", conn.peer, e)
        except Exception:  # one bad connection never kills the server
            self._log.exception("Unexpected error serving %s; dropping the connection", conn.peer)
        finally:
            if reader is not None:
                reader.finish()
            self.rpc_metrics.retire(counts)
            conn.open = False
            call_context.leave_connection()
            with self._lock:
                if conn in self._connections:
                    self._connections.remove(conn)
            conn.sock.close()

    def _handshake(self, sock: socket.socket) -> socket.socket:
        """The accepted socket as the factory wraps it; a TLS handshake's outcome counts
        as an authentication (RpcAuthenticationSuccesses / Failures)."""
        try:
            wrapped = self._socket_factory.wrap_accepted(sock)
        except OSError:
            if hasattr(self._socket_factory, "on_handshake_failure"):  # a TLS factory
                self.rpc_metrics.authenticated(False)
            raise
        if isinstance(wrapped, (ssl.SSLSocket, TlsConnection)):
            self.rpc_metrics.authenticated(True)
        return wrapped

    def _serve_frames(self, sock: socket.socket, reader: FrameReader, client_ip: str) -> None:
        serve_frames(self.dispatcher.process, sock, reader, client_ip)
