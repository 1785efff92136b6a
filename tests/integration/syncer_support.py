"""Two JournalNodes whose syncers run only when a test says so, node 1 holding finalized
segments for node 0 to fetch (the syncer tests of test_journal_node.py and
test_syncer_md5.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, create_txn_data, make_request

#: Txns per journal call when node 1 writes its segments.
BATCH = 10


@contextlib.contextmanager
def peer_holding_segments(
    tmp_path, committed_here: int, segments: tuple[tuple[int, int], ...], **settings: str
) -> Iterator[tuple[MiniJournalCluster, object, QJournalProtocolProxy]]:
    """Node 1 holds the finalized ``segments`` ((first, last) txids, written BATCH txns a
    call); node 0, committed to ``committed_here``, nothing yet. ``settings`` are both
    nodes' configuration. Yields (cluster, node 0's syncer, a proxy to node 0)."""
    conf = Configuration()
    conf.set("dfs.journalnode.sync.interval", "3600000")  # rounds are driven by the test
    for key, value in settings.items():
        conf.set(key, value)
    with MiniJournalCluster(2, base_dir=tmp_path, conf=conf) as cluster:
        cluster.conf.set("dfs.namenode.shared.edits.dir", cluster.quorum_journal_uri(JID))
        for i in range(2):
            cluster.restart_journal_node(i)
        with (
            QJournalProtocolProxy(*cluster.rpc_address(1), timeout_s=30) as p1,
            QJournalProtocolProxy(*cluster.rpc_address(0), timeout_s=30) as p0,
        ):
            p0.format(JID, FAKE_NSINFO)
            p0.new_epoch(JID, FAKE_NSINFO, 1)
            p0.heartbeat(make_request(1, committed_txid=committed_here))
            p1.format(JID, FAKE_NSINFO)
            p1.new_epoch(JID, FAKE_NSINFO, 1)
            serial = 0
            for first, last in segments:
                serial += 1
                p1.start_log_segment(make_request(serial), first, CURRENT_LAYOUT_VERSION)
                for txid in range(first, last + 1, BATCH):
                    n = min(BATCH, last + 1 - txid)
                    serial += 1
                    p1.journal(make_request(serial), first, txid, n, create_txn_data(txid, n))
                serial += 1
                p1.finalize_log_segment(make_request(serial), first, last)
            node0 = cluster.journal_node(0)
            node0.get_or_create_journal(JID)
            yield cluster, node0._syncers[JID], p0
