"""FSImage and NNStorage on real directories (HDFS-1073 §4, §5, §8, §9.2).

Round trips, a crash at each step of saveNamespace followed by a fresh start-up, corrupt
images, retention, gaps, the offline checkpoint and formatting. The shared journal, where
one is used, is a MiniJournalCluster.
"""

from __future__ import annotations

import logging
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from hadoop_qjm.common.exceptions import InconsistentFSStateException, IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.fs_image import SaveNamespaceFaultInjector, checkpoint_offline
from hadoop_qjm.namenode.initialize_shared_edits import initialize_shared_edits
from hadoop_qjm.namenode.name_node_core import format_namenode
from hadoop_qjm.namenode.nn_storage import checkpoint_file_name, image_file_name
from hadoop_qjm.namenode.nn_storage_retention_manager import (
    edits_purge_point,
    image_txid_to_retain,
)
from hadoop_qjm.qjournal.protocol.exceptions import JournalInUseException
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import formatted_writer, snapshot_files, write_segment
from tests.integration.namenode_support import (
    Terminations,
    nn_conf,
    start_nn,
    wait_for_journal_nodes,
)


@pytest.fixture(scope="module")
def cluster() -> Iterator[MiniJournalCluster]:
    with MiniJournalCluster(3) as mjc:
        yield mjc


class Crash(BaseException):
    """A simulated crash: not an Exception, so nothing after the hook runs."""


class CrashAt(SaveNamespaceFaultInjector):
    """Crashes at the hook named ``step`` once armed; ``error`` raises that instead."""

    def __init__(self, step: str, error: BaseException | None = None) -> None:
        self.step = step
        self.error = error
        self.armed = False
        self.fired: list[object] = []

    def _maybe(self, name: str, arg: object = None) -> None:
        if self.armed and name == self.step:
            self.fired.append(arg)
            raise self.error if self.error is not None else Crash(name)

    def after_end_segment(self, txid: int) -> None:
        self._maybe("after_end_segment", txid)

    def during_image_write(self, path: Path) -> None:
        self._maybe("during_image_write", path)

    def after_image_written(self, path: Path) -> None:
        self._maybe("after_image_written", path)

    def after_rename(self, path: Path) -> None:
        self._maybe("after_rename", path)

    def after_start_segment(self, txid: int) -> None:
        self._maybe("after_start_segment", txid)

    def before_purge(self) -> None:
        self._maybe("before_purge")


STEPS = [
    "after_end_segment",
    "during_image_write",
    "after_image_written",
    "after_rename",
    "after_start_segment",
    "before_purge",
]


def populate(ns, prefix: str = "") -> None:
    ns.mkdirs(f"{prefix}/user/alice/data", 0o750)
    ns.create(f"{prefix}/user/alice/data/part-0", 0o640)
    ns.create(f"{prefix}/tmp/scratch")
    ns.rename(f"{prefix}/tmp/scratch", f"{prefix}/user")
    ns.set_owner(f"{prefix}/user/alice", "alice", "staff")
    ns.set_times(f"{prefix}/user/scratch", 1000, 2000)
    ns.delete(f"{prefix}/tmp", True)


def images(current: Path) -> list[str]:
    return sorted(p.name for p in current.iterdir() if p.name.startswith("fsimage"))


def segments(current: Path) -> list[str]:
    return sorted(p.name for p in current.iterdir() if p.name.startswith("edits_"))


def test_save_and_load_round_trip(tmp_path) -> None:
    conf = nn_conf(tmp_path, name_dirs=("name1", "name2"), edits=("name1",))
    format_namenode(conf)
    nn = start_nn(conf)
    populate(nn.namesystem)
    snapshot = nn.namesystem.snapshot()
    txid = nn.save_namespace()
    assert txid == nn.edit_log.last_written_txid - 1  # the new segment's START follows
    nn.close()
    for name in ("name1", "name2"):
        current = tmp_path / name / "current"
        # Two checkpoints are retained (dfs.namenode.num.checkpoints.retained).
        assert images(current) == [
            name for t in (0, txid) for name in (image_file_name(t), image_file_name(t) + ".md5")
        ]
        md5_line = (current / (image_file_name(txid) + ".md5")).read_text()
        assert re.fullmatch(rf"[0-9a-f]{{32}} \*{image_file_name(txid)}\n", md5_line)
        assert (current / "seen_txid").read_text() == f"{txid + 1}\n"
        props = (current / "VERSION").read_text()
        assert "storageType=NAME_NODE" in props and "blockpoolID=BP-" in props
    # The image-only directory holds no segments.
    assert segments(tmp_path / "name2" / "current") == []
    nn = start_nn(conf)
    try:
        assert nn.namesystem.snapshot() == snapshot
        assert nn.fs_image.most_recent_checkpoint_txid == txid
    finally:
        nn.close()


@pytest.mark.parametrize("step", STEPS)
def test_crash_at_each_step_of_save_namespace(cluster, tmp_path, step: str) -> None:
    conf = nn_conf(
        tmp_path, name_dirs=("name1", "name2"), edits=("name1",),
        shared=cluster.quorum_journal_uri(f"crash-{step.replace('_', '-')}"),
    )  # fmt: skip
    format_namenode(conf)
    injector = CrashAt(step)
    nn = start_nn(conf, fault_injector=injector)
    populate(nn.namesystem)
    snapshot = nn.namesystem.snapshot()
    n = nn.edit_log.last_written_txid + 1  # the image txid: OP_END_LOG_SEGMENT's
    injector.armed = True
    with pytest.raises(Crash):
        nn.save_namespace()
    assert injector.fired
    nn.abort()  # the process is gone: nothing finalized, nothing cleaned up
    check_crash_state(tmp_path, step, n)

    nn = start_nn(conf)
    try:
        assert nn.namesystem.snapshot() == snapshot
        for name in ("name1", "name2"):
            assert not any("ckpt" in p for p in images(tmp_path / name / "current"))
        nn.namesystem.mkdirs("/after-recovery")
        snapshot = nn.namesystem.snapshot()
        nn.save_namespace()
    finally:
        nn.close()
    nn = start_nn(conf)
    try:
        assert nn.namesystem.snapshot() == snapshot
    finally:
        nn.close()


def check_crash_state(base: Path, step: str, n: int) -> None:
    """What is on disk after a crash at ``step`` of saving fsimage_<n>."""
    name1, name2 = base / "name1" / "current", base / "name2" / "current"
    ckpt, image = checkpoint_file_name(n), image_file_name(n)
    finalized = f"edits_{1:019d}-{n:019d}"
    assert finalized in segments(name1)  # the old segment was finalized first
    seen = (name1 / "seen_txid").read_text()
    if step == "after_end_segment":
        assert not any(str(n) in name for name in images(name1))
        assert segments(name1) == [finalized]
    elif step == "during_image_write":
        assert ckpt in images(name1)
        assert (name1 / ckpt).stat().st_size > 0 and image + ".md5" not in images(name1)
    elif step == "after_image_written":
        assert ckpt in images(name1) and image + ".md5" in images(name1)
        assert image not in images(name1)
    elif step == "after_rename":
        assert image in images(name1) and ckpt not in images(name1)
        assert ckpt in images(name2) and image not in images(name2)
    elif step == "after_start_segment":
        assert image in images(name1) and image in images(name2)
        assert f"edits_inprogress_{n + 1:019d}" in segments(name1)
        assert seen == "1\n"  # still the old segment's first txid
    else:
        assert seen == f"{n + 1}\n"


def test_a_failing_image_directory_is_dropped(tmp_path) -> None:
    conf = nn_conf(tmp_path, name_dirs=("bad", "good"), edits=("good",))
    format_namenode(conf)
    injector = CrashAt("during_image_write", IOException("disk on fire"))
    nn = start_nn(conf, fault_injector=injector)
    try:
        populate(nn.namesystem)
        injector.armed = True
        injector.step = "never"
        original = injector.during_image_write

        def fail_in_bad_dir(path: Path) -> None:
            if path.parent.parent.name == "bad":
                raise IOException("disk on fire")
            original(path)

        injector.during_image_write = fail_in_bad_dir  # type: ignore[method-assign]
        txid = nn.save_namespace()
        assert [d.root.name for d in nn.storage.dirs] == ["good"]
        assert image_file_name(txid) in images(tmp_path / "good" / "current")
        nn.namesystem.mkdirs("/still-writing")
    finally:
        nn.close()


def test_a_corrupt_image_falls_back_to_an_older_one(tmp_path, caplog) -> None:
    conf = nn_conf(tmp_path)
    format_namenode(conf)
    nn = start_nn(conf)
    populate(nn.namesystem)
    older = nn.save_namespace()
    nn.namesystem.mkdirs("/between")
    newer = nn.save_namespace()
    nn.namesystem.mkdirs("/after")
    snapshot = nn.namesystem.snapshot()
    nn.close()
    current = tmp_path / "name" / "current"
    assert image_file_name(older) in images(current)
    image = current / image_file_name(newer)
    data = bytearray(image.read_bytes())
    data[len(data) // 2] ^= 0xFF
    image.write_bytes(bytes(data))

    caplog.set_level(logging.WARNING)
    nn = start_nn(conf)
    try:
        assert nn.namesystem.snapshot() == snapshot
        assert nn.fs_image.most_recent_checkpoint_txid == older
    finally:
        nn.close()
    assert f"Failed to load image from {image}" in caplog.text
    assert "is corrupt with MD5 checksum" in caplog.text

    # No .md5 beside an image makes it unusable too; with no usable image, start-up fails.
    (current / (image_file_name(older) + ".md5")).unlink()
    with pytest.raises(IOException, match="Failed to load FSImage file"):
        start_nn(conf)


def test_retention_purges_old_images_and_edits(cluster, tmp_path) -> None:
    jid = "retention"
    conf = nn_conf(
        tmp_path,
        shared=cluster.quorum_journal_uri(jid),
        **{
            "dfs.namenode.num.checkpoints.retained": "2",
            "dfs.namenode.num.extra.edits.retained": "0",
        },
    )
    format_namenode(conf)
    nn = start_nn(conf)
    try:
        saved = []
        for i in range(3):
            nn.namesystem.mkdirs(f"/round{i}")
            nn.roll_edit_log()
            saved.append(nn.save_namespace())
        current = tmp_path / "name" / "current"
        kept = saved[-2:]
        assert images(current) == sorted(
            name
            for txid in kept
            for name in (image_file_name(txid), image_file_name(txid) + ".md5")
        )
        # Every segment still on disk holds something newer than the oldest kept image.
        wait_for_journal_nodes(nn)  # the JournalNodes' purges were asynchronous
        for directory in [current] + [cluster.current_dir(i, jid) for i in range(3)]:
            names = segments(directory)
            assert names and names[0].startswith(f"edits_{kept[0] + 1:019d}-"), names
    finally:
        nn.close()


def test_a_gap_in_the_edits_is_an_error_naming_it(tmp_path) -> None:
    conf = nn_conf(tmp_path)
    format_namenode(conf)
    nn = start_nn(conf)
    nn.namesystem.mkdirs("/a")
    middle = nn.roll_edit_log()
    nn.namesystem.mkdirs("/b")
    nn.roll_edit_log()
    nn.namesystem.mkdirs("/c")
    nn.close()
    current = tmp_path / "name" / "current"
    victim = next(p for p in current.iterdir() if p.name.startswith(f"edits_{middle:019d}-"))
    victim.unlink()
    with pytest.raises(IOException) as info:
        start_nn(conf)
    assert "Gap in transactions. Expected to be able to read up until at least txid" in str(
        info.value
    )
    assert f"unable to find any edit logs containing txid {middle}" in str(info.value)


def test_checkpoint_offline(tmp_path) -> None:
    conf = nn_conf(tmp_path)
    format_namenode(conf)
    nn = start_nn(conf)
    populate(nn.namesystem)
    directory = tmp_path / "name"
    with pytest.raises(IOException, match="Cannot lock storage"):
        checkpoint_offline(directory, conf)  # a running NameNode holds the lock
    snapshot = nn.namesystem.snapshot()
    last = nn.edit_log.last_written_txid + 1  # close() logs OP_END_LOG_SEGMENT
    nn.close()
    assert checkpoint_offline(directory, conf) == last
    assert image_file_name(last) in images(directory / "current")
    assert checkpoint_offline(directory, conf) == last  # nothing new: nothing to do
    nn = start_nn(conf)
    try:
        assert nn.namesystem.snapshot() == snapshot
        assert nn.fs_image.most_recent_checkpoint_txid == last
    finally:
        nn.close()


def test_start_up_removes_checkpoint_leftovers(tmp_path) -> None:
    conf = nn_conf(tmp_path)
    format_namenode(conf)
    current = tmp_path / "name" / "current"
    leftovers = [
        current / checkpoint_file_name(7),
        current / "fsimage_ckpt_0000000000000000007",  # HDFS-1073's spelling
        current / (image_file_name(7) + ".md5"),  # an .md5 whose image never appeared
    ]
    for path in leftovers:
        path.write_bytes(b"half")
    start_nn(conf).close()
    assert not any(path.exists() for path in leftovers)
    assert (current / (image_file_name(0) + ".md5")).exists()


def test_storage_directory_checks(tmp_path) -> None:
    conf = nn_conf(tmp_path, name_dirs=("a",))
    with pytest.raises(InconsistentFSStateException, match="does not exist"):
        start_nn(conf)
    (tmp_path / "a").mkdir()
    with pytest.raises(IOException, match="NameNode is not formatted."):
        start_nn(conf)
    format_namenode(conf)
    # A new, empty directory joins the namespace of the others.
    conf = nn_conf(tmp_path, name_dirs=("a", "b"), edits=("a",))
    (tmp_path / "b").mkdir()
    start_nn(conf).close()
    assert (tmp_path / "b" / "current" / "VERSION").exists()
    # Directories of two different namespaces cannot be used together.
    shutil.rmtree(tmp_path / "b")
    format_namenode(nn_conf(tmp_path, name_dirs=("b",)))
    with pytest.raises(InconsistentFSStateException, match="namespaceID"):
        start_nn(conf)


def test_format_asks_before_destroying_data(cluster, tmp_path) -> None:
    conf = nn_conf(tmp_path, shared=cluster.quorum_journal_uri("reformat"))
    first = format_namenode(conf, cluster_id="CID-mine")
    assert first.cluster_id == "CID-mine"
    assert re.fullmatch(r"BP-\d+-127\.0\.0\.1-\d+", first.block_pool_id)
    with pytest.raises(IOException, match="Running in non-interactive mode, and data appears"):
        format_namenode(conf)
    asked: list = []
    with pytest.raises(IOException, match="^Format aborted in "):
        format_namenode(conf, confirm=lambda locations: asked.append(locations) or False)
    assert asked == [[str(tmp_path / "name")]]  # one question a location; no stops there
    # Saying yes is not enough for the JournalNodes, which hold data: they need force.
    with pytest.raises(IOException):
        format_namenode(conf, confirm=lambda locations: True)
    second = format_namenode(conf, force=True)
    assert second.namespace_id != first.namespace_id
    assert re.fullmatch(r"CID-[0-9a-f-]{36}", second.cluster_id)
    no_format = nn_conf(tmp_path, **{"dfs.namenode.support.allow.format": "false"})
    with pytest.raises(IOException, match="dfs.namenode.support.allow.format is set to false"):
        format_namenode(no_format, force=True)
    nn = start_nn(conf, Terminations())
    nn.close()


def test_format_checks_the_locks_before_asking_and_names_the_location_declined(
    cluster, tmp_path
) -> None:
    """Issue 33 item 14: both questions came before the running NameNode's lock refused
    the format, and a no to the journal after a yes named the local directory."""
    conf = nn_conf(tmp_path, shared=cluster.quorum_journal_uri("locks-first"))
    format_namenode(conf)
    asked: list = []

    def answer(locations) -> bool:
        asked.append(locations[0])
        return not locations[0].startswith("qjournal://")

    nn = start_nn(conf)
    try:
        with pytest.raises(IOException, match="The directory is already locked"):
            format_namenode(conf, confirm=answer)
        assert asked == []
    finally:
        nn.close()
    with pytest.raises(IOException, match="^Format aborted in qjournal://"):
        format_namenode(conf, confirm=answer)
    assert asked == [str(tmp_path / "name"), cluster.quorum_journal_uri("locks-first")]


@pytest.fixture
def connection_only_cluster() -> Iterator[MiniJournalCluster]:
    """JournalNodes whose format refusal counts only a connected writer (window 0): a
    NameNode's close() returns on a majority and may drop the third node's finalize, and
    that node's segment, written to a moment ago, would count as live for the whole
    default window (60 s)."""
    conf = Configuration()
    conf.set("dfs.journalnode.format.live-writer.window.ms", "0")
    with MiniJournalCluster(3, conf=conf) as mjc:
        yield mjc


def test_format_force_from_another_host_never_wipes_a_live_journal(
    connection_only_cluster, tmp_path
) -> None:
    """Issue 33 item 1, through format_namenode: another host's ``-format -force`` while
    the active NameNode writes changes nothing, neither on the JournalNodes nor locally;
    once the NameNode stopped it formats and reports what it destroyed."""
    cluster = connection_only_cluster
    jid = "live-writer"
    conf = nn_conf(tmp_path / "nn1", shared=cluster.quorum_journal_uri(jid))
    other_host = nn_conf(tmp_path / "host3", shared=cluster.quorum_journal_uri(jid))
    format_namenode(conf)
    nn = start_nn(conf)
    try:
        nn.namesystem.mkdirs("/live")
        wait_for_journal_nodes(nn)  # the third JournalNode has the edits too
        before = [snapshot_files(cluster.journal_dir(i, jid)) for i in range(3)]
        with pytest.raises(JournalInUseException, match="3 of 3 JournalNodes have a live writer"):
            format_namenode(other_host, force=True)
        assert [snapshot_files(cluster.journal_dir(i, jid)) for i in range(3)] == before
        assert not (tmp_path / "host3" / "name" / "current").exists()
        nn.namesystem.mkdirs("/still-writing")
    finally:
        nn.close()
    journals = [cluster.journal_node(i).open_journal(jid) for i in range(3)]
    wait_until(
        lambda: not any(j.can_format().live_writer for j in journals),
        what="the NameNode's connections to close",
    )
    reported: list[str] = []
    format_namenode(other_host, force=True, report=reported.append)
    assert len(reported) == 1
    assert re.match(r"Formatting destroys \d+ segments \(\d+ txns\) on 3 JournalNodes", reported[0])
    assert reported[0].endswith(f"of {cluster.quorum_journal_uri(jid)}")


def test_initialize_shared_edits_never_wipes_a_live_journal(cluster, tmp_path) -> None:
    """-initializeSharedEdits -force while a writer uses the journal: refused before the
    shared directories or any JournalNode change (issue 33)."""
    uri = cluster.quorum_journal_uri("shared-live")
    local = nn_conf(tmp_path)
    format_namenode(local)
    start_nn(local).close()
    shared_dir = tmp_path / "shared"
    conf = nn_conf(tmp_path, shared=f"{uri},file://{shared_dir}")
    writer = formatted_writer(Configuration(), uri)
    try:
        write_segment(writer, 1, 3, False)
        writer.loggers.wait_for_all_pending_calls()  # the third JournalNode has them too
        before = [snapshot_files(cluster.journal_dir(i, "shared-live")) for i in range(3)]
        with pytest.raises(JournalInUseException, match="stop the NameNodes first"):
            initialize_shared_edits(conf, force=True)
        assert [snapshot_files(cluster.journal_dir(i, "shared-live")) for i in range(3)] == before
        assert not (shared_dir / "current" / "VERSION").exists()
    finally:
        writer.close()


@pytest.mark.parametrize(
    "txids, keep, expected", [([], 2, 0), ([5], 2, 5), ([9, 5, 1], 2, 5), ([9, 9, 5], 1, 9)]
)
def test_image_txid_to_retain(txids, keep, expected) -> None:
    assert image_txid_to_retain(txids, keep) == expected


def test_edits_purge_point() -> None:
    segments = [(1, 10), (11, 20), (21, 30), (31, 40)]
    # Keep everything after fsimage_30, nothing extra.
    assert edits_purge_point(30, segments, 0, 10) == 31
    # A cushion of 15 txids reaches into (11, 20).
    assert edits_purge_point(30, segments, 15, 10) == 16
    # ... but at most one extra segment.
    assert edits_purge_point(30, segments, 100, 1) == 21
    assert edits_purge_point(30, segments, 100, 10) == 0
