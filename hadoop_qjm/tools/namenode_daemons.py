"""Which NameNodes (and their ZKFCs) a configuration directory runs on this machine, and what
their pid and log files are named: one rule for ``hadoop-daemon-py.sh`` / ``hdfs-py
--daemon`` and ``start-dfs-py.sh`` / ``stop-dfs-py.sh``, so either stops what the other
started.

- The name is Hadoop's, ``hadoop-<ident>-namenode.pid`` (``-zkfc.pid``), when one NameNode
  of the nameservice has its RPC address on this machine (the usual deployment), and
  ``hadoop-<ident>-<nnid>-namenode.pid`` when several have (one machine standing in for
  several hosts: their pid and log files must not clash).
- The NameNode a daemon is: ``-nnid``, else ``dfs.ha.namenode.id`` (Hadoop's key: which
  NameNode this host is), else the only one whose RPC address is on this machine — as the
  daemon itself decides (``ha_util.get_namenode_id``).
- start-dfs and stop-dfs start and stop, of the NameNodes on this machine, the one
  ``dfs.ha.namenode.id`` names when the configuration directory sets it (one directory per
  host, several "hosts" on one machine: the others are started with their own directory),
  else every one of them, each with ``-nnid``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hadoop_qjm.common.exceptions import HadoopException, UsageError
from hadoop_qjm.conf import dfs_config_keys as keys

__all__ = [
    "NAMENODE_DAEMONS",
    "daemon_ident",
    "ident_for",
    "local_namenode_ids",
    "nnid_argument",
    "own_namenode_id",
]

NAMENODE_DAEMONS = ("namenode", "zkfc")


def local_namenode_ids(conf, is_local_host: Callable[[str], bool]) -> list[str]:
    """The NameNodes of this process's nameservice whose RPC address is on this machine, in
    ``dfs.ha.namenodes.<ns>`` order (empty without HA)."""
    from hadoop_qjm.namenode.ha import ha_util

    nameservice = ha_util.get_nameservice_id(conf)
    if not ha_util.is_ha_enabled(conf, nameservice):
        return []
    return [
        nn.nnid for nn in ha_util.ha_namenodes(conf, nameservice) if is_local_host(nn.client_rpc[0])
    ]


def own_namenode_id(conf) -> str | None:
    """``dfs.ha.namenode.id``: the NameNode this configuration directory says this host is."""
    return conf.get_trimmed(keys.DFS_HA_NAMENODE_ID_KEY)


def daemon_ident(base_ident: str, nnid: str | None, local_ids: Sequence[str]) -> str:
    """``<ident>-<nnid>`` for NameNode ``nnid``'s daemons when several NameNodes are on this
    machine, else ``<ident>``."""
    if nnid and nnid in local_ids and len(local_ids) > 1:
        return f"{base_ident}-{nnid}"
    return base_ident


def nnid_argument(args: Sequence[str]) -> str | None:
    """The value of ``-nnid`` in a daemon's arguments, or None."""
    for i, word in enumerate(args[:-1]):
        if word == "-nnid":
            return args[i + 1]
    return None


def ident_for(
    conf,
    base_ident: str,
    action: str,
    args: Sequence[str],
    is_local_host: Callable[[str], bool],
) -> str:
    """The ident of a ``namenode`` or ``zkfc`` daemon started, stopped or queried with
    ``args`` (see the module doc). When several NameNodes are on this machine and none is
    named, ``stop`` and ``status`` cannot tell which is meant (UsageError); ``start`` goes
    on with ``<ident>``, and the daemon says why it cannot choose."""
    local_ids = local_namenode_ids(conf, is_local_host)
    if len(local_ids) <= 1:
        return base_ident
    nnid = nnid_argument(args) or own_namenode_id(conf)
    if nnid is None:
        try:
            from hadoop_qjm.namenode.ha.ha_util import get_namenode_id, get_nameservice_id

            nnid = get_namenode_id(conf, get_nameservice_id(conf))
        except HadoopException:
            nnid = None
    if nnid is None and action != "start":
        raise UsageError(
            f"{len(local_ids)} NameNodes are on this host ({', '.join(local_ids)}): name one "
            f"with -nnid, or set {keys.DFS_HA_NAMENODE_ID_KEY}"
        )
    return daemon_ident(base_ident, nnid, local_ids)
