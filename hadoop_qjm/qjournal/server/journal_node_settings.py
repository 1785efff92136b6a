"""Every setting a JournalNode reads, read and checked once, before it touches disk or network.

:meth:`JournalNodeSettings.from_conf` reads the daemon's own keys through the schema
(:func:`hadoop_qjm.conf.config_schema.read`: ``conf/hdfs-default.xml`` declares each
key's kind and range) and then checks every other key the schema says a JournalNode reads
(:func:`~hadoop_qjm.conf.config_schema.validate`: its journals, their syncers, the edits
cache, its servers); a bad value is one
:class:`~hadoop_qjm.common.exceptions.ConfigurationError` naming the key, the value,
what is expected and where it was set (the CLI prints it as one line, exit 1). A
value that does not parse and one out of range give the same sentence. The ranges
are Hadoop's where Hadoop has one (FsPermission's octal digits, the edits cache's
fraction in (0, 1)); an interval, a timeout or a size must be positive, except where
0 or less has a documented meaning (``dfs.journalnode.handler.count`` ≤ 0 means 5,
``hadoop.http.max.threads`` ≤ 0 the default, ``dfs.image.transfer.bandwidthPerSec``
0 no throttle). :meth:`BindAddress.check_resolvable` is the one check that needs
the network (a DNS lookup); the JournalNode makes it in ``start()``, before it
creates a directory or binds a port.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass

from hadoop_qjm.common.exceptions import ConfigurationError
from hadoop_qjm.conf import config_schema
from hadoop_qjm.conf import dfs_config_keys as keys

__all__ = [
    "BindAddress",
    "JournalNodeSettings",
    "edits_dir_permission",
    "format_live_writer_window_ms",
]


def edits_dir_permission(conf) -> int:
    """``dfs.journalnode.edits.dir.perm`` as a mode: 3 or 4 octal digits (Hadoop's
    FsPermission), the permission a journal's directories are created with."""
    if conf is None:
        return int(keys.DFS_JOURNALNODE_EDITS_DIR_PERMISSION_DEFAULT, 8)
    return config_schema.read(conf, keys.DFS_JOURNALNODE_EDITS_DIR_PERMISSION_KEY)


def format_live_writer_window_ms(conf) -> int:
    """``dfs.journalnode.format.live-writer.window.ms`` (issue 33): a journal whose open
    segment was written to this recently is not formatted; 0: only a connected writer
    counts. A duration, as every other (a bare number is milliseconds)."""
    if conf is None:
        return keys.DFS_JOURNALNODE_FORMAT_LIVE_WRITER_WINDOW_DEFAULT
    return config_schema.read(conf, keys.DFS_JOURNALNODE_FORMAT_LIVE_WRITER_WINDOW_KEY)


@dataclass(frozen=True)
class BindAddress:
    """A listener's configured address and the key its host was read from (the
    ``*-bind-host`` key when that overrides the ``*-address`` key's host)."""

    host: str
    port: int
    key: str

    @classmethod
    def from_conf(cls, conf, kind: str, default_port: int) -> BindAddress:
        """``dfs.journalnode.<kind>-address``, its host overridden by ``<kind>-bind-host``."""
        key = f"dfs.journalnode.{kind}-address"
        bind_host_key = f"dfs.journalnode.{kind}-bind-host"
        host, port = conf.get_socket_address(
            key, f"0.0.0.0:{default_port}", default_port, bind_host_key=bind_host_key
        )
        return cls(host, port, bind_host_key if conf.get_trimmed(bind_host_key) else key)

    def __str__(self) -> str:
        """``host:port (key)``, as errors name it."""
        return f"{self.host}:{self.port} ({self.key})"

    def check_resolvable(self) -> None:
        """Raise ConfigurationError, naming the key, if the host does not resolve."""
        try:
            socket.getaddrinfo(
                self.host, self.port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE
            )
        except (OSError, UnicodeError) as e:  # UnicodeError: a label longer than 63
            reason = getattr(e, "strerror", None) or str(e)
            raise ConfigurationError(
                f"Unable to resolve {self.key} {self.host}:{self.port}: {reason}"
            ) from None


@dataclass(frozen=True)
class JournalNodeSettings:
    """The JournalNode's own settings, read once (see the module doc).

    The keys that the journals, the edits cache and the HTTP server read where they use
    them (from the same configuration) are only checked here.
    """

    rpc: BindAddress
    http: BindAddress
    https: BindAddress
    #: RPC calls executed at once, as configured (the RPC server takes ≤ 0 as 5).
    handler_count: int
    max_frame_size: int
    enable_sync: bool
    sync_interval_ms: int
    edit_log_transfer_timeout_ms: int
    #: ``dfs.edit.log.transfer.bandwidthPerSec``: the syncer's downloads, bytes/s (0: no
    #: throttle), as Hadoop's JournalNodeSyncer.getThrottler.
    edit_log_transfer_bandwidth: int = 0
    #: ``dfs.journalnode.enable.sync.format``: an unformatted journal formats itself from
    #: its peers (HDFS-16690; docs/journalnode.md "Replacing a JournalNode").
    enable_sync_format: bool = False

    @classmethod
    def from_conf(cls, conf) -> JournalNodeSettings:
        """Read and check every key; the first bad one raises ConfigurationError."""
        read = config_schema.read
        settings = cls(
            rpc=BindAddress.from_conf(conf, "rpc", keys.DFS_JOURNALNODE_RPC_PORT_DEFAULT),
            http=BindAddress.from_conf(conf, "http", keys.DFS_JOURNALNODE_HTTP_PORT_DEFAULT),
            https=BindAddress.from_conf(conf, "https", keys.DFS_JOURNALNODE_HTTPS_PORT_DEFAULT),
            handler_count=read(conf, keys.DFS_JOURNALNODE_HANDLER_COUNT_KEY),
            max_frame_size=read(conf, keys.IPC_MAXIMUM_DATA_LENGTH_KEY),
            enable_sync=read(conf, keys.DFS_JOURNALNODE_ENABLE_SYNC_KEY),
            sync_interval_ms=read(conf, keys.DFS_JOURNALNODE_SYNC_INTERVAL_KEY),
            edit_log_transfer_timeout_ms=read(conf, keys.DFS_EDIT_LOG_TRANSFER_TIMEOUT_KEY),
            edit_log_transfer_bandwidth=read(conf, keys.DFS_EDIT_LOG_TRANSFER_RATE_KEY),
            enable_sync_format=read(conf, keys.DFS_JOURNALNODE_ENABLE_SYNC_FORMAT_KEY),
        )
        # The keys the journals, the edits cache and the HTTP server read where they use them.
        config_schema.validate(conf, "journalnode")
        return settings
