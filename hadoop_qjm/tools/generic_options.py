"""Hadoop's generic options of a tool's own command line (GenericOptionsParser), before
its command::

    hdfs-py dfsadmin -fs hdfs://nn1.example.com:8020 -saveNamespace
    hdfs-py dfsadmin -D dfs.client.failover.max.attempts=2 -rollEdits

``-fs URI`` sets ``fs.defaultFS`` — the one NameNode ``hdfs://host[:port]`` names, or the
HA nameservice ``hdfs://<nameservice>`` names; ``-D key=value`` (or ``-Dkey=value``) sets
a property, as ``hdfs-py -D`` before the command does.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hadoop_qjm.common.exceptions import IllegalArgumentException, UsageError
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode.protocol.client import parse_hdfs_uri

__all__ = ["GENERIC_USAGE", "parse_generic_options"]

GENERIC_USAGE = "[-fs <hdfs://namenode:port | hdfs://nameservice>] [-D <property=value>]"

#: What GenericOptionsParser records as the source of a value it set.
_SOURCE = "from command line"


def parse_generic_options(argv: Sequence[str], conf: Any) -> list[str]:
    """Apply the leading generic options of ``argv`` to ``conf``; the arguments after them.
    UsageError (one sentence, ``conf`` unchanged) for a malformed one."""
    args = list(argv)
    settings: list[tuple[str, str]] = []
    while args and (args[0] == "-fs" or args[0].startswith("-D")):
        opt = args.pop(0)
        if opt == "-fs":
            if not args:
                raise UsageError("-fs needs a URI (hdfs://namenode:port or hdfs://nameservice)")
            settings.append((keys.FS_DEFAULT_NAME_KEY, _checked_fs_uri(args.pop(0))))
            continue
        prop = opt[2:] or (args.pop(0) if args else "")
        key, sep, value = prop.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"-D needs key=value, got '{prop}'")
        settings.append((key.strip(), value))
    for key, value in settings:
        conf.set(key, value, _SOURCE)
    return args


def _checked_fs_uri(uri: str) -> str:
    """``uri`` if it is ``hdfs://authority[:port]`` (a NameNode, or a nameservice), else
    UsageError (DFSAdmin.getDFS: "FileSystem … is not an HDFS file system")."""
    if not uri.startswith("hdfs://"):
        raise UsageError(f"-fs: FileSystem {uri} is not an HDFS file system")
    try:
        parse_hdfs_uri(uri)
    except IllegalArgumentException as e:
        raise UsageError(f"-fs: {e}") from None
    return uri
