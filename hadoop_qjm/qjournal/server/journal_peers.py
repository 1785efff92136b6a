"""Who a JournalNode's peers are: the shared-edits URI of the configuration
(``dfs.namenode.shared.edits.dir``, per nameservice or NameNode), its addresses checked
to resolve, less this node (Hadoop's ``JournalNodeSyncer.getJournalAddrList``)."""

from __future__ import annotations

import ipaddress
import logging
import socket
from functools import cache

import psutil

from hadoop_qjm.common.domain_name_resolver import DNSDomainNameResolver, DomainNameResolver
from hadoop_qjm.common.exceptions import HadoopException
from hadoop_qjm.qjournal.client.qjournal_uri import get_addresses_list

__all__ = ["is_self", "journal_addr_list", "local_addresses", "shared_edits_uri"]

#: The syncer's logger, as before these moved here (log_level maps JournalNodeSyncer to it).
LOG = logging.getLogger("hadoop_qjm.qjournal.server.journal_node_syncer")


def shared_edits_uri(conf, name_service_id: str | None) -> str | None:
    """``dfs.namenode.shared.edits.dir``, else its ``.<nsId>`` / ``.<nsId>.<nnId>`` forms."""
    uri = conf.get_trimmed("dfs.namenode.shared.edits.dir")
    if uri:
        return uri
    name_services = (
        [name_service_id] if name_service_id else conf.get_trimmed_strings("dfs.nameservices")
    )
    for ns in name_services:
        uri = conf.get_trimmed(f"dfs.namenode.shared.edits.dir.{ns}")
        if uri:
            return uri
        found = {
            conf.get_trimmed(f"dfs.namenode.shared.edits.dir.{ns}.{nn}")
            for nn in conf.get_trimmed_strings(f"dfs.ha.namenodes.{ns}")
        } - {None}
        if len(found) > 1:
            LOG.warning("The shared edits URIs of the NameNodes of %s differ: %s", ns, found)
            return None
        if found:
            return found.pop()
    return None


@cache
def local_addresses() -> frozenset[str]:
    addrs = {"127.0.0.1", "::1", "0.0.0.0", "::"}
    for entries in psutil.net_if_addrs().values():
        for entry in entries:
            if entry.family in (socket.AF_INET, socket.AF_INET6):
                addrs.add(entry.address.split("%", 1)[0])
    return frozenset(addrs)


_WILDCARDS = frozenset({"0.0.0.0", "::"})


def is_self(
    host: str,
    port: int,
    bound_host: str,
    bound_port: int,
    resolver: DomainNameResolver | None = None,
) -> bool:
    """Whether ``host:port`` of a shared-edits URI is this JournalNode, bound at
    ``bound_host:bound_port``: its own address, or a wildcard address on its port (Hadoop's
    ``JournalNodeSyncer.getJournalAddrList``, HDFS-17178), never another host's."""
    if port != bound_port:
        return False
    resolver = resolver or DNSDomainNameResolver()
    try:
        resolved = set(resolver.get_all_by_domain_name(host))
    except HadoopException:
        return False
    if resolved & _WILDCARDS:
        return True
    if bound_host in _WILDCARDS or not bound_host:
        return any(
            ip in local_addresses() or ipaddress.ip_address(ip).is_loopback for ip in resolved
        )
    try:
        bound = set(resolver.get_all_by_domain_name(bound_host))
    except HadoopException:
        bound = {bound_host}
    return bool(resolved & bound)


def journal_addr_list(
    text: str, bound: tuple[str, int], conf, resolver: DomainNameResolver | None = None
) -> list[tuple[str, int]]:
    """The peers a shared-edits URI names: its addresses, each checked to resolve (and
    expanded with ``dfs.namenode.edits.qjournals.resolution-enabled``), less this node
    (Hadoop's ``getJournalAddrList``); IllegalArgumentException or UnknownHostException
    when the URI is unusable."""
    addresses = get_addresses_list(text, conf, resolver)
    return [a for a in addresses if not is_self(a[0], a[1], bound[0], bound[1], resolver)]
