"""TlsConnection, the RPC server's TLS over memory BIOs (common/security/tls_connection.py).

What it must do better than an SSLSocket, each on a real socket pair with the session
PKI's contexts (``SSLFactory``'s: mutual TLS, no session tickets): read every record
that has arrived with one call, send a reply as one record, and send without waiting —
the ciphertext the socket did not take going out before it next waits for the peer.
"""

from __future__ import annotations

import socket
import ssl
import struct
import threading
from collections.abc import Iterator

import pytest

from hadoop_qjm.common.security import SSLFactory
from hadoop_qjm.common.security.tls_connection import TlsConnection
from hadoop_qjm.ipc.tls_session import TlsSession

pytestmark = pytest.mark.timeout(60)

DEADLINE_S = 10.0
_RECORD_HEADER = struct.Struct(">BHH")  # content type, legacy version, length


@pytest.fixture
def pair(pki) -> Iterator[tuple[TlsSession, socket.socket, TlsConnection]]:
    """(the client's session, its socket, the server's connection), handshaken."""
    factory = SSLFactory(pki.conf())
    client_sock, server_sock = socket.socketpair()
    for sock in (client_sock, server_sock):
        sock.settimeout(DEADLINE_S)
    session = TlsSession(factory.client_context(), "localhost")
    accepted: list[TlsConnection] = []
    server = threading.Thread(
        target=lambda: accepted.append(
            TlsConnection.accept(factory.server_context(True), server_sock, DEADLINE_S)
        )
    )
    server.start()
    session.handshake(client_sock, DEADLINE_S)
    server.join(DEADLINE_S)
    assert accepted, "the server's handshake did not complete"
    connection = accepted[0]
    # Blocking without a timeout, as the RPC server serves it: a socket with a timeout
    # would wait to be readable or writable before a MSG_DONTWAIT call.
    connection.settimeout(None)
    try:
        yield session, client_sock, connection
    finally:
        client_sock.close()
        connection.close()


def _records(data: bytes) -> list[int]:
    """The lengths of the TLS records ``data`` holds (whole records only)."""
    lengths, pos = [], 0
    while pos + _RECORD_HEADER.size <= len(data):
        _, _, length = _RECORD_HEADER.unpack_from(data, pos)
        lengths.append(length)
        pos += _RECORD_HEADER.size + length
    assert pos == len(data), "a partial record"
    return lengths


def _recv_exactly(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        assert chunk, "closed early"
        data += chunk
    return data


def test_every_record_that_arrived_is_read_in_one_call(pair) -> None:
    session, client_sock, connection = pair
    frames = [bytes([n]) * (1000 + n) for n in range(5)]
    for frame in frames:  # five records, all in the server's socket buffer
        client_sock.sendall(session.encrypt([frame]))
    buffer = bytearray(256 * 1024)
    received = connection.recv_into(buffer)
    assert bytes(buffer[:received]) == b"".join(frames)


def test_a_request_of_several_parts_is_one_record(pair) -> None:
    session, _, _ = pair
    assert len(_records(session.encrypt([b"head" * 10, b"body" * 500, b"tail"]))) == 1


def test_a_reply_is_one_record_and_nothing_else_follows_the_handshake(pair) -> None:
    session, client_sock, connection = pair
    replies = b"".join(struct.pack(">i", 30) + bytes(30) for _ in range(5))
    connection.sendall(replies)  # a group's replies, as the JournalNode sends them
    header = _recv_exactly(client_sock, _RECORD_HEADER.size)
    _, _, length = _RECORD_HEADER.unpack(header)
    record = header + _recv_exactly(client_sock, length)
    client_sock.setblocking(False)
    with pytest.raises(BlockingIOError):  # no session ticket, no second record
        client_sock.recv(1)
    plaintext, closed = session.decrypt(record)
    assert plaintext == replies and not closed


def test_a_send_without_waiting_never_waits_and_goes_out_before_the_next_read(pair) -> None:
    session, client_sock, connection = pair
    connection._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    chunk = bytes(range(256)) * 64  # 16 KiB
    sent = [connection.send(chunk, socket.MSG_DONTWAIT) for _ in range(64)]  # 1 MiB
    assert sent == [len(chunk)] * 64  # all taken, though the peer has read nothing yet
    assert connection._unsent, "the socket took 1 MiB without a reader"
    got: list[bytes] = []

    def client() -> None:
        client_sock.sendall(session.encrypt([b"next request"]))
        plaintext = b""
        while len(plaintext) < 64 * len(chunk):
            data = client_sock.recv(256 * 1024)
            assert data, "closed early"
            plaintext += session.decrypt(data)[0]
        got.append(plaintext)

    reader = threading.Thread(target=client)
    reader.start()
    buffer = bytearray(1024)
    received = connection.recv_into(buffer)  # sends what it owes first, then reads
    reader.join(DEADLINE_S)
    assert bytes(buffer[:received]) == b"next request"
    assert got == [chunk * 64]


def test_nothing_to_read_without_waiting_is_blocking_io(pair) -> None:
    _, _, connection = pair
    with pytest.raises(BlockingIOError):
        connection.recv_into(bytearray(100), 0, socket.MSG_DONTWAIT)


def test_the_peer_closing_reads_as_the_end(pair) -> None:
    session, client_sock, connection = pair
    client_sock.sendall(session.encrypt([b"last"]))
    client_sock.shutdown(socket.SHUT_WR)
    buffer = bytearray(100)
    assert connection.recv_into(buffer) == 4 and bytes(buffer[:4]) == b"last"
    assert connection.recv_into(buffer) == 0


def test_the_peer_identity_is_the_verified_client_certificate(pair) -> None:
    _, _, connection = pair
    subject = dict(rdn[0] for rdn in connection.getpeercert()["subject"])
    assert subject["commonName"] == "namenode"
    assert connection.version() == "TLSv1.3"


def test_a_client_without_a_certificate_gets_the_alert(pki) -> None:
    factory = SSLFactory(pki.conf())
    client_sock, server_sock = socket.socketpair()
    errors: list[BaseException] = []

    def accept() -> None:
        try:
            TlsConnection.accept(factory.server_context(True), server_sock, DEADLINE_S)
        except ssl.SSLError as e:
            errors.append(e)

    server = threading.Thread(target=accept)
    server.start()
    anonymous = TlsSession(pki.client_context(None), "localhost")
    with client_sock, server_sock:
        client_sock.settimeout(DEADLINE_S)
        anonymous.handshake(client_sock, DEADLINE_S)  # TLS 1.3: done before the server's check
        server.join(DEADLINE_S)
        assert errors and errors[0].reason == "PEER_DID_NOT_RETURN_A_CERTIFICATE"
        with pytest.raises(ssl.SSLError, match="certificate required"):
            anonymous.decrypt(client_sock.recv(4096))
