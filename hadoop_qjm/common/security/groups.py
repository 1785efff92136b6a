"""A user's groups (Hadoop's ``org.apache.hadoop.security.Groups``), as the NameNode's
superuser and permission checks and the service-level ACLs see them.

``hadoop.security.group.mapping`` names where groups come from; both classes this port
knows give the OS groups of that user name on this host, the primary group first (Hadoop's
``ShellBasedUnixGroupsMapping`` runs ``id``; its default
``JniBasedUnixGroupsMappingWithFallback`` asks libc; here :func:`unix_groups`). An unknown
user has no groups (logged once). ``hadoop.user.group.static.mapping.overrides``
(``user=group1,group2;user2=;``, default ``dr.who=;``) comes first and is never looked up;
what the mapping answers is cached ``hadoop.security.groups.cache.secs`` (300) by the clock
passed in.
"""

from __future__ import annotations

import grp
import logging
import os
import pwd
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from hadoop_qjm.conf.errors import ConfigurationError

__all__ = [
    "DEFAULT_GROUP_MAPPING",
    "DEFAULT_STATIC_MAPPING_OVERRIDES",
    "GROUP_MAPPING_KEY",
    "GROUPS_CACHE_SECS_KEY",
    "STATIC_MAPPING_OVERRIDES_KEY",
    "Groups",
    "UNIX_GROUP_MAPPINGS",
    "groups_from_conf",
    "parse_static_overrides",
    "unix_groups",
]

LOG = logging.getLogger(__name__)

GROUP_MAPPING_KEY = "hadoop.security.group.mapping"
DEFAULT_GROUP_MAPPING = "org.apache.hadoop.security.JniBasedUnixGroupsMappingWithFallback"
#: The mapping classes that give the OS groups of a user name on this host.
UNIX_GROUP_MAPPINGS = frozenset(
    {
        "org.apache.hadoop.security.ShellBasedUnixGroupsMapping",
        "org.apache.hadoop.security.JniBasedUnixGroupsMapping",
        DEFAULT_GROUP_MAPPING,
    }
)
STATIC_MAPPING_OVERRIDES_KEY = "hadoop.user.group.static.mapping.overrides"
DEFAULT_STATIC_MAPPING_OVERRIDES = "dr.who=;"
GROUPS_CACHE_SECS_KEY = "hadoop.security.groups.cache.secs"
DEFAULT_GROUPS_CACHE_SECS = 300

GroupMapping = Callable[[str], list[str]]


def unix_groups(user: str) -> list[str]:
    """The OS groups of ``user`` on this host, its primary group first; [] for a user this
    host does not know."""
    try:
        entry = pwd.getpwnam(user)
    except KeyError:
        return []
    names = []
    for gid in [entry.pw_gid, *os.getgrouplist(user, entry.pw_gid)]:
        try:
            name = grp.getgrgid(gid).gr_name
        except KeyError:
            name = str(gid)
        if name not in names:
            names.append(name)
    return names


def parse_static_overrides(text: str | None) -> dict[str, tuple[str, ...]]:
    """``user=group1,group2;user2=;`` as {user: groups} (Hadoop's
    ``Groups.parseStaticMapping``); ConfigurationError for an entry without ``=``."""
    overrides: dict[str, tuple[str, ...]] = {}
    for entry in (text or "").split(";"):
        entry = entry.strip()
        if not entry:
            continue
        user, sep, groups = entry.partition("=")
        if not sep or not user.strip():
            raise ConfigurationError(
                f"Invalid value for {STATIC_MAPPING_OVERRIDES_KEY}: '{entry}' is not user=groups"
            )
        overrides[user.strip()] = tuple(g.strip() for g in groups.split(",") if g.strip())
    return overrides


class Groups:
    """The groups of a user: ``overrides`` first, else ``mapping``'s answer, cached for
    ``cache_secs`` by ``clock`` (seconds, monotonic)."""

    def __init__(
        self,
        mapping: GroupMapping = unix_groups,
        overrides: Mapping[str, tuple[str, ...]] | None = None,
        cache_secs: float = DEFAULT_GROUPS_CACHE_SECS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._mapping = mapping
        self._overrides = dict(
            parse_static_overrides(DEFAULT_STATIC_MAPPING_OVERRIDES)
            if overrides is None
            else overrides
        )
        self._cache_secs = cache_secs
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, tuple[str, ...]]] = {}
        self._warned: set[str] = set()

    def groups(self, user: str) -> tuple[str, ...]:
        """``user``'s groups, the primary one first (Hadoop's ``getGroups``)."""
        override = self._overrides.get(user)
        if override is not None:
            return override
        now = self._clock()
        with self._lock:
            cached = self._cache.get(user)
        if cached is not None and now - cached[0] < self._cache_secs:
            return cached[1]
        found = tuple(self._mapping(user))
        with self._lock:
            self._cache[user] = (now, found)
            warn = not found and user not in self._warned
            if warn:
                self._warned.add(user)
        if warn:
            LOG.warning("No groups available for user %s", user)
        return found


def groups_from_conf(conf: Any, clock: Callable[[], float] = time.monotonic) -> Groups:
    """The :class:`Groups` of a daemon's configuration; ConfigurationError (one sentence) for
    a mapping class this port does not have or malformed overrides."""
    mapping_class = conf.get_trimmed(GROUP_MAPPING_KEY) or DEFAULT_GROUP_MAPPING
    if mapping_class not in UNIX_GROUP_MAPPINGS:
        raise ConfigurationError(
            f"Invalid value for {GROUP_MAPPING_KEY}: unknown group mapping class "
            f"{mapping_class} (known: {', '.join(sorted(UNIX_GROUP_MAPPINGS))})"
        )
    overrides = parse_static_overrides(
        conf.get(STATIC_MAPPING_OVERRIDES_KEY, DEFAULT_STATIC_MAPPING_OVERRIDES)
    )
    cache_secs = conf.get_int(GROUPS_CACHE_SECS_KEY, DEFAULT_GROUPS_CACHE_SECS)
    return Groups(unix_groups, overrides, cache_secs, clock)
