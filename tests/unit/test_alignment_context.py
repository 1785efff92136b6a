"""State alignment's pure parts: the state id prefix of a call or reply
(ipc/alignment_context.py), the client's context, and GlobalStateIdContext's rule."""

from __future__ import annotations

import threading

import pytest

from hadoop_qjm.ha.ha_service_protocol import HAServiceState
from hadoop_qjm.ipc.alignment_context import (
    STATE_ID_MAGIC,
    ClientGSIContext,
    split_state_id,
    with_state_id,
)
from hadoop_qjm.ipc.exceptions import ProtocolError
from hadoop_qjm.ipc.wire import TMessageType, encode_message
from hadoop_qjm.namenode.global_state_id_context import AlignmentVerdict, alignment_verdict
from hadoop_qjm.namenode.protocol.thrift_idl import namenode_thrift as _t

pytestmark = pytest.mark.timeout(10)

V = AlignmentVerdict
ACTIVE, OBSERVER = HAServiceState.ACTIVE, HAServiceState.OBSERVER


def test_a_call_with_and_without_a_state_id() -> None:
    call = encode_message("msync", TMessageType.CALL, 7, _t.ClientProtocol.msync_args())
    assert split_state_id(call) == (None, call)  # an older client's call, untouched
    prefixed = with_state_id(call, 1234567890123)
    assert prefixed.startswith(STATE_ID_MAGIC) and not call.startswith(STATE_ID_MAGIC[:1])
    assert split_state_id(prefixed) == (1234567890123, call)
    with pytest.raises(ProtocolError, match="cut short"):
        split_state_id(prefixed[: len(STATE_ID_MAGIC) + 3])


def test_the_client_keeps_the_highest_state_id_across_threads() -> None:
    context = ClientGSIContext()
    threads = [
        threading.Thread(
            target=lambda base=base: [context.receive_response_state(base + i) for i in range(500)]
        )
        for base in (0, 1000, 300)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert context.last_seen_state_id == 1499
    context.receive_response_state(5)
    assert context.last_seen_state_id == 1499


@pytest.mark.parametrize(
    ("state", "client", "server", "wait_ms", "verdict"),
    [
        (ACTIVE, None, 10, 20000, V.SERVE),
        (ACTIVE, 99, 10, 20000, V.SERVE),  # Hadoop warns and serves
        (HAServiceState.STANDBY, None, 10, 20000, V.SERVE),  # the handler refuses it
        (OBSERVER, None, 10, 20000, V.NO_STATE_ID),
        (OBSERVER, 10, 10, 20000, V.SERVE),
        (OBSERVER, 3, 10, 20000, V.SERVE),
        (OBSERVER, 11, 10, 20000, V.HOLD),
        (OBSERVER, 10 + 160000, 10, 20000, V.HOLD),  # 10000 txn/s x 20 s x 0.8
        (OBSERVER, 11 + 160000, 10, 20000, V.TOO_FAR_BEHIND),
        (OBSERVER, 11, 10, 999, V.TOO_FAR_BEHIND),  # under a second: no wait at all
    ],
)
def test_hadoops_alignment_rule(state, client, server, wait_ms, verdict) -> None:
    assert alignment_verdict(state, client, server, wait_ms) is verdict
