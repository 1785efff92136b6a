"""The connection context: who a client says it is, sent once per connection before its
first call (Hadoop's ``IpcConnectionContextProto``, sent after the connection header).

One frame whose payload is :data:`CONTEXT_MAGIC` then the user name in UTF-8. A Thrift
call's payload starts with the version word ``0x80 0x01``, so the two never mix: a server
tells the context from a call by its first bytes and answers nothing to it. A client that
sends none (a stock Thrift client) is served as before. Pure: no socket or thread here.
"""

from __future__ import annotations

from hadoop_qjm.ipc.exceptions import ProtocolError
from hadoop_qjm.ipc.frames import frame

__all__ = [
    "CONTEXT_MAGIC",
    "MAX_USER_LENGTH",
    "connection_context_frame",
    "decode_connection_context",
    "is_connection_context",
]

#: The first bytes of a connection context's payload ("hrpc", as Hadoop's connection
#: header, then a name and a version of this context).
CONTEXT_MAGIC = b"hrpcctx\x01"
#: The longest user name a context may carry, in bytes.
MAX_USER_LENGTH = 256


def connection_context_frame(user: str) -> bytes:
    """The frame (length prefix included) that says the connection's client is ``user``."""
    encoded = user.encode("utf-8")
    if not encoded or len(encoded) > MAX_USER_LENGTH:
        raise ValueError(f"a user name of 1 to {MAX_USER_LENGTH} bytes, not {user!r}")
    return frame(CONTEXT_MAGIC + encoded)


def is_connection_context(payload: bytes) -> bool:
    return payload[: len(CONTEXT_MAGIC)] == CONTEXT_MAGIC


def decode_connection_context(payload: bytes) -> str:
    """The user a context's ``payload`` claims; ProtocolError for a name that is empty,
    too long, not UTF-8, or holds a control character or white space."""
    raw = payload[len(CONTEXT_MAGIC) :]
    if not raw or len(raw) > MAX_USER_LENGTH:
        raise ProtocolError(f"connection context with a user name of {len(raw)} bytes")
    try:
        user = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise ProtocolError("connection context with a user name that is not UTF-8") from None
    if any(ch.isspace() or not ch.isprintable() for ch in user):
        raise ProtocolError(f"connection context with an invalid user name {user!r}")
    return user
