"""The JournalNode's RPC server (JournalNodeRpcServer) and
QJournalProtocolProxy over real loopback sockets.

A hand-written fake JournalNode stands behind the server. Only 127.0.0.1 and
port 0; nothing waits on a fixed sleep — blocking reads carry deadlines and
state changes are awaited with deadlines.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator

import psutil
import pytest
import thriftpy2.rpc
from thriftpy2.protocol import TBinaryProtocolFactory, TMultiplexedProtocolFactory
from thriftpy2.transport import TFramedTransportFactory

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.ipc.server import Server
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.protocol import wire
from hadoop_qjm.qjournal.protocol.exceptions import (
    BindException,
    ConnectException,
    JournalNotFormattedException,
    JournalOutOfSyncException,
    SocketTimeoutException,
)
from hadoop_qjm.qjournal.protocol.messages import RequestInfo
from hadoop_qjm.qjournal.protocol.sockets import PlainSocketFactory
from hadoop_qjm.qjournal.protocol.thrift_idl import qjournal_thrift
from hadoop_qjm.qjournal.server.journal_node_rpc_server import JournalNodeRpcServer
from tests.qjournal_fakes import MANIFEST, FakeJournalNode

HOST = "127.0.0.1"
REQ = RequestInfo("jid1", 1, 0, 5)
MiB = 1024 * 1024
DEADLINE_S = 30.0


def wait_until(predicate: Callable[[], bool], timeout_s: float = DEADLINE_S) -> bool:
    """Poll ``predicate`` until it holds or the deadline passes."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.005)
    return True


def rpc_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("IPC ")]


@pytest.fixture
def jn() -> FakeJournalNode:
    return FakeJournalNode()


@pytest.fixture
def server(jn: FakeJournalNode) -> Iterator[Server]:
    srv = JournalNodeRpcServer(jn, HOST, 0)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()
    assert not rpc_threads()


@pytest.fixture
def proxy(server: Server) -> Iterator[QJournalProtocolProxy]:
    with QJournalProtocolProxy(HOST, server.port, timeout_s=DEADLINE_S) as p:
        yield p


def raw_connection(port: int) -> socket.socket:
    sock = socket.create_connection((HOST, port), timeout=DEADLINE_S)
    return sock


def assert_dropped(sock: socket.socket) -> None:
    """The server closes this connection (EOF or reset) without us closing it."""
    try:
        data = sock.recv(1)
    except ConnectionResetError:
        return
    assert data == b"", f"expected the server to drop the connection, got {data!r}"


# ---------------------------------------------------------------- basics


@pytest.mark.timeout(60)
def test_a_call_succeeds(server: Server, proxy: QJournalProtocolProxy, jn: FakeJournalNode) -> None:
    assert server.port > 0
    assert proxy.is_formatted("jid1") is True
    proxy.journal(REQ, 1, 1, 3, b"\x00" * 100_000)
    assert proxy.get_edit_log_manifest("jid1", 1).manifest == MANIFEST
    name, args, client = jn.journal("jid1").calls[1]
    assert (name, args[0], args[4][:3], client) == ("journal", REQ, b"\x00\x00\x00", HOST)


@pytest.mark.timeout(60)
def test_an_exception_arrives_typed(proxy: QJournalProtocolProxy, jn: FakeJournalNode) -> None:
    journal = jn.journal("jid1")
    journal.errors["get_last_promised_epoch"] = JournalNotFormattedException(
        "Journal /data/jid1 not formatted ; journal id: jid1"
    )
    journal.errors["journal"] = JournalOutOfSyncException("Can't write, no segment open")
    with pytest.raises(JournalNotFormattedException, match="not formatted ; journal id: jid1"):
        proxy.get_journal_state("jid1")
    with pytest.raises(JournalOutOfSyncException, match="no segment open"):
        proxy.journal(REQ, 1, 1, 1, b"x")
    # the connection survives application errors
    assert proxy.is_formatted("jid1")


@pytest.mark.timeout(60)
def test_stock_thriftpy2_clients_interoperate(server: Server, jn: FakeJournalNode) -> None:
    factories = {
        "proto_factory": TBinaryProtocolFactory(),
        "trans_factory": TFramedTransportFactory(),
    }
    client = thriftpy2.rpc.make_client(
        qjournal_thrift.QJournalProtocol, HOST, server.port, timeout=DEADLINE_S * 1000, **factories
    )
    try:
        assert client.isFormatted("jid1", None) is True
        jn.journal("jid1").errors["get_last_promised_epoch"] = JournalNotFormattedException("nf")
        with pytest.raises(qjournal_thrift.QJournalException) as raised:
            client.getJournalState("jid1", None)
        assert raised.value.className == JournalNotFormattedException.java_name
    finally:
        client.close()
    inter = thriftpy2.rpc.make_client(
        qjournal_thrift.InterQJournalProtocol,
        HOST,
        server.port,
        timeout=DEADLINE_S * 1000,
        proto_factory=TMultiplexedProtocolFactory(
            TBinaryProtocolFactory(), "InterQJournalProtocol"
        ),
        trans_factory=TFramedTransportFactory(),
    )
    try:
        resp = inter.getEditLogManifestFromJournal("jid1", 0, False, None)
        assert resp.manifest.committedTxnId == -12345
    finally:
        inter.close()


# ------------------------------------------------------ hostile connections


def _huge_string_frame() -> bytes:
    name = b"isFormatted"
    payload = (
        struct.pack(">iI", -2147418112 | 1, len(name))
        + name
        + struct.pack(">i", 1)
        + struct.pack(">bhi", 11, 1, 2**31 - 1)
        + b"abc"
    )
    return wire.frame(payload)


HOSTILE = {
    "http-request": (b"GET / HTTP/1.1\r\nHost: jn\r\n\r\n", False),
    "claims-1GiB": (struct.pack(">i", 1024 * MiB) + b"\x00" * 64, False),
    "negative-length": (struct.pack(">i", -1), False),
    "truncated-frame": (struct.pack(">i", 100) + b"\x80\x01\x00\x01" * 2, True),
    "short-garbage": (struct.pack(">i", 8) + b"\xde\xad\xbe\xef" * 2, False),
    "string-claims-2GiB": (_huge_string_frame(), False),
}


@pytest.mark.timeout(90)
@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_input_drops_only_that_connection(
    name: str, server: Server, proxy: QJournalProtocolProxy
) -> None:
    data, then_half_close = HOSTILE[name]
    assert proxy.is_formatted("jid1")  # an established client
    rss_before = psutil.Process().memory_info().rss
    with raw_connection(server.port) as sock:
        sock.sendall(data)
        if then_half_close:
            sock.shutdown(socket.SHUT_WR)
        assert_dropped(sock)
    rss_after = psutil.Process().memory_info().rss
    assert rss_after - rss_before < 128 * MiB
    # everyone else is still served: the established client and a new one
    assert proxy.is_formatted("jid1")
    with QJournalProtocolProxy(HOST, server.port, timeout_s=DEADLINE_S) as other:
        assert other.get_journal_state("jid1").last_promised_epoch == 7
    assert wait_until(lambda: server.num_open_connections == 1)


@pytest.mark.timeout(60)
def test_frames_over_the_limit_are_refused(jn: FakeJournalNode) -> None:
    with JournalNodeRpcServer(jn, HOST, 0, max_frame_size=4096) as srv:
        srv.start()
        with QJournalProtocolProxy(HOST, srv.port, timeout_s=DEADLINE_S) as p:
            p.journal(REQ, 1, 1, 1, b"x" * 1000)
            with pytest.raises(IOException) as raised:
                p.journal(REQ, 1, 2, 1, b"x" * 8192)
            assert not isinstance(raised.value, JournalOutOfSyncException)
            assert p.is_formatted("jid1")  # reconnected
        # the client enforces its own limit on replies
        with QJournalProtocolProxy(HOST, srv.port, timeout_s=DEADLINE_S, max_frame_size=64) as p:
            with pytest.raises(IOException):
                p.get_edit_log_manifest("jid1", 1)
    assert not rpc_threads()


# ---------------------------------------------------------------- threads


@pytest.mark.timeout(90)
def test_handler_count_limits_concurrent_calls(jn: FakeJournalNode) -> None:
    journal = jn.journal("jid1")
    release = journal.block["heartbeat"] = threading.Event()
    errors: list[BaseException] = []

    def call(p: QJournalProtocolProxy) -> None:
        try:
            p.heartbeat(REQ)
        except BaseException as e:  # surfaced by the assert below
            errors.append(e)

    with JournalNodeRpcServer(jn, HOST, 0, handler_count=2) as srv:
        srv.start()
        proxies = [QJournalProtocolProxy(HOST, srv.port, timeout_s=DEADLINE_S) for _ in range(4)]
        callers = [threading.Thread(target=call, args=(p,)) for p in proxies]
        try:
            for t in callers:
                t.start()
            assert journal.wait_running(2)
            assert wait_until(lambda: srv.dispatcher.call_queue_length == 2)
            assert journal.running == 2
        finally:
            release.set()
            for t in callers:
                t.join(DEADLINE_S)
            for p in proxies:
                p.close()
    assert not errors
    assert journal.max_running == 2
    assert len(journal.calls) == 4


def test_nonpositive_handler_count_falls_back_to_five(jn: FakeJournalNode) -> None:
    for count in (0, -1):
        with JournalNodeRpcServer(jn, HOST, 0, handler_count=count) as srv:
            assert srv.handler_count == 5


@pytest.mark.timeout(60)
def test_stop_joins_every_thread_and_frees_the_port(jn: FakeJournalNode) -> None:
    threads_before = threading.active_count()
    srv = JournalNodeRpcServer(jn, HOST, 0)
    port = srv.port
    srv.start()
    proxies = [QJournalProtocolProxy(HOST, port, timeout_s=DEADLINE_S) for _ in range(3)]
    for p in proxies:
        assert p.is_formatted("jid1")
    idle = raw_connection(port)  # connected, never sends
    assert wait_until(lambda: srv.num_open_connections == 4)
    assert len(rpc_threads()) == 5  # the listener and one reader per connection
    srv.stop()
    assert threading.active_count() == threads_before
    assert not rpc_threads()
    assert_dropped(idle)
    idle.close()
    with pytest.raises(ConnectionRefusedError), socket.create_connection((HOST, port), 5):
        pass
    # a calling client now fails, then can't connect: both are IOExceptions
    with pytest.raises(IOException):
        proxies[0].is_formatted("jid1")
    with pytest.raises(ConnectException):
        proxies[0].is_formatted("jid1")
    # the port can be bound again, and the same proxy reconnects to it
    with JournalNodeRpcServer(jn, HOST, port) as again:
        again.start()
        assert again.port == port
        assert proxies[0].is_formatted("jid1")
    for p in proxies:
        p.close()
    srv.stop()  # idempotent
    assert threading.active_count() == threads_before


def _slow_to_exit(srv: Server) -> Server:
    """``srv`` with reader threads that linger after serving, as a descheduled thread may."""
    serve = srv._serve

    def lingering(conn, client_ip):  # type: ignore[no-untyped-def]
        serve(conn, client_ip)
        time.sleep(0.3)

    srv._serve = lingering  # type: ignore[method-assign]
    return srv


@pytest.mark.timeout(60)
def test_stop_joins_readers_whose_client_just_left(jn: FakeJournalNode) -> None:
    srv = _slow_to_exit(JournalNodeRpcServer(jn, HOST, 0))
    srv.start()
    with QJournalProtocolProxy(HOST, srv.port, timeout_s=DEADLINE_S) as p:
        assert p.is_formatted("jid1")
    # The reader has left the connection list; its thread has not ended yet.
    assert wait_until(lambda: srv.num_open_connections == 0)
    assert rpc_threads()
    srv.stop()
    assert not rpc_threads()


def test_stop_without_start_releases_the_port(jn: FakeJournalNode) -> None:
    srv = JournalNodeRpcServer(jn, HOST, 0)
    port = srv.port
    srv.stop()
    with JournalNodeRpcServer(jn, HOST, port) as again:
        assert again.port == port


def test_busy_port_is_a_bind_exception(server: Server, jn: FakeJournalNode) -> None:
    with pytest.raises(BindException, match=rf"Problem binding to \[{HOST}:{server.port}\]"):
        JournalNodeRpcServer(jn, HOST, server.port)


@pytest.mark.timeout(60)
def test_stop_waits_for_a_call_in_progress(jn: FakeJournalNode) -> None:
    journal = jn.journal("jid1")
    release = journal.block["heartbeat"] = threading.Event()
    outcome: list[BaseException | None] = []
    srv = JournalNodeRpcServer(jn, HOST, 0)
    srv.start()
    p = QJournalProtocolProxy(HOST, srv.port, timeout_s=DEADLINE_S)

    def call() -> None:
        try:
            p.heartbeat(REQ)
            outcome.append(None)
        except BaseException as e:
            outcome.append(e)

    caller = threading.Thread(target=call)
    caller.start()
    assert journal.wait_running(1)
    stopper = threading.Thread(target=srv.stop)
    stopper.start()
    # stop() shuts the connection at once: the caller sees it before the call ends
    caller.join(DEADLINE_S)
    assert not caller.is_alive()
    assert len(outcome) == 1 and isinstance(outcome[0], IOException)
    assert stopper.is_alive()  # still joining the reader busy in the Journal
    release.set()
    stopper.join(DEADLINE_S)
    assert not stopper.is_alive()
    assert journal.calls[0][0] == "heartbeat"  # but the call did run
    p.close()
    assert not rpc_threads()


# ------------------------------------------------------------------ client


@pytest.mark.timeout(60)
def test_a_call_times_out_and_the_next_one_reconnects(server: Server, jn: FakeJournalNode) -> None:
    release = jn.journal("jid1").block["heartbeat"] = threading.Event()
    with QJournalProtocolProxy(HOST, server.port, timeout_s=0.5) as p:
        try:
            with pytest.raises(SocketTimeoutException, match="timed out"):
                p.heartbeat(REQ)
        finally:
            release.set()
        assert p.is_formatted("jid1")


@pytest.mark.timeout(60)
def test_close_interrupts_a_call_in_progress(server: Server, jn: FakeJournalNode) -> None:
    journal = jn.journal("jid1")
    release = journal.block["heartbeat"] = threading.Event()
    p = QJournalProtocolProxy(HOST, server.port, timeout_s=None)
    outcome: list[BaseException | None] = []

    def call() -> None:
        try:
            p.heartbeat(REQ)
            outcome.append(None)
        except BaseException as e:
            outcome.append(e)

    caller = threading.Thread(target=call)
    caller.start()
    try:
        assert journal.wait_running(1)
        p.close()
        caller.join(DEADLINE_S)
        assert not caller.is_alive()
        assert len(outcome) == 1 and isinstance(outcome[0], IOException)
        with pytest.raises(IOException, match="closed"):
            p.is_formatted("jid1")
    finally:
        release.set()


def test_connection_refused_is_a_connect_exception() -> None:
    with socket.socket() as s:
        s.bind((HOST, 0))
        port = s.getsockname()[1]  # bound, not listening: connections are refused
        with QJournalProtocolProxy(HOST, port, connect_timeout_s=5) as p:
            with pytest.raises(ConnectException, match=f"{HOST}:{port}"):
                p.is_formatted("jid1")


@pytest.mark.timeout(90)
def test_one_proxy_is_safe_to_share_between_threads(
    server: Server, proxy: QJournalProtocolProxy, jn: FakeJournalNode
) -> None:
    errors: list[BaseException] = []

    def work(k: int) -> None:
        try:
            for i in range(50):
                assert proxy.get_journal_state(f"j{k}").last_promised_epoch == 7
                proxy.journal(RequestInfo(f"j{k}", 1, i), 1, i, 1, bytes([k]) * (i + 1))
        except BaseException as e:
            errors.append(e)

    workers = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(DEADLINE_S)
    assert not errors
    for k in range(4):
        records = [args[4] for name, args, _ in jn.journal(f"j{k}").calls if name == "journal"]
        assert records == [bytes([k]) * (i + 1) for i in range(50)]


@pytest.mark.timeout(60)
def test_sockets_come_from_the_injected_factories(jn: FakeJournalNode) -> None:
    made: list[str] = []
    plain = PlainSocketFactory()

    class CountingFactory(PlainSocketFactory):
        def listen(self, host: str, port: int, backlog: int = 128) -> socket.socket:
            made.append("listen")
            return plain.listen(host, port, backlog)

        def wrap_accepted(self, conn: socket.socket) -> socket.socket:
            made.append("accepted")
            return plain.wrap_accepted(conn)

    def connect(host: str, port: int, timeout_s: float | None) -> socket.socket:
        made.append("connect")
        return plain.connect(host, port, timeout_s)

    with JournalNodeRpcServer(jn, HOST, 0, socket_factory=CountingFactory()) as srv:
        srv.start()
        with QJournalProtocolProxy(HOST, srv.port, socket_factory=connect) as p:
            assert p.is_formatted("jid1")
        assert wait_until(lambda: made.count("accepted") == 1)

    # the plain "(host, port) -> listening socket" callable form works as well
    def listen(host: str, port: int) -> socket.socket:
        return plain.listen(host, port)

    with JournalNodeRpcServer(jn, HOST, 0, socket_factory=listen) as srv:
        srv.start()
        with QJournalProtocolProxy(HOST, srv.port) as p:
            assert p.is_formatted("jid1")
    assert made == ["listen", "connect", "accepted"]
