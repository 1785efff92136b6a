"""Reads from an observer that always see the client's own writes (issue 37 items 3-5), on
an in-process pair: nn1 active, nn2 observer (two NameNodes; a standby beside them is item
1's plumbing). The state id on the wire with old clients still served; the observer read
proxy chosen by dfs.client.failover.proxy.provider.<ns>: read-your-writes 300 times in a
row while others write, served by the observer; msync from another client; a stalled
observer (its tailer stopped) whose reads wait or go to the active, never older than the
client's last write; no observer at all."""

from __future__ import annotations

import re
import threading

import pytest
from prometheus_client import generate_latest

from hadoop_qjm.cli import main
from hadoop_qjm.ipc.alignment_context import ClientGSIContext
from hadoop_qjm.namenode.global_state_id_context import GlobalStateIdContext
from hadoop_qjm.namenode.ha.failover_proxy import FailoverNameNodeProxy, namenode_proxy_from_conf
from hadoop_qjm.namenode.ha.observer_read_proxy import ObserverReadProxy
from hadoop_qjm.namenode.name_node_http_server import name_node_beans
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.namenode.protocol.exceptions import RetriableException, StandbyException
from hadoop_qjm.testing.in_process_ha import wait_until

pytestmark = pytest.mark.timeout(180)

JID = "observer-reads"
NS = "mycluster"
PROVIDER = "org.apache.hadoop.hdfs.server.namenode.ha.ObserverReadProxyProvider"
#: An observer holds a call at most 2 x 500 ms here (Hadoop's default: 20 s).
OBSERVER_CONF = {"ipc.client.connection.maxidletime": "500"}


def observer_client(pair, **keys: str) -> ObserverReadProxy:
    conf = pair.client_conf()
    conf.set(f"dfs.client.failover.proxy.provider.{NS}", PROVIDER)
    for key, value in keys.items():
        conf.set(key, value)
    client = namenode_proxy_from_conf(conf, timeout_s=30)
    assert isinstance(client, ObserverReadProxy)
    return client


def served_reads(node) -> int:
    return node.metrics.calls().get("getFileInfo", 0)


def stop_tailing(node) -> None:
    node.standby_services.stop()


def start_tailing(node) -> None:
    node.standby_services.start(checkpoints=False)


def test_the_state_id_on_the_wire_and_older_clients(observed) -> None:
    nn1, nn2 = observed["nn1"], observed["nn2"]
    with observed.proxy("nn1") as old:  # no state id: served as before, on the active
        assert old.mkdirs("/old-client")
    context = ClientGSIContext()
    with NameNodeProxy(*nn1.rpc_address, timeout_s=30, alignment=context) as p1:
        assert p1.mkdirs("/aligned")
        assert context.last_seen_state_id == nn1.transaction_id
    with observed.proxy("nn2") as old:
        # The observer does not serve a coordinated read without a state id: the plain
        # failover client goes on to the active instead of reading stale data.
        with pytest.raises(StandbyException, match="received request without stateId"):
            old.get_file_info("/aligned")
        assert old.get_ha_service_state().name == "OBSERVER"  # not coordinated
    far = ClientGSIContext()
    far.receive_response_state(nn1.transaction_id + 10**9)
    with NameNodeProxy(*nn2.rpc_address, timeout_s=30, alignment=far) as p2:
        with pytest.raises(RetriableException, match="Observer Node is too far behind"):
            p2.get_file_info("/aligned")
    with NameNodeProxy(*nn2.rpc_address, timeout_s=30, alignment=context) as p2:
        assert p2.get_file_info("/aligned") is not None  # held until applied, if need be


def test_read_your_writes_300_times_while_others_write(observed) -> None:
    nn2 = observed["nn2"]
    stop = threading.Event()
    errors: list[BaseException] = []

    def other_writer(n: int) -> None:
        try:
            with FailoverNameNodeProxy(observed.client_conf(), NS, timeout_s=30) as w:
                i = 0
                while not stop.is_set():
                    w.mkdirs(f"/others/{n}/{i}")
                    i += 1
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    writers = [threading.Thread(target=other_writer, args=(n,)) for n in range(2)]
    for t in writers:
        t.start()
    before = served_reads(nn2)
    try:
        with observer_client(observed) as client:
            for i in range(300):
                assert client.mkdirs(f"/mine/{i}")
                assert client.get_file_info(f"/mine/{i}") is not None, i
            assert (client.observer_reads, client.active_reads) == (300, 0)
    finally:
        stop.set()
        for t in writers:
            t.join()
    assert not errors
    assert served_reads(nn2) - before >= 300


def test_msync_lets_another_client_see_a_write(observed) -> None:
    nn2 = observed["nn2"]
    with observer_client(observed) as b, observed.proxy("nn1") as a:
        assert b.get_file_info("/") is not None  # the first read msyncs, on the observer
        stop_tailing(nn2)
        assert a.mkdirs("/from-a")
        # B has not seen A's write: the stalled observer answers from its namespace.
        assert b.get_file_info("/from-a") is None and b.observer_reads == 2
        assert b.msync() == observed["nn1"].transaction_id
        held = nn2.rpc_server.state_context.held_calls
        restart = threading.Timer(0.2, start_tailing, (nn2,))
        restart.start()
        try:
            assert b.get_file_info("/from-a") is not None  # held until the observer has it
        finally:
            restart.join()
        assert b.observer_reads == 3 and b.active_reads == 0
        assert nn2.rpc_server.state_context.held_calls == held + 1
    status = observer_status(nn2)
    assert status["State"] == "observer"
    assert status["AlignmentHeldCallsNumOps"] == held + 1
    assert status["AlignmentHeldCallsTotalTimeMillis"] >= 100  # held until the restart
    assert status["AlignmentHeldCallsNow"] == 0
    assert status["LastAppliedTxId"] >= observed["nn1"].transaction_id - 1
    assert status["LagTxns"] == 0  # it has applied what its clients had seen
    assert 0 <= status["MillisSinceLastLoadedEdits"] < 60_000


def observer_status(node) -> dict:
    """The ObserverStatus bean of ``node``'s /jmx."""
    beans = name_node_beans(node, None)
    return next(b for b in beans if b["name"] == "Hadoop:service=NameNode,name=ObserverStatus")


def test_an_observer_behind_its_clients_shows_its_lag(observed) -> None:
    """A client that saw the active's txid T asks a stalled observer: held, refused as too
    far behind, and the observer's ObserverStatus shows the lag."""
    nn1, nn2 = observed["nn1"], observed["nn2"]
    stop_tailing(nn2)
    try:
        context = ClientGSIContext()
        with NameNodeProxy(*nn1.rpc_address, timeout_s=30, alignment=context) as p1:
            for i in range(3):
                assert p1.mkdirs(f"/lagging/{i}")
        behind = nn1.transaction_id - nn2.transaction_id
        assert behind >= 3
        with NameNodeProxy(*nn2.rpc_address, timeout_s=30, alignment=context) as p2:
            with pytest.raises(RetriableException, match="too far behind"):
                p2.get_file_info("/lagging/2")
        status = observer_status(nn2)
        assert status["LagTxns"] == context.last_seen_state_id - nn2.transaction_id >= 3
        assert status["AlignmentHeldCallsNow"] == 0
        prom = generate_latest(nn2.metrics.registry).decode()
        assert "namenode_observer 1.0" in prom
        assert f"namenode_observer_lag_txns {float(status['LagTxns'])}" in prom
        assert re.search(r"^namenode_alignment_held_calls_total [1-9]", prom, re.M), prom
    finally:
        start_tailing(nn2)


def test_a_stalled_observer_never_serves_a_read_older_than_the_last_write(observed) -> None:
    nn2 = observed["nn2"]
    with observer_client(observed) as client:
        assert client.get_file_info("/") is not None
        stop_tailing(nn2)
        for i in range(4):
            assert client.mkdirs(f"/stalled/{i}")
            assert client.get_file_info(f"/stalled/{i}") is not None, i
        # Each read was held (1 s at most), refused as too far behind, and went to the
        # active; the observer stayed in the rotation (Hadoop's: it is only behind).
        assert (client.observer_reads, client.active_reads) == (1, 4)
        assert nn2.rpc_server.state_context.held_calls >= 4
        start_tailing(nn2)
        assert client.mkdirs("/caught-up")
        assert client.get_file_info("/caught-up") is not None  # served once caught up
        assert (client.observer_reads, client.active_reads) == (2, 4)


def test_without_an_observer_reads_go_to_the_active(observed, capsys) -> None:
    observed["nn2"].transition_to_standby()
    with observer_client(observed) as client:
        for i in range(20):
            assert client.mkdirs(f"/no-observer/{i}")
            assert client.get_file_info(f"/no-observer/{i}") is not None
        assert (client.observer_reads, client.active_reads) == (0, 20)
    props = [*observed.cli_props(), "-D", f"dfs.client.failover.proxy.provider.{NS}={PROVIDER}"]
    assert main([*props, "dfs", "-msync"]) == 0
    assert main([*props, "dfs", "-ls", "/no-observer"]) == 0
    assert capsys.readouterr().out.startswith("Found 20 items")
    assert main([*props, "dfs", "-msync", "a", "b"]) == 2


def test_auto_msync_period_zero_msyncs_before_every_read(observed) -> None:
    nn1 = observed["nn1"]
    key = f"dfs.client.failover.observer.auto-msync-period.{NS}"
    with observer_client(observed, **{key: "0"}) as client, observed.proxy("nn1") as other:
        for i in range(5):
            assert other.mkdirs(f"/auto/{i}")  # another client's write
            assert client.get_file_info(f"/auto/{i}") is not None
        assert client.observer_reads == 5
        assert nn1.metrics.calls().get("msync", 0) == 5  # the first read and each after


def test_a_stalled_observer_holds_at_most_max_held_calls(observed) -> None:
    """Held calls take handler threads: past max_held (half the handlers) a call is refused
    at once, so a stalled observer keeps handlers for haadmin and the reads it can serve."""
    nn1, nn2 = observed["nn1"], observed["nn2"]
    context = GlobalStateIdContext(
        nn2, nn2.rpc_server.dispatcher, enabled=True, client_wait_ms=20000, max_held=1
    )
    stop_tailing(nn2)
    assert nn1.namesystem.mkdirs("/ahead")
    outcome: list[object] = []
    holder = threading.Thread(
        target=lambda: outcome.append(context.receive_request_state(nn1.transaction_id))
    )
    holder.start()
    try:
        wait_until(lambda: context.holding == 1, what="the first call held")
        with pytest.raises(RetriableException, match="holds 1 calls for alignment already"):
            context.receive_request_state(nn1.transaction_id)
        context.receive_request_state(nn2.transaction_id)  # not behind: served
    finally:
        start_tailing(nn2)
        holder.join()
    assert outcome == [None] and context.held_calls == 1  # served once the observer caught up
