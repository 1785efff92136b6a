"""IpcServer (the NameNode's Hadoop-shaped RPC server) over real loopback sockets.

Behind it a hand-written ``process``: ``echo:X`` answers ``X``, ``who:`` the caller's
user (both servers: the ``Server`` of ipc/server.py too), ``wait:X`` waits for the
test's gate first, ``post:X`` postpones its reply to the test, ``bad`` is not a call.
Only 127.0.0.1 and port 0; waits have deadlines.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from hadoop_qjm.ipc import call_context
from hadoop_qjm.ipc.connection_context import CONTEXT_MAGIC
from hadoop_qjm.ipc.selector_server import Call, IpcServer, current_call
from hadoop_qjm.ipc.server import Server
from hadoop_qjm.ipc.socket_channel import SocketChannel
from hadoop_qjm.qjournal.protocol.sockets import PlainSocketFactory
from hadoop_qjm.qjournal.protocol.wire import ProtocolError
from hadoop_qjm.testing.in_process_ha import wait_until

pytestmark = pytest.mark.timeout(60)

DEADLINE_S = 20.0
_LEN = struct.Struct(">i")


class Backend:
    def __init__(self) -> None:
        self.gate = threading.Event()
        self.postponed: list[Call] = []
        self.lock = threading.Lock()

    def process(self, payload: bytes, remote_ip: str) -> bytes:
        assert remote_ip == "127.0.0.1"
        kind, _, rest = payload.partition(b":")
        if kind == b"echo":
            return rest
        if kind == b"wait":
            assert self.gate.wait(DEADLINE_S)
            return rest
        if kind == b"who":
            return str(call_context.remote_ugi()).encode()
        if kind == b"post":
            call = current_call()
            assert call is not None
            call.postpone()
            with self.lock:
                self.postponed.append(call)
            return rest
        raise ProtocolError(f"not a call: {payload[:20]!r}")

    @staticmethod
    def error_reply(payload: bytes, error: Exception) -> bytes:
        return b"error:" + str(error).encode()


def make_server(backend: Backend, handlers: int = 4, queue_size: int = 100) -> IpcServer:
    server = IpcServer(
        backend.process,
        backend.error_reply,
        PlainSocketFactory(),
        "127.0.0.1",
        0,
        handlers,
        1024,
        queue_size,
    )
    server.start()
    return server


@pytest.fixture
def backend() -> Backend:
    return Backend()


@pytest.fixture
def server(backend: Backend) -> Iterator[IpcServer]:
    srv = make_server(backend)
    try:
        yield srv
    finally:
        backend.gate.set()
        srv.stop(10)


def connect(server: IpcServer) -> socket.socket:
    sock = socket.create_connection(server.address, timeout=DEADLINE_S)
    return sock


def send(sock: socket.socket, *payloads: bytes) -> None:
    sock.sendall(b"".join(_LEN.pack(len(p)) + p for p in payloads))


def recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError(f"closed after {len(data)} of {n} bytes")
        data += chunk
    return data


def reply(sock: socket.socket) -> bytes:
    (size,) = _LEN.unpack(recv_exact(sock, 4))
    return recv_exact(sock, size)


def ipc_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("IPC Server")]


def test_calls_pipelined_on_one_connection_are_answered_in_order(server: IpcServer) -> None:
    with connect(server) as sock:
        send(sock, *(f"echo:{i}".encode() for i in range(50)))
        assert [reply(sock) for _ in range(50)] == [str(i).encode() for i in range(50)]


def test_an_oversized_frame_drops_that_connection_only(server: IpcServer) -> None:
    with connect(server) as bad, connect(server) as good:
        bad.sendall(_LEN.pack(1025) + b"x" * 10)
        assert bad.recv(10) == b""  # the server closed it
        send(good, b"echo:still here")
        assert reply(good) == b"still here"


def test_a_malformed_call_drops_that_connection_and_the_server_serves_on(
    server: IpcServer,
) -> None:
    with connect(server) as bad, connect(server) as good:
        send(bad, b"bad")
        assert bad.recv(10) == b""
        send(good, b"echo:ok")
        assert reply(good) == b"ok"
    with connect(server) as again:
        send(again, b"echo:new connection")
        assert reply(again) == b"new connection"


def test_a_full_call_queue_blocks_the_reader_until_a_handler_frees_a_place(
    backend: Backend,
) -> None:
    # One handler, one place in the queue: call A executes, B waits in the queue, C is read
    # but blocks the listener, and D's connection is not even read.
    server = make_server(backend, handlers=1, queue_size=1)
    socks = [connect(server) for _ in range(4)]
    try:
        send(socks[0], b"wait:A")
        wait_until(lambda: server.call_queue_length == 0, DEADLINE_S)
        send(socks[1], b"wait:B")
        wait_until(lambda: server.call_queue_length == 1, DEADLINE_S)
        send(socks[2], b"echo:C")
        send(socks[3], b"echo:D")
        socks[3].settimeout(0.3)
        with pytest.raises(TimeoutError):
            socks[3].recv(1)  # nothing is answered while the queue is full
        assert server.call_queue_length == 1
        backend.gate.set()
        for sock, expected in zip(socks, (b"A", b"B", b"C", b"D"), strict=True):
            sock.settimeout(DEADLINE_S)
            assert reply(sock) == expected
    finally:
        for sock in socks:
            sock.close()
        server.stop(10)


def test_a_full_wake_socket_never_blocks_a_handler_while_the_queue_is_full(
    backend: Backend,
) -> None:
    """Issue 23 review: while a full call queue holds the listener, nobody drains its
    wake socket, and each reply that leaves a connection with frames waiting writes one
    byte to it (278 fill a socketpair here). Were that write blocking, the handler making
    it would stop taking calls, the queue would never free a place, and the listener and
    the handlers would wait for each other for ever.

        A: [wait:A1][echo:A2]  A1 executes, A2 waits in the connection
        B: [echo:B]            in the queue (one place: full)
        C: [echo:C]            read; the listener waits for a place
        wake socket: full      A1's reply wakes the listener for A2
    """
    server = make_server(backend, handlers=1, queue_size=1)
    socks = {name: connect(server) for name in "ABC"}

    def conn_of(sock: socket.socket):  # noqa: ANN202 - the server's _Connection
        peer = f"127.0.0.1:{sock.getsockname()[1]}"
        with server._lock:
            return next((c for c in server._connections.values() if c.peer == peer), None)

    try:
        send(socks["A"], b"wait:A1", b"echo:A2")
        # (the connection is known once the listener accepted it)
        wait_until(
            lambda: (
                server.call_queue_length == 0
                and (conn := conn_of(socks["A"])) is not None
                and bool(conn.frames)
            )
        )
        send(socks["B"], b"echo:B")
        wait_until(lambda: server.call_queue_length == 1, DEADLINE_S)
        send(socks["C"], b"echo:C")
        # C's call is taken off its connection: the listener now waits for a place.
        wait_until(lambda: conn_of(socks["C"]) is not None and conn_of(socks["C"]).busy, DEADLINE_S)
        filled = 0
        while True:  # what many wake-ups left undrained
            try:
                server._wake_w.send(b"x", socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            filled += 1
        assert filled > 0
        backend.gate.set()
        for name, expected in (("A", b"A1"), ("B", b"B"), ("C", b"C"), ("A", b"A2")):
            socks[name].settimeout(5.0)
            assert reply(socks[name]) == expected, name
    finally:
        backend.gate.set()
        with contextlib.suppress(OSError):  # unblock a stuck handler, so stop() can join
            while server._wake_r.recv(65536, socket.MSG_DONTWAIT):
                pass
        for sock in socks.values():
            sock.close()
        server.stop(10)


def test_many_connections_each_get_their_own_replies(server: IpcServer) -> None:
    errors: list[BaseException] = []

    def client(n: int) -> None:
        try:
            with connect(server) as sock:
                for i in range(5):
                    send(sock, f"echo:{n}-{i}".encode())
                    assert reply(sock) == f"{n}-{i}".encode()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(100)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(DEADLINE_S)
    assert errors == []
    wait_until(lambda: server.num_open_connections == 0, DEADLINE_S)


def test_a_postponed_reply_goes_out_when_released_and_a_failed_one_as_an_error(
    server: IpcServer, backend: Backend
) -> None:
    with connect(server) as one, connect(server) as two:
        send(one, b"post:first")
        send(two, b"post:second")
        wait_until(lambda: len(backend.postponed) == 2, DEADLINE_S)
        one.settimeout(0.2)
        with pytest.raises(TimeoutError):
            one.recv(1)  # held until released
        one.settimeout(DEADLINE_S)
        by_reply = {c.payload: c for c in backend.postponed}
        by_reply[b"post:first"].send_response()
        by_reply[b"post:second"].fail(OSError("sync failed"))
        assert reply(one) == b"first"
        assert reply(two) == b"error:sync failed"
        # The connection takes its next call once the postponed reply is out.
        send(one, b"echo:next")
        assert reply(one) == b"next"


def test_a_postponed_reply_goes_out_while_a_full_call_queue_holds_the_listener(
    backend: Backend,
) -> None:
    """The listener writes the replies a syncer releases; while it waits for a place in a
    full call queue it still writes them (else a postponed reply would wait for a handler
    that may itself be waiting).

        P: [post:P]   postponed, held by the test
        A: [wait:A]   executes (one handler)
        B: [echo:B]   in the queue (one place: full)
        C: [echo:C]   read; the listener waits for a place
    """
    server = make_server(backend, handlers=1, queue_size=1)
    socks = {name: connect(server) for name in "PABC"}
    try:
        send(socks["P"], b"post:P")
        wait_until(lambda: len(backend.postponed) == 1, DEADLINE_S)
        send(socks["A"], b"wait:A")
        wait_until(lambda: server.call_queue_length == 0, DEADLINE_S)
        send(socks["B"], b"echo:B")
        wait_until(lambda: server.call_queue_length == 1, DEADLINE_S)
        send(socks["C"], b"echo:C")
        socks["C"].settimeout(0.3)
        with pytest.raises(TimeoutError):
            socks["C"].recv(1)  # the listener holds C's call: the queue is full
        backend.postponed[0].send_response()
        socks["P"].settimeout(5.0)
        assert reply(socks["P"]) == b"P"
        assert server.call_queue_length == 1  # A still executes, B queued: C still held
        backend.gate.set()
        for name in "ABC":
            socks[name].settimeout(DEADLINE_S)
            assert reply(socks[name]) == name.encode()
    finally:
        backend.gate.set()
        for sock in socks.values():
            sock.close()
        server.stop(10)


def test_stop_closes_every_connection_and_joins_every_thread(backend: Backend) -> None:
    before = set(ipc_threads())
    server = make_server(backend, handlers=3)
    socks = [connect(server) for _ in range(5)]
    try:
        send(socks[0], b"echo:served")
        assert reply(socks[0]) == b"served"
        wait_until(lambda: server.num_open_connections == 5, DEADLINE_S)
        server.stop(10)
        for sock in socks:
            assert sock.recv(1) == b""
        assert set(ipc_threads()) == before
        with pytest.raises(OSError):
            socket.create_connection(server.address, timeout=2).close()
        server.stop(10)  # idempotent
    finally:
        for sock in socks:
            sock.close()


# ------------------------------------------------------------ who the caller is


class _Dispatcher:
    def __init__(self, backend: Backend) -> None:
        self.process = backend.process


@pytest.fixture(params=["selector", "threaded"])
def any_server(request: pytest.FixtureRequest, backend: Backend) -> Iterator[Any]:
    """The NameNode's plain server, and the one the JournalNode, the ZKFC and TLS use."""
    if request.param == "selector":
        srv: Any = make_server(backend)
    else:
        srv = Server(_Dispatcher(backend), "127.0.0.1", 0, 2, 1024)
        srv.start()
    try:
        yield srv
    finally:
        srv.stop(10)


def test_a_peer_that_closed_is_gone_before_its_reader_thread_notices(backend: Backend) -> None:
    """The JournalNode asks whether its writer is still connected (before a format or a
    rollback's discardSegments): right after the NameNode closed its end, the answer is
    no, though the connection's reader thread (here busy with a call) has not read the
    FIN yet."""
    server = Server(_Dispatcher(backend), "127.0.0.1", 0, 2, 1024)
    server.start()
    try:
        sock = connect(server)
        send(sock, b"wait:held")  # the threaded server runs it in the reader thread
        wait_until(lambda: len(server._connections) == 1, DEADLINE_S)
        (conn,) = server._connections
        assert conn.is_open()
        sock.shutdown(socket.SHUT_RDWR)
        sock.close()
        wait_until(lambda: not conn.is_open(), DEADLINE_S)
        assert conn.open  # its reader thread has not seen the close
        backend.gate.set()
        wait_until(lambda: not conn.open and not server._connections, DEADLINE_S)
    finally:
        backend.gate.set()
        server.stop(10)


def test_the_user_a_client_claims_in_its_connection_context_is_the_callers(
    any_server: Any,
) -> None:
    channel = SocketChannel("127.0.0.1", any_server.address[1], DEADLINE_S, user="alice")
    try:
        assert channel.call(b"who:") == b"alice (auth:SIMPLE)"
        assert channel.call(b"echo:again") == b"again"  # the context went once
    finally:
        channel.close()


def test_a_connection_without_a_context_is_served_as_dr_who(any_server: Any) -> None:
    with socket.create_connection(any_server.address, timeout=DEADLINE_S) as sock:
        send(sock, b"who:")
        assert reply(sock) == b"dr.who (auth:SIMPLE)"


def test_a_malformed_context_drops_that_connection_and_the_server_serves_on(
    any_server: Any,
) -> None:
    with socket.create_connection(any_server.address, timeout=DEADLINE_S) as bad:
        send(bad, CONTEXT_MAGIC + b"al ice", b"who:")
        assert bad.recv(10) == b""
    with socket.create_connection(any_server.address, timeout=DEADLINE_S) as good:
        send(good, CONTEXT_MAGIC + b"bob", b"who:")
        assert reply(good) == b"bob (auth:SIMPLE)"


def test_rpc_metrics_count_every_call_of_either_server(any_server: Any) -> None:
    """Hadoop's RpcMetrics (TestJournalNodeSync checks the JournalNode's counted its
    requests): every call once in RpcQueueTime, RpcProcessingTime and TotalRequests,
    pipelined calls too, the connection context not; NumOpenConnections while connected;
    the counts of a closed connection kept."""
    metrics = any_server.rpc_metrics

    def attributes() -> dict[str, Any]:
        return metrics.attributes()

    with connect(any_server) as sock:
        send(sock, *(f"echo:{i}".encode() for i in range(5)))
        assert [reply(sock) for _ in range(5)] == [str(i).encode() for i in range(5)]
        send(sock, b"echo:last")
        assert reply(sock) == b"last"
        wait_until(lambda: attributes()["RpcProcessingTimeNumOps"] == 6, DEADLINE_S)
        counted = attributes()
        assert counted["NumOpenConnections"] == 1
        assert counted["RpcQueueTimeNumOps"] == counted["TotalRequests"] == 6
        assert counted["CallQueueLength"] == 0
        assert counted["RpcAuthenticationFailures"] == counted["RpcAuthenticationSuccesses"] == 0
        assert counted["RpcQueueTimeAvgTime"] >= 0 and counted["RpcProcessingTimeAvgTime"] > 0
    channel = SocketChannel("127.0.0.1", any_server.address[1], DEADLINE_S, user="alice")
    try:
        assert channel.call(b"who:") == b"alice (auth:SIMPLE)"
    finally:
        channel.close()
    wait_until(lambda: attributes()["NumOpenConnections"] == 0, DEADLINE_S)
    assert attributes()["TotalRequests"] == 7  # the context is no call
