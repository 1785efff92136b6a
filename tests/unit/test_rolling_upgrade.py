"""Rolling upgrade's pure parts (issue 36 item 1): RollingUpgradeInfo and DFSAdmin's words,
the actions, the ops' effect on the namespace, where a standby's tailing stops for the
rollback image, and ``namenode -rollingUpgrade``'s parsing."""

from __future__ import annotations

import time

import pytest

from hadoop_qjm.common.exceptions import IllegalArgumentException, UsageError
from hadoop_qjm.editlog import fs_edit_log_op as ops
from hadoop_qjm.namenode import rolling_upgrade as ru
from hadoop_qjm.namenode.fs_directory import FSDirectory
from hadoop_qjm.namenode.fs_edit_log_loader import FSEditLogLoader
from hadoop_qjm.namenode.name_node_commands import parse_startup_option

pytestmark = pytest.mark.timeout(30)

START = 1512607204230


def _java_date(ms: int) -> str:
    return time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(ms / 1000))


def test_info_prints_as_hadoops_rolling_upgrade_info() -> None:
    info = ru.RollingUpgradeInfo("BP-1-127.0.0.1-1", START)
    assert str(info) == (
        "  Block Pool ID: BP-1-127.0.0.1-1\n"
        f"     Start Time: {_java_date(START)} (={START})\n"
        "  Finalize Time: <NOT FINALIZED>"
    )
    assert info.bean() == {
        "blockPoolId": "BP-1-127.0.0.1-1",
        "createdRollbackImages": False,
        "finalizeTime": 0,
        "startTime": START,
    }


@pytest.mark.parametrize(
    "info, first_line",
    [
        (None, ru.NO_ROLLING_UPGRADE),
        (
            ru.RollingUpgradeInfo("bp", START),
            "Preparing for upgrade. Data is being saved for rollback.",
        ),
        (ru.RollingUpgradeInfo("bp", START, 0, True), "Proceed with rolling upgrade:"),
        (ru.RollingUpgradeInfo("bp", START, START + 3), "Rolling upgrade is finalized."),
    ],
)
def test_dfsadmin_message(info, first_line: str) -> None:
    text = ru.rolling_upgrade_message(info)
    assert text.split("\n")[0] == first_line
    if info is not None:
        assert text.endswith(str(info))


def test_actions_are_hadoops() -> None:
    assert ru.RollingUpgradeAction.from_string("") is ru.RollingUpgradeAction.QUERY
    assert ru.RollingUpgradeAction.from_string("prepare") is ru.RollingUpgradeAction.PREPARE
    assert ru.RollingUpgradeAction.from_string("FINALIZE") is ru.RollingUpgradeAction.FINALIZE
    with pytest.raises(IllegalArgumentException, match='Failed to covert "go"'):
        ru.RollingUpgradeAction.from_string("go")


def test_the_ops_start_and_end_the_upgrade_in_the_namespace() -> None:
    fs_dir = FSDirectory("hdfs", "supergroup")
    loader = FSEditLogLoader(fs_dir)
    loader.apply(ops.RollingUpgradeStartOp(5, time=START))
    assert fs_dir.rolling_upgrade_start_time == START
    with pytest.raises(ru.RollingUpgradeException, match="already in progress"):
        loader.apply(ops.RollingUpgradeStartOp(6, time=START + 1))
    loader.apply(ops.RollingUpgradeFinalizeOp(7, time=START + 2))
    assert fs_dir.rolling_upgrade_start_time == 0
    # A FINALIZE whose START is in an image saved before a restart: nothing to undo.
    loader.apply(ops.RollingUpgradeFinalizeOp(8, time=START + 3))
    assert fs_dir.rolling_upgrade_start_time == 0


class _Stream:
    def __init__(self, ops) -> None:
        self._ops = list(ops)

    def read_op(self):
        return self._ops.pop(0) if self._ops else None


class _Storage:
    def __init__(self, has_rollback: bool) -> None:
        self.has_rollback = has_rollback

    def inspect_images(self, *, regular: bool = True, rollback: bool = False) -> list:
        return ["fsimage_rollback_x"] if rollback and self.has_rollback else []


def _mkdir(txid: int) -> ops.MkdirOp:
    return ops.MkdirOp(
        txid,
        inode_id=16385 + txid,
        path=f"/d{txid}",
        timestamp=1,
        permissions=ops.PermissionStatus("h", "g", 0o755),
    )


def _read_all(point: ru.RollbackImagePoint, streams) -> list[int]:
    txids = []
    for stream in point.wrap(streams):
        while (op := stream.read_op()) is not None:
            txids.append(op.txid)
    return txids


def test_tailing_stops_at_the_end_of_the_start_segment() -> None:
    """START at 3, END at 4 (prepare's roll): the standby stops at 4 — R — however much
    the next segments hold, and only while it has no rollback image."""
    fs_dir = FSDirectory("hdfs", "supergroup")
    segments = [
        [
            ops.StartLogSegmentOp(1),
            _mkdir(2),
            ops.RollingUpgradeStartOp(3, time=START),
            ops.EndLogSegmentOp(4),
        ],
        [ops.StartLogSegmentOp(5), _mkdir(6), ops.EndLogSegmentOp(7)],
    ]
    point = ru.RollbackImagePoint(_Storage(False), fs_dir)
    assert _read_all(point, [_Stream(s) for s in segments]) == [1, 2, 3, 4]
    assert point.reached
    done = ru.RollbackImagePoint(_Storage(True), fs_dir)
    assert _read_all(done, [_Stream(s) for s in segments]) == [1, 2, 3, 4, 5, 6, 7]
    assert not done.reached
    # No upgrade at all: nothing is cut.
    plain = ru.RollbackImagePoint(_Storage(False), FSDirectory("hdfs", "supergroup"))
    assert _read_all(plain, [_Stream(segments[1])]) == [5, 6, 7] and not plain.reached


def test_tailing_resumed_after_the_start_stops_at_the_next_segment_end() -> None:
    """The START was read in an earlier round (in-progress tailing read it before the
    roll's END): this round stops at the END."""
    fs_dir = FSDirectory("hdfs", "supergroup")
    fs_dir.rolling_upgrade_start_time = START
    point = ru.RollbackImagePoint(_Storage(False), fs_dir)
    stream = _Stream([ops.EndLogSegmentOp(4), ops.StartLogSegmentOp(5), _mkdir(6)])
    assert _read_all(point, [stream]) == [4] and point.reached


@pytest.mark.parametrize("value", ["rollback", "started", "ROLLBACK"])
def test_namenode_rolling_upgrade_options(value: str) -> None:
    option = parse_startup_option(["-rollingUpgrade", value])
    assert (option.command, option.rolling_upgrade) == ("daemon", value.lower())


@pytest.mark.parametrize("args", [[], ["downgrade"], ["rollback", "started"]])
def test_a_bad_rolling_upgrade_option_is_one_line(args: list[str]) -> None:
    with pytest.raises(UsageError, match="^Must specify a rolling upgrade startup option"):
        parse_startup_option(["-rollingUpgrade", *args])
