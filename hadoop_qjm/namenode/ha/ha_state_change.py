"""Who may change a NameNode's HA state (NameNode.checkHaStateChange), as a pure rule.

With automatic failover on, the failover controllers own the state: a plain user request is
refused, a forced one (``haadmin --forcemanual``) is let through with a warning. With it
off, a controller's request is refused: a stray ZKFC must not steer a manually managed
pair. :func:`enforce_ha_state_change` turns the verdict into the NameNode's exception or
warning (with the caller's address); :func:`check_ha_state_change` does no I/O.
"""

from __future__ import annotations

import enum
import logging

from hadoop_qjm.common.exceptions import AccessControlException
from hadoop_qjm.ha.ha_service_protocol import HARequestSource

__all__ = [
    "HAStateChangeVerdict",
    "check_ha_state_change",
    "enforce_ha_state_change",
    "refuse_zkfc_standby_of_an_observer",
]

LOG = logging.getLogger("hadoop_qjm.namenode.name_node")  # the NameNode's log, as before


class HAStateChangeVerdict(enum.Enum):
    """What :func:`check_ha_state_change` decided."""

    ALLOWED = "allowed"
    #: A forced manual request while automatic failover is on: allowed, with a warning.
    ALLOWED_FORCED = "allowed forced"
    #: A plain user request while automatic failover is on.
    MANUAL_DISALLOWED = "manual disallowed"
    #: A failover controller's request while automatic failover is off.
    ZKFC_DENIED = "zkfc denied"


def check_ha_state_change(source: int, automatic_failover: bool) -> HAStateChangeVerdict:
    """The verdict on a state change asked by ``source`` (an :class:`HARequestSource`) when
    automatic failover is (``automatic_failover``) or is not on."""
    if source == HARequestSource.REQUEST_BY_USER and automatic_failover:
        return HAStateChangeVerdict.MANUAL_DISALLOWED
    if source == HARequestSource.REQUEST_BY_USER_FORCED and automatic_failover:
        return HAStateChangeVerdict.ALLOWED_FORCED
    if source == HARequestSource.REQUEST_BY_ZKFC and not automatic_failover:
        return HAStateChangeVerdict.ZKFC_DENIED
    return HAStateChangeVerdict.ALLOWED


def enforce_ha_state_change(source: int, automatic_failover: bool, caller: str) -> None:
    """Raise AccessControlException (Hadoop's words) unless the verdict allows the change;
    log the warning of an allowed forced one. ``caller`` names who asks (an address)."""
    verdict = check_ha_state_change(source, automatic_failover)
    if verdict is HAStateChangeVerdict.MANUAL_DISALLOWED:
        raise AccessControlException(
            "Manual HA control for this NameNode is disallowed, because automatic HA is enabled."
        )
    if verdict is HAStateChangeVerdict.ALLOWED_FORCED:
        LOG.warning(
            "Allowing manual HA control from %s even though automatic HA is enabled, "
            "because the user specified the force flag",
            caller,
        )
    if verdict is HAStateChangeVerdict.ZKFC_DENIED:
        raise AccessControlException(
            f"Request from ZK failover controller at {caller} denied since automatic HA is "
            "not enabled"
        )


def refuse_zkfc_standby_of_an_observer(source: int, observer: bool, caller: str) -> None:
    """NameNodeRpcServer.transitionToStandby (HDFS-14961): a failover controller that joined
    the election before its NameNode became an observer must not turn it back into a
    standby; AccessControlException, Hadoop's words."""
    if observer and source == HARequestSource.REQUEST_BY_ZKFC:
        raise AccessControlException(
            f"Request from ZK failover controller at {caller} denied since the namenode is "
            "in Observer state."
        )
