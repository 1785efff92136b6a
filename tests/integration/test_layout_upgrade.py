"""The layout upgrade of the NameNode's directories (HDFS-5138; docs/ha.md, "Upgrades").

``namenode -upgrade`` with the test-only newer layout (dfs.namenode.testing.future-layout:
-68), then ``-rollback`` with the old software (-67) or ``-finalizeUpgrade``; the refusals.
Each directory's bytes are compared before and after.
"""

from __future__ import annotations

import io
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from hadoop_qjm.common import nn_upgrade_util
from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, FUTURE_LAYOUT_VERSION_FOR_TESTING
from hadoop_qjm.common.exceptions import (
    InconsistentFSStateException,
    IOException,
    UsageError,
    one_line_message,
)
from hadoop_qjm.common.java_properties import load_properties
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode import layout_upgrade
from hadoop_qjm.namenode.ha.bootstrap_standby import bootstrap_standby
from hadoop_qjm.namenode.ha.ha_util import resolve_ha_conf
from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.name_node_commands import (
    parse_startup_option,
    rollback_namenode,
    run_command,
)
from hadoop_qjm.namenode.name_node_core import NameNodeCore, format_namenode
from hadoop_qjm.namenode.name_node_layout_version import IncorrectVersionException
from hadoop_qjm.namenode.nn_storage import NameNodeDirType, NNStorageDirectory
from hadoop_qjm.namenode.protocol.messages import HAServiceState
from hadoop_qjm.testing.in_process_ha import (
    NS,
    HAPair,
    ha_conf,
    http_key,
    journal_node_conf,
    rpc_key,
)
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import snapshot_files
from hadoop_qjm.tools import dfs_admin
from tests.integration.namenode_support import nn_conf, start_nn, wait_for_journal_nodes

pytestmark = pytest.mark.timeout(60)

NEW = FUTURE_LAYOUT_VERSION_FOR_TESTING
OLD = CURRENT_LAYOUT_VERSION


def new_software(conf: Configuration) -> Configuration:
    """``conf`` for the software of the test-only newer layout."""
    upgraded = conf.copy()
    upgraded.set("dfs.namenode.testing.future-layout", "true")
    return upgraded


def layout_of(version_file: Path) -> int:
    return int(load_properties(version_file.read_bytes())["layoutVersion"])


def assert_as_before_the_upgrade(conf: Configuration, restored: StorageInfo) -> None:
    """The old software finds the namespace of before -upgrade, /after-upgrade gone."""
    assert restored.layout_version == OLD
    with start_nn(conf) as nn:
        assert nn.namesystem.get_file_info("/after-upgrade") is None
        assert nn.namesystem.get_file_info("/b") is not None


def assert_finalized(dirs: list[Path], upgraded: Configuration, path: str) -> None:
    """No previous/ and the new layout in every one of ``dirs``; the new software restarts
    as usual and finds ``path``."""
    for d in dirs:
        assert not (d / "previous").exists()
        assert layout_of(d / "current" / "VERSION") == NEW
    with start_nn(upgraded) as nn:
        assert nn.namesystem.get_file_info(path) is not None


@pytest.fixture
def formatted(tmp_path: Path) -> Configuration:
    """Two name directories of the old layout holding /a and /b, the NameNode stopped."""
    conf = nn_conf(tmp_path, name_dirs=("name1", "name2"))
    format_namenode(conf, fs_owner="hdfs")
    with start_nn(conf) as nn:
        nn.namesystem.mkdirs("/a")
        nn.roll_edit_log()
        nn.namesystem.mkdirs("/b")
    return conf


def dirs_of(tmp_path: Path) -> list[Path]:
    return [tmp_path / "name1", tmp_path / "name2"]


def test_upgrade_then_rollback_leaves_every_directory_as_it_was(
    tmp_path: Path, formatted: Configuration
) -> None:
    before = snapshot_files(tmp_path)

    with start_nn(new_software(formatted), upgrade=True) as nn:
        assert nn.ns_info.layout_version == NEW
        assert nn.namesystem.get_file_info("/b") is not None
        nn.namesystem.mkdirs("/after-upgrade")
    for d in dirs_of(tmp_path):
        assert layout_of(d / "current" / "VERSION") == NEW
        assert layout_of(d / "previous" / "VERSION") == OLD

    # An old NameNode refuses the upgraded, unfinalized directories with Hadoop's message.
    with pytest.raises(IncorrectVersionException) as refused:
        start_nn(formatted)
    assert str(refused.value) == (
        f"Unexpected version of storage directory {tmp_path / 'name1'}. "
        f"Reported: {NEW}. Expecting = {OLD}."
    )

    restored = layout_upgrade.do_rollback(formatted)
    assert snapshot_files(tmp_path) == before
    assert_as_before_the_upgrade(formatted, restored)


def test_upgrade_then_finalize_keeps_the_new_layout_and_no_previous(
    tmp_path: Path, formatted: Configuration
) -> None:
    upgraded = new_software(formatted)
    with start_nn(upgraded, upgrade=True) as nn:
        nn.namesystem.mkdirs("/c")
        assert not layout_upgrade.is_upgrade_finalized(nn.storage)
        assert layout_upgrade.finalize_upgrade(nn.storage, nn.edit_log.journal_set, False)
        assert layout_upgrade.is_upgrade_finalized(nn.storage)
    assert_finalized(dirs_of(tmp_path), upgraded, "/c")
    with start_nn(upgraded) as nn:
        # Nothing left to finalize: nothing changes.
        before = snapshot_files(tmp_path)
        assert not layout_upgrade.finalize_upgrade(nn.storage, nn.edit_log.journal_set, False)
        assert snapshot_files(tmp_path) == before
    with pytest.raises(IncorrectVersionException):
        start_nn(formatted)


def test_new_software_needs_upgrade_on_an_old_layout(
    tmp_path: Path, formatted: Configuration
) -> None:
    before = snapshot_files(tmp_path)
    with pytest.raises(IOException) as refused:
        start_nn(new_software(formatted))
    assert f"File system image contains an old layout version {OLD}." in str(refused.value)
    assert f"An upgrade to version {NEW} is required." in str(refused.value)
    assert snapshot_files(tmp_path) == before


def test_a_second_upgrade_before_finalize_is_refused(
    tmp_path: Path, formatted: Configuration
) -> None:
    upgraded = new_software(formatted)
    with start_nn(upgraded, upgrade=True):
        pass
    before = snapshot_files(tmp_path)
    with pytest.raises(InconsistentFSStateException, match="Finalize or rollback first"):
        start_nn(upgraded, upgrade=True)
    assert snapshot_files(tmp_path) == before


def test_rollback_refusals_change_nothing(tmp_path: Path, formatted: Configuration) -> None:
    before = snapshot_files(tmp_path)
    with pytest.raises(IOException, match="None of the storage directories contain previous"):
        layout_upgrade.do_rollback(formatted)
    assert snapshot_files(tmp_path) == before

    upgraded = new_software(formatted)
    with start_nn(upgraded, upgrade=True):
        pass
    before = snapshot_files(tmp_path)
    # The rollback is the old software's to run, as in Hadoop.
    with pytest.raises(IOException, match=f"Cannot rollback to storage version {OLD} using"):
        layout_upgrade.do_rollback(upgraded)
    assert snapshot_files(tmp_path) == before


def test_a_crash_in_the_middle_of_an_upgrade_is_undone_or_completed_at_start(
    tmp_path: Path, formatted: Configuration
) -> None:
    before = snapshot_files(tmp_path)
    name1, name2 = (
        NNStorageDirectory(d, NameNodeDirType.IMAGE_AND_EDITS) for d in dirs_of(tmp_path)
    )
    # name1 crashed after its pre-upgrade (RECOVER_UPGRADE), name2 after its new VERSION
    # was written but before previous.tmp became previous (COMPLETE_UPGRADE).
    nn_upgrade_util.do_pre_upgrade(name1.sd)
    nn_upgrade_util.do_pre_upgrade(name2.sd)
    shutil.copy(name2.sd.previous_tmp / "VERSION", name2.sd.version_file)
    with start_nn(formatted) as nn:
        assert nn.namesystem.get_file_info("/b") is not None
    assert not name1.sd.previous_tmp.exists() and not name1.sd.previous.exists()
    assert name2.sd.previous.exists() and not name2.sd.previous_tmp.exists()
    # name1's files are back in current/ (the start wrote a segment and seen_txid since).
    after = snapshot_files(tmp_path)
    for path, data in before.items():
        if path.startswith("name1/") and not path.endswith("seen_txid"):
            assert after[path] == data


# ---- through three JournalNodes (the shared edits) ----------------------------------------------

EPOCH_FILES = ("last-promised-epoch", "last-writer-epoch")


@pytest.fixture
def journals(tmp_path: Path) -> Iterator[tuple[MiniJournalCluster, Configuration]]:
    """Three JournalNodes and a NameNode of the old layout writing to them, stopped, that
    wrote /a and /b in two segments."""
    with MiniJournalCluster(3, base_dir=tmp_path / "jn") as cluster:
        conf = nn_conf(
            tmp_path, name_dirs=("name1", "name2"), shared=cluster.quorum_journal_uri("ns1")
        )
        format_namenode(conf, fs_owner="hdfs")
        with start_nn(conf) as nn:
            nn.namesystem.mkdirs("/a")
            nn.roll_edit_log()
            nn.namesystem.mkdirs("/b")
            stop_cleanly(nn)
        yield cluster, conf


def stop_cleanly(nn: NameNodeCore) -> None:
    """End the segment and wait for every JournalNode to finalize it (the NameNode's stop
    waits for a majority only, and a late JournalNode would finalize it after a snapshot)."""
    with nn.namesystem.lock:
        nn.edit_log.end_current_log_segment(True)
    wait_for_journal_nodes(nn)


def everything(tmp_path: Path, *, but_epochs: bool = True) -> dict[str, bytes]:
    """Every file of the name dirs and the JournalNodes, the epoch files left out."""
    return {
        path: data
        for path, data in snapshot_files(tmp_path).items()
        if not (but_epochs and path.rsplit("/", 1)[-1] in EPOCH_FILES)
    }


def jn_dirs(cluster: MiniJournalCluster) -> list[Path]:
    return [cluster.journal_dir(i, "ns1") for i in range(cluster.num_journal_nodes)]


def test_upgrade_then_rollback_through_the_journal_nodes_leaves_everything_as_it_was(
    tmp_path: Path, journals: tuple[MiniJournalCluster, Configuration]
) -> None:
    cluster, conf = journals
    before = everything(tmp_path)
    with start_nn(new_software(conf), upgrade=True) as nn:
        nn.namesystem.mkdirs("/after-upgrade")
        stop_cleanly(nn)
    for d in jn_dirs(cluster) + dirs_of(tmp_path):
        assert layout_of(d / "current" / "VERSION") == NEW
        assert layout_of(d / "previous" / "VERSION") == OLD

    restored = rollback_namenode(conf)
    assert everything(tmp_path) == before
    assert_as_before_the_upgrade(conf, restored)


def test_upgrade_then_finalize_through_the_journal_nodes(
    tmp_path: Path, journals: tuple[MiniJournalCluster, Configuration]
) -> None:
    cluster, conf = journals
    upgraded = new_software(conf)
    with start_nn(upgraded, upgrade=True) as nn:
        nn.namesystem.mkdirs("/c")
        assert layout_upgrade.finalize_upgrade(nn.storage, nn.edit_log.journal_set, True)
    assert_finalized(jn_dirs(cluster) + dirs_of(tmp_path), upgraded, "/c")


def test_with_one_journal_node_down_upgrade_and_rollback_refuse_and_change_nothing(
    tmp_path: Path, journals: tuple[MiniJournalCluster, Configuration]
) -> None:
    cluster, conf = journals
    upgraded = new_software(conf)
    cluster.stop_journal_node(2)
    before = everything(tmp_path, but_epochs=False)
    with pytest.raises(IOException) as refused:
        start_nn(upgraded, upgrade=True)
    assert "\n" not in one_line_message(refused.value)
    assert "127.0.0.1:" in str(refused.value)
    assert everything(tmp_path, but_epochs=False) == before

    cluster.restart_journal_node(2)
    with start_nn(upgraded, upgrade=True) as nn:
        stop_cleanly(nn)
    cluster.stop_journal_node(0)
    before = everything(tmp_path, but_epochs=False)
    with pytest.raises(IOException) as refused:
        rollback_namenode(conf)
    assert "127.0.0.1:" in str(refused.value)
    assert everything(tmp_path, but_epochs=False) == before

    # Finalize: the JournalNodes first, so a missing one leaves the name dirs' previous/ too.
    cluster.restart_journal_node(0)
    with start_nn(upgraded) as nn:
        cluster.stop_journal_node(1)
        before = snapshot_files(tmp_path / "name1")
        with pytest.raises(IOException, match="Not starting doFinalize"):
            layout_upgrade.finalize_upgrade(nn.storage, nn.edit_log.journal_set, True)
        assert snapshot_files(tmp_path / "name1") == before
        cluster.restart_journal_node(1)


# ---- an HA pair: -upgrade, -bootstrapStandby, dfsadmin -upgrade query / -finalizeUpgrade ----------


def start_ha_node(conf: Configuration, nnid: str, **kwargs: object) -> NameNode:
    """NameNode ``nnid`` of ``conf``'s nameservice, started; ``conf`` learns its ports."""
    own, _, _ = resolve_ha_conf(conf, nnid)
    node = NameNode(own, terminate=lambda status, message: None, fs_owner="hdfs", **kwargs)
    node.start()
    conf.set(rpc_key(nnid), f"127.0.0.1:{node.rpc_address[1]}")
    conf.set(http_key(nnid), f"127.0.0.1:{node.http_address[1]}")
    return node


def dfsadmin(conf: Configuration, capsys: pytest.CaptureFixture[str], *args: str):
    client = conf.copy()
    client.set("fs.defaultFS", f"hdfs://{NS}")
    status = dfs_admin.run(list(args), client)
    out, err = capsys.readouterr()
    return status, out, err


@pytest.fixture
def ha_journals(tmp_path: Path) -> Iterator[tuple[MiniJournalCluster, Configuration]]:
    """Three JournalNodes and an HA pair of the old layout (stopped) that wrote /a."""
    with MiniJournalCluster(3, base_dir=tmp_path / "jn", conf=journal_node_conf()) as cluster:
        conf = ha_conf(tmp_path, cluster, "ns1")
        pair = HAPair(conf, tmp_path)
        try:
            pair["nn1"].transition_to_active()
            pair["nn1"].namesystem.mkdirs("/a")
        finally:
            pair.stop()
        yield cluster, conf


def test_ha_upgrade_bootstrap_query_and_finalize(
    tmp_path: Path,
    ha_journals: tuple[MiniJournalCluster, Configuration],
    capsys: pytest.CaptureFixture[str],
) -> None:
    cluster, conf = ha_journals
    new = new_software(conf)
    nodes = [start_ha_node(new, "nn1", upgrade=True)]
    try:
        assert nodes[0].state is HAServiceState.ACTIVE  # at once, as Hadoop's -upgrade
        own2, _, _ = resolve_ha_conf(new, "nn2")
        # -upgrade on the second NameNode is an error (Hadoop's refusal; nothing changes).
        nn2_before = snapshot_files(tmp_path / "nn2")
        with pytest.raises(IOException, match="the shared log is already being upgraded"):
            NameNode(own2, terminate=lambda status, message: None, upgrade=True).start()
        assert snapshot_files(tmp_path / "nn2") == nn2_before
        bootstrap_standby(own2, NS, "nn2", force=True, out=lambda line: None)
        nodes.append(start_ha_node(new, "nn2"))
        addr = [f"127.0.0.1:{node.rpc_address[1]}" for node in nodes]

        # nn2 keeps its own previous/ too, as Hadoop's BootstrapStandby mid-upgrade.
        assert layout_of(tmp_path / "nn2" / "name" / "previous" / "VERSION") == OLD
        assert dfsadmin(new, capsys, "-upgrade", "query") == (
            0,
            f"Upgrade not finalized for {addr[0]}\nUpgrade not finalized for {addr[1]}\n",
            "",
        )
        assert dfsadmin(new, capsys, "-finalizeUpgrade") == (
            0,
            f"Finalize upgrade successful for {addr[0]}\n"
            f"Finalize upgrade successful for {addr[1]}\n",
            "",
        )
        assert dfsadmin(new, capsys, "-upgrade", "query")[1] == (
            f"Upgrade finalized for {addr[0]}\nUpgrade finalized for {addr[1]}\n"
        )
        for d in jn_dirs(cluster) + [tmp_path / "nn1" / "name", tmp_path / "nn2" / "name"]:
            assert not (d / "previous").exists()
            assert layout_of(d / "current" / "VERSION") == NEW  # nn1, nn2 still running
        status, out, err = dfsadmin(new, capsys, "-finalizeUpgrade")
        assert (status, out) == (1, "")
        assert err == f"finalizeUpgrade: {dfs_admin.NO_UPGRADE}\n"
    finally:
        for node in nodes:
            node.stop()


def test_ha_upgrade_then_rollback_of_both_namenodes(
    tmp_path: Path, ha_journals: tuple[MiniJournalCluster, Configuration]
) -> None:
    cluster, conf = ha_journals
    new = new_software(conf)
    nodes = [start_ha_node(new, "nn1", upgrade=True)]
    try:
        nodes[0].namesystem.mkdirs("/after-upgrade")
        own2, _, _ = resolve_ha_conf(new, "nn2")
        bootstrap_standby(own2, NS, "nn2", force=True, out=lambda line: None)
        nodes.append(start_ha_node(new, "nn2"))
    finally:
        for node in nodes:
            node.stop()
    # Every NameNode stopped, the old software: nn1, then nn2 (bootstrapped mid-upgrade, it
    # kept a previous/ of its own; its rollback finds the JournalNodes rolled back already).
    for nnid in ("nn1", "nn2"):
        own, _, _ = resolve_ha_conf(conf, nnid)
        assert rollback_namenode(own).layout_version == OLD
    for d in jn_dirs(cluster) + [tmp_path / "nn1" / "name", tmp_path / "nn2" / "name"]:
        assert not (d / "previous").exists()
        assert layout_of(d / "current" / "VERSION") == OLD
    nn1 = start_ha_node(conf, "nn1")
    try:
        nn1.transition_to_active()
        assert nn1.namesystem.get_file_info("/a") is not None
        assert nn1.namesystem.get_file_info("/after-upgrade") is None
    finally:
        nn1.stop()


# ---- the command lines ------------------------------------------------------------------------


def test_namenode_command_lines(
    tmp_path: Path,
    formatted: Configuration,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert parse_startup_option(["-UPGRADE"]).command == "upgrade"
    with pytest.raises(UsageError, match="unknown option '-force'"):
        parse_startup_option(["-rollback", "-force"])

    assert run_command(parse_startup_option(["-finalize"]), formatted) == 1
    assert "'-finalize' is no longer supported" in capsys.readouterr().err

    with start_nn(new_software(formatted), upgrade=True):
        pass
    upgraded = snapshot_files(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    assert run_command(parse_startup_option(["-rollback"]), formatted) == 1
    assert capsys.readouterr().err.endswith(
        "Roll back file system state? (Y or N) Rollback aborted.\n"
    )
    assert snapshot_files(tmp_path) == upgraded

    monkeypatch.setattr("sys.stdin", io.StringIO("y\n"))
    assert run_command(parse_startup_option(["-rollback"]), formatted) == 0
    assert capsys.readouterr().out.endswith(f"to layout version {OLD} (cTime 0)\n")
    assert not (tmp_path / "name1" / "previous").exists()
