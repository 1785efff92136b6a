"""ipc.call_context: one thread-local for every RPC server's call and connection."""

from __future__ import annotations

import threading

import pytest

from hadoop_qjm.common.auth_to_local import parse_auth_to_local
from hadoop_qjm.common.exceptions import AuthorizationException
from hadoop_qjm.common.security.caller_identity import CallerIdentity
from hadoop_qjm.common.security.groups import Groups
from hadoop_qjm.ipc import call_context

pytestmark = pytest.mark.timeout(30)


def test_a_call_sees_its_ip_and_its_connections_user_until_they_end() -> None:
    connection = object()
    call_context.enter_connection(connection, "nn1")
    call_context.enter_call("10.0.0.1")
    try:
        assert call_context.remote_ip() == "10.0.0.1"
        assert call_context.remote_user() == "nn1"
        assert call_context.remote_connection() is connection
    finally:
        call_context.leave_call()
    assert call_context.remote_ip() is None
    assert call_context.remote_user() == "nn1"  # the connection outlives the call
    call_context.leave_connection()
    assert (call_context.remote_user(), call_context.remote_connection()) == (None, None)


def test_a_handler_gives_its_slot_back_once() -> None:
    slots = threading.BoundedSemaphore(1)
    slots.acquire()
    call_context.enter_call("10.0.0.1", slots)
    call_context.release_handler_slot()
    call_context.release_handler_slot()  # nothing held any more: no second release
    assert call_context.leave_call() is None  # the dispatcher has nothing to give back
    assert slots.acquire(blocking=False)


def _cert(*rdns: tuple[str, str]) -> dict:
    return {"subject": tuple(((name, value),) for name, value in rdns)}


def test_the_callers_ugi_comes_from_the_certificate_or_the_claim() -> None:
    identity = CallerIdentity(
        parse_auth_to_local(r"RULE:[$CN](.*\.example\.com)s/\..*//"),
        Groups(lambda user: [], {"nn1": ("supergroup",)}, 300, lambda: 0.0),
    )
    assert call_context.remote_ugi() is None  # in-process: the daemon's own user
    tls = identity.connection_user(
        _cert(("organizationName", "Ex"), ("commonName", "nn1.example.com"))
    )
    tls.claim("root")  # over TLS the certificate names the user, not the context
    call_context.enter_connection(object(), "nn1.example.com", tls)
    try:
        ugi = call_context.remote_ugi()
        assert ugi is not None and (str(ugi), ugi.groups) == (
            "nn1 (auth:CERTIFICATE)",
            ("supergroup",),
        )
    finally:
        call_context.leave_connection()
    plain = identity.connection_user(None)
    assert plain.ugi().short_user_name == "dr.who"
    plain.claim("alice")
    assert str(plain.ugi()) == "alice (auth:SIMPLE)"
    unmapped = identity.connection_user(_cert(("commonName", "intruder")))
    with pytest.raises(AuthorizationException) as e:
        unmapped.ugi()
    assert str(e.value) == (
        "No rules applied to CN=intruder in hadoop.security.auth_to_local: the caller has no user name"
    )


def test_a_connections_ugi_is_one_object_until_its_user_or_groups_change() -> None:
    """ConnectionUser keeps the UserGroupInformation it built (each call asks for it), and
    builds another when the claim or the group cache's answer changes."""
    now = [0.0]
    groups = {"alice": ["staff"], "bob": ["users"]}
    identity = CallerIdentity(
        parse_auth_to_local(None), Groups(lambda user: groups[user], {}, 300, lambda: now[0])
    )
    plain = identity.connection_user(None)
    plain.claim("alice")
    first = plain.ugi()
    assert plain.ugi() is first and first.groups == ("staff",)
    groups["alice"] = ["staff", "admins"]
    now[0] = 301.0  # the group cache expired: alice is in admins now
    assert plain.ugi().groups == ("staff", "admins")
    plain.claim("bob")
    assert (plain.ugi().short_user_name, plain.ugi().groups) == ("bob", ("users",))
