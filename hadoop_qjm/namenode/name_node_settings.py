"""Every setting the NameNode daemon reads after it has started, read and checked at start.

A key read only when it is needed (``dfs.ha.automatic-failover.enabled`` at each HA
transition, the roll and image-upload timeouts when the standby first rolls or uploads,
the tailer's and checkpointer's keys when it first becomes standby) would fail then, long
after the daemon came up healthy (issue 33: ``-D dfs.ha.automatic-failover.enabled=ture``
started, and every ``transitionToActive`` then failed). :meth:`NameNodeSettings.from_conf`
reads each of them when the NameNode is constructed, as the JournalNode's
``JournalNodeSettings`` and the zkfc's ``ZKFCSettings`` do: a bad value is one
:class:`~hadoop_qjm.common.exceptions.ConfigurationError` naming the key, the value and
where it was set, and ``hdfs-py namenode`` prints it as one line and exits 1, before it
binds a port or locks a directory.
"""

from __future__ import annotations

from dataclasses import dataclass

from hadoop_qjm.common.exceptions import ConfigurationError
from hadoop_qjm.conf import Configuration, config_schema
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode.ha.edit_log_tailer import TailerSettings
from hadoop_qjm.namenode.ha.ha_util import is_automatic_failover_enabled
from hadoop_qjm.namenode.ha.observer_state import observer_start_refusal
from hadoop_qjm.namenode.ha.standby_checkpointer import CheckpointConf
from hadoop_qjm.namenode.protocol.client import parse_hdfs_uri
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalTimeouts

__all__ = ["NameNodeSettings", "rpc_bind_address"]


@dataclass(frozen=True)
class NameNodeSettings:
    """The NameNode's own settings, read once (see the module doc); the keys its tailer,
    checkpointer and quorum journals read where they use them are only checked here."""

    handler_count: int
    max_frame_size: int
    handler_queue_size: int
    list_limit: int
    standby_checkpoints: bool
    #: ``dfs.ha.tail-edits.rolledits.timeout`` in seconds (0: 60).
    roll_edits_timeout_s: float
    image_transfer_timeout_s: float
    #: ``dfs.ha.tail-edits.in-progress``: required of an observer.
    in_progress_tailing: bool = False
    #: ``namenode -observer`` or ``dfs.namenode.observer.enabled`` (HDFS-17167).
    start_as_observer: bool = False
    #: ``dfs.namenode.state.context.enabled``: replies carry the state id (AlignmentContext).
    state_context_enabled: bool = False
    #: How long an observer holds a call for alignment, ms: twice
    #: ``ipc.client.connection.maxidletime`` (Hadoop's Server.getMaxIdleTime()).
    client_wait_ms: int = 2 * keys.IPC_CLIENT_CONNECTION_MAXIDLETIME_DEFAULT

    @classmethod
    def from_conf(cls, conf: Configuration, nameservice: str | None) -> NameNodeSettings:
        """Read and check every key; the first bad one raises ConfigurationError."""
        handlers = conf.get_int(
            keys.DFS_NAMENODE_HANDLER_COUNT_KEY, keys.DFS_NAMENODE_HANDLER_COUNT_DEFAULT
        )
        integers = {
            "max_frame_size": (
                keys.IPC_MAXIMUM_DATA_LENGTH_KEY,
                keys.IPC_MAXIMUM_DATA_LENGTH_DEFAULT,
            ),
            "handler_queue_size": (
                keys.IPC_SERVER_HANDLER_QUEUE_SIZE_KEY,
                keys.IPC_SERVER_HANDLER_QUEUE_SIZE_DEFAULT,
            ),
            "list_limit": (keys.DFS_LIST_LIMIT_KEY, keys.DFS_LIST_LIMIT_DEFAULT),
        }
        durations = {  # name: (key, default, unit, minimum)
            "roll_s": (
                keys.DFS_HA_TAILEDITS_ROLLEDITS_TIMEOUT_KEY,
                keys.DFS_HA_TAILEDITS_ROLLEDITS_TIMEOUT_DEFAULT,
                "s",
                0,
            ),
            "image_ms": (
                keys.DFS_IMAGE_TRANSFER_TIMEOUT_KEY,
                keys.DFS_IMAGE_TRANSFER_TIMEOUT_DEFAULT,
                "ms",
                1,
            ),
            "idle_ms": (
                keys.IPC_CLIENT_CONNECTION_MAXIDLETIME_KEY,
                keys.IPC_CLIENT_CONNECTION_MAXIDLETIME_DEFAULT,
                "ms",
                0,
            ),
        }
        d = {
            name: conf.get_time_duration(key, default, unit, minimum=minimum)
            for name, (key, default, unit, minimum) in durations.items()
        }
        settings = cls(
            handler_count=handlers if handlers > 0 else keys.DFS_NAMENODE_HANDLER_COUNT_DEFAULT,
            standby_checkpoints=conf.get_bool(
                keys.DFS_HA_STANDBY_CHECKPOINTS_KEY, keys.DFS_HA_STANDBY_CHECKPOINTS_DEFAULT
            ),
            roll_edits_timeout_s=d["roll_s"] or 60,
            image_transfer_timeout_s=d["image_ms"] / 1000.0,
            in_progress_tailing=conf.get_bool(
                keys.DFS_HA_TAILEDITS_INPROGRESS_KEY, keys.DFS_HA_TAILEDITS_INPROGRESS_DEFAULT
            ),
            start_as_observer=conf.get_bool(
                keys.DFS_NAMENODE_OBSERVER_ENABLED_KEY, keys.DFS_NAMENODE_OBSERVER_ENABLED_DEFAULT
            ),
            client_wait_ms=2 * d["idle_ms"],
            state_context_enabled=conf.get_bool(
                keys.DFS_NAMENODE_STATE_CONTEXT_ENABLED_KEY,
                keys.DFS_NAMENODE_STATE_CONTEXT_ENABLED_DEFAULT,
            ),
            **{field: conf.get_int(key, default) for field, (key, default) in integers.items()},
        )
        if settings.start_as_observer:
            refusal = observer_start_refusal(settings.in_progress_tailing)
            if refusal is not None:
                raise ConfigurationError(refusal)
        # Read at each HA transition: a typo must stop the start, not the first failover.
        is_automatic_failover_enabled(conf, nameservice)
        TailerSettings(conf)
        CheckpointConf.from_conf(conf)
        QuorumJournalTimeouts.from_conf(conf)
        # Every other key the schema says a NameNode reads (conf/hdfs-default.xml).
        config_schema.validate(conf, "namenode")
        return settings


def rpc_bind_address(conf: Configuration) -> tuple[str, int]:
    """Where the daemon listens: ``dfs.namenode.rpc-address`` if set, else the authority of
    an ``hdfs://`` ``fs.defaultFS``, else ``0.0.0.0:8020``; ``dfs.namenode.rpc-bind-host``
    overrides the host."""
    default_fs = conf.get_trimmed(keys.FS_DEFAULT_NAME_KEY, "") or ""
    explicit = conf.source(keys.DFS_NAMENODE_RPC_ADDRESS_KEY) not in (None, "defaults")
    if not explicit and default_fs.startswith("hdfs:"):
        host, port = parse_hdfs_uri(default_fs)
        return conf.get_trimmed(keys.DFS_NAMENODE_RPC_BIND_HOST_KEY) or host, port
    return conf.get_socket_address(
        keys.DFS_NAMENODE_RPC_ADDRESS_KEY,
        keys.DFS_NAMENODE_RPC_ADDRESS_DEFAULT,
        keys.DFS_NAMENODE_RPC_PORT_DEFAULT,
        bind_host_key=keys.DFS_NAMENODE_RPC_BIND_HOST_KEY,
    )
