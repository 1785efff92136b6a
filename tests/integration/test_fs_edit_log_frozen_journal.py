"""Pipelined syncs with one JournalNode frozen (issue 23): the other two are the quorum,
so the writer goes on at its pace with k batches in flight; the frozen node's queue
fills to ``dfs.qjournal.queued-edits.limit.mb`` and it is then failed cleanly
(LoggerTooFarBehindException, nothing more queued), never the writer.

    jn0 ──acks──▶   jn1 ──acks──▶   jn2  SIGSTOP: batches queue up to 1 MiB, then refused
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp
from hadoop_qjm.namenode.fs_edit_log import FSEditLog
from hadoop_qjm.namenode.journal_set import JournalSet
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO

pytestmark = pytest.mark.timeout(120)

DEPTH = 4
WRITERS = 4
LIMIT_MB = 1
#: About 4 KB per op: the frozen node's 1 MiB fills after some 250 ops.
PATH = "/frozen/" + "p" * 4000


@pytest.fixture
def cluster(tmp_path) -> Iterator[MiniJournalCluster]:
    with MiniJournalCluster(3, base_dir=tmp_path, processes=True) as mjc:
        yield mjc


def _edit_log(cluster: MiniJournalCluster) -> tuple[FSEditLog, QuorumJournalManager]:
    conf = Configuration()
    conf.set("dfs.qjournal.queued-edits.limit.mb", str(LIMIT_MB))
    conf.set("dfs.qjournal.write-txns.timeout.ms", "60000")  # a writer waiting would hang
    qjm = QuorumJournalManager(conf, cluster.quorum_journal_uri("frozen"), FAKE_NSINFO)
    qjm.format(FAKE_NSINFO)
    journals = JournalSet()
    journals.add(qjm, required=True, shared=True)

    def terminate(status: int, message: str) -> None:
        raise AssertionError(f"the edit log terminated: {message}")

    log = FSEditLog(journals, terminate=terminate, pipeline_depth=DEPTH)
    log.init_journals_for_write()
    log.recover_unclosed_streams()
    log.open_for_write()
    return log, qjm


def _write(log: FSEditLog, ops_per_writer: int) -> float:
    """WRITERS threads log and sync ops_per_writer ops each; the seconds it took."""
    errors: list[BaseException] = []

    def handler() -> None:
        try:
            for _ in range(ops_per_writer):
                log.log_sync(log.log_edit(MkdirOp.create(0, PATH)))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=handler) for _ in range(WRITERS)]
    began = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(90)
    assert not errors, errors[0]
    return time.monotonic() - began


def test_a_frozen_journal_node_slows_no_sync_and_is_failed_at_its_queue_limit(cluster) -> None:
    log, qjm = _edit_log(cluster)
    frozen = qjm.loggers.loggers[2]
    try:
        healthy_s = _write(log, 50)
        os.kill(cluster.nodes[2].pid, signal.SIGSTOP)
        try:
            frozen_s = _write(log, 150)  # 600 ops of 4 KB: more than the 1 MiB limit
            stats = log.stats()
            assert log.synced_txid == log.last_written_txid, "a sync did not complete"
            assert stats.max_syncs_in_flight > 1, "the syncs were never pipelined"
            # The frozen node holds at most its limit, and was refused the rest.
            assert 0 < frozen.queued_edits_size <= LIMIT_MB * 1024 * 1024
            assert frozen.highest_acked_txid < log.synced_txid
            print(f"200 ops healthy {healthy_s:.2f}s; 600 with jn2 frozen {frozen_s:.2f}s")
            # Not slowed: the quorum of two kept answering. (Generous: a writer that
            # waited for the frozen node would hang until the test's timeout.)
            assert frozen_s < 60
        finally:
            os.kill(cluster.nodes[2].pid, signal.SIGCONT)
        log.roll_edit_log()  # the next segment takes the node back
        _write(log, 5)
    finally:
        log.close()
