"""The JournalNode's one-pass path for in-order journal() calls, over its real RPC port."""

from __future__ import annotations

import errno

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.namenode import edit_log_file_output_stream as output_module
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.protocol.exceptions import JournalOutOfSyncException
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, create_txn_data, make_request


@pytest.fixture
def cluster(tmp_path):
    with MiniJournalCluster(1, base_dir=tmp_path) as c:
        yield c


@pytest.fixture
def proxy(cluster):
    with QJournalProtocolProxy(*cluster.rpc_address(0), timeout_s=30) as p:
        p.format(JID, FAKE_NSINFO)
        p.new_epoch(JID, FAKE_NSINFO, 1)
        p.start_log_segment(make_request(1), 1, CURRENT_LAYOUT_VERSION)
        yield p


@pytest.fixture
def one_pass_calls(monkeypatch):
    """Each call the one-pass path saw: taken (True), declined (False) or "raised"."""
    taken: list[bool | str] = []
    real = Journal.journal_in_order  # what the dispatcher's one-pass path calls

    def spy(self, *args):
        try:
            taken.append(real(self, *args))
        except Exception:
            taken.append("raised")
            raise
        return taken[-1]

    monkeypatch.setattr(Journal, "journal_in_order", spy)
    return taken


def test_in_order_batches_take_the_one_pass_path(cluster, proxy, one_pass_calls):
    for i in range(3):
        proxy.journal(
            make_request(2 + i, committed_txid=i * 2),
            1,
            1 + i * 2,
            2,
            create_txn_data(1 + i * 2, 2),
        )
    assert one_pass_calls == [True, True, True]
    journal = cluster.journal_node(0).get_or_create_journal(JID)
    assert journal.highest_written_txid == 6
    assert journal.committed_txn_id.get() == 4
    assert journal.current_epoch_ipc_serial == 4


def test_an_out_of_order_batch_is_declined_and_rejected_as_before(cluster, proxy, one_pass_calls):
    proxy.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
    with pytest.raises(JournalOutOfSyncException, match="Can't write txid 5 expecting nextTxId=3"):
        proxy.journal(make_request(3), 1, 5, 1, create_txn_data(5, 1))
    assert one_pass_calls == [True, False]


def test_a_failed_fsync_on_the_one_pass_path_stops_the_journal(
    cluster, proxy, one_pass_calls, monkeypatch
):
    def failing_sync(fd):
        raise OSError(errno.EIO, "Input/output error")

    with monkeypatch.context() as m:
        m.setattr(output_module.os, "fdatasync", failing_sync)
        with pytest.raises(IOException, match="Failed to write txns 1-2"):
            proxy.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
    # The disk is back, but the journal must still refuse (no retrying a failed fsync).
    with pytest.raises(IOException, match="stopped accepting writes"):
        proxy.journal(make_request(3), 1, 3, 1, create_txn_data(3, 1))
    assert one_pass_calls == ["raised", False]
    journal = cluster.journal_node(0).get_or_create_journal(JID)
    assert journal.highest_written_txid == 0


def test_a_pipelined_proxys_journal_connects_like_every_other_call(cluster):
    """journal() on a pipelined proxy with no connection yet (or a dropped one) connects:
    only the writer's direct path must never connect."""
    with QJournalProtocolProxy(*cluster.rpc_address(0), timeout_s=30, pipelined=True) as p:
        assert not p.connected
        p.format(JID, FAKE_NSINFO)
        p.new_epoch(JID, FAKE_NSINFO, 1)
        p.start_log_segment(make_request(1), 1, CURRENT_LAYOUT_VERSION)
        p._channel.reset()  # the connection drops between two calls
        assert not p.connected
        p.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
        assert p.connected
    assert cluster.journal_node(0).get_or_create_journal(JID).highest_written_txid == 2
