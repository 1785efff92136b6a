"""The errors of the RPC layer itself (Hadoop's ``org.apache.hadoop.ipc``).

``qjournal.protocol.exceptions`` re-exports them with the rest of the QJM's errors.
"""

from __future__ import annotations

from typing import Any

from hadoop_qjm.common.exceptions import IOException, register_exception

__all__ = ["ProtocolError", "RemoteException"]


class ProtocolError(IOException):
    """The peer sent bytes that are not one well-formed framed Thrift message.

    The receiving side drops the connection: after garbage nothing further on
    it can be trusted to be aligned to a frame.
    """


@register_exception
class RemoteException(IOException):
    """An error whose class this side does not know; keeps the remote class name.

    Hadoop's RPC client raises ``RemoteException`` and callers unwrap it; here
    known names are unwrapped already by ``from_wire``, and only unknown
    ones arrive as this (still an IOException, message intact). Re-sending it
    with ``to_wire`` sends the original class name, so relaying is
    transparent.
    """

    java_name = "org.apache.hadoop.ipc.RemoteException"

    def __init__(self, message: str = "", class_name: str | None = None) -> None:
        super().__init__(message)
        self.class_name = class_name or self.java_name

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.class_name))
