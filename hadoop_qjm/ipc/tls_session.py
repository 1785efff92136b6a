"""TlsSession: a client TLS connection driven through memory BIOs, so that one thread may
read its socket while another writes it (an ``ssl.SSLSocket`` allows neither): the
pipelined client's TLS (:mod:`hadoop_qjm.qjournal.client.pipelined_channel`)."""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
import time
from collections.abc import Sequence

__all__ = ["TlsSession"]

_RECV_SIZE = 256 * 1024
#: What one TLS read asks for: below glibc's mmap threshold (128 KiB), so that asking
#: does not cost an mmap and munmap (recv(256 KiB) costs ~12 us more than recv(64 KiB)).
_TLS_READ_SIZE = 64 * 1024


class TlsSession:
    """A client TLS connection driven through memory BIOs ."""

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
