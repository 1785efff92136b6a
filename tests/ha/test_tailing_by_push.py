"""Tailing by push (issue 25): the standby's in-progress tailer long-polls the JournalNodes
(getJournaledEdits with ``waitMs``) instead of sleeping ``dfs.ha.tail-edits.period``.

::

    active nn1 --journal--> JN0 JN1 JN2 --(answer the waiting long poll at once)--> nn2
                                     tail period 60 s: polling alone would not see /a
"""

from __future__ import annotations

import threading
import time

import pytest

from hadoop_qjm.testing.in_process_ha import HAPair, ha_conf, journal_node_conf, wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster

pytestmark = pytest.mark.timeout(60)

JID = "push"


def exists(pair: HAPair, nnid: str, path: str) -> bool:
    return pair[nnid].core.namesystem.dir.get_inode(path) is not None


def test_the_standby_applies_edits_as_they_are_written_without_polling(mjc, tmp_path):
    # A tail period of a minute: only the push can show nn2 the edits within seconds.
    conf = ha_conf(tmp_path, mjc, JID, **{"dfs.ha.tail-edits.period": "60s"})
    conf.set("dfs.ha.tail-edits.in-progress.wait", "30s")
    pair = HAPair(conf, tmp_path)
    try:
        pair["nn1"].transition_to_active()
        with pair.proxy("nn1") as p1:
            tailer = pair["nn2"].tailer
            wait_until(lambda: tailer._awaiting, what="nn2's tailer to wait on a long poll")
            for i in range(5):
                assert p1.mkdirs(f"/a{i}")
                wait_until(
                    lambda i=i: exists(pair, "nn2", f"/a{i}"), timeout_s=5, what=f"/a{i} on nn2"
                )
        # A transition does not wait for the long poll in flight (30 s).
        started = time.monotonic()
        pair["nn1"].transition_to_standby()
        pair["nn2"].transition_to_active()
        assert time.monotonic() - started < 10
        assert exists(pair, "nn2", "/a4")
    finally:
        pair.stop()


def test_with_a_zero_wait_the_standby_polls_as_before(mjc, tmp_path):
    conf = ha_conf(tmp_path, mjc, JID)
    conf.set("dfs.ha.tail-edits.in-progress.wait", "0")
    pair = HAPair(conf, tmp_path)
    try:
        assert pair["nn2"].tailer.settings.push_wait_s is None
        pair["nn1"].transition_to_active()
        with pair.proxy("nn1") as p1:
            assert p1.mkdirs("/b")
            wait_until(lambda: exists(pair, "nn2", "/b"), what="/b on nn2")
    finally:
        pair.stop()


def test_a_long_poll_holds_no_handler_slot_and_answers_when_written(tmp_path):
    """One handler (dfs.journalnode.handler.count 1): a long poll waiting on one
    connection does not hold up the writer's batches on another."""
    from hadoop_qjm.editlog.fs_edit_log_op import edit_log_header
    from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
    from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, create_txn_data, make_request

    conf = journal_node_conf()
    conf.set("dfs.journalnode.handler.count", "1")
    with MiniJournalCluster(1, conf=conf) as cluster:
        host, port = cluster.rpc_address(0)
        with (
            QJournalProtocolProxy(host, port) as writer,
            QJournalProtocolProxy(host, port) as reader,
        ):
            writer.format("j", FAKE_NSINFO)
            writer.new_epoch("j", FAKE_NSINFO, 1)
            writer.start_log_segment(make_request(1, journal_id="j"), 1)
            # Hadoop's call (no waitMs) answers at once with nothing new.
            assert reader.get_journaled_edits("j", 1, 10).txn_count == 0
            answer: list = []
            started = time.monotonic()
            poll = threading.Thread(
                target=lambda: answer.append(reader.get_journaled_edits("j", 1, 10, None, 20000))
            )
            poll.start()
            wait_until(
                lambda: cluster.journal_node(0).get_or_create_journal("j")._edit_waiters == 1,
                what="the long poll to wait",
            )
            writer.journal(make_request(2, journal_id="j"), 1, 1, 3, create_txn_data(1, 3))
            poll.join(10)
            assert answer and answer[0].txn_count == 3
            assert answer[0].edit_log == edit_log_header() + create_txn_data(1, 3)
            assert time.monotonic() - started < 10
            # With nothing new, the wait ends on its own.
            started = time.monotonic()
            assert reader.get_journaled_edits("j", 4, 10, None, 200).txn_count == 0
            assert 0.15 < time.monotonic() - started < 5
