"""EarlyAcknowledger: a JournalNode connection's acknowledgement of a durable batch.

The JournalNode's RPC server (``journal_node_rpc_server.py``) acknowledges a writer's
in-order batch the moment it is durable, from inside the Journal's lock
(``Journal.journal_in_order``, docs/journalnode.md). That send must never block there:
a client that stops reading its replies would otherwise hold the journal's lock, and
every other client with it.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Sequence

from hadoop_qjm.qjournal.protocol.sockets import write_frame
from hadoop_qjm.qjournal.protocol.wire import frame

__all__ = ["EarlyAcknowledger"]

LOG = logging.getLogger(__name__)


class EarlyAcknowledger:
    """Sends one connection's early acknowledgements (see the module docstring).

    For each call, :meth:`prepare` frames the acknowledgement ahead of the write and
    returns what sends it, which runs inside the Journal's lock: one non-blocking
    ``send`` on a blocking socket without a timeout; what did not fit in the socket's
    buffer, or an error, waits for :meth:`finish`. The connection's thread calls
    :meth:`finish` with the call's reply once the call is over, outside every lock: it
    sends the reply, or else the rest of the early acknowledgement and nothing more.
    """

    __slots__ = ("_acked", "_error", "_frame", "_frames", "_sent", "_sock", "_unsent")

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._frame = b""
        self._sent = False  # the prepared acknowledgement was handed to send
        self._unsent: bytes | memoryview = b""
        self._error: OSError | None = None
        # A group (prepare_group): every call's framed success, and how many were sent.
        self._frames: list[bytes] = []
        self._acked = 0

    def prepare(self, reply: bytes) -> Callable[[], None]:
        """Frame ``reply`` (the call's success); the returned function sends it."""
        self._frame = frame(reply)
        return self._acknowledge

    def _acknowledge(self) -> None:
        data = self._frame
        self._sent = True
        self._unsent = data  # all of it, unless the send says otherwise
        try:
            sent = self._sock.send(data, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return
        except OSError as e:
            self._error = e
            return
        self._unsent = memoryview(data)[sent:] if sent < len(data) else b""

    def prepare_group(self, replies: Sequence[bytes]) -> Callable[[int], None]:
        """:meth:`prepare` for a group of calls read together (the JournalNode's group
        fsync): frame each call's success; the returned function sends the first n."""
        self._frames = [frame(reply) for reply in replies]
        return self._acknowledge_first

    def _acknowledge_first(self, count: int) -> None:
        self._acked = count
        self._frame = b"".join(self._frames[:count])
        self._acknowledge()

    def finish(self, reply: bytes | list[bytes]) -> None:
        """Send ``reply`` unless the call was acknowledged early; then send the rest of
        the acknowledgement, and drop ``reply`` (logged if it is an error that came
        after). Raises the early send's OSError, if it had one.

        After :meth:`prepare_group`, ``reply`` is the list of the replies of the calls
        handled, in order: those acknowledged early are dropped the same way, and the
        replies after them are sent after the rest of the acknowledgement."""
        if type(reply) is not bytes:  # a group's replies
            acked = self._acked if self._sent else 0
            acknowledged, self._frames, self._acked = self._frames[:acked], [], 0
            unsent = b"".join(frame(r) for r in reply[acked:])
            if acked:
                if any(r != ack[4:] for r, ack in zip(reply, acknowledged)):
                    LOG.error("Call failed after its acknowledgement was sent; dropping its reply")
                error, unsent = self._error, bytes(self._unsent) + unsent
                self._sent, self._frame, self._unsent, self._error = False, b"", b"", None
                if error is not None:
                    raise error
            if unsent:
                self._sock.sendall(unsent)
            return
        if not self._sent:
            write_frame(self._sock, reply)
            return
        acknowledgement, unsent, error = self._frame[4:], self._unsent, self._error
        self._sent, self._frame, self._unsent, self._error = False, b"", b"", None
        if reply != acknowledgement:  # e.g. the metrics failed after the write
            LOG.error("Call failed after its acknowledgement was sent; dropping its reply")
        if error is not None:
            raise error
        if unsent:
            self._sock.sendall(unsent)
