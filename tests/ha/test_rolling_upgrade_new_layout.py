"""Rolling upgrade to software of a newer layout (issue 36; docs/ha.md "Rolling upgrade to
new software of a newer layout"): the HA pair over three JournalNodes is formatted and
written by the old software (-67), then each NameNode is restarted as the new software
(the project's test-only -68) with ``-rollingUpgrade started``, without ``-upgrade``::

    old (-67)   format, mkdirs, prepare, "Proceed"
    nn2 -> new  standby first, then the active after a failover; nn1 -> new
                every segment header (JournalNodes and local) and VERSION stay -67,
                and so does a checkpoint image (FSNamesystem.getEffectiveLayoutVersion)
    finalize    VERSION -68 on the active at once, on the standby once it tails FINALIZE;
                the roll's segment and every later one -68
    rollback    (instead of finalize) the old software reads it all

and the refusals of a newer software on an older directory.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, FUTURE_LAYOUT_VERSION_FOR_TESTING
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.namenode import rolling_upgrade as ru
from hadoop_qjm.namenode.fs_image_format import read_image
from hadoop_qjm.namenode.ha.bootstrap_standby import bootstrap_standby
from hadoop_qjm.namenode.ha.checkpoint_receivers import TransferResult
from hadoop_qjm.namenode.ha.ha_util import resolve_ha_conf
from hadoop_qjm.namenode.name_node_commands import one_line
from hadoop_qjm.namenode.name_node_core import format_namenode
from hadoop_qjm.namenode.name_node_layout_version import (
    ROLLING_UPGRADE_STARTED,
    check_rolling_upgrade_layout,
    effective_layout_version,
)
from hadoop_qjm.namenode.rolling_rollback import rolling_rollback
from hadoop_qjm.testing.in_process_ha import NS, journal_node_conf, wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from tests.ha.test_rolling_upgrade import dir_listing
from tests.integration.namenode_support import nn_conf, start_nn, wait_for_journal_nodes

pytestmark = pytest.mark.timeout(120)

JID = "ru-layout"
OLD, NEW = CURRENT_LAYOUT_VERSION, FUTURE_LAYOUT_VERSION_FOR_TESTING
#: The new software, as ``namenode -rollingUpgrade started`` runs it.
NEW_SOFTWARE = {"dfs.namenode.testing.future-layout": "true"}
STARTED = {**NEW_SOFTWARE, "dfs.namenode.startup": ROLLING_UPGRADE_STARTED}


def current(base: Path, nnid: str) -> Path:
    return base / nnid / "name" / "current"


def version_layout(cur: Path) -> int:
    for line in (cur / "VERSION").read_text().splitlines():
        if line.startswith("layoutVersion="):
            return int(line.split("=", 1)[1])
    raise AssertionError(f"no layoutVersion in {cur / 'VERSION'}")


def segment_layouts(cur: Path) -> dict[int, int]:
    """Each edit segment's first txid and the layout version of its header (its first 4
    bytes, big-endian), as read from the file."""
    layouts = {}
    for f in cur.glob("edits_*"):
        if f.name.startswith(("edits_inprogress_", "edits_")) and "." not in f.name:
            first = int(f.name.rsplit("_", 1)[1].split("-")[0])
            layouts[first] = struct.unpack(">i", f.read_bytes()[:4])[0]
    return layouts


def every_copy(pair, mjc, tmp_path) -> list[Path]:
    """Where segments are: the three JournalNodes and both NameNodes' name directories."""
    return [
        *(mjc.current_dir(i, JID) for i in range(3)),
        *(current(tmp_path, n) for n in pair.nodes),
    ]


@pytest.fixture
def mjc() -> Iterator[MiniJournalCluster]:
    """tests/ha/conftest.py's JournalNodes, but a stopped writer counts as gone once its
    connection is (``dfs.journalnode.format.live-writer.window.ms`` 0): a NameNode's close
    returns when a majority finalized, and a third node's finalize still queued is dropped,
    which would leave its segment open and "recently written" to the rollback's check."""
    conf = journal_node_conf()
    conf.set("dfs.journalnode.format.live-writer.window.ms", "0")
    with MiniJournalCluster(3, conf=conf) as cluster:
        yield cluster


class Client:
    """mkdirs through one NameNode after another; ``acked`` the paths it was told were made."""

    def __init__(self, pair) -> None:
        self.pair = pair
        self.acked: list[str] = []

    def mkdirs(self, nnid: str, prefix: str, n: int = 5) -> None:
        with self.pair.proxy(nnid) as p:
            for i in range(n):
                assert p.mkdirs(f"/{prefix}/{i}")
                self.acked.append(f"/{prefix}/{i}")

    def lost(self, nnid: str) -> list[str]:
        """The acknowledged paths missing from ``nnid``'s namespace (active or standby)."""
        fs_dir = self.pair[nnid].namesystem.dir
        return [path for path in self.acked if fs_dir.get_inode(path) is None]


def upgrade_both_to_the_new_software(pair, client: Client) -> tuple[int, list]:
    """Old software: mkdirs, prepare, "Proceed"; then nn2 restarted as the new software
    with -rollingUpgrade started, failover to it, nn1 the same. Returns the txid of the
    rollback image and the namespace at prepare."""
    pair["nn1"].transition_to_active()
    client.mkdirs("nn1", "old")
    with pair.proxy("nn1") as p1:
        assert p1.rolling_upgrade("PREPARE").is_started
        at_prepare = pair["nn1"].namesystem.snapshot()
        try:
            wait_until(lambda: p1.rolling_upgrade("QUERY").created_rollback_images, 30, "Proceed")
        except AssertionError as e:
            raise AssertionError(f"{e}; {rollback_image_state(pair)}") from None
    r = pair["nn1"].core.storage.inspect_images(regular=False, rollback=True)[0].txid
    client.mkdirs("nn1", "prepared")
    pair["nn2"].stop()
    nn2 = pair.start("nn2", **STARTED)
    assert nn2.core.storage.software_layout_version == NEW
    pair["nn1"].transition_to_standby()
    nn2.transition_to_active()
    client.mkdirs("nn2", "on-nn2")
    pair["nn1"].stop()
    pair.start("nn1", **STARTED)
    nn2.roll_edit_log()
    client.mkdirs("nn2", "both-new")
    return r, at_prepare


def rollback_image_state(pair) -> str:
    """Where the rollback image got to: each NameNode's last applied txid, rollback images,
    terminate calls, and the standby's tailer error and checkpointer's upload."""
    parts = []
    for nnid, node in pair.nodes.items():
        core = node.core
        images = [i.path.name for i in core.storage.inspect_images(regular=False, rollback=True)]
        services = node.standby_services
        tailer, checkpointer = services.tailer, services.checkpointer
        parts.append(
            f"{nnid} {node.state.name}: applied {core.last_applied_txid}, rollback images "
            f"{images}, terminations {pair.terminations[nnid]}, tailer "
            f"{'running' if tailer and tailer.running else 'stopped'} "
            f"(last error {tailer.last_error if tailer else None}), rollback image uploaded "
            f"{checkpointer.rollback_uploaded_txid if checkpointer else None}"
        )
    return "; ".join(parts)


def caught_up(pair, active: str, standby: str) -> None:
    """Roll ``active``'s segment and wait until ``standby`` has tailed all of it."""
    first = pair[active].core.roll_edit_log()
    wait_until(lambda: pair[standby].core.last_applied_txid >= first - 1, 30, f"{standby}")


def test_effective_layout_version_is_hadoops() -> None:
    """TestFSNamesystem.testGetEffectiveLayoutVersion's table."""
    assert effective_layout_version(True, -60, -61, -63) == -63
    assert effective_layout_version(True, -61, -61, -63) == -61
    assert effective_layout_version(True, -62, -61, -63) == -62
    assert effective_layout_version(True, -63, -61, -63) == -63
    assert effective_layout_version(False, -60, -61, -63) == -63
    assert effective_layout_version(False, -61, -61, -63) == -63
    assert effective_layout_version(False, -62, -61, -63) == -63
    assert effective_layout_version(False, -63, -61, -63) == -63


@pytest.mark.parametrize(
    "storage_lv, software_lv, started, refusal",
    [
        (-67, -67, False, None),
        (-67, -67, True, None),
        (-68, -68, False, None),
        (-67, -68, False, 'restart NameNode with the "-rollingUpgrade started" option'),
        (-67, -68, True, None),  # the rolling upgrade itself is checked once loaded
        (-66, -68, True, "the minimum compatible layout version of this software is -67"),
        (-66, -67, True, "the minimum compatible layout version of this software is -67"),
    ],
)
def test_which_older_layouts_the_software_loads(storage_lv, software_lv, started, refusal):
    """The storage check before anything is loaded (check_rolling_upgrade_layout)."""
    if refusal is None:
        check_rolling_upgrade_layout(storage_lv, software_lv, started)
        return
    with pytest.raises(IOException) as failure:
        check_rolling_upgrade_layout(storage_lv, software_lv, started)
    assert refusal in str(failure.value)


def test_new_software_keeps_the_old_layout_until_finalize(pair, mjc, tmp_path) -> None:
    client = Client(pair)
    upgrade_both_to_the_new_software(pair, client)
    nn1, nn2 = pair["nn1"], pair["nn2"]
    # A checkpoint by the new software mid-upgrade is of the old layout too.
    caught_up(pair, "nn2", "nn1")
    checkpoint = nn1.core.save_namespace()
    image = current(tmp_path, "nn1") / f"fsimage_{checkpoint:019d}"
    assert read_image(image).layout_version == OLD
    wait_for_journal_nodes(nn2.core)
    for cur in every_copy(pair, mjc, tmp_path):
        layouts = segment_layouts(cur)
        assert layouts and set(layouts.values()) == {OLD}, (cur, layouts)
    assert [version_layout(current(tmp_path, n)) for n in ("nn1", "nn2")] == [OLD, OLD]
    assert {version_layout(mjc.current_dir(i, JID)) for i in range(3)} == {OLD}

    with pair.proxy("nn2") as p2:
        assert p2.rolling_upgrade("FINALIZE").is_finalized
    finalized_at = nn2.transaction_id  # the roll's segment starts here
    assert version_layout(current(tmp_path, "nn2")) == NEW
    wait_until(lambda: version_layout(current(tmp_path, "nn1")) == NEW, 30, "nn1's VERSION")
    client.mkdirs("nn2", "finalized")
    wait_for_journal_nodes(nn2.core)  # the third JournalNode too, not just a quorum
    for cur in [*(mjc.current_dir(i, JID) for i in range(3)), current(tmp_path, "nn2")]:
        layouts = segment_layouts(cur)
        assert layouts[finalized_at] == NEW, (cur, layouts)
        assert {lv for first, lv in layouts.items() if first < finalized_at} == {OLD}, layouts
    assert client.lost("nn2") == []
    caught_up(pair, "nn2", "nn1")
    assert client.lost("nn1") == []
    # Finalized: the new software starts as usual now, without the option.
    nn1.stop()
    pair.start("nn1", **NEW_SOFTWARE)
    caught_up(pair, "nn2", "nn1")
    assert client.lost("nn1") == []
    # The active's namespace info took the new layout with its VERSION: the restarted
    # standby's checkpoint (its VERSION read as -68) is accepted.
    assert nn2.core.ns_info.layout_version == NEW
    checkpoint = pair["nn1"].core.save_namespace()
    assert pair["nn1"].standby_services.upload_image("nn2", checkpoint) is TransferResult.SUCCESS


def test_rollback_from_the_new_software_by_the_old(pair, mjc, tmp_path) -> None:
    """Both NameNodes on the new software, not finalized: everything is still -67, so the
    old software rolls back and runs (-rollingUpgrade rollback, then -bootstrapStandby)."""
    client = Client(pair)
    r, at_prepare = upgrade_both_to_the_new_software(pair, client)
    pair.stop()
    # A JournalNode notices the writer's closed connection a moment later.
    wait_until(lambda: writers_gone(mjc), 30, "the JournalNodes to see the writer gone")
    conf1, _, _ = resolve_ha_conf(pair.conf, "nn1")
    assert rolling_rollback(conf1) == r
    nn1 = pair.start("nn1")
    nn1.transition_to_active()
    assert nn1.core.storage.software_layout_version == OLD
    assert nn1.namesystem.snapshot() == at_prepare
    assert version_layout(current(tmp_path, "nn1")) == OLD
    with pair.proxy("nn1") as p1:
        assert p1.mkdirs("/after-rollback")
    conf2, _, _ = resolve_ha_conf(pair.conf, "nn2")
    bootstrap_standby(conf2, NS, "nn2", force=True, out=lambda line: None)
    nn2 = pair.start("nn2")
    wait_until(lambda: nn2.namesystem.snapshot() == nn1.namesystem.snapshot(), 30, "nn2")


def writers_gone(mjc) -> bool:
    seen = [mjc.journal_node(i).get_or_create_journal(JID).writer_watch.seen() for i in range(3)]
    return all(writer is None or not writer.connected for writer in seen)


def refused(pair, mjc, tmp_path, overrides: dict[str, str], message: str) -> None:
    """nn2 started with ``overrides`` refuses in one line matching ``message``; no byte of
    its directory or of any JournalNode's changed."""
    paths = [tmp_path / "nn2", *(mjc.journal_dir(i, JID) for i in range(3))]
    before = dir_listing(paths)
    with pytest.raises(IOException) as failure:
        pair.start("nn2", **overrides)
    line = str(one_line(failure.value))
    assert "\n" not in line and line.startswith(message), line
    assert dir_listing(paths) == before


def test_newer_software_on_an_older_layout_is_refused_and_changes_nothing(
    pair, mjc, tmp_path
) -> None:
    pair["nn1"].transition_to_active()
    Client(pair).mkdirs("nn1", "old")
    wait_for_journal_nodes(pair["nn1"].core)  # nothing left to change a JournalNode's files
    pair["nn2"].stop()
    old_layout = f"File system image contains an old layout version {OLD}.; An upgrade to"
    # Neither -upgrade nor -rollingUpgrade started: Hadoop's message.
    refused(pair, mjc, tmp_path, NEW_SOFTWARE, old_layout)
    # -rollingUpgrade started, but no rolling upgrade is in progress.
    refused(pair, mjc, tmp_path, STARTED, old_layout)
    assert "no rolling upgrade is in progress" in _refusal(pair, STARTED)
    # An older layout than the minimum compatible one cannot be kept.
    version = current(tmp_path, "nn2") / "VERSION"
    version.write_text(version.read_text().replace(f"layoutVersion={OLD}", "layoutVersion=-66"))
    refused(pair, mjc, tmp_path, STARTED, "File system image contains an old layout version -66")
    assert "minimum compatible layout version of this software is -67" in _refusal(pair, STARTED)
    # The old software, on its own layout, starts as ever.
    version.write_text(version.read_text().replace("layoutVersion=-66", f"layoutVersion={OLD}"))
    assert pair.start("nn2").core.storage.software_layout_version == OLD


def _refusal(pair, overrides: dict[str, str]) -> str:
    with pytest.raises(IOException) as failure:
        pair.start("nn2", **overrides)
    return str(failure.value)


def test_an_observer_of_the_new_software_takes_the_new_layout_at_finalize(
    observed, tmp_path
) -> None:
    """FSEditLogLoader's OP_ROLLING_UPGRADE_FINALIZE on an observer: nn2 restarted as an
    observer of the new software mid-upgrade keeps -67 in VERSION until it tails FINALIZE."""
    pair = observed
    with pair.proxy("nn1") as p1:
        assert p1.rolling_upgrade("PREPARE").is_started
        pair["nn2"].stop()
        observer = pair.start("nn2", **STARTED, **{"dfs.namenode.observer.enabled": "true"})
        assert observer.state.name == "OBSERVER"
        assert version_layout(current(tmp_path, "nn2")) == OLD
        assert p1.rolling_upgrade("FINALIZE").is_finalized
    wait_until(lambda: version_layout(current(tmp_path, "nn2")) == NEW, 30, "the observer")
    assert version_layout(current(tmp_path, "nn1")) == OLD  # the old software's own


# ---- without HA: one NameNode and its local edits --------------------------------------------
def now_ms() -> int:
    return 1_700_000_000_000


def test_one_namenode_rolls_to_the_new_layout_and_a_lost_version_write_is_replayed(
    tmp_path,
) -> None:
    """Non-HA: prepare (the rollback image at once), restart as the new software with
    -rollingUpgrade started: its segment is -67. Finalize with the active's VERSION write
    lost (a crash right after FINALIZE was durable): the restart into the upgrade replays
    FINALIZE and writes -68 then (FSEditLogLoader's updateStorageVersion), and from there
    the new software starts without the option and writes -68."""
    old = nn_conf(tmp_path)
    format_namenode(old, fs_owner="hdfs")
    cur = tmp_path / "name" / "current"
    with start_nn(old) as core:
        core.namesystem.mkdirs("/old")
        assert ru.start_rolling_upgrade(core, False, now_ms).is_started
    new = nn_conf(tmp_path, **STARTED)
    core = start_nn(new)
    first = core.edit_log.cur_segment_txid
    core.namesystem.mkdirs("/new")
    assert segment_layouts(cur)[first] == OLD
    core.storage.update_storage_version = lambda: False  # the crash loses the VERSION write
    assert ru.finalize_rolling_upgrade(core, False, now_ms).is_finalized
    core.abort()
    assert version_layout(cur) == OLD
    with pytest.raises(IOException, match="old layout version -67"):
        start_nn(nn_conf(tmp_path, **NEW_SOFTWARE))
    with start_nn(new) as core:
        assert version_layout(cur) == NEW
        assert core.namesystem.dir.get_inode("/new") is not None
    with start_nn(nn_conf(tmp_path, **NEW_SOFTWARE)) as core:
        assert segment_layouts(cur)[core.edit_log.cur_segment_txid] == NEW


def test_a_version_write_lost_in_one_of_two_directories_is_replayed(tmp_path) -> None:
    """A crash amid finalize's VERSION writes: name dir a took -68, b kept -67. The start-up
    takes the older (whichever directory comes first), so the replayed FINALIZE rewrites
    both; before, a's -68 was taken and b kept -67 for good."""
    dirs = {"name_dirs": ("a", "b")}
    old = nn_conf(tmp_path, **dirs)
    format_namenode(old, fs_owner="hdfs")
    with start_nn(old) as core:
        assert ru.start_rolling_upgrade(core, False, now_ms).is_started
    new = nn_conf(tmp_path, **dirs, **STARTED)
    with start_nn(new) as core:
        core.namesystem.mkdirs("/new")
        assert ru.finalize_rolling_upgrade(core, False, now_ms).is_finalized
    a, b = (tmp_path / d / "current" for d in ("a", "b"))
    assert (version_layout(a), version_layout(b)) == (NEW, NEW)
    version = b / "VERSION"
    version.write_text(version.read_text().replace(f"layoutVersion={NEW}", f"layoutVersion={OLD}"))
    assert version_layout(b) == OLD
    with start_nn(new) as core:
        assert (version_layout(a), version_layout(b)) == (NEW, NEW)
        assert core.namesystem.dir.get_inode("/new") is not None


def test_the_command_line_flag_sets_hadoops_startup_option(monkeypatch, tmp_path) -> None:
    """``namenode -rollingUpgrade started`` reaches the storage checks as Hadoop's
    NameNode.setStartupOption does: dfs.namenode.startup=ROLLINGUPGRADE(STARTED)."""
    from hadoop_qjm.cli import name_node as cli
    from hadoop_qjm.namenode.name_node_layout_version import rolling_upgrade_started

    seen = []
    monkeypatch.setattr(cli, "run_daemon", lambda conf, upgrade: seen.append(conf) or 0)
    assert cli.run(["-rollingUpgrade", "started"], nn_conf(tmp_path)) == 0
    assert cli.run([], nn_conf(tmp_path)) == 0
    assert [rolling_upgrade_started(conf) for conf in seen] == [True, False]
