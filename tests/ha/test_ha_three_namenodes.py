"""Three NameNodes of one nameservice (issue 37 item 1, HDFS-6440): ``dfs.ha.namenodes`` =
``nn1,nn2,nn3`` over one shared journal. bootstrapStandby takes the active wherever it
is, haadmin fails over between any two and lists all three, and a nameservice of more
than five says so in the NameNode's log.

::

    nn1 standby ──┐                         nn1 active ──failover──▶ nn1 standby
    nn2 ACTIVE ───┼── 3 JournalNodes        nn2 standby              nn2 standby
    nn3 (new) ◀── bootstrapStandby from nn2 nn3 standby              nn3 ACTIVE
"""

from __future__ import annotations

import logging
import shutil

import pytest

from hadoop_qjm.namenode.ha.bootstrap_standby import bootstrap_standby
from hadoop_qjm.namenode.ha.failover_proxy import namenode_proxy_from_conf
from hadoop_qjm.namenode.ha.ha_util import resolve_ha_conf
from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.protocol.messages import HAServiceState
from hadoop_qjm.testing.in_process_ha import NS, HAPair, ha_conf, wait_until
from hadoop_qjm.tools import ha_admin
from tests.ha.test_ha_pair import ha_peers

pytestmark = pytest.mark.timeout(90)

THREE = ("nn1", "nn2", "nn3")
ACTIVE, STANDBY = HAServiceState.ACTIVE, HAServiceState.STANDBY


def three(mjc, tmp_path, jid: str, *, start=None, **extra) -> HAPair:
    return HAPair(ha_conf(tmp_path, mjc, jid, nnids=THREE, **extra), tmp_path, start=start)


def haadmin(pair: HAPair, capsys, *args: str) -> tuple[int, str, str]:
    status = ha_admin.run(list(args), pair.client_conf())
    out, err = capsys.readouterr()
    return status, out, err


def test_bootstrap_standby_takes_the_active_when_it_is_nn2(mjc, tmp_path) -> None:
    """nn1 (standby) answers first in dfs.ha.namenodes order; nn3 still bootstraps from
    nn2, the active, whose image the standbys' checkpoints go to."""
    nodes = three(mjc, tmp_path, "boot3", start=("nn1", "nn2"))
    try:
        nodes["nn2"].transition_to_active()
        with nodes.proxy("nn2") as active:
            active.mkdirs("/before-image")
            assert active.save_namespace()
            active.mkdirs("/after-image")
        shutil.rmtree(tmp_path / "nn3")  # a new host: nothing of nn3's yet
        conf3, _, _ = resolve_ha_conf(nodes.conf, "nn3")
        lines: list[str] = []
        result = bootstrap_standby(conf3, NS, "nn3", out=lines.append)
        assert result.source_nnid == "nn2", lines
        assert "        Other Namenode ID: nn2" in lines
        assert result.image_txid == nodes["nn2"].core.fs_image.most_recent_checkpoint_txid
        node = nodes.start("nn3")
        assert node.state is STANDBY
        wait_until(
            lambda: node.core.namesystem.dir.get_inode("/after-image") is not None,
            what="nn3 to tail /after-image",
        )
    finally:
        nodes.stop()


def test_failover_from_nn1_to_nn3_and_all_three_states(mjc, tmp_path, capsys) -> None:
    nodes = three(mjc, tmp_path, "failover3")
    try:
        assert haadmin(nodes, capsys, "-transitionToActive", "nn1")[0] == 0
        status, out, err = haadmin(nodes, capsys, "-transitionToActive", "nn3")
        assert (status, out) == (1, "") and err.strip() == (
            "transitionToActive: Node nn1 is already active"
        )
        with namenode_proxy_from_conf(nodes.client_conf(), timeout_s=30) as client:
            assert client.mkdirs("/on-nn1")
            status, out, err = haadmin(nodes, capsys, "-failover", "nn1", "nn3")
            assert (status, out) == (0, "Failover from nn1 to nn3 successful\n"), err
            assert [nodes[n].state for n in THREE] == [STANDBY, STANDBY, ACTIVE]
            # The failover client finds nn3 (past the standby nn2) and nn3 has nn1's edits.
            assert client.mkdirs("/on-nn3")
            assert client.current.nnid == "nn3"
            assert client.get_file_info("/on-nn1") is not None
        status, out, _ = haadmin(nodes, capsys, "-getAllServiceState")
        rows = out.splitlines()
        assert status == 0 and len(rows) == 3, out
        for nnid, row, state in zip(THREE, rows, ("standby", "standby", "active")):
            address = f"127.0.0.1:{nodes[nnid].rpc_address[1]}"
            assert row == f"{address:<50} {state}"
        # nn3's /jmx (and status page) knows both others and their states.
        wait_until(
            lambda: ha_peers(nodes["nn3"]) == {"nn1": "standby", "nn2": "standby"},
            what="nn3's HAPeers",
        )
        assert ha_peers(nodes["nn1"]).keys() == {"nn2", "nn3"}
        for nnid in ("nn1", "nn2"):  # both standbys tail what nn3 writes
            wait_until(
                lambda n=nnid: nodes[n].core.namesystem.dir.get_inode("/on-nn3") is not None,
                what=f"{nnid} to tail /on-nn3",
            )
    finally:
        nodes.stop()


def test_more_than_five_namenodes_is_a_warning_in_the_log(mjc, tmp_path, caplog) -> None:
    """Six work, but Hadoop suggests at most five (three recommended): one WARN line."""
    six = tuple(f"nn{i}" for i in range(1, 7))
    conf, _, _ = resolve_ha_conf(ha_conf(tmp_path, mjc, "six", nnids=six), "nn4")
    caplog.set_level(logging.WARNING, logger="hadoop_qjm.namenode.name_node")
    NameNode(conf, terminate=lambda status, message: None, fs_owner="hdfs")
    lines = [r.getMessage() for r in caplog.records if "NameNodes" in r.getMessage()]
    assert lines == [
        f"dfs.ha.namenodes.{NS} lists 6 NameNodes (nn1, nn2, nn3, nn4, nn5, nn6): it is "
        "suggested not to exceed 5 - with a recommended 3 NameNodes - due to communication "
        "overheads"
    ]
    caplog.clear()
    conf, _, _ = resolve_ha_conf(ha_conf(tmp_path, mjc, "five", nnids=six[:5]), "nn1")
    NameNode(conf, terminate=lambda status, message: None, fs_owner="hdfs")
    assert not [r for r in caplog.records if "NameNodes" in r.getMessage()]


def test_a_standby_checkpoint_goes_to_every_other_namenode(mjc, tmp_path) -> None:
    """nn1 and nn3 standby, nn2 active (HDFS-12979): nn1's checkpoint is sent to nn2, which
    stores it, and to nn3, which refuses it (417: a standby); nn1 records both answers, so
    it keeps sending to nn2 and leaves nn3 alone once it ever took one and then refused."""
    nodes = three(mjc, tmp_path, "ckpt3", **{"dfs.namenode.checkpoint.txns": "5"})
    try:
        nodes["nn2"].transition_to_active()
        with nodes.proxy("nn2") as active:
            for i in range(8):
                active.mkdirs(f"/d{i}")
        checkpointer = nodes["nn1"].checkpointer
        wait_until(lambda: checkpointer.uploads >= 1, what="nn1's checkpoint upload")
        entries = checkpointer.receivers.entries
        wait_until(lambda: not entries["nn3"].is_primary, what="nn3's refusal recorded")
        assert entries["nn2"].is_primary and entries["nn2"].last_upload is not None
        assert entries["nn3"].last_upload is None
        # The active holds a standby's image past the first 5 txns (it saves none itself).
        assert nodes["nn2"].core.fs_image.most_recent_checkpoint_txid >= 5
    finally:
        nodes.stop()
