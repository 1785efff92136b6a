"""ObserverReadProxy's rotation with fakes (issue 37 item 5, Hadoop's
ObserverReadInvocationHandler): an observer that is only behind stays in the rotation; one
that is no observer any more is left out, and once every observer is left out after
failing, the next read probes again at once (no wait of the probe retry period)."""

from __future__ import annotations

import pytest

from hadoop_qjm.conf import Configuration
from hadoop_qjm.ha.ha_service_protocol import HAServiceState
from hadoop_qjm.ipc.alignment_context import ClientGSIContext
from hadoop_qjm.namenode.ha.ha_util import NameNodeAddress
from hadoop_qjm.namenode.ha.observer_read_proxy import ObserverReadProxy
from hadoop_qjm.namenode.protocol.exceptions import RetriableException, StandbyException

pytestmark = pytest.mark.timeout(30)

NNS = [NameNodeAddress(f"nn{i}", ("127.0.0.1", 1000 + i), None) for i in (1, 2, 3)]


class FakeNameNode:
    """A NameNode's proxy: its state as probed, and what its reads do (an exception to
    raise, or None to answer with its own id)."""

    def __init__(self, state: HAServiceState) -> None:
        self.state = state
        self.fails: BaseException | None = None
        self.probes = 0
        self.reads = 0

    def get_ha_service_state(self) -> HAServiceState:
        self.probes += 1
        return self.state

    def get_file_info(self, path: str) -> str:
        self.reads += 1
        if self.fails is not None:
            raise self.fails
        return path

    def close(self) -> None:
        pass


class FakeActive:
    namenodes = NNS

    def __init__(self) -> None:
        self.reads = 0

    def invoke(self, method: str, *args):
        if method == "msync":
            return 0
        self.reads += 1
        return "active"

    def get_file_info(self, path: str) -> str:
        return self.invoke("get_file_info", path)


@pytest.fixture
def cluster():
    nodes = {
        "nn1": FakeNameNode(HAServiceState.ACTIVE),
        "nn2": FakeNameNode(HAServiceState.OBSERVER),
        "nn3": FakeNameNode(HAServiceState.OBSERVER),
    }
    active = FakeActive()
    proxy = ObserverReadProxy(
        Configuration(),
        "ns",
        active,
        ClientGSIContext(),
        proxy_factory=lambda nn, timeout_s: nodes[nn.nnid],
        clock=lambda: 0.0,  # the probe retry period (10 min) never passes
    )
    return nodes, active, proxy


def test_an_observer_that_is_behind_stays_in_the_rotation(cluster) -> None:
    nodes, active, proxy = cluster
    nodes["nn2"].fails = RetriableException("Observer Node is too far behind")
    for _ in range(6):
        assert proxy.get_file_info("/x") == "/x"  # nn3 answers what nn2 refused
    assert nodes["nn2"].reads >= 3  # asked again each time its turn came
    nodes["nn2"].fails = None
    before = nodes["nn2"].reads
    for _ in range(4):
        proxy.get_file_info("/x")
    assert nodes["nn2"].reads - before >= 2 and active.reads == 0


def test_observers_that_failed_are_probed_again_at_the_next_read(cluster) -> None:
    nodes, active, proxy = cluster
    assert proxy.get_file_info("/x") == "/x"
    probes = nodes["nn2"].probes
    for name in ("nn2", "nn3"):  # both back to standby: no observer any more
        nodes[name].fails = StandbyException("Operation category READ is not supported")
    assert proxy.get_file_info("/x") == "active"
    # nn3 is an observer again: the next read probes at once and it serves.
    nodes["nn3"].fails = None
    nodes["nn2"].state = HAServiceState.STANDBY
    assert proxy.get_file_info("/x") == "/x"
    assert nodes["nn2"].probes == probes + 1 and active.reads == 1


def test_without_any_observer_the_probe_waits_for_its_retry_period(cluster) -> None:
    nodes, active, proxy = cluster
    for name in ("nn2", "nn3"):
        nodes[name].state = HAServiceState.STANDBY
    for _ in range(3):
        assert proxy.get_file_info("/x") == "active"
    assert nodes["nn2"].probes == 1 and active.reads == 3
