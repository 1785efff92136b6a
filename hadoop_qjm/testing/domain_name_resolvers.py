"""Resolvers that answer from a table, not DNS: a test names the hosts it makes up
(Hadoop's ``MockDomainNameResolver`` and ``NetUtils.addStaticResolution``)."""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping, Sequence

from hadoop_qjm.common.domain_name_resolver import DomainNameResolver
from hadoop_qjm.common.net_exceptions import UnknownHostException

__all__ = ["MockDomainNameResolver", "StaticDomainNameResolver"]


class StaticDomainNameResolver(DomainNameResolver):
    """``names``: name -> its addresses; ``fqdns``: address -> its name (default: the
    address itself). An IP address resolves to itself, any other name is an
    UnknownHostException; :meth:`add` adds one."""

    def __init__(
        self,
        names: Mapping[str, Sequence[str]] | None = None,
        fqdns: Mapping[str, str] | None = None,
    ) -> None:
        self.names = {name: list(addrs) for name, addrs in (names or {}).items()}
        self.fqdns = dict(fqdns or {})

    def add(self, name: str, *addresses: str) -> None:
        """``name`` resolves to ``addresses`` from now on."""
        self.names[name] = list(addresses)

    def get_all_by_domain_name(self, domain_name: str) -> list[str]:
        addresses = self.names.get(domain_name)
        if addresses:
            return list(addresses)
        try:
            return [str(ipaddress.ip_address(domain_name))]  # an address stands for itself
        except ValueError:
            raise UnknownHostException(domain_name) from None

    def get_host_name_by_ip(self, address: str) -> str:
        return self.fqdns.get(address, address)


class MockDomainNameResolver(StaticDomainNameResolver):
    """Hadoop's MockDomainNameResolver: :data:`DOMAIN` resolves to two addresses whose
    names are :data:`FQDN_1` and :data:`FQDN_2`; :data:`UNKNOWN_DOMAIN` to nothing."""

    DOMAIN = "test.foo.bar"
    UNKNOWN_DOMAIN = "unknown.foo.bar"
    ADDR_1 = "10.1.1.1"
    ADDR_2 = "10.1.1.2"
    FQDN_1 = "host01.test"
    FQDN_2 = "host02.test"

    def __init__(self) -> None:
        super().__init__(
            {self.DOMAIN: [self.ADDR_1, self.ADDR_2]},
            {self.ADDR_1: self.FQDN_1, self.ADDR_2: self.FQDN_2},
        )
