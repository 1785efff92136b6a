"""HealthMonitor: one thread polling the local NameNode (Hadoop's org.apache.hadoop.ha.HealthMonitor).

Every ``ha.health-monitor.check-interval.ms`` (1000) it asks the NameNode for
``getServiceStatus`` and ``monitorHealth``, each bounded by
``ha.health-monitor.rpc-timeout.ms`` (45000):

==========================  =================================================================
state                       when
==========================  =================================================================
INITIALIZING                before the first answer
SERVICE_HEALTHY             both calls answered, ``monitorHealth`` passed
SERVICE_UNHEALTHY           ``monitorHealth`` raised HealthCheckFailedException (no quorum of
                            JournalNodes, no space in a name directory, not running, …)
SERVICE_NOT_RESPONDING      a transport error: refused, reset, or no reply within the timeout
                            (a dead or frozen NameNode); the connection is dropped, and after
                            ``ha.health-monitor.sleep-after-disconnect.ms`` it reconnects,
                            every ``ha.health-monitor.connect-retry-interval.ms``
HEALTH_MONITOR_FAILED       the thread itself died (a bug): the controller stops
==========================  =================================================================

``on_state(state)`` is called on every change of state, ``on_status(status)`` after every
``getServiceStatus`` answer (the controller checks the reported HA state against the one
it made). Both are called from the monitor's thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hadoop_qjm.common.exceptions import HadoopException, one_line_message
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.ha.election_rules import HealthState
from hadoop_qjm.ha.exceptions import HealthCheckFailedException
from hadoop_qjm.qjournal.protocol.exceptions import ConnectException

__all__ = ["HealthMonitor", "HealthMonitorSettings"]

LOG = logging.getLogger(__name__)

#: ``factory(timeout_s)`` -> a proxy with ``get_service_status()``, ``monitor_health()``,
#: ``close()`` (a NameNodeProxy to the local NameNode).
ProxyFactory = Callable[[float], Any]


@dataclass(frozen=True)
class HealthMonitorSettings:
    """The monitor's timings, in seconds, read once from the configuration."""

    check_interval_s: float = keys.HA_HM_CHECK_INTERVAL_DEFAULT / 1000
    connect_retry_interval_s: float = keys.HA_HM_CONNECT_RETRY_INTERVAL_DEFAULT / 1000
    sleep_after_disconnect_s: float = keys.HA_HM_SLEEP_AFTER_DISCONNECT_DEFAULT / 1000
    rpc_timeout_s: float = keys.HA_HM_RPC_TIMEOUT_DEFAULT / 1000

    @classmethod
    def from_conf(cls, conf: Any) -> HealthMonitorSettings:
        def seconds(key: str, default: int) -> float:
            return conf.get_time_duration(key, default, "ms", minimum=1) / 1000

        return cls(
            check_interval_s=seconds(
                keys.HA_HM_CHECK_INTERVAL_KEY, keys.HA_HM_CHECK_INTERVAL_DEFAULT
            ),
            connect_retry_interval_s=seconds(
                keys.HA_HM_CONNECT_RETRY_INTERVAL_KEY, keys.HA_HM_CONNECT_RETRY_INTERVAL_DEFAULT
            ),
            sleep_after_disconnect_s=seconds(
                keys.HA_HM_SLEEP_AFTER_DISCONNECT_KEY, keys.HA_HM_SLEEP_AFTER_DISCONNECT_DEFAULT
            ),
            rpc_timeout_s=seconds(keys.HA_HM_RPC_TIMEOUT_KEY, keys.HA_HM_RPC_TIMEOUT_DEFAULT),
        )


class HealthMonitor:
    """See the module docstring. ``target`` names the NameNode in logs; ``wait(seconds)``
    is how it waits between polls (default: until :meth:`shutdown`, at most that long)."""

    def __init__(
        self,
        target: str,
        proxy_factory: ProxyFactory,
        settings: HealthMonitorSettings,
        *,
        on_state: Callable[[HealthState], None],
        on_status: Callable[[Any], None] | None = None,
        wait: Callable[[float], object] | None = None,
    ) -> None:
        self.target = target
        self._proxy_factory = proxy_factory
        self.settings = settings
        self._on_state = on_state
        self._on_status = on_status
        self._state = HealthState.INITIALIZING
        self._lock = threading.Lock()
        self._stop = threading.Event()
        #: Waits between polls, ended early by :meth:`shutdown` (a test passes its own).
        self._wait = wait or self._stop.wait
        self._thread = threading.Thread(target=self._run, name="HealthMonitor", daemon=True)

    @property
    def state(self) -> HealthState:
        with self._lock:
            return self._state

    def start(self) -> None:
        self._thread.start()

    def shutdown(self, timeout_s: float = 60.0) -> None:
        """Stop polling and join the thread (a call in flight ends within the RPC timeout)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _enter(self, state: HealthState) -> None:
        with self._lock:
            if state is self._state:
                return
            previous, self._state = self._state, state
        LOG.info("Entering state %s (was %s) for %s", state.value, previous.value, self.target)
        self._on_state(state)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                self._check_until_disconnected()
        except BaseException:  # noqa: BLE001 - Hadoop's MonitorDaemon: the monitor failed
            LOG.exception("Health monitor failed")
            self._enter(HealthState.HEALTH_MONITOR_FAILED)

    def _check_until_disconnected(self) -> None:
        proxy = self._proxy_factory(self.settings.rpc_timeout_s)
        try:
            while not self._stop.is_set():
                try:
                    status = proxy.get_service_status()
                    if self._on_status is not None:
                        self._on_status(status)
                    proxy.monitor_health()
                except HealthCheckFailedException as e:
                    LOG.warning("Service health check failed for %s: %s", self.target, e)
                    self._enter(HealthState.SERVICE_UNHEALTHY)
                except (HadoopException, OSError) as e:
                    LOG.warning(
                        "Transport-level exception trying to monitor health of %s: %s",
                        self.target,
                        one_line_message(e),
                    )
                    self._enter(HealthState.SERVICE_NOT_RESPONDING)
                    # Never connected: retry the connection; connected and lost: let the
                    # service settle first (Hadoop's two waits).
                    never_connected = isinstance(e, ConnectException)
                    self._wait(
                        self.settings.connect_retry_interval_s
                        if never_connected
                        else self.settings.sleep_after_disconnect_s
                    )
                    return
                else:
                    self._enter(HealthState.SERVICE_HEALTHY)
                self._wait(self.settings.check_interval_s)
        finally:
            proxy.close()
