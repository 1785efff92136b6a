"""The errors of the RPC layer itself (Hadoop's ``org.apache.hadoop.ipc``).

``qjournal.protocol.exceptions`` re-exports them with the rest of the QJM's errors.
"""

from __future__ import annotations

from typing import Any

from hadoop_qjm.common.exceptions import (
    HadoopAssertionError,
    HadoopException,
    IOException,
    exception_for_name,
    register_exception,
)

__all__ = [
    "ProtocolError",
    "RemoteException",
    "exception_from_wire",
    "wire_class_name",
    "wire_message",
]


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


_IO_EXCEPTION = IOException.java_name


def wire_class_name(exc: BaseException) -> str:
    """The class name an error travels as: a :class:`HadoopException`'s ``java_name``;
    any other ``OSError`` as ``java.io.IOException``; a bare ``AssertionError`` as
    ``java.lang.AssertionError``; anything else its Python class name (the client then
    sees a :class:`RemoteException`)."""
    if isinstance(exc, RemoteException):
        return exc.class_name
    if isinstance(exc, HadoopException):
        return exc.java_name
    if isinstance(exc, OSError):
        # Java would have raised an IOException for any disk or socket error.
        return _IO_EXCEPTION
    if isinstance(exc, AssertionError):
        # A broken invariant must stay recognisable as one on the client.
        return HadoopAssertionError.java_name
    cls = type(exc)
    if cls.__module__ == "builtins":
        return cls.__qualname__
    return f"{cls.__module__}.{cls.__qualname__}"


def wire_message(exc: BaseException) -> str:
    """The message an error travels with (its repr when it has none, but a Hadoop one)."""
    message = str(exc)
    if not message and not isinstance(exc, HadoopException):
        message = repr(exc)
    return message


def exception_from_wire(
    class_name: str | None, message: str | None
) -> IOException | HadoopException:
    """The typed exception for a received (class name, message).

    Known class names (Java's, or our Python class names) give their type; Java's
    nested-class spelling ``Outer$Inner`` is accepted too. An unknown name gives a
    :class:`RemoteException` that keeps the name and message.
    """
    name = (class_name or _IO_EXCEPTION).replace("$", ".")
    text = message if message is not None else ""
    exc = exception_for_name(name, text)
    if type(exc) is IOException and name not in (_IO_EXCEPTION, "IOException"):
        return RemoteException(text, class_name=class_name)
    return exc
