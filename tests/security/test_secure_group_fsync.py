"""Over mutual TLS, the JournalNode serves a writer's batches as it does over plain TCP:
calls that arrived together share one fsync and are acknowledged in order (group fsync,
docs/journalnode.md), each one authorized — and an identity that may not write gets every
call refused, nothing written.

The server is the JournalNode's (``JournalNodeRpcServer``) with the TLS socket factory and
the JournalNode's authorizer, over a real Journal; the client an SSLSocket with the
session PKI's certificates. The helpers are the plain test's
(``tests/integration/test_journal_node_group_fsync.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from hadoop_qjm.common.exceptions import AuthorizationException
from hadoop_qjm.common.security import ServiceAuthorizer, SSLFactory, TlsServerSocketFactory
from hadoop_qjm.qjournal.server.journal_node_rpc_server import JournalNodeRpcServer
from tests.integration.test_journal_node_group_fsync import (
    DEADLINE_S,
    Node,
    Setup,
    journal_frame,
    journal_with_counted_fsyncs,
    read_replies,
    send_held_then_queued,
)

pytestmark = pytest.mark.timeout(60)


@dataclass
class SecureSetup(Setup):
    refusals: list[str] = field(default_factory=list)  # RPC names the authorizer refused


@pytest.fixture
def setup(tmp_path, monkeypatch, pki) -> Iterator[SecureSetup]:
    journal, hook, fsyncs = journal_with_counted_fsyncs(tmp_path, monkeypatch)
    refusals: list[str] = []
    authorizer = ServiceAuthorizer.of(["namenode"])

    def authorize(rpc: str, identity: str | None, remote_ip: str | None) -> None:
        try:
            authorizer.check_rpc(rpc, identity)
        except AuthorizationException:
            refusals.append(rpc)
            raise

    # The JournalNode's server context, as it makes it.
    factory = TlsServerSocketFactory(SSLFactory(pki.conf()).server_context(True), DEADLINE_S)
    server = JournalNodeRpcServer(
        Node(journal), bind_host="127.0.0.1", port=0, socket_factory=factory, authorizer=authorize
    )
    server.start()
    try:
        yield SecureSetup(journal, hook, server, fsyncs, refusals)
    finally:
        hook.release()
        server.stop(DEADLINE_S)
        journal.close()


def test_batches_that_arrived_together_over_tls_share_one_fsync(setup, pki):
    queued = [journal_frame(seqid, seqid) for seqid in range(2, 6)]
    tls = pki.client_factory("namenode").connect(*setup.server.address, DEADLINE_S)
    with send_held_then_queued(setup, queued, tls) as sock:
        replies = read_replies(sock, 5)
    assert replies == [(seqid, None) for seqid in range(1, 6)]
    assert len(setup.fsyncs) == 2  # call 1 alone, calls 2-5 together
    bean = setup.journal.metrics.as_hadoop_bean()
    assert (bean["BatchesWritten"], bean["TxnsWritten"], bean["BatchFsyncs"]) == (5, 5, 2)
    assert setup.refusals == []


def test_an_identity_that_may_not_write_is_refused_every_batch(setup, pki):
    with pki.client_factory("intruder").connect(*setup.server.address, DEADLINE_S) as sock:
        sock.sendall(b"".join(journal_frame(seqid, seqid) for seqid in range(1, 4)))
        replies = read_replies(sock, 3)
    assert [seqid for seqid, _ in replies] == [1, 2, 3]
    for _, error in replies:
        assert isinstance(error, AuthorizationException)
        assert "intruder" in str(error) and "journal" in str(error)
    assert setup.refusals == ["journal"] * 3
    assert setup.journal.highest_written_txid == 0 and setup.fsyncs == []
