"""Mutual-TLS socket factories for the Thrift RPC servers and clients.

They plug into the one place sockets are made
(:mod:`hadoop_qjm.common.net`, :mod:`hadoop_qjm.ipc.sockets`). The server's handshake runs in
:meth:`TlsServerSocketFactory.wrap_accepted`, which the RPC server calls in the
connection's own thread, bounded by a timeout: a client that never finishes its handshake
(a plain-TCP client, a port scanner) holds one connection thread for at most that long and
never the accept loop. A failed handshake is logged with its reason, reported to
``on_handshake_failure`` (the JournalNode counts it) and drops that one connection.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import ssl
import struct
from collections.abc import Callable

from hadoop_qjm.common.net import PlainSocketFactory
from hadoop_qjm.common.security.authorization import identity_from_peer_cert
from hadoop_qjm.common.security.tls_connection import TlsConnection

__all__ = [
    "TlsClientSocketFactory",
    "TlsServerSocketFactory",
    "handshake_failure_reason",
    "peer_identity",
]

LOG = logging.getLogger(__name__)

# OpenSSL's X509_V_ERR_* codes a verification failure carries.
_EXPIRED = {9, 10}  # CERT_NOT_YET_VALID, CERT_HAS_EXPIRED
_UNTRUSTED = {2, 18, 19, 20, 21, 27}  # unknown issuer, self-signed, untrusted
_NOT_TLS = {"WRONG_VERSION_NUMBER", "HTTP_REQUEST", "HTTPS_PROXY_REQUEST", "UNKNOWN_PROTOCOL"}
#: SO_LINGER on, 0 s: close() resets the connection.
_RESET_ON_CLOSE = struct.pack("ii", 1, 0)


def handshake_failure_reason(error: BaseException) -> str:
    """A short label for why a server-side handshake failed (a metric label).

    ``no_certificate``, ``expired_certificate`` (or not yet valid), ``untrusted_certificate``,
    ``bad_certificate``, ``peer_rejected_certificate`` (the client refused ours),
    ``not_tls`` (plain TCP or HTTP on a TLS port), ``protocol_version``, ``timeout``,
    ``closed`` (the peer went away mid-handshake) or ``other``.
    """
    if isinstance(error, ssl.SSLCertVerificationError):
        code = getattr(error, "verify_code", None)
        if code in _EXPIRED:
            return "expired_certificate"
        if code in _UNTRUSTED:
            return "untrusted_certificate"
        return "bad_certificate"
    if isinstance(error, TimeoutError):
        return "timeout"
    if isinstance(error, (ssl.SSLEOFError, ssl.SSLZeroReturnError, ConnectionError)):
        return "closed"
    if isinstance(error, ssl.SSLError):
        reason = error.reason or ""
        if reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE":
            return "no_certificate"
        if reason in _NOT_TLS:
            return "not_tls"
        if "PROTOCOL_VERSION" in reason or reason == "UNSUPPORTED_PROTOCOL":
            return "protocol_version"
        if reason.startswith(("SSLV3_ALERT_", "TLSV1_ALERT_", "TLSV13_ALERT_")):
            return "peer_rejected_certificate"
    return "other"


def peer_identity(sock: socket.socket) -> str | None:
    """The subject CN of the peer's verified certificate; None on a plain socket or without
    a certificate (see :mod:`~hadoop_qjm.common.security.authorization`)."""
    getpeercert = getattr(sock, "getpeercert", None)
    if getpeercert is None:
        return None
    try:
        return identity_from_peer_cert(getpeercert())
    except (ValueError, OSError):  # not connected, or the handshake is not done
        return None


def _peer_name(sock: socket.socket) -> str:
    try:
        host, port = sock.getpeername()[:2]
    except OSError:
        return "?"
    return f"{host}:{port}"


class TlsServerSocketFactory(PlainSocketFactory):
    """Listens on plain TCP; each accepted connection must complete a TLS handshake in
    which the client presents a certificate the ``context`` trusts (CERT_REQUIRED), and is
    then served as a :class:`~hadoop_qjm.common.security.tls_connection.TlsConnection`
    (memory BIOs: records read in large chunks, a reply encrypted as one write)."""

    def __init__(
        self,
        context: ssl.SSLContext,
        handshake_timeout_s: float,
        on_handshake_failure: Callable[[str], None] | None = None,
    ) -> None:
        self.context = context
        self.handshake_timeout_s = handshake_timeout_s
        self.on_handshake_failure = on_handshake_failure

    def wrap_accepted(self, conn: socket.socket) -> TlsConnection:  # type: ignore[override]
        conn = super().wrap_accepted(conn)
        peer = _peer_name(conn)
        try:
            return TlsConnection.accept(self.context, conn, self.handshake_timeout_s)
        except OSError as e:
            reason = handshake_failure_reason(e)
            LOG.warning("TLS handshake with %s failed (%s): %s", peer, reason, e)
            if self.on_handshake_failure is not None:
                self.on_handshake_failure(reason)
            if reason == "not_tls":
                # Close with a reset, not a FIN: a plain client learns at once that its
                # request was refused (docs/security.md, "What a client sees").
                with contextlib.suppress(OSError):
                    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, _RESET_ON_CLOSE)
            raise

    def peer_identity(self, sock: socket.socket) -> str | None:
        return peer_identity(sock)


class TlsClientSocketFactory(PlainSocketFactory):
    """Connects and completes a TLS handshake: the server's certificate chain must lead to
    the trust store and name the host connected to (a DNS or IP SAN); the client presents
    its own certificate. The connect timeout bounds the handshake too."""

    def __init__(self, context: ssl.SSLContext) -> None:
        self.context = context

    def connect(self, host: str, port: int, timeout_s: float | None) -> socket.socket:
        sock = super().connect(host, port, timeout_s)
        try:
            return self.context.wrap_socket(sock, server_hostname=host.strip("[]"))
        except ssl.SSLCertVerificationError as e:
            sock.close()
            raise ssl.SSLCertVerificationError(
                f"TLS handshake with {host}:{port} failed: the server's certificate was "
                f"refused ({e.verify_message or e.reason})"
            ) from e
        except BaseException:
            sock.close()
            raise
