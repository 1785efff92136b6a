"""Observer NameNodes (HDFS-12943): which HA transitions are allowed, and what an observer
serves — pure rules, no I/O.

Hadoop's rules (NameNode.transitionToActive / transitionToObserver, StandbyState.setState):

* standby → observer, observer → standby: allowed;
* observer → active: refused ("Cannot transition from 'observer' to 'active'"): an
  observer goes back to standby first, so failover always promotes a standby;
* active → observer: refused ("Cannot transition from 'active' to 'observer'");
* a NameNode in safe mode does not become an observer (HDFS-16547: "NameNode still not
  leave safemode"; this NameNode has no safe mode, so the rule never fires in practice);
* not Hadoop's words: an observer tails the open segment, or it would serve reads only as
  new as the last finalized one — without ``dfs.ha.tail-edits.in-progress`` it refuses to
  start or transition.

What an observer serves (StandbyState.checkOperation with allowStaleReads): READ
operations; a WRITE gets ObserverRetryOnActiveException (the client retries it on the
active), anything else (JOURNAL: rollEditLog, ...) StandbyException.

:func:`check_role_health` is monitorHealth's part that depends on the HA state (an
observer's tailer must run as a standby's).
"""

from __future__ import annotations

from typing import Any

from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.ha.exceptions import HealthCheckFailedException
from hadoop_qjm.ha.ha_service_protocol import HAServiceState

__all__ = [
    "IN_PROGRESS_TAILING_REQUIRED",
    "check_role_health",
    "observer_start_refusal",
    "operation_refusal",
    "transition_refusal",
]

#: The one line an observer without in-progress tailing is refused with.
IN_PROGRESS_TAILING_REQUIRED = (
    f"An observer NameNode requires {keys.DFS_HA_TAILEDITS_INPROGRESS_KEY}=true (it serves "
    "reads from the open segment it tails); set it on this NameNode and the JournalNodes"
)


def _cannot(current: HAServiceState, target: HAServiceState) -> str:
    return f"Cannot transition from '{current}' to '{target}'"


def observer_start_refusal(in_progress_tailing: bool) -> str | None:
    """Why a NameNode may not start as an observer, or None."""
    return None if in_progress_tailing else IN_PROGRESS_TAILING_REQUIRED


def transition_refusal(
    current: HAServiceState,
    target: HAServiceState,
    *,
    in_progress_tailing: bool = True,
    in_safe_mode: bool = False,
) -> str | None:
    """Why the transition ``current`` → ``target`` is refused (one line), or None."""
    if target is HAServiceState.ACTIVE and current is HAServiceState.OBSERVER:
        return _cannot(current, target)
    if target is HAServiceState.OBSERVER:
        if in_safe_mode:
            return "NameNode still not leave safemode"
        if current is HAServiceState.ACTIVE:
            return _cannot(current, target)
        if current is not HAServiceState.OBSERVER:
            return observer_start_refusal(in_progress_tailing)
    return None


def operation_refusal(state: HAServiceState, category: str) -> tuple[bool, str] | None:
    """Whether an operation of ``category`` (READ, WRITE, JOURNAL, ...) is refused in
    ``state`` of an HA NameNode: None if served, else ``(retry_on_active, message)`` —
    ``retry_on_active`` for an observer's write (ObserverRetryOnActiveException)."""
    if state is HAServiceState.ACTIVE:
        return None
    if state is HAServiceState.OBSERVER and category == "READ":
        return None
    message = f"Operation category {category} is not supported in state {state}"
    return (state is HAServiceState.OBSERVER and category == "WRITE"), message


def check_role_health(state: HAServiceState, edit_log: Any, tailer: Any) -> None:
    """HealthCheckFailedException, one line, unless the NameNode in ``state`` does its
    role's job: an active's edit log is open for write (not dead); a standby's or an
    observer's tailer runs and its last round could read the shared edits."""
    if state is HAServiceState.ACTIVE:
        if edit_log is None or edit_log.failure is not None or not edit_log.is_open_for_write():
            reason = edit_log.failure if edit_log is not None else None
            raise HealthCheckFailedException(
                f"The edit log is no longer open for write: {reason or 'it is closed'}"
            )
    if state in (HAServiceState.STANDBY, HAServiceState.OBSERVER):
        if tailer is None or not tailer.running:
            raise HealthCheckFailedException("The edit log tailer is not running")
        if tailer.last_error is not None:
            raise HealthCheckFailedException(
                f"The last tailing round could not read the shared edits: {tailer.last_error}"
            )
