"""EditLogTailer's thread: which errors it retries and which stop the standby."""

from __future__ import annotations

import pytest

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.fs_edit_log_loader import EditLogApplyException
from hadoop_qjm.namenode.ha.edit_log_tailer import EditLogTailer
from hadoop_qjm.testing.in_process_ha import wait_until

pytestmark = pytest.mark.timeout(30)


class FailingCore:
    """A standby whose every tailing round raises ``error``."""

    last_applied_txid = 0

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.rounds = 0

    def tail_edits(self, in_progress: bool, max_txns: int | None) -> int:
        self.rounds += 1
        raise self.error


def run_tailer(
    error: BaseException, period: str = "1ms"
) -> tuple[FailingCore, EditLogTailer, list]:
    conf = Configuration()
    conf.set("dfs.ha.tail-edits.period", period)
    core = FailingCore(error)
    terminations: list = []

    def terminate(status: int, message: str) -> None:
        terminations.append((status, message))

    tailer = EditLogTailer(core, conf, terminate=terminate)
    tailer.start()
    return core, tailer, terminations


def test_a_read_error_is_retried() -> None:
    core, tailer, terminations = run_tailer(IOException("a JournalNode is down"))
    try:
        wait_until(lambda: core.rounds >= 3)
        assert tailer.running and terminations == []
    finally:
        tailer.stop()


def test_a_failed_round_is_retried_long_before_the_next_period() -> None:
    # The failed round made the standby unhealthy (monitorHealth reports last_error): the
    # next try must not wait the whole tailing period (60 s by default), or a standby stays
    # out of the election that long after the JournalNodes are back.
    core, tailer, _ = run_tailer(IOException("no quorum"), period="1h")
    try:
        wait_until(lambda: core.rounds >= 2, timeout_s=10.0, what="a second round")
    finally:
        tailer.stop()


@pytest.mark.parametrize(
    "error",
    [EditLogApplyException("Cannot rename /a to /b (txid 7)"), KeyError("inode")],
    ids=["an op that does not apply", "anything else"],
)
def test_an_error_that_leaves_the_namespace_suspect_stops_the_standby(error) -> None:
    core, tailer, terminations = run_tailer(error)
    try:
        wait_until(lambda: terminations != [])
        wait_until(lambda: not tailer.running)
        assert core.rounds == 1
        status, message = terminations[0]
        assert status == 1
        assert message.startswith("Unknown error encountered while tailing edits")
    finally:
        tailer.stop()


class FlakyCore:
    """A standby whose tailing rounds raise the queued errors, then load one txn each."""

    last_applied_txid = 0

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)

    def tail_edits(self, in_progress: bool, max_txns: int | None) -> int:
        if self.errors:
            raise self.errors.pop(0)
        return 1


def test_the_last_read_error_is_remembered_until_a_round_succeeds() -> None:
    core = FlakyCore(IOException("no quorum:\nJN1 down\nJN2 down"), IOException("still none"))
    tailer = EditLogTailer(core, Configuration())
    assert tailer.last_error is None
    with pytest.raises(IOException):
        tailer.do_tail_edits()
    assert tailer.last_error == "no quorum: JN1 down; JN2 down"  # one line
    with pytest.raises(IOException):
        tailer.do_tail_edits()
    assert tailer.last_error == "still none"
    assert tailer.do_tail_edits() == 1
    assert tailer.last_error is None


def test_an_op_that_does_not_apply_is_not_a_read_error() -> None:
    tailer = EditLogTailer(FlakyCore(EditLogApplyException("bad op")), Configuration())
    with pytest.raises(EditLogApplyException):
        tailer.do_tail_edits()
    assert tailer.last_error is None
