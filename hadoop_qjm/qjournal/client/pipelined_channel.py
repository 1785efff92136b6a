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
"""

from __future__ import annotations

import collections
import contextlib
import logging
import math
import os
import selectors
import socket
import ssl
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from hadoop_qjm.common.exceptions import IOException, always_assert
from hadoop_qjm.ipc.exceptions import ProtocolError
from hadoop_qjm.ipc.frames import FRAME_HEADER, FrameDecoder
from hadoop_qjm.qjournal.protocol.exceptions import ConnectException, SocketTimeoutException
from hadoop_qjm.qjournal.protocol.sockets import (
    ClientSocketFactoryLike,
    PlainSocketFactory,
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

#: The reactor thread stays parked this long after a waiter last read for itself.
LEASE_S = 0.05
#: The longest busy poll (µs) a waiter may make (``dfs.qjournal.busy-poll.us``): one that
#: keeps the reader role for the whole lease lets the lease lapse, and the background
#: reader takes the replies over (a thread hand-off per batch again).
MAX_BUSY_POLL_US = round(LEASE_S * 1_000_000) - 1
#: A waiter that finds the reader role taken looks again this soon (it is woken
#: earlier if the role holder completes what it waits for).
ROLE_RETRY_S = 0.002
_RECV_SIZE = 256 * 1024
#: What one TLS read asks for: below glibc's mmap threshold (128 KiB), so that asking
#: does not cost an mmap and munmap (recv(256 KiB) costs ~12 us more than recv(64 KiB)).
_TLS_READ_SIZE = 64 * 1024


class ReplyReactor:
    """Reads the replies of every :class:`PipelinedChannel`: a daemon thread, or a waiter.

    Whoever holds the *reader role* polls the selector and hands each reply
    to its callback: the reactor's own thread, or — the point of it — a
    thread that waits for replies (:meth:`read_while_waiting`: a writer
    waiting for its quorum, an executor thread waiting for its call). A
    waiter that reads for itself needs no other thread to wake it: a
    ``flush()`` then costs no thread hand-off at all. While waiters have read
    in the last :data:`LEASE_S` the reactor thread stays parked, out of their
    way; when nobody waits it takes over, so replies that no one waits for (a
    slow node's) are still taken in within that time.

    Selector changes (register, unregister, write interest) are queued by
    :meth:`run_soon` and run by the role holder, so that no thread touches
    the selector while another polls it.
    """

    _shared: ReplyReactor | None = None
    _shared_pid = 0
    _shared_lock = threading.Lock()

    @classmethod
    def shared(cls) -> ReplyReactor:
        """The process's reactor (a new one in a forked child: threads do not survive fork)."""
        with cls._shared_lock:
            if cls._shared is None or cls._shared_pid != os.getpid():
                cls._shared = cls()
                cls._shared_pid = os.getpid()
            return cls._shared

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, selectors.EVENT_READ, None)
        # Replies are received into this one buffer (only the role holder reads), then
        # copied to their connection's: no allocation per receive.
        self._rx = memoryview(bytearray(_RECV_SIZE))
        self._lock = threading.Lock()
        self._soon: list[Callable[[], None]] = []
        self._channels: set[PipelinedChannel] = set()  # the role holder only
        self._role = threading.Lock()
        self._role_owner: int | None = None
        self._lease_until = 0.0  # the reactor thread leaves the role to waiters until then
        # No channel's reply deadline comes before this (see _poll); -inf: look again.
        self._next_deadline = -math.inf
        self._thread = threading.Thread(target=self._run, name="QJM reply reader", daemon=True)
        self._thread.start()

    def holds_role(self) -> bool:
        """Whether the calling thread is the one polling the selector now."""
        return self._role_owner == threading.get_ident()

    def read_while_waiting(
        self, timeout_s: float, held: Any = None, busy_poll_s: float = 0.0
    ) -> bool:
        """Take the reader role if it is free: poll once (up to ``timeout_s``), handle what
        came, release it; False at once if another thread holds it.

        ``held`` (a lock the caller holds, e.g. its QuorumCall's condition) is
        released meanwhile, so that the replies' callbacks can take it. With
        ``busy_poll_s`` the poll first looks without blocking, again and again, for
        up to that long (within ``timeout_s``), and blocks only then
        (:func:`select_with_busy_poll`).
        """
        self._lease_until = time.monotonic() + LEASE_S
        if not self._role.acquire(blocking=False):
            return False
        self._role_owner = threading.get_ident()
        if held is not None:
            held.release()
        try:
            self._poll(timeout_s, busy_poll_s)
        finally:
            self._role_owner = None
            self._role.release()
            if held is not None:
                held.acquire()
        return True

    def wake(self) -> None:
        """Make the role holder's poll return (it re-checks what it waits for)."""
        with contextlib.suppress(BlockingIOError):  # the pipe is full: a wake-up is due
            self._wake_w.send(b"\0")

    def run_soon(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in the thread holding the reader role, before it polls again."""
        with self._lock:
            self._soon.append(fn)
            first = len(self._soon) == 1
        if first:
            self.wake()

    # ---- called by the role holder (through run_soon) -----------------------------------------
    def _register(
        self, sock: socket.socket, channel: PipelinedChannel, tls: TlsSession | None
    ) -> None:
        if channel._sock is not sock:
            return  # already dropped: its unregister (queued after this) closes it
        # Each connection has its own read buffer and TLS session: nothing of an old one
        # can leak into the next.
        self._selector.register(
            sock, selectors.EVENT_READ, (channel, FrameDecoder(channel.max_frame_size), tls)
        )
        self._channels.add(channel)
        self._next_deadline = -math.inf  # its timeout may be shorter than the others'

    def _unregister(self, sock: socket.socket, channel: PipelinedChannel) -> None:
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(sock)
        _close_socket(sock)
        if not any(
            key.data is not None and key.data[0] is channel
            for key in self._selector.get_map().values()
        ):
            self._channels.discard(channel)

    def _want_write(self, sock: socket.socket, want: bool) -> None:
        events = selectors.EVENT_READ | (selectors.EVENT_WRITE if want else 0)
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.modify(sock, events, self._selector.get_key(sock).data)

    # ---- the loop ----------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            try:
                parked = self._lease_until - time.monotonic()
                if parked > 0:  # waiters read for themselves
                    time.sleep(parked)
                    continue
                with self._role:
                    if self._lease_until > time.monotonic():
                        continue  # a waiter came between the check and the role
                    self._role_owner = threading.get_ident()
                    try:
                        self._poll(None)
                    finally:
                        self._role_owner = None
            except Exception:  # noqa: BLE001 - the reactor must outlive any one channel
                LOG.exception("Unexpected error in the QJM reply reader")

    def _poll(self, timeout: float | None, busy_poll_s: float = 0.0) -> None:
        """Wait up to ``timeout`` (None: no limit) for events, handle them (role held);
        with ``busy_poll_s``, without blocking for up to that long first.

        The channels' reply deadlines are looked at only once the earliest one
        found last time has come (:meth:`_check_reply_deadlines`): a deadline
        never moves earlier while a call waits (it is the last progress plus
        the timeout), and the one of an idle channel, a quarter of its timeout
        from when it was looked at, comes before that of any call it may send
        later. So no call's deadline passes unnoticed, and a poll costs no
        look at every channel.
        """
        now = time.monotonic()
        if now >= self._next_deadline:
            self._check_reply_deadlines(now)
        if self._next_deadline != math.inf:
            wait = max(self._next_deadline - now, 0.0)
            timeout = wait if timeout is None else min(timeout, wait)
        for key, mask in select_with_busy_poll(self._selector.select, timeout, busy_poll_s):
            if key.data is None:
                self._drain_wake_pipe()
                continue
            channel, buf, tls = key.data
            try:
                if mask & selectors.EVENT_WRITE:
                    channel._on_writable(key.fileobj)
                if mask & selectors.EVENT_READ:
                    channel._on_readable(key.fileobj, buf, self._rx, tls)
            except Exception as e:  # noqa: BLE001 - one channel's failure is that channel's
                LOG.warning("Failing the connection to %s:%s: %s", channel.host, channel.port, e)
                channel._fail(
                    key.fileobj,
                    IOException(f"Call to {channel.host}:{channel.port} failed: {e}"),
                )
        if self._next_deadline != math.inf:
            now = time.monotonic()
            if now >= self._next_deadline:
                self._check_reply_deadlines(now)

    def _check_reply_deadlines(self, now: float) -> None:
        """Time out every call whose deadline has passed; note the next deadline."""
        earliest = math.inf
        for channel in list(self._channels):
            deadline = channel._reply_deadline()
            if channel._pending and deadline is not None and deadline <= now:
                channel._on_reply_timeout()
                deadline = channel._reply_deadline()
            if deadline is not None and deadline < earliest:
                earliest = deadline
        self._next_deadline = earliest

    def _drain_wake_pipe(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while self._wake_r.recv(4096):
                pass
        with self._lock:
            soon, self._soon = self._soon, []
        for fn in soon:
            try:
                fn()
            except Exception:  # noqa: BLE001 - one failed change must not stop the others
                LOG.exception("Unexpected error in the QJM reply reader")


def select_with_busy_poll(
    select: Callable[[float | None], list],
    timeout: float | None,
    busy_poll_s: float,
    clock: Callable[[], float] = time.monotonic,
) -> list:
    """``select(timeout)``'s events; with ``busy_poll_s`` > 0, first ``select(0)`` again and
    again until there are some or that long (at most ``timeout``; None: no limit) has
    passed, then a blocking ``select`` for what is left of ``timeout``.

    ``dfs.qjournal.busy-poll.us`` (docs/quorum-client.md, "Busy polling"): a thread
    that blocks leaves its CPU idle, and on a virtual machine whose idle CPUs halt,
    waking it again costs a good part of what a reply takes to come. Only a waiter
    does this, for a wait it expects to be short; the background thread never does.
    """
    if busy_poll_s <= 0:
        return select(timeout)
    start = clock()
    until = start + (busy_poll_s if timeout is None else min(busy_poll_s, timeout))
    while True:
        events = select(0)
        if events:
            return events
        now = clock()
        if now >= until:
            break
    if timeout is None:
        return select(None)
    left = timeout - (now - start)
    return select(left) if left > 0 else []


class TlsSession:
    """A client TLS connection driven through memory BIOs (see the module docstring)."""

    def __init__(self, context: ssl.SSLContext, host: str) -> None:
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._obj = context.wrap_bio(self._incoming, self._outgoing, server_hostname=host)
        self._lock = threading.Lock()
        self.host = host

    def handshake(self, sock: socket.socket, timeout_s: float | None) -> None:
        """Complete the handshake over the blocking ``sock`` within ``timeout_s``."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while True:
            try:
                self._obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                self._send_all(sock)
                if deadline is not None:
                    sock.settimeout(max(0.001, deadline - time.monotonic()))
                data = sock.recv(_RECV_SIZE)
                if not data:
                    raise ConnectionError(
                        "the server closed the connection during the handshake"
                    ) from None
                self._incoming.write(data)
            except ssl.SSLError as e:
                # Tell the server why (the alert OpenSSL queued), as an SSLSocket would.
                with contextlib.suppress(OSError):
                    self._send_all(sock)
                if not isinstance(e, ssl.SSLCertVerificationError):
                    raise
                raise ssl.SSLCertVerificationError(
                    f"TLS handshake with {self.host} failed: the server's certificate was "
                    f"refused ({e.verify_message or e.reason})"
                ) from e
        self._send_all(sock)

    def _send_all(self, sock: socket.socket) -> None:
        if self._outgoing.pending:
            sock.sendall(self._outgoing.read())

    def encrypt(self, parts: Sequence[bytes]) -> bytes:
        """The ciphertext of ``parts`` — and of anything the session had to send first."""
        with self._lock:
            for part in parts:
                self._obj.write(part)
            return self._outgoing.read()

    def decrypt(self, data: bytes) -> tuple[bytes, bool]:
        """``(plaintext, closed)``: what ``data`` completes; ``closed`` when the server sent
        close_notify. What the session must send back stays queued (:meth:`take_outgoing`)."""
        chunks = []
        closed = False
        with self._lock:
            self._incoming.write(data)
            while True:
                try:
                    chunk = self._obj.read(_TLS_READ_SIZE)
                except ssl.SSLWantReadError:
                    break
                except ssl.SSLZeroReturnError:
                    closed = True
                    break
                if not chunk:
                    break
                chunks.append(chunk)
        return b"".join(chunks), closed

    @property
    def has_outgoing(self) -> bool:
        return self._outgoing.pending > 0

    def take_outgoing(self) -> bytes:
        with self._lock:
            return self._outgoing.read()


def _close_socket(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


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
            context = getattr(self._socket_factory, "context", None)
            tls = None
            try:
                if isinstance(context, ssl.SSLContext):
                    # TLS over memory BIOs (see the module docstring): TCP first.
                    sock = PlainSocketFactory().connect(
                        self.host, self.port, self.connect_timeout_s
                    )
                    tls = TlsSession(context, self.host.strip("[]"))
                    try:
                        tls.handshake(sock, self.connect_timeout_s)
                    except BaseException:
                        sock.close()
                        raise
                else:
                    sock = self._socket_factory.connect(
                        self.host, self.port, self.connect_timeout_s
                    )
            except OSError as e:
                raise ConnectException(
                    f"Call to {self.host}:{self.port} failed on connection exception: {e}"
                ) from e
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
        data = [FRAME_HEADER.pack(sum(map(len, parts))) + parts[0], *parts[1:]]
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
                tls = self._tls
                if tls is not None:
                    try:
                        data = [tls.encrypt(data)]  # under the send lock: records in order
                    except ssl.SSLError as e:  # the session is broken: fail it, below
                        error = e
                if error is None:
                    error = self._send_or_queue(sock, data)
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

    def _send_or_queue(self, sock: socket.socket, data: list[bytes]) -> OSError | None:
        """Write ``data`` now as far as the socket takes it, queue the rest (send lock held)."""
        if self._out:
            self._out.extend(memoryview(part) for part in data)
            return None
        try:
            sent = sock.sendmsg(data)
            if sent < sum(map(len, data)):
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
            _close_socket(sock)

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
                chunk, closed = tls.decrypt(bytes(chunk))
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


class ReadRepliesWhileWaiting:
    """QuorumCall's assist for pipelined channels: the process's reactor, if any.

    ``busy_poll_s`` > 0: each turn at reading polls without blocking for up to
    that long before it blocks (``dfs.qjournal.busy-poll.us``).
    """

    def __init__(self, busy_poll_s: float = 0.0) -> None:
        if busy_poll_s < 0:
            raise ValueError(f"busy_poll_s must not be negative: {busy_poll_s}")
        self.busy_poll_s = busy_poll_s

    @staticmethod
    def _reactor() -> ReplyReactor | None:
        reactor = ReplyReactor._shared
        if reactor is None or ReplyReactor._shared_pid != os.getpid():
            return None
        return reactor

    def __call__(self, timeout_s: float, held: Any = None) -> bool:
        """A waiter's turn at reading replies (:meth:`ReplyReactor.read_while_waiting`);
        False if there is no reactor yet or another thread is reading."""
        reactor = self._reactor()
        return reactor is not None and reactor.read_while_waiting(timeout_s, held, self.busy_poll_s)

    def wake(self) -> None:
        """Interrupt the poll of a waiter reading replies: what it waits for may have
        happened in another thread."""
        reactor = self._reactor()
        if reactor is not None:
            reactor.wake()


#: The assist that blocks at once (the default: ``dfs.qjournal.busy-poll.us`` 0).
read_replies_while_waiting = ReadRepliesWhileWaiting()
