"""IpcServer: the selector-based RPC server, shaped like Hadoop's ``ipc.Server``; the
NameNode serves plain TCP with it.

One **listener** thread accepts connections and reads every connection's frames on a
``selectors`` selector (Hadoop's Listener and its Readers; ``ipc.server.read.threadpool.size``
is 1 by default there too). A complete frame becomes a :class:`Call` in the bounded **call
queue** (``ipc.server.handler.queue.size`` calls per handler, Hadoop's default 100). The
``handler_count`` **handler** threads (``dfs.namenode.handler.count``) take calls, run the
dispatcher and write the reply themselves when the socket takes it at once; what does not
fit is left to the **responder** thread, which writes it when the socket is writable.

A full call queue blocks the listener (Hadoop's default, ``ipc.backoff.enable=false``): no
connection is read until a handler frees a place, so clients wait rather than fail.

One call per connection is in the queue or executing at a time; frames that arrive behind
it wait in the connection, so replies go out in the order the calls came (thriftpy2 and our
``ThriftServiceCaller`` match a reply to the call by its seqid, and our clients make one
call at a time anyway). A connection with :data:`MAX_PENDING_FRAMES` frames waiting is not
read until they drain.

A handler may **postpone** its call's reply (Hadoop's ``Call.postponeResponse``): the
NameNode's handlers, with async edit logging, return once their edit is logged and let the
edit log's syncer release the reply when the edit is durable (:func:`current_call`). The
syncer hands them to the listener, which writes them between selects (Hadoop's syncer
writes them itself: here each ``send`` would give the interpreter lock to the listener and
handlers); the listener queues a select round's calls once every ready connection is read.

An oversized or undecodable frame drops that one connection (logged); every other
connection is served on. Plain TCP only: a socket factory that wraps accepted sockets (TLS)
needs the per-connection server (:class:`~hadoop_qjm.ipc.server.Server`;
``NameNodeRpcServer`` picks).
"""

from __future__ import annotations

import collections
import contextlib
import logging
import queue
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from hadoop_qjm.common.exceptions import IllegalStateException
from hadoop_qjm.common.net import ServerSocketFactory
from hadoop_qjm.common.security.caller_identity import CallerIdentity, ConnectionUser
from hadoop_qjm.ipc import call_context
from hadoop_qjm.ipc.connection_context import decode_connection_context, is_connection_context
from hadoop_qjm.ipc.exceptions import ProtocolError
from hadoop_qjm.ipc.frames import FRAME_HEADER, FrameDecoder
from hadoop_qjm.ipc.rpc_metrics import RpcMetrics

__all__ = [
    "Call",
    "DEFAULT_HANDLER_QUEUE_SIZE",
    "IpcServer",
    "MAX_PENDING_FRAMES",
    "current_call",
]

LOG = logging.getLogger(__name__)

#: ``ipc.server.handler.queue.size``'s default: call queue places per handler.
DEFAULT_HANDLER_QUEUE_SIZE = 100
#: Frames a connection may have waiting behind its call before it is no longer read.
MAX_PENDING_FRAMES = 8
_RECV_SIZE = 65536
_STOP = object()


def current_call() -> Call | None:
    """The call the calling handler thread is executing, else None (Hadoop's
    ``Server.getCurCall()``; kept in the one call context, :mod:`hadoop_qjm.ipc.call_context`)."""
    return call_context.current_call()


class _Connection:
    __slots__ = (
        "sock",
        "peer",
        "ip",
        "decoder",
        "frames",
        "busy",
        "out",
        "closed",
        "lock",
        "user",
        "context_due",
    )

    def __init__(
        self, sock: socket.socket, peer: str, ip: str, max_frame_size: int, user: ConnectionUser
    ) -> None:
        self.sock = sock
        self.user = user  # who the client is (its connection context may name it)
        self.context_due = True  # its first frame may be a connection context
        self.peer = peer
        self.ip = ip
        self.decoder = FrameDecoder(max_frame_size)
        self.frames: collections.deque[bytes] = collections.deque()
        self.busy = False  # a call of this connection is queued or executing
        self.out = bytearray()  # reply bytes the responder still has to write
        self.closed = False
        self.lock = threading.Lock()


class Call:
    """One request: its connection and payload. The reply goes out when the handler
    finished and every :meth:`postpone` was matched by a :meth:`send_response`."""

    __slots__ = ("_server", "_conn", "payload", "_waits", "_reply", "_error", "_queued_at")

    def __init__(self, server: IpcServer, conn: _Connection, payload: bytes) -> None:
        self._queued_at = time.perf_counter_ns()  # RpcQueueTime runs from here
        self._server = server
        self._conn = conn
        self.payload = payload
        self._waits = 1  # the handler's own
        self._reply: bytes | None = None
        self._error: Exception | None = None

    @property
    def remote_ip(self) -> str:
        return self._conn.ip

    def postpone(self) -> None:
        """Keep the reply until :meth:`send_response` (call from the executing handler)."""
        with self._server._calls_lock:
            self._waits += 1

    def send_response(self) -> None:
        """The postponed reply may go (from any thread)."""
        self._release(inline=False)

    def fail(self, error: Exception) -> None:
        """Answer the postponed call with ``error`` instead of its reply (from any thread)."""
        self._error = error
        self._release(inline=False)

    def abort(self) -> None:
        """The call cannot be answered: close its connection, so the client sees the
        outcome is unknown rather than waiting forever."""
        self._server._close(self._conn)

    def _release(self, inline: bool = True) -> None:
        """One wait is over; the last one sends the reply: the handler's own, at once;
        a postponed one's (the edit log's syncer), through the listener."""
        with self._server._calls_lock:
            self._waits -= 1
            ready = self._waits == 0
        if not ready or self._reply is None:
            return
        reply = self._reply
        if self._error is not None:
            try:
                reply = self._server._error_reply(self.payload, self._error)
            except Exception:  # noqa: BLE001 - cannot answer: the outcome is unknown
                LOG.exception("Cannot encode the error reply for %s", self._conn.peer)
                self.abort()
                return
        if inline:
            self._server._respond(self._conn, reply)
        else:
            self._server._respond_later(self._conn, reply)


class IpcServer:
    """Listener, call queue, handlers and responder (see the module docstring).

    ``process(payload, remote_ip) -> reply payload`` runs in a handler thread and raises
    ProtocolError for input that is not a call; ``error_reply(payload, error)`` is the
    reply that answers a (well-formed) call with ``error`` (:meth:`Call.fail`). Binds in the constructor; :meth:`stop`
    closes every socket and joins every thread.
    """

    def __init__(
        self,
        process: Callable[[bytes, str], bytes],
        error_reply: Callable[[bytes, Exception], bytes],
        socket_factory: ServerSocketFactory,
        bind_host: str,
        port: int,
        handler_count: int,
        max_frame_size: int,
        handler_queue_size: int = DEFAULT_HANDLER_QUEUE_SIZE,
        caller_identity: CallerIdentity | None = None,
    ) -> None:
        if handler_count <= 0:
            raise ValueError(f"handler count must be positive: {handler_count}")
        self._process = process
        self._error_reply = error_reply
        self.caller_identity = caller_identity or CallerIdentity()
        self.handler_count = handler_count
        self.max_frame_size = max_frame_size
        queue_size = handler_count * (
            handler_queue_size if handler_queue_size > 0 else DEFAULT_HANDLER_QUEUE_SIZE
        )
        # C-implemented queues: the calls, and one token per free place (the bound).
        self.call_queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._places: queue.SimpleQueue[None] = queue.SimpleQueue()
        for _ in range(queue_size):
            self._places.put(None)
        self._calls_lock = threading.Lock()
        self._lock = threading.Lock()
        self._connections: dict[int, _Connection] = {}
        self._ready: collections.deque[_Connection] = collections.deque()
        self._to_write: collections.deque[_Connection] = collections.deque()
        self._replies: list[tuple[_Connection, bytes]] = []
        self._replies_lock = threading.Lock()
        self._stopped = threading.Event()
        self._threads: list[threading.Thread] = []
        self._listener_thread: threading.Thread | None = None
        self._listening = False
        self._selector: selectors.BaseSelector | None = None
        self._listener = socket_factory.listen(bind_host, port, 128)
        self._listener.setblocking(False)
        self._address: tuple[str, int] = self._listener.getsockname()[:2]
        # Both ends non-blocking: a wake-up must never wait. A full wake socket already
        # wakes its thread; and while a full call queue holds the listener nobody drains
        # it, so a blocking write would stop the handler making it from freeing a place.
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._resp_wake_r, self._resp_wake_w = socket.socketpair()
        self._resp_wake_r.setblocking(False)
        self._resp_wake_w.setblocking(False)
        #: Hadoop's RpcMetrics (the RpcActivityForPort<port> bean).
        self.rpc_metrics = RpcMetrics(
            lambda: self.num_open_connections, lambda: self.call_queue_length
        )

    @property
    def address(self) -> tuple[str, int]:
        return self._address

    @property
    def num_open_connections(self) -> int:
        with self._lock:
            return len(self._connections)

    @property
    def call_queue_length(self) -> int:
        """Calls waiting for a handler (Hadoop's CallQueueLength)."""
        return self.call_queue.qsize()

    def start(self) -> None:
        with self._lock:
            if self._threads or self._stopped.is_set():
                raise IllegalStateException("IPC server already started or stopped")
            port = self._address[1]
            self._listener_thread = threading.Thread(
                target=self._listen, name=f"IPC Server listener on {port}"
            )
            self._threads.append(self._listener_thread)
            self._listening = True
            self._threads.append(
                threading.Thread(target=self._respond_loop, name=f"IPC Server Responder {port}")
            )
            for i in range(self.handler_count):
                self._threads.append(
                    threading.Thread(target=self._handle, name=f"IPC Server handler {i} on {port}")
                )
            for thread in self._threads:
                thread.daemon = True
                thread.start()

    def stop(self, timeout_s: float | None = None) -> None:
        """Close every socket and join every thread; a call executing finishes first and
        its reply is dropped. Idempotent."""
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
            threads = list(self._threads)
        self._wake(self._wake_w)
        self._wake(self._resp_wake_w)
        if self._listener_thread is not None:
            self._listener_thread.join(timeout_s)
        with self._lock:
            self._listening = False
        with self._lock:
            connections = list(self._connections.values())
        for conn in connections:
            self._close(conn)
        for _ in range(len(threads) - 2 if threads else 0):
            self.call_queue.put(_STOP)  # handlers drop what is queued, then meet these
        current = threading.current_thread()
        for thread in threads:
            if thread is not current:
                thread.join(timeout_s)
        for sock in (
            self._listener,
            self._wake_r,
            self._wake_w,
            self._resp_wake_r,
            self._resp_wake_w,
        ):
            sock.close()

    @staticmethod
    def _wake(sock: socket.socket) -> None:
        with contextlib.suppress(OSError):
            sock.send(b"x")

    # ---------------------------------------------------------------- listener

    def _listen(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._listener, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            self._selector = selector
            calls: list[Call] = []
            while not self._stopped.is_set():
                for key, _ in selector.select():
                    if self._stopped.is_set():
                        return
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is self._wake_r:
                        self._drain_wake()
                    else:
                        call = self._read(key.data)
                        if call is not None:
                            calls.append(call)
                # The round's calls are queued once every ready connection is read: a
                # handler woken by the first would otherwise take the interpreter lock
                # at the listener's next recv, and the listener wait to get it back.
                for call in calls:
                    self._enqueue(call)
                calls.clear()

    def _drain_wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_r.recv(4096)
        if self._replies:
            self._send_replies()
        while self._ready:
            conn = self._ready.popleft()
            if conn.closed:
                self._release_socket(conn)
                continue
            with conn.lock:
                if conn.closed:
                    continue
                if not conn.busy and conn.frames:
                    conn.busy = True
                    frame = conn.frames.popleft()
                else:
                    frame = None
                rearm = len(conn.frames) < MAX_PENDING_FRAMES
            if frame is not None:
                self._enqueue(Call(self, conn, frame))
            if rearm:
                with contextlib.suppress(KeyError, ValueError, OSError):
                    self._selector.register(conn.sock, selectors.EVENT_READ, conn)

    def _accept(self) -> None:
        try:
            sock, addr = self._listener.accept()
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            # E.g. EMFILE: the listener stays readable; back off instead of spinning.
            LOG.warning("IPC Server listener on %d: accept failed: %s", self._address[1], e)
            self._stopped.wait(0.1)
            return
        sock.setblocking(False)
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        conn = _Connection(
            sock,
            f"{addr[0]}:{addr[1]}",
            addr[0],
            self.max_frame_size,
            self.caller_identity.connection_user(None),
        )
        with self._lock:
            self._connections[id(conn)] = conn
        self._selector.register(sock, selectors.EVENT_READ, conn)

    def _read(self, conn: _Connection) -> Call | None:
        try:
            data = conn.sock.recv(_RECV_SIZE)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as e:
            LOG.info("Connection from %s closed: %s", conn.peer, e)
            self._close(conn)
            return
        if not data or conn.closed:
            self._close(conn)
            self._release_socket(conn)
            return
        try:
            frames = self._split_frames(conn, data)
        except ProtocolError as e:
            LOG.warning("Dropping connection from %s: %s", conn.peer, e)
            self._close(conn)
            return
        if not frames:
            return
        with conn.lock:
            conn.frames.extend(frames)
            if conn.busy or conn.closed:
                frame = None
            else:
                conn.busy = True
                frame = conn.frames.popleft()
            pause = len(conn.frames) >= MAX_PENDING_FRAMES
        if pause:
            with contextlib.suppress(KeyError, ValueError, OSError):
                self._selector.unregister(conn.sock)
        if frame is not None:
            return Call(self, conn, frame)
        return None

    @staticmethod
    def _split_frames(conn: _Connection, data: bytes) -> list[bytes]:
        conn.decoder.feed(data)
        frames = conn.decoder.frames()
        if conn.context_due and frames:
            conn.context_due = False
            if is_connection_context(frames[0]):
                conn.user.claim(decode_connection_context(frames.pop(0)))
        return frames

    def _enqueue(self, call: Call) -> None:
        # A full queue holds the listener here (Hadoop's blocking put); stop() ends the wait.
        while not self._stopped.is_set():
            try:
                self._places.get(timeout=0.1)
            except queue.Empty:
                if self._replies:  # replies the syncer released go out meanwhile
                    self._send_replies()
                continue
            self.call_queue.put(call)
            return

    # ---------------------------------------------------------------- handlers

    def _handle(self) -> None:
        get = self.call_queue.get
        free_place = self._places.put
        process = self._process
        counts = self.rpc_metrics.counts()  # this handler's: no lock per call
        clock = time.perf_counter_ns
        while True:
            call = get()
            if call is _STOP:
                self.rpc_metrics.retire(counts)
                return
            free_place(None)
            if self._stopped.is_set():
                continue
            conn = call._conn
            call_context.set_current_call(call)
            call_context.set_connection_user(conn.user)
            started = clock()
            try:
                reply = process(call.payload, conn.ip)
            except ProtocolError as e:
                LOG.warning("Dropping connection from %s: %s", conn.peer, e)
                self._close(conn)
                continue
            except Exception:  # the dispatcher answers failures; this is a bug
                LOG.exception("Unexpected error serving %s; dropping the connection", conn.peer)
                self._close(conn)
                continue
            finally:
                call_context.set_current_call(None)
                call_context.set_connection_user(None)
                counts.calls += 1
                counts.queue_ns += started - call._queued_at
                counts.processing_ns += clock() - started
            call._reply = reply
            call._release()

    # ---------------------------------------------------------------- responder

    def _respond(self, conn: _Connection, reply: bytes) -> None:
        """Write ``reply``'s frame; what the socket does not take now, the responder writes."""
        frame = FRAME_HEADER.pack(len(reply)) + reply
        with conn.lock:
            if conn.closed:
                return
            if conn.out:  # the responder is still writing this connection's last reply
                conn.out += frame
                return
            try:
                sent = conn.sock.send(frame)
            except (BlockingIOError, InterruptedError):
                sent = 0
            except OSError:
                sent = -1
            if sent >= 0 and sent < len(frame):
                conn.out += frame[sent:]
                self._to_write.append(conn)
        if sent < 0:
            self._close(conn)
        elif not conn.out:
            self._call_done(conn)
        else:
            self._wake(self._resp_wake_w)

    def _respond_later(self, conn: _Connection, reply: bytes) -> None:
        """Hand a postponed call's reply to the listener (one wake-up per sync's replies)."""
        with self._replies_lock:
            self._replies.append((conn, reply))
            wake = len(self._replies) == 1
        if wake:
            self._wake(self._wake_w)

    def _send_replies(self) -> None:  # in the listener's thread
        with self._replies_lock:
            replies, self._replies = self._replies, []
        for conn, reply in replies:
            self._respond(conn, reply)

    def _call_done(self, conn: _Connection) -> None:
        """The connection's reply is out: its next waiting frame may be queued."""
        with conn.lock:
            conn.busy = False
            more = bool(conn.frames)
        if more:
            # The listener queues it: a handler never blocks on a full call queue.
            self._ready.append(conn)
            self._wake(self._wake_w)

    def _respond_loop(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._resp_wake_r, selectors.EVENT_READ)
            while not self._stopped.is_set():
                for key, _ in selector.select():
                    if self._stopped.is_set():
                        return
                    if key.fileobj is self._resp_wake_r:
                        with contextlib.suppress(OSError):
                            self._resp_wake_r.recv(4096)
                        for stale in [k for k in selector.get_map().values() if k.data]:
                            if stale.data.closed:  # closed elsewhere; its fd may be reused
                                with contextlib.suppress(KeyError, ValueError, OSError):
                                    selector.unregister(stale.fileobj)
                        while self._to_write:
                            conn = self._to_write.popleft()
                            with contextlib.suppress(KeyError, ValueError, OSError):
                                selector.register(conn.sock, selectors.EVENT_WRITE, conn)
                    elif self._write_some(key.data):
                        with contextlib.suppress(KeyError, ValueError, OSError):
                            selector.unregister(key.fileobj)

    def _write_some(self, conn: _Connection) -> bool:
        """Write what the socket takes of ``conn``'s pending bytes; True when done."""
        with conn.lock:
            if conn.closed:
                return True
            try:
                sent = conn.sock.send(conn.out)
            except (BlockingIOError, InterruptedError):
                return False
            except OSError:
                sent = -1
            if sent > 0:
                del conn.out[:sent]
            done = not conn.out
        if sent < 0:
            self._close(conn)
            return True
        if done:
            self._call_done(conn)
        return done

    def _close(self, conn: _Connection) -> None:
        with conn.lock:
            if conn.closed:
                return
            conn.closed = True
        with self._lock:
            self._connections.pop(id(conn), None)
            listening = self._listening
        if not listening or threading.current_thread() is self._listener_thread:
            self._release_socket(conn)
            return
        # Only the listener closes a socket it may have registered: a closed fd's number is
        # soon reused by accept(), and its selector must have forgotten the old one by then.
        with contextlib.suppress(OSError):
            conn.sock.shutdown(socket.SHUT_RDWR)
        self._ready.append(conn)
        self._wake(self._wake_w)

    def _release_socket(self, conn: _Connection) -> None:
        selector = self._selector
        if selector is not None:
            with contextlib.suppress(KeyError, ValueError, OSError):
                selector.unregister(conn.sock)
        conn.sock.close()
