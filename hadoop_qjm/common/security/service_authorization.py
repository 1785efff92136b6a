"""Service-level authorization (Hadoop's ``ServiceAuthorizationManager``, its
``AccessControlList`` and ``hadoop-policy.xml``): with ``hadoop.security.authorization=true``
a caller must be in the ACL of the protocol it calls (and not in its ``.blocked`` ACL).

An ACL is Hadoop's ``user1,user2 group1,group2``: users, a space, groups; ``*`` is everyone;
a leading space lists groups only; blank is nobody. The ACLs are read once, at start, from
``hadoop-policy.xml`` in the configuration directory (a key it does not set, or no file:
``*``, as Hadoop); a file that is not well-formed refuses to start the daemon in one line.
A refusal is Hadoop's ``AuthorizationException``: ``User alice (auth:CERTIFICATE) is not
authorized for protocol interface org.apache.hadoop.ha.HAServiceProtocol: denied by
configured ACL``.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lxml import etree

from hadoop_qjm.common.exceptions import AuthorizationException
from hadoop_qjm.common.security.user_group_information import UserGroupInformation
from hadoop_qjm.conf import Configuration

__all__ = [
    "HADOOP_POLICY_FILE",
    "HADOOP_SECURITY_AUTHORIZATION_KEY",
    "PROTOCOL_ACLS",
    "AccessControlList",
    "ServiceAuthorizationManager",
    "service_authorization_from_conf",
]

LOG = logging.getLogger(
    "SecurityLogger.org.apache.hadoop.security.authorize.ServiceAuthorizationManager"
)

HADOOP_SECURITY_AUTHORIZATION_KEY = "hadoop.security.authorization"
HADOOP_POLICY_FILE = "hadoop-policy.xml"
WILDCARD_ACL_VALUE = "*"

#: Each protocol this port serves (by its Thrift service name) -> its ACL key and the Java
#: interface Hadoop names in the refusal (HDFSPolicyProvider's table).
PROTOCOL_ACLS: Mapping[str, tuple[str, str]] = {
    "ClientProtocol": (
        "security.client.protocol.acl",
        "org.apache.hadoop.hdfs.protocol.ClientProtocol",
    ),
    "NamenodeProtocol": (
        "security.namenode.protocol.acl",
        "org.apache.hadoop.hdfs.server.protocol.NamenodeProtocol",
    ),
    "HAServiceProtocol": (
        "security.ha.service.protocol.acl",
        "org.apache.hadoop.ha.HAServiceProtocol",
    ),
    "ZKFCProtocol": ("security.zkfc.protocol.acl", "org.apache.hadoop.ha.ZKFCProtocol"),
    "QJournalProtocol": (
        "security.qjournal.service.protocol.acl",
        "org.apache.hadoop.hdfs.qjournal.protocol.QJournalProtocol",
    ),
    "InterQJournalProtocol": (
        "security.interqjournal.service.protocol.acl",
        "org.apache.hadoop.hdfs.qjournal.protocol.InterQJournalProtocol",
    ),
}


@dataclass(frozen=True)
class AccessControlList:
    """Hadoop's AccessControlList: ``users`` and ``groups``, or everyone (``all_allowed``)."""

    users: frozenset[str] = frozenset()
    groups: frozenset[str] = frozenset()
    all_allowed: bool = False

    @classmethod
    def parse(cls, text: str | None) -> AccessControlList:
        """``user1,user2 group1,group2``; ``*`` (alone, or among the users) is everyone."""
        text = text or ""
        if text.strip() == WILDCARD_ACL_VALUE:
            return cls(all_allowed=True)
        users_part, _, groups_part = text.partition(" ")
        users = frozenset(u.strip() for u in users_part.split(",") if u.strip())
        groups = frozenset(g.strip() for g in groups_part.split(",") if g.strip())
        if WILDCARD_ACL_VALUE in users:
            return cls(all_allowed=True)
        return cls(users, groups)

    def is_user_allowed(self, ugi: UserGroupInformation) -> bool:
        return (
            self.all_allowed
            or ugi.short_user_name in self.users
            or not self.groups.isdisjoint(ugi.groups)
        )

    def __str__(self) -> str:
        if self.all_allowed:
            return "All users are allowed"
        return f"Users [{', '.join(sorted(self.users))}] and members of the groups [{', '.join(sorted(self.groups))}] are allowed"


@dataclass(frozen=True)
class ServiceAuthorizationManager:
    """Each protocol's ``(acl, blocked acl)``; :meth:`authorize` checks one call."""

    acls: Mapping[str, tuple[AccessControlList, AccessControlList]]

    def authorize(self, ugi: UserGroupInformation, protocol: str) -> None:
        """Return if ``ugi`` may call ``protocol`` (a Thrift service name), else raise
        AuthorizationException (and log it on the security logger, as Hadoop)."""
        entry = self.acls.get(protocol)
        if entry is None:
            return
        allowed, blocked = entry
        if allowed.is_user_allowed(ugi) and not blocked.is_user_allowed(ugi):
            return
        interface = f"interface {PROTOCOL_ACLS[protocol][1]}"
        LOG.warning(
            "Authorization failed for %s for protocol=%s: denied by configured ACL", ugi, interface
        )
        raise AuthorizationException(
            f"User {ugi} is not authorized for protocol {interface}: denied by configured ACL"
        )


def service_authorization_from_conf(conf: Any) -> ServiceAuthorizationManager | None:
    """None unless ``hadoop.security.authorization`` is true; else the ACLs of
    ``hadoop-policy.xml`` in the configuration directory (ConfigurationError, one sentence
    naming the file, for one that is not well-formed)."""
    if not conf.get_bool(HADOOP_SECURITY_AUTHORIZATION_KEY, False):
        return None
    policy: dict[str, str] = {}
    conf_dir = getattr(conf, "conf_dir", None)
    path = Path(conf_dir) / HADOOP_POLICY_FILE if conf_dir is not None else None
    if path is not None and path.is_file():
        Configuration(load_defaults=False).add_resource(path)  # well-formed, or one sentence
        policy = _raw_values(path)

    def acl(key: str, default: str) -> AccessControlList:
        value = conf.get(key)  # -D and the site files win over hadoop-policy.xml
        return AccessControlList.parse(value if value is not None else policy.get(key, default))

    return ServiceAuthorizationManager(
        {
            protocol: (acl(key, WILDCARD_ACL_VALUE), acl(key + ".blocked", ""))
            for protocol, (key, _) in PROTOCOL_ACLS.items()
        }
    )


def _raw_values(path: Path) -> dict[str, str]:
    """The values of a checked Hadoop XML file as written: an ACL's leading space (groups
    only) matters, and Configuration trims values."""
    values = {}
    for prop in (
        etree.parse(str(path), etree.XMLParser(resolve_entities=False, no_network=True))
        .getroot()
        .iter("property")
    ):
        name, value = prop.findtext("name"), prop.findtext("value")
        if name and value is not None:
            values[name.strip()] = value
    return values
