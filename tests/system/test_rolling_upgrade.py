"""A rolling upgrade of a MiniHACluster (3 JournalNode processes, NameNode processes nn1
and nn2) while clients stream mkdirs through the failover proxy — docs/ha.md "Upgrades",
step by step, with the commands an operator runs::

    dfsadmin -rollingUpgrade prepare      nn1 logs START, rolls; nn2 saves and uploads
    dfsadmin -rollingUpgrade query        ... until "Proceed with rolling upgrade:"
    nn2: stop, namenode -rollingUpgrade started      as the new software (layout -68)
    haadmin -failover nn1 nn2
    nn1: stop, namenode -rollingUpgrade started      the new software too
    each JournalNode: stop, start, dfsadmin -rollEdits (one at a time)
    dfsadmin -rollingUpgrade finalize     nn2 logs FINALIZE, rolls; rollback images renamed

No acknowledged mkdir is lost, no client call fails (the failover proxy retries), the
journal holds one START and one FINALIZE (``oev``), and no rollback image is left. The
new software kept the old layout (-67) in every segment until finalize; from the
finalize's roll on the segments are -68, and so are both NameNodes' VERSION files
(docs/ha.md, "Rolling upgrade to new software of a newer layout").
"""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, FUTURE_LAYOUT_VERSION_FOR_TESTING
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_ha_cluster import MiniHACluster
from hadoop_qjm.testing.name_node_process import NameNodeProcess
from tests.integration.namenode_support import read_ops
from tests.system.test_ha_failover import LoadClient

pytestmark = pytest.mark.timeout(300)


def hdfs(cluster: MiniHACluster, *args: str) -> str:
    result = cluster.run_hdfs(*args)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


#: The new software: the project's test-only layout -68 (docs/ha.md).
NEW_SOFTWARE = ("-D", "dfs.namenode.testing.future-layout=true")


def restart_into_the_upgrade(
    cluster: MiniHACluster, tmp_path: Path, nnid: str, generic_args: tuple[str, ...] = ()
) -> None:
    """Stop ``nnid`` and start it with ``-rollingUpgrade started`` (a new log file)."""
    cluster.stop_namenode(nnid)
    cluster.namenodes[nnid] = NameNodeProcess(
        cluster.conf_dir,
        tmp_path / f"{nnid}-upgraded.log",
        generic_args=generic_args,
        namenode_args=("-nnid", nnid, "-rollingUpgrade", "started"),
    )


def header_layouts(current: Path) -> dict[int, int]:
    """Each segment's first txid and the layout version its header holds (4 bytes)."""
    return {
        int(m.group(1)): struct.unpack(">i", f.read_bytes()[:4])[0]
        for f in current.glob("edits_*")
        if (m := re.fullmatch(r"edits_(?:inprogress_)?(\d{19})(?:-\d{19})?", f.name))
    }


def version_layout(current: Path) -> int:
    text = (current / "VERSION").read_text()
    return int(re.search(r"^layoutVersion=(-?\d+)$", text, re.M).group(1))


def wait_for_proceed(cluster: MiniHACluster) -> None:
    """``dfsadmin -rollingUpgrade query`` until it says Proceed (docs/ha.md, step 2)."""
    wait_until(
        lambda: (
            "Proceed with rolling upgrade:" in hdfs(cluster, "dfsadmin", "-rollingUpgrade", "query")
        ),
        60,
        "the rollback image on the active",
    )


def rollback_images(cluster: MiniHACluster, nnid: str) -> list[str]:
    current = cluster.name_dir(nnid) / "current"
    return [p.name for p in current.glob("fsimage_rollback_*")]


@pytest.mark.slow
def test_rolling_upgrade_of_the_ha_pair_under_load(tmp_path: Path) -> None:
    with MiniHACluster(tmp_path / "cluster") as cluster:
        cluster.transition_to_active("nn1")
        load = LoadClient(cluster, threads=2, max_ops=100_000, seconds=240)
        try:
            progress = [100]

            def more(n: int, what: str) -> None:
                progress[0] = max(progress[0], load.count()) + n
                wait_until(lambda: load.count() >= progress[0], 60, what)

            wait_until(lambda: load.count() >= 100, 60, "load on nn1")
            out = hdfs(cluster, "dfsadmin", "-rollingUpgrade", "prepare")
            assert out.startswith("PREPARE rolling upgrade ...\n"), out
            wait_for_proceed(cluster)
            assert rollback_images(cluster, "nn2")
            more(50, "load after prepare")
            restart_into_the_upgrade(cluster, tmp_path, "nn2", NEW_SOFTWARE)
            more(50, "load with nn2 upgraded")
            hdfs(cluster, "haadmin", "-failover", "nn1", "nn2")
            more(50, "load on nn2")
            restart_into_the_upgrade(cluster, tmp_path, "nn1", NEW_SOFTWARE)
            more(50, "load with both upgraded")
            for i in range(3):
                # A restarted JournalNode joins the stream at the next segment: roll before
                # the next one stops, or two of three would be out of the segment.
                cluster.journal_nodes.restart_journal_node(i)
                hdfs(cluster, "dfsadmin", "-rollEdits")
                more(50, f"load after JournalNode {i} restarted")
            out = hdfs(cluster, "dfsadmin", "-rollingUpgrade", "finalize")
            assert "Rolling upgrade is finalized." in out, out
            more(50, "load after finalize")
        finally:
            acked = load.stop()
        assert load.errors == [], load.errors[:3]
        with cluster.proxy("nn2") as p2:
            missing = [path for path in acked if p2.get_file_info(path) is None]
        assert missing == [], f"{len(missing)} acknowledged mkdirs lost, e.g. {missing[:5]}"
        wait_until(
            lambda: not rollback_images(cluster, "nn1") and not rollback_images(cluster, "nn2"),
            60,
            "the rollback images renamed",
        )
        # The journal: one START, one FINALIZE after it; oev shows both by name.
        current = cluster.journal_nodes.current_dir(0, "mycluster")
        ops = read_ops(current, in_progress_ok=True)
        names = [type(op).__name__ for op in ops]
        assert names.count("RollingUpgradeStartOp") == 1, names
        assert names.count("RollingUpgradeFinalizeOp") == 1
        start = names.index("RollingUpgradeStartOp")
        assert names[start + 1] == "EndLogSegmentOp"
        assert start < names.index("RollingUpgradeFinalizeOp")
        segment = next(
            p
            for p in sorted(current.glob("edits_0*"))
            if (m := re.fullmatch(r"edits_(\d{19})-(\d{19})", p.name))
            and int(m.group(1)) <= ops[start].txid <= int(m.group(2))
        )
        xml = hdfs(cluster, "oev", "-i", str(segment), "-o", "-")
        assert "<OPCODE>OP_ROLLING_UPGRADE_START</OPCODE>" in xml
        # The old layout until finalize's roll (the segment after FINALIZE's), then the new.
        finalize_txid = ops[names.index("RollingUpgradeFinalizeOp")].txid
        layouts = header_layouts(current)
        assert {lv for first, lv in layouts.items() if first <= finalize_txid} == {
            CURRENT_LAYOUT_VERSION
        }, layouts
        assert layouts[finalize_txid + 2] == FUTURE_LAYOUT_VERSION_FOR_TESTING, layouts
        for nnid in ("nn1", "nn2"):
            name_current = cluster.name_dir(nnid) / "current"
            wait_until(
                lambda c=name_current: version_layout(c) == FUTURE_LAYOUT_VERSION_FOR_TESTING,
                60,
                f"{nnid}'s VERSION",
            )


@pytest.mark.slow
def test_rollback_of_the_ha_pair(tmp_path: Path) -> None:
    """prepare, 500 more mkdirs, stop both NameNodes, ``namenode -rollingUpgrade rollback``
    on nn1 (which then runs), ``-bootstrapStandby`` nn2: the namespace is the one at
    prepare, the later segments are ``.trash`` on every JournalNode, committed-txid is R."""
    with MiniHACluster(tmp_path / "cluster") as cluster:
        cluster.transition_to_active("nn1")
        with cluster.client(timeout_s=30) as fs:
            for i in range(20):
                assert fs.mkdirs(f"/before/{i}")
            hdfs(cluster, "dfsadmin", "-rollingUpgrade", "prepare")
            wait_for_proceed(cluster)
            at_prepare = sorted(s.path for s in fs.list_status("/before"))
            for i in range(500):
                assert fs.mkdirs(f"/after/{i}")
        (image,) = [p for p in rollback_images(cluster, "nn1") if not p.endswith(".md5")]
        r = int(image.rsplit("_", 1)[1])
        cluster.stop_namenode("nn1")
        cluster.stop_namenode("nn2")
        log = tmp_path / "nn1-rollback.log"
        cluster.namenodes["nn1"] = NameNodeProcess(
            cluster.conf_dir, log, namenode_args=("-nnid", "nn1", "-rollingUpgrade", "rollback")
        )
        assert f"Rolled back to fsimage_{r:019d}" in log.read_text()
        for i in range(3):
            current = cluster.journal_nodes.current_dir(i, "mycluster")
            assert list(current.glob("edits_*.trash")), i
            assert int.from_bytes((current / "committed-txid").read_bytes(), "big") == r
        hdfs(cluster, "namenode", "-nnid", "nn2", "-bootstrapStandby", "-force", "-nonInteractive")
        cluster.start_namenode("nn2")
        cluster.transition_to_active("nn1")
        with cluster.client(timeout_s=30) as fs:
            assert sorted(s.path for s in fs.list_status("/before")) == at_prepare
            assert fs.get_file_info("/after") is None
            assert fs.mkdirs("/resumed")
        hdfs(cluster, "haadmin", "-failover", "nn1", "nn2")
        with cluster.proxy("nn2") as p2:
            assert p2.get_file_info("/resumed") is not None
            assert p2.get_file_info("/after") is None
