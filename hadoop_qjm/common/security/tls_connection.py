"""TLS driven through memory BIOs over a plain socket: the handshake both ends share
(:func:`handshake_over`) and an RPC server's accepted connection (:class:`TlsConnection`).

An ``ssl.SSLSocket`` reads one TLS record per ``recv`` and two system calls per record
(its 5-byte header, then the rest), and its ``send`` cannot be told not to wait. Over
memory BIOs the server reads whatever ciphertext has arrived in one ``recv`` and decrypts
every record of it in one go, and encrypts a reply — or a group's replies — as one write:
one ``SSLObject.write`` per reply, however many frames it holds. The JournalNode then
serves a TLS connection as it serves a plain one (its group fsync and early
acknowledgements, ``PipelinedBatchReader``). The certificates, the verification and the
identity are the context's, exactly as with an SSLSocket.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import time
from typing import Any

__all__ = ["TLS_RECEIVE_SIZE", "TlsConnection", "handshake_over"]

#: Ciphertext read per ``recv``: a pipelining writer's batches that arrived together are
#: read and decrypted in one go (a TLS record holds at most 16 KiB of plaintext).
TLS_RECEIVE_SIZE = 256 * 1024
#: The most one ``SSLObject.read`` is asked for: below glibc's mmap threshold (128 KiB),
#: so that a read into a new buffer does not cost an mmap and a munmap.
_TLS_READ_SIZE = 64 * 1024
#: ``socket.MSG_DONTWAIT`` as a plain int: an IntFlag's ``&`` is enum.py's Python code
#: (6 % of a JournalNode's CPU when it ran on every call).
_DONTWAIT = int(socket.MSG_DONTWAIT)


def handshake_over(
    obj: ssl.SSLObject,
    incoming: ssl.MemoryBIO,
    outgoing: ssl.MemoryBIO,
    sock: socket.socket,
    timeout_s: float | None,
) -> None:
    """Complete ``obj``'s handshake over the blocking ``sock`` within ``timeout_s``.

    Raises ``ssl.SSLError`` (after sending the alert OpenSSL queued, so that the peer
    learns why, as an SSLSocket would tell it), ``TimeoutError``, or ConnectionError if
    the peer closed the connection first.
    """
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    if timeout_s is not None:
        sock.settimeout(timeout_s)
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            if outgoing.pending:
                sock.sendall(outgoing.read())
            if deadline is not None:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("the TLS handshake timed out") from None
                sock.settimeout(remaining)
            data = sock.recv(TLS_RECEIVE_SIZE)
            if not data:
                raise ConnectionError(
                    "the peer closed the connection during the TLS handshake"
                ) from None
            incoming.write(data)
        except ssl.SSLError:
            if outgoing.pending:
                with contextlib.suppress(OSError):
                    sock.sendall(outgoing.read())
            raise
    if outgoing.pending:
        sock.sendall(outgoing.read())


class TlsConnection:
    """An accepted connection's TLS over memory BIOs, used like the socket it wraps.

    :meth:`recv_into` decrypts everything that has arrived into the caller's buffer,
    reading the socket only when no whole record is buffered; ``MSG_DONTWAIT`` makes it
    not wait (BlockingIOError, as a socket's). :meth:`send` encrypts ``data`` as one write
    and sends the ciphertext; with ``MSG_DONTWAIT`` it never waits — all of ``data`` is
    taken, and the ciphertext the socket did not take goes out before this connection next
    waits for the peer, or with the next blocking send. Used by one thread at a time
    (another may :meth:`shutdown` it, to wake that thread).
    """

    __slots__ = ("_eof", "_incoming", "_obj", "_outgoing", "_rx", "_sock", "_unsent")

    def __init__(
        self,
        sock: socket.socket,
        obj: ssl.SSLObject,
        incoming: ssl.MemoryBIO,
        outgoing: ssl.MemoryBIO,
    ) -> None:
        self._sock = sock
        self._obj = obj
        self._incoming = incoming
        self._outgoing = outgoing
        self._rx = memoryview(bytearray(TLS_RECEIVE_SIZE))
        self._unsent: bytes | memoryview = b""  # ciphertext the socket has not taken yet
        self._eof = False

    @classmethod
    def accept(
        cls, context: ssl.SSLContext, sock: socket.socket, timeout_s: float | None
    ) -> TlsConnection:
        """The server side of a TLS connection on the accepted ``sock``, its handshake
        completed within ``timeout_s`` (errors as :func:`handshake_over`'s); ``sock`` is
        left with the timeout it had."""
        timeout = sock.gettimeout()
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = context.wrap_bio(incoming, outgoing, server_side=True)
        handshake_over(obj, incoming, outgoing, sock, timeout_s)
        sock.settimeout(timeout)
        return cls(sock, obj, incoming, outgoing)

    # ---- reading ---------------------------------------------------------------------------
    def recv_into(self, buffer: Any, nbytes: int = 0, flags: int = 0) -> int:
        """Plaintext into ``buffer`` (at most ``nbytes``, 0: its size); 0 once the peer
        closed the connection. ``flags``: 0 or ``MSG_DONTWAIT``."""
        view = memoryview(buffer)
        if nbytes:
            view = view[:nbytes]
        if not len(view):
            return 0
        dontwait = _DONTWAIT if flags else 0
        # What we owe the peer goes out before we wait for it (it may be waiting for that).
        self._flush(wait=not flags)
        while True:
            received = self._decrypt_into(view)
            if received or self._eof:
                return received
            count = self._sock.recv_into(self._rx, TLS_RECEIVE_SIZE, dontwait)
            if not count:
                self._eof = True
                return 0
            self._incoming.write(self._rx[:count])

    def recv(self, bufsize: int, flags: int = 0) -> bytes:
        buffer = bytearray(min(bufsize, _TLS_READ_SIZE))
        count = self.recv_into(buffer, 0, flags)
        return bytes(buffer[:count])

    def _decrypt_into(self, view: memoryview) -> int:
        obj, incoming = self._obj, self._incoming
        total, size = 0, len(view)
        # Looking at what is buffered first spares the SSLWantReadError of the usual end
        # (raising and catching it costs about 3 us).
        while total < size and (incoming.pending or obj.pending()):
            try:
                count = obj.read(size - total, view[total:])
            except ssl.SSLWantReadError:  # only part of a record is here
                break
            except ssl.SSLZeroReturnError:  # the peer's close_notify
                self._eof = True
                break
            if not count:
                break
            total += count
        return total

    # ---- writing ---------------------------------------------------------------------------
    def send(self, data: Any, flags: int = 0) -> int:
        """Encrypt all of ``data`` and send it (see the class docstring); ``len(data)``.
        ``flags``: 0 or ``MSG_DONTWAIT``."""
        self._obj.write(data)
        self._flush(wait=not flags)
        return len(data)

    def sendall(self, data: Any) -> None:
        self._obj.write(data)
        self._flush(wait=True)

    def _flush(self, *, wait: bool) -> None:
        """Send the ciphertext due: all of it (``wait``), or what the socket takes now."""
        outgoing = self._outgoing
        if outgoing.pending:
            produced = outgoing.read()
            self._unsent = bytes(self._unsent) + produced if self._unsent else produced
        unsent = self._unsent
        if not unsent:
            return
        if wait:
            self._unsent = b""
            self._sock.sendall(unsent)
            return
        try:
            sent = self._sock.send(unsent, _DONTWAIT)
        except BlockingIOError:
            return
        self._unsent = memoryview(unsent)[sent:] if sent < len(unsent) else b""

    # ---- the rest of a socket --------------------------------------------------------------
    def getpeercert(self, binary_form: bool = False) -> Any:
        return self._obj.getpeercert(binary_form)

    def cipher(self) -> tuple[str, str, int] | None:
        return self._obj.cipher()

    def version(self) -> str | None:
        return self._obj.version()

    def gettimeout(self) -> float | None:
        return self._sock.gettimeout()

    def settimeout(self, timeout: float | None) -> None:
        self._sock.settimeout(timeout)

    def fileno(self) -> int:
        return self._sock.fileno()

    def getpeername(self) -> Any:
        return self._sock.getpeername()

    def getsockname(self) -> Any:
        return self._sock.getsockname()

    def shutdown(self, how: int) -> None:
        self._sock.shutdown(how)

    def close(self) -> None:
        self._sock.close()

    def __repr__(self) -> str:
        return f"TlsConnection({self._sock!r})"
