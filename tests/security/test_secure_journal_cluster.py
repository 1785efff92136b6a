"""A secured 3-JournalNode cluster (mutual TLS RPC, HTTPS only), end to end over loopback:
a writer and readers work; plain-TCP and plain-HTTP clients, missing, foreign, expired and
unauthorized certificates are refused, change nothing, and are counted; a writer that does
not trust the JournalNodes' CA refuses them."""

from __future__ import annotations

import http.client
import json
import socket

import pytest

from hadoop_qjm.common.exceptions import AuthorizationException, IOException
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.protocol.exceptions import QuorumException
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    close_streams,
    snapshot_files,
    verify_edits,
    write_segment,
    write_txns,
)
from tests.security.support import counter, wait_until

pytestmark = pytest.mark.timeout(60)


def _writer(cluster: MiniJournalCluster, conf=None) -> QuorumJournalManager:
    return QuorumJournalManager(conf or cluster.conf, cluster.quorum_journal_uri(JID), FAKE_NSINFO)


@pytest.fixture
def formatted(secure_cluster):
    """The secured cluster with JID formatted, epoch 1 taken and segment 1-3 finalized."""
    qjm = _writer(secure_cluster)
    qjm.format(FAKE_NSINFO)
    qjm.recover_unfinalized_segments()
    write_segment(qjm, 1, 3, True)
    qjm.loggers.wait_for_all_pending_calls()  # the third node may still be finalizing
    qjm.close()
    return secure_cluster


def _https_get(cluster, i: int, path: str, context) -> tuple[int, str]:
    conn = http.client.HTTPSConnection(*cluster.https_address(i), timeout=10, context=context)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def test_writer_and_streaming_reader(secure_cluster, pki) -> None:
    assert secure_cluster.http_ports == [0, 0, 0]  # HTTPS_ONLY: no plain listener at all
    qjm = _writer(secure_cluster)
    try:
        qjm.format(FAKE_NSINFO)
        qjm.recover_unfinalized_segments()
        write_segment(qjm, 1, 5, True)
        stm = write_segment(qjm, 6, 2, False)
        write_txns(stm, 8, 2)
        stm.close()
        qjm.finalize_log_segment(6, 9)
        # The write path is the pipelined one over TLS too (memory BIOs, no thread hop).
        assert all(logger._proxy.pipelined for logger in qjm.loggers.loggers)
        reader = _writer(secure_cluster)
        try:
            streams = reader.select_input_streams(1)  # whole segments over HTTPS
            try:
                verify_edits(streams, 1, 9)
            finally:
                close_streams(streams)
            urls = [logger.build_url_to_fetch_logs(1) for logger in reader.loggers.loggers]
            assert all(url.startswith("https://127.0.0.1:") for url in urls)
        finally:
            reader.close()
    finally:
        qjm.close()


def test_reader_over_rpc_from_the_edits_cache(pki) -> None:
    conf = pki.conf(**{"dfs.ha.tail-edits.in-progress": "true"})
    with MiniJournalCluster(3, conf=conf) as cluster:
        qjm = _writer(cluster)
        reader = _writer(cluster)
        try:
            qjm.format(FAKE_NSINFO)
            qjm.recover_unfinalized_segments()
            stm = write_segment(qjm, 1, 4, False)
            streams = reader.select_input_streams(1, in_progress_ok=True, only_durable_txns=True)
            try:
                verify_edits(streams, 1, 4)
            finally:
                close_streams(streams)
            served = sum(
                counter(cluster.journal_node(i), "journalnode_txns_served_via_rpc", journal_id=JID)
                for i in range(3)
            )
            assert served >= 4  # the RPC path, not the streaming fallback
            stm.close()
        finally:
            reader.close()
            qjm.close()


def test_plain_tcp_and_plain_http_clients_fail(formatted) -> None:
    node = formatted.journal_node(0)
    with QJournalProtocolProxy(*formatted.rpc_address(0), timeout_s=10) as plain:
        with pytest.raises(IOException):
            plain.is_formatted(JID)
    conn = http.client.HTTPConnection(*formatted.https_address(0), timeout=10)
    try:
        with pytest.raises((ConnectionError, http.client.HTTPException)):
            conn.request("GET", "/jmx")
            conn.getresponse()
    finally:
        conn.close()
    wait_until(
        lambda: counter(node, "journalnode_rpc_authentication_failures", reason="not_tls") == 1
    )
    wait_until(
        lambda: counter(node, "journalnode_http_authentication_failures", reason="not_tls") == 1
    )
    # The RPC server's own count (RpcMetrics) saw the same failed handshake.
    wait_until(
        lambda: (
            node.rpc_server.rpc_metrics.authentication_failures
            == node.metrics.security_bean_attributes()["RpcAuthenticationFailures"]
            >= 1
        )
    )


def _epochs(cluster) -> list[int]:
    return [
        int((cluster.current_dir(i, JID) / "last-promised-epoch").read_text()) for i in range(3)
    ]


@pytest.mark.parametrize(
    ("cert", "trust", "reason"),
    [
        (None, "ca", "no_certificate"),
        ("other-namenode", "ca", "untrusted_certificate"),
        ("expired", "ca", "expired_certificate"),
    ],
    ids=["no-certificate", "other-ca", "expired"],
)
def test_unauthenticated_clients_are_refused(formatted, pki, cert, trust, reason) -> None:
    before = [snapshot_files(formatted.journal_node_dir(i)) for i in range(3)]
    node = formatted.journal_node(0)
    with QJournalProtocolProxy(
        *formatted.rpc_address(0), timeout_s=10, socket_factory=pki.client_factory(cert, trust)
    ) as proxy:
        with pytest.raises(IOException):
            proxy.new_epoch(JID, FAKE_NSINFO, 99)
    wait_until(
        lambda: counter(node, "journalnode_rpc_authentication_failures", reason=reason) == 1,
        what=f"a {reason} refusal counted",
    )
    assert [snapshot_files(formatted.journal_node_dir(i)) for i in range(3)] == before
    assert _epochs(formatted) == [1, 1, 1]
    # The node keeps serving everyone else.
    qjm = _writer(formatted)
    try:
        qjm.recover_unfinalized_segments()
        write_segment(qjm, 4, 1, True)
        # Both return with a majority; close() would drop a call still queued for the third.
        qjm.loggers.wait_for_all_pending_calls()
    finally:
        qjm.close()
    assert _epochs(formatted) == [2, 2, 2]


def test_a_certificate_that_is_not_allowed_may_read_metadata_only(formatted, pki) -> None:
    before = [snapshot_files(formatted.journal_node_dir(i)) for i in range(3)]
    node = formatted.journal_node(0)
    with QJournalProtocolProxy(
        *formatted.rpc_address(0), timeout_s=10, socket_factory=pki.client_factory("intruder")
    ) as proxy:
        assert proxy.is_formatted(JID)  # a metadata read: any authenticated peer
        assert [log.start_txid for log in proxy.get_edit_log_manifest(JID, 1).manifest.logs] == [1]
        for call in (
            lambda: proxy.new_epoch(JID, FAKE_NSINFO, 99),
            lambda: proxy.get_journal_state(JID),
            lambda: proxy.format(JID, FAKE_NSINFO, force=True),
            lambda: proxy.get_journaled_edits(JID, 1, 10),
        ):
            with pytest.raises(AuthorizationException, match="User intruder is not authorized"):
                call()
    assert counter(node, "journalnode_rpc_authorization_failures", method="newEpoch") == 1
    assert counter(node, "journalnode_rpc_authorization_failures", method="format") == 1
    assert [snapshot_files(formatted.journal_node_dir(i)) for i in range(3)] == before

    # HTTP: /getJournal needs an allowed certificate; the open pages need none.
    path = f"/getJournal?jid={JID}&segmentTxId=1"
    status, body = _https_get(formatted, 0, path, pki.client_context("intruder"))
    assert (status, body.strip()) == (403, "User intruder is not authorized to fetch /getJournal")
    status, body = _https_get(formatted, 0, path, pki.client_context(None))
    assert status == 403 and "no verified client certificate" in body
    assert _https_get(formatted, 0, path, pki.client_context("namenode"))[0] == 200
    status, body = _https_get(formatted, 0, "/jmx", pki.client_context(None))
    assert status == 200
    beans = {bean["name"]: bean for bean in json.loads(body)["beans"]}
    activity = beans[f"Hadoop:service=JournalNode,name=RpcActivityForPort{formatted.rpc_ports[0]}"]
    assert activity["RpcAuthorizationFailures"] == 4
    assert activity["HttpAuthorizationFailures"] == 2
    # Every verified handshake on the RPC port is an authentication (Hadoop's RpcMetrics).
    assert activity["RpcAuthenticationSuccesses"] >= 1
    assert _https_get(formatted, 0, "/metrics", pki.client_context(None))[0] == 200


def test_a_writer_that_does_not_trust_the_journal_nodes_refuses_them(formatted, pki) -> None:
    """Impersonation: the client verifies the server's chain (and host name)."""
    conf = formatted.conf.copy()
    conf.set("hadoop.ssl.client.conf", str(pki.ssl_xml("client", "namenode", trust="other-ca")))
    qjm = _writer(formatted, conf)
    try:
        with pytest.raises(IOException, match="server's certificate was refused"):
            qjm.recover_unfinalized_segments()
    finally:
        qjm.close()
    assert _epochs(formatted) == [1, 1, 1]
    node = formatted.journal_node(0)
    wait_until(
        lambda: (
            counter(
                node, "journalnode_rpc_authentication_failures", reason="peer_rejected_certificate"
            )
            >= 1
        )
    )


def test_a_server_certificate_for_another_host_is_refused(pki) -> None:
    conf = pki.conf(**{"hadoop.ssl.server.conf": str(pki.ssl_xml("server", "wrong-host"))})
    with MiniJournalCluster(1, conf=conf) as cluster:
        with QJournalProtocolProxy(
            *cluster.rpc_address(0), timeout_s=10, socket_factory=pki.client_factory("namenode")
        ) as proxy:
            with pytest.raises(IOException, match="mismatch"):
                proxy.is_formatted(JID)


def test_a_stalled_handshake_neither_blocks_others_nor_lasts(pki) -> None:
    conf = pki.conf(**{"hadoop.ssl.handshake.timeout": "300ms"})
    with MiniJournalCluster(1, conf=conf) as cluster:
        node = cluster.journal_node(0)
        with socket.create_connection(cluster.rpc_address(0), timeout=10) as silent:
            with QJournalProtocolProxy(
                *cluster.rpc_address(0), timeout_s=10, socket_factory=pki.client_factory("namenode")
            ) as proxy:
                assert not proxy.is_formatted(JID)  # served while the silent one waits
            assert silent.recv(1) == b""  # dropped once the handshake timed out
        wait_until(
            lambda: counter(node, "journalnode_rpc_authentication_failures", reason="timeout") == 1
        )


@pytest.mark.parametrize("cert", [None, "other-namenode", "expired"])
def test_a_pipelined_channel_refused_after_the_handshake_fails_its_call(formatted, pki, cert):
    """Under TLS 1.3 the server refuses a client certificate after the client's handshake
    is done: the alert arrives with the first reply. The pipelined channel fails the call
    with an IOException (it never escapes into whoever reads replies) and drops the
    connection."""
    from hadoop_qjm.qjournal.client.pipelined_channel import PipelinedChannel

    channel = PipelinedChannel(
        *formatted.rpc_address(0), 10.0, 10.0, 1 << 20, pki.client_factory(cert)
    )
    try:
        with pytest.raises(IOException):
            channel.call(b"\x80\x01\x00\x01\x00\x00\x00\x0bisFormatted\x00\x00\x00\x01\x00")
        assert not channel.connected
    finally:
        channel.close()


def test_one_host_certificate_serves_a_namenode_and_a_journal_node(pki) -> None:
    """docs/security.md, "One host, several daemons": the daemons of a host share its
    ssl-server.xml and ssl-client.xml, so one certificate (CN and SAN the host) is each
    one's server and client identity, and the allowed list names hosts. Here the writer
    (a NameNode's QJM) and the JournalNodes all present the host certificate
    ``localhost``, the only allowed writer; the tools' certificate may not write."""
    conf = pki.conf(
        **{
            "hadoop.ssl.client.conf": str(pki.ssl_xml("client", "localhost")),
            "dfs.journalnode.allowed.principals": "localhost",
        }
    )
    with MiniJournalCluster(3, conf=conf) as cluster:
        qjm = _writer(cluster, conf)
        try:
            qjm.format(FAKE_NSINFO)
            qjm.recover_unfinalized_segments()
            write_segment(qjm, 1, 3, True)
            qjm.loggers.wait_for_all_pending_calls()
        finally:
            qjm.close()
        for i in range(3):
            assert (cluster.current_dir(i, JID) / f"edits_{1:019d}-{3:019d}").exists()
        tools = pki.conf(**{"hadoop.ssl.client.conf": str(pki.ssl_xml("client", "namenode"))})
        with pytest.raises(QuorumException, match="User namenode is not authorized"):
            _writer(cluster, tools).recover_unfinalized_segments()
