"""``namenode -bootstrapStandby`` through the CLI: nn1 formatted over a MiniJournalCluster
and active, nn2 bootstrapped from it — what lands in nn2's directories, that nn2 then
starts and tails, and each of the exit codes 2, 3, 5 and 6."""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.common.progress import format_bytes
from hadoop_qjm.common.storage import StorageDirectory
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.fs_image_format import read_stored_md5
from hadoop_qjm.namenode.ha.bootstrap_standby import (
    ERR_CODE_INVALID_VERSION,
    BootstrapStandbyException,
    bootstrap_standby,
)
from hadoop_qjm.namenode.ha.ha_util import resolve_ha_conf
from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.name_node_core import format_namenode
from hadoop_qjm.namenode.nn_storage import image_file_name
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.namenode.protocol.messages import HAServiceState, HAServiceStatus
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster

pytestmark = pytest.mark.timeout(60)

NS = "mycluster"
JID = "bootstrap"


class Setup:
    """An HA configuration for nn1 and nn2 over ``mjc``; nn1 formatted, started, active."""

    def __init__(self, base: Path, mjc: MiniJournalCluster) -> None:
        self.base = base
        self.props: dict[str, str] = {
            "dfs.nameservices": NS,
            f"dfs.ha.namenodes.{NS}": "nn1,nn2",
            "dfs.namenode.shared.edits.dir": mjc.quorum_journal_uri(JID),
            "dfs.ha.tail-edits.period": "20ms",
            "dfs.namenode.checkpoint.check.period": "1h",
        }
        for nnid in ("nn1", "nn2"):
            self.props[f"dfs.namenode.name.dir.{NS}.{nnid}"] = str(base / nnid / "name")
            self.props[f"dfs.namenode.rpc-address.{NS}.{nnid}"] = "127.0.0.1:0"
            self.props[f"dfs.namenode.http-address.{NS}.{nnid}"] = "127.0.0.1:0"
        conf1, _, _ = resolve_ha_conf(self.conf(), "nn1")
        format_namenode(conf1, fs_owner="hdfs")
        self.nn1 = NameNode(conf1, terminate=lambda s, m: None, fs_owner="hdfs")
        self.nn1.start()
        self.props[f"dfs.namenode.rpc-address.{NS}.nn1"] = f"127.0.0.1:{self.nn1.rpc_address[1]}"
        self.props[f"dfs.namenode.http-address.{NS}.nn1"] = f"127.0.0.1:{self.nn1.http_address[1]}"
        self.nn1.transition_to_active()
        self.proxy = NameNodeProxy(*self.nn1.rpc_address, timeout_s=30)
        self.nn2: NameNode | None = None

    def conf(self) -> Configuration:
        conf = Configuration()
        for key, value in self.props.items():
            conf.set(key, value)
        return conf

    def dir(self, nnid: str) -> Path:
        return self.base / nnid / "name" / "current"

    def bootstrap(self, capsys, *flags: str, **extra: str) -> tuple[int, str, str]:
        props = {**self.props, **extra}
        args = [a for k, v in props.items() for a in ("-D", f"{k}={v}")]
        status = main([*args, "namenode", "-nnid", "nn2", "-bootstrapStandby", *flags])
        out, err = capsys.readouterr()
        assert "Traceback" not in err
        return status, out, err

    def stop(self) -> None:
        self.proxy.close()
        if self.nn2 is not None:
            self.nn2.stop()
        self.nn1.stop()


@pytest.fixture
def setup(tmp_path, monkeypatch) -> Iterator[Setup]:
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    with MiniJournalCluster(3) as mjc:
        s = Setup(tmp_path, mjc)
        try:
            yield s
        finally:
            s.stop()


def version(current: Path) -> tuple[int, str, str]:
    info = StorageDirectory(current.parent, "NAME_NODE").read_storage_info()
    return info.namespace_id, info.cluster_id, info.block_pool_id


def test_bootstrap_copies_the_namespace_and_the_newest_image(setup: Setup, capsys) -> None:
    p = setup.proxy
    p.mkdirs("/in-image")
    assert p.save_namespace()
    image_txid = p.get_most_recent_checkpoint_txid()
    p.mkdirs("/after-image")  # in the open segment: the check reads in-progress edits
    cur_txid = p.get_transaction_id()
    assert cur_txid > image_txid > 0

    status, out, err = setup.bootstrap(capsys, "-nonInteractive")
    assert status == 0, err
    assert "About to bootstrap Standby ID nn2 from:" in out
    assert "Other Namenode ID: nn1" in out
    assert f"The shared edits hold transactions {image_txid + 1}-{cur_txid}" in out
    # The download's bytes and rate: the progress line's last form on stderr (not a
    # terminal: plain lines), and the report line.
    name = image_file_name(image_txid)
    size = re.escape(format_bytes((setup.dir("nn1") / name).stat().st_size))
    assert re.search(
        rf"^Downloading {name}: {size}/{size} \(100%\), \d+(\.\d+)? [KM]?B/s, in \d+s$",
        err,
        re.M,
    ), err
    assert re.search(
        rf"^Downloaded {name}: {size} in \d+s \(.*B/s\), MD5 [0-9a-f]{{32}}, ", out, re.M
    )
    nn2 = setup.dir("nn2")
    assert version(nn2) == version(setup.dir("nn1"))
    image = nn2 / image_file_name(image_txid)
    source = setup.dir("nn1") / image_file_name(image_txid)
    assert image.read_bytes() == source.read_bytes()
    assert read_stored_md5(image) == read_stored_md5(source) is not None
    assert (nn2 / "seen_txid").read_text().strip() == str(image_txid)
    assert sorted(q.name for q in nn2.iterdir()) == sorted(
        ["VERSION", "seen_txid", image.name, image.name + ".md5"]
    )
    assert not (nn2.parent / "in_use.lock").exists()

    # nn2 starts as a standby from that image and tails what came after it.
    p.roll_edits()
    conf2, _, _ = resolve_ha_conf(setup.conf(), "nn2")
    setup.nn2 = NameNode(conf2, terminate=lambda s, m: None, fs_owner="hdfs")
    setup.nn2.start()
    wait_until(
        lambda: setup.nn2.core.namesystem.dir.get_inode("/after-image") is not None,
        what="nn2 to tail /after-image",
    )


def test_exit_2_when_no_other_namenode_answers(setup: Setup, capsys) -> None:
    setup.nn1.stop()
    status, out, err = setup.bootstrap(capsys, "-nonInteractive")
    assert status == 2 and out == ""
    line = err.strip()
    assert "\n" not in line and line.startswith(
        "hdfs-py: Unable to fetch namespace information from any remote NN. Possible NameNodes: nn1"
    )
    assert not setup.dir("nn2").exists()


def test_exit_5_when_data_exists_and_formatting_is_not_confirmed(
    setup: Setup, capsys, monkeypatch
) -> None:
    assert setup.bootstrap(capsys, "-nonInteractive")[0] == 0
    marker = setup.dir("nn2") / "marker"
    marker.write_text("keep me")
    status, _, err = setup.bootstrap(capsys, "-nonInteractive")
    assert status == 5
    assert err.strip().splitlines()[-1].endswith("Not formatting.")
    assert "Running in non-interactive mode, and data appears to exist in" in err
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    status, _, err = setup.bootstrap(capsys)
    assert status == 5 and "Re-format filesystem in" in err and "Format aborted in" in err
    assert marker.exists()
    status, _, err = setup.bootstrap(capsys, "-force", "-nonInteractive")
    assert status == 0, err
    assert not marker.exists()


def test_exit_6_when_the_shared_edits_lack_the_transactions(setup: Setup, capsys) -> None:
    setup.proxy.mkdirs("/only-in-the-real-journal")
    cur_txid = setup.proxy.get_transaction_id()
    # nn2 is pointed at a journal that was never written: the txns after fsimage_0 are not
    # there (as if they had been purged).
    fresh = setup.props["dfs.namenode.shared.edits.dir"].replace(JID, "empty-journal")
    key = f"dfs.namenode.shared.edits.dir.{NS}.nn2"
    status, _, err = setup.bootstrap(capsys, "-nonInteractive", **{key: fresh})
    line = err.strip()
    assert status == 6 and "\n" not in line
    assert line.startswith(
        f"hdfs-py: Unable to read transaction ids 1-{cur_txid} from the configured shared "
        f"edits storage {fresh}. Please copy these logs into the shared edits storage or "
        "call saveNamespace on the active node. Error: "
    )
    assert not (setup.dir("nn2") / image_file_name(0)).exists()
    # -skipSharedEditsCheck goes ahead (the directories are formatted now: -force).
    status, _, err = setup.bootstrap(
        capsys, "-force", "-nonInteractive", "-skipSharedEditsCheck", **{key: fresh}
    )
    assert status == 0, err
    assert (setup.dir("nn2") / image_file_name(0)).exists()


def test_exit_3_when_the_layout_versions_differ(tmp_path) -> None:
    conf = Configuration()
    conf.set("dfs.nameservices", NS)
    conf.set(f"dfs.ha.namenodes.{NS}", "nn1,nn2")
    conf.set(f"dfs.namenode.rpc-address.{NS}.nn1", "127.0.0.1:1")
    conf.set(f"dfs.namenode.rpc-address.{NS}.nn2", "127.0.0.1:2")
    conf.set("dfs.namenode.name.dir", str(tmp_path / "name"))

    class OldNameNode:
        def version_request(self) -> NamespaceInfo:
            return NamespaceInfo(7, "CID-x", "BP-x", layout_version=-60)

        def get_most_recent_checkpoint_txid(self) -> int:
            return 0

        def get_transaction_id(self) -> int:
            return 0

        def get_service_status(self) -> HAServiceStatus:
            return HAServiceStatus(HAServiceState.ACTIVE, True, None)

        def close(self) -> None:
            pass

    with pytest.raises(BootstrapStandbyException) as raised:
        bootstrap_standby(conf, NS, "nn2", proxy_factory=lambda nn: OldNameNode(), out=print)
    assert raised.value.exit_code == ERR_CODE_INVALID_VERSION
    assert str(raised.value) == (
        "Layout version on remote node (-60) does not match this node's layout version (-67)"
    )
    assert not (tmp_path / "name").exists()


def test_bootstrap_needs_ha(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    args = ["-D", f"dfs.namenode.name.dir={tmp_path / 'name'}"]
    assert main([*args, "namenode", "-bootstrapStandby"]) == 1
    assert capsys.readouterr().err.strip() == "hdfs-py: HA is not enabled for this namenode."
    assert main([*args, "namenode", "-nnid", "nn2", "-bootstrapStandby"]) == 1
    assert "-nnid nn2 given but HA is not configured" in capsys.readouterr().err
    assert main([*args, "namenode", "-bootstrapStandby", "-bogus"]) == 2
    assert main([*args, "namenode", "-bootstrapStandby", "-nnid"]) == 2
