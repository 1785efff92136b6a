"""PipelinedChannel: JournalNode connections whose replies the waiting thread reads itself.

The write path's hand-offs are its cost: with a thread per JournalNode, every
batch wakes three threads to send it and three more when the answers come
back, about 30 µs each on a small machine. Here the caller's thread writes the
request to the socket itself (non-blocking, in call order, under the
channel's lock), and the replies are read by whoever holds the reader role
of the process's :class:`ReplyReactor` — usually the very thread that waits
for them (the writer waiting for its quorum), else a background thread. A
batch then wakes no other thread at all, as in a plain select-loop client.

* **Order.** Requests go out in the order :meth:`PipelinedChannel.send_async`
  was called; the JournalNode serves one connection's calls one after the
  other and answers in order, so replies are matched to requests first in,
  first out (the proxy still checks each reply's seqid).
* **A frozen node blocks nobody.** What the socket does not take at once is
  queued on the channel and written by the reader when the socket becomes
  writable; the caller never waits. The bytes so held are bounded by the
  caller (IPCLoggerChannel's ``dfs.qjournal.queued-edits.limit.mb``).
* **Failures.** A broken connection, a reply nobody asked for, a frame over
  ``max_frame_size`` or no reply byte for ``timeout_s`` while a call waits
  (SocketTimeoutException) fail every call in flight and drop the
  connection; the next call makes a new one. Nothing is retried: nobody
  knows whether the JournalNode ran a call whose answer was lost.

* **TLS.** An ``ssl.SSLSocket`` may not be read by one thread while another
  writes it, so a secured channel drives its TLS connection through memory
  BIOs (:class:`TlsSession`): the handshake runs on the plain socket at
  connect time (the certificate checks of the socket factory's context: the
  server's chain and host name, our client certificate); then a request is
  encrypted and a reply decrypted under a short lock, and only ciphertext
  crosses the non-blocking socket. Encrypted bytes are sent in the order they
  were produced (they are taken from the session under the send lock).
* **Busy polling** (``dfs.qjournal.busy-poll.us``, off by default): a waiter
  may poll without blocking for a while before it blocks
  (:func:`select_with_busy_poll`).

The reactor and the waiter's assist are in ``reply_reactor``, the TLS session in
``hadoop_qjm.ipc.tls_session``, connecting in ``hadoop_qjm.ipc.socket_channel`` (shared
with the blocking SocketChannel); the names stay importable from here.
"""

from __future__ import annotations

import collections
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence

from hadoop_qjm.common.exceptions import IOException, always_assert
from hadoop_qjm.ipc.connection_context import connection_context_frame
from hadoop_qjm.ipc.exceptions import ProtocolError
from hadoop_qjm.ipc.frames import FRAME_HEADER, FrameDecoder
from hadoop_qjm.ipc.socket_channel import close_socket, connect, login_user_name
from hadoop_qjm.ipc.tls_session import TlsSession
from hadoop_qjm.qjournal.client.reply_reactor import (
    LEASE_S,
    MAX_BUSY_POLL_US,
    ROLE_RETRY_S,
    ReadRepliesWhileWaiting,
    ReplyReactor,
    read_replies_while_waiting,
    select_with_busy_poll,
)
from hadoop_qjm.qjournal.protocol.exceptions import SocketTimeoutException
from hadoop_qjm.qjournal.protocol.sockets import (
    ClientSocketFactoryLike,
    as_client_socket_factory,
    call_failed,
    dropped_by_tls_server,
)

__all__ = [
    "LEASE_S",
    "MAX_BUSY_POLL_US",
    "PipelinedChannel",
    "ReadRepliesWhileWaiting",
    "ReplyCallback",
    "ReplyReactor",
    "read_replies_while_waiting",
    "select_with_busy_poll",
]

LOG = logging.getLogger("hadoop_qjm.qjournal.client.quorum_journal_manager")

#: ``callback(reply_payload, None)`` or ``callback(None, error)``; runs in the reactor
#: thread (or the caller's, for a call that fails before it is sent). Must not block.
ReplyCallback = Callable[[bytes | None, BaseException | None], None]


class PipelinedChannel:
    """A lazily (re)connected TCP (or TLS) connection to ``host:port`` carrying framed calls.

    Implements the proxy's ``RpcChannel`` (:meth:`call`, :meth:`reset`,
    :meth:`close`) plus :meth:`send_async`, which returns as soon as the
    request is written or queued. ``timeout_s`` (None: none) bounds how long a
    call in flight may wait without any reply byte arriving.
    """

    def __init__(
        self,
        host: str,
        port: int,
        timeout_s: float | None,
        connect_timeout_s: float | None,
        max_frame_size: int,
        socket_factory: ClientSocketFactoryLike | None = None,
        reactor: ReplyReactor | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.timeout_s = timeout_s
        self.connect_timeout_s = connect_timeout_s
        self.max_frame_size = max_frame_size
        self._socket_factory = as_client_socket_factory(socket_factory)
        self._reactor = reactor
        self._connect_lock = threading.Lock()  # one connection attempt at a time
        # Writing to the socket, and _out. Apart from _lock, so that the reply reader
        # never waits for a send in progress.
        self._send_lock = threading.Lock()
        self._out: collections.deque[memoryview] = collections.deque()  # not yet written
        self._lock = threading.Lock()  # guards the state below; never held across a callback
        self._sock: socket.socket | None = None
        self._tls: TlsSession | None = None  # the connection's TLS, when secured
        self._closed = False
        self._pending: collections.deque[ReplyCallback] = collections.deque()
        self._last_progress = 0.0  # when a call was sent to an idle connection, or bytes came
        self._heard = False  # whether the connection brought a byte yet
        self._context: bytes | None = None  # the connection context, due before a call
        # (error, cause) of the calls failed when the server dropped a plain connection
        # before it sent a byte: their caller asks why (call_failure).
        self._unanswered_drop: tuple[BaseException, OSError | None] | None = None

    def __repr__(self) -> str:
        return f"PipelinedChannel({self.host}:{self.port})"

    @property
    def connected(self) -> bool:
        """Whether a connection is open (a call would not have to connect first)."""
        return self._sock is not None

    # ---- the caller's side -------------------------------------------------------------------
    def _connect(self) -> socket.socket:
        with self._connect_lock:
            with self._lock:
                if self._closed:
                    raise IOException(f"Connection to {self.host}:{self.port} is closed")
                if self._sock is not None:
                    return self._sock
            # A TLS factory's connection runs over memory BIOs (see the module docstring).
            sock, tls = connect(
                self.host,
                self.port,
                self._socket_factory,
                self.connect_timeout_s,
                tls_over_memory=True,
            )
            if isinstance(sock, ssl.SSLSocket):  # see the module docstring
                sock.close()
                raise IOException(f"{self}: an SSLSocket cannot be pipelined")
            sock.setblocking(False)
            with self._send_lock:
                self._out.clear()  # anything left was for a connection that failed
                with self._lock:
                    if self._closed:  # close() ran while we were connecting
                        sock.close()
                        raise IOException(f"Connection to {self.host}:{self.port} is closed")
                    self._sock = sock
                    self._tls = tls
                    self._heard = False
                    self._context = connection_context_frame(login_user_name())
            if self._reactor is None:
                self._reactor = ReplyReactor.shared()
            reactor = self._reactor
            reactor.run_soon(lambda: reactor._register(sock, self, tls))
            return sock

    def send_async(
        self, parts: Sequence[bytes], callback: ReplyCallback, *, connect: bool = True
    ) -> None:
        """Send one request (the concatenation of ``parts``, framed here); ``callback``
        gets its reply. Never blocks on the peer; a failure reaches the callback. Without
        ``connect`` a closed connection fails the call instead of connecting (which can
        block for the connect timeout)."""
        try:
            sock = self._sock
            if sock is None:
                if not connect:
                    raise IOException(f"Call to {self.host}:{self.port} failed: not connected")
                sock = self._connect()
        except OSError as e:
            callback(None, e)
            return
        size = sum(map(len, parts))
        data = [FRAME_HEADER.pack(size) + parts[0], *parts[1:]]
        error: BaseException | None = None
        queued = want_write = False
        with self._send_lock:
            with self._lock:
                if self._sock is sock:
                    if not self._pending:
                        self._last_progress = time.monotonic()
                    self._pending.append(callback)
                    queued = True
            if queued:
                if self._context is not None:  # a new connection's first call
                    data.insert(0, self._context)
                    self._context = None
                tls = self._tls
                if tls is not None:
                    try:
                        data = [tls.encrypt(data)]  # under the send lock: records in order
                    except ssl.SSLError as e:  # the session is broken: fail it, below
                        error = e
                if error is None:
                    # (The size is known for a plain call: not counted again per send.)
                    plain = tls is None and len(data) == len(parts)
                    error = self._send_or_queue(
                        sock, data, FRAME_HEADER.size + size if plain else None
                    )
                want_write = bool(self._out)
        if not queued:  # dropped since we looked: this call never went out
            callback(None, IOException(f"Call to {self.host}:{self.port} failed: connection reset"))
        elif error is not None:  # fails this call and every other one in flight
            self._fail(
                sock,
                IOException(f"Call to {self.host}:{self.port} failed: {error}"),
                dropped=True,
                cause=error,
            )
        elif want_write:
            reactor = self._reactor
            always_assert(reactor is not None, f"{self} is connected without a reply reactor")
            reactor.run_soon(lambda: reactor._want_write(sock, True))

    def _send_or_queue(
        self, sock: socket.socket, data: list[bytes], size: int | None = None
    ) -> OSError | None:
        """Write ``data`` (``size`` bytes in all; None: count them) now as far as the socket
        takes it, queue the rest (send lock held)."""
        if self._out:
            self._out.extend(memoryview(part) for part in data)
            return None
        try:
            sent = sock.sendmsg(data)
            if sent < (sum(map(len, data)) if size is None else size):
                self._queue_unsent(data, sent)
        except BlockingIOError:
            self._queue_unsent(data, 0)
        except OSError as e:
            return e
        return None

    def _queue_unsent(self, data: list[bytes], sent: int) -> None:
        for part in data:
            if sent >= len(part):
                sent -= len(part)
                continue
            self._out.append(memoryview(part)[sent:])
            sent = 0

    def call(self, payload: bytes) -> bytes:
        """Send ``payload`` and wait for its reply (the blocking ``RpcChannel`` call)."""
        done = threading.Event()
        answer: list[tuple[bytes | None, BaseException | None]] = []

        def on_reply(reply: bytes | None, error: BaseException | None) -> None:
            answer.append((reply, error))
            done.set()

        self.send_async([payload], on_reply)
        self.wait(done)
        reply, error = answer[0]
        if error is not None:
            raise self.call_failure(error)
        always_assert(reply is not None, f"{self}: a call answered with neither reply nor error")
        return reply

    def call_failure(self, error: BaseException) -> BaseException:
        """What a waiting caller raises for ``error``, its call's failure: ``error``, or,
        when the server dropped a plain connection before it sent a byte and turns out
        to speak TLS, the sentence saying so (:func:`dropped_by_tls_server`). Asked in
        the caller's thread: the probe it may make never holds up the reply reader."""
        drop = self._unanswered_drop
        if drop is None or drop[0] is not error:
            return error
        self._unanswered_drop = None
        hint = dropped_by_tls_server(self.host, self.port, drop[1], self.connect_timeout_s)
        if hint is None:
            return error
        hint.__cause__ = error
        return hint

    def wait(self, done: threading.Event) -> None:
        """Wait until ``done`` is set by a reply's callback, reading replies meanwhile
        whenever no other thread does."""
        while not done.is_set():
            reactor = self._reactor
            if reactor is None or not reactor.read_while_waiting(1.0):
                done.wait(ROLE_RETRY_S)

    def reset(self) -> None:
        """Drop the connection; every call in flight fails (the next call reconnects)."""
        sock = self._sock
        if sock is not None:
            self._fail(sock, IOException(f"Connection to {self.host}:{self.port} was reset"))

    def close(self) -> None:
        """No more calls; those in flight fail with IOException. Safe from any thread."""
        with self._lock:
            self._closed = True
        self.reset()

    def _fail(
        self,
        sock: socket.socket,
        error: BaseException,
        *,
        dropped: bool = False,
        cause: OSError | None = None,
    ) -> None:
        """Drop ``sock`` (if still ours) and fail every call in flight on it. ``dropped``:
        the server reset (``cause``) or closed (no ``cause``) the connection."""
        with self._lock:
            if self._sock is not sock:
                return
            self._sock = None
            pending, self._pending = self._pending, collections.deque()
            if dropped and not self._heard and self._tls is None:
                self._unanswered_drop = (error, cause)
        # The calls first: a thread polling for its own reply re-checks after the
        # unregister below wakes its poll.
        for callback in pending:
            try:
                callback(None, error)
            except Exception:  # noqa: BLE001 - the others must still hear of it
                LOG.exception("Unexpected error failing a call to %s:%s", self.host, self.port)
        reactor = self._reactor
        if reactor is not None:
            if reactor.holds_role():
                reactor._unregister(sock, self)
            else:
                reactor.run_soon(lambda: reactor._unregister(sock, self))
        else:
            close_socket(sock)

    # ---- the reactor's side ------------------------------------------------------------------
    def _reply_deadline(self) -> float | None:
        """When the reactor must look at this channel's timeout next (None: never).

        Idle, a quarter of the timeout from now: a call sent meanwhile does not
        wake the reactor, which then finds it on that look, well before its deadline.
        """
        if self.timeout_s is None:
            return None
        if not self._pending:
            return time.monotonic() + self.timeout_s / 4
        return self._last_progress + self.timeout_s

    def _on_reply_timeout(self) -> None:
        sock = self._sock
        if sock is not None and self._pending:
            self._fail(
                sock,
                SocketTimeoutException(
                    f"Call to {self.host}:{self.port} timed out after {self.timeout_s} s"
                ),
            )

    def _on_writable(self, sock: socket.socket) -> None:
        error: OSError | None = None
        with self._send_lock:
            if self._sock is not sock:
                return
            out = self._out
            try:
                while out:
                    sent = sock.send(out[0])
                    if sent < len(out[0]):
                        out[0] = out[0][sent:]
                        break
                    out.popleft()
            except BlockingIOError:
                pass
            except OSError as e:
                error = e
            drained = not out
        if error is not None:
            self._fail(
                sock,
                IOException(f"Call to {self.host}:{self.port} failed: {error}"),
                dropped=True,
                cause=error,
            )
        elif drained:
            always_assert(self._reactor is not None, f"{self} is connected without a reactor")
            self._reactor._want_write(sock, False)

    def _on_readable(
        self, sock: socket.socket, buf: FrameDecoder, rx: memoryview, tls: TlsSession | None
    ) -> None:
        """Read what ``sock`` has (into ``rx``, the reactor's buffer), add it to the
        connection's ``buf`` (``tls``: its session) and hand each complete reply to its
        call's callback.

        ``sock`` is looked at again, under the lock, before replies are matched:
        another thread may have failed it (and connected anew, with new calls
        waiting) while this one read, and the old connection's bytes answer no call
        of the new one."""
        if self._sock is not sock:
            return
        try:
            received = sock.recv_into(rx)
            chunk = rx[:received]
        except BlockingIOError:
            return
        except OSError as e:
            self._fail(
                sock,
                IOException(f"Call to {self.host}:{self.port} failed: {e}"),
                dropped=True,
                cause=e,
            )
            return
        if not received:
            self._fail(
                sock,
                IOException(
                    f"Call to {self.host}:{self.port} failed: connection closed by the server"
                ),
                dropped=True,
            )
            return
        self._heard = True
        if tls is not None:
            try:
                chunk, closed = tls.decrypt(chunk)
            except ssl.SSLError as e:  # e.g. the server's alert refusing our certificate
                self._fail(sock, IOException(f"Call to {self.host}:{self.port} failed: {e}"))
                return
            if tls.has_outgoing:  # e.g. an alert or a key update: sent in order
                with self._send_lock:
                    error = (
                        self._send_or_queue(sock, [tls.take_outgoing()])
                        if self._sock is sock
                        else None
                    )
                    want_write = bool(self._out)
                if error is not None:
                    self._fail(
                        sock, IOException(f"Call to {self.host}:{self.port} failed: {error}")
                    )
                    return
                if want_write:
                    always_assert(
                        self._reactor is not None, f"{self} is connected without a reactor"
                    )
                    self._reactor._want_write(sock, True)
            if closed:
                self._fail(
                    sock,
                    IOException(
                        f"Call to {self.host}:{self.port} failed: connection closed by the server"
                    ),
                )
                return
        buf.feed(chunk)
        replies: list[tuple[ReplyCallback, bytes]] = []
        error: BaseException | None = None
        with self._lock:
            if self._sock is not sock:
                return  # failed while we read: its calls have had their answer
            self._last_progress = time.monotonic()
            try:
                while (reply := buf.next_frame()) is not None:
                    if not self._pending:
                        raise ProtocolError("a reply to no call")
                    replies.append((self._pending.popleft(), reply))
            except ProtocolError as e:  # the stream is unusable: fail the connection
                error = e
        for callback, reply in replies:
            try:
                callback(reply, None)
            except Exception:  # noqa: BLE001 - one caller's bug must not break the connection
                LOG.exception("Unexpected error handling a reply from %s:%s", self.host, self.port)
        if error is not None:
            self._fail(sock, call_failed(self.host, self.port, error))
