"""Every setting a JournalNode reads, read and checked once, before it touches disk or network.

:meth:`JournalNodeSettings.from_conf` reads each key the daemon, its journals, their
syncers and its servers use, and checks its range; a bad value is one
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

import re
import socket
from dataclasses import dataclass

from hadoop_qjm.common.exceptions import ConfigurationError
from hadoop_qjm.conf import dfs_config_keys as keys

__all__ = [
    "BindAddress",
    "JournalNodeSettings",
    "edits_dir_permission",
    "format_live_writer_window_ms",
    "int_at_least",
]

#: Hadoop's FsPermission in octal: rwx for user, group, other, and an optional leading
#: sticky/setuid/setgid digit.
_OCTAL_PERMISSION = re.compile(r"[0-7]{3,4}")

HTTP_MAX_THREADS_KEY = "hadoop.http.max.threads"

_POSITIVE_BYTES = "a positive number of bytes"


def edits_dir_permission(conf) -> int:
    """``dfs.journalnode.edits.dir.perm`` as a mode: 3 or 4 octal digits (Hadoop's
    FsPermission), the permission a journal's directories are created with."""
    key = keys.DFS_JOURNALNODE_EDITS_DIR_PERMISSION_KEY
    default = keys.DFS_JOURNALNODE_EDITS_DIR_PERMISSION_DEFAULT
    text = conf.get_trimmed(key, default) if conf is not None else default
    if not _OCTAL_PERMISSION.fullmatch(text):
        raise conf.invalid_value(key, "an octal permission of 3 or 4 digits 0-7, such as 700")
    return int(text, 8)


def format_live_writer_window_ms(conf) -> int:
    """``dfs.journalnode.format.live-writer.window.ms`` (issue 33): a journal whose open
    segment was written to this recently is not formatted; 0: only a connected writer
    counts. A duration, as every other (a bare number is milliseconds)."""
    default = keys.DFS_JOURNALNODE_FORMAT_LIVE_WRITER_WINDOW_DEFAULT
    if conf is None:
        return default
    key = keys.DFS_JOURNALNODE_FORMAT_LIVE_WRITER_WINDOW_KEY
    return conf.get_time_duration(key, default, "ms", minimum=0)


def int_at_least(conf, key: str, default: int, minimum: int, expected: str) -> int:
    """``key`` as an integer of at least ``minimum``; else one error saying ``expected``."""
    try:
        value = conf.get_int(key, default)
    except ConfigurationError:
        raise conf.invalid_value(key, expected) from None
    if value < minimum:
        raise conf.invalid_value(key, expected)
    return value


def _positive_ms(conf, key: str, default: int) -> int:
    return conf.get_time_duration(key, default, "ms", minimum=1)


def _positive_bytes(conf, key: str, default: int) -> int:
    return int_at_least(conf, key, default, 1, _POSITIVE_BYTES)


def _edit_cache_bytes(conf) -> int | None:
    key = keys.DFS_JOURNALNODE_EDIT_CACHE_SIZE_KEY
    if not conf.get_trimmed(key):
        return None  # unset: the fraction decides
    expected = "a positive size in bytes, such as 1048576 or 1m"
    try:
        value = conf.get_storage_size(key, None)
    except ConfigurationError:
        raise conf.invalid_value(key, expected) from None
    if value <= 0:
        raise conf.invalid_value(key, expected)
    return value


def _edit_cache_fraction(conf) -> float:
    # Checked whether or not the cache is on, as Hadoop's JournaledEditsCache does, so a
    # typo does not wait for the day dfs.ha.tail-edits.in-progress is turned on.
    key = keys.DFS_JOURNALNODE_EDIT_CACHE_SIZE_FRACTION_KEY
    expected = "a number above 0 and below 1, such as 0.5"
    try:
        value = conf.get_float(key, keys.DFS_JOURNALNODE_EDIT_CACHE_SIZE_FRACTION_DEFAULT)
    except ConfigurationError:
        raise conf.invalid_value(key, expected) from None
    if not 0.0 < value < 1.0:  # also refuses nan and inf
        raise conf.invalid_value(key, expected)
    return value


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
    #: ``dfs.journalnode.enable.sync.format``: an unformatted journal formats itself from
    #: its peers (HDFS-16690; docs/journalnode.md "Replacing a JournalNode").
    enable_sync_format: bool = False

    @classmethod
    def from_conf(cls, conf) -> JournalNodeSettings:
        """Read and check every key; the first bad one raises ConfigurationError."""
        settings = cls(
            rpc=BindAddress.from_conf(conf, "rpc", keys.DFS_JOURNALNODE_RPC_PORT_DEFAULT),
            http=BindAddress.from_conf(conf, "http", keys.DFS_JOURNALNODE_HTTP_PORT_DEFAULT),
            https=BindAddress.from_conf(conf, "https", keys.DFS_JOURNALNODE_HTTPS_PORT_DEFAULT),
            handler_count=conf.get_int(
                keys.DFS_JOURNALNODE_HANDLER_COUNT_KEY, keys.DFS_JOURNALNODE_HANDLER_COUNT_DEFAULT
            ),
            max_frame_size=_positive_bytes(
                conf, keys.IPC_MAXIMUM_DATA_LENGTH_KEY, keys.IPC_MAXIMUM_DATA_LENGTH_DEFAULT
            ),
            enable_sync=conf.get_bool(
                keys.DFS_JOURNALNODE_ENABLE_SYNC_KEY, keys.DFS_JOURNALNODE_ENABLE_SYNC_DEFAULT
            ),
            sync_interval_ms=_positive_ms(
                conf,
                keys.DFS_JOURNALNODE_SYNC_INTERVAL_KEY,
                keys.DFS_JOURNALNODE_SYNC_INTERVAL_DEFAULT,
            ),
            edit_log_transfer_timeout_ms=_positive_ms(
                conf,
                keys.DFS_EDIT_LOG_TRANSFER_TIMEOUT_KEY,
                keys.DFS_EDIT_LOG_TRANSFER_TIMEOUT_DEFAULT,
            ),
            enable_sync_format=conf.get_bool(
                keys.DFS_JOURNALNODE_ENABLE_SYNC_FORMAT_KEY,
                keys.DFS_JOURNALNODE_ENABLE_SYNC_FORMAT_DEFAULT,
            ),
        )
        _check_keys_read_elsewhere(conf)
        return settings


def _check_keys_read_elsewhere(conf) -> None:
    """Check the keys the journals, the edits cache and the HTTP server read themselves."""
    edits_dir_permission(conf)
    format_live_writer_window_ms(conf)
    _positive_ms(conf, keys.DFS_IMAGE_TRANSFER_TIMEOUT_KEY, keys.DFS_IMAGE_TRANSFER_TIMEOUT_DEFAULT)
    conf.get_bool(keys.DFS_HA_TAILEDITS_INPROGRESS_KEY, keys.DFS_HA_TAILEDITS_INPROGRESS_DEFAULT)
    _edit_cache_bytes(conf)
    _edit_cache_fraction(conf)
    _positive_bytes(conf, keys.DFS_NAMENODE_MAX_OP_SIZE_KEY, keys.DFS_NAMENODE_MAX_OP_SIZE_DEFAULT)
    conf.get_int(HTTP_MAX_THREADS_KEY, -1)  # ≤ 0: the server's default
    int_at_least(
        conf,
        keys.DFS_IMAGE_TRANSFER_RATE_KEY,
        keys.DFS_IMAGE_TRANSFER_RATE_DEFAULT,
        0,
        "a number of bytes per second, 0 or more (0: no throttle)",
    )
