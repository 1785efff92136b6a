"""TlsSession: a client TLS connection driven through memory BIOs, so that one thread may
read its socket while another writes it (an ``ssl.SSLSocket`` allows neither): the
pipelined client's TLS (:mod:`hadoop_qjm.qjournal.client.pipelined_channel`)."""

from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Sequence

from hadoop_qjm.common.security.tls_connection import handshake_over

__all__ = ["TlsSession"]

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
        try:
            handshake_over(self._obj, self._incoming, self._outgoing, sock, timeout_s)
        except ssl.SSLCertVerificationError as e:
            raise ssl.SSLCertVerificationError(
                f"TLS handshake with {self.host} failed: the server's certificate was "
                f"refused ({e.verify_message or e.reason})"
            ) from e

    def encrypt(self, parts: Sequence[bytes]) -> bytes:
        """The ciphertext of ``parts`` — and of anything the session had to send first.

        One write for all of them: a request is one TLS record (up to 16 KiB), not one
        per part, which the server then reads and decrypts once."""
        data = parts[0] if len(parts) == 1 else b"".join(parts)
        with self._lock:
            self._obj.write(data)
            return self._outgoing.read()

    def decrypt(self, data: bytes | memoryview) -> tuple[bytes, bool]:
        """``(plaintext, closed)``: what ``data`` completes; ``closed`` when the server sent
        close_notify. What the session must send back stays queued (:meth:`take_outgoing`)."""
        chunks = []
        closed = False
        with self._lock:
            incoming, obj = self._incoming, self._obj
            incoming.write(data)
            # Looking at what is buffered first spares the SSLWantReadError of the usual
            # end (raising and catching it costs about 3 us).
            while incoming.pending or obj.pending():
                try:
                    chunk = obj.read(_TLS_READ_SIZE)
                except ssl.SSLWantReadError:
                    break
                except ssl.SSLZeroReturnError:
                    closed = True
                    break
                if not chunk:
                    break
                chunks.append(chunk)
        if len(chunks) == 1:
            return chunks[0], closed
        return b"".join(chunks), closed

    @property
    def has_outgoing(self) -> bool:
        return self._outgoing.pending > 0

    def take_outgoing(self) -> bytes:
        with self._lock:
            return self._outgoing.read()
