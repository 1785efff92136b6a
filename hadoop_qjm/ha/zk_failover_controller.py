"""ZKFailoverController: automatic failover for one NameNode (Hadoop's ZKFailoverController).

One controller runs beside each NameNode of an HA nameservice::

    HealthMonitor ──health──▶ ZKFailoverController ──join/quit──▶ ActiveStandbyElector ──▶ ZooKeeper
          │                          │  ▲                                 │
          └─getServiceStatus,        │  └──become_active / become_standby / fence_old_active
            monitorHealth──▶ NameNode ◀──transitionToActive/Standby (REQUEST_BY_ZKFC)

* A healthy NameNode's controller is a candidate; an unhealthy or unresponsive one's
  leaves the election, marking that it must be fenced (:func:`~hadoop_qjm.ha.
  election_rules.electability`).
* The winner of the lock fences the last active the breadcrumb names: first gracefully
  (``transitionToStandby``, ``ha.failover-controller.graceful-fence.rpc-timeout.ms``),
  else with ``dfs.ha.fencing.methods`` in order (:mod:`hadoop_qjm.ha.node_fencer`); if
  nothing fences it, this NameNode does not become active. Then ``transitionToActive``
  (``ha.failover-controller.new-active.rpc-timeout.ms``): the NameNode's new epoch on the
  JournalNodes is the real fence — an old active that comes back can never write again.
* ZKFCProtocol (``dfs.ha.zkfc.port``): ``cedeActive`` (step down and stay out of the
  election for a while) and ``gracefulFailover`` (make *this* NameNode active: the current
  active's controller is asked to cede, then this one wins the lock). ``haadmin -failover``
  with automatic failover on calls the second.

Every election step runs under one lock (Hadoop's ``synchronized (elector)``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from hadoop_qjm.common.exceptions import HadoopException, one_line_message
from hadoop_qjm.conf import config_schema
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.ha.active_standby_elector import ActiveStandbyElector, ElectorState
from hadoop_qjm.ha.election_rules import (
    ActiveNodeInfo,
    ElectionAction,
    HealthState,
    StateCheck,
    check_reported_state,
    electability,
    parse_acls,
    parse_auths,
    parse_zk_quorum,
    resolve_conf_indirection,
)
from hadoop_qjm.ha.exceptions import ServiceFailedException
from hadoop_qjm.ha.ha_service_protocol import HAServiceState
from hadoop_qjm.ha.health_monitor import HealthMonitor, HealthMonitorSettings

__all__ = ["ServiceTarget", "Timer", "ZKFCSettings", "ZKFailoverController", "daemon_timer"]

LOG = logging.getLogger(__name__)

#: How long a node whose state changed behind the controller's back stays out (Hadoop: 1 s).
_BAD_STATE_DELAY_NS = 1_000_000_000


class ServiceTarget(Protocol):
    """One NameNode as the controller sees it (NNHAServiceTarget)."""

    nnid: str
    address: tuple[str, int]
    zkfc_address: tuple[str, int]

    def info(self) -> ActiveNodeInfo: ...


@dataclass(frozen=True)
class ZKFCSettings:
    """Everything the controller reads from the configuration, read once and checked."""

    quorum: str
    session_timeout_s: float
    parent: str
    acl_text: str
    auth_text: str | None
    op_retries: int
    graceful_fence_timeout_s: float
    new_active_timeout_s: float
    health: HealthMonitorSettings

    @classmethod
    def from_conf(cls, conf: Any, scope: str) -> ZKFCSettings:
        """``scope`` is the nameservice: the parent znode is ``<parent-znode>/<scope>``."""

        def read_file(key: str) -> Callable[[str], str]:
            def read(path: str) -> str:
                try:
                    return Path(path).read_text()
                except OSError as e:
                    raise conf.invalid_value(key, f"@FILE naming a readable file ({e})") from None

            return read

        def positive_ms(key: str, default: int) -> float:
            return conf.get_time_duration(key, default, "ms", minimum=1) / 1000

        quorum = parse_zk_quorum(conf.get_trimmed(keys.HA_ZK_QUORUM_KEY))
        parent = (conf.get_trimmed(keys.HA_ZK_PARENT_ZNODE_KEY) or "").rstrip("/")
        if not parent.startswith("/"):
            raise conf.invalid_value(keys.HA_ZK_PARENT_ZNODE_KEY, "an absolute znode path")
        acl_text = resolve_conf_indirection(
            conf.get_trimmed(keys.HA_ZK_ACL_KEY, keys.HA_ZK_ACL_DEFAULT),
            read_file(keys.HA_ZK_ACL_KEY),
        )
        auth_text = resolve_conf_indirection(
            conf.get_trimmed(keys.HA_ZK_AUTH_KEY), read_file(keys.HA_ZK_AUTH_KEY)
        )
        parse_acls(acl_text)  # errors now, one line naming the key
        parse_auths(auth_text)
        # Every other key the schema says a ZKFC reads (conf/*-default.xml), so a typo
        # stops the start, not the first failover.
        config_schema.validate(conf, "zkfc")
        return cls(
            quorum=quorum,
            session_timeout_s=positive_ms(
                keys.HA_ZK_SESSION_TIMEOUT_KEY, keys.HA_ZK_SESSION_TIMEOUT_DEFAULT
            ),
            parent=f"{parent}/{scope}",
            acl_text=acl_text or "",
            auth_text=auth_text,
            op_retries=conf.get_int(keys.HA_ZK_OP_RETRIES_KEY, keys.HA_ZK_OP_RETRIES_DEFAULT),
            graceful_fence_timeout_s=positive_ms(
                keys.HA_FC_GRACEFUL_FENCE_TIMEOUT_KEY, keys.HA_FC_GRACEFUL_FENCE_TIMEOUT_DEFAULT
            ),
            new_active_timeout_s=positive_ms(
                keys.HA_FC_NEW_ACTIVE_TIMEOUT_KEY, keys.HA_FC_NEW_ACTIVE_TIMEOUT_DEFAULT
            ),
            health=HealthMonitorSettings.from_conf(conf),
        )

    def new_elector(
        self,
        callbacks: Any,
        lock: threading.RLock | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> ActiveStandbyElector:
        return ActiveStandbyElector(
            self.quorum,
            self.session_timeout_s,
            self.parent,
            parse_acls(self.acl_text),
            parse_auths(self.auth_text),
            callbacks,
            op_retries=self.op_retries,
            lock=lock,
            clock=clock,
        )


class Timer(Protocol):
    """What the controller needs of a threading.Timer."""

    def start(self) -> None: ...
    def cancel(self) -> None: ...


def daemon_timer(delay_s: float, function: Callable[[], None]) -> Timer:
    """A threading.Timer that does not keep the process alive (the default ``timer``)."""
    timer = threading.Timer(delay_s, function)
    timer.daemon = True
    return timer


@dataclass(frozen=True)
class _ActiveAttempt:
    """ActiveAttemptRecord: the outcome of this node's last try to become active."""

    at_ns: int
    succeeded: bool
    status: str


class ZKFailoverController:
    """See the module docstring.

    ``local`` is this controller's NameNode, ``others`` the rest of the nameservice;
    ``proxy_factory(address, timeout_s)`` makes an HAServiceProtocol client (a
    NameNodeProxy), ``zkfc_proxy_factory(address, timeout_s)`` a ZKFCProtocol client;
    ``fence(target) -> bool`` runs the fencing methods; ``data_to_target(data)`` maps the
    breadcrumb's ActiveNodeInfo to one of the targets (raising if it names none).
    ``clock`` (monotonic seconds) and ``timer(delay_s, function)`` (an unstarted
    threading.Timer) are the controller's time, passed to its elector too: a test drives
    the cede and bad-state bars with fakes instead of sleeping.
    """

    def __init__(
        self,
        settings: ZKFCSettings,
        local: ServiceTarget,
        others: Sequence[ServiceTarget],
        *,
        proxy_factory: Callable[[tuple[str, int], float], Any],
        zkfc_proxy_factory: Callable[[tuple[str, int], float], Any],
        fence: Callable[[ServiceTarget], bool],
        data_to_target: Callable[[bytes], ServiceTarget],
        clock: Callable[[], float] = time.monotonic,
        timer: Callable[[float, Callable[[], None]], Timer] = daemon_timer,
    ) -> None:
        self.settings = settings
        self.local = local
        self.others = list(others)
        self._proxy_factory = proxy_factory
        self._zkfc_proxy_factory = zkfc_proxy_factory
        self._fence = fence
        self._data_to_target = data_to_target
        self._clock = clock
        self._timer = timer
        self.lock = threading.RLock()
        self._attempt_cond = threading.Condition(self.lock)
        self.elector = settings.new_elector(self, self.lock, clock)
        self.health_monitor = HealthMonitor(
            str(local),
            lambda timeout_s: proxy_factory(local.address, timeout_s),
            settings.health,
            on_state=self._on_health_state,
            on_status=self._on_service_status,
        )
        self.last_health = HealthState.INITIALIZING
        #: What the controller made its NameNode: INITIALIZING, ACTIVE or STANDBY (or OBSERVER:
        #: it found it one, and stays out of the election).
        self.service_state = HAServiceState.INITIALIZING
        self._delay_joining_until_ns = 0
        self._quit_on_bad_state = False
        self._mismatches = 0
        self._last_attempt: _ActiveAttempt | None = None
        self._fatal: str | None = None
        self._done = threading.Event()
        self._recheck_timer: Timer | None = None

    # ---- lifecycle ---------------------------------------------------------------------------
    def start(self) -> None:
        self.health_monitor.start()

    def wait(self, timeout_s: float | None = None) -> str | None:
        """Block until :meth:`stop` or a fatal error; the fatal error's message, if any."""
        self._done.wait(timeout_s)
        return self._fatal

    def interrupt(self) -> None:
        """Wake :meth:`wait` (safe in a signal handler); :meth:`stop` does the rest."""
        self._done.set()

    def stop(self) -> None:
        """Stop monitoring and leave the election. Fencing is needed: the NameNode stays in
        whatever state it is (Hadoop's ZKFC shutdown)."""
        self._done.set()
        timer = self._recheck_timer
        if timer is not None:  # without the lock: an election step may hold it
            timer.cancel()
        self.health_monitor.shutdown()
        self.elector.terminate()

    @property
    def fatal_error(self) -> str | None:
        return self._fatal

    # ---- health ------------------------------------------------------------------------------
    def _on_health_state(self, state: HealthState) -> None:
        with self.lock:
            self.last_health = state
            self._recheck_electability()

    def _on_service_status(self, status: Any) -> None:
        reported = status.state
        with self.lock:
            if self.service_state is HAServiceState.INITIALIZING:
                if reported is HAServiceState.OBSERVER:
                    # Not yet a candidate (or one the elector has told nothing): an
                    # observer is none, so it never joins (HDFS-14130).
                    self._enter_observer(need_fence=False)
                elif self._quit_on_bad_state:
                    self._recheck_electability()
                return
            check, self._mismatches = check_reported_state(
                self.service_state, reported, self._mismatches
            )
            if check is StateCheck.OBSERVER:
                self._enter_observer(need_fence=True)
                return
            if check is not StateCheck.QUIT:
                return
            LOG.error(
                "Local service %s has changed the serviceState to %s. Expected was %s. "
                "Quitting election marking fencing necessary.",
                self.local,
                reported,
                self.service_state,
            )
            self._delay_joining_until_ns = self._now_ns() + _BAD_STATE_DELAY_NS
            self.elector.quit_election(need_fence=True)
            self._quit_on_bad_state = True
            self.service_state = HAServiceState.INITIALIZING

    def _enter_observer(self, need_fence: bool) -> None:
        """The local NameNode is an observer: out of the election while it is one. When it
        goes back to standby, the report differs from OBSERVER twice and the controller
        rejoins after the bad-state bar, as after any state changed behind its back."""
        LOG.info(
            "Local service %s is in observer state: it does not participate in active "
            "master election",
            self.local,
        )
        if self.elector.is_in_election:
            self.elector.quit_election(need_fence=need_fence)
        self.service_state = HAServiceState.OBSERVER
        self._mismatches = 0

    def _now_ns(self) -> int:
        return int(self._clock() * 1_000_000_000)

    def _recheck_electability(self) -> None:
        now = self._now_ns()
        action = electability(
            self.last_health,
            now,
            self._delay_joining_until_ns,
            observer=self.service_state is HAServiceState.OBSERVER,
        )
        if action is ElectionAction.WAIT:
            remaining_s = (self._delay_joining_until_ns - now) / 1e9
            if self.last_health is HealthState.SERVICE_HEALTHY:
                LOG.info(
                    "Would have joined master election, but this node is prohibited from "
                    "doing so for %d more ms",
                    remaining_s * 1000,
                )
            self._schedule_recheck(remaining_s)
        elif action is ElectionAction.STAY_OUT:
            pass
        elif action is ElectionAction.JOIN:
            self.elector.join_election(self.local.info().to_bytes())
            self._quit_on_bad_state = False
        elif action is ElectionAction.QUIT_NO_FENCE:
            LOG.info("Ensuring that %s does not participate in active master election", self.local)
            self.elector.quit_election(need_fence=False)
            self.service_state = HAServiceState.INITIALIZING
        elif action is ElectionAction.QUIT_FENCE:
            LOG.info(
                "Quitting master election for %s and marking that fencing is necessary",
                self.local,
            )
            self.elector.quit_election(need_fence=True)
            self.service_state = HAServiceState.INITIALIZING
        else:
            self.notify_fatal_error("Health monitor failed!")

    def _schedule_recheck(self, delay_s: float) -> None:
        if self._recheck_timer is not None:
            self._recheck_timer.cancel()

        def recheck() -> None:
            with self.lock:
                if not self._done.is_set():
                    self._recheck_electability()

        self._recheck_timer = self._timer(max(delay_s, 0.0), recheck)
        self._recheck_timer.start()

    # ---- the elector's callbacks (called under self.lock) ------------------------------------
    def become_active(self) -> None:
        LOG.info("ZK Election indicated that %s should become active", self.local)
        try:
            proxy = self._proxy_factory(self.local.address, self.settings.new_active_timeout_s)
            try:
                proxy.transition_to_active(by_zkfc=True)
            finally:
                proxy.close()
        except Exception as e:  # noqa: BLE001 - every failure is a failed attempt (Hadoop: Throwable)
            message = f"Couldn't make {self.local} active: {one_line_message(e)}"
            LOG.error(message)
            self._record_attempt(False, message)
            raise ServiceFailedException(message) from e
        message = f"Successfully transitioned {self.local} to active state"
        LOG.info(message)
        self.service_state = HAServiceState.ACTIVE
        self._mismatches = 0
        self._record_attempt(True, message)

    def become_standby(self) -> None:
        LOG.info("ZK Election indicated that %s should become standby", self.local)
        if self._transition_to_standby(self.local):
            LOG.info("Successfully transitioned %s to standby state", self.local)
        self.service_state = HAServiceState.STANDBY
        self._mismatches = 0

    def enter_neutral_mode(self) -> None:
        # Nothing changes: without ZooKeeper nobody knows who holds the lock, and the
        # journal's epochs fence whoever is wrong (see the elector's module docstring).
        LOG.warning("Lost contact with ZooKeeper: %s keeps its state (neutral mode)", self.local)

    def notify_fatal_error(self, message: str) -> None:
        LOG.error("Fatal error occurred: %s", message)
        self._fatal = message
        self._done.set()

    def fence_old_active(self, data: bytes) -> None:
        try:
            target = self._data_to_target(data)
            LOG.info("Should fence: %s", target)
            if self._transition_to_standby(target, graceful_fence=True):
                LOG.info("Successfully transitioned %s to standby state without fencing", target)
                return
            if not self._fence(target):
                raise ServiceFailedException(f"Unable to fence {target}")
        except Exception as e:
            self._record_attempt(False, f"Unable to fence old active: {one_line_message(e)}")
            raise

    def _transition_to_standby(self, target: ServiceTarget, graceful_fence: bool = False) -> bool:
        """transitionToStandby on ``target`` within the graceful-fence timeout; whether it
        worked (FailoverController.tryGracefulFence)."""
        try:
            proxy = self._proxy_factory(target.address, self.settings.graceful_fence_timeout_s)
            try:
                proxy.transition_to_standby(by_zkfc=True)
            finally:
                proxy.close()
            return True
        except (HadoopException, OSError) as e:
            what = "gracefully make" if graceful_fence else "make"
            LOG.warning("Unable to %s %s standby (%s)", what, target, one_line_message(e))
            return False

    def _record_attempt(self, succeeded: bool, status: str) -> None:
        with self._attempt_cond:
            self._last_attempt = _ActiveAttempt(self._now_ns(), succeeded, status)
            self._attempt_cond.notify_all()

    # ---- ZKFCProtocol ------------------------------------------------------------------------
    def cede_active(self, millis_to_cede: int) -> None:
        """Step down (gracefully if possible) and stay out of the election for
        ``millis_to_cede``; a value ≤ 0 lifts the bar at once (ZKFailoverController.doCedeActive)."""
        with self.lock:
            if millis_to_cede <= 0:
                self._delay_joining_until_ns = 0
                self._recheck_electability()
                return
            LOG.info("Requested to cede active role for %d ms", millis_to_cede)
            need_fence = not self._transition_to_standby(self.local)
            if need_fence:
                LOG.warning("Quitting election but indicating that fencing is necessary")
            else:
                LOG.info("Successfully ensured local node is in standby mode")
            self._delay_joining_until_ns = self._now_ns() + millis_to_cede * 1_000_000
            self.elector.quit_election(need_fence)
            self.service_state = HAServiceState.INITIALIZING
            self._recheck_electability()

    def graceful_failover(self) -> None:
        """Make the local NameNode active (ZKFailoverController.doGracefulFailover)."""
        timeout_ms = int(self.settings.graceful_fence_timeout_s * 1000) * 2
        with self.lock:
            if self.last_health is not HealthState.SERVICE_HEALTHY:
                raise ServiceFailedException(
                    f"{self.local} is not currently healthy. Cannot be failed over."
                )
            if self.service_state is HAServiceState.OBSERVER:
                raise ServiceFailedException(
                    f"{self.local} is in observer state. Cannot be failover target"
                )
        data = self.elector.get_active_data()
        if data is None:
            raise ServiceFailedException("No other node is currently active.")
        old_active = self._data_to_target(data)
        if old_active.address == self.local.address:
            LOG.info("Local node %s is already active. No need to failover.", self.local)
            return
        started_ns = self._now_ns()
        ceded = []
        # Every other candidate first, the active last: nobody but us takes the lock.
        for remote in sorted(self.others, key=lambda t: t.address == old_active.address):
            LOG.info("Asking %s to cede its active state for %d ms", remote, timeout_ms)
            proxy = self._zkfc_proxy_factory(remote.zkfc_address, timeout_ms / 1000)
            try:
                proxy.cede_active(timeout_ms)
            except (HadoopException, OSError) as e:
                proxy.close()
                # Hadoop's cedeRemoteActive: a node we cannot bar could take the lock.
                for other in ceded:
                    other.close()
                raise ServiceFailedException(
                    f"Unable to ask {remote} to cede: {one_line_message(e)}"
                ) from e
            ceded.append(proxy)
        try:
            attempt = self._wait_for_active_attempt(started_ns, timeout_ms / 1000 + 60)
            # Whatever happened, the others may rejoin now: a quick failback if we crash, and
            # (unlike Hadoop, which leaves them barred until the cede expires when no attempt
            # was made) no window with nobody allowed to be active.
            for proxy in ceded:
                try:
                    proxy.cede_active(-1)
                except (HadoopException, OSError) as e:
                    LOG.warning("Unable to let %s rejoin the election: %s", proxy, e)
        finally:
            for proxy in ceded:
                proxy.close()
        if attempt is None:
            with self.lock:
                if self.last_health is not HealthState.SERVICE_HEALTHY:
                    raise ServiceFailedException(
                        "Unable to become active. Service became unhealthy while trying to failover."
                    )
            raise ServiceFailedException(
                "Unable to become active. Local node did not get an opportunity to do so from "
                "ZooKeeper, or the local node took too long to transition to active."
            )
        if not attempt.succeeded:
            raise ServiceFailedException(f"Failed to become active. {attempt.status}")
        LOG.info("Successfully became active. %s", attempt.status)

    def _wait_for_active_attempt(self, since_ns: int, timeout_s: float) -> _ActiveAttempt | None:
        deadline = self._clock() + timeout_s
        with self._attempt_cond:
            while self._last_attempt is None or self._last_attempt.at_ns < since_ns:
                remaining = deadline - self._clock()
                if remaining <= 0 or self._done.is_set():
                    return None
                self._attempt_cond.wait(min(remaining, 1.0))
            return self._last_attempt

    @property
    def is_active(self) -> bool:
        with self.lock:
            return self.elector.state == ElectorState.ACTIVE
