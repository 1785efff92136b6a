"""A plain client of a server that speaks TLS is told so, in one sentence naming the keys
that turn TLS on for a client (issue 28, item 4); a plain server that drops a connection
is not taken for a TLS one; a failover proxy does not retry the sentence."""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading
from collections.abc import Callable, Iterator

import pytest

from hadoop_qjm.common.exceptions import AccessControlException, IOException
from hadoop_qjm.common.security import TlsServerSocketFactory
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.ha.failover_proxy import FailoverNameNodeProxy
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.protocol.exceptions import QuorumException
from hadoop_qjm.qjournal.protocol.sockets import (
    CLIENT_NOT_CONFIGURED_FOR_TLS,
    server_speaks_tls,
)
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID

pytestmark = pytest.mark.timeout(60)


def _sentence(host: str, port: int) -> str:
    return f"Call to {host}:{port} failed: {CLIENT_NOT_CONFIGURED_FOR_TLS}"


@contextlib.contextmanager
def _server(handle: Callable[[socket.socket], None]) -> Iterator[tuple[str, int]]:
    """A loopback listener whose every connection ``handle`` serves (then it is closed)."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(10)
            with conn, contextlib.suppress(OSError):
                handle(conn)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[:2]
    finally:
        stop.set()
        thread.join(10)
        listener.close()


def _tls_server(pki) -> Callable[[socket.socket], None]:
    """A secured RPC server's first step: the handshake (which a plain request fails)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.path("localhost"), pki.path("localhost-key"))
    context.load_verify_locations(pki.path("ca"))
    context.verify_mode = ssl.CERT_REQUIRED
    factory = TlsServerSocketFactory(context, 5.0)
    return lambda conn: factory.wrap_accepted(conn).close()


def _reset_after_reading(conn: socket.socket) -> None:
    """A plain server that reads the request and resets the connection."""
    conn.recv(4096)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))


@pytest.mark.parametrize("pipelined", [False, True], ids=["blocking", "pipelined"])
def test_plain_journal_client_is_told_the_journal_node_speaks_tls(secure_cluster, pipelined):
    host, port = secure_cluster.rpc_address(0)
    with QJournalProtocolProxy(host, port, timeout_s=10, pipelined=pipelined) as plain:
        with pytest.raises(AccessControlException) as info:
            plain.is_formatted(JID)
    assert str(info.value) == _sentence(host, port)


def test_plain_quorum_writer_is_told_the_journal_nodes_speak_tls(secure_cluster) -> None:
    qjm = QuorumJournalManager(Configuration(), secure_cluster.quorum_journal_uri(JID), FAKE_NSINFO)
    try:
        with pytest.raises(QuorumException) as info:
            qjm.format(FAKE_NSINFO)
    finally:
        qjm.close()
    # format needs every JournalNode: the first failure ends it. Each one listed (an
    # IPCLoggerChannel's) is the sentence, naming its JournalNode.
    failures = str(info.value).splitlines()[1:]
    addresses = {"{}:{}".format(*secure_cluster.rpc_address(i)) for i in range(3)}
    assert failures
    for line in failures:
        address, _, failure = line.partition(": ")
        assert address in addresses and failure == _sentence(*address.split(":"))


def test_plain_namenode_client_is_told_the_server_speaks_tls(pki) -> None:
    with _server(_tls_server(pki)) as (host, port):
        assert server_speaks_tls(host, port)
        with NameNodeProxy(host, port, timeout_s=10) as plain:
            with pytest.raises(AccessControlException) as info:
                plain.get_file_info("/")
    assert str(info.value) == _sentence(host, port)
    assert isinstance(info.value.__cause__, ConnectionResetError)


def test_failover_proxy_does_not_retry_a_plain_client_of_tls_namenodes(pki) -> None:
    sleeps: list[float] = []
    with _server(_tls_server(pki)) as nn1, _server(_tls_server(pki)) as nn2:
        conf = Configuration()
        conf.set("dfs.nameservices", "mycluster")
        conf.set("dfs.ha.namenodes.mycluster", "nn1,nn2")
        conf.set("dfs.namenode.rpc-address.mycluster.nn1", "{}:{}".format(*nn1))
        conf.set("dfs.namenode.rpc-address.mycluster.nn2", "{}:{}".format(*nn2))
        proxy = FailoverNameNodeProxy(conf, "mycluster", sleep=sleeps.append, timeout_s=10)
        try:
            with pytest.raises(AccessControlException) as info:
                proxy.get_file_info("/")  # idempotent: a lost call would fail over
        finally:
            proxy.close()
    assert str(info.value) == _sentence(*nn1)
    assert sleeps == [] and proxy.current.nnid == "nn1"


def test_a_plain_server_that_drops_the_connection_is_not_taken_for_tls() -> None:
    with _server(_reset_after_reading) as (host, port):
        assert not server_speaks_tls(host, port)
        with NameNodeProxy(host, port, timeout_s=10) as plain:
            with pytest.raises(IOException) as info:
                plain.get_file_info("/")
    assert not isinstance(info.value, AccessControlException)
    assert str(info.value) == f"Call to {host}:{port} failed: [Errno 104] Connection reset by peer"


def test_the_probe_of_a_plain_journal_node_says_no() -> None:
    with MiniJournalCluster(1) as cluster:
        host, port = cluster.rpc_address(0)
        assert not server_speaks_tls(host, port)
        with QJournalProtocolProxy(host, port, timeout_s=10) as plain:
            assert not plain.is_formatted(JID)  # and the node still serves plain calls
