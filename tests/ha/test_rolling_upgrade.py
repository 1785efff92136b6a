"""Rolling upgrade of an in-process HA pair over three JournalNodes (issue 36 item 1,
docs/ha.md "Upgrades"): prepare, query, finalize, rollback and each refusal.

::

    nn1 (active)   ... mkdirs | START (S) END (R=S+1) | mkdirs ...   | FINALIZE, roll
    nn2 (standby)  tails to R, stops there, saves fsimage_rollback_R, uploads it to nn1
    query          "Preparing ..." until nn1 has fsimage_rollback_R, then "Proceed ..."
    rollback       (both stopped) fsimage_rollback_R -> fsimage_R; every JournalNode's
                   segments from R+1 on -> .trash, committed-txid = R

The whole HA procedure (both NameNodes restarted into the upgrade, a failover, each
JournalNode restarted) runs here in process while a client writes, and as Hadoop's
TestJournalNodeSync.testSyncDuringRollingUpgrade with the JournalNodes' syncers restoring
deleted segments; tests/system/test_rolling_upgrade.py does it with processes (slow).
"""

from __future__ import annotations

import json
import random
import re
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from hadoop_qjm.common.exceptions import AccessControlException, FileNotFoundException
from hadoop_qjm.editlog.fs_edit_log_op import RollingUpgradeFinalizeOp, RollingUpgradeStartOp
from hadoop_qjm.namenode.ha.bootstrap_standby import bootstrap_standby
from hadoop_qjm.namenode.ha.failover_proxy import namenode_proxy_from_conf
from hadoop_qjm.namenode.ha.ha_util import resolve_ha_conf
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.namenode.rolling_rollback import rolling_rollback
from hadoop_qjm.namenode.rolling_upgrade import NO_ROLLING_UPGRADE, rolling_upgrade_message
from hadoop_qjm.testing.in_process_ha import NS, journal_node_conf, wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.tools import dfs_admin
from tests.integration.namenode_support import read_ops

pytestmark = pytest.mark.timeout(120)

JID = "ru"


@pytest.fixture
def mjc() -> Iterator[MiniJournalCluster]:
    """tests/ha/conftest.py's JournalNodes with ``dfs.journalnode.format.live-writer.window.ms``
    0: a NameNode's close returns once a majority finalized and drops a third node's queued
    finalize, whose open segment would otherwise be "recently written" to the rollback."""
    conf = journal_node_conf()
    conf.set("dfs.journalnode.format.live-writer.window.ms", "0")
    with MiniJournalCluster(3, conf=conf) as cluster:
        yield cluster


def current(base: Path, nnid: str) -> Path:
    return base / nnid / "name" / "current"


def rollback_images(base: Path, nnid: str) -> list[str]:
    return sorted(
        p.name for p in current(base, nnid).glob("fsimage_rollback_*") if p.suffix != ".md5"
    )


def journal_ops(mjc, i: int = 0) -> list:
    return read_ops(mjc.current_dir(i, JID), in_progress_ok=True)


def first_txid(name: str) -> int:
    """The first txid in a segment's or an image's name."""
    return int(re.search(r"_(\d{19})", name).group(1))


def dir_listing(paths: list[Path]) -> dict[str, bytes]:
    """Every file under ``paths`` and its bytes: what "nothing changed" compares."""
    return {
        str(f): f.read_bytes()
        for root in paths
        for f in sorted(root.rglob("*"))
        if f.is_file() and f.name != "in_use.lock"
    }


def prepared(pair, tmp_path) -> tuple[NameNodeProxy, int]:
    """nn1 active with a few directories, a rolling upgrade prepared and its rollback
    image on both NameNodes; returns nn1's proxy and the image's txid R."""
    pair["nn1"].transition_to_active()
    p = pair.proxy("nn1")
    for i in range(5):
        p.mkdirs(f"/before/{i}")
    info = p.rolling_upgrade("PREPARE")
    assert info.is_started and not info.is_finalized
    assert info.block_pool_id == pair["nn1"].namespace_info.block_pool_id
    wait_until(lambda: p.rolling_upgrade("QUERY").created_rollback_images, 30, "the rollback image")
    (name,) = rollback_images(tmp_path, "nn1")
    return p, int(name.rsplit("_", 1)[1])


def test_prepare_query_finalize(pair, mjc, tmp_path) -> None:
    p, r = prepared(pair, tmp_path)
    # The image ends where START's segment does: START at S, OP_END_LOG_SEGMENT at R = S+1.
    starts = [op for op in journal_ops(mjc) if isinstance(op, RollingUpgradeStartOp)]
    assert [op.txid for op in starts] == [r - 1]
    assert rollback_images(tmp_path, "nn2") == [f"fsimage_rollback_{r:019d}"]
    assert (current(tmp_path, "nn1") / f"fsimage_rollback_{r:019d}.md5").is_file()
    # /jmx: NameNodeInfo's RollingUpgradeStatus (RollingUpgradeInfo.Bean's fields).
    url = f"http://127.0.0.1:{pair['nn1'].http_address[1]}/jmx"
    with urllib.request.urlopen(url, timeout=30) as response:
        beans = json.load(response)["beans"]
    (info_bean,) = [b for b in beans if b["name"].endswith("name=NameNodeInfo")]
    status = info_bean["RollingUpgradeStatus"]
    assert status["blockPoolId"] == pair["nn1"].namespace_info.block_pool_id
    assert status["createdRollbackImages"] is True and status["finalizeTime"] == 0
    assert status["startTime"] == starts[0].time
    p.mkdirs("/during")
    done = p.rolling_upgrade("FINALIZE")
    assert done.is_finalized and done.start_time == starts[0].time
    assert p.rolling_upgrade("QUERY") is None
    finals = [op for op in journal_ops(mjc) if isinstance(op, RollingUpgradeFinalizeOp)]
    assert len(finals) == 1 and finals[0].txid > r
    # The rollback images become ordinary ones, on the standby once it tailed FINALIZE.
    assert rollback_images(tmp_path, "nn1") == []
    assert (current(tmp_path, "nn1") / f"fsimage_{r:019d}").is_file()
    wait_until(lambda: rollback_images(tmp_path, "nn2") == [], 30, "nn2's rename")
    assert (current(tmp_path, "nn2") / f"fsimage_{r:019d}").is_file()


def test_prepare_twice_and_finalize_twice_change_nothing(pair, mjc, tmp_path) -> None:
    p, _ = prepared(pair, tmp_path)
    txid = pair["nn1"].transaction_id
    first = p.rolling_upgrade("QUERY")
    assert p.rolling_upgrade("PREPARE") == first  # Hadoop's: the one in progress
    assert pair["nn1"].transaction_id == txid
    p.rolling_upgrade("FINALIZE")
    txid = pair["nn1"].transaction_id
    assert p.rolling_upgrade("FINALIZE") is None
    assert pair["nn1"].transaction_id == txid
    ops = journal_ops(mjc)
    assert sum(isinstance(op, RollingUpgradeStartOp) for op in ops) == 1
    assert sum(isinstance(op, RollingUpgradeFinalizeOp) for op in ops) == 1


def test_dfsadmin_prints_hadoops_lines(pair, tmp_path, capsys) -> None:
    pair["nn1"].transition_to_active()
    conf = pair.client_conf()
    assert dfs_admin.run(["-rollingUpgrade"], conf) == 0
    assert capsys.readouterr().out == f"QUERY rolling upgrade ...\n{NO_ROLLING_UPGRADE}\n"
    assert dfs_admin.run(["-rollingUpgrade", "finalize"], conf) == 0
    assert capsys.readouterr().out == f"FINALIZE rolling upgrade ...\n{NO_ROLLING_UPGRADE}\n"
    assert dfs_admin.run(["-rollingUpgrade", "prepare"], conf) == 0
    out = capsys.readouterr().out
    assert out.startswith("PREPARE rolling upgrade ...\n")
    assert "  Block Pool ID: " in out and "  Finalize Time: <NOT FINALIZED>" in out
    wait_until(lambda: rollback_images(tmp_path, "nn1"), 30, "the rollback image")
    assert dfs_admin.run(["-rollingUpgrade", "query"], conf) == 0
    out = capsys.readouterr().out
    assert out.startswith("QUERY rolling upgrade ...\nProceed with rolling upgrade:\n")
    assert dfs_admin.run(["-rollingUpgrade", "finalize"], conf) == 0
    out = capsys.readouterr().out
    assert out.startswith("FINALIZE rolling upgrade ...\nRolling upgrade is finalized.\n")


def test_a_bad_action_is_one_line_and_a_tenant_is_refused(pair, monkeypatch) -> None:
    pair["nn1"].transition_to_active()
    with pytest.raises(dfs_admin.UsageError, match='Failed to covert "upgrade"'):
        dfs_admin.run(["-rollingUpgrade", "upgrade"], pair.client_conf())
    monkeypatch.setenv("HADOOP_USER_NAME", "alice")
    with NameNodeProxy(*pair["nn1"].rpc_address, timeout_s=30) as alice:
        with pytest.raises(AccessControlException, match="Superuser privilege is required"):
            alice.rolling_upgrade("PREPARE")
    assert pair["nn1"].rolling_upgrade("QUERY") is None


def test_rollback_restores_the_prepare_time_namespace(pair, mjc, tmp_path) -> None:
    p, r = prepared(pair, tmp_path)
    at_prepare = pair["nn1"].namesystem.snapshot()
    for i in range(500):
        p.mkdirs(f"/after/{i}")
    assert pair["nn1"].namesystem.snapshot() != at_prepare
    pair.stop()
    epoch = int((mjc.current_dir(0, JID) / "last-promised-epoch").read_text())
    conf1, _, _ = resolve_ha_conf(pair.conf, "nn1")
    assert rolling_rollback(conf1) == r
    for i in range(3):
        cur = mjc.current_dir(i, JID)
        trash = [f.name for f in cur.glob("edits_*.trash")]
        assert trash and all(first_txid(name) > r for name in trash), trash
        kept = [f.name for f in cur.glob("edits_*") if not f.name.endswith(".trash")]
        assert kept and all(first_txid(name) <= r for name in kept), kept
        assert int.from_bytes((cur / "committed-txid").read_bytes(), "big") == r
    assert rollback_images(tmp_path, "nn1") == []
    images = [
        first_txid(f.name) for f in current(tmp_path, "nn1").glob("fsimage_*") if f.suffix != ".md5"
    ]
    assert r in images and max(images) == r, images
    # nn1 starts from fsimage_R, writes from R+1 under a new epoch; nn2 bootstraps from it.
    nn1 = pair.start("nn1")
    nn1.transition_to_active()
    assert nn1.namesystem.snapshot() == at_prepare
    assert nn1.rolling_upgrade("QUERY") is None
    with pair.proxy("nn1") as p1:
        assert p1.mkdirs("/resumed")
    assert int((mjc.current_dir(0, JID) / "last-writer-epoch").read_text()) > epoch
    resumed = read_ops(mjc.current_dir(0, JID), r + 1, in_progress_ok=True)
    assert resumed[0].txid == r + 1 and type(resumed[0]).__name__ == "StartLogSegmentOp"
    conf2, _, _ = resolve_ha_conf(pair.conf, "nn2")
    bootstrap_standby(conf2, NS, "nn2", force=True, out=lambda line: None)
    nn2 = pair.start("nn2")
    wait_until(lambda: nn2.namesystem.snapshot() == nn1.namesystem.snapshot(), 30, "nn2 caught up")


def refused_rollback(pair, mjc, tmp_path, nnid: str, error: type, message: str) -> None:
    """``nnid``'s rollback refuses with ``message`` and no file changed anywhere."""
    dirs = [tmp_path / nnid, *(mjc.journal_dir(i, JID) for i in range(3))]
    before = dir_listing(dirs)
    conf, _, _ = resolve_ha_conf(pair.conf, nnid)
    with pytest.raises(error, match=message):
        rolling_rollback(conf)
    assert dir_listing(dirs) == before


def test_rollback_without_a_rollback_image_changes_nothing(pair, mjc, tmp_path) -> None:
    pair["nn1"].transition_to_active()
    with pair.proxy("nn1") as p:
        p.mkdirs("/x")
    pair.stop()
    refused_rollback(
        pair, mjc, tmp_path, "nn1", FileNotFoundException, "^No valid image files found$"
    )


def test_rollback_with_a_journal_node_down_changes_nothing(pair, mjc, tmp_path) -> None:
    """Every JournalNode must answer before any discards: with one down the rollback
    refuses in one line and nothing moved; once it is back the same command succeeds."""
    _, r = prepared(pair, tmp_path)
    pair.stop()
    mjc.stop_journal_node(2)
    refused_rollback(pair, mjc, tmp_path, "nn1", OSError, "Could not perform discardSegments")
    mjc.restart_journal_node(2)
    assert rolling_rollback(resolve_ha_conf(pair.conf, "nn1")[0]) == r


def test_rollback_while_a_namenode_writes_is_refused(pair, mjc, tmp_path) -> None:
    """nn2 stopped, nn1 still active: its JournalNodes have a live writer, so nn2's
    rollback refuses before anything moves."""
    p, _ = prepared(pair, tmp_path)
    pair["nn2"].stop()
    p.mkdirs("/live")
    # Acknowledged once a majority wrote it: the third node's write may land after the
    # "nothing changed" snapshot, which must see every node's files settled first.
    last = pair["nn1"].core.edit_log.last_written_txid
    journals = [mjc.journal_node(i).get_or_create_journal(JID) for i in range(3)]
    wait_until(
        lambda: all(j.highest_written_txid >= last for j in journals),
        10,
        f"every JournalNode to write txid {last}",
    )
    refused_rollback(
        pair, mjc, tmp_path, "nn2", OSError, "^Not rolling back: 3 JournalNodes have a live writer"
    )
    assert p.mkdirs("/still-writing")


def test_bootstrap_standby_mid_upgrade_takes_the_rollback_image(pair, mjc, tmp_path) -> None:
    """HDFS-17178: a standby bootstrapped during the upgrade downloads the active's
    fsimage_rollback_R too, so that it can be failed over to, finalize, or roll back."""
    p, r = prepared(pair, tmp_path)
    p.mkdirs("/after-prepare")
    pair["nn2"].stop()
    conf2, _, _ = resolve_ha_conf(pair.conf, "nn2")
    bootstrap_standby(conf2, NS, "nn2", force=True, out=lambda line: None)
    assert rollback_images(tmp_path, "nn2") == [f"fsimage_rollback_{r:019d}"]
    nn2 = pair.start("nn2")
    nn1 = pair["nn1"]
    wait_until(lambda: nn2.namesystem.snapshot() == nn1.namesystem.snapshot(), 30, "nn2 caught up")
    nn1.transition_to_standby()
    nn2.transition_to_active()
    info = nn2.rolling_upgrade("QUERY")
    assert info is not None and info.created_rollback_images
    assert rollback_images(tmp_path, "nn2") == [f"fsimage_rollback_{r:019d}"]


# ---- the whole HA procedure (Hadoop's TestJournalNodeSync.testSyncDuringRollingUpgrade) -----
def restart_into_the_upgrade(pair, nnid: str) -> None:
    """``namenode -rollingUpgrade started`` in process: stop ``nnid`` and start it again
    (the option only starts the daemon; the upgrade's state is in its edits and images)."""
    pair.restart(nnid)


def fail_over(pair, active: str, standby: str) -> None:
    pair[active].transition_to_standby()
    pair[standby].transition_to_active()


def delete_segments_from_random_journal_nodes(pair, mjc, active: str, rng) -> list[Path]:
    """TestJournalNodeSync.deleteEditLogsFromRandomJN: 20 segments of one mkdir each (a
    roll after each), then 5 of them, chosen at random, deleted from a random JournalNode;
    returns the deleted files. One more mkdir takes the committed txid past them all."""
    names = []
    with pair.proxy(active) as client:
        start = pair[active].roll_edit_log().cur_segment_txid
        for _ in range(20):
            client.mkdirs(f"/sync/{start}")
            end = pair[active].roll_edit_log().cur_segment_txid
            names.append(f"edits_{start:019d}-{end - 1:019d}")
            start = end
        deleted = []
        for name in rng.sample(names, 5):
            victim = mjc.current_dir(rng.randrange(3), JID) / name
            wait_until(victim.exists, 30, f"{victim} finalized")
            victim.unlink()
            deleted.append(victim)
        client.mkdirs(f"/sync/after-{start}")
    return deleted


def all_exist(paths: list[Path]) -> bool:
    return all(p.exists() for p in paths)


def syncing(mjc) -> None:
    """Every JournalNode of ``mjc`` runs a JournalNodeSyncer for the journal, every 100 ms."""
    mjc.conf.set("dfs.journalnode.sync.interval", "100")
    mjc.share_edits(JID)


def test_sync_during_rolling_upgrade(pair, mjc, tmp_path) -> None:
    """TestJournalNodeSync.testSyncDuringRollingUpgrade: through prepare, the restart of
    each NameNode into the upgrade and a failover, the query answers the same upgrade, and
    finalized segments deleted on random JournalNodes are restored by their syncers; they
    are all still there after finalize."""
    syncing(mjc)
    p, _ = prepared(pair, tmp_path)
    info = p.rolling_upgrade("QUERY")
    restart_into_the_upgrade(pair, "nn2")
    assert p.rolling_upgrade("QUERY") == info
    rng = random.Random(36)
    missing = delete_segments_from_random_journal_nodes(pair, mjc, "nn1", rng)
    wait_until(lambda: all_exist(missing), 30, "the syncers to restore the segments")
    p.close()
    fail_over(pair, "nn1", "nn2")
    restart_into_the_upgrade(pair, "nn1")
    with pair.proxy("nn2") as p2:
        assert p2.rolling_upgrade("QUERY") == info
        missing += delete_segments_from_random_journal_nodes(pair, mjc, "nn2", rng)
        wait_until(lambda: all_exist(missing), 30, "the syncers to restore the segments")
        done = p2.rolling_upgrade("FINALIZE")
    assert done.is_finalized
    assert [p for p in missing if not p.exists()] == []


def test_the_syncers_do_not_bring_back_what_a_rollback_discarded(pair, mjc, tmp_path) -> None:
    """With every JournalNode syncing, a rollback's discards stay discarded: JournalNode 0
    discarded from R+1 (the rollback got there first) while its peers still list the later
    segments, and a round of its syncer installs none of them (its committed-txid is R
    now); after the whole rollback no segment after R is back in any ``current/``."""
    syncing(mjc)
    p, r = prepared(pair, tmp_path)
    for i in range(3):
        p.mkdirs(f"/after/{i}")
        pair["nn1"].roll_edit_log()
    pair.stop()
    node0 = mjc.journal_node(0)
    node0.get_or_create_journal(JID).discard_segments(r + 1)
    assert node0._syncers[JID].sync_once() == 0
    assert rolling_rollback(resolve_ha_conf(pair.conf, "nn1")[0]) == r
    for i in range(3):
        assert mjc.journal_node(i)._syncers[JID].sync_once() == 0
        cur = mjc.current_dir(i, JID)
        kept = [f.name for f in cur.glob("edits_*") if not f.name.endswith(".trash")]
        assert all(first_txid(name) <= r for name in kept), (i, kept)
        assert len(list(cur.glob("edits_*.trash"))) >= 3, i


class Writer:
    """A client streaming mkdirs through the nameservice's failover proxy: ``acked`` the
    paths it was told were made, ``errors`` the calls that failed after its retries."""

    def __init__(self, pair) -> None:
        self.acked: list[str] = []
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._client = namenode_proxy_from_conf(pair.client_conf(), timeout_s=30)
        self._thread = threading.Thread(target=self._run, name="mkdirs")
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            try:
                if self._client.mkdirs(f"/load/{i}"):
                    self.acked.append(f"/load/{i}")
            except Exception as e:  # noqa: BLE001 - the test asserts there is none
                self.errors.append(e)
            i += 1

    def more(self, n: int, what: str) -> None:
        """Wait for ``n`` more acknowledged mkdirs (the writer goes on through each step)."""
        target = len(self.acked) + n
        wait_until(lambda: len(self.acked) >= target or self.errors, 30, what)
        assert self.errors == [], self.errors[:3]

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._client.close()


def start_then_finalize(ops: list) -> bool:
    """One OP_ROLLING_UPGRADE_START, its segment's end right after it, then one
    OP_ROLLING_UPGRADE_FINALIZE."""
    names = [type(op).__name__ for op in ops]
    if names.count("RollingUpgradeStartOp") != 1 or names.count("RollingUpgradeFinalizeOp") != 1:
        return False
    start = names.index("RollingUpgradeStartOp")
    return names[start + 1] == "EndLogSegmentOp" and start < names.index("RollingUpgradeFinalizeOp")


def test_rolling_upgrade_of_the_ha_pair_while_a_client_writes(pair, mjc, tmp_path) -> None:
    """docs/ha.md "Upgrades", every step, in process (tests/system has it with processes,
    slow): prepare, query until "Proceed", nn2 restarted into the upgrade, failover, nn1
    restarted, each JournalNode restarted then a roll, finalize — while a client writes
    through the failover proxy. No acknowledged mkdir lost, no call failed, one START and
    one FINALIZE in the journal after it, no rollback image left."""
    pair["nn1"].transition_to_active()
    writer = Writer(pair)
    try:
        writer.more(20, "mkdirs on nn1")
        with pair.proxy("nn1") as p1:
            assert p1.rolling_upgrade("PREPARE").is_started
            wait_until(
                lambda: (
                    "Proceed with rolling upgrade:"
                    in rolling_upgrade_message(p1.rolling_upgrade("QUERY"))
                ),
                30,
                "Proceed",
            )
        writer.more(20, "mkdirs after prepare")
        restart_into_the_upgrade(pair, "nn2")
        writer.more(20, "mkdirs with nn2 restarted")
        fail_over(pair, "nn1", "nn2")
        writer.more(20, "mkdirs on nn2")
        restart_into_the_upgrade(pair, "nn1")
        writer.more(20, "mkdirs with nn1 restarted")
        for i in range(3):
            # A restarted JournalNode joins the stream at the next segment: roll before the
            # next one stops (docs/ha.md, step 6).
            mjc.restart_journal_node(i)
            pair["nn2"].roll_edit_log()
            writer.more(20, f"mkdirs after JournalNode {i} restarted")
        with pair.proxy("nn2") as p2:
            assert p2.rolling_upgrade("FINALIZE").is_finalized
        writer.more(20, "mkdirs after finalize")
    finally:
        writer.stop()
    assert writer.errors == [], writer.errors[:3]
    with pair.proxy("nn2") as p2:
        lost = [path for path in writer.acked if p2.get_file_info(path) is None]
    assert lost == [], f"{len(lost)} acknowledged mkdirs lost, e.g. {lost[:5]}"
    # A quorum's copies (one JournalNode may lag the acknowledgement, or lack the segment
    # written while it restarted) hold the START, its segment's end, then the FINALIZE.
    wait_until(
        lambda: sum(start_then_finalize(journal_ops(mjc, i)) for i in range(3)) >= 2,
        30,
        f"START then FINALIZE in a quorum's journals: {[journal_ops(mjc, i)[-3:] for i in range(3)]}",
    )
    wait_until(
        lambda: rollback_images(tmp_path, "nn1") == rollback_images(tmp_path, "nn2") == [],
        30,
        "the rollback images renamed",
    )
