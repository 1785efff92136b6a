"""The HA upgrade of the layout through the JournalNodes (HDFS-5138; issue 36), over real
Thrift: QuorumJournalManager.do_pre_upgrade … do_rollback against three in-process
JournalNodes (MiniJournalCluster on 127.0.0.1, ports from the OS).

Each test starts from: a first writer wrote segments 1-3 and 4-6 (finalized on every node)
and stopped;
the JournalNodes were restarted (what they hold is on disk); the upgrading NameNode's QJM
then won epoch 2 (recover_unfinalized_segments), as Hadoop's does before doPreUpgrade.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.java_properties import load_properties
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.protocol.exceptions import QuorumException
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    lay_out_as_hadoop_upgraded,
    snapshot_files,
    write_segment,
)

pytestmark = pytest.mark.timeout(120)

LV = CURRENT_LAYOUT_VERSION
UPGRADED = StorageInfo(LV - 1, FAKE_NSINFO.namespace_id, FAKE_NSINFO.cluster_id, 1700000000000)
ME = FAKE_NSINFO.storage_info()


class Upgrade:
    """The cluster and the upgrading NameNode's QJM."""

    def __init__(self, cluster: MiniJournalCluster) -> None:
        self.cluster = cluster
        self.conf = Configuration()
        self._qjms: list[QuorumJournalManager] = []
        first = self.new_qjm()
        first.format(FAKE_NSINFO)
        first.recover_unfinalized_segments()
        write_segment(first, 1, 3, True)
        write_segment(first, 4, 3, True)
        first.loggers.wait_for_all_pending_calls()  # every node finalized both
        first.close()
        for i in range(cluster.num_journal_nodes):
            cluster.restart_journal_node(i)  # on disk, as after a cluster stop
        self.qjm = self.new_qjm()
        self.qjm.recover_unfinalized_segments()
        self.qjm.loggers.wait_for_all_pending_calls()  # recovery's last finalize landed too

    def new_qjm(self) -> QuorumJournalManager:
        qjm = QuorumJournalManager(self.conf, self.cluster.quorum_journal_uri(JID), FAKE_NSINFO)
        self._qjms.append(qjm)
        return qjm

    def dirs(self) -> list[Path]:
        return [self.cluster.journal_dir(i, JID) for i in range(self.cluster.num_journal_nodes)]

    def snapshot(self) -> list[dict[str, bytes]]:
        return [snapshot_files(d) for d in self.dirs()]

    def close(self) -> None:
        for qjm in self._qjms:
            qjm.close()


@pytest.fixture
def upgrade(tmp_path) -> Iterator[Upgrade]:
    with MiniJournalCluster(3, base_dir=tmp_path) as cluster, closing(Upgrade(cluster)) as u:
        yield u


def _layout(d: Path) -> str:
    return load_properties((d / "current" / "VERSION").read_bytes())["layoutVersion"]


def test_each_call_does_hadoops_step_on_every_journal_node(upgrade):
    qjm = upgrade.qjm
    assert qjm.get_journal_ctime() == 0
    assert qjm.can_roll_back(ME, ME, LV) is False
    qjm.do_pre_upgrade()
    for d in upgrade.dirs():
        assert (d / "previous.tmp" / "VERSION").exists()
        names = sorted(p.name for p in (d / "current").iterdir())
        # Every edits file is linked into the new current, its kept .md5 too (Hadoop's
        # doPreUpgrade links each file whose name starts with "edits").
        assert [n for n in names if not n.endswith(".md5")] == [
            "edits_0000000000000000001-0000000000000000003",
            "edits_0000000000000000004-0000000000000000006",
        ]
        assert all(n.removesuffix(".md5") in names for n in names)
    qjm.do_upgrade(UPGRADED)
    for d in upgrade.dirs():
        assert not (d / "previous.tmp").exists()
        assert _layout(d) == str(LV - 1)
        assert load_properties((d / "previous" / "VERSION").read_bytes())["layoutVersion"] == str(
            LV
        )
        assert (d / "current" / "last-promised-epoch").read_text() == "2\n"
    assert qjm.get_journal_ctime() == UPGRADED.ctime
    assert qjm.can_roll_back(UPGRADED, ME, LV) is True


def test_upgrade_then_rollback_leaves_every_journal_node_as_it_was_but_the_promise(upgrade):
    before = upgrade.snapshot()
    upgrade.qjm.do_pre_upgrade()
    upgrade.qjm.do_upgrade(UPGRADED)
    upgrade.qjm.close()
    writer = upgrade.new_qjm()  # the upgraded NameNode writes
    writer.recover_unfinalized_segments()
    write_segment(writer, 7, 2, True)
    # Every node promised epoch 3 and took the segment: close() returns on a majority and
    # drops what the third node still has queued (a CI run saw its promise still 2).
    writer.loggers.wait_for_all_pending_calls()
    writer.close()
    rollback = upgrade.new_qjm()  # the NameNode of the old layout, rolling back
    assert rollback.can_roll_back(UPGRADED, ME, LV)
    rollback.do_rollback()
    for was, now in zip(before, upgrade.snapshot(), strict=True):
        assert now.pop("current/last-promised-epoch") == b"3\n"  # grown, never lowered
        assert was.pop("current/last-promised-epoch") == b"2\n"
        assert now == was
    assert rollback.get_journal_ctime() == 0


def test_upgrade_then_finalize_leaves_no_previous_and_the_new_layout(upgrade):
    upgrade.qjm.do_pre_upgrade()
    upgrade.qjm.do_upgrade(UPGRADED)
    upgrade.qjm.do_finalize()
    for d in upgrade.dirs():
        assert sorted(p.name for p in d.iterdir()) == ["current", "in_use.lock"]
        assert _layout(d) == str(LV - 1)
    assert upgrade.qjm.can_roll_back(UPGRADED, ME, LV) is False


def _refused(call, node: str) -> str:
    with pytest.raises(QuorumException) as e:
        call()
    message = str(e.value)
    assert "\n" not in message
    assert node in message
    return message


def test_with_one_journal_node_down_each_call_refuses_in_one_line_and_changes_nothing(upgrade):
    cluster = upgrade.cluster
    down = f"127.0.0.1:{cluster.rpc_ports[2]}"
    cluster.stop_journal_node(2)
    qjm = upgrade.qjm
    before = upgrade.snapshot()[:2]
    for call in (
        qjm.do_pre_upgrade,
        lambda: qjm.do_upgrade(UPGRADED),
        qjm.do_finalize,
        qjm.do_rollback,
        lambda: qjm.discard_segments(4),
    ):
        message = _refused(call, down)
        assert message.endswith("nothing was changed on any JournalNode"), message
    assert re.search(
        "Could not check if roll back possible.*" + re.escape(down),
        _refused(lambda: qjm.can_roll_back(ME, ME, LV), down),
    )
    _refused(qjm.get_journal_ctime, down)
    assert upgrade.snapshot()[:2] == before


def test_rollback_with_one_journal_node_down_changes_nothing(upgrade):
    upgrade.qjm.do_pre_upgrade()
    upgrade.qjm.do_upgrade(UPGRADED)
    cluster = upgrade.cluster
    down = f"127.0.0.1:{cluster.rpc_ports[0]}"
    cluster.stop_journal_node(0)
    before = upgrade.snapshot()[1:]
    _refused(upgrade.qjm.do_rollback, down)
    _refused(upgrade.qjm.do_finalize, down)
    assert upgrade.snapshot()[1:] == before
    cluster.restart_journal_node(0)
    qjm = upgrade.new_qjm()
    qjm.do_rollback()  # with every node back, it goes through
    assert all(_layout(d) == str(LV) for d in upgrade.dirs())


def test_pre_upgrade_refuses_while_a_node_holds_an_unfinalized_upgrade(upgrade):
    upgrade.qjm.do_pre_upgrade()
    upgrade.qjm.do_upgrade(UPGRADED)
    before = upgrade.snapshot()
    message = _refused(upgrade.qjm.do_pre_upgrade, f"127.0.0.1:{upgrade.cluster.rpc_ports[1]}")
    assert "still hold the previous upgrade" in message
    assert upgrade.snapshot() == before


def test_journal_nodes_started_on_hadoops_mid_upgrade_directories(upgrade):
    """Issue 36: directories Hadoop's JournalNodes left mid-upgrade: previous/ beside the
    upgraded current/ on nodes 0 and 1, and on node 2 a crash after VERSION was written but
    before previous.tmp/ was renamed (COMPLETE_UPGRADE). Each node starts on it, reads it,
    and the journal rolls back."""
    cluster = upgrade.cluster
    upgrade.qjm.close()
    before = upgrade.snapshot()
    for i, d in enumerate(upgrade.dirs()):
        cluster.stop_journal_node(i)
        lay_out_as_hadoop_upgraded(d, UPGRADED.layout_version, UPGRADED.ctime)
    crashed = upgrade.dirs()[2]
    (crashed / "previous").rename(crashed / "previous.tmp")
    for i in range(cluster.num_journal_nodes):
        cluster.restart_journal_node(i)
    qjm = upgrade.new_qjm()
    assert qjm.get_journal_ctime() == UPGRADED.ctime  # each node opens its journal here
    assert (crashed / "previous").is_dir() and not (crashed / "previous.tmp").exists()
    assert qjm.can_roll_back(UPGRADED, ME, LV) is True
    qjm.do_rollback()
    for was, now in zip(before, upgrade.snapshot(), strict=True):
        assert now == was
