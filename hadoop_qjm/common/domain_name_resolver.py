"""DomainNameResolver: how a daemon turns a host or DNS domain name into addresses
(Hadoop's ``org.apache.hadoop.net.DomainNameResolver``, its ``DNSDomainNameResolver`` and
``DomainNameResolverFactory``).

A resolver is a collaborator passed in (the QuorumJournalManager's, the JournalNode's), so
a test resolves names without DNS (:class:`~hadoop_qjm.testing.domain_name_resolvers.
StaticDomainNameResolver`, Hadoop's ``MockDomainNameResolver`` and
``NetUtils.addStaticResolution``). A configured one is named by a key such as
``dfs.namenode.edits.qjournals.resolver.impl``: Hadoop's class name
(``org.apache.hadoop.net.DNSDomainNameResolver``, the default) or a Python class path
``package.module.Class``.
"""

from __future__ import annotations

import importlib
import socket

from hadoop_qjm.common.exceptions import ConfigurationError
from hadoop_qjm.common.net_exceptions import UnknownHostException

__all__ = [
    "DNS_DOMAIN_NAME_RESOLVER",
    "DNSDomainNameResolver",
    "DomainNameResolver",
    "new_domain_name_resolver",
]

#: Hadoop's class name of the DNS resolver (the default of every resolver key).
DNS_DOMAIN_NAME_RESOLVER = "org.apache.hadoop.net.DNSDomainNameResolver"


class DomainNameResolver:
    """Resolves names: the two lookups a resolver provides, and the hostnames of a domain
    built on them (Hadoop's interface and its one shared method)."""

    def get_all_by_domain_name(self, domain_name: str) -> list[str]:
        """Every address ``domain_name`` resolves to; UnknownHostException if none."""
        raise NotImplementedError

    def get_host_name_by_ip(self, address: str) -> str:
        """The fully qualified name of ``address`` (without a trailing dot)."""
        raise NotImplementedError

    def get_all_resolved_hostname_by_domain_name(
        self, domain_name: str, use_fqdn: bool
    ) -> list[str]:
        """One name per address of ``domain_name``: its FQDN with ``use_fqdn``, else the
        address itself (Hadoop's ``getAllResolvedHostnameByDomainName``)."""
        addresses = self.get_all_by_domain_name(domain_name)
        if not use_fqdn:
            return addresses
        return [self.get_host_name_by_ip(address) for address in addresses]


class DNSDomainNameResolver(DomainNameResolver):
    """The system resolver (``getaddrinfo`` and the reverse lookup), Hadoop's default."""

    def get_all_by_domain_name(self, domain_name: str) -> list[str]:
        try:
            infos = socket.getaddrinfo(domain_name, None, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as e:
            raise UnknownHostException(f"{domain_name}: {e}") from None
        return list(dict.fromkeys(info[4][0] for info in infos))

    def get_host_name_by_ip(self, address: str) -> str:
        try:
            host = socket.gethostbyaddr(address)[0]
        except OSError:
            return address  # Java's getCanonicalHostName: the address when unknown
        return host.removesuffix(".")


def new_domain_name_resolver(conf, key: str) -> DomainNameResolver:
    """The resolver ``key`` names (Hadoop's ``DomainNameResolverFactory.newInstance``);
    ConfigurationError naming the key if it names no resolver class."""
    name = conf.get_trimmed(key) or DNS_DOMAIN_NAME_RESOLVER
    if name == DNS_DOMAIN_NAME_RESOLVER:
        return DNSDomainNameResolver()
    module_name, _, class_name = name.rpartition(".")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError, ValueError):
        cls = None
    if not isinstance(cls, type) or not issubclass(cls, DomainNameResolver):
        raise ConfigurationError(
            f"{key}={name} is not a DomainNameResolver: give "
            f"{DNS_DOMAIN_NAME_RESOLVER} or a Python class path package.module.Class"
        )
    return cls()
