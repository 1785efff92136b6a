"""ZKFailoverController's logic without ZooKeeper or sockets (STYLE.md habit 5).

The controller is built with hand-written fakes: NameNode proxies that record
transitionToActive/Standby (and fail on demand), ZKFC proxies that record cedeActive, a
fencer, and an elector that records join/quit. The health monitor is never started: each
test calls the controller's callbacks itself, as the monitor and the elector would.

    HealthMonitor ─(test)─▶ _on_health_state / _on_service_status ─▶ FakeElector.join/quit
    ActiveStandbyElector ─(test)─▶ become_active / become_standby / fence_old_active
                                                 └──▶ FakeNameNodes (transition_to_*)
    ZKFCProtocol ─(test)─▶ cede_active / graceful_failover ─▶ FakeZKFCs (cede_active)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.ha.active_standby_elector import ElectorState
from hadoop_qjm.ha.election_rules import HealthState
from hadoop_qjm.ha.health_monitor import HealthMonitor, HealthMonitorSettings
from hadoop_qjm.ha.zk_failover_controller import ZKFailoverController, ZKFCSettings
from hadoop_qjm.namenode.ha.dfs_zk_failover_controller import NNHAServiceTarget, data_to_target
from hadoop_qjm.namenode.protocol.exceptions import ServiceFailedException
from hadoop_qjm.namenode.protocol.messages import HAServiceState, HAServiceStatus
from hadoop_qjm.qjournal.protocol.exceptions import ConnectException

pytestmark = pytest.mark.timeout(60)

WAIT_S = 10.0
NN1 = NNHAServiceTarget("mycluster", "nn1", ("127.0.0.1", 8020), ("127.0.0.1", 8019))
NN2 = NNHAServiceTarget("mycluster", "nn2", ("127.0.0.1", 8021), ("127.0.0.1", 8029))
NN3 = NNHAServiceTarget("mycluster", "nn3", ("127.0.0.1", 8022), ("127.0.0.1", 8039))
ALL = (NN1, NN2, NN3)
GRACEFUL_FENCE_TIMEOUT_S = 0.05
#: What graceful_failover asks the others to cede for: twice the graceful-fence timeout.
CEDE_MS = 100

SETTINGS = ZKFCSettings(
    quorum="127.0.0.1:1",
    session_timeout_s=1.0,
    parent="/hadoop-ha/mycluster",
    acl_text="world:anyone:rwcda",
    auth_text=None,
    op_retries=1,
    graceful_fence_timeout_s=GRACEFUL_FENCE_TIMEOUT_S,
    new_active_timeout_s=0.05,
    health=HealthMonitorSettings(
        check_interval_s=0.01,
        connect_retry_interval_s=0.01,
        sleep_after_disconnect_s=0.01,
        rpc_timeout_s=0.05,
    ),
)


# ---- fakes ------------------------------------------------------------------------------------


class FakeNameNodes:
    """proxy_factory: a fresh proxy per call, all recording into one list."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str, bool]] = []  # (nnid, method, by_zkfc)
        self.failures: dict[tuple[str, str], Exception] = {}
        self.proxies: list[FakeNameNodeProxy] = []
        self.timeouts: list[float] = []
        self._lock = threading.Lock()

    def fail(self, target: NNHAServiceTarget, method: str, error: Exception) -> None:
        self.failures[(target.nnid, method)] = error

    def __call__(self, address: tuple[str, int], timeout_s: float) -> FakeNameNodeProxy:
        nnid = next(t.nnid for t in ALL if t.address == address)
        proxy = FakeNameNodeProxy(self, nnid)
        with self._lock:
            self.proxies.append(proxy)
            self.timeouts.append(timeout_s)
        return proxy

    def record(self, nnid: str, method: str, by_zkfc: bool) -> None:
        with self._lock:
            self.calls.append((nnid, method, by_zkfc))
        error = self.failures.get((nnid, method))
        if error is not None:
            raise error


class FakeNameNodeProxy:
    def __init__(self, owner: FakeNameNodes, nnid: str) -> None:
        self.owner = owner
        self.nnid = nnid
        self.closed = False

    def transition_to_active(self, forced: bool = False, *, by_zkfc: bool = False) -> None:
        self.owner.record(self.nnid, "transition_to_active", by_zkfc)

    def transition_to_standby(self, forced: bool = False, *, by_zkfc: bool = False) -> None:
        self.owner.record(self.nnid, "transition_to_standby", by_zkfc)

    def close(self) -> None:
        self.closed = True


class FakeZKFCs:
    """zkfc_proxy_factory: records cede_active(ms) per NameNode; ``on_cede(nnid, ms)`` runs
    on every call (it may raise, as an unreachable controller would)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.proxies: list[FakeZKFCProxy] = []
        self.on_cede: Callable[[str, int], None] = lambda nnid, ms: None

    def __call__(self, address: tuple[str, int], timeout_s: float) -> FakeZKFCProxy:
        nnid = next(t.nnid for t in ALL if t.zkfc_address == address)
        proxy = FakeZKFCProxy(self, nnid)
        self.proxies.append(proxy)
        return proxy


class FakeZKFCProxy:
    def __init__(self, owner: FakeZKFCs, nnid: str) -> None:
        self.owner = owner
        self.nnid = nnid
        self.closed = False

    def cede_active(self, millis_to_cede: int) -> None:
        self.owner.calls.append((self.nnid, millis_to_cede))
        self.owner.on_cede(self.nnid, millis_to_cede)

    def close(self) -> None:
        self.closed = True


class FakeFencer:
    def __init__(self, result: bool = True) -> None:
        self.result = result
        self.fenced: list[str] = []

    def __call__(self, target: NNHAServiceTarget) -> bool:
        self.fenced.append(target.nnid)
        return self.result


class FakeElector:
    """What the controller uses of ActiveStandbyElector."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.active_data: bytes | None = None
        self.state = ElectorState.INIT
        self.is_in_election = False
        self.joined = threading.Event()

    def join_election(self, data: bytes) -> None:
        self.calls.append(("join", data))
        self.is_in_election = True
        self.joined.set()

    def quit_election(self, need_fence: bool) -> None:
        self.calls.append(("quit", need_fence))
        self.is_in_election = False

    def get_active_data(self) -> bytes | None:
        return self.active_data

    def terminate(self) -> None:
        self.calls.append(("terminate",))


class FakeTime:
    """The controller's clock and timers: time moves only when the test advances it, and
    a started timer runs then if it is due."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.timers: list[FakeTimer] = []

    def clock(self) -> float:
        return self.now

    def timer(self, delay_s: float, function: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer(self.now + delay_s, function)
        self.timers.append(timer)
        return timer

    def advance(self, seconds: float) -> None:
        self.now += seconds
        for timer in list(self.timers):
            if timer.started and not timer.cancelled and timer.due <= self.now:
                self.timers.remove(timer)
                timer.function()


class FakeTimer:
    def __init__(self, due: float, function: Callable[[], None]) -> None:
        self.due = due
        self.function = function
        self.started = self.cancelled = False

    def start(self) -> None:
        self.started = True

    def cancel(self) -> None:
        self.cancelled = True


class Fixture:
    def __init__(
        self, others: tuple[NNHAServiceTarget, ...] = (NN2,), time: FakeTime | None = None
    ) -> None:
        self.namenodes = FakeNameNodes()
        self.zkfcs = FakeZKFCs()
        self.fencer = FakeFencer()
        self.controller = ZKFailoverController(
            SETTINGS,
            NN1,
            others,
            proxy_factory=self.namenodes,
            zkfc_proxy_factory=self.zkfcs,
            fence=self.fencer,
            data_to_target=lambda data: data_to_target(ALL, data),
            **({} if time is None else {"clock": time.clock, "timer": time.timer}),
        )
        # The real elector never connected; stop its worker thread before replacing it.
        self.controller.elector.terminate()
        self.elector = FakeElector()
        self.controller.elector = self.elector  # type: ignore[assignment]

    def healthy(self) -> None:
        self.controller._on_health_state(HealthState.SERVICE_HEALTHY)

    def report(self, state: HAServiceState) -> None:
        self.controller._on_service_status(HAServiceStatus(state))


@pytest.fixture
def fx() -> Iterator[Fixture]:
    fixture = Fixture()
    try:
        yield fixture
    finally:
        fixture.controller.stop()


@pytest.fixture
def fx_timed() -> Iterator[tuple[Fixture, FakeTime]]:
    """A controller on a fake clock and fake timers (FakeTime)."""
    time = FakeTime()
    fixture = Fixture(time=time)
    try:
        yield fixture, time
    finally:
        fixture.controller.stop()


@pytest.fixture
def fx3() -> Iterator[Fixture]:
    fixture = Fixture(others=(NN2, NN3))
    try:
        yield fixture
    finally:
        fixture.controller.stop()


# ---- health -> election ------------------------------------------------------------------------


def test_healthy_joins_the_election_with_the_local_active_node_info(fx: Fixture) -> None:
    fx.healthy()
    assert fx.elector.calls == [("join", NN1.info().to_bytes())]


@pytest.mark.parametrize(
    "state", [HealthState.SERVICE_UNHEALTHY, HealthState.SERVICE_NOT_RESPONDING]
)
def test_unhealthy_or_not_responding_quits_marking_fencing_needed(
    fx: Fixture, state: HealthState
) -> None:
    fx.healthy()
    fx.controller.become_active()
    fx.controller._on_health_state(state)
    assert fx.elector.calls[1:] == [("quit", True)]
    assert fx.controller.service_state is HAServiceState.INITIALIZING


def test_initializing_quits_without_fencing(fx: Fixture) -> None:
    fx.controller._on_health_state(HealthState.INITIALIZING)
    assert fx.elector.calls == [("quit", False)]
    assert fx.controller.service_state is HAServiceState.INITIALIZING


def test_a_failed_health_monitor_is_fatal(fx: Fixture) -> None:
    fx.controller._on_health_state(HealthState.HEALTH_MONITOR_FAILED)
    assert fx.elector.calls == []
    assert fx.controller.fatal_error == "Health monitor failed!"
    assert fx.controller.wait(0) == "Health monitor failed!"


def test_a_state_changed_behind_the_controllers_back_quits_and_bars_rejoining_for_1s(
    fx: Fixture,
) -> None:
    fx.healthy()
    fx.controller.become_active()
    fx.elector.joined.clear()
    del fx.elector.calls[:]

    fx.report(HAServiceState.STANDBY)  # once: maybe a transition in flight
    assert fx.elector.calls == []
    fx.report(HAServiceState.STANDBY)  # twice: someone else changed it
    quit_at = time.monotonic()
    assert fx.elector.calls == [("quit", True)]
    assert fx.controller.service_state is HAServiceState.INITIALIZING

    fx.report(HAServiceState.STANDBY)  # the next poll rechecks: barred, a recheck is due
    fx.healthy()  # also barred
    assert fx.elector.calls == [("quit", True)]
    assert fx.elector.joined.wait(WAIT_S), "never rejoined after the bar"
    assert time.monotonic() - quit_at >= 0.9
    assert fx.elector.calls == [("quit", True), ("join", NN1.info().to_bytes())]


def test_the_bad_state_bar_ends_on_the_controllers_clock_not_before(
    fx_timed: tuple[Fixture, FakeTime],
) -> None:
    """The 1 s bar after a state changed behind the controller's back, on a fake clock: still
    barred a millisecond before it ends, joined by the recheck due when it ends."""
    fx, time = fx_timed
    fx.healthy()
    fx.controller.become_active()
    del fx.elector.calls[:]
    fx.report(HAServiceState.STANDBY)
    fx.report(HAServiceState.STANDBY)
    assert fx.elector.calls == [("quit", True)]

    time.advance(0.999)
    fx.healthy()  # barred for one more millisecond: a recheck is due then
    assert fx.elector.calls == [("quit", True)]
    assert [t.due for t in time.timers if not t.cancelled] == [pytest.approx(1001.0)]
    time.advance(0.001)
    assert fx.elector.calls == [("quit", True), ("join", NN1.info().to_bytes())]


def test_a_matching_report_resets_the_mismatch_count(fx: Fixture) -> None:
    fx.healthy()
    fx.controller.become_active()
    del fx.elector.calls[:]
    fx.report(HAServiceState.STANDBY)
    fx.report(HAServiceState.ACTIVE)
    fx.report(HAServiceState.STANDBY)
    assert fx.elector.calls == []
    fx.report(HAServiceState.STANDBY)
    assert fx.elector.calls == [("quit", True)]


def test_reports_before_any_claim_change_nothing(fx: Fixture) -> None:
    fx.healthy()
    for state in (HAServiceState.ACTIVE, HAServiceState.STANDBY, HAServiceState.ACTIVE):
        fx.report(state)
    assert fx.elector.calls == [("join", NN1.info().to_bytes())]


# ---- observers (HDFS-14130) ----------------------------------------------------------------------


def test_a_controller_beside_an_observer_never_joins_the_election(fx: Fixture) -> None:
    """The monitor reports the state before the health: an observer found at the first poll
    keeps its controller out, however often it is healthy."""
    fx.report(HAServiceState.OBSERVER)
    for _ in range(3):
        fx.healthy()
        fx.report(HAServiceState.OBSERVER)
    assert fx.elector.calls == []
    assert fx.controller.service_state is HAServiceState.OBSERVER


def test_a_standby_made_an_observer_quits_at_once_and_rejoins_as_a_standby_again(
    fx_timed: tuple[Fixture, FakeTime],
) -> None:
    fx, time = fx_timed
    fx.healthy()
    fx.controller.become_standby()
    del fx.elector.calls[:]
    fx.report(HAServiceState.OBSERVER)  # -transitionToObserver: out at the first report
    assert fx.elector.calls == [("quit", True)]
    fx.healthy()
    fx.report(HAServiceState.OBSERVER)
    assert fx.elector.calls == [("quit", True)]

    fx.report(HAServiceState.STANDBY)  # -transitionToStandby: once may be in flight
    fx.report(HAServiceState.STANDBY)  # twice: back to standby, a candidate again
    assert fx.controller.service_state is HAServiceState.INITIALIZING
    time.advance(1.0)  # the bad-state bar
    fx.report(HAServiceState.STANDBY)
    assert fx.elector.calls[-1] == ("join", NN1.info().to_bytes())


def test_an_observer_is_no_graceful_failover_target(fx: Fixture) -> None:
    fx.healthy()
    fx.report(HAServiceState.OBSERVER)
    fx.elector.active_data = NN2.info().to_bytes()
    with pytest.raises(ServiceFailedException, match="is in observer state"):
        fx.controller.graceful_failover()
    assert fx.zkfcs.calls == []


def test_the_health_monitor_waits_are_hadoops_three_intervals() -> None:
    """With its wait passed in, the monitor's timing is seen without sleeping: the check
    interval after a healthy poll, sleep-after-disconnect after a lost connection,
    connect-retry-interval after a refused one."""
    settings = HealthMonitorSettings(
        check_interval_s=0.25,
        connect_retry_interval_s=0.5,
        sleep_after_disconnect_s=0.75,
        rpc_timeout_s=1.0,
    )
    failures = iter([None, ConnectionResetError("reset"), ConnectException("refused")])
    states: list[HealthState] = []
    waits: list[float] = []

    class Proxy:
        def get_service_status(self) -> HAServiceStatus:
            failure = next(failures)
            if failure is not None:
                raise failure
            return HAServiceStatus(HAServiceState.STANDBY)

        def monitor_health(self) -> None:
            pass

        def close(self) -> None:
            pass

    third_wait = threading.Event()

    def wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 3:
            monitor.shutdown()
            third_wait.set()

    monitor = HealthMonitor(
        "nn1", lambda timeout_s: Proxy(), settings, on_state=states.append, wait=wait
    )
    monitor.start()
    assert third_wait.wait(WAIT_S), f"the monitor waited only {waits}"
    monitor.shutdown(WAIT_S)
    assert waits == [0.25, 0.75, 0.5]
    assert states == [HealthState.SERVICE_HEALTHY, HealthState.SERVICE_NOT_RESPONDING]


# ---- the elector's callbacks -------------------------------------------------------------------


def test_become_active_transitions_the_local_namenode_by_zkfc(fx: Fixture) -> None:
    fx.controller.become_active()
    assert fx.namenodes.calls == [("nn1", "transition_to_active", True)]
    assert fx.namenodes.timeouts == [SETTINGS.new_active_timeout_s]
    assert all(p.closed for p in fx.namenodes.proxies)
    assert fx.controller.service_state is HAServiceState.ACTIVE
    assert fx.controller._last_attempt is not None and fx.controller._last_attempt.succeeded


@pytest.mark.parametrize(
    "error",
    [ServiceFailedException("no quorum of JournalNodes"), ConnectionRefusedError("refused")],
    ids=["service-failed", "refused"],
)
def test_become_active_failure_raises_and_records_a_failed_attempt(
    fx: Fixture, error: Exception
) -> None:
    fx.namenodes.fail(NN1, "transition_to_active", error)
    with pytest.raises(ServiceFailedException) as e:
        fx.controller.become_active()
    assert str(e.value).startswith(f"Couldn't make {NN1} active: ")
    assert str(error) in str(e.value)
    assert fx.controller.service_state is HAServiceState.INITIALIZING
    attempt = fx.controller._last_attempt
    assert attempt is not None and not attempt.succeeded and str(error) in attempt.status
    assert all(p.closed for p in fx.namenodes.proxies)


def test_become_standby_transitions_the_local_namenode_by_zkfc(fx: Fixture) -> None:
    fx.controller.become_standby()
    assert fx.namenodes.calls == [("nn1", "transition_to_standby", True)]
    assert fx.controller.service_state is HAServiceState.STANDBY


def test_become_standby_that_fails_still_records_standby(fx: Fixture) -> None:
    # Hadoop's becomeStandby logs the failure: the health monitor's next poll sees the truth.
    fx.namenodes.fail(NN1, "transition_to_standby", IOException("timed out"))
    fx.controller.become_standby()
    assert fx.controller.service_state is HAServiceState.STANDBY


def test_fence_old_active_graceful_transition_is_enough(fx: Fixture) -> None:
    fx.controller.fence_old_active(NN2.info().to_bytes())
    assert fx.namenodes.calls == [("nn2", "transition_to_standby", True)]
    assert fx.namenodes.timeouts == [GRACEFUL_FENCE_TIMEOUT_S]
    assert fx.fencer.fenced == []


def test_fence_old_active_runs_the_fencer_when_graceful_fails(fx: Fixture) -> None:
    fx.namenodes.fail(NN2, "transition_to_standby", ConnectionRefusedError("refused"))
    fx.controller.fence_old_active(NN2.info().to_bytes())
    assert fx.namenodes.calls == [("nn2", "transition_to_standby", True)]
    assert fx.fencer.fenced == ["nn2"]


def test_fence_old_active_raises_when_the_fencer_fails(fx: Fixture) -> None:
    fx.namenodes.fail(NN2, "transition_to_standby", ConnectionRefusedError("refused"))
    fx.fencer.result = False
    with pytest.raises(ServiceFailedException, match=f"Unable to fence {NN2}"):
        fx.controller.fence_old_active(NN2.info().to_bytes())
    assert fx.fencer.fenced == ["nn2"]
    attempt = fx.controller._last_attempt
    assert attempt is not None and not attempt.succeeded
    assert attempt.status.startswith("Unable to fence old active")


def test_fence_old_active_of_an_unknown_node_raises_without_fencing(fx: Fixture) -> None:
    stranger = NNHAServiceTarget("mycluster", "nn9", ("10.0.0.9", 8020), ("10.0.0.9", 8019))
    with pytest.raises(IOException, match="not a NameNode of this nameservice"):
        fx.controller.fence_old_active(stranger.info().to_bytes())
    assert fx.namenodes.calls == [] and fx.fencer.fenced == []


# ---- cedeActive --------------------------------------------------------------------------------


def test_cede_active_steps_down_quits_and_bars_rejoining(fx: Fixture) -> None:
    fx.healthy()
    fx.controller.become_active()
    del fx.elector.calls[:]
    fx.namenodes.calls.clear()

    fx.controller.cede_active(10_000)
    assert fx.namenodes.calls == [("nn1", "transition_to_standby", True)]
    assert fx.elector.calls == [("quit", False)]  # standby for sure: nothing to fence
    assert fx.controller.service_state is HAServiceState.INITIALIZING
    fx.healthy()
    assert fx.elector.calls == [("quit", False)]  # barred

    fx.controller.cede_active(-1)  # lifts the bar at once
    assert fx.elector.calls == [("quit", False), ("join", NN1.info().to_bytes())]


def test_cede_active_that_cannot_make_the_local_node_standby_needs_fencing(fx: Fixture) -> None:
    fx.healthy()
    del fx.elector.calls[:]
    fx.namenodes.fail(NN1, "transition_to_standby", ConnectionRefusedError("refused"))
    fx.controller.cede_active(10_000)
    assert fx.elector.calls == [("quit", True)]


def test_cede_active_zero_lifts_the_bar_too(fx: Fixture) -> None:
    fx.healthy()
    fx.controller.cede_active(10_000)
    del fx.elector.calls[:]
    fx.controller.cede_active(0)
    assert fx.elector.calls == [("join", NN1.info().to_bytes())]


# ---- gracefulFailover --------------------------------------------------------------------------


def become_active_on_cede(fx: Fixture, active_nnid: str) -> list[BaseException]:
    """When the active's controller is asked to cede (ms > 0), the local elector wins: it
    calls become_active() from another thread, as the elector's worker would. Errors of
    that thread are collected in the returned list."""
    errors: list[BaseException] = []
    threads: list[threading.Thread] = []

    def win() -> None:
        try:
            fx.controller.become_active()
        except ServiceFailedException as e:
            errors.append(e)

    def on_cede(nnid: str, ms: int) -> None:
        if nnid == active_nnid and ms > 0:
            thread = threading.Thread(target=win, daemon=True)
            threads.append(thread)
            thread.start()

    fx.zkfcs.on_cede = on_cede
    return errors


def test_graceful_failover_refuses_when_not_healthy(fx: Fixture) -> None:
    fx.elector.active_data = NN2.info().to_bytes()
    with pytest.raises(ServiceFailedException, match="is not currently healthy"):
        fx.controller.graceful_failover()
    fx.controller._on_health_state(HealthState.SERVICE_UNHEALTHY)
    with pytest.raises(ServiceFailedException, match="is not currently healthy"):
        fx.controller.graceful_failover()
    assert fx.zkfcs.calls == []


def test_graceful_failover_with_no_active(fx: Fixture) -> None:
    fx.healthy()
    with pytest.raises(ServiceFailedException, match=r"^No other node is currently active\.$"):
        fx.controller.graceful_failover()
    assert fx.zkfcs.calls == []


def test_graceful_failover_when_we_are_active_does_nothing(fx: Fixture) -> None:
    fx.healthy()
    fx.elector.active_data = NN1.info().to_bytes()
    fx.controller.graceful_failover()
    assert fx.zkfcs.calls == [] and fx.namenodes.calls == []


def test_graceful_failover_success(fx: Fixture) -> None:
    fx.healthy()
    fx.elector.active_data = NN2.info().to_bytes()
    errors = become_active_on_cede(fx, "nn2")
    fx.controller.graceful_failover()
    assert errors == []
    assert fx.zkfcs.calls == [("nn2", CEDE_MS), ("nn2", -1)]
    assert fx.namenodes.calls == [("nn1", "transition_to_active", True)]
    assert fx.controller.service_state is HAServiceState.ACTIVE
    assert all(p.closed for p in fx.zkfcs.proxies)


def test_graceful_failover_when_the_new_active_fails(fx: Fixture) -> None:
    fx.healthy()
    fx.elector.active_data = NN2.info().to_bytes()
    fx.namenodes.fail(NN1, "transition_to_active", ServiceFailedException("not ready"))
    errors = become_active_on_cede(fx, "nn2")
    with pytest.raises(ServiceFailedException) as e:
        fx.controller.graceful_failover()
    assert str(e.value).startswith("Failed to become active. ")
    assert "not ready" in str(e.value)
    assert len(errors) == 1
    # The others may rejoin at once, whatever happened (a quick failback).
    assert fx.zkfcs.calls == [("nn2", CEDE_MS), ("nn2", -1)]
    assert all(p.closed for p in fx.zkfcs.proxies)


def test_graceful_failover_asks_the_active_last(fx3: Fixture) -> None:
    fx3.healthy()
    fx3.elector.active_data = NN2.info().to_bytes()
    become_active_on_cede(fx3, "nn2")
    fx3.controller.graceful_failover()
    assert fx3.zkfcs.calls[:2] == [("nn3", CEDE_MS), ("nn2", CEDE_MS)]
    assert sorted(fx3.zkfcs.calls[2:]) == [("nn2", -1), ("nn3", -1)]


def test_graceful_failover_fails_when_a_standby_controller_is_unreachable(
    fx3: Fixture,
) -> None:
    # Hadoop's cedeRemoteActive: a candidate that cannot be barred could take the lock.
    fx3.healthy()
    fx3.elector.active_data = NN2.info().to_bytes()

    def on_cede(nnid: str, ms: int) -> None:
        if nnid == "nn3":
            raise ConnectionRefusedError("nn3's controller is down")

    fx3.zkfcs.on_cede = on_cede
    with pytest.raises(ServiceFailedException, match="Unable to ask .*nn3.* to cede"):
        fx3.controller.graceful_failover()
    assert fx3.namenodes.calls == []
    assert all(p.closed for p in fx3.zkfcs.proxies)


def test_graceful_failover_fails_when_the_active_controller_is_unreachable(fx: Fixture) -> None:
    fx.healthy()
    fx.elector.active_data = NN2.info().to_bytes()

    def refuse(nnid: str, ms: int) -> None:
        raise ConnectionRefusedError("connection refused")

    fx.zkfcs.on_cede = refuse
    with pytest.raises(ServiceFailedException, match=f"Unable to ask {NN2} to cede"):
        fx.controller.graceful_failover()
    assert fx.namenodes.calls == []
    assert all(p.closed for p in fx.zkfcs.proxies)


def test_is_active_follows_the_elector(fx: Fixture) -> None:
    assert not fx.controller.is_active
    fx.elector.state = ElectorState.ACTIVE
    assert fx.controller.is_active
