"""The JournalNode scrubber (issue 27) on three in-process JournalNodes.

Segments are written by a QuorumJournalManager; a byte of one op is then flipped on disk
(``flip_byte_in_op``), as bit rot would. Each test waits on the scrubber's own metrics.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.file_journal_manager import finalized_edits_file_name
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    flip_byte_in_op,
    write_segment,
    write_txns,
)

pytestmark = pytest.mark.timeout(60)

SEG = finalized_edits_file_name(1, 20)


def cluster_with(tmp_path, **scrub: str) -> MiniJournalCluster:
    conf = Configuration()
    conf.set("dfs.journalnode.sync.interval", "3600000")  # only the scrubber repairs here
    for key, value in scrub.items():
        conf.set(f"dfs.journalnode.scrub.{key}", value)
    cluster = MiniJournalCluster(3, base_dir=tmp_path, conf=conf)
    cluster.conf.set("dfs.namenode.shared.edits.dir", cluster.quorum_journal_uri(JID))
    for i in range(3):
        cluster.restart_journal_node(i)
    return cluster


@pytest.fixture
def writer_of() -> Iterator[Callable[[MiniJournalCluster], QuorumJournalManager]]:
    made: list[QuorumJournalManager] = []

    def make(cluster: MiniJournalCluster) -> QuorumJournalManager:
        qjm = QuorumJournalManager(cluster.conf, cluster.quorum_journal_uri(JID), FAKE_NSINFO)
        made.append(qjm)
        qjm.format(FAKE_NSINFO)
        qjm.recover_unfinalized_segments()
        return qjm

    yield make
    for qjm in made:
        qjm.close()


def write_two_segments(qjm: QuorumJournalManager) -> None:
    """Segments 1-20 (SEG) and 21-25, finalized on all three nodes: write_segment returns
    on a quorum, and the third node's calls may still be queued."""
    write_segment(qjm, 1, 20, True)
    write_segment(qjm, 21, 5, True)
    qjm.loggers.wait_for_all_pending_calls()


def scrubber(cluster: MiniJournalCluster, i: int):
    return cluster.journal_node(i).scrubbers[JID]


def bean(cluster: MiniJournalCluster, i: int) -> dict:
    return scrubber(cluster, i).bean()


def test_a_flipped_byte_is_found_and_repaired_from_two_agreeing_peers(tmp_path, writer_of):
    with cluster_with(tmp_path, interval="200") as cluster:
        qjm = writer_of(cluster)
        write_two_segments(qjm)
        damaged = cluster.current_dir(0, JID) / SEG
        good = (cluster.current_dir(1, JID) / SEG).read_bytes()
        flip_byte_in_op(damaged, 7)
        assert damaged.read_bytes() != good
        wait_until(lambda: bean(cluster, 0)["RepairedSegments"] == 1, what="a repair")
        assert damaged.read_bytes() == good == (cluster.current_dir(2, JID) / SEG).read_bytes()
        aside = cluster.current_dir(0, JID) / f"{SEG}.corrupt"
        assert aside.exists() and aside.read_bytes() != good
        b = bean(cluster, 0)
        assert (b["CorruptSegments"], b["UnrepairableSegments"]) == (1, 0)
        # The next full pass finds nothing more.
        passes = b["FullPasses"]
        wait_until(lambda: bean(cluster, 0)["FullPasses"] > passes + 1, what="another pass")
        assert bean(cluster, 0)["CorruptSegments"] == 1
        assert all(bean(cluster, i)["CorruptSegments"] == 0 for i in (1, 2))
        # Visible on /metrics.
        text = _get(cluster, 0, "/metrics")
        assert f'journalnode_scrub_repaired_segments_total{{journal_id="{JID}"}} 1.0' in text
        assert "JournalNodeScrubber-" + JID in _get(cluster, 0, "/jmx")
        # The status page shows the bean (its script reads /jmx; the browser test shows it).
        assert "journalnode.js" in _get(cluster, 0, "/")


def _get(cluster: MiniJournalCluster, i: int, path: str) -> str:
    import urllib.request

    host, port = cluster.http_address(i)
    with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=10) as r:
        return r.read().decode()


def test_no_repair_from_a_single_unconfirmed_copy(tmp_path, writer_of):
    #   segment [1, 20]   jn0: damaged at 7   jn1: damaged at 12   jn2: intact
    # jn0 and jn1 each find one good peer copy (jn2's) that no second peer confirms:
    # both are moved aside and reported, never "repaired".
    with cluster_with(tmp_path, interval="200") as cluster:
        qjm = writer_of(cluster)
        write_two_segments(qjm)
        flip_byte_in_op(cluster.current_dir(0, JID) / SEG, 7)
        flip_byte_in_op(cluster.current_dir(1, JID) / SEG, 12)
        for i in (0, 1):
            wait_until(lambda i=i: bean(cluster, i)["UnrepairableSegments"] == 1, what=f"jn{i}")
            assert not (cluster.current_dir(i, JID) / SEG).exists()
            assert (cluster.current_dir(i, JID) / f"{SEG}.corrupt").exists()
            assert bean(cluster, i)["RepairedSegments"] == 0
            assert any("UNREPAIRABLE" in f for f in bean(cluster, i)["Findings"])
            assert bean(cluster, i)["MovedAside"] == [f"{SEG}.corrupt"]
        assert bean(cluster, 2)["CorruptSegments"] == 0
        assert (cluster.current_dir(2, JID) / SEG).exists()


def test_a_segment_being_read_is_not_pulled_from_under_its_reader(tmp_path, writer_of):
    with cluster_with(tmp_path, interval="3600000") as cluster:
        qjm = writer_of(cluster)
        write_two_segments(qjm)
        s0 = scrubber(cluster, 0)
        wait_until(lambda: s0.state == "waiting for the next pass", what="the first pass")
        damaged = cluster.current_dir(0, JID) / SEG
        flip_byte_in_op(damaged, 3)
        journal = cluster.journal_node(0).get_or_create_journal(JID)
        f, _, _ = journal.open_segment_for_read(1, False)
        try:
            [finding] = s0.scrub_once()
            assert finding.txid == 3
            assert damaged.exists()
            assert not damaged.with_name(SEG + ".corrupt").exists()
        finally:
            f.close()
        s0.scrub_once()
        assert bean(cluster, 0)["RepairedSegments"] == 1
        assert damaged.read_bytes() == (cluster.current_dir(1, JID) / SEG).read_bytes()


def test_the_scrubber_stays_under_its_rate_while_a_writer_streams(tmp_path, writer_of):
    rate = 40_000  # bytes/s
    with cluster_with(tmp_path, interval="3600000", **{"bytes-per-second": str(rate)}) as cluster:
        qjm = writer_of(cluster)
        for start in range(1, 6001, 1000):
            write_segment(qjm, start, 1000, True)
        qjm.loggers.wait_for_all_pending_calls()
        s0 = scrubber(cluster, 0)
        wait_until(lambda: s0.state == "waiting for the next pass", what="the first pass")
        errors: list[BaseException] = []
        stop = threading.Event()

        def stream_edits() -> None:
            try:
                stm = qjm.start_log_segment(6001, CURRENT_LAYOUT_VERSION)
                txid = 6001
                while not stop.is_set():
                    write_txns(stm, txid, 10)
                    txid += 10
                stm.close()
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)

        writer = threading.Thread(target=stream_edits)
        writer.start()
        before = bean(cluster, 0)["BytesScrubbed"]
        started = time.monotonic()
        pass_thread = threading.Thread(target=s0.scrub_once)
        pass_thread.start()
        time.sleep(1.5)  # a measuring window, not a wait for a condition
        scrubbed = bean(cluster, 0)["BytesScrubbed"] - before
        elapsed = time.monotonic() - started
        stop.set()
        writer.join(timeout=30)
        s0._stop.set()  # end the pass early: the test is about its rate
        pass_thread.join(timeout=30)
        assert not errors, errors
        assert scrubbed > 0
        assert scrubbed <= rate * elapsed * 1.5 + rate, (scrubbed, elapsed)
