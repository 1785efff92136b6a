"""FailoverNameNodeProxy: a client of an HA nameservice that finds its active NameNode.

Hadoop's ConfiguredFailoverProxyProvider plus RetryPolicies.failoverOnNetworkException:
the NameNodes are ``dfs.ha.namenodes.<ns>`` in order; a call goes to the current one, and
on some errors the proxy *fails over* — moves to the next NameNode, round robin — and
calls again. Which errors (:func:`failover_decision`, the rule as a pure function):

* ``StandbyException`` — that NameNode is not active and did not execute the call: fail
  over, whatever the method;
* ``ConnectException`` — the call was never sent: fail over;
* the connection lost after the call was sent, or no reply in time
  (``SocketTimeoutException``) — nobody knows whether it ran: fail over only for an
  *idempotent* method (Hadoop's ``@Idempotent``: :data:`IDEMPOTENT_METHODS`); the others
  (``@AtMostOnce`` in Hadoop: create, delete, rename, rollEdits, saveNamespace, …) raise
  the error, since this NameNode keeps no retry cache to make a repeat harmless;
* ``AccessControlException`` — raised, never retried, even when the connection failed
  (a plain client of NameNodes that speak TLS: every NameNode would refuse it alike);
* anything else (FileNotFoundException, …) is the answer and is raised.

At most ``dfs.client.failover.max.attempts`` (15) failovers per call, then the last
error is raised — when every NameNode answered StandbyException in the last round, as a
StandbyException whose message adds that none is active and how to make one
(:func:`none_active_error`: after both NameNodes restart, neither is). The first failover of a call is immediate; after each *full round* (every
NameNode tried once more) the proxy sleeps ``min(base * 2**round, max) * U[0.5, 1.5)``
(``dfs.client.failover.sleep.base.millis`` 500, ``.max.millis`` 15000; Hadoop's
randomized exponential backoff). With two NameNodes this sleeps where Hadoop does on the
second failover; Hadoop also sleeps on later failovers inside a round. The NameNode that
answered last is where the next call starts. The clock's ``sleep`` and the RNG are
parameters.

``dfs.client.failover.proxy.provider.<ns>`` names Hadoop's provider class: Hadoop's
ObserverReadProxyProvider gets the observer read proxy
(:mod:`~hadoop_qjm.namenode.ha.observer_read_proxy`, on top of this one); any other value
(or none) this configured provider.

Threads: the proxy may be shared — the current NameNode is kept under a lock, and a
failover by one thread is not repeated by another that saw the same failure — but each
NameNode's connection carries one call at a time (NameNodeProxy), so give each busy
thread its own FailoverNameNodeProxy.

:func:`namenode_proxy_from_conf` is how the tools get their NameNode: a failover proxy
for ``fs.defaultFS=hdfs://<nameservice>`` of an HA nameservice, else a plain
:class:`~hadoop_qjm.namenode.protocol.client.NameNodeProxy`.
"""

from __future__ import annotations

import enum
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

from hadoop_qjm.common.exceptions import (
    AccessControlException,
    ConfigurationError,
    IllegalArgumentException,
    IOException,
)
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.ipc.alignment_context import ClientGSIContext
from hadoop_qjm.namenode.ha.ha_util import NameNodeAddress, get_namenode_ids, ha_namenodes
from hadoop_qjm.namenode.protocol.client import (
    NameNodeProxy,
    client_socket_factory,
    list_status,
    parse_hdfs_uri,
)
from hadoop_qjm.namenode.protocol.exceptions import StandbyException
from hadoop_qjm.qjournal.protocol.exceptions import ConnectException, SocketTimeoutException

__all__ = [
    "FAILOVER_METHODS",
    "IDEMPOTENT_METHODS",
    "FailoverDecision",
    "FailoverNameNodeProxy",
    "failover_decision",
    "failover_sleep_s",
    "ha_nameservice_of_uri",
    "namenode_proxy_for_uri",
    "namenode_proxy_from_conf",
    "nameservice_proxy",
    "none_active_error",
]

LOG = logging.getLogger(__name__)

#: NameNodeProxy methods Hadoop marks ``@Idempotent`` (ClientProtocol, NamenodeProtocol).
IDEMPOTENT_METHODS = frozenset(
    {
        "mkdirs",
        "get_file_info",
        "get_listing",
        "set_permission",
        "set_owner",
        "set_times",
        "version_request",
        "get_most_recent_checkpoint_txid",
        "get_transaction_id",
        "msync",
        "rolling_upgrade",
    }
)
#: Every method the failover proxy offers: ClientProtocol and NamenodeProtocol. The
#: HAServiceProtocol methods address one NameNode (``haadmin``), never "whichever is active".
FAILOVER_METHODS = IDEMPOTENT_METHODS | {
    "create",
    "delete",
    "rename",
    "rename2",
    "roll_edits",
    "save_namespace",
    "roll_edit_log",
    "reconfigure_shared_edits",
}


class FailoverDecision(enum.Enum):
    FAIL = "fail"
    FAILOVER_AND_RETRY = "failover and retry"


def _lost_after_send(error: BaseException) -> bool:
    """The call went out but its reply did not come back: a timeout, or the connection
    failed mid-call (NameNodeProxy's transport raises IOException from the OSError; an
    error the NameNode sent back has no such cause)."""
    if isinstance(error, SocketTimeoutException):
        return True
    if isinstance(error, IOException):
        return isinstance(error.__cause__, OSError)
    return isinstance(error, OSError)


def failover_decision(error: BaseException, idempotent: bool) -> FailoverDecision:
    """What to do after ``error`` (FailoverOnNetworkExceptionRetry.shouldRetry, without
    the count: see the module docstring)."""
    if isinstance(error, AccessControlException):
        return FailoverDecision.FAIL  # e.g. a plain client of TLS NameNodes: all are so
    if isinstance(error, (StandbyException, ConnectException)):
        return FailoverDecision.FAILOVER_AND_RETRY
    if _lost_after_send(error) and idempotent:
        return FailoverDecision.FAILOVER_AND_RETRY
    return FailoverDecision.FAIL


def failover_sleep_s(round_: int, base_ms: int, max_ms: int, rng: random.Random) -> float:
    """The pause after full round ``round_`` (1, 2, …): ``min(base * 2**round, max)``
    randomized by a factor in [0.5, 1.5) (RetryPolicies.calculateExponentialTime)."""
    capped = min(base_ms * (1 << min(round_, 62)), max_ms)
    return capped * (rng.random() + 0.5) / 1000.0


def none_active_error(nameservice: str, last: StandbyException) -> StandbyException:
    """The error for "every NameNode of ``nameservice`` is standby": ``last``'s first line
    and the way out (haadmin, or the zkfc daemons), one line; the same type as ``last``."""
    first_line = str(last).splitlines()[0] if str(last) else "standby"
    return StandbyException(
        f"{first_line}; no NameNode of nameservice {nameservice} is active (all are "
        "standby): run 'hdfs-py haadmin -transitionToActive <nnid>', or start the zkfc "
        "failover controllers if automatic failover is enabled"
    )


class FailoverNameNodeProxy:
    """The NameNodes of ``nameservice`` behind NameNodeProxy's ClientProtocol and
    NamenodeProtocol methods (see the module docstring).

    ``proxy_factory(address)`` makes the proxy of one NameNode (default: a NameNodeProxy
    to its RPC address, with ``proxy_kwargs``); ``sleep`` and ``rng`` pace the backoff.
    """

    def __init__(
        self,
        conf: Any,
        nameservice: str,
        *,
        proxy_factory: Callable[[NameNodeAddress], Any] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
        **proxy_kwargs: Any,
    ) -> None:
        self.nameservice = nameservice
        self.namenodes = ha_namenodes(conf, nameservice)
        if not self.namenodes:
            raise ConfigurationError(
                f"No NameNodes configured for nameservice {nameservice}: set "
                f"{keys.DFS_HA_NAMENODES_KEY_PREFIX}.{nameservice}"
            )
        self.max_failovers = conf.get_int(
            keys.DFS_CLIENT_FAILOVER_MAX_ATTEMPTS_KEY, keys.DFS_CLIENT_FAILOVER_MAX_ATTEMPTS_DEFAULT
        )
        if self.max_failovers < 0:
            raise conf.invalid_value(keys.DFS_CLIENT_FAILOVER_MAX_ATTEMPTS_KEY, "0 or more")
        self.sleep_base_ms = conf.get_time_duration(
            keys.DFS_CLIENT_FAILOVER_SLEEPTIME_BASE_KEY,
            keys.DFS_CLIENT_FAILOVER_SLEEPTIME_BASE_DEFAULT,
            "ms",
            minimum=0,
        )
        self.sleep_max_ms = conf.get_time_duration(
            keys.DFS_CLIENT_FAILOVER_SLEEPTIME_MAX_KEY,
            keys.DFS_CLIENT_FAILOVER_SLEEPTIME_MAX_DEFAULT,
            "ms",
            minimum=0,
        )
        if "socket_factory" not in proxy_kwargs:
            # The RPC transport the configuration asks for: TCP, or mutual TLS.
            proxy_kwargs["socket_factory"] = client_socket_factory(conf)
        self._factory = proxy_factory or (lambda nn: NameNodeProxy(*nn.client_rpc, **proxy_kwargs))
        self._sleep = sleep
        self._rng = rng or random.Random()
        self._lock = threading.Lock()
        self._proxies: dict[int, Any] = {}
        self._current = 0
        self._closed = False

    def __repr__(self) -> str:
        names = ",".join(nn.nnid for nn in self.namenodes)
        return f"FailoverNameNodeProxy({self.nameservice}: {names})"

    @property
    def current(self) -> NameNodeAddress:
        """The NameNode the next call goes to first."""
        with self._lock:
            return self.namenodes[self._current]

    def _proxy(self) -> tuple[int, Any]:
        with self._lock:
            if self._closed:
                raise IOException(f"{self!r} is closed")
            index = self._current
            proxy = self._proxies.get(index)
            if proxy is None:
                proxy = self._proxies[index] = self._factory(self.namenodes[index])
            return index, proxy

    def _fail_over(self, from_index: int) -> None:
        """Move on from ``from_index`` unless another thread already did."""
        with self._lock:
            if self._current == from_index:
                self._current = (from_index + 1) % len(self.namenodes)

    def invoke(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``method`` on the current NameNode, failing over as the rule says."""
        if method not in FAILOVER_METHODS:
            raise AttributeError(f"{type(self).__name__} has no method {method}")
        idempotent = method in IDEMPOTENT_METHODS
        failovers = 0
        # The errors of the last len(namenodes) attempts: the last round.
        recent: list[BaseException] = []
        while True:
            index, proxy = self._proxy()
            try:
                return getattr(proxy, method)(*args, **kwargs)
            except Exception as error:
                decision = failover_decision(error, idempotent)
                nn = self.namenodes[index]
                recent = [*recent, error][-len(self.namenodes) :]
                if decision is FailoverDecision.FAIL:
                    if _lost_after_send(error) and not idempotent:
                        LOG.info(
                            "%s to %s failed and %s is not idempotent: not retrying (%s)",
                            method,
                            nn.nnid,
                            method,
                            error,
                        )
                    raise
                if failovers >= self.max_failovers:
                    # INFO, not WARNING: the error raised says what failed (one line at
                    # the command line).
                    LOG.info(
                        "%s: failovers (%d) exceeded maximum allowed (%d); last error from %s",
                        method,
                        failovers,
                        self.max_failovers,
                        nn.nnid,
                    )
                    if len(recent) == len(self.namenodes) and all(
                        isinstance(e, StandbyException) for e in recent
                    ):
                        raise none_active_error(self.nameservice, error) from error
                    raise
                failovers += 1
                rounds, position = divmod(failovers, len(self.namenodes))
                if position == 0:
                    # Every NameNode failed once more: back off before the next round.
                    pause = failover_sleep_s(
                        rounds, self.sleep_base_ms, self.sleep_max_ms, self._rng
                    )
                    LOG.info(
                        "%s failed on every NameNode of %s; retrying in %.3f s (round %d)",
                        method,
                        self.nameservice,
                        pause,
                        rounds,
                    )
                    self._sleep(pause)
                LOG.info(
                    "%s to %s (%s:%d) failed (%s: %s); failing over",
                    method,
                    nn.nnid,
                    *nn.client_rpc,
                    type(error).__name__,
                    error,
                )
                self._fail_over(index)

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name in FAILOVER_METHODS:
            return lambda *args, **kwargs: self.invoke(name, *args, **kwargs)
        raise AttributeError(f"{type(self).__name__} has no attribute {name}")

    def list_status(self, src: str, max_batches: int = 1 << 20) -> Iterator[Any]:
        """Every entry of the listing of ``src``, batch after batch (each batch may come
        from another NameNode after a failover)."""
        return list_status(
            lambda path, start: self.invoke("get_listing", path, start), src, max_batches
        )

    def close(self) -> None:
        """Close every NameNode's connection; later calls raise IOException."""
        with self._lock:
            self._closed = True
            proxies, self._proxies = list(self._proxies.values()), {}
        for proxy in proxies:
            proxy.close()

    def __enter__(self) -> FailoverNameNodeProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def ha_nameservice_of_uri(conf: Any, uri: str) -> str | None:
    """The nameservice an ``hdfs://<nameservice>[/path]`` URI names, if it is an HA
    nameservice of ``conf`` (HAUtil.isLogicalUri: no port, listed in ``dfs.nameservices``,
    two or more NameNodes); else None (the URI names a host)."""
    try:
        parts = urlsplit(uri)
    except ValueError as e:  # e.g. "Invalid IPv6 URL"
        raise IllegalArgumentException(f"Invalid URI {uri}: {e}") from None
    if parts.scheme != "hdfs":
        return None
    authority = parts.netloc.rpartition("@")[2]  # the host as written (netloc keeps case)
    if not authority or ":" in authority:
        return None
    if authority not in conf.get_trimmed_strings(keys.DFS_NAMESERVICES):
        return None
    return authority if len(get_namenode_ids(conf, authority)) > 1 else None


def nameservice_proxy(conf: Any, nameservice: str, **kwargs: Any) -> Any:
    """The client of an HA nameservice that ``dfs.client.failover.proxy.provider.<ns>``
    asks for: an :class:`~hadoop_qjm.namenode.ha.observer_read_proxy.ObserverReadProxy`
    for Hadoop's ObserverReadProxyProvider, else a :class:`FailoverNameNodeProxy`."""
    from hadoop_qjm.namenode.ha.observer_read_proxy import (
        ObserverReadProxy,
        observer_read_enabled,
    )

    if not observer_read_enabled(conf, nameservice):
        return FailoverNameNodeProxy(conf, nameservice, **kwargs)
    alignment = ClientGSIContext()
    kwargs.setdefault("socket_factory", client_socket_factory(conf))
    active = FailoverNameNodeProxy(conf, nameservice, alignment=alignment, **kwargs)
    return ObserverReadProxy(conf, nameservice, active, alignment, **kwargs)


def namenode_proxy_for_uri(conf: Any, uri: str, **kwargs: Any) -> Any:
    """A proxy for an ``hdfs://`` URI: failover (or observer reads) for an HA nameservice,
    else one NameNode."""
    nameservice = ha_nameservice_of_uri(conf, uri)
    if nameservice is not None:
        return nameservice_proxy(conf, nameservice, **kwargs)
    kwargs.setdefault("socket_factory", client_socket_factory(conf))
    return NameNodeProxy(*parse_hdfs_uri(uri), **kwargs)


def namenode_proxy_from_conf(conf: Any, **kwargs: Any) -> Any:
    """The client's NameNode: :func:`nameservice_proxy` (a :class:`FailoverNameNodeProxy`,
    or the observer read proxy) when ``fs.defaultFS`` is ``hdfs://<ns>`` of an HA
    nameservice, else ``NameNodeProxy.from_conf(conf)``.
    ``kwargs`` go to each NameNodeProxy (``timeout_s``, ``socket_factory``, …)."""
    default_fs = conf.get_trimmed(keys.FS_DEFAULT_NAME_KEY, keys.FS_DEFAULT_NAME_DEFAULT) or ""
    nameservice = ha_nameservice_of_uri(conf, default_fs)
    if nameservice is not None:
        return nameservice_proxy(conf, nameservice, **kwargs)
    return NameNodeProxy.from_conf(conf, **kwargs)
