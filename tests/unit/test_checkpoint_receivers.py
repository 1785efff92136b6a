"""HDFS-12979's rule for which NameNodes a standby's checkpoint goes to (pure; the
receivers' answers and the clock are given).

::

    t    nn2 (active → standby)        nn3 (standby)       due after
    0    accepts                        refuses 417         nn2, nn3 (nn3 never accepted)
    1    refuses 417 (failed over)      refuses 417         nn3 (nn2 quiet until 0 + 15)
    15   (quiet period over)                                nn2, nn3
"""

from __future__ import annotations

import pytest

from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.ha.checkpoint_receivers import (
    CHECKPOINT_RECEIVING_STATES,
    CheckpointReceivers,
    TransferResult,
    transfer_result,
)
from hadoop_qjm.namenode.ha.standby_checkpointer import CheckpointConf
from hadoop_qjm.namenode.protocol.messages import HAServiceState

pytestmark = pytest.mark.timeout(10)

NOT_ACTIVE = TransferResult.NOT_ACTIVE_NAMENODE_FAILURE


def test_a_receiver_that_refused_is_left_alone_for_the_quiet_period() -> None:
    receivers = CheckpointReceivers(["nn2", "nn3"], quiet_period_s=15)
    assert receivers.due(0) == ["nn2", "nn3"]  # everyone is primary at first
    receivers.record("nn2", TransferResult.SUCCESS, 0)
    receivers.record("nn3", NOT_ACTIVE, 0)
    assert receivers.due(1) == ["nn2", "nn3"]  # nn3 never accepted one: asked every time
    receivers.record("nn2", NOT_ACTIVE, 1)
    assert receivers.due(2) == receivers.due(14.9) == ["nn3"]
    assert receivers.due(15) == ["nn2", "nn3"]  # 15 s since nn2 last accepted one
    receivers.record("nn2", None, 15)  # the upload could not be made: nothing changes
    assert not receivers.entries["nn2"].is_primary
    assert receivers.entries["nn2"].last_upload == 0
    receivers.record("nn2", TransferResult.SUCCESS, 16)
    assert receivers.entries["nn2"].is_primary and receivers.entries["nn2"].last_upload == 16
    assert receivers.due(17) == ["nn2", "nn3"]


@pytest.mark.parametrize(
    ("status", "result"),
    [
        (200, TransferResult.SUCCESS),
        (409, TransferResult.SUCCESS),  # it has (or is receiving) one as new: done
        (403, TransferResult.AUTHENTICATION_FAILURE),
        (417, NOT_ACTIVE),
        (412, TransferResult.OLD_TRANSACTION_ID_FAILURE),
        (400, TransferResult.UNEXPECTED_FAILURE),
        (503, TransferResult.UNEXPECTED_FAILURE),
    ],
)
def test_http_status_to_transfer_result(status: int, result: TransferResult) -> None:
    assert transfer_result(status) is result


def test_the_quiet_period_is_the_multiplier_times_the_checkpoint_period() -> None:
    conf = Configuration()
    assert CheckpointConf.from_conf(conf).quiet_period_s == 3600 * 1.5
    conf.set("dfs.namenode.checkpoint.period", "10m")
    conf.set("dfs.namenode.checkpoint.check.quiet-multiplier", "2")
    assert CheckpointConf.from_conf(conf).quiet_period_s == 1200


def test_the_active_and_an_observer_store_an_image_a_standby_does_not() -> None:
    assert CHECKPOINT_RECEIVING_STATES == {HAServiceState.ACTIVE, HAServiceState.OBSERVER}
