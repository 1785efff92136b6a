"""The NameNode protocols' own exceptions, with Hadoop's class names.

Every other error a NameNode call can raise is already in
:mod:`hadoop_qjm.common.exceptions` (FileNotFoundException, ...); on the wire all of them
travel as (Java class name, message), see :mod:`hadoop_qjm.namenode.protocol.rpc`.
"""

from __future__ import annotations

from hadoop_qjm.common.exceptions import IOException, register_exception
from hadoop_qjm.ha.exceptions import (  # HAServiceProtocol's, kept below namenode
    HealthCheckFailedException,
    ServiceFailedException,
)

__all__ = [
    "HealthCheckFailedException",
    "ObserverRetryOnActiveException",
    "RetriableException",
    "RollingUpgradeException",
    "ServiceFailedException",
    "StandbyException",
]


@register_exception
class StandbyException(IOException):
    """The operation is not supported in the NameNode's current HA state."""

    java_name = "org.apache.hadoop.ipc.StandbyException"


@register_exception
class ObserverRetryOnActiveException(StandbyException):
    """A write sent to an observer: retry it on the active (a StandbyException, so any
    failover client moves on)."""

    java_name = "org.apache.hadoop.ipc.ObserverRetryOnActiveException"


@register_exception
class RetriableException(IOException):
    """The call may succeed if retried, here or elsewhere (an observer too far behind
    the client's state id)."""

    java_name = "org.apache.hadoop.ipc.RetriableException"


@register_exception
class RollingUpgradeException(IOException):
    """A rolling upgrade cannot do what was asked (FSNamesystem.checkRollingUpgrade)."""

    java_name = "org.apache.hadoop.hdfs.protocol.RollingUpgradeException"
