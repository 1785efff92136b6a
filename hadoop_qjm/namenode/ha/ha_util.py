"""HA configuration, the Hadoop way (DFSUtil, HAUtil, NameNode.initializeGenericKeys).

A nameservice ``ns`` (``dfs.nameservices``) has NameNodes ``dfs.ha.namenodes.<ns>``
(e.g. ``nn1,nn2``); each NameNode's own values are the keys suffixed with
``.<ns>.<nn>`` — ``dfs.namenode.rpc-address.mycluster.nn1``,
``dfs.namenode.http-address.mycluster.nn1``, ``dfs.namenode.name.dir.mycluster.nn1`` — and
:func:`initialize_generic_keys` copies them onto the plain keys, so the rest of the
NameNode reads ``dfs.namenode.rpc-address`` as if there were one.

Which NameNode a process is: ``-nnid`` on the command line, else ``dfs.ha.namenode.id``,
else the one whose RPC address is an address of this machine (an error if none or more
than one is: on one host running two NameNodes, give the id).

Clients name the nameservice, ``fs.defaultFS=hdfs://mycluster``, and fail over between its
NameNodes (:mod:`hadoop_qjm.namenode.ha.failover_proxy`).
"""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Any

from hadoop_qjm.common.exceptions import ConfigurationError
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys

__all__ = [
    "MAX_RECOMMENDED_NAMENODES",
    "NAMENODE_SPECIFIC_KEYS",
    "NameNodeAddress",
    "get_nameservice_id",
    "get_namenode_ids",
    "get_namenode_id",
    "ha_namenodes",
    "image_transfer_base",
    "initialize_generic_keys",
    "is_automatic_failover_enabled",
    "is_ha_enabled",
    "namenode_count_warning",
    "other_namenodes",
    "resolve_ha_conf",
    "suffixed",
    "zkfc_address",
]

#: Keys a NameNode of an HA pair may set per NameNode (NameNode.NAMENODE_SPECIFIC_KEYS).
NAMENODE_SPECIFIC_KEYS = (
    "dfs.namenode.rpc-address",
    "dfs.namenode.rpc-bind-host",
    "dfs.namenode.name.dir",
    "dfs.namenode.edits.dir",
    "dfs.namenode.shared.edits.dir",
    "dfs.namenode.checkpoint.dir",
    "dfs.namenode.checkpoint.edits.dir",
    "dfs.namenode.http-address",
    "dfs.namenode.https-address",
    "dfs.namenode.http-bind-host",
    "dfs.namenode.https-bind-host",
    "dfs.namenode.servicerpc-address",
    "dfs.ha.zkfc.port",
)

#: Keys the whole nameservice may set (NameNode.NAMESERVICE_SPECIFIC_KEYS).
NAMESERVICE_SPECIFIC_KEYS = ("dfs.ha.automatic-failover.enabled",)

_WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")

#: More NameNodes than this in one nameservice work but are not recommended (HDFS-6440;
#: Hadoop's HA guide: "not exceed 5 - with a recommended 3 NameNodes - due to
#: communication overheads").
MAX_RECOMMENDED_NAMENODES = 5


def suffixed(key: str, *suffixes: str | None) -> str:
    """``key.<s1>.<s2>`` for the non-empty suffixes (DFSUtil.addKeySuffixes)."""
    return ".".join([key, *(s for s in suffixes if s)])


def get_nameservice_id(conf: Configuration) -> str | None:
    """This node's nameservice: ``dfs.nameservice.id``, else the only one configured in
    ``dfs.internal.nameservices`` / ``dfs.nameservices``, else None (no nameservice)."""
    explicit = conf.get_trimmed(keys.DFS_NAMESERVICE_ID)
    if explicit:
        return explicit
    names = conf.get_trimmed_strings(keys.DFS_INTERNAL_NAMESERVICES_KEY) or (
        conf.get_trimmed_strings(keys.DFS_NAMESERVICES)
    )
    if not names:
        return None
    if len(names) > 1:
        raise ConfigurationError(
            f"Configuration has multiple nameservices ({', '.join(names)}): set "
            f"{keys.DFS_NAMESERVICE_ID} to the one this node belongs to"
        )
    return names[0]


def get_namenode_ids(conf: Configuration, nameservice: str | None) -> list[str]:
    """The NameNode ids of ``nameservice`` (``dfs.ha.namenodes.<ns>``); [] without one."""
    if not nameservice:
        return []
    return conf.get_trimmed_strings(suffixed(keys.DFS_HA_NAMENODES_KEY_PREFIX, nameservice))


def namenode_count_warning(conf: Configuration, nameservice: str | None) -> str | None:
    """The warning a NameNode logs when ``nameservice`` lists more than
    :data:`MAX_RECOMMENDED_NAMENODES` NameNodes, else None."""
    ids = get_namenode_ids(conf, nameservice)
    if len(ids) <= MAX_RECOMMENDED_NAMENODES:
        return None
    return (
        f"{suffixed(keys.DFS_HA_NAMENODES_KEY_PREFIX, nameservice)} lists {len(ids)} NameNodes "
        f"({', '.join(ids)}): it is suggested not to exceed {MAX_RECOMMENDED_NAMENODES} - with "
        f"a recommended 3 NameNodes - due to communication overheads"
    )


def is_ha_enabled(conf: Configuration, nameservice: str | None = None) -> bool:
    """More than one NameNode configured for the nameservice (HAUtil.isHAEnabled)."""
    if nameservice is None:
        nameservice = get_nameservice_id(conf)
    return len(get_namenode_ids(conf, nameservice)) > 1


@dataclass(frozen=True)
class NameNodeAddress:
    """One NameNode of a nameservice: its id, RPC and HTTP addresses as configured."""

    nnid: str
    rpc: tuple[str, int]
    http: tuple[str, int] | None
    https: tuple[str, int] | None = None

    @property
    def rpc_text(self) -> str:
        return f"{self.rpc[0]}:{self.rpc[1]}"

    @property
    def client_rpc(self) -> tuple[str, int]:
        """The RPC address a client dials (a wildcard host means this machine)."""
        host = self.rpc[0]
        return ("127.0.0.1" if host in _WILDCARD_HOSTS else host.strip("[]")), self.rpc[1]

    @property
    def client_http(self) -> tuple[str, int] | None:
        return _dialable(self.http)

    @property
    def client_https(self) -> tuple[str, int] | None:
        return _dialable(self.https)


def _dialable(address: tuple[str, int] | None) -> tuple[str, int] | None:
    if address is None:
        return None
    host = address[0]
    return ("127.0.0.1" if host in _WILDCARD_HOSTS else host.strip("[]")), address[1]


def image_transfer_base(conf: Configuration, nn: NameNodeAddress) -> tuple[str, Any] | None:
    """``(base URL, ssl context or None)`` for ``/imagetransfer`` on ``nn``: HTTPS (with the
    client certificate of ssl-client.xml) whenever ``dfs.http.policy`` enables it, else
    HTTP; None if that address is not configured."""
    from hadoop_qjm.common.security import SSLFactory

    factory = SSLFactory(conf)
    if factory.http_policy.https_enabled:
        address = nn.client_https
        if address is None:
            return None
        return f"https://{address[0]}:{address[1]}", factory.http_client_context()
    address = nn.client_http
    return (f"http://{address[0]}:{address[1]}", None) if address is not None else None


def ha_namenodes(conf: Configuration, nameservice: str | None = None) -> list[NameNodeAddress]:
    """Every NameNode of the nameservice, in ``dfs.ha.namenodes.<ns>`` order; each must
    have ``dfs.namenode.rpc-address.<ns>.<nn>`` (ConfigurationError naming the key)."""
    if nameservice is None:
        nameservice = get_nameservice_id(conf)
    result = []
    for nnid in get_namenode_ids(conf, nameservice):
        rpc_key = suffixed(keys.DFS_NAMENODE_RPC_ADDRESS_KEY, nameservice, nnid)
        if not conf.get_trimmed(rpc_key):
            raise ConfigurationError(f"{rpc_key} is not set: every NameNode needs an RPC address")
        rpc = conf.get_socket_address(rpc_key, None, keys.DFS_NAMENODE_RPC_PORT_DEFAULT)
        http_key = suffixed(keys.DFS_NAMENODE_HTTP_ADDRESS_KEY, nameservice, nnid)
        http = (
            conf.get_socket_address(http_key, None, keys.DFS_NAMENODE_HTTP_PORT_DEFAULT)
            if conf.get_trimmed(http_key)
            else None
        )
        https_key = suffixed(keys.DFS_NAMENODE_HTTPS_ADDRESS_KEY, nameservice, nnid)
        https = (
            conf.get_socket_address(https_key, None, keys.DFS_NAMENODE_HTTPS_PORT_DEFAULT)
            if conf.get_trimmed(https_key)
            else None
        )
        result.append(NameNodeAddress(nnid, rpc, http, https))
    return result


def other_namenodes(
    conf: Configuration, nameservice: str | None, nnid: str | None
) -> list[NameNodeAddress]:
    """Every NameNode of ``nameservice`` but ``nnid``, in configured order
    (HAUtil.getNameNodeIdOfOtherNodes / getConfForOtherNodes: with three to five NameNodes
    there are several; the standby asks each of them)."""
    return [nn for nn in ha_namenodes(conf, nameservice) if nn.nnid != nnid]


def is_automatic_failover_enabled(conf: Configuration, nameservice: str | None) -> bool:
    """``dfs.ha.automatic-failover.enabled.<ns>``, else the plain key (default false)."""
    key = keys.DFS_HA_AUTO_FAILOVER_ENABLED_KEY
    if nameservice and conf.get_raw(suffixed(key, nameservice)) is not None:
        return conf.get_bool(suffixed(key, nameservice), False)
    return conf.get_bool(key, keys.DFS_HA_AUTO_FAILOVER_ENABLED_DEFAULT)


def zkfc_address(
    conf: Configuration, nameservice: str | None, nn: NameNodeAddress
) -> tuple[str, int]:
    """Where a client dials NameNode ``nn``'s failover controller (NNHAServiceTarget): the
    host of its RPC address (a wildcard host means this machine) and ``dfs.ha.zkfc.port``
    (``.<ns>.<nnid>``, ``.<ns>``, plain; 8019)."""
    port = keys.DFS_HA_ZKFC_PORT_DEFAULT
    for name in (
        suffixed(keys.DFS_HA_ZKFC_PORT_KEY, nameservice, nn.nnid),
        suffixed(keys.DFS_HA_ZKFC_PORT_KEY, nameservice),
        keys.DFS_HA_ZKFC_PORT_KEY,
    ):
        if conf.get_raw(name) is not None:
            port = conf.get_int(name)
            break
    if not 0 <= port <= 65535:
        raise ConfigurationError(f"{keys.DFS_HA_ZKFC_PORT_KEY} {port} is not a port number")
    return nn.client_rpc[0], port


def _is_local_address(host: str) -> bool:
    if host in _WILDCARD_HOSTS:
        return True
    try:
        addrs = {info[4][0] for info in socket.getaddrinfo(host, None)}
    except OSError:
        return False
    for addr in addrs:
        if addr.startswith("127.") or addr == "::1":
            return True
        try:
            with socket.socket(
                socket.AF_INET6 if ":" in addr else socket.AF_INET, socket.SOCK_DGRAM
            ) as s:
                s.bind((addr, 0))  # binds only to an address of this machine
            return True
        except OSError:
            continue
    return False


def get_namenode_id(
    conf: Configuration, nameservice: str | None, explicit: str | None = None
) -> str | None:
    """Which NameNode of ``nameservice`` this process is (see the module docstring)."""
    ids = get_namenode_ids(conf, nameservice)
    nnid = explicit or conf.get_trimmed(keys.DFS_HA_NAMENODE_ID_KEY)
    if nnid:
        if ids and nnid not in ids:
            raise ConfigurationError(
                f"NameNode id {nnid} is not one of {suffixed(keys.DFS_HA_NAMENODES_KEY_PREFIX, nameservice)}"
                f" ({', '.join(ids)})"
            )
        return nnid
    if not ids:
        return None
    matches = [nn.nnid for nn in ha_namenodes(conf, nameservice) if _is_local_address(nn.rpc[0])]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise ConfigurationError(
            f"Configuration has no addresses that match local node's address for nameservice "
            f"{nameservice}: set {keys.DFS_HA_NAMENODE_ID_KEY} or pass -nnid"
        )
    raise ConfigurationError(
        f"Configuration has multiple addresses that match local node's address "
        f"({', '.join(matches)}): set {keys.DFS_HA_NAMENODE_ID_KEY} or pass -nnid"
    )


def initialize_generic_keys(
    conf: Configuration, nameservice: str | None, nnid: str | None
) -> Configuration:
    """A copy of ``conf`` with this NameNode's suffixed keys copied onto the plain ones
    (NameNode.initializeGenericKeys); ``fs.defaultFS`` becomes ``hdfs://<ns>``."""
    result = conf.copy()
    if nameservice:
        result.set(keys.DFS_NAMESERVICE_ID, nameservice)
        for key in NAMESERVICE_SPECIFIC_KEYS:
            value = conf.get_raw(suffixed(key, nameservice))
            if value is not None:
                result.set(key, value)
    if nnid:
        result.set(keys.DFS_HA_NAMENODE_ID_KEY, nnid)
    for key in NAMENODE_SPECIFIC_KEYS:
        for name in (suffixed(key, nameservice), suffixed(key, nameservice, nnid)):
            if name == key:
                continue
            value = conf.get_raw(name)
            if value is not None:
                result.set(key, value)
    if nameservice and is_ha_enabled(conf, nameservice):
        result.set(keys.FS_DEFAULT_NAME_KEY, f"hdfs://{nameservice}")
    return result


def resolve_ha_conf(
    conf: Configuration, explicit_nnid: str | None = None
) -> tuple[Configuration, str | None, str | None]:
    """``(conf for this NameNode, nameservice, nnid)``: without HA, ``conf`` itself and
    Nones; with HA, the generic keys of the NameNode this process is."""
    nameservice = get_nameservice_id(conf)
    if not is_ha_enabled(conf, nameservice):
        if explicit_nnid:
            raise ConfigurationError(
                f"-nnid {explicit_nnid} given but HA is not configured: set "
                f"{keys.DFS_NAMESERVICES} and {keys.DFS_HA_NAMENODES_KEY_PREFIX}.<nameservice>"
            )
        return conf, nameservice, None
    nnid = get_namenode_id(conf, nameservice, explicit_nnid)
    return initialize_generic_keys(conf, nameservice, nnid), nameservice, nnid
