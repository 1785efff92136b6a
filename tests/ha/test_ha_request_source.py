"""Who may change a NameNode's HA state (NameNode.checkHaStateChange), over real RPC on an
in-process pair: with automatic failover on, a plain user request is refused, a forced one
goes through with a warning naming the caller, the failover controller's goes through;
with it off, the controller's request is refused."""

from __future__ import annotations

import logging

import pytest

from hadoop_qjm.common.exceptions import AccessControlException, IllegalArgumentException
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.namenode.protocol.messages import HARequestSource, HAServiceState
from hadoop_qjm.testing.in_process_ha import NS, HAPair, ha_conf

pytestmark = pytest.mark.timeout(120)

ACTIVE, STANDBY = HAServiceState.ACTIVE, HAServiceState.STANDBY
MANUAL_REFUSED = (
    "Manual HA control for this NameNode is disallowed, because automatic HA is enabled."
)


def make_pair(mjc, tmp_path, **extra):
    return HAPair(ha_conf(tmp_path, mjc, "source", **extra), tmp_path)


@pytest.fixture
def auto_pair(mjc, tmp_path):
    # The nameservice's own key, as Hadoop's NAMESERVICE_SPECIFIC_KEYS allow.
    pair = make_pair(mjc, tmp_path, **{f"dfs.ha.automatic-failover.enabled.{NS}": "true"})
    try:
        yield pair
    finally:
        pair.stop()


@pytest.fixture
def manual_pair(mjc, tmp_path):
    pair = make_pair(mjc, tmp_path)
    try:
        yield pair
    finally:
        pair.stop()


def test_automatic_failover_refuses_a_plain_user_request(auto_pair):
    with auto_pair.proxy("nn1") as p1:
        for call in (p1.transition_to_active, p1.transition_to_standby):
            with pytest.raises(AccessControlException) as info:
                call()
            assert str(info.value) == MANUAL_REFUSED
    assert auto_pair["nn1"].state is STANDBY
    # In-process callers are checked the same way.
    with pytest.raises(AccessControlException):
        auto_pair["nn1"].transition_to_active()
    assert auto_pair["nn1"].state is STANDBY and auto_pair["nn1"].tailer.running


def test_automatic_failover_lets_a_forced_request_through_with_a_warning(auto_pair, caplog):
    with auto_pair.proxy("nn1") as p1, caplog.at_level(logging.WARNING):
        p1.transition_to_active(forced=True)
        assert p1.get_service_status().state is ACTIVE
        assert p1.mkdirs("/forced")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        w.startswith("Allowing manual HA control from 127.0.0.1 even though automatic HA is")
        and w.endswith("because the user specified the force flag")
        for w in warnings
    ), warnings


def test_automatic_failover_takes_the_controllers_requests(auto_pair):
    with auto_pair.proxy("nn1") as p1:
        p1.transition_to_active(by_zkfc=True)
        assert p1.get_service_status().state is ACTIVE
        p1.transition_to_standby(by_zkfc=True)
        assert p1.get_service_status().state is STANDBY
    auto_pair["nn2"].transition_to_active(HARequestSource.REQUEST_BY_ZKFC)
    assert auto_pair["nn2"].state is ACTIVE


def test_manual_failover_refuses_the_controller(manual_pair):
    with manual_pair.proxy("nn1") as p1:
        for call in (p1.transition_to_active, p1.transition_to_standby):
            with pytest.raises(AccessControlException) as info:
                call(by_zkfc=True)
            assert str(info.value) == (
                "Request from ZK failover controller at 127.0.0.1 denied since automatic HA "
                "is not enabled"
            )
        assert p1.get_service_status().state is STANDBY
        # A user's request, forced or not, is what a manually managed pair takes.
        p1.transition_to_active()
        p1.transition_to_standby(forced=True)
        assert p1.get_service_status().state is STANDBY


def test_a_request_is_forced_or_from_the_controller_not_both():
    proxy = NameNodeProxy("127.0.0.1", 1, timeout_s=1)
    with pytest.raises(IllegalArgumentException):
        proxy.transition_to_active(True, by_zkfc=True)
    proxy.close()
