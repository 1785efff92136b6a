"""The fault-injecting proxy and the plans that decide its faults."""

from __future__ import annotations

import random
from typing import Any

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import HadoopAssertionError, IOException
from hadoop_qjm.editlog.file_journal_manager import finalized_edits_file_name
from hadoop_qjm.qjournal.protocol.exceptions import QuorumException
from hadoop_qjm.qjournal.protocol.messages import RequestInfo, SegmentState
from hadoop_qjm.testing.faults import (
    DownNodes,
    FaultInjectingProxy,
    FaultProbabilities,
    PaxosCrashInjector,
    RandomFaults,
    RpcCounter,
    describe_call,
    is_injected,
    wrap_with,
)
from hadoop_qjm.testing.local_transport import LocalJournalCluster
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    recover_and_return_last_txn,
    write_segment,
    write_txns,
)

pytestmark = pytest.mark.timeout(30)


class FakeProxy:
    """Records the calls that reach it."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.closed = False
        self.host = "jn0"

    def heartbeat(self, req: RequestInfo) -> None:
        self.calls.append("heartbeat")

    def journal(self, *args: Any) -> None:
        self.calls.append("journal")
        raise IOException("disk on fire")

    def close(self) -> None:
        self.closed = True


def test_describe_call_is_short_and_deterministic() -> None:
    req = RequestInfo(JID, 3, 7, 41)
    assert (
        describe_call("journal", (req, 42, 43, 1, b"x" * 60))
        == "journal(e3#7 c41, 42, 43, 1, <60B>)"
    )
    assert (
        describe_call(
            "accept_recovery", (req, SegmentState(4, 6, True), "http://jn1:8480/getJournal?x")
        )
        == "accept_recovery(e3#7 c41, [4-6 inprogress], jn1:8480)"
    )


def test_is_injected() -> None:
    assert is_injected(IOException("Injected - faking being down"))
    assert not is_injected(IOException("disk on fire"))
    assert not is_injected(HadoopAssertionError("Injected but broken"))
    assert not is_injected(QuorumException("Injected | java.lang.AssertionError: x"))


def test_rpc_counter_fails_the_kth_call_without_sending_it() -> None:
    counter = RpcCounter(fail_at={0: [2]})
    inner = FakeProxy()
    proxy = FaultInjectingProxy(inner, 0, counter)
    req = RequestInfo(JID, 1, 0, 0)
    proxy.heartbeat(req)
    with pytest.raises(IOException, match="Injected: failed IPC #2 to jn0"):
        proxy.heartbeat(req)
    proxy.heartbeat(req)
    assert inner.calls == ["heartbeat", "heartbeat"]
    assert counter.counts[0] == 3 and counter.injected == 1
    assert proxy.host == "jn0"  # attributes pass through
    proxy.close()  # not an RPC: not counted
    assert inner.closed and counter.counts[0] == 3


def test_errors_the_harness_did_not_inject_are_recorded() -> None:
    counter = RpcCounter()
    proxy = FaultInjectingProxy(FakeProxy(), 1, counter)
    with pytest.raises(IOException, match="disk on fire"):
        proxy.journal()
    assert counter.unexpected_errors == ["jn1 journal: IOException: disk on fire"]
    assert counter.assertion_errors == []


def _decisions(seed: int) -> list[str]:
    trace: list[str] = []
    faults = RandomFaults(
        random.Random(seed),
        3,
        FaultProbabilities(writer_crash=0.02),
        paxos=PaxosCrashInjector(),
        trace=trace.append,
    )
    proxies = [FaultInjectingProxy(FakeProxy(), i, faults) for i in range(3)]
    req = RequestInfo(JID, 1, 0, 0)
    for writer in range(20):
        faults.start_writer(writer)
        for _ in range(10):
            for proxy in proxies:
                try:
                    proxy.heartbeat(req)
                except IOException as e:
                    assert is_injected(e)
    return trace


def test_random_faults_are_a_function_of_the_seed() -> None:
    assert _decisions(7) == _decisions(7)
    assert _decisions(7) != _decisions(8)
    trace = _decisions(7)
    assert any(line.endswith("is down") for line in trace)
    assert any("Injected - faking being down" in line for line in trace)


def test_a_crashed_writer_sends_nothing_more() -> None:
    faults = RandomFaults(random.Random(1), 3, FaultProbabilities(flap=0, writer_crash=1.0))
    inner = FakeProxy()
    proxy = FaultInjectingProxy(inner, 0, faults)
    faults.start_writer(0)
    for _ in range(3):
        with pytest.raises(IOException, match="Injected - the writer has crashed"):
            proxy.heartbeat(RequestInfo(JID, 1, 0, 0))
    assert inner.calls == [] and faults.writer_crashed
    faults.start_writer(1)
    assert not faults.writer_crashed


def test_paxos_crash_after_the_commit_point_is_rolled_forward(
    local_cluster: LocalJournalCluster,
) -> None:
    """acceptRecovery on jn2 dies after its paxos record is durable; the next prepare
    installs the downloaded segment (HDFS-3955), and every copy ends up identical."""
    injector = PaxosCrashInjector()
    cluster = LocalJournalCluster(3, local_cluster.base_dir / "paxos", fault_injector=injector)
    down = DownNodes()
    qjm = cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(down))
    qjm.format(FAKE_NSINFO)
    qjm.recover_unfinalized_segments()
    write_segment(qjm, 1, 3, True)
    down.set_down(2)
    stm = qjm.start_log_segment(4, CURRENT_LAYOUT_VERSION)
    write_txns(stm, 4, 2)
    qjm.close()

    class ArmOnJn2:
        def before_call(self, node: int, method: str, args: tuple[Any, ...]) -> None:
            if node == 2 and method == "accept_recovery":
                injector.arm("after")

        def after_call(self, node: int, method: str, error: BaseException | None) -> None:
            if method == "accept_recovery" and node == 2:
                assert injector.disarm() and "Injected - faking fault after" in str(error)

    with cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(ArmOnJn2())) as second:
        assert recover_and_return_last_txn(second) == 5
    current = cluster.current_dir(2, JID)
    assert (current / "paxos" / "4").exists()  # accepted...
    assert not (current / finalized_edits_file_name(4, 5)).exists()  # ...but not installed
    with cluster.qjm(JID, FAKE_NSINFO) as third:
        assert recover_and_return_last_txn(third) == 5
    copies = {
        (cluster.current_dir(i, JID) / finalized_edits_file_name(4, 5)).read_bytes()
        for i in range(3)
    }
    assert len(copies) == 1
    cluster.shutdown()


def test_paxos_crash_before_the_commit_point_accepts_nothing() -> None:
    injector = PaxosCrashInjector()
    injector.arm("before")
    with pytest.raises(IOException, match="Injected - faking fault before persisting"):
        injector.before_persist_paxos_data()
    injector.after_persist_paxos_data()  # armed for "before" only
    assert injector.disarm() is True
    assert injector.disarm() is False
    injector.before_persist_paxos_data()  # disarmed: nothing
    with pytest.raises(ValueError):
        injector.arm("during")
