"""java.net's errors, as the RPC servers and clients raise them. No socket code here: the
pure rules modules import the exceptions that name them."""

from __future__ import annotations

from hadoop_qjm.common.exceptions import IOException, register_exception

__all__ = [
    "BindException",
    "ConnectException",
    "SocketTimeoutException",
    "UnknownHostException",
]


@register_exception
class BindException(IOException):
    """A server could not bind its address (Hadoop: "Problem binding to [host:port]")."""

    java_name = "java.net.BindException"


@register_exception
class ConnectException(IOException):
    """A client could not connect to a server (refused, unreachable, …)."""

    java_name = "java.net.ConnectException"


@register_exception
class SocketTimeoutException(IOException):
    """A call got no response within the client's timeout."""

    java_name = "java.net.SocketTimeoutException"


@register_exception
class UnknownHostException(IOException):
    """A host or domain name does not resolve."""

    java_name = "java.net.UnknownHostException"
