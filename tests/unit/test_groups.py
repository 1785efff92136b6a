"""A caller's groups (Hadoop's Groups): static overrides first, the mapping's answer cached
by the clock passed in, an unknown user with no groups (logged once)."""

from __future__ import annotations

import getpass
import logging

import pytest

from hadoop_qjm.common.exceptions import ConfigurationError
from hadoop_qjm.common.security.groups import (
    Groups,
    groups_from_conf,
    parse_static_overrides,
    unix_groups,
)
from hadoop_qjm.conf import Configuration

pytestmark = pytest.mark.timeout(30)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Mapping:
    """A hand-written group mapping that counts its lookups."""

    def __init__(self, answers: dict[str, list[str]]) -> None:
        self.answers = answers
        self.lookups: list[str] = []

    def __call__(self, user: str) -> list[str]:
        self.lookups.append(user)
        return list(self.answers.get(user, []))


def test_the_mappings_answer_is_cached_for_cache_secs() -> None:
    clock, mapping = Clock(), Mapping({"alice": ["alice", "staff"]})
    groups = Groups(mapping, {}, cache_secs=300, clock=clock)
    assert groups.groups("alice") == ("alice", "staff")
    mapping.answers["alice"] = ["alice", "supergroup"]
    clock.now += 299
    assert groups.groups("alice") == ("alice", "staff")  # cached
    clock.now += 1
    assert groups.groups("alice") == ("alice", "supergroup")  # looked up again
    assert mapping.lookups == ["alice", "alice"]


def test_static_overrides_come_first_and_are_never_looked_up() -> None:
    mapping = Mapping({"ops": ["ops"]})
    groups = Groups(mapping, parse_static_overrides("ops=supergroup,wheel; dr.who=;"), 300, Clock())
    assert groups.groups("ops") == ("supergroup", "wheel")
    assert groups.groups("dr.who") == ()
    assert mapping.lookups == []


def test_by_default_dr_who_has_no_groups() -> None:
    mapping = Mapping({"dr.who": ["staff"]})
    assert Groups(mapping, clock=Clock()).groups("dr.who") == ()


def test_an_unknown_user_has_no_groups_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    groups = Groups(Mapping({}), {}, cache_secs=0, clock=Clock())
    with caplog.at_level(logging.WARNING):
        assert groups.groups("nobody-here") == ()
        assert groups.groups("nobody-here") == ()
    assert [r.getMessage() for r in caplog.records] == ["No groups available for user nobody-here"]


def test_unix_groups_are_this_hosts_primary_first() -> None:
    import grp
    import os
    import pwd

    me = getpass.getuser()
    primary = grp.getgrgid(pwd.getpwnam(me).pw_gid).gr_name
    found = unix_groups(me)
    assert found[0] == primary
    assert set(found) >= {
        grp.getgrgid(g).gr_name for g in os.getgrouplist(me, pwd.getpwnam(me).pw_gid)
    }
    assert unix_groups("no-such-user-s41") == []


@pytest.mark.parametrize(
    "mapping",
    [
        "org.apache.hadoop.security.ShellBasedUnixGroupsMapping",
        "org.apache.hadoop.security.JniBasedUnixGroupsMappingWithFallback",
        None,
    ],
)
def test_the_unix_mappings_of_the_configuration(mapping: str | None) -> None:
    conf = Configuration(load_defaults=False)
    if mapping is not None:
        conf.set("hadoop.security.group.mapping", mapping)
    conf.set("hadoop.user.group.static.mapping.overrides", "ops=supergroup")
    assert groups_from_conf(conf, Clock()).groups("ops") == ("supergroup",)


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        (
            "hadoop.security.group.mapping",
            "org.example.LdapGroupsMapping",
            "unknown group mapping class org.example.LdapGroupsMapping",
        ),
        ("hadoop.user.group.static.mapping.overrides", "ops", "'ops' is not user=groups"),
    ],
)
def test_a_bad_group_configuration_is_one_sentence(key: str, value: str, says: str) -> None:
    conf = Configuration(load_defaults=False)
    conf.set(key, value)
    with pytest.raises(ConfigurationError) as e:
        groups_from_conf(conf, Clock())
    assert says in str(e.value) and key in str(e.value)
