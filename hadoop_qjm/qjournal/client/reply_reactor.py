"""ReplyReactor: who reads the replies of every PipelinedChannel (see
:mod:`hadoop_qjm.qjournal.client.pipelined_channel`, which re-exports these names), and
the waiter's assist that reads them while it waits."""

from __future__ import annotations

import contextlib
import logging
import math
import os
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.ipc.frames import FrameDecoder
from hadoop_qjm.ipc.socket_channel import close_socket
from hadoop_qjm.ipc.tls_session import TlsSession

__all__ = [
    "LEASE_S",
    "MAX_BUSY_POLL_US",
    "ROLE_RETRY_S",
    "ReadRepliesWhileWaiting",
    "ReplyReactor",
    "read_replies_while_waiting",
    "select_with_busy_poll",
]

LOG = logging.getLogger("hadoop_qjm.qjournal.client.quorum_journal_manager")

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
        self._channels: set[Any] = set()  # the role holder only
        self._role = threading.Lock()
        self._role_owner: int | None = None
        self._lease_until = 0.0  # the reactor thread leaves the role to waiters until then
        # No channel's reply deadline comes before this (see _poll); -inf: look again.
        self._next_deadline = -math.inf
        # Set by the role holder's own callbacks (stop_handling) when what it waits for
        # came: the rest of that poll's events wait for the next poll.
        self._enough = False
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

    def stop_handling(self) -> None:
        """Called by the role holder (a reply's callback): handle no more of this poll's
        events, so that the waiter sees at once what it waited for."""
        self._enough = True

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
    def _register(self, sock: socket.socket, channel: Any, tls: TlsSession | None) -> None:
        if channel._sock is not sock:
            return  # already dropped: its unregister (queued after this) closes it
        # Each connection has its own read buffer and TLS session: nothing of an old one
        # can leak into the next.
        self._selector.register(
            sock, selectors.EVENT_READ, (channel, FrameDecoder(channel.max_frame_size), tls)
        )
        self._channels.add(channel)
        self._next_deadline = -math.inf  # its timeout may be shorter than the others'

    def _unregister(self, sock: socket.socket, channel: Any) -> None:
        with contextlib.suppress(KeyError, ValueError, OSError):
            self._selector.unregister(sock)
        close_socket(sock)
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
        self._enough = False
        for key, mask in select_with_busy_poll(self._selector.select, timeout, busy_poll_s):
            if self._enough:
                # The waiter has its quorum: the other sockets stay readable (the selector
                # is level-triggered), and their replies - a third node's - are read by
                # the next poll, after the writer has gone on.
                break
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


def _forget_shared_reactor() -> None:
    """In a forked child: the parent's reactor thread did not survive the fork."""
    ReplyReactor._shared = None


os.register_at_fork(after_in_child=_forget_shared_reactor)


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
        # A forked child has none until it makes its own (_forget_shared_reactor): no
        # getpid() here, a system call, made several times per batch.
        return ReplyReactor._shared

    def __call__(self, timeout_s: float, held: Any = None) -> bool:
        """A waiter's turn at reading replies (:meth:`ReplyReactor.read_while_waiting`);
        False if there is no reactor yet or another thread is reading."""
        reactor = self._reactor()
        return reactor is not None and reactor.read_while_waiting(timeout_s, held, self.busy_poll_s)

    def stop_handling(self) -> None:
        """From a reply's callback in the waiter's own poll: what it waits for came, so
        the poll handles no more events (:meth:`ReplyReactor.stop_handling`)."""
        reactor = self._reactor()
        if reactor is not None and reactor.holds_role():
            reactor.stop_handling()

    def wake(self) -> None:
        """Interrupt the poll of a waiter reading replies: what it waits for may have
        happened in another thread."""
        reactor = self._reactor()
        if reactor is not None:
            reactor.wake()


#: The assist that blocks at once (the default: ``dfs.qjournal.busy-poll.us`` 0).
read_replies_while_waiting = ReadRepliesWhileWaiting()
