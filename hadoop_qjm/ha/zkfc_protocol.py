"""ZKFCProtocol: the failover controller's own RPC (Hadoop's ZKFCProtocol, ZKFCRpcServer).

The ZKFC serves two calls on ``dfs.ha.zkfc.port`` (8019) of its NameNode's host:
``cedeActive(millisToCede)`` and ``gracefulFailover()``. ``haadmin -failover`` calls the
second on the target's controller when automatic failover is on; a controller doing a
graceful failover calls the first on the current active's controller. They travel as the
NameNode's services do (:mod:`hadoop_qjm.ipc`): the same frames, the same socket server
(:class:`~hadoop_qjm.ipc.server.Server`, configured here with a ZKFCProtocol dispatcher) and
socket factories (mutual TLS when the configuration asks for it), errors as (Java class
name, message).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from importlib import resources
from types import ModuleType
from typing import Any

import thriftpy2

from hadoop_qjm.common.net import ClientSocketFactoryLike, ServerSocketFactoryLike
from hadoop_qjm.common.security.caller_identity import CallerIdentity
from hadoop_qjm.common.security.service_authorization import ServiceAuthorizationManager
from hadoop_qjm.ipc import call_context
from hadoop_qjm.ipc.client import ThriftServiceCaller
from hadoop_qjm.ipc.dispatcher import Rpc, ThriftServiceDispatcher
from hadoop_qjm.ipc.frames import DEFAULT_MAX_FRAME_SIZE
from hadoop_qjm.ipc.server import DEFAULT_HANDLER_COUNT, Server
from hadoop_qjm.ipc.socket_channel import DEFAULT_CONNECT_TIMEOUT_S, SocketChannel

__all__ = ["ZKFCProxy", "ZKFCRpcServer", "zkfc_thrift"]


def _load() -> ModuleType:
    ref = resources.files(__package__).joinpath("zkfc.thrift")
    with resources.as_file(ref) as path:
        return thriftpy2.load(str(path), module_name="hadoop_qjm_zkfc_thrift")


#: The thriftpy2 module of ``zkfc.thrift``.
zkfc_thrift = _load()
_SERVICES = (zkfc_thrift.ZKFCProtocol,)


class ZKFCProxy:
    """Client of one failover controller's RPC port; calls are serialized, never retried."""

    def __init__(
        self,
        host: str,
        port: int,
        timeout_s: float | None,
        *,
        connect_timeout_s: float | None = DEFAULT_CONNECT_TIMEOUT_S,
        socket_factory: ClientSocketFactoryLike | None = None,
    ) -> None:
        self.host = host
        self.port = port
        channel = SocketChannel(
            host, port, timeout_s, connect_timeout_s, DEFAULT_MAX_FRAME_SIZE, socket_factory
        )
        self._rpc = ThriftServiceCaller(channel, f"{host}:{port}", _SERVICES)

    def cede_active(self, millis_to_cede: int) -> None:
        self._rpc.call("cedeActive", millisToCede=int(millis_to_cede))

    def graceful_failover(self) -> None:
        self._rpc.call("gracefulFailover")

    def close(self) -> None:
        self._rpc.close()

    def __enter__(self) -> ZKFCProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"ZKFCProxy({self.host}:{self.port})"


def _authorizer(manager: ServiceAuthorizationManager) -> Callable[[Rpc], None]:
    """``security.zkfc.protocol.acl`` for each remote call (an in-process one is the
    controller's own)."""

    def authorize(rpc: Rpc) -> None:
        ugi = call_context.remote_ugi()
        if ugi is not None:
            manager.authorize(ugi, rpc.service_name)

    return authorize


def ZKFCRpcServer(
    zkfc: Any,
    bind_host: str,
    port: int,
    socket_factory: ServerSocketFactoryLike | None = None,
    handler_count: int = 3,
    caller_identity: CallerIdentity | None = None,
    service_authorization: ServiceAuthorizationManager | None = None,
) -> Server:
    """The controller's RPC server (Hadoop's ZKFCRpcServer): the IPC server configured with
    a ZKFCProtocol dispatcher. ``zkfc`` provides ``cede_active(millis)`` and
    ``graceful_failover()``. Binds here (BindException if the port is taken), serves after
    ``start()``; ``stop()`` closes every connection and joins every thread.

    Hadoop's class name on a factory: callers construct one as in Hadoop, and get the generic
    server configured, not a subclass.
    """
    dispatcher = ThriftServiceDispatcher(
        _SERVICES,
        {"cedeActive": zkfc.cede_active, "gracefulFailover": zkfc.graceful_failover},
        zkfc_thrift.RemoteException,
        threading.BoundedSemaphore(handler_count if handler_count > 0 else DEFAULT_HANDLER_COUNT),
        authorize=None if service_authorization is None else _authorizer(service_authorization),
    )
    return Server(
        dispatcher,
        bind_host,
        port,
        handler_count,
        DEFAULT_MAX_FRAME_SIZE,
        socket_factory,
        caller_identity=caller_identity,
    )
