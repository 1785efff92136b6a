"""The standby's EditLogTailer in process: what it sees with in-progress tailing off (only
finalized segments, made by the active's rolls or by the rolls the standby asks for every
``dfs.ha.log-roll.period``), what a standby loads at start-up, and that a standby never
writes to the shared journal.

::

    JN journal, in-progress tailing off:
        edits_0..1-2 (finalized)   edits_inprogress_3 (/b, /c)
        \\________ nn2 sees ______/ \\___ nn2 does not, until a roll ___/
"""

from __future__ import annotations

import pytest

from hadoop_qjm.namenode.protocol.messages import HAServiceState
from hadoop_qjm.testing.in_process_ha import HAPair, ha_conf, wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from tests.integration.namenode_support import wait_for_journal_nodes

pytestmark = pytest.mark.timeout(60)

JID = "tailing"
#: The JournalNode files a writer creates: edit segments and the epochs it took.
WRITER_FILES = ("edits_", "last-promised-epoch", "last-writer-epoch")


def make_pair(mjc, tmp_path, **extra) -> HAPair:
    return HAPair(ha_conf(tmp_path, mjc, JID, **extra), tmp_path)


def exists(pair: HAPair, nnid: str, path: str) -> bool:
    return pair[nnid].core.namesystem.dir.get_inode(path) is not None


def tail_rounds(pair: HAPair, nnid: str, n: int) -> None:
    """Wait until ``nnid``'s tailer has completed ``n`` more rounds (each one read the
    journals): what it has not applied by then, it did not see."""
    tailer = pair[nnid].tailer
    start = tailer.rounds
    wait_until(lambda: tailer.rounds >= start + n, what=f"{n} tail rounds on {nnid}")


def journal_files(mjc: MiniJournalCluster) -> list[set[str]]:
    """Per JournalNode: the writer's files in the journal's current dir (segments, epochs,
    Paxos records)."""
    result = []
    for i in range(mjc.num_journal_nodes):
        current = mjc.current_dir(i, JID)
        names = {p.name for p in current.iterdir() if p.name.startswith(WRITER_FILES)}
        result.append(names | {f"paxos/{p.name}" for p in (current / "paxos").iterdir()})
    return result


NO_IN_PROGRESS = {"dfs.ha.tail-edits.in-progress": "false", "dfs.ha.log-roll.period": "-1"}


def test_without_in_progress_tailing_the_standby_sees_edits_only_after_a_roll(mjc, tmp_path):
    pair = make_pair(mjc, tmp_path, **NO_IN_PROGRESS)
    try:
        pair["nn1"].transition_to_active()
        with pair.proxy("nn1") as p1:
            assert p1.mkdirs("/a")
            tail_rounds(pair, "nn2", 5)
            assert not exists(pair, "nn2", "/a")  # in edits_inprogress_1: not read
            first = p1.roll_edits()
            wait_until(lambda: exists(pair, "nn2", "/a"), what="nn2 to load /a after the roll")
            assert pair["nn2"].core.last_applied_txid == first - 1
            assert p1.mkdirs("/b")
            tail_rounds(pair, "nn2", 5)
            assert not exists(pair, "nn2", "/b")
    finally:
        pair.stop()


def test_the_standby_asks_the_active_to_roll_every_log_roll_period(mjc, tmp_path):
    """In-progress tailing off, ``dfs.ha.log-roll.period`` 200 ms: the standby's tailer
    calls rollEditLog on the active, so a fresh edit reaches it without anyone rolling.
    Also on a fresh cluster, where the standby has loaded nothing yet (txid 0)."""
    pair = make_pair(
        mjc,
        tmp_path,
        **{"dfs.ha.tail-edits.in-progress": "false", "dfs.ha.log-roll.period": "200ms"},
    )
    try:
        pair["nn1"].transition_to_active()
        segment = pair["nn1"].core.edit_log.cur_segment_txid
        with pair.proxy("nn1") as p1:
            assert p1.mkdirs("/a")
        wait_until(lambda: exists(pair, "nn2", "/a"), what="nn2 to see /a through a roll")
        assert pair["nn1"].core.edit_log.cur_segment_txid > segment
        with pair.proxy("nn1") as p1:
            assert p1.mkdirs("/b")
        wait_until(lambda: exists(pair, "nn2", "/b"), what="nn2 to see /b through a roll")
    finally:
        pair.stop()


def test_a_standby_started_later_loads_the_finalized_edits_at_start_up(mjc, tmp_path):
    pair = make_pair(mjc, tmp_path, **NO_IN_PROGRESS)
    try:
        pair["nn2"].stop()
        pair["nn1"].transition_to_active()
        with pair.proxy("nn1") as p1:
            for i in range(10):
                assert p1.mkdirs(f"/finalized/{i}")
            next_segment = p1.roll_edits()
            assert p1.mkdirs("/in-progress")
        nn2 = pair.start("nn2")
        # Loaded before start() returned, not by the tailer (in-progress tailing is off):
        assert nn2.state is HAServiceState.STANDBY
        assert all(exists(pair, "nn2", f"/finalized/{i}") for i in range(10))
        assert not exists(pair, "nn2", "/in-progress")
        assert nn2.core.last_applied_txid == next_segment - 1
        with pair.proxy("nn1") as p1:
            p1.roll_edits()
        wait_until(lambda: exists(pair, "nn2", "/in-progress"), what="nn2 to tail the rest")
    finally:
        pair.stop()


def test_a_standby_never_writes_to_the_shared_journal(mjc, tmp_path):
    """Two standbys tail (and checkpoint) for a while: no epoch is taken, no segment
    started. Then nn1 writes; nn2 keeps tailing and checkpointing: the journal holds nn1's
    epoch and segments only. The long poll of an idle round waits 100 ms, not the default 1 s
    (each of its 30 rounds sat out a whole wait)."""
    pair = make_pair(
        mjc,
        tmp_path,
        **{"dfs.namenode.checkpoint.txns": "5", "dfs.ha.tail-edits.in-progress.wait": "100ms"},
    )
    try:
        before = journal_files(mjc)
        assert before == [set()] * 3, before
        tail_rounds(pair, "nn1", 10)
        tail_rounds(pair, "nn2", 10)
        assert journal_files(mjc) == before
        pair["nn1"].transition_to_active()
        with pair.proxy("nn1") as p1:
            for i in range(20):
                assert p1.mkdirs(f"/d{i}")
            wait_until(lambda: exists(pair, "nn2", "/d19"), what="nn2 to tail /d19")
            checkpointer = pair["nn2"].checkpointer
            wait_until(lambda: checkpointer.checkpoints >= 1, what="a standby checkpoint")
            tail_rounds(pair, "nn2", 10)
            # nn1's calls return with a majority: the third JournalNode may still be behind.
            wait_for_journal_nodes(pair["nn1"].core)
            after = journal_files(mjc)
            last = pair["nn1"].core.edit_log.last_written_txid
        for i, names in enumerate(after):
            assert {n for n in names if not n.startswith("last-")} == {f"edits_inprogress_{1:019d}"}
            current = mjc.current_dir(i, JID)
            assert (current / "last-promised-epoch").read_text().strip() == "1"
            assert (current / "last-writer-epoch").read_text().strip() == "1"
        assert pair["nn2"].core.last_applied_txid <= last
    finally:
        pair.stop()
