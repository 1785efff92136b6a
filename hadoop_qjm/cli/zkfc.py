"""``hdfs-py zkfc [-nnid NNID] [-formatZK [-force] [-nonInteractive]]``: run the failover
controller of this host's NameNode, or format its parent znode
(:mod:`hadoop_qjm.namenode.ha.dfs_zk_failover_controller` has the controller, the exit
codes and what they mean).
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
from collections.abc import Sequence

from hadoop_qjm.common.exceptions import HadoopException, IOException, UsageError, one_line_message
from hadoop_qjm.common.security.caller_identity import caller_identity_from_conf
from hadoop_qjm.common.security.service_authorization import service_authorization_from_conf
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.ha.active_standby_elector import ZooKeeperConnectionException
from hadoop_qjm.ha.zk_failover_controller import ZKFailoverController
from hadoop_qjm.namenode.ha.dfs_zk_failover_controller import (
    ERR_CODE_AUTO_FAILOVER_NOT_ENABLED,
    ERR_CODE_NO_FENCER,
    ERR_CODE_NO_PARENT_ZNODE,
    ERR_CODE_NO_ZK,
    create_controller,
    format_zk,
    ha_bind_host,
)
from hadoop_qjm.namenode.ha.ha_util import is_automatic_failover_enabled

__all__ = ["run"]

#: The controller's log, as before the command line moved here.
LOG = logging.getLogger("hadoop_qjm.namenode.ha.dfs_zk_failover_controller")

USAGE = "Usage: hdfs-py zkfc [-nnid NNID] [-formatZK [-force] [-nonInteractive]]"


# ---- the command line ----------------------------------------------------------------------------
def _parse(argv: Sequence[str]) -> tuple[str | None, bool, bool, bool]:
    """``(nnid, format, force, interactive)``; UsageError for anything else."""
    args = list(argv)
    nnid = None
    if "-nnid" in args:
        i = args.index("-nnid")
        if i + 1 >= len(args) or args[i + 1].startswith("-"):
            raise UsageError("-nnid needs a NameNode id")
        nnid = args[i + 1]
        del args[i : i + 2]
    if not args:
        return nnid, False, False, True
    if args[0] != "-formatZK":
        raise UsageError(f"zkfc: unknown option '{args[0]}' ({USAGE})")
    flags = set(args[1:])
    unknown = flags - {"-force", "-nonInteractive"}
    if unknown or len(flags) != len(args) - 1:
        raise UsageError(
            f"zkfc -formatZK: unknown option '{sorted(unknown)[0] if unknown else args[1]}' ({USAGE})"
        )
    return nnid, True, "-force" in flags, "-nonInteractive" not in flags


def _check_startable(
    controller: ZKFailoverController, conf: Configuration
) -> tuple[int, str] | None:
    """Hadoop's checks before the controller runs: (exit status, one line) or None."""
    nameservice = controller.local.nameservice  # type: ignore[attr-defined]
    if not is_automatic_failover_enabled(conf, nameservice):
        return ERR_CODE_AUTO_FAILOVER_NOT_ENABLED, (
            f"Automatic failover is not enabled for {controller.local}. Please ensure that "
            f"automatic failover is enabled in the configuration ({keys.DFS_HA_AUTO_FAILOVER_ENABLED_KEY}) "
            "before running the ZK failover controller."
        )
    if not controller.elector.parent_znode_exists():
        return ERR_CODE_NO_PARENT_ZNODE, (
            f"Unable to start failover controller. Parent znode {controller.elector.parent} "
            "does not exist. Run with -formatZK flag to initialize ZooKeeper."
        )
    return None


def run(argv: Sequence[str], conf: Configuration | None) -> int:
    """``hdfs-py zkfc [-nnid NNID] [-formatZK [-force] [-nonInteractive]]``."""
    from hadoop_qjm.ha.node_fencer import BadFencingConfigurationException

    if argv and argv[0] in ("-h", "-help", "--help"):
        print(USAGE)
        return 0
    nnid, formatting, force, interactive = _parse(argv)
    conf = conf or Configuration()
    # kazoo warns at every failed connection attempt; a command line says one line (below),
    # the daemon's log gets them all (_run_daemon).
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    try:
        controller, conf = create_controller(conf, nnid, fencing=not formatting)
    except BadFencingConfigurationException as e:
        print(
            f"zkfc: fencing is not configured ({one_line_message(e)}); you must configure a "
            f"fencing method ({keys.DFS_HA_FENCE_METHODS_KEY}) before using automatic failover",
            file=sys.stderr,
        )
        return ERR_CODE_NO_FENCER
    try:
        problem = _check_startable(controller, conf)
        if formatting and (problem is None or problem[0] == ERR_CODE_NO_PARENT_ZNODE):
            return format_zk(controller, force, interactive)
    except ZooKeeperConnectionException as e:
        print(
            f"zkfc: Unable to start failover controller. {one_line_message(e)}. Please check "
            f"the configured value for {keys.HA_ZK_QUORUM_KEY} and ensure that ZooKeeper is "
            "running.",
            file=sys.stderr,
        )
        return ERR_CODE_NO_ZK
    finally:
        if formatting:
            controller.elector.terminate()
    if problem is not None:
        controller.elector.terminate()
        print(f"zkfc: {problem[1]}", file=sys.stderr)
        return problem[0]
    return _run_daemon(controller, conf)


def _run_daemon(controller: ZKFailoverController, conf: Configuration) -> int:
    from hadoop_qjm.common.daemon_logging import configure_logging, daemon_log_file
    from hadoop_qjm.common.security import SSLFactory
    from hadoop_qjm.ha.zkfc_protocol import ZKFCRpcServer

    configure_logging(log_file=daemon_log_file("zkfc"), default_level="INFO")
    logging.getLogger("kazoo").setLevel(logging.NOTSET)
    local = controller.local
    bind_host = ha_bind_host(conf, local)  # type: ignore[arg-type]
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        LOG.info("Received signal %d, shutting down", signum)
        stop.set()
        controller.interrupt()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        server = ZKFCRpcServer(
            controller,
            bind_host,
            local.zkfc_address[1],
            socket_factory=SSLFactory(conf).rpc_server_socket_factory(),
            caller_identity=caller_identity_from_conf(conf),
            service_authorization=service_authorization_from_conf(conf),
        )
    except (HadoopException, OSError) as e:
        controller.elector.terminate()
        raise IOException(
            f"Unable to start the failover controller's RPC server on {bind_host}:"
            f"{local.zkfc_address[1]} ({keys.DFS_HA_ZKFC_PORT_KEY}): {one_line_message(e)}"
        ) from e
    server.start()
    controller.start()
    print(
        f"ZKFailoverController started pid={os.getpid()} rpc={bind_host}:{server.port} "
        f"nn={local.nnid}",  # type: ignore[attr-defined]
        flush=True,
    )
    LOG.info("ZKFC for %s serving on %s:%d", local, bind_host, server.port)
    try:
        fatal = controller.wait()
    finally:
        server.stop()
        controller.stop()
    if fatal is not None and not stop.is_set():
        print(f"zkfc: ZK Failover Controller failed: {fatal}", file=sys.stderr)
        return 1
    return 0
