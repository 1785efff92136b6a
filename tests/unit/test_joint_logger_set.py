"""The writer's joint quorum over O ∪ N (client/joint_logger_set.py)."""

from __future__ import annotations

import pytest

from hadoop_qjm.common.exceptions import (
    IllegalArgumentException,
    IllegalStateException,
    IOException,
)
from hadoop_qjm.qjournal.client.async_logger_set import AsyncLoggerSet
from hadoop_qjm.qjournal.client.joint_logger_set import JointAsyncLoggerSet
from hadoop_qjm.qjournal.protocol.exceptions import QuorumException
from hadoop_qjm.qjournal.protocol.membership import Config
from tests.unit.qjm_client_fakes import FakeLogger, pending

pytestmark = pytest.mark.timeout(30)


def _set(old: str, new: str, names: str | None = None) -> tuple[JointAsyncLoggerSet, dict]:
    config = Config.joint({f"{n}:1" for n in old}, {f"{n}:1" for n in new})
    loggers = {n: FakeLogger(f"{n}:1") for n in sorted(names or set(old) | set(new))}
    joint = JointAsyncLoggerSet(list(loggers.values()), config, address_of=lambda lg: lg.name)
    return joint, loggers


def _call(joint: JointAsyncLoggerSet, timeout_ms: int = 50):  # noqa: ANN202
    return joint.wait_for_write_quorum(joint.call("start_log_segment", 1, -1), timeout_ms, "op")


def test_replace_one_of_three_needs_a_majority_of_each_set() -> None:
    joint, lg = _set("abc", "abd")
    lg["c"].when("start_log_segment", future=pending)
    lg["d"].when("start_log_segment", future=pending)
    assert set(_call(joint)) == {lg["a"], lg["b"]}  # a, b: a majority of both sets


def test_grow_waits_for_the_new_set_too() -> None:
    joint, lg = _set("abc", "abcde")
    for n in "cde":
        lg[n].when("start_log_segment", future=pending)
    # a and b are a majority of the old three, but two of the new five are not.
    with pytest.raises(IOException, match="Timed out waiting 50ms for a majority of a:1;b:1;c:1"):
        _call(joint)


def test_the_new_set_alone_never_decides() -> None:
    """c, d, e are a majority of the new five (and of the union), but one of the old
    three: under the plain count over O ∪ N that would be a quorum — the bug a joint
    rule exists to prevent. Here it fails, and at once (a, b failed: no majority of O)."""
    joint, lg = _set("abc", "abcde")
    for n in "ab":
        lg[n].when("start_log_segment", error=IOException(f"{n} is down"))
    with pytest.raises(
        QuorumException, match="a majority of a:1;b:1;c:1 and of a:1;b:1;c:1;d:1;e:1"
    ):
        _call(joint, timeout_ms=60_000)
    plain = AsyncLoggerSet(list(lg.values()))
    assert len(plain.wait_for_write_quorum(plain.call("start_log_segment", 1, -1), 50, "op")) == 3


def test_the_loggers_must_be_the_nodes_of_the_configuration() -> None:
    with pytest.raises(IllegalArgumentException, match="are not the nodes of"):
        _set("abc", "abd", names="abc")


def test_no_single_majority_to_read_by() -> None:
    joint, _ = _set("abc", "abd")
    with pytest.raises(IllegalStateException, match="no single majority"):
        joint.majority_size  # noqa: B018


def test_a_stable_configuration_is_a_plain_majority() -> None:
    loggers = [FakeLogger(f"{n}:1") for n in "abc"]
    stable = JointAsyncLoggerSet(
        loggers, Config.stable({"a:1", "b:1", "c:1"}), address_of=lambda lg: lg.name
    )
    loggers[2].when("start_log_segment", future=pending)
    assert len(_call(stable)) == 2
