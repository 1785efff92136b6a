"""ObserverReadProxy: reads from observer NameNodes, writes to the active, and reads that
always see the client's own writes (Hadoop's ObserverReadProxyProvider, HDFS-12943).

Chosen by ``dfs.client.failover.proxy.provider.<ns>`` =
``org.apache.hadoop.hdfs.server.namenode.ha.ObserverReadProxyProvider``
(:func:`~hadoop_qjm.namenode.ha.failover_proxy.namenode_proxy_from_conf`). Every proxy it
makes shares one :class:`~hadoop_qjm.ipc.alignment_context.ClientGSIContext`: each call
carries the highest state id the client has seen, each reply raises it.

* **Writes** and everything but the coordinated reads (and ``msync``) go through the
  failover proxy to the active, as with the configured provider.
* **Reads** (``get_file_info``, ``get_listing``, ``list_status``) go to an observer. The
  NameNodes' states are probed (ClientProtocol.getHAServiceState, each probe bounded by
  ``probe_timeout_s``, HDFS-17030) at the first read and whenever no observer is left;
  reads are spread round robin over the observers found. A read that an observer fails
  goes to the next one, and to the active when every observer failed it (Hadoop's
  ObserverReadInvocationHandler). An observer that is too far behind (RetriableException)
  stays in the rotation: the next read asks it again, so a lag costs reads only while it
  lasts. One that is no observer any more (StandbyException) or cannot be reached (a
  connection error or a timeout) is left out until the next probe, which comes at the
  next read once every observer is left out. With no observer found at all reads go to
  the active at once and the states are probed again only after
  ``dfs.client.failover.observer.probe.retry.period`` (10 min), so a cluster without
  observers costs nothing.
* **msync()** asks the active for its state id; the first read of a client msyncs first,
  as Hadoop's (so a new client reads at least what the active had when it started), and
  with ``dfs.client.failover.observer.auto-msync-period.<ns>`` ≥ 0 a read msyncs first
  whenever the active was last heard from longer ago than that (0: before every read;
  negative, the default: never again).

An observer holds a read until it has applied the client's state id (or refuses it):
whichever NameNode answers, a read is never older than the client's last write or msync.
The proxy may be shared by threads (one state id for all of them); each NameNode's
connection carries one call at a time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.ha.ha_service_protocol import HAServiceState
from hadoop_qjm.ipc.alignment_context import ClientGSIContext
from hadoop_qjm.namenode.ha.ha_util import NameNodeAddress
from hadoop_qjm.namenode.protocol.client import NameNodeProxy, list_status
from hadoop_qjm.namenode.protocol.exceptions import RetriableException, StandbyException
from hadoop_qjm.qjournal.protocol.exceptions import ConnectException, SocketTimeoutException

__all__ = ["PROBE_TIMEOUT_S", "READ_METHODS", "ObserverReadProxy", "observer_read_enabled"]

LOG = logging.getLogger(__name__)

#: The coordinated reads an observer serves.
READ_METHODS = frozenset({"get_file_info", "get_listing"})
#: How long one getHAServiceState probe may take (HDFS-17030).
PROBE_TIMEOUT_S = 1.0


def observer_read_enabled(conf: Any, nameservice: str) -> bool:
    """Whether ``dfs.client.failover.proxy.provider.<nameservice>`` names Hadoop's
    ObserverReadProxyProvider (its class name, with or without the package)."""
    value = conf.get_trimmed(f"{keys.DFS_CLIENT_FAILOVER_PROXY_PROVIDER_KEY_PREFIX}.{nameservice}")
    return bool(value) and value.rsplit(".", 1)[-1] == "ObserverReadProxyProvider"


def _skips_observer(error: BaseException) -> bool:
    """A read error after which another NameNode should be asked (not the answer)."""
    if isinstance(error, (StandbyException, RetriableException, ConnectException)):
        return True
    if isinstance(error, SocketTimeoutException):
        return True
    return isinstance(error, IOException) and isinstance(error.__cause__, OSError)


class ObserverReadProxy:
    """See the module docstring. ``active`` is the failover proxy for writes (made with
    this proxy's ``alignment``); ``proxy_factory(address, timeout_s)`` makes one
    NameNode's proxy (``timeout_s`` None: the default); ``clock`` is monotonic seconds."""

    def __init__(
        self,
        conf: Any,
        nameservice: str,
        active: Any,
        alignment: ClientGSIContext,
        *,
        proxy_factory: Callable[[NameNodeAddress, float | None], Any] | None = None,
        clock: Callable[[], float] = time.monotonic,
        probe_timeout_s: float = PROBE_TIMEOUT_S,
        **proxy_kwargs: Any,
    ) -> None:
        self.nameservice = nameservice
        self.active = active
        self.alignment = alignment
        self.namenodes: list[NameNodeAddress] = list(active.namenodes)
        msync_ms = conf.get_time_duration(
            f"{keys.DFS_CLIENT_FAILOVER_OBSERVER_AUTO_MSYNC_PERIOD_KEY_PREFIX}.{nameservice}",
            keys.DFS_CLIENT_FAILOVER_OBSERVER_AUTO_MSYNC_PERIOD_DEFAULT,
            "ms",
        )
        self.auto_msync_period_s = None if msync_ms < 0 else msync_ms / 1000.0
        self.probe_retry_period_s = (
            conf.get_time_duration(
                keys.DFS_CLIENT_FAILOVER_OBSERVER_PROBE_RETRY_PERIOD_KEY,
                keys.DFS_CLIENT_FAILOVER_OBSERVER_PROBE_RETRY_PERIOD_DEFAULT,
                "ms",
                minimum=0,
            )
            / 1000.0
        )
        self.probe_timeout_s = probe_timeout_s

        def default_factory(nn: NameNodeAddress, timeout_s: float | None) -> Any:
            kwargs = dict(proxy_kwargs)
            if timeout_s is not None:
                kwargs["timeout_s"] = timeout_s
            return NameNodeProxy(*nn.client_rpc, alignment=alignment, **kwargs)

        self._factory = proxy_factory or default_factory
        self._clock = clock
        self._lock = threading.Lock()
        self._proxies: dict[str, Any] = {}
        self._observers: list[NameNodeAddress] = []
        self._next_probe = float("-inf")
        self._turn = 0
        self._last_active_contact: float | None = None
        #: Reads answered by an observer, and by the active (no observer was usable).
        self.observer_reads = 0
        self.active_reads = 0

    def __repr__(self) -> str:
        return f"ObserverReadProxy({self.nameservice}: {','.join(n.nnid for n in self.namenodes)})"

    # ---- the active ------------------------------------------------------------------------------
    def _on_active(self, method: str, *args: Any, **kwargs: Any) -> Any:
        result = self.active.invoke(method, *args, **kwargs)
        self._last_active_contact = self._clock()
        return result

    def msync(self) -> int:
        """The active's state id, now this client's too (FileSystem.msync())."""
        state_id = self._on_active("msync")
        self.alignment.receive_response_state(state_id)
        return state_id

    def invoke(self, method: str, *args: Any, **kwargs: Any) -> Any:
        if method in READ_METHODS:
            return self._read(method, *args, **kwargs)
        if method == "msync":
            return self.msync()
        return self._on_active(method, *args, **kwargs)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        getattr(self.active, name)  # AttributeError for what the failover proxy lacks
        return lambda *args, **kwargs: self.invoke(name, *args, **kwargs)

    # ---- reads -----------------------------------------------------------------------------------
    def _auto_msync(self) -> None:
        last = self._last_active_contact
        if last is None:
            self.msync()  # the first read: at least what the active has now
            return
        period = self.auto_msync_period_s
        if period is not None and self._clock() - last >= period:
            self.msync()

    def _proxy(self, nn: NameNodeAddress) -> Any:
        with self._lock:
            proxy = self._proxies.get(nn.nnid)
            if proxy is None:
                proxy = self._proxies[nn.nnid] = self._factory(nn, None)
            return proxy

    def _probe(self) -> None:
        """Ask every NameNode its state, each within the probe timeout."""
        found = []
        for nn in self.namenodes:
            proxy = self._factory(nn, self.probe_timeout_s)
            try:
                if proxy.get_ha_service_state() is HAServiceState.OBSERVER:
                    found.append(nn)
            except Exception as e:  # noqa: BLE001 - an unreachable NameNode is no observer
                LOG.debug("Probing %s failed: %s", nn.nnid, e)
            finally:
                proxy.close()
        with self._lock:
            self._observers = found
            self._next_probe = self._clock() + self.probe_retry_period_s
        LOG.info("Observers of %s: %s", self.nameservice, ",".join(n.nnid for n in found) or "none")

    def _observer_order(self) -> list[NameNodeAddress]:
        with self._lock:
            stale = not self._observers and self._clock() >= self._next_probe
        if stale:
            self._probe()
        with self._lock:
            observers = list(self._observers)
            self._turn += 1
            start = self._turn % len(observers) if observers else 0
        return observers[start:] + observers[:start]

    def _skip(self, nn: NameNodeAddress, error: BaseException) -> None:
        if isinstance(error, RetriableException):
            LOG.debug("Observer %s is behind; the next read asks it again: %s", nn.nnid, error)
            return
        LOG.info("Observer %s left out until the next probe: %s", nn.nnid, error)
        with self._lock:
            if nn in self._observers:
                self._observers.remove(nn)
            if not self._observers:
                self._next_probe = float("-inf")  # they failed, so look again (Hadoop's)

    def _read(self, method: str, *args: Any, **kwargs: Any) -> Any:
        self._auto_msync()
        for nn in self._observer_order():
            try:
                result = getattr(self._proxy(nn), method)(*args, **kwargs)
            except Exception as error:
                if not _skips_observer(error):
                    raise  # the answer (FileNotFoundException, AccessControlException, ...)
                self._skip(nn, error)
                continue
            with self._lock:
                self.observer_reads += 1
            return result
        result = self._on_active(method, *args, **kwargs)
        with self._lock:
            self.active_reads += 1
        return result

    def list_status(self, src: str, max_batches: int = 1 << 20) -> Iterator[Any]:
        """Every entry of the listing of ``src``, batch after batch."""
        return list_status(
            lambda path, start: self.invoke("get_listing", path, start), src, max_batches
        )

    def close(self) -> None:
        with self._lock:
            proxies, self._proxies = list(self._proxies.values()), {}
        for proxy in proxies:
            proxy.close()
        self.active.close()

    def __enter__(self) -> ObserverReadProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
