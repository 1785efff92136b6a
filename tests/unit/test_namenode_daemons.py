"""Which NameNodes and ZKFCs start-dfs starts on this machine, and the names hadoop-daemon
and start-dfs give their pid files: one rule for both (issue 33 item 8). No daemon runs:
the machine's addresses are a parameter."""

from __future__ import annotations

import pytest

from hadoop_qjm.conf import Configuration
from hadoop_qjm.tools.namenode_daemons import daemon_ident, ident_for, nnid_argument
from hadoop_qjm.tools.start_dfs import DfsStep, other_hosts_namenodes, plan_dfs

pytestmark = pytest.mark.timeout(30)

NN_HOSTS = {"nn1": "127.0.0.1", "nn2": "127.0.0.2"}


def cluster_conf(**props: str) -> Configuration:
    """Two NameNodes, three JournalNodes, automatic failover: the three-host template."""
    conf = Configuration()
    conf.set("dfs.nameservices", "mycluster")
    conf.set("dfs.ha.namenodes.mycluster", "nn1,nn2")
    for nnid, host in NN_HOSTS.items():
        conf.set(f"dfs.namenode.rpc-address.mycluster.{nnid}", f"{host}:8020")
    conf.set(
        "dfs.namenode.shared.edits.dir",
        "qjournal://127.0.0.1:8485;127.0.0.2:8485;127.0.0.3:8485/mycluster",
    )
    conf.set("dfs.ha.automatic-failover.enabled", "true")
    for key, value in props.items():
        conf.set(key, value)
    return conf


def on(*hosts: str):
    return lambda host: host in hosts


ALL_HERE = on("127.0.0.1", "127.0.0.2", "127.0.0.3")


def daemons(steps: list[DfsStep]) -> list[tuple[str, str | None, str, bool]]:
    return [(s.kind, s.nnid, s.ident, s.local) for s in steps if s.kind != "journalnodes"]


def test_one_configuration_for_a_machine_standing_in_for_every_host_starts_both():
    steps = plan_dfs(cluster_conf(), "ops", ALL_HERE)
    assert daemons(steps) == [
        ("namenode", "nn1", "ops-nn1", True),
        ("namenode", "nn2", "ops-nn2", True),
        ("zkfc", "nn1", "ops-nn1", True),
        ("zkfc", "nn2", "ops-nn2", True),
    ]
    assert other_hosts_namenodes(cluster_conf(), ALL_HERE) == []


def test_a_per_host_configuration_starts_only_its_own_namenode_and_zkfc():
    """Before: host1's directory started nn2 too, with host1's directories (Cannot lock
    storage), and a ZKFC for it."""
    conf = cluster_conf(**{"dfs.ha.namenode.id": "nn1"})
    assert daemons(plan_dfs(conf, "ops", ALL_HERE)) == [
        ("namenode", "nn1", "ops-nn1", True),
        ("zkfc", "nn1", "ops-nn1", True),
    ]
    assert other_hosts_namenodes(conf, ALL_HERE) == ["nn2"]


def test_one_namenode_per_host_keeps_hadoops_name_and_the_other_is_reached_by_ssh():
    conf = cluster_conf(**{"dfs.ha.namenode.id": "nn1"})
    assert daemons(plan_dfs(conf, "ops", on("127.0.0.1"))) == [
        ("namenode", "nn1", "ops", True),
        ("namenode", "nn2", "ops", False),
        ("zkfc", "nn1", "ops", True),
        ("zkfc", "nn2", "ops", False),
    ]
    # Over ssh (HADOOP_SSH_LOCAL=true) the far side names its daemons itself, by this rule.
    assert {s.ident for s in plan_dfs(cluster_conf(), "ops", ALL_HERE, ssh_local=True)} == {"ops"}


@pytest.mark.parametrize(
    "props,action,args,expected",
    [
        ({"dfs.ha.namenode.id": "nn1"}, "start", [], "ops-nn1"),
        ({"dfs.ha.namenode.id": "nn1"}, "stop", [], "ops-nn1"),
        ({}, "start", ["-nnid", "nn2"], "ops-nn2"),
        ({}, "stop", ["-nnid", "nn2"], "ops-nn2"),
        ({"dfs.ha.namenode.id": "nn1"}, "status", ["-nnid", "nn2"], "ops-nn2"),
    ],
)
def test_hadoop_daemon_names_a_daemon_as_start_dfs_does(props, action, args, expected):
    """Before: hadoop-daemon wrote hadoop-ops-zkfc.pid, stop-dfs looked for
    hadoop-ops-nn1-zkfc.pid, said "no zkfc to stop" and exited 0 while it ran."""
    conf = cluster_conf(**props)
    assert ident_for(conf, "ops", action, args, ALL_HERE) == expected
    nnid = nnid_argument(args) or props.get("dfs.ha.namenode.id")
    planned = {s.nnid: s.ident for s in plan_dfs(conf, "ops", ALL_HERE) if s.kind == "zkfc"}
    if nnid in planned:
        assert planned[nnid] == expected


def test_a_single_namenode_host_and_no_ha_keep_the_plain_ident():
    conf = cluster_conf(**{"dfs.ha.namenode.id": "nn1"})
    assert ident_for(conf, "ops", "stop", [], on("127.0.0.1")) == "ops"
    assert ident_for(Configuration(), "ops", "stop", [], ALL_HERE) == "ops"
    assert daemon_ident("ops", None, ["nn1", "nn2"]) == "ops"
