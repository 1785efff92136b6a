"""``hdfs-py haadmin`` with automatic failover enabled, against a real in-process HA pair:
manual transitions are refused (by haadmin, and by the NameNode itself) unless
``--forcemanual`` is confirmed on stdin; ``-failover`` asks the target's failover
controller — here a hand-written fake behind a real ZKFC RPC server (ZKFCRpcServer) — for a graceful
failover (HAAdmin.gracefulFailoverThroughZKFCs)."""

from __future__ import annotations

import io
import socket
from collections.abc import Iterator

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.common.exceptions import AccessControlException, IOException
from hadoop_qjm.ha.zkfc_protocol import ZKFCRpcServer
from hadoop_qjm.namenode.protocol.exceptions import ServiceFailedException
from hadoop_qjm.namenode.protocol.messages import HAServiceState
from hadoop_qjm.testing.in_process_ha import NS, HAPair, ha_conf, journal_node_conf, wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster

pytestmark = pytest.mark.timeout(120)

ACTIVE, STANDBY = HAServiceState.ACTIVE, HAServiceState.STANDBY
AUTO_KEY = "dfs.ha.automatic-failover.enabled"


class FakeController:
    """ZKFCProtocol as the controller's RPC server calls it: records, or raises ``error``."""

    def __init__(self) -> None:
        self.calls: list[object] = []
        self.error: Exception | None = None

    def cede_active(self, millis: int) -> None:
        self.calls.append(("cedeActive", millis))

    def graceful_failover(self) -> None:
        self.calls.append("gracefulFailover")
        if self.error is not None:
            raise self.error


class Setup:
    """The pair (automatic failover on), nn2's fake controller, and the haadmin command."""

    def __init__(self, pair: HAPair, controller: FakeController, zkfc_server) -> None:
        self.pair = pair
        self.controller = controller
        self.zkfc_server = zkfc_server
        self.zkfc_port = zkfc_port = zkfc_server.port
        conf = pair.client_conf()
        self.props: dict[str, str] = {
            key: conf.get(key)
            for key in (
                "dfs.nameservices",
                f"dfs.ha.namenodes.{NS}",
                f"dfs.namenode.rpc-address.{NS}.nn1",
                f"dfs.namenode.rpc-address.{NS}.nn2",
            )
        }
        self.props[f"{AUTO_KEY}.{NS}"] = "true"
        self.props[f"dfs.ha.zkfc.port.{NS}.nn2"] = str(zkfc_port)

    def address(self, nnid: str) -> str:
        return f"127.0.0.1:{self.pair[nnid].rpc_address[1]}"

    def haadmin(self, capsys, monkeypatch, *args: str, stdin: str = "", **extra: str):
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        props = {**self.props, **extra}
        argv = [arg for key, value in props.items() for arg in ("-D", f"{key}={value}")]
        status = main([*argv, "haadmin", *args])
        out, err = capsys.readouterr()
        return status, out, err


@pytest.fixture
def setup(tmp_path, monkeypatch) -> Iterator[Setup]:
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    with MiniJournalCluster(3, conf=journal_node_conf()) as mjc:
        pair = HAPair(ha_conf(tmp_path, mjc, "auto", **{f"{AUTO_KEY}.{NS}": "true"}), tmp_path)
        controller = FakeController()
        server = ZKFCRpcServer(controller, "127.0.0.1", 0)
        server.start()
        try:
            yield Setup(pair, controller, server)
        finally:
            server.stop()
            pair.stop()


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def refusal(setup: Setup, nnid: str) -> str:
    return (
        f"Automatic failover is enabled for NameNode {nnid} at {setup.address(nnid)}: refusing "
        "to manually manage HA state, since it may cause a split-brain scenario or other "
        "incorrect state; if you are very sure you know what you are doing, specify the "
        "--forcemanual flag"
    )


def test_the_namenode_itself_refuses_a_plain_user_request(setup) -> None:
    with setup.pair.proxy("nn1") as p1, pytest.raises(AccessControlException):
        p1.transition_to_active()
    assert setup.pair["nn1"].state is STANDBY


def test_manual_transitions_are_refused(setup, capsys, monkeypatch) -> None:
    for command in ("-transitionToActive", "-transitionToStandby"):
        status, out, err = setup.haadmin(capsys, monkeypatch, command, "nn1")
        assert (status, out) == (1, "")
        assert one_line(err) == refusal(setup, "nn1")
    status, _, err = setup.haadmin(
        capsys, monkeypatch, "-transitionToActive", "--forceactive", "nn2"
    )
    assert status == 1 and one_line(err) == refusal(setup, "nn2")
    assert setup.pair["nn1"].state is STANDBY and setup.pair["nn2"].state is STANDBY


@pytest.mark.parametrize("answer", ["N\n", "no\n", ""], ids=["N", "no", "end of input"])
def test_forcemanual_not_confirmed_aborts(setup, capsys, monkeypatch, answer) -> None:
    status, out, err = setup.haadmin(
        capsys, monkeypatch, "-transitionToActive", "--forcemanual", "nn1", stdin=answer
    )
    assert (status, out) == (1, "")
    assert "This flag is dangerous" in err and "disable automatic failover" in err
    assert "You may abort safely by answering 'n'" in err
    assert "Are you sure you want to continue? (Y or N) " in err
    assert err.rstrip().endswith("Aborted")
    assert setup.pair["nn1"].state is STANDBY


def test_forcemanual_confirmed_goes_through(setup, capsys, monkeypatch) -> None:
    status, out, err = setup.haadmin(
        capsys, monkeypatch, "-transitionToActive", "--forcemanual", "nn1", stdin="Y\n"
    )
    assert (status, out) == (0, ""), err
    assert "Are you sure you want to continue? (Y or N) " in err
    assert setup.pair["nn1"].state is ACTIVE
    status, _, err = setup.haadmin(
        capsys, monkeypatch, "-transitionToStandby", "nn1", "--forcemanual", stdin="yes\n"
    )
    assert status == 0, err
    assert setup.pair["nn1"].state is STANDBY
    # With --forceactive too (the others are not asked for their state).
    status, _, err = setup.haadmin(
        capsys,
        monkeypatch,
        "-transitionToActive",
        "--forceactive",
        "--forcemanual",
        "nn2",
        stdin="y\n",
    )
    assert status == 0, err
    assert setup.pair["nn2"].state is ACTIVE
    assert not setup.pair.terminations["nn1"] and not setup.pair.terminations["nn2"]


def test_failover_goes_through_the_targets_controller(setup, capsys, monkeypatch) -> None:
    status, out, err = setup.haadmin(capsys, monkeypatch, "-failover", "nn1", "nn2")
    assert (status, err) == (0, "")
    assert out == f"Failover to NameNode nn2 at {setup.address('nn2')} successful\n"
    assert setup.controller.calls == ["gracefulFailover"]
    # The NameNodes were not asked anything by haadmin: the controllers do the transitions.
    assert setup.pair["nn1"].state is STANDBY and setup.pair["nn2"].state is STANDBY
    # The ZKFC's RPC server counted the call (Hadoop's RpcMetrics, issue 38).
    metrics = setup.zkfc_server.rpc_metrics
    wait_until(lambda: metrics.attributes()["TotalRequests"] == 1)
    assert metrics.attributes()["RpcProcessingTimeNumOps"] == 1


def test_failover_errors(setup, capsys, monkeypatch) -> None:
    controller = setup.controller
    controller.error = IOException("ZooKeeper is not reachable")
    status, out, err = setup.haadmin(capsys, monkeypatch, "-failover", "nn1", "nn2")
    assert (status, out) == (1, "")
    assert one_line(err) == "Operation failed: ZooKeeper is not reachable"
    # The controller's own refusal is a failed failover, as HAAdmin prints it.
    controller.error = ServiceFailedException("Unable to become active. Service became unhealthy")
    status, _, err = setup.haadmin(capsys, monkeypatch, "-failover", "nn1", "nn2")
    assert status == 1
    assert one_line(err) == "Failover failed: Unable to become active. Service became unhealthy"
    assert controller.calls == ["gracefulFailover"] * 2
    for flag in ("--forcefence", "--forceactive"):
        status, _, err = setup.haadmin(capsys, monkeypatch, "-failover", flag, "nn1", "nn2")
        assert status == 1
        assert one_line(err) == (
            "forcefence and forceactive flags not supported with auto-failover enabled."
        )
    assert len(controller.calls) == 2
    # FROM must still be a NameNode of the nameservice.
    status, _, err = setup.haadmin(capsys, monkeypatch, "-failover", "nn9", "nn2")
    assert status == 1
    assert one_line(err) == (
        "Illegal argument: Unable to determine service address for namenode 'nn9'"
    )
    # No controller listens at nn1's port: one line, not a traceback.
    with socket.socket() as dead:
        dead.bind(("127.0.0.1", 0))
        port = str(dead.getsockname()[1])
        status, _, err = setup.haadmin(
            capsys, monkeypatch, "-failover", "nn2", "nn1", **{f"dfs.ha.zkfc.port.{NS}": port}
        )
    assert status == 1 and one_line(err).startswith("Operation failed: Call to 127.0.0.1:")
    assert len(controller.calls) == 2


def test_help_documents_forcemanual(setup, capsys, monkeypatch) -> None:
    status, out, _ = setup.haadmin(capsys, monkeypatch, "-help", "transitionToStandby")
    assert status == 0 and out.startswith("-transitionToStandby [[--forcemanual] <serviceId>]")
    status, out, _ = setup.haadmin(capsys, monkeypatch, "-help")
    assert status == 0
    assert "[-transitionToActive [--forceactive] [--forcemanual] <serviceId>]" in out
    assert "[-transitionToStandby [--forcemanual] <serviceId>]" in out
    status, out, _ = setup.haadmin(capsys, monkeypatch, "-help", "failover")
    assert status == 0 and "failover controller does a graceful failover" in out
