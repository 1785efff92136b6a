"""``hdfs-py getconf``: configuration values and the nodes they name (Hadoop's ``hdfs getconf``).

Hadoop's GetConf, option by option (names matched without regard to case, as there)::

    -namenodes            the NameNodes' hosts, one line, space-separated
    -secondaryNameNodes   the SecondaryNameNodes' hosts (dfs.namenode.secondary.http-address)
    -backupNodes          the BackupNodes' hosts (dfs.namenode.backup.address)
    -journalNodes         the JournalNodes' hosts (dfs.namenode.shared.edits.dir)
    -includeFile          dfs.hosts
    -excludeFile          dfs.hosts.exclude
    -nnRpcAddresses       the NameNodes' RPC host:port, one a line
    -confKey KEY          the value of KEY, trimmed

plus ``-journalNodeAddresses``: the JournalNodes' host:port. The NameNodes are those of
every nameservice (``dfs.internal.nameservices``, else ``dfs.nameservices``) and each of
its NameNodes (``dfs.ha.namenodes.<ns>``); each one's address is its
``dfs.namenode.servicerpc-address``, else its ``dfs.namenode.rpc-address``, else the
host and port of an ``hdfs://`` ``fs.defaultFS`` (DFSUtil.getNNServiceRpcAddressesForCluster).
Hosts are printed as configured (Hadoop prints InetSocketAddress.getHostName(), which
may resolve an IP address to a name). A failure is one line on stderr and exit 1
(Hadoop: exit -1); a malformed command line exit 2.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from hadoop_qjm.common.exceptions import IOException, UsageError
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.conf.configuration import parse_host_port

__all__ = ["COMMANDS", "configured_addresses", "nn_service_rpc_addresses", "run", "usage"]

PROG = "hdfs-py getconf"


@dataclass(frozen=True)
class ConfiguredAddress:
    """One node's address: its nameservice and NameNode id (None when not suffixed)."""

    nameservice: str | None
    nnid: str | None
    host: str
    port: int


def _nameservices(conf) -> list[str | None]:
    return (
        conf.get_trimmed_strings(keys.DFS_INTERNAL_NAMESERVICES_KEY)
        or conf.get_trimmed_strings(keys.DFS_NAMESERVICES)
        or [None]
    )


def _suffixed(key: str, *suffixes: str | None) -> str:
    return ".".join([key, *(s for s in suffixes if s)])


def configured_addresses(
    conf,
    lookup_keys: Sequence[str],
    default_address: str | None = None,
    default_port: int | None = None,
    *,
    ignore_defaults: bool = False,
) -> list[ConfiguredAddress]:
    """The address of every nameservice and NameNode id: the first of ``lookup_keys``
    set with their suffix (``key.<ns>.<nnid>``), else ``default_address`` (DFSUtil.
    getAddressesForNsIds). ``ignore_defaults``: a value that is only the built-in
    default counts as unset (Hadoop has no default for the NameNode RPC keys)."""
    found = []
    for ns in _nameservices(conf):
        nnids = (
            conf.get_trimmed_strings(_suffixed(keys.DFS_HA_NAMENODES_KEY_PREFIX, ns)) if ns else []
        )
        for nnid in nnids or [None]:
            value, where = None, "fs.defaultFS"
            for key in lookup_keys:
                where = _suffixed(key, ns, nnid)
                value = conf.get_trimmed(where)
                if value is not None and ignore_defaults and conf.source(where) == "defaults":
                    value = None
                if value is not None:
                    break
            if value is None:
                value, where = default_address, keys.FS_DEFAULT_NAME_KEY
            if not value:
                continue
            try:
                host, port = parse_host_port(value, default_port)
            except ValueError as e:
                raise IOException(f"Invalid value for {where}: {e}") from None
            found.append(ConfiguredAddress(ns, nnid, host, port))
    return found


def _default_fs_address(conf) -> str | None:
    """host:port of ``fs.defaultFS`` when it is an ``hdfs://`` URI (DFSUtilClient.getNNAddress)."""
    uri = conf.get_trimmed(keys.FS_DEFAULT_NAME_KEY) or ""
    parts = urlsplit(uri)
    if parts.scheme != "hdfs" or not parts.netloc:
        return None
    return parts.netloc


def nn_service_rpc_addresses(conf) -> list[ConfiguredAddress]:
    """The NameNodes' service RPC addresses (see the module docstring); IOException with
    Hadoop's message if none is configured."""
    found = configured_addresses(
        conf,
        (keys.DFS_NAMENODE_SERVICE_RPC_ADDRESS_KEY, keys.DFS_NAMENODE_RPC_ADDRESS_KEY),
        _default_fs_address(conf),
        keys.DFS_NAMENODE_RPC_PORT_DEFAULT,
        ignore_defaults=True,
    )
    if not found:
        names = ", ".join(ns for ns in _nameservices(conf) if ns)
        raise IOException(
            f"Incorrect configuration: namenode address "
            f"{keys.DFS_NAMENODE_SERVICE_RPC_ADDRESS_KEY}.[{names}] or "
            f"{keys.DFS_NAMENODE_RPC_ADDRESS_KEY}.[{names}] is not configured."
        )
    return found


def _hosts_line(addresses: list[ConfiguredAddress]) -> list[str]:
    return [" ".join(a.host for a in addresses)]


def _namenodes(conf, args) -> list[str]:
    return _hosts_line(nn_service_rpc_addresses(conf))


def _secondary(conf, args) -> list[str]:
    return _hosts_line(configured_addresses(conf, (keys.DFS_NAMENODE_SECONDARY_HTTP_ADDRESS_KEY,)))


def _backup(conf, args) -> list[str]:
    return _hosts_line(configured_addresses(conf, (keys.DFS_NAMENODE_BACKUP_ADDRESS_KEY,)))


def _journal_addresses(conf) -> list[tuple[str, int]]:
    from hadoop_qjm.qjournal.client.qjournal_uri import parse_qjournal_uri
    from hadoop_qjm.qjournal.server.journal_peers import shared_edits_uri

    uri = shared_edits_uri(conf, None)
    if not uri:
        raise IOException(
            f"{keys.DFS_NAMENODE_SHARED_EDITS_DIR_KEY} is not set to a qjournal:// URI"
        )
    try:
        return parse_qjournal_uri(uri).addresses
    except ValueError as e:
        raise IOException(f"{keys.DFS_NAMENODE_SHARED_EDITS_DIR_KEY}: {e}") from None


def _journal_nodes(conf, args) -> list[str]:
    return [" ".join(dict.fromkeys(host for host, _ in _journal_addresses(conf)))]


def _journal_node_addresses(conf, args) -> list[str]:
    return [" ".join(f"{host}:{port}" for host, port in _journal_addresses(conf))]


def _nn_rpc_addresses(conf, args) -> list[str]:
    found = nn_service_rpc_addresses(conf)
    if not found:  # kept as in Hadoop, though the call above raises first
        raise IOException("Did not get namenode service rpc addresses.")
    return [f"{a.host}:{a.port}" for a in found]


def _key_value(key: str) -> Callable[[object, list[str]], list[str]]:
    def handler(conf, args) -> list[str]:
        name = args[0] if args else key
        value = conf.get(name)  # set but empty prints an empty line, as Hadoop's getTrimmed
        if value is None:
            raise IOException(f"Configuration {name} is missing.")
        return [value.strip()]

    return handler


@dataclass(frozen=True)
class Command:
    usage: str
    description: str
    handler: Callable[[object, list[str]], list[str]]
    #: Arguments after the option: 0, or 1 for -confKey.
    arguments: int = 0

    @property
    def name(self) -> str:
        return self.usage.split(" ")[0]


COMMANDS: tuple[Command, ...] = (
    Command("-namenodes", "gets list of namenodes in the cluster.", _namenodes),
    Command("-secondaryNameNodes", "gets list of secondary namenodes in the cluster.", _secondary),
    Command("-backupNodes", "gets list of backup nodes in the cluster.", _backup),
    Command("-journalNodes", "gets list of journal nodes in the cluster.", _journal_nodes),
    Command(
        "-journalNodeAddresses",
        "gets the journal nodes' rpc addresses (host:port).",
        _journal_node_addresses,
    ),
    Command(
        "-includeFile",
        "gets the include file path that defines the datanodes that can join the cluster.",
        _key_value(keys.DFS_HOSTS),
    ),
    Command(
        "-excludeFile",
        "gets the exclude file path that defines the datanodes that need to decommissioned.",
        _key_value(keys.DFS_HOSTS_EXCLUDE),
    ),
    Command("-nnRpcAddresses", "gets the namenode rpc addresses", _nn_rpc_addresses),
    Command("-confKey [key]", "gets a specific key from the configuration", _key_value(""), 1),
)
_BY_NAME = {command.name.lower(): command for command in COMMANDS}


def usage() -> str:
    lines = [
        "hdfs getconf is utility for getting configuration information from the config file.",
        "",
        "hdfs-py getconf",
    ]
    lines += [f"\t[{c.usage}]\t\t\t{c.description}" for c in COMMANDS]
    return "\n".join(lines)


def run(argv: list[str], conf) -> int:
    """Entry point of ``hdfs-py getconf``."""
    if argv and argv[0] in ("-h", "-help", "--help"):
        print(usage())
        return 0
    if not argv:
        names = ", ".join(c.name for c in COMMANDS)
        raise UsageError(f"{PROG}: one of {names} is required")
    command = _BY_NAME.get(argv[0].lower())
    if command is None:
        raise UsageError(f"{PROG}: unrecognized arguments: {' '.join(argv)}")
    args = argv[1:]
    if command.arguments == 1 and len(args) != 1:
        raise UsageError(f"{PROG}: usage: {command.usage}")
    if command.arguments == 0 and args:
        raise UsageError(f"{PROG}: Did not expect argument: {args[0]}")
    for line in command.handler(conf, args):
        print(line)
    return 0
