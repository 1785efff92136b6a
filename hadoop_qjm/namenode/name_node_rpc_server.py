"""NameNodeRpcServer: ClientProtocol, NamenodeProtocol and HAServiceProtocol over Thrift.

Three handlers, one per service, each converting the Thrift arguments with
:mod:`~hadoop_qjm.namenode.protocol.messages` and delegating to the daemon
(:class:`~hadoop_qjm.namenode.name_node.NameNode`) or its namesystem — no branching, no
I/O (STYLE.md habit 2). The sockets are the IPC server of :mod:`~hadoop_qjm.ipc.server`
(accept thread, one reader thread per connection, ``handler_count`` calls at once) for
TLS, and over plain TCP Hadoop's shape (:mod:`~hadoop_qjm.ipc.selector_server`); the
dispatcher is the NameNode's (:class:`~hadoop_qjm.namenode.protocol.rpc.ThriftServiceDispatcher`).
All three services share ``dfs.namenode.rpc-address``, as Hadoop's NameNodeRpcServer
serves them on one port.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from hadoop_qjm.common.net import (
    PlainSocketFactory,
    ServerSocketFactory,
    ServerSocketFactoryLike,
    as_server_socket_factory,
)
from hadoop_qjm.ha.ha_service_protocol import HAServiceState
from hadoop_qjm.ipc.frames import DEFAULT_MAX_FRAME_SIZE
from hadoop_qjm.ipc.selector_server import DEFAULT_HANDLER_QUEUE_SIZE, IpcServer
from hadoop_qjm.ipc.server import Server
from hadoop_qjm.namenode.global_state_id_context import GlobalStateIdContext
from hadoop_qjm.namenode.ha.ha_state_change import refuse_zkfc_standby_of_an_observer
from hadoop_qjm.namenode.protocol import messages as m
from hadoop_qjm.namenode.protocol.rpc import ThriftServiceDispatcher, remote_ip
from hadoop_qjm.namenode.protocol.thrift_idl import SERVICES
from hadoop_qjm.namenode.protocol.thrift_idl import namenode_thrift as _t

__all__ = [
    "ClientProtocolHandler",
    "HAServiceProtocolHandler",
    "NameNodeRpcServer",
    "NamenodeProtocolHandler",
    "rpc_handlers",
]

LOG = logging.getLogger(__name__)


class ClientProtocolHandler:
    """ClientNamenodeProtocol: parameters are the RPC's Thrift arguments in IDL order."""

    def __init__(self, name_node: Any) -> None:
        self.name_node = name_node

    @property
    def _ns(self) -> Any:
        """The namesystem for a write (StandbyException unless active)."""
        return self.name_node.checked_namesystem("WRITE")

    @property
    def _read_ns(self) -> Any:
        return self.name_node.checked_namesystem("READ")

    def create(
        self,
        src: str,
        masked: Any,
        client_name: str,
        create_flag: int,
        create_parent: bool,
        replication: int,
        block_size: int,
    ) -> Any:
        status = self._ns.create(
            src,
            masked.perm,
            overwrite=bool(create_flag & m.CREATE_FLAG_OVERWRITE),
            create_parent=create_parent,
            replication=replication,
            block_size=block_size,
            client_name=client_name,
            client_machine=remote_ip() or "127.0.0.1",
        )
        return _t.CreateResponse(fs=m.file_status_to_thrift(status, ""))

    def rename(self, src: str, dst: str) -> bool:
        return self._ns.rename(src, dst)

    def rename2(self, src: str, dst: str, overwrite_dest: bool) -> None:
        self._ns.rename2(src, dst, overwrite_dest)

    def delete_path(self, src: str, recursive: bool) -> bool:
        return self._ns.delete(src, recursive)

    def mkdirs(self, src: str, masked: Any, create_parent: bool) -> bool:
        return self._ns.mkdirs(src, masked.perm, create_parent)

    def set_permission(self, src: str, permission: Any) -> None:
        self._ns.set_permission(src, permission.perm)

    def set_owner(self, src: str, username: str | None, groupname: str | None) -> None:
        self._ns.set_owner(src, username, groupname)

    def set_times(self, src: str, mtime: int, atime: int) -> None:
        self._ns.set_times(src, mtime, atime)

    def get_file_info(self, src: str) -> Any:
        status = self._read_ns.get_file_info(src)
        return _t.GetFileInfoResponse(fs=status and m.file_status_to_thrift(status, ""))

    def get_listing(self, src: str, start_after: str, need_location: bool) -> Any:
        statuses = self._read_ns.get_listing(src, start_after)
        listing = m.listing_to_thrift(statuses, src, self.name_node.list_limit)
        return _t.GetListingResponse(dirList=listing)

    def get_ha_service_state(self) -> int:
        return int(self.name_node.state)

    def msync(self) -> int:
        return self.name_node.msync()

    # The admin calls: a superuser only (FSNamesystem.checkSuperuserPrivilege).
    def roll_edits(self) -> int:
        self.name_node.callers.check_superuser_privilege()
        return self.name_node.roll_edit_log().cur_segment_txid

    def reconfigure_shared_edits(self, uri: str) -> str:
        self.name_node.callers.check_superuser_privilege()
        return self.name_node.reconfigure_shared_edits(uri)

    def save_namespace(self, time_window: int | None, tx_gap: int | None) -> bool:
        self.name_node.callers.check_superuser_privilege()
        return self.name_node.save_namespace(time_window or 0, tx_gap or 0)

    def finalize_upgrade(self) -> bool:
        self.name_node.callers.check_superuser_privilege()
        return self.name_node.finalize_upgrade()

    def upgrade_status(self) -> bool:
        return self.name_node.is_upgrade_finalized()

    def rolling_upgrade(self, action: str) -> Any:
        self.name_node.callers.check_superuser_privilege()
        return m.rolling_upgrade_info_to_thrift(self.name_node.rolling_upgrade(action))


class NamenodeProtocolHandler:
    """NamenodeProtocol: what other NameNodes ask (standby tailing, bootstrapStandby)."""

    def __init__(self, name_node: Any) -> None:
        self.name_node = name_node

    def version_request(self) -> Any:
        return m.namespace_info_to_thrift(self.name_node.namespace_info, self.name_node.state)

    def roll_edit_log(self) -> Any:
        # A superuser only, as Hadoop's NameNodeRpcServer.rollEditLog (the standby's tailer
        # calls it as the NameNode's own user).
        self.name_node.callers.check_superuser_privilege()
        return m.checkpoint_signature_to_thrift(self.name_node.roll_edit_log())

    def get_most_recent_checkpoint_txid(self) -> int:
        return self.name_node.most_recent_checkpoint_txid

    def get_transaction_id(self) -> int:
        return self.name_node.transaction_id


class HAServiceProtocolHandler:
    """HAServiceProtocol: delegated to the daemon's HA methods, each for a superuser only
    (Hadoop's NameNode.monitorHealth, transitionTo*, getServiceStatus check it)."""

    def __init__(self, name_node: Any) -> None:
        self.name_node = name_node
        self._check = name_node.callers.check_superuser_privilege

    def monitor_health(self) -> None:
        self._check()
        self.name_node.monitor_health()

    def transition_to_active(self, req_info: Any) -> None:
        self._check()
        self.name_node.transition_to_active(req_info.reqSource)

    def transition_to_standby(self, req_info: Any) -> None:
        self._check()
        refuse_zkfc_standby_of_an_observer(
            req_info.reqSource,
            self.name_node.state is HAServiceState.OBSERVER,
            remote_ip() or "a local caller",
        )
        self.name_node.transition_to_standby(req_info.reqSource)

    def transition_to_observer(self, req_info: Any) -> None:
        self._check()
        self.name_node.transition_to_observer(req_info.reqSource)

    def get_service_status(self) -> Any:
        self._check()
        return m.service_status_to_thrift(self.name_node.service_status())


def rpc_handlers(name_node: Any) -> dict[str, Callable[..., Any]]:
    """Every RPC name of the three services -> its handler method."""
    client = ClientProtocolHandler(name_node)
    namenode = NamenodeProtocolHandler(name_node)
    ha = HAServiceProtocolHandler(name_node)
    return {
        "create": client.create,
        "rename": client.rename,
        "rename2": client.rename2,
        "deletePath": client.delete_path,
        "mkdirs": client.mkdirs,
        "setPermission": client.set_permission,
        "setOwner": client.set_owner,
        "setTimes": client.set_times,
        "getFileInfo": client.get_file_info,
        "getListing": client.get_listing,
        "rollEdits": client.roll_edits,
        "reconfigureSharedEdits": client.reconfigure_shared_edits,
        "saveNamespace": client.save_namespace,
        "getHAServiceState": client.get_ha_service_state,
        "msync": client.msync,
        "finalizeUpgrade": client.finalize_upgrade,
        "upgradeStatus": client.upgrade_status,
        "rollingUpgrade": client.rolling_upgrade,
        "versionRequest": namenode.version_request,
        "rollEditLog": namenode.roll_edit_log,
        "getMostRecentCheckpointTxId": namenode.get_most_recent_checkpoint_txid,
        "getTransactionID": namenode.get_transaction_id,
        "monitorHealth": ha.monitor_health,
        "transitionToActive": ha.transition_to_active,
        "transitionToStandby": ha.transition_to_standby,
        "transitionToObserver": ha.transition_to_observer,
        "getServiceStatus": ha.get_service_status,
    }


def _wraps_sockets(factory: ServerSocketFactory) -> bool:
    """True if ``factory`` turns accepted sockets into something else (TLS)."""
    return type(factory).wrap_accepted is not PlainSocketFactory.wrap_accepted


class NameNodeRpcServer:
    """The NameNode's RPC server. Over plain TCP an
    :class:`~hadoop_qjm.ipc.selector_server.IpcServer` (listener, call queue of
    ``handler_count × handler_queue_size``, ``handler_count`` handlers, responder —
    Hadoop's ipc.Server); with a socket factory that wraps accepted sockets (TLS), the IPC
    :class:`~hadoop_qjm.ipc.server.Server` with a reader thread per connection. Binds in the constructor (BindException if the port is taken), serves after
    :meth:`start`; :meth:`stop` closes every connection and joins every thread.
    ``name_node.metrics.observe_rpc`` sees every call."""

    def __init__(
        self,
        name_node: Any,
        bind_host: str = "0.0.0.0",
        port: int = 8020,
        handler_count: int = 10,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        socket_factory: ServerSocketFactoryLike | None = None,
        handler_queue_size: int = DEFAULT_HANDLER_QUEUE_SIZE,
    ) -> None:
        self.name_node = name_node
        # Who calls: the NameNode's (auth_to_local, groups), which its checks use too.
        caller_identity = name_node.callers.identity
        self.handler_count = handler_count if handler_count > 0 else 10
        factory = as_server_socket_factory(socket_factory)
        self.ipc: IpcServer | None = None
        self._legacy: Server | None = None
        tls = _wraps_sockets(factory)
        # Over TLS the per-connection server runs the calls in its readers, at most
        # handler_count at once; the selector server's handler pool bounds them itself.
        self.dispatcher = ThriftServiceDispatcher(
            SERVICES,
            rpc_handlers(name_node),
            _t.RemoteException,
            threading.BoundedSemaphore(self.handler_count) if tls else None,
            observer=name_node.metrics.observe_rpc,
            authorize=(
                name_node.callers.authorize_service
                if name_node.callers.service_authorization is not None
                else None
            ),
        )
        settings = getattr(name_node, "settings", None)
        #: State alignment in front of the dispatcher (observer reads, HDFS-12943).
        self.state_context = GlobalStateIdContext(
            name_node,
            self.dispatcher,
            enabled=getattr(settings, "state_context_enabled", False),
            client_wait_ms=getattr(settings, "client_wait_ms", 20000),
            max_held=self.handler_count // 2,
        )
        if tls:
            # TLS sockets cannot be read from the selector server's one listener thread.
            self._legacy = Server(
                self.state_context,
                bind_host,
                port,
                self.handler_count,
                max_frame_size,
                factory,
                caller_identity=caller_identity,
            )
        else:
            LOG.info("RPC server is binding to %s:%d", bind_host, port)
            self.ipc = IpcServer(
                self.state_context.process,
                self.state_context.error_reply,
                factory,
                bind_host,
                port,
                self.handler_count,
                max_frame_size,
                handler_queue_size,
                caller_identity,
            )

    @property
    def _server(self) -> Any:
        return self.ipc if self.ipc is not None else self._legacy

    @property
    def port(self) -> int:
        """The bound port (the real one when constructed with port 0)."""
        return self._server.address[1]

    @property
    def address(self) -> tuple[str, int]:
        return self._server.address

    @property
    def num_open_connections(self) -> int:
        return self._server.num_open_connections

    @property
    def rpc_metrics(self) -> Any:
        """The serving server's RpcMetrics (the RpcActivityForPort<port> bean)."""
        return self._server.rpc_metrics

    @property
    def call_queue_length(self) -> int:
        """Calls waiting for a handler (Hadoop's CallQueueLength)."""
        if self.ipc is not None:
            return self.ipc.call_queue_length
        return self.dispatcher.call_queue_length

    def start(self) -> None:
        self._server.start()
        LOG.info("IPC Server listener on %d: starting", self.port)

    def stop(self, timeout_s: float | None = None) -> None:
        self._server.stop(timeout_s)

    def __enter__(self) -> NameNodeRpcServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
