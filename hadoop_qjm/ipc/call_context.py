"""The call a handler thread is executing: one thread-local for every RPC server.

Hadoop's ``Server.getRemoteIp()``, ``Server.getRemoteUser()`` and the current call's
connection. A server's reader thread sets the connection's part (:func:`enter_connection`)
for as long as it serves the connection, a dispatcher the call's part
(:func:`enter_call`) for as long as the handler runs.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hadoop_qjm.common.security.caller_identity import ConnectionUser
    from hadoop_qjm.common.security.user_group_information import UserGroupInformation

__all__ = [
    "current_call",
    "enter_call",
    "enter_connection",
    "leave_call",
    "leave_connection",
    "release_handler_slot",
    "remote_connection",
    "remote_ip",
    "remote_ugi",
    "remote_user",
    "set_current_call",
    "set_connection_user",
]

_context = threading.local()


def remote_ip() -> str | None:
    """The address of the client whose call this thread is executing, else ``None``.

    Hadoop's ``Server.getRemoteIp()``; the Journal puts it in its
    "IPC serial … from client …" message and its promise log lines.
    """
    return getattr(_context, "remote_ip", None)


def remote_user() -> str | None:
    """The verified identity of the client whose call this thread is executing, else ``None``.

    Hadoop's ``Server.getRemoteUser()``: the subject CN of the client's TLS certificate
    (set for the whole connection after its handshake), None over plain TCP.
    """
    return getattr(_context, "remote_user", None)


def remote_ugi() -> UserGroupInformation | None:
    """The caller whose call this thread is executing, with its groups (Hadoop's
    ``Server.getRemoteUser()`` as a UserGroupInformation), else ``None`` (an in-process
    call: the daemon's own user).

    From its certificate over TLS, else from its connection context (simple
    authentication), else ``dr.who`` (see
    :mod:`hadoop_qjm.common.security.caller_identity`). AuthorizationException for a
    certificate no ``hadoop.security.auth_to_local`` rule maps to a user.
    """
    connection_user = getattr(_context, "connection_user", None)
    return None if connection_user is None else connection_user.ugi()


def set_connection_user(connection_user: ConnectionUser | None) -> None:
    """The calls this thread runs next are ``connection_user``'s (a server whose handler
    threads serve many connections sets it per call)."""
    _context.connection_user = connection_user


def remote_connection() -> Any:
    """The connection whose call this thread is executing (its ``peer`` "ip:port", and
    ``open`` until it closes), else ``None`` (an in-process call). The Journal keeps its
    writer's, so that a format can tell whether that writer is still there (issue 33).
    """
    return getattr(_context, "connection", None)


def enter_connection(
    connection: Any, user: str | None, connection_user: ConnectionUser | None = None
) -> None:
    """This thread now serves ``connection``, whose client's certificate names ``user``
    (None: unverified) and whose user (and groups) ``connection_user`` resolves."""
    _context.connection = connection
    _context.remote_user = user
    _context.connection_user = connection_user


def leave_connection() -> None:
    _context.connection = _context.remote_user = _context.connection_user = None


def enter_call(ip: str | None, slots: Any = None) -> None:
    """This thread now runs a call from ``ip``, holding a slot of ``slots`` (None: no
    limit, or a slot the dispatcher gives back itself)."""
    _context.remote_ip = ip
    _context.slots = slots


def leave_call() -> Any:
    """The call ended; the slots it still holds a slot of (None if it gave it back)."""
    held = getattr(_context, "slots", None)
    _context.remote_ip = _context.slots = None
    return held


def release_handler_slot() -> None:
    """Give back the handler slot the calling thread holds, if any.

    The call goes on without one; the dispatcher does not release it a second time (the
    NameNode's handlers, while their edit is synced: Hadoop's async edit logging frees the
    handler the same way).
    """
    slots = getattr(_context, "slots", None)
    if slots is not None:
        _context.slots = None
        slots.release()


def current_call() -> Any:
    """The call object a server's handler thread is executing (Hadoop's
    ``Server.getCurCall()``: the NameNode's server postpones its reply), else None."""
    return getattr(_context, "call", None)


def set_current_call(call: Any) -> None:
    _context.call = call
