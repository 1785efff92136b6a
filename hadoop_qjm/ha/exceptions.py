"""HAServiceProtocol's exceptions, with Hadoop's class names (org.apache.hadoop.ha).

The failover controller and its health monitor raise and catch them, so they live here,
below ``namenode``; :mod:`hadoop_qjm.namenode.protocol.exceptions` re-exports them for the
NameNode's side of the protocol.
"""

from __future__ import annotations

from hadoop_qjm.common.exceptions import IOException, register_exception

__all__ = ["HealthCheckFailedException", "ServiceFailedException"]


@register_exception
class ServiceFailedException(IOException):
    """An HA state transition failed, or HA is not enabled (HAServiceProtocol)."""

    java_name = "org.apache.hadoop.ha.ServiceFailedException"


@register_exception
class HealthCheckFailedException(IOException):
    """monitorHealth: the NameNode is not healthy (e.g. not running)."""

    java_name = "org.apache.hadoop.ha.HealthCheckFailedException"
