"""The client half of :class:`~hadoop_qjm.ipc.dispatcher.ThriftServiceDispatcher`: encode
a call, send it on an ``RpcChannel`` (:mod:`hadoop_qjm.ipc.socket_channel`), match and
decode the reply, raise the typed error (Hadoop's ``Client``)."""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException
from hadoop_qjm.ipc.alignment_context import ClientGSIContext, split_state_id, with_state_id
from hadoop_qjm.ipc.dispatcher import rpc_table
from hadoop_qjm.ipc.exceptions import ProtocolError, exception_from_wire
from hadoop_qjm.ipc.socket_channel import RpcChannel
from hadoop_qjm.ipc.wire import TMessageType, decode_reply, encode_message

__all__ = ["ThriftServiceCaller"]


class ThriftServiceCaller:
    """The client half: one call at a time on ``channel`` (a SocketChannel or a fake).

    ``peer`` names the server in error messages; ``alignment``, when given, is the
    client's state id context. Calls from several threads are serialized; :meth:`close` may be called from any thread. A call is never retried.
    """

    def __init__(
        self,
        channel: RpcChannel,
        peer: str,
        services: Iterable[Any],
        alignment: ClientGSIContext | None = None,
    ) -> None:
        self._channel = channel
        #: With a context, every call carries its state id and every reply's updates it
        #: (:mod:`hadoop_qjm.ipc.alignment_context`).
        self.alignment = alignment
        self.peer = peer
        self._rpcs = rpc_table(services)
        self._lock = threading.Lock()
        self._seqid = 0

    def close(self) -> None:
        self._channel.close()

    def call(self, name: str, **kwargs: Any) -> Any:
        """Call RPC ``name`` with Thrift arguments ``kwargs``; return its result value."""
        rpc = self._rpcs[name]
        try:
            request = rpc.args_cls(**kwargs)
        except TypeError as e:
            raise IllegalArgumentException(f"Bad arguments for {name}: {e}") from e
        with self._lock:
            self._seqid = (self._seqid + 1) & 0x7FFFFFFF
            seqid = self._seqid
            try:
                payload = encode_message(name, TMessageType.CALL, seqid, request)
            except Exception as e:  # struct.error etc.: a value does not fit its field
                raise IllegalArgumentException(f"Cannot encode {name} call: {e}") from e
            alignment = self.alignment
            if alignment is not None:
                payload = with_state_id(payload, alignment.last_seen_state_id)
            reply = self._channel.call(payload)
            try:
                state_id, reply = split_state_id(reply)
                if state_id is not None and alignment is not None:
                    alignment.receive_response_state(state_id)
                result = decode_reply(reply, name, seqid, rpc.result_cls)
            except ProtocolError as e:
                self._channel.reset()  # a reply we cannot match: the stream is suspect
                raise IOException(f"Call to {self.peer} failed: {e}") from e
        if result.e is not None:
            raise exception_from_wire(result.e.className, result.e.message)
        if not rpc.returns_value:
            return None
        if result.success is None:
            raise IOException(f"{name} to {self.peer} returned no result")
        return result.success
