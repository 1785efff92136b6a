"""NameNodeProxy: a NameNode's ClientProtocol, NamenodeProtocol and HAServiceProtocol.

The client half of :mod:`hadoop_qjm.namenode.name_node_rpc_server` (Hadoop's
ClientNamenodeProtocolTranslatorPB and friends). Methods take and return Python values —
:class:`~hadoop_qjm.namenode.fs_directory.FileStatus`,
:class:`~hadoop_qjm.namenode.protocol.messages.DirectoryListing`, ... — and raise the
NameNode's errors as their types (``FileNotFoundException``, ...), or an IOException
subclass when the call could not complete (``ConnectException``: "Call to host:port
failed on connection exception: ..."; ``SocketTimeoutException``).

One connection per proxy, made on the first call and re-made after a failure; calls on
one proxy are serialized, so give each client thread its own proxy. A call is never
retried: after a broken connection nobody knows whether the NameNode executed it.

:func:`namenode_address` is where a client finds the NameNode: ``fs.defaultFS`` when it
is an ``hdfs://host[:port]`` URI, else ``dfs.namenode.rpc-address`` (a wildcard host
means this machine).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from urllib.parse import urlsplit

from hadoop_qjm.common.exceptions import ConfigurationError, IllegalArgumentException
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.ipc.alignment_context import ClientGSIContext
from hadoop_qjm.namenode.fs_directory import FileStatus
from hadoop_qjm.namenode.protocol import exceptions as _exceptions  # noqa: F401 - registered
from hadoop_qjm.namenode.protocol import messages as m
from hadoop_qjm.namenode.protocol.rpc import ThriftServiceCaller
from hadoop_qjm.namenode.protocol.thrift_idl import SERVICES
from hadoop_qjm.namenode.protocol.thrift_idl import namenode_thrift as _t
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import (
    DEFAULT_CONNECT_TIMEOUT_S,
    RpcChannel,
    SocketChannel,
)
from hadoop_qjm.qjournal.protocol.sockets import ClientSocketFactoryLike
from hadoop_qjm.qjournal.protocol.wire import DEFAULT_MAX_FRAME_SIZE

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "NameNodeProxy",
    "client_socket_factory",
    "list_status",
    "namenode_address",
    "parse_hdfs_uri",
]

#: How long a call waits for its reply (Hadoop's client waits forever; a bound here
#: turns a hung NameNode into an error the command line can print).
DEFAULT_TIMEOUT_S = 120.0
_WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")
_client_ids = iter(range(1, 1 << 62))
_client_ids_lock = threading.Lock()


def parse_hdfs_uri(uri: str) -> tuple[str, int]:
    """``(host, port)`` of an ``hdfs://host[:port][/path]`` URI (port default 8020)."""
    try:
        parts = urlsplit(uri)
    except ValueError as e:  # e.g. "Invalid IPv6 URL"
        raise IllegalArgumentException(f"Invalid URI {uri}: {e}") from None
    if parts.scheme != "hdfs":
        raise IllegalArgumentException(f"{uri} is not an hdfs:// URI")
    if not parts.hostname:
        raise IllegalArgumentException(f"Invalid URI for NameNode address: {uri} has no authority.")
    try:
        port = parts.port
    except ValueError:
        raise IllegalArgumentException(f"Invalid port in {uri}") from None
    return parts.hostname, port or keys.DFS_NAMENODE_RPC_PORT_DEFAULT


def namenode_address(conf) -> tuple[str, int]:
    """Where a client reaches the NameNode (see the module docstring)."""
    default_fs = conf.get_trimmed(keys.FS_DEFAULT_NAME_KEY, keys.FS_DEFAULT_NAME_DEFAULT) or ""
    if default_fs.startswith("hdfs:"):
        try:
            return parse_hdfs_uri(default_fs)
        except IllegalArgumentException as e:
            raise ConfigurationError(f"Invalid {keys.FS_DEFAULT_NAME_KEY}: {e}") from None
    scheme, sep, _ = default_fs.partition("://")
    if sep and scheme.lower() not in ("file", "hdfs"):
        # Hadoop's FileSystem.get: a scheme no FileSystem serves is an error, not a
        # fall-back to dfs.namenode.rpc-address (file:///, Hadoop's default, still is one).
        raise ConfigurationError(
            f'Invalid {keys.FS_DEFAULT_NAME_KEY}: {default_fs}: No FileSystem for scheme "{scheme}"'
        )
    host, port = conf.get_socket_address(
        keys.DFS_NAMENODE_RPC_ADDRESS_KEY,
        keys.DFS_NAMENODE_RPC_ADDRESS_DEFAULT,
        keys.DFS_NAMENODE_RPC_PORT_DEFAULT,
    )
    if port == 0:
        raise ConfigurationError(
            f"{keys.DFS_NAMENODE_RPC_ADDRESS_KEY} has port 0 and {keys.FS_DEFAULT_NAME_KEY} "
            f"is {default_fs or 'unset'}: set {keys.FS_DEFAULT_NAME_KEY}=hdfs://host:port"
        )
    return ("127.0.0.1" if host in _WILDCARD_HOSTS else host.strip("[]")), port


def client_socket_factory(conf) -> ClientSocketFactoryLike | None:
    """The RPC client socket factory ``conf`` asks for: mutual TLS with
    ``hadoop.security.authentication=certificate`` (docs/security.md), else None (TCP)."""
    from hadoop_qjm.common.security import SSLFactory

    return SSLFactory(conf).rpc_client_socket_factory()


def list_status(
    get_listing: Callable[[str, str], m.DirectoryListing], src: str, max_batches: int = 1 << 20
) -> Iterator[FileStatus]:
    """Every entry of the listing of ``src``, asking ``get_listing(src, start_after)`` for
    batch after batch (each from whichever NameNode a proxy sends it to)."""
    start_after = ""
    for _ in range(max_batches):
        listing = get_listing(src, start_after)
        yield from listing.partial_listing
        if not listing.has_more or not listing.partial_listing:
            return
        start_after = listing.last_name


def _client_name() -> str:
    """``DFSClient_NONMAPREDUCE_<pid>_<n>``, as a Hadoop client names itself."""
    with _client_ids_lock:
        n = next(_client_ids)
    return f"DFSClient_NONMAPREDUCE_{os.getpid()}_{n}"


class NameNodeProxy:
    """Client of one NameNode's RPC port (see the module docstring).

    ``timeout_s`` bounds each call's wait for its reply; ``channel`` replaces the socket
    transport (then host and port only name the peer in messages); ``alignment`` (a
    :class:`~hadoop_qjm.ipc.alignment_context.ClientGSIContext`, shared by the observer
    read proxy's proxies) makes every call carry the client's state id.
    """

    def __init__(
        self,
        host: str,
        port: int,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        *,
        connect_timeout_s: float | None = DEFAULT_CONNECT_TIMEOUT_S,
        max_frame_size: int = DEFAULT_MAX_FRAME_SIZE,
        socket_factory: ClientSocketFactoryLike | None = None,
        channel: RpcChannel | None = None,
        alignment: ClientGSIContext | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.client_name = _client_name()
        channel = channel or SocketChannel(
            host, port, timeout_s, connect_timeout_s, max_frame_size, socket_factory
        )
        self._rpc = ThriftServiceCaller(channel, f"{host}:{port}", SERVICES, alignment)

    @classmethod
    def from_conf(cls, conf, **kwargs) -> NameNodeProxy:
        """A proxy to the NameNode of ``conf`` (:func:`namenode_address`), over mutual TLS
        when ``conf`` says so (:func:`client_socket_factory`)."""
        kwargs.setdefault("socket_factory", client_socket_factory(conf))
        return cls(*namenode_address(conf), **kwargs)

    def __repr__(self) -> str:
        return f"NameNodeProxy({self.host}:{self.port})"

    def close(self) -> None:
        """Close the connection; later calls raise IOException. Safe from any thread."""
        self._rpc.close()

    def __enter__(self) -> NameNodeProxy:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # ---- ClientProtocol --------------------------------------------------------------------------
    def mkdirs(self, src: str, masked: int = 0o755, create_parent: bool = True) -> bool:
        """Create directory ``src`` with mode ``masked`` (and its missing parents)."""
        return self._rpc.call(
            "mkdirs", src=src, masked=_t.FsPermission(perm=masked), createParent=create_parent
        )

    def create(
        self,
        src: str,
        masked: int = 0o644,
        overwrite: bool = False,
        create_parent: bool = True,
        replication: int = 3,
        block_size: int = 134217728,
    ) -> FileStatus:
        """Create the empty file ``src`` (replace an existing file only with ``overwrite``)."""
        flags = m.CREATE_FLAG_CREATE | (m.CREATE_FLAG_OVERWRITE if overwrite else 0)
        response = self._rpc.call(
            "create",
            src=src,
            masked=_t.FsPermission(perm=masked),
            clientName=self.client_name,
            createFlag=flags,
            createParent=create_parent,
            replication=replication,
            blockSize=block_size,
        )
        return m.file_status_from_thrift(response.fs, m.normalize_path(src))

    def delete(self, src: str, recursive: bool = False) -> bool:
        """Delete ``src``; False if it did not exist (RPC ``deletePath``)."""
        return self._rpc.call("deletePath", src=src, recursive=recursive)

    def rename(self, src: str, dst: str) -> bool:
        """Move ``src`` to ``dst``, or into ``dst`` if it is a directory; False on refusal."""
        return self._rpc.call("rename", src=src, dst=dst)

    def rename2(self, src: str, dst: str, overwrite: bool = False) -> None:
        """POSIX-like rename; every refusal raises."""
        self._rpc.call("rename2", src=src, dst=dst, overwriteDest=overwrite)

    def set_permission(self, src: str, mode: int) -> None:
        self._rpc.call("setPermission", src=src, permission=_t.FsPermission(perm=mode))

    def set_owner(self, src: str, username: str | None, groupname: str | None) -> None:
        """Set the owner and/or the group; None leaves one unchanged."""
        self._rpc.call("setOwner", src=src, username=username, groupname=groupname)

    def set_times(self, src: str, mtime: int, atime: int) -> None:
        """Set the times in ms since the epoch; -1 leaves one unchanged."""
        self._rpc.call("setTimes", src=src, mtime=mtime, atime=atime)

    def get_file_info(self, src: str) -> FileStatus | None:
        """The status of ``src``; None if it does not exist."""
        response = self._rpc.call("getFileInfo", src=src)
        if response.fs is None:
            return None
        return m.file_status_from_thrift(response.fs, m.normalize_path(src))

    def get_listing(self, src: str, start_after: str = "") -> m.DirectoryListing:
        """One batch of the listing of ``src`` (a file lists as itself)."""
        response = self._rpc.call("getListing", src=src, startAfter=start_after, needLocation=False)
        return m.listing_from_thrift(response.dirList, src)

    def list_status(self, src: str, max_batches: int = 1 << 20) -> Iterator[FileStatus]:
        """Every entry of the listing of ``src``, batch after batch."""
        return list_status(self.get_listing, src, max_batches)

    def roll_edits(self) -> int:
        """Roll the edit log; returns the first txid of the new segment."""
        return self._rpc.call("rollEdits")

    def reconfigure_shared_edits(self, uri: str) -> str:
        """Move the shared edits to ``uri``'s JournalNodes (active NameNode); the set now
        written to."""
        return self._rpc.call("reconfigureSharedEdits", uri=uri)

    def save_namespace(self, time_window_s: int = 0, tx_gap: int = 0) -> bool:
        """Save an image now (unless one is newer than ``time_window_s`` or fewer than
        ``tx_gap`` txns old); whether one was saved."""
        return self._rpc.call("saveNamespace", timeWindow=time_window_s, txGap=tx_gap)

    def get_ha_service_state(self) -> m.HAServiceState:
        """This NameNode's HA state (ClientProtocol.getHAServiceState: any caller)."""
        return m.HAServiceState(self._rpc.call("getHAServiceState"))

    def msync(self) -> int:
        """The active's current state id (FileSystem.msync(): what this client reads from
        an observer next is at least that new); StandbyException from any other."""
        return self._rpc.call("msync")

    def rolling_upgrade(self, action: str) -> m.RollingUpgradeInfo | None:
        """``action`` (QUERY, PREPARE, FINALIZE) of the rolling upgrade; its info, or None."""
        return m.rolling_upgrade_info_from_thrift(self._rpc.call("rollingUpgrade", action=action))

    # ---- NamenodeProtocol ------------------------------------------------------------------------
    def finalize_upgrade(self) -> bool:
        """``dfsadmin -finalizeUpgrade`` on this NameNode: whether it had one to finalize."""
        return self._rpc.call("finalizeUpgrade")

    def upgrade_status(self) -> bool:
        """``dfsadmin -upgrade query``: True once the upgrade is finalized."""
        return self._rpc.call("upgradeStatus")

    def version_request(self) -> NamespaceInfo:
        return m.namespace_info_from_thrift(self._rpc.call("versionRequest"))

    def roll_edit_log(self) -> m.CheckpointSignature:
        return m.checkpoint_signature_from_thrift(self._rpc.call("rollEditLog"))

    def get_most_recent_checkpoint_txid(self) -> int:
        return self._rpc.call("getMostRecentCheckpointTxId")

    def get_transaction_id(self) -> int:
        return self._rpc.call("getTransactionID")

    # ---- HAServiceProtocol -----------------------------------------------------------------------
    def monitor_health(self) -> None:
        self._rpc.call("monitorHealth")

    def transition_to_active(self, forced: bool = False, *, by_zkfc: bool = False) -> None:
        """Ask the NameNode to become active: as a user (``haadmin``), a user who insisted
        (``forced``: ``--forcemanual``) or the failover controller (``by_zkfc``); the
        NameNode refuses a source that does not match its automatic-failover setting."""
        self._rpc.call("transitionToActive", reqInfo=_state_change_request(forced, by_zkfc))

    def transition_to_standby(self, forced: bool = False, *, by_zkfc: bool = False) -> None:
        """Ask the NameNode to become standby (the sources as for transition_to_active)."""
        self._rpc.call("transitionToStandby", reqInfo=_state_change_request(forced, by_zkfc))

    def transition_to_observer(self, forced: bool = False, *, by_zkfc: bool = False) -> None:
        """Ask a standby NameNode to become an observer (the sources as above)."""
        self._rpc.call("transitionToObserver", reqInfo=_state_change_request(forced, by_zkfc))

    def get_service_status(self) -> m.HAServiceStatus:
        return m.service_status_from_thrift(self._rpc.call("getServiceStatus"))


def _state_change_request(forced: bool, by_zkfc: bool):
    if forced and by_zkfc:
        raise IllegalArgumentException("A state change is forced by a user or asked by the ZKFC")
    if by_zkfc:
        source = m.HARequestSource.REQUEST_BY_ZKFC
    elif forced:
        source = m.HARequestSource.REQUEST_BY_USER_FORCED
    else:
        source = m.HARequestSource.REQUEST_BY_USER
    return _t.HAStateChangeRequestInfo(reqSource=int(source))
