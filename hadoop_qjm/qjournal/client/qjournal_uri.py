"""``qjournal://host1:port1;host2:port2;host3:port3/<journalId>`` (digest §5 "URI").

Parsing is pure; :func:`get_addresses_list` resolves the hosts only through the
:class:`~hadoop_qjm.common.domain_name_resolver.DomainNameResolver` it is given, and with
``dfs.namenode.edits.qjournals.resolution-enabled`` lets one DNS name stand for every
JournalNode it resolves to (Hadoop's ``Util.getAddressesList``).
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from hadoop_qjm.common.domain_name_resolver import DomainNameResolver, new_domain_name_resolver
from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.common.net_exceptions import UnknownHostException
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.qjournal.protocol.rules import validate_journal_id

__all__ = [
    "DEFAULT_JOURNAL_RPC_PORT",
    "QJournalURI",
    "get_addresses_list",
    "parse_qjournal_uri",
    "resolved_qjournal_uri",
]

DEFAULT_JOURNAL_RPC_PORT = 8485
SCHEME = "qjournal"


@dataclass(frozen=True)
class QJournalURI:
    """The JournalNode RPC addresses and the journal id of a shared-edits URI."""

    addresses: tuple[tuple[str, int], ...]
    journal_id: str

    def __str__(self) -> str:
        hosts = ";".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in self.addresses)
        return f"{SCHEME}://{hosts}/{self.journal_id}"


def parse_qjournal_uri(uri: str, default_port: int = DEFAULT_JOURNAL_RPC_PORT) -> QJournalURI:
    """Parse a ``qjournal://`` URI; a missing port is ``default_port``, hosts are trimmed."""
    text = uri.strip()
    prefix = f"{SCHEME}://"
    if not text.lower().startswith(prefix):
        raise IllegalArgumentException(
            f"Not a qjournal URI (expected {prefix}host:port;…/jid): {uri}"
        )
    rest = text[len(prefix) :]
    authority, slash, path = rest.partition("/")
    if not slash or not path:
        raise IllegalArgumentException(f"No journal id in qjournal URI: {uri}")
    journal_id = path.rstrip("/")
    validate_journal_id(journal_id)
    parts = [part.strip() for part in authority.split(";")]
    if parts == [""]:
        raise IllegalArgumentException(f"No JournalNode addresses in qjournal URI: {uri}")
    addresses = [_address(part, default_port, uri) for part in parts]
    return QJournalURI(tuple(addresses), journal_id)


#: A host name or IPv4 address as a URI's authority may hold it (RFC 3986 reg-name, minus
#: the characters a host name never has).
_HOST_CHARS = re.compile(r"[A-Za-z0-9._-]+")


def _address(part: str, default_port: int, uri: str) -> tuple[str, int]:
    """``host[:port]`` or ``[ipv6][:port]`` of one JournalNode of ``uri``."""
    if not part:  # "a;;b", or a trailing ';': Hadoop's URI parse refuses it as well
        raise IllegalArgumentException(f"Empty JournalNode address in qjournal URI: {uri}")
    if part.startswith("["):
        host, bracket, tail = part[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            raise IllegalArgumentException(f"Bad IPv6 address '{part}' in qjournal URI: {uri}")
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise IllegalArgumentException(
                f"Bad IPv6 address '{part}' in qjournal URI: {uri}"
            ) from None
        sep, port_text = (":", tail[1:]) if tail else ("", "")
    else:
        host, sep, port_text = part.partition(":")
        if ":" in port_text:
            raise IllegalArgumentException(
                f"Bad address '{part}' (an IPv6 address goes in brackets: [::1]:8485) in "
                f"qjournal URI: {uri}"
            )
        host = host.strip()
        if not host:
            raise IllegalArgumentException(f"Empty host in qjournal URI: {uri}")
        if not _HOST_CHARS.fullmatch(host):
            raise IllegalArgumentException(f"Bad host '{host}' in qjournal URI: {uri}")
    if not sep:
        return host, default_port
    if not port_text.isdigit() or not 0 < int(port_text) <= 65535:
        raise IllegalArgumentException(f"Bad port '{port_text}' in qjournal URI: {uri}")
    return host, int(port_text)


def get_addresses_list(
    uri: str | QJournalURI, conf, resolver: DomainNameResolver | None = None
) -> list[tuple[str, int]]:
    """The JournalNode addresses of ``uri``, each host checked to resolve (Hadoop's
    ``Util.getAddressesList``): with ``dfs.namenode.edits.qjournals.resolution-enabled``
    a name stands for the FQDN of every address it resolves to, each with the name's port.
    UnknownHostException names the first entry that resolves to nothing. ``resolver``
    defaults to the one ``dfs.namenode.edits.qjournals.resolver.impl`` names."""
    parsed = uri if isinstance(uri, QJournalURI) else parse_qjournal_uri(uri)
    if resolver is None:
        resolver = new_domain_name_resolver(
            conf, keys.DFS_NAMENODE_EDITS_QJOURNALS_RESOLUTION_RESOLVER_IMPL
        )
    expand = conf.get_bool(
        keys.DFS_NAMENODE_EDITS_QJOURNALS_RESOLUTION_ENABLED_KEY,
        keys.DFS_NAMENODE_EDITS_QJOURNALS_RESOLUTION_ENABLED_DEFAULT,
    )
    addresses: list[tuple[str, int]] = []
    for host, port in parsed.addresses:
        if not expand:
            resolver.get_all_by_domain_name(host)  # raises UnknownHostException
            addresses.append((host, port))
            continue
        hostnames = resolver.get_all_resolved_hostname_by_domain_name(host, True)
        if not hostnames:
            raise UnknownHostException(f"{host}:{port}")
        addresses.extend((name, port) for name in hostnames)
    return addresses


def resolved_qjournal_uri(
    uri: str | QJournalURI, conf, resolver: DomainNameResolver | None = None
) -> QJournalURI:
    """``uri`` parsed, its DNS names expanded to their JournalNodes when
    ``dfs.namenode.edits.qjournals.resolution-enabled`` is on (the QuorumJournalManager's
    loggers; otherwise each logger checks its own host)."""
    parsed = uri if isinstance(uri, QJournalURI) else parse_qjournal_uri(uri)
    if not conf.get_bool(
        keys.DFS_NAMENODE_EDITS_QJOURNALS_RESOLUTION_ENABLED_KEY,
        keys.DFS_NAMENODE_EDITS_QJOURNALS_RESOLUTION_ENABLED_DEFAULT,
    ):
        return parsed
    return QJournalURI(tuple(get_addresses_list(parsed, conf, resolver)), parsed.journal_id)
