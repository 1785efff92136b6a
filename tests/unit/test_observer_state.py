"""The observer's rules (namenode/ha/observer_state.py): which HA transitions Hadoop
allows, what an observer serves, and monitorHealth's part that depends on the state."""

from __future__ import annotations

import pytest

from hadoop_qjm.ha.exceptions import HealthCheckFailedException
from hadoop_qjm.ha.ha_service_protocol import HAServiceState
from hadoop_qjm.namenode.ha.observer_state import (
    IN_PROGRESS_TAILING_REQUIRED,
    check_role_health,
    operation_refusal,
    transition_refusal,
)

pytestmark = pytest.mark.timeout(10)

ACTIVE, STANDBY, OBSERVER = HAServiceState.ACTIVE, HAServiceState.STANDBY, HAServiceState.OBSERVER


@pytest.mark.parametrize(
    ("current", "target", "refusal"),
    [
        (STANDBY, OBSERVER, None),
        (OBSERVER, STANDBY, None),
        (STANDBY, ACTIVE, None),
        (ACTIVE, STANDBY, None),
        (OBSERVER, OBSERVER, None),
        (OBSERVER, ACTIVE, "Cannot transition from 'observer' to 'active'"),
        (ACTIVE, OBSERVER, "Cannot transition from 'active' to 'observer'"),
    ],
)
def test_hadoops_allowed_transitions(current, target, refusal) -> None:
    assert transition_refusal(current, target) == refusal


def test_an_observer_needs_in_progress_tailing_and_no_safe_mode() -> None:
    assert transition_refusal(STANDBY, OBSERVER, in_progress_tailing=False) == (
        IN_PROGRESS_TAILING_REQUIRED
    )
    assert "dfs.ha.tail-edits.in-progress=true" in IN_PROGRESS_TAILING_REQUIRED
    # HDFS-16547
    assert transition_refusal(STANDBY, OBSERVER, in_safe_mode=True) == (
        "NameNode still not leave safemode"
    )
    assert transition_refusal(STANDBY, ACTIVE, in_progress_tailing=False) is None


def test_an_observer_serves_reads_and_sends_writes_to_the_active() -> None:
    assert operation_refusal(OBSERVER, "READ") is None
    assert operation_refusal(OBSERVER, "WRITE") == (
        True,
        "Operation category WRITE is not supported in state observer",
    )
    assert operation_refusal(OBSERVER, "JOURNAL") == (
        False,
        "Operation category JOURNAL is not supported in state observer",
    )
    assert operation_refusal(STANDBY, "READ") == (
        False,
        "Operation category READ is not supported in state standby",
    )
    assert operation_refusal(ACTIVE, "WRITE") is None


class _Tailer:
    def __init__(self, running: bool, last_error: str | None = None) -> None:
        self.running, self.last_error = running, last_error


def test_an_observers_health_is_its_tailers() -> None:
    check_role_health(OBSERVER, None, _Tailer(True))
    with pytest.raises(HealthCheckFailedException, match="tailer is not running"):
        check_role_health(OBSERVER, None, _Tailer(False))
    with pytest.raises(HealthCheckFailedException, match="could not read the shared edits: x"):
        check_role_health(OBSERVER, None, _Tailer(True, "x"))
