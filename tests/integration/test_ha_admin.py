"""``hdfs-py haadmin`` and ``dfsadmin`` through the CLI, against NameNode RPC servers on
loopback whose HAServiceProtocol is a hand-written fake (every state and refusal on
demand), and once against a real in-process HA pair, with the failover client on top."""

from __future__ import annotations

import getpass
import socket
from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.ha.failover_proxy import FailoverNameNodeProxy, namenode_proxy_from_conf
from hadoop_qjm.namenode.name_node_callers import NameNodeCallers
from hadoop_qjm.namenode.name_node_rpc_server import NameNodeRpcServer
from hadoop_qjm.namenode.protocol.exceptions import (
    HealthCheckFailedException,
    ServiceFailedException,
    StandbyException,
)
from hadoop_qjm.namenode.protocol.messages import HAServiceState, HAServiceStatus
from hadoop_qjm.qjournal.protocol.exceptions import JournalNodesBehindException
from hadoop_qjm.testing.in_process_ha import HAPair, ha_conf, journal_node_conf
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster

pytestmark = pytest.mark.timeout(60)

NS = "mycluster"
ADMIN_CONF = Configuration(load_defaults=False)
ADMIN_CONF.set("hadoop.user.group.static.mapping.overrides", "ops=supergroup;dr.who=;")
ACTIVE, STANDBY = HAServiceState.ACTIVE, HAServiceState.STANDBY


class FakeHANameNode:
    """HAServiceProtocol of a NameNode, as the RPC server's handlers call it."""

    def __init__(self, state: HAServiceState) -> None:
        self.metrics = SimpleNamespace(observe_rpc=lambda name, ok: None)
        # Who calls (the real one): this OS user and "ops" (via the static mapping) are
        # superusers, HADOOP_USER_NAME=alice is a tenant.
        self.callers = NameNodeCallers(ADMIN_CONF)
        self.state = state
        self.healthy = True
        self.ready = True
        self.refuse_active = False
        self.refuse_standby = False
        self.transitions: list[str] = []
        self.saves: list[tuple[int, int]] = []
        self.rolls = 0
        self.switches: list[str] = []
        self.behind = 0  # reconfigureSharedEdits refusals before it succeeds

    def monitor_health(self) -> None:
        if not self.healthy:
            raise HealthCheckFailedException("The edit log tailer is not running")

    def transition_to_active(self, source: int) -> None:
        if self.refuse_active:
            raise ServiceFailedException("Failed to become active: injected")
        self.transitions.append("active")
        self.state = ACTIVE

    def transition_to_standby(self, source: int) -> None:
        if self.refuse_standby:
            raise ServiceFailedException("Failed to become standby: injected")
        self.transitions.append("standby")
        self.state = STANDBY

    def service_status(self) -> HAServiceStatus:
        return HAServiceStatus(self.state, self.ready, None if self.ready else "still loading")

    # ClientProtocol's dfsadmin calls: a standby saves an image too, but does not roll.
    def save_namespace(self, time_window_s: int, tx_gap: int) -> bool:
        self.saves.append((time_window_s, tx_gap))
        return True

    def roll_edit_log(self) -> SimpleNamespace:
        if self.state is not ACTIVE:
            raise StandbyException("Operation category JOURNAL is not supported in state standby")
        self.rolls += 1
        return SimpleNamespace(cur_segment_txid=100 + self.rolls)

    def reconfigure_shared_edits(self, uri: str) -> str:
        self.switches.append(uri)
        if self.behind > 0:
            self.behind -= 1
            raise JournalNodesBehindException(
                "journal ha stays on a:1;b:1;c:1 + a:1;b:1;c:1;d:1;e:1: fewer than 3 "
                "JournalNodes of the new set hold the finalized segments [(57, 248)] (wait for "
                "their syncers, or run journalnode -bootstrap on them)"
            )
        return "a:1;b:1;c:1;d:1;e:1"


class Cluster:
    """nn1 (active) and nn2 (standby) served on loopback, and nn3 whose port refuses."""

    def __init__(self) -> None:
        self.nodes = {"nn1": FakeHANameNode(ACTIVE), "nn2": FakeHANameNode(STANDBY)}
        self.servers = {}
        for nnid, node in self.nodes.items():
            server = NameNodeRpcServer(node, "127.0.0.1", 0, handler_count=2)
            server.start()
            self.servers[nnid] = server
        # Bound but not listening: a connection to it is refused, for as long as we hold it.
        self.dead = socket.socket()
        self.dead.bind(("127.0.0.1", 0))
        self.ports = {nnid: s.port for nnid, s in self.servers.items()}
        self.ports["nn3"] = self.dead.getsockname()[1]

    def props(self, nnids: str = "nn1,nn2") -> list[str]:
        props = {"dfs.nameservices": NS, f"dfs.ha.namenodes.{NS}": nnids}
        for nnid, port in self.ports.items():
            props[f"dfs.namenode.rpc-address.{NS}.{nnid}"] = f"127.0.0.1:{port}"
        props["ha.failover-controller.cli-check.rpc-timeout.ms"] = "5000"
        return [arg for key, value in props.items() for arg in ("-D", f"{key}={value}")]

    def stop(self) -> None:
        for server in self.servers.values():
            server.stop()
        self.dead.close()


@pytest.fixture
def cluster(monkeypatch) -> Iterator[Cluster]:
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    c = Cluster()
    try:
        yield c
    finally:
        c.stop()


def haadmin(cluster: Cluster, capsys, *args: str, nnids: str = "nn1,nn2", conf=()):
    status = main([*cluster.props(nnids), *conf, "haadmin", *args])
    out, err = capsys.readouterr()
    return status, out, err


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_get_service_state_and_all_service_state(cluster, capsys) -> None:
    assert haadmin(cluster, capsys, "-getServiceState", "nn1") == (0, "active\n", "")
    assert haadmin(cluster, capsys, "-ns", NS, "-getServiceState", "nn2") == (0, "standby\n", "")
    status, out, _ = haadmin(cluster, capsys, "-getAllServiceState", nnids="nn1,nn2,nn3")
    lines = out.splitlines()
    assert status == 0 and len(lines) == 3
    p = cluster.ports
    assert lines[0] == f"{'127.0.0.1:' + str(p['nn1']):<50} active"
    assert lines[1] == f"{'127.0.0.1:' + str(p['nn2']):<50} standby"
    assert lines[2].startswith(f"{'127.0.0.1:' + str(p['nn3']):<50} Failed to connect: ")


def test_unknown_ids_and_usage_errors(cluster, capsys) -> None:
    status, out, err = haadmin(cluster, capsys, "-getServiceState", "nn9")
    assert (status, out) == (1, "")
    assert (
        one_line(err) == "Illegal argument: Unable to determine service address for namenode 'nn9'"
    )
    for args in (
        ["-getServiceState"],
        ["-transitionToActive", "nn1", "nn2"],
        ["-failover", "nn1"],
        ["-failover", "--forcewhat", "nn1", "nn2"],
        ["-getAllServiceState", "nn1"],
        ["-bogus"],
        ["getServiceState", "nn1"],
    ):
        status, _, err = haadmin(cluster, capsys, *args)
        assert status == 2 and one_line(err).startswith("hdfs-py: "), (args, err)
    status, out, _ = haadmin(cluster, capsys, "-help", "failover")
    assert status == 0 and out.startswith("-failover [[--forcefence] [--forceactive]")


@pytest.mark.parametrize(
    ("uri", "complaint"),
    [
        ("qjournal://127.0.0.1:70000/mycluster", "Bad port '70000'"),
        ("qjournal://[::1/mycluster", "Bad IPv6 address '[::1'"),
        ("qjournal://a;;b/mycluster", "Empty JournalNode address"),
    ],
)
def test_a_bad_new_shared_edits_uri_is_refused_before_any_namenode_is_asked(
    cluster, capsys, uri: str, complaint: str
) -> None:
    # It was sent to the active NameNode (or reported as "No active NameNode").
    status, out, err = haadmin(cluster, capsys, "-reconfigureSharedEdits", uri)
    assert (status, out) == (2, "") and complaint in one_line(err)
    assert all(node.switches == [] for node in cluster.nodes.values())


def test_transition_to_active_refuses_while_another_is_active(cluster, capsys) -> None:
    nn1, nn2 = cluster.nodes["nn1"], cluster.nodes["nn2"]
    status, _, err = haadmin(cluster, capsys, "-transitionToActive", "nn2")
    assert status == 1 and one_line(err) == "transitionToActive: Node nn1 is already active"
    assert nn2.state is STANDBY and nn2.transitions == []
    # The other one cannot be asked: refused too, unless --forceactive.
    status, _, err = haadmin(cluster, capsys, "-transitionToActive", "nn2", nnids="nn2,nn3")
    assert status == 1 and "Unable to determine the state of nn3" in one_line(err)
    assert "--forceactive" in err and nn2.state is STANDBY
    assert haadmin(cluster, capsys, "-transitionToActive", "--forceactive", "nn2")[0] == 0
    assert nn2.state is ACTIVE
    # Standby, then active again once nobody else is.
    assert haadmin(cluster, capsys, "-transitionToStandby", "nn1") == (0, "", "")
    assert nn1.state is STANDBY
    assert haadmin(cluster, capsys, "-transitionToStandby", "nn2")[0] == 0
    assert haadmin(cluster, capsys, "-transitionToActive", "nn1") == (0, "", "")
    assert nn1.state is ACTIVE
    # A refusal by the NameNode itself is one line.
    nn2.refuse_active = True
    status, _, err = haadmin(cluster, capsys, "-transitionToActive", "--forceactive", "nn2")
    assert status == 1
    assert one_line(err) == "Operation failed: Failed to become active: injected"


def test_check_health(cluster, capsys) -> None:
    assert haadmin(cluster, capsys, "-checkHealth", "nn1") == (0, "", "")
    cluster.nodes["nn1"].healthy = False
    status, _, err = haadmin(cluster, capsys, "-checkHealth", "nn1")
    assert status == 1
    assert one_line(err) == "Health check failed: The edit log tailer is not running"
    status, _, err = haadmin(cluster, capsys, "-checkHealth", "nn3", nnids="nn1,nn3")
    assert status == 1 and one_line(err).startswith("Operation failed: Call to 127.0.0.1:")


def test_failover_swaps_the_states(cluster, capsys) -> None:
    nn1, nn2 = cluster.nodes["nn1"], cluster.nodes["nn2"]
    status, out, err = haadmin(cluster, capsys, "-failover", "nn1", "nn2")
    assert (status, out, err) == (0, "Failover from nn1 to nn2 successful\n", "")
    assert (nn1.state, nn2.state) == (STANDBY, ACTIVE)
    assert nn1.transitions == ["standby"] and nn2.transitions == ["active"]
    # Back, and to an active one or to itself: refused before anything changes.
    assert haadmin(cluster, capsys, "-failover", "nn2", "nn1")[0] == 0
    status, _, err = haadmin(cluster, capsys, "-failover", "nn2", "nn1")
    assert status == 1 and one_line(err) == "Failover failed: Can't failover to an active service"
    status, _, err = haadmin(cluster, capsys, "-failover", "nn1", "nn1")
    assert one_line(err) == "Failover failed: Can't failover a service to itself"
    assert (nn1.state, nn2.state) == (ACTIVE, STANDBY)


def test_failover_checks_readiness_and_health_of_the_target(cluster, capsys) -> None:
    nn1, nn2 = cluster.nodes["nn1"], cluster.nodes["nn2"]
    nn2.ready = False
    status, _, err = haadmin(cluster, capsys, "-failover", "nn1", "nn2")
    assert status == 1 and "is not ready to become active: still loading" in one_line(err)
    nn2.healthy = False
    status, _, err = haadmin(cluster, capsys, "-failover", "--forceactive", "nn1", "nn2")
    assert status == 1 and "Can't failover to an unhealthy service" in err.splitlines()[-1]
    assert (nn1.state, nn2.state) == (ACTIVE, STANDBY)
    nn2.healthy = True
    status, out, err = haadmin(cluster, capsys, "-failover", "--forceactive", "nn1", "nn2")
    assert status == 0 and "forcing it" in err and out.endswith("successful\n")
    assert (nn1.state, nn2.state) == (STANDBY, ACTIVE)


def test_failover_from_an_unreachable_namenode_needs_forcefence(cluster, capsys) -> None:
    nn2 = cluster.nodes["nn2"]
    status, _, err = haadmin(cluster, capsys, "-failover", "nn3", "nn2", nnids="nn2,nn3")
    line = one_line(err)
    assert status == 1 and line.startswith("Failover failed: Unable to make NameNode nn3 at")
    assert "its new epoch on the JournalNodes fences nn3" in line and "--forcefence" in line
    assert nn2.state is STANDBY
    status, out, err = haadmin(
        cluster, capsys, "-failover", "--forcefence", "nn3", "nn2", nnids="nn2,nn3"
    )
    assert status == 0 and out == "Failover from nn3 to nn2 successful\n"
    assert "going ahead (--forcefence)" in one_line(err)
    assert nn2.state is ACTIVE


def test_failover_fails_back_when_the_target_refuses(cluster, capsys) -> None:
    nn1, nn2 = cluster.nodes["nn1"], cluster.nodes["nn2"]
    nn2.refuse_active = True
    status, out, err = haadmin(cluster, capsys, "-failover", "nn1", "nn2")
    line = one_line(err)
    assert (status, out) == (1, "")
    assert line.startswith("Failover failed: Unable to failover to NameNode nn2 at")
    assert "Failed to become active: injected" in line and "Failed back to NameNode nn1" in line
    assert (nn1.state, nn2.state) == (ACTIVE, STANDBY)
    assert nn1.transitions == ["standby", "active"]


# ---- dfsadmin on every NameNode, or on the active only ------------------------------------------
def dfsadmin(cluster: Cluster, capsys, *args: str, nnids: str = "nn1,nn2"):
    props = [*cluster.props(nnids), "-D", f"fs.defaultFS=hdfs://{NS}"]
    status = main([*props, "dfsadmin", *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_save_namespace_of_a_nameservice_saves_on_every_namenode(cluster, capsys) -> None:
    nn1, nn2 = cluster.nodes["nn1"], cluster.nodes["nn2"]
    status, out, err = dfsadmin(cluster, capsys, "-saveNamespace")
    p = cluster.ports
    assert (status, err) == (0, "")
    assert out.splitlines() == [
        f"Save namespace successful for 127.0.0.1:{p['nn1']}",
        f"Save namespace successful for 127.0.0.1:{p['nn2']}",
    ]
    assert nn1.saves == nn2.saves == [(0, 0)]


def test_save_namespace_goes_on_past_a_namenode_that_is_down(cluster, capsys) -> None:
    # nn3 first: its failure must not keep nn1 from saving, and the command must fail.
    status, out, err = dfsadmin(cluster, capsys, "-saveNamespace", nnids="nn3,nn1")
    p = cluster.ports
    assert status == 1
    assert out.splitlines() == [
        f"Save namespace failed for 127.0.0.1:{p['nn3']}",
        f"Save namespace successful for 127.0.0.1:{p['nn1']}",
    ]
    assert one_line(err).startswith(f"saveNamespace: Call to 127.0.0.1:{p['nn3']} failed")
    assert cluster.nodes["nn1"].saves == [(0, 0)]


def test_generic_option_fs_targets_one_namenode(cluster, capsys) -> None:
    nn1, nn2 = cluster.nodes["nn1"], cluster.nodes["nn2"]
    uri = f"hdfs://127.0.0.1:{cluster.ports['nn2']}"
    status, out, err = dfsadmin(cluster, capsys, "-fs", uri, "-saveNamespace")
    assert (status, out, err) == (0, "Save namespace successful\n", "")
    assert (nn1.saves, nn2.saves) == ([], [(0, 0)])
    # Bad input is one line, exit 2, and nothing is called.
    for args in (
        ["-fs"],
        ["-fs", "file:///", "-saveNamespace"],
        ["-fs", "hdfs://h:x", "-saveNamespace"],
        ["-fs", uri],
    ):
        status, out, err = dfsadmin(cluster, capsys, *args)
        assert status == 2 and out == "" and one_line(err).startswith("hdfs-py: "), (args, err)
    assert (nn1.saves, nn2.saves) == ([], [(0, 0)])


def test_generic_option_fs_of_dfs(cluster, capsys) -> None:
    # -fs names nn3, whose port refuses: the error shows the shell went there.
    dead = f"127.0.0.1:{cluster.ports['nn3']}"
    status = main([*cluster.props(), "dfs", "-fs", f"hdfs://{dead}", "-mkdir", "/x"])
    out, err = capsys.readouterr()
    assert (status, out) == (1, "")
    assert one_line(err).startswith(f"mkdir: Call to {dead} failed"), err


def test_roll_edits_of_a_nameservice_goes_to_the_active_only(cluster, capsys) -> None:
    nn1, nn2 = cluster.nodes["nn1"], cluster.nodes["nn2"]
    nn1.state, nn2.state = STANDBY, ACTIVE
    status, out, err = dfsadmin(cluster, capsys, "-rollEdits")
    assert (status, err) == (0, "")
    assert out == "Successfully rolled edit logs.\nNew segment starts at txid 101\n"
    assert (nn1.rolls, nn2.rolls) == (0, 1)


NEW_SET = "qjournal://a:1;b:1;c:1;d:1;e:1/ha"


# ---- administrators only (issue 35): without TLS, HADOOP_USER_NAME is the caller ----------------
DENIED = "Access denied for user alice. Superuser privilege is required"


@pytest.mark.parametrize(
    ("command", "args", "says"),
    [
        # haadmin's words are Hadoop's HAAdmin's: "Operation failed: <the refusal>".
        (haadmin, ("-transitionToActive", "nn2"), "transitionToActive: "),
        (haadmin, ("-transitionToStandby", "nn1"), "Operation failed: "),
        (haadmin, ("-failover", "nn1", "nn2"), "Failover failed: "),
        (haadmin, ("-reconfigureSharedEdits", NEW_SET), "Operation failed: "),
        (haadmin, ("-getServiceState", "nn1"), "Operation failed: "),
        (dfsadmin, ("-rollEdits",), "rollEdits: "),
        (dfsadmin, ("-saveNamespace",), "saveNamespace: "),
    ],
)
def test_a_tenant_cannot_make_admin_calls(cluster, capsys, monkeypatch, command, args, says):
    monkeypatch.setenv("HADOOP_USER_NAME", "alice")
    nn1, nn2 = cluster.nodes["nn1"], cluster.nodes["nn2"]
    status, out, err = command(cluster, capsys, *args)
    line = one_line(err)
    assert status != 0 and DENIED in line and says in line, line
    assert (nn1.state, nn2.state) == (ACTIVE, STANDBY)
    for node in (nn1, nn2):
        assert (node.transitions, node.saves, node.rolls, node.switches) == ([], [], 0, [])


def test_a_member_of_supergroup_can(cluster, capsys, monkeypatch) -> None:
    monkeypatch.setenv("HADOOP_USER_NAME", "ops")
    nn1, nn2 = cluster.nodes["nn1"], cluster.nodes["nn2"]
    status, out, err = haadmin(cluster, capsys, "-failover", "nn1", "nn2")
    assert (status, out) == (0, "Failover from nn1 to nn2 successful\n"), err
    assert dfsadmin(cluster, capsys, "-rollEdits")[0] == 0
    assert dfsadmin(cluster, capsys, "-saveNamespace")[0] == 0
    assert (nn1.state, nn2.state, nn2.rolls) == (STANDBY, ACTIVE, 1)
    assert nn1.saves == nn2.saves == [(0, 0)]


# ---- a real pair --------------------------------------------------------------------------------


def test_reconfigure_waits_for_the_new_journal_nodes_to_catch_up(cluster, capsys) -> None:
    """Issue 33 item 11: growing 3 -> 5 failed on the first try ("fewer than 3 JournalNodes
    of the new set hold the finalized segments [(57, 248)]") and worked after a sync round.
    The command asks again, bounded, and prints each wait."""
    cluster.nodes["nn1"].behind = 2
    interval = ("-D", "dfs.ha.reconfigure-shared-edits.retry.interval.ms=10")
    status, out, err = haadmin(cluster, capsys, "-reconfigureSharedEdits", NEW_SET, conf=interval)
    assert (status, err) == (0, "")
    assert cluster.nodes["nn1"].switches == [NEW_SET] * 3
    lines = out.splitlines()
    assert len(lines) == 4, out
    for line in lines[:2]:
        assert line.startswith("Waiting for the new JournalNodes to catch up (")
        assert line.endswith(
            "of 600 s): journal ha stays on a:1;b:1;c:1 + a:1;b:1;c:1;d:1;e:1: "
            "fewer than 3 JournalNodes of the new set hold the finalized segments [(57, 248)] "
            "(wait for their syncers, or run journalnode -bootstrap on them)"
        )
    assert lines[2].endswith("the shared edits are now on a:1;b:1;c:1;d:1;e:1")


def test_reconfigure_gives_up_in_one_line_once_the_bound_passes(cluster, capsys) -> None:
    cluster.nodes["nn1"].behind = 1000
    bound = [
        *("-D", "dfs.ha.reconfigure-shared-edits.catch-up.timeout.ms=100"),
        *("-D", "dfs.ha.reconfigure-shared-edits.retry.interval.ms=20"),
    ]
    status, out, err = haadmin(cluster, capsys, "-reconfigureSharedEdits", NEW_SET, conf=bound)
    assert status == 1
    assert 2 <= len(cluster.nodes["nn1"].switches) <= 6
    assert (
        out.count("Waiting for the new JournalNodes to catch up")
        == len(cluster.nodes["nn1"].switches) - 1
    )
    line = one_line(err)
    assert line.startswith("Operation failed: journal ha stays on ")
    assert "(dfs.ha.reconfigure-shared-edits.catch-up.timeout.ms = 100)" in line
    # 0: no wait, the NameNode's refusal as it was.
    cluster.nodes["nn1"].switches.clear()
    no_wait = ("-D", "dfs.ha.reconfigure-shared-edits.catch-up.timeout.ms=0")
    status, out, err = haadmin(cluster, capsys, "-reconfigureSharedEdits", NEW_SET, conf=no_wait)
    assert (status, out, len(cluster.nodes["nn1"].switches)) == (1, "", 1)
    assert one_line(err).endswith("or run journalnode -bootstrap on them)")


def test_haadmin_and_the_failover_client_on_a_real_pair(tmp_path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    with MiniJournalCluster(3, conf=journal_node_conf()) as mjc:
        pair = HAPair(ha_conf(tmp_path, mjc, "haadmin"), tmp_path)
        try:
            conf = pair.client_conf()
            props = []
            for key in (
                "dfs.nameservices",
                f"dfs.ha.namenodes.{NS}",
                f"dfs.namenode.rpc-address.{NS}.nn1",
                f"dfs.namenode.rpc-address.{NS}.nn2",
            ):
                props += ["-D", f"{key}={conf.get(key)}"]
            props += ["-D", f"fs.defaultFS=hdfs://{NS}"]

            def hdfs(*args: str) -> tuple[int, str, str]:
                status = main([*props, *args])
                out, err = capsys.readouterr()
                return status, out, err

            assert hdfs("haadmin", "-getServiceState", "nn1") == (0, "standby\n", "")
            assert hdfs("haadmin", "-transitionToActive", "nn1")[0] == 0
            # The failover client finds the active one, wherever it starts.
            with namenode_proxy_from_conf(conf, timeout_s=30) as client:
                assert isinstance(client, FailoverNameNodeProxy)
                assert client.mkdirs("/before")
                assert client.current.nnid == "nn1"
            status, out, err = hdfs("haadmin", "-failover", "nn1", "nn2")
            assert (status, out) == (0, "Failover from nn1 to nn2 successful\n"), err
            assert hdfs("dfs", "-mkdir", "/after")[0] == 0
            status, out, _ = hdfs("dfs", "-ls", "/")
            assert status == 0 and out.splitlines()[0] == "Found 2 items"
            assert hdfs("dfsadmin", "-rollEdits")[1].startswith("Successfully rolled edit logs.")
            assert pair["nn2"].state is ACTIVE and pair["nn1"].state is STANDBY
            # -saveNamespace reaches the active too, not only the first (standby) NameNode.
            status, out, err = hdfs("dfsadmin", "-saveNamespace")
            assert status == 0 and len(out.splitlines()) == 2, (out, err)
            for nnid in ("nn1", "nn2"):
                assert pair[nnid].core.storage.inspect_images()[0].txid > 0, nnid
        finally:
            pair.stop()


def test_service_level_authorization_refuses_who_the_acl_does_not_list(
    tmp_path, capsys, monkeypatch
) -> None:
    """hadoop.security.authorization=true, security.ha.service.protocol.acl=" ops": even the
    NameNode's own user is refused HAServiceProtocol (a call must pass the ACL and the
    superuser check both); ClientProtocol's ACL stays *."""
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    (tmp_path / "hadoop-policy.xml").write_text(
        "<configuration><property><name>security.ha.service.protocol.acl</name>"
        "<value> supergroup</value></property></configuration>"
    )
    conf = Configuration(load_defaults=False)
    conf.conf_dir = str(tmp_path)
    conf.set("hadoop.security.authorization", "true")
    conf.set("hadoop.user.group.static.mapping.overrides", "ops=supergroup;dr.who=;")
    node = FakeHANameNode(ACTIVE)
    node.callers = NameNodeCallers(conf)
    server = NameNodeRpcServer(node, "127.0.0.1", 0, handler_count=2)
    server.start()
    try:
        fs = ["-fs", f"hdfs://127.0.0.1:{server.port}"]
        props = ["-D", "ha.failover-controller.cli-check.rpc-timeout.ms=5000"]
        props += ["-D", f"dfs.nameservices={NS}", "-D", f"dfs.ha.namenodes.{NS}=nn1"]
        props += ["-D", f"dfs.namenode.rpc-address.{NS}.nn1=127.0.0.1:{server.port}"]
        status = main([*props, "haadmin", "-getServiceState", "nn1"])
        err = capsys.readouterr().err
        user = getpass.getuser()
        assert status == 1 and one_line(err) == (
            f"Operation failed: User {user} (auth:SIMPLE) is not authorized for protocol "
            "interface org.apache.hadoop.ha.HAServiceProtocol: denied by configured ACL"
        )
        monkeypatch.setenv("HADOOP_USER_NAME", "ops")
        assert main([*props, "haadmin", "-getServiceState", "nn1"]) == 0
        assert capsys.readouterr().out == "active\n"
        assert main(["dfsadmin", *fs, "-saveNamespace"]) == 0  # ClientProtocol: *
        assert node.saves == [(0, 0)]
    finally:
        server.stop()
