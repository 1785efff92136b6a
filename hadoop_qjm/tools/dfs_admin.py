"""``hdfs-py dfsadmin``: NameNode administration over ClientProtocol (Hadoop's DFSAdmin).

::

    hdfs-py dfsadmin -rollEdits                      finalize the segment, start the next
    hdfs-py dfsadmin -saveNamespace [-beforeShutdown]

The NameNode is ``fs.defaultFS`` (``hdfs://host:port``) or ``dfs.namenode.rpc-address``;
for ``hdfs://<nameservice>`` of an HA pair the commands go to the active NameNode (a
standby answers StandbyException and the client fails over; these two commands are not
idempotent, so a connection lost mid-call is reported, not retried).
Output is DFSAdmin's ("Successfully rolled edit logs.", "Save namespace successful"); an
error is one line ``<command>: <message>`` and exit 1; a malformed command line exit 2.
Unlike Hadoop, -saveNamespace needs no safe mode (this NameNode has none): the image is
saved under the namesystem lock, between two segments.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from hadoop_qjm.common.exceptions import HadoopException, UsageError
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode.ha.failover_proxy import namenode_proxy_from_conf

__all__ = ["USAGE", "run"]

USAGE = """\
Usage: hdfs-py [--config DIR] dfsadmin
	[-rollEdits]
	[-saveNamespace [-beforeShutdown]]
"""


def _roll_edits(proxy: Any, args: list[str], conf) -> None:
    if args:
        raise UsageError(f"-rollEdits: unexpected argument '{args[0]}'")
    txid = proxy.roll_edits()
    print("Successfully rolled edit logs.")
    print(f"New segment starts at txid {txid}")


def _save_namespace(proxy: Any, args: list[str], conf) -> None:
    time_window = tx_gap = 0
    for arg in args:
        if arg != "-beforeShutdown":
            raise UsageError(f"-saveNamespace: unexpected argument '{arg}'")
        # Only checkpoint if the newest image is older than one checkpoint period or
        # more than checkpoint.txns behind (DFSAdmin.saveNamespace).
        time_window = conf.get_time_duration(
            keys.DFS_NAMENODE_CHECKPOINT_PERIOD_KEY,
            keys.DFS_NAMENODE_CHECKPOINT_PERIOD_DEFAULT,
            "s",
        )
        tx_gap = conf.get_int(
            keys.DFS_NAMENODE_CHECKPOINT_TXNS_KEY, keys.DFS_NAMENODE_CHECKPOINT_TXNS_DEFAULT
        )
    if proxy.save_namespace(time_window, tx_gap):
        print("Save namespace successful")
    else:
        print("No extra checkpoint has been made")


_COMMANDS = {"-rollEdits": _roll_edits, "-saveNamespace": _save_namespace}


def run(argv: Sequence[str], conf) -> int:
    """``hdfs-py dfsadmin -COMMAND [ARGS]``; returns the exit status."""
    args = list(argv)
    if not args or args[0] in ("-h", "-help", "--help"):
        print(USAGE, end="", file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    command = args.pop(0)
    action = _COMMANDS.get(command)
    if action is None:
        raise UsageError(f"{command}: Unknown command (run 'hdfs-py dfsadmin -help')")
    try:
        with namenode_proxy_from_conf(conf) as proxy:
            action(proxy, args, conf)
    except UsageError:
        raise
    except (HadoopException, OSError) as e:
        print(f"{command.lstrip('-')}: {e}", file=sys.stderr)
        return 1
    return 0
