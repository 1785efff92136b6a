"""``hdfs-py namenode``: run a NameNode in the foreground, or one of its one-shot commands
(``-format``, ``-initializeSharedEdits``, ``-bootstrapStandby``, ``-checkpointOffline``;
``-rollingUpgrade rollback`` rolls back before the daemon starts, ``started`` starts it into
the rolling upgrade in progress, which lets software of a newer layout load the older one;
:mod:`hadoop_qjm.namenode.name_node_commands`). The daemon is
:class:`~hadoop_qjm.namenode.name_node.NameNode`.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Sequence

from hadoop_qjm.common.command_line import print_daemon_started
from hadoop_qjm.common.exceptions import HadoopException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode.name_node import NameNode

__all__ = ["run", "run_daemon"]

LOG = logging.getLogger("hadoop_qjm.namenode.name_node")  # the daemon's log, as before


def run_daemon(conf: Configuration, *, upgrade: bool = False) -> int:
    """Run a NameNode in the foreground until SIGTERM or SIGINT (``upgrade``: -upgrade)."""
    from hadoop_qjm.common.daemon_logging import (
        configure_audit_logging,
        configure_logging,
        daemon_log_file,
    )
    from hadoop_qjm.namenode.fs_namesystem_audit_logger import AUDIT_LOGGER_NAME

    log_file = daemon_log_file("namenode")
    configure_logging(log_file=log_file, default_level="INFO")
    configure_audit_logging(AUDIT_LOGGER_NAME, log_file)  # hdfs-audit.log beside it
    node = NameNode(conf, upgrade=upgrade)
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        LOG.info("Received signal %d, shutting down", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        node.start()
    except (HadoopException, OSError) as e:
        from hadoop_qjm.namenode.name_node_commands import one_line

        raise one_line(e) from e  # the log has the details; the command line gets one line
    print_daemon_started("NameNode", node)
    try:
        # The wait is interrupted by the signal handler; the timeout only bounds each wait.
        while not stop.wait(3600):
            pass
    finally:
        node.stop()
    return 0


def _rolling_rollback(conf: Configuration) -> None:
    """``-rollingUpgrade rollback``'s offline part, before the daemon starts."""
    from hadoop_qjm.namenode.name_node_commands import one_line
    from hadoop_qjm.namenode.rolling_rollback import rolling_rollback

    # It logs what it did: the daemon's first line on stdout is its "started" line.
    try:
        rolling_rollback(conf)
    except (HadoopException, OSError) as e:
        raise one_line(e) from e


def run(argv: Sequence[str], conf: Configuration | None) -> int:
    """``hdfs-py namenode [-observer | -format ... | -initializeSharedEdits ... |
    -checkpointOffline DIR]``."""
    from hadoop_qjm.namenode.name_node_commands import parse_startup_option, run_command

    argv = list(argv)
    observer = any(a.lower() == "-observer" for a in argv)
    if observer:  # start as an observer: the same as dfs.namenode.observer.enabled (HDFS-17167)
        argv = [a for a in argv if a.lower() != "-observer"]
    option = parse_startup_option(argv)
    if observer and option.command != "daemon":
        from hadoop_qjm.common.exceptions import UsageError

        raise UsageError("-observer starts the NameNode daemon and takes no other command")
    if option.command == "help":
        return 0
    if option.command in ("daemon", "upgrade"):
        from hadoop_qjm.namenode.ha.ha_util import resolve_ha_conf

        conf, _, _ = resolve_ha_conf(conf, getattr(option, "nnid", None))  # type: ignore[arg-type]
        if observer:
            conf.set(keys.DFS_NAMENODE_OBSERVER_ENABLED_KEY, "true")
        if option.rolling_upgrade == "rollback":
            _rolling_rollback(conf)
        elif option.rolling_upgrade == "started":
            # NameNode.setStartupOption: how the option reaches the storage checks.
            from hadoop_qjm.namenode.name_node_layout_version import ROLLING_UPGRADE_STARTED

            conf.set(keys.DFS_NAMENODE_STARTUP_KEY, ROLLING_UPGRADE_STARTED)
        return run_daemon(conf, upgrade=option.command == "upgrade")
    return run_command(option, conf)  # type: ignore[arg-type]
