"""Service-level authorization (docs/security.md, "Service-level authorization"): Hadoop's
ACL syntax, hadoop-policy.xml read from the configuration directory, Hadoop's refusal."""

from __future__ import annotations

from pathlib import Path

import pytest

from hadoop_qjm.common.exceptions import AuthorizationException, ConfigurationError
from hadoop_qjm.common.security.service_authorization import (
    PROTOCOL_ACLS,
    AccessControlList,
    service_authorization_from_conf,
)
from hadoop_qjm.common.security.user_group_information import (
    AuthenticationMethod,
    UserGroupInformation,
)
from hadoop_qjm.conf import Configuration

pytestmark = pytest.mark.timeout(30)

PROJECT = Path(__file__).resolve().parents[2]
ALICE = UserGroupInformation("alice", ("alice", "tenants"), AuthenticationMethod.CERTIFICATE)
OPS = UserGroupInformation("ops", ("supergroup",))


@pytest.mark.parametrize(
    ("acl", "alice", "ops"),
    [
        ("*", True, True),
        ("alice", True, False),
        ("bob,alice", True, False),
        ("bob supergroup", False, True),
        (" supergroup", False, True),  # a leading space: groups only
        (" tenants,supergroup", True, True),
        ("", False, False),  # blank: nobody
        (" ", False, False),
        ("bob,* x", True, True),  # * among the users is everyone
    ],
)
def test_hadoops_acl_syntax(acl: str, alice: bool, ops: bool) -> None:
    parsed = AccessControlList.parse(acl)
    assert (parsed.is_user_allowed(ALICE), parsed.is_user_allowed(OPS)) == (alice, ops)


def conf_with_policy(tmp_path: Path, policy: str | None, **props: str) -> Configuration:
    conf = Configuration(load_defaults=False)
    conf.conf_dir = str(tmp_path)
    conf.set("hadoop.security.authorization", "true")
    for key, value in props.items():
        conf.set(key, value)
    if policy is not None:
        (tmp_path / "hadoop-policy.xml").write_text(policy)
    return conf


def policy_xml(**acls: str) -> str:
    props = "".join(
        f"<property><name>{key}</name><value>{value}</value></property>"
        for key, value in acls.items()
    )
    return f"<?xml version='1.0'?><configuration>{props}</configuration>"


def test_off_by_default() -> None:
    assert service_authorization_from_conf(Configuration(load_defaults=False)) is None


def test_a_refusal_is_hadoops_authorization_exception(tmp_path: Path) -> None:
    manager = service_authorization_from_conf(
        conf_with_policy(
            tmp_path, policy_xml(**{"security.ha.service.protocol.acl": " supergroup"})
        )
    )
    assert manager is not None
    manager.authorize(OPS, "HAServiceProtocol")
    manager.authorize(ALICE, "ClientProtocol")  # unset in the file: *
    with pytest.raises(AuthorizationException) as e:
        manager.authorize(ALICE, "HAServiceProtocol")
    assert str(e.value) == (
        "User alice (auth:CERTIFICATE) is not authorized for protocol interface "
        "org.apache.hadoop.ha.HAServiceProtocol: denied by configured ACL"
    )


def test_a_blocked_acl_refuses_whom_it_lists(tmp_path: Path) -> None:
    policy = policy_xml(**{"security.client.protocol.acl.blocked": "alice"})
    manager = service_authorization_from_conf(conf_with_policy(tmp_path, policy))
    assert manager is not None
    manager.authorize(OPS, "ClientProtocol")
    with pytest.raises(AuthorizationException):
        manager.authorize(ALICE, "ClientProtocol")


def test_without_a_policy_file_every_acl_is_everyone(tmp_path: Path) -> None:
    manager = service_authorization_from_conf(conf_with_policy(tmp_path, None))
    assert manager is not None
    for protocol in PROTOCOL_ACLS:
        manager.authorize(ALICE, protocol)


def test_a_policy_file_that_is_not_well_formed_is_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as e:
        service_authorization_from_conf(conf_with_policy(tmp_path, "<configuration><property>"))
    message = str(e.value)
    assert message.startswith(
        f"Malformed configuration file {tmp_path / 'hadoop-policy.xml'}, line"
    )
    assert "\n" not in message


def test_the_shipped_template_allows_everyone_for_every_protocol(tmp_path: Path) -> None:
    conf = Configuration(load_defaults=False)
    conf.conf_dir = str(PROJECT / "conf")
    conf.set("hadoop.security.authorization", "true")
    manager = service_authorization_from_conf(conf)
    assert manager is not None
    shipped = Configuration(load_defaults=False)
    shipped.add_resource(PROJECT / "conf" / "hadoop-policy.xml")
    assert {key for key, _ in PROTOCOL_ACLS.values()} == set(dict(shipped.as_dict()))
    for protocol in PROTOCOL_ACLS:
        manager.authorize(ALICE, protocol)
