"""DFSZKFailoverController's targets: which address each NameNode's controller is reached at."""

from __future__ import annotations

import io
from types import SimpleNamespace

import pytest

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.ha.election_rules import ActiveNodeInfo
from hadoop_qjm.namenode.ha.dfs_zk_failover_controller import (
    _targets,
    data_to_target,
    format_zk,
)

pytestmark = pytest.mark.timeout(60)


def conf(**extra: object) -> Configuration:
    c = Configuration(load_defaults=True)
    c.set("dfs.nameservices", "ns")
    c.set("dfs.ha.namenodes.ns", "nn1,nn2")
    c.set("dfs.namenode.rpc-address.ns.nn1", "h1:8020")
    c.set("dfs.namenode.rpc-address.ns.nn2", "0.0.0.0:8021")
    for key, value in extra.items():
        c.set(key, value)
    return c


def test_each_namenode_has_its_own_zkfc_port_and_a_dialable_host() -> None:
    targets = {t.nnid: t for t in _targets(conf(**{"dfs.ha.zkfc.port.ns.nn1": 9001}), "ns")}
    assert targets["nn1"].zkfc_address == ("h1", 9001)
    # nn1's own port is not nn2's; a wildcard RPC host is dialed as this machine.
    assert targets["nn2"].zkfc_address == ("127.0.0.1", 8019)


def test_the_zkfc_port_of_the_active_comes_from_zookeeper() -> None:
    targets = _targets(conf(), "ns")
    info = ActiveNodeInfo("ns", "nn1", "h1", 8020, 9100)
    assert data_to_target(targets, info.to_bytes()).zkfc_address == ("h1", 9100)


@pytest.mark.parametrize(
    ("info", "words"),
    [
        (ActiveNodeInfo("ns", "nn1", "h9", 8020, 8019), "Mismatched address"),
        (ActiveNodeInfo("ns", "nn7", "h1", 8020, 8019), "not a NameNode of this nameservice"),
        (ActiveNodeInfo("other", "nn1", "h1", 8020, 8019), "not a NameNode of this nameservice"),
    ],
)
def test_data_naming_no_configured_namenode_is_refused(info: ActiveNodeInfo, words: str) -> None:
    with pytest.raises(IOException, match=words):
        data_to_target(_targets(conf(), "ns"), info.to_bytes())


def test_garbage_in_zookeeper_is_refused() -> None:
    with pytest.raises(IOException, match="Unreadable data in ZooKeeper"):
        data_to_target(_targets(conf(), "ns"), b"\xff\xff")


class FakeElector:
    """ActiveStandbyElector's parent-znode calls, on a set of znode paths."""

    def __init__(self, parent: str, exists: bool) -> None:
        self.parent = parent
        self.znodes = {parent, f"{parent}/ActiveBreadCrumb"} if exists else set()

    def parent_znode_exists(self) -> bool:
        return self.parent in self.znodes

    def clear_parent_znode(self) -> None:
        self.znodes = {z for z in self.znodes if not z.startswith(self.parent)}

    def ensure_parent_znode(self) -> None:
        self.znodes.add(self.parent)


@pytest.mark.parametrize(
    ("exists", "said"),
    [
        (False, ["Successfully created /hadoop-ha/ns in ZK."]),
        (
            True,
            [
                "Successfully deleted /hadoop-ha/ns from ZK.",
                "Successfully created /hadoop-ha/ns in ZK.",
            ],
        ),
    ],
    ids=["new", "forced"],
)
def test_format_zk_says_what_it_deleted_and_created(exists: bool, said: list[str], capsys) -> None:
    elector = FakeElector("/hadoop-ha/ns", exists)
    err = io.StringIO()
    controller = SimpleNamespace(elector=elector)
    status = format_zk(controller, force=True, interactive=False, stderr=err)  # type: ignore[arg-type]
    assert (status, capsys.readouterr().out.splitlines(), err.getvalue()) == (0, said, "")
    assert elector.znodes == {"/hadoop-ha/ns"}
