"""Segment recovery over HTTPS only: a JournalNode that missed edits downloads the
recovered segment from a peer (acceptRecovery's fromURL) through mutual TLS, and its
finalized copy is byte-identical to the others'. With HTTP_AND_HTTPS the plain listener
serves the open pages but never a segment."""

from __future__ import annotations

import http.client

import pytest

from hadoop_qjm.editlog.file_journal_manager import (
    finalized_edits_file_name,
    inprogress_edits_file_name,
)
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, write_segment, write_txns
from tests.security.support import counter

pytestmark = pytest.mark.timeout(60)


def test_recovery_downloads_over_https_only(pki) -> None:
    """::

    JN0: 1-5 in progress      \\
    JN1: 1-5 in progress  --  stopped before the recovery
    JN2: 1-3 (missed 4-5)     /   the quorum is JN0 + JN2: JN2 must download 1-5 from
                                  JN0 (acceptRecovery's URL), over HTTPS
    """
    conf = pki.conf(**{"dfs.http.policy": "HTTPS_ONLY", "dfs.journalnode.enable.sync": "false"})
    with MiniJournalCluster(3, conf=conf) as cluster:
        assert cluster.http_ports == [0, 0, 0] and all(cluster.https_ports)
        first = QuorumJournalManager(conf, cluster.quorum_journal_uri(JID), FAKE_NSINFO)
        try:
            first.format(FAKE_NSINFO)
            first.recover_unfinalized_segments()
            stm = write_segment(first, 1, 3, False, cluster=cluster)
            first.loggers.wait_for_all_pending_calls()
            cluster.stop_journal_node(2)
            write_txns(stm, 4, 2)  # a quorum of two
            first.loggers.wait_for_all_pending_calls()
        finally:
            first.close()  # dies without finalizing
        cluster.restart_journal_node(2)
        cluster.stop_journal_node(1)  # JN2 is needed for a quorum now

        second = QuorumJournalManager(conf, cluster.quorum_journal_uri(JID), FAKE_NSINFO)
        try:
            second.recover_unfinalized_segments()
        finally:
            second.close()
        # JN2 held 1-3 only: its finalized 1-5 came from JN0, and HTTPS is the only listener.
        finalized = (cluster.current_dir(0, JID) / finalized_edits_file_name(1, 5)).read_bytes()
        copy = cluster.current_dir(2, JID) / finalized_edits_file_name(1, 5)
        assert copy.read_bytes() == finalized
        assert not (cluster.current_dir(2, JID) / inprogress_edits_file_name(1)).exists()


def test_http_and_https_keeps_segments_off_plain_http(pki) -> None:
    with MiniJournalCluster(1, conf=pki.conf(**{"dfs.http.policy": "HTTP_AND_HTTPS"})) as cluster:
        node = cluster.journal_node(0)
        assert node.http_server_uri.startswith("https://")  # what writers are told to fetch
        conn = http.client.HTTPConnection(*cluster.http_address(0), timeout=10)
        try:
            conn.request("GET", "/jmx")
            assert conn.getresponse().status == 200
            conn.close()
            conn.request("GET", f"/getJournal?jid={JID}&segmentTxId=1")
            response = conn.getresponse()
            assert response.status == 403
            assert response.read().decode().strip() == "/getJournal is served only over HTTPS"
        finally:
            conn.close()
        assert counter(node, "journalnode_http_authorization_failures", path="/getJournal") == 1
