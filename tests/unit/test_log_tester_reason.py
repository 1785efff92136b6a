"""LogTester's one-line reason for stopping (exit 3), from the error that stopped it."""

from __future__ import annotations

import pytest

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.tools.log_tester import _reason

pytestmark = pytest.mark.timeout(30)


def test_lost_quorum_names_every_node_on_one_line() -> None:
    error = IOException(
        "Got too many exceptions to achieve quorum size 2/3. 2 exceptions thrown:\n"
        "127.0.0.1:2: Connection refused\n"
        "127.0.0.1:1: Connection refused\n"
    )
    assert _reason(error) == (
        "lost the quorum: Got too many exceptions to achieve quorum size 2/3. "
        "2 exceptions thrown: 127.0.0.1:2: Connection refused; 127.0.0.1:1: Connection refused"
    )


def test_fenced_names_the_epoch_line() -> None:
    error = IOException(
        "Got too many exceptions to achieve quorum size 2/3. 2 exceptions thrown:\n"
        "127.0.0.1:2: IPC's epoch 3 is less than the last promised epoch 4\n"
    )
    assert _reason(error) == (
        "fenced by a newer writer: 127.0.0.1:2: IPC's epoch 3 is less than the last promised "
        "epoch 4"
    )
    assert _reason(IOException("")) == "lost the quorum: IOException"
