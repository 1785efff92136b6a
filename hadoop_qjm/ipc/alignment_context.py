"""State alignment on the wire (Hadoop's AlignmentContext, HDFS-12943): the state id a
call and its reply carry, and the client's side that keeps it (ClientGSIContext).

Hadoop puts the state id in ``RpcRequestHeaderProto.stateId`` and
``RpcResponseHeaderProto.stateId``. Our calls have no such header, so a call that carries
one is prefixed: :data:`STATE_ID_MAGIC` then the id as a big-endian i64, then the Thrift
message, all in the one frame. A Thrift message starts with its version word ``0x80
0x01``, so a server tells the two apart by the first bytes; a call without the prefix (an
older client, a stock Thrift client) is served as before, and its reply carries none. A
server answers a prefixed call with a prefixed reply (its own state id). Pure: no socket
or thread here; :class:`ClientGSIContext` takes a lock.
"""

from __future__ import annotations

import struct
import threading

from hadoop_qjm.ipc.exceptions import ProtocolError

__all__ = ["STATE_ID_MAGIC", "ClientGSIContext", "split_state_id", "with_state_id"]

#: The first bytes of a payload carrying a state id ("hrpc", a name and a version).
STATE_ID_MAGIC = b"hrpcsid\x01"
_STATE_ID = struct.Struct(">q")
_PREFIX_SIZE = len(STATE_ID_MAGIC) + _STATE_ID.size


def with_state_id(payload: bytes, state_id: int) -> bytes:
    """``payload`` (a Thrift message) carrying ``state_id``."""
    return STATE_ID_MAGIC + _STATE_ID.pack(state_id) + payload


def split_state_id(payload: bytes) -> tuple[int | None, bytes]:
    """``(state id, Thrift message)`` of ``payload``; the id is None when it carries none.
    ProtocolError for a prefix cut short."""
    if payload[: len(STATE_ID_MAGIC)] != STATE_ID_MAGIC:
        return None, payload
    if len(payload) < _PREFIX_SIZE:
        raise ProtocolError(f"state id prefix cut short ({len(payload)} bytes)")
    (state_id,) = _STATE_ID.unpack_from(payload, len(STATE_ID_MAGIC))
    return state_id, payload[_PREFIX_SIZE:]


class ClientGSIContext:
    """A client's state id: the highest any reply carried (Hadoop's ClientGSIContext, a
    LongAccumulator of max). One context may be shared by every proxy and thread of one
    client, so that whichever NameNode a call goes to, it asks for at least everything the
    client has seen."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_seen = 0

    @property
    def last_seen_state_id(self) -> int:
        return self._last_seen

    def receive_response_state(self, state_id: int) -> None:
        """A reply carried ``state_id``: keep it if it is the highest yet."""
        with self._lock:
            if state_id > self._last_seen:
                self._last_seen = state_id
