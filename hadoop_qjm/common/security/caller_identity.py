"""Who a connection's client is (Hadoop's ``Server.Connection``'s ``user`` and
``authMethod``): from the certificate the TLS handshake verified, by the
``hadoop.security.auth_to_local`` rules (auth CERTIFICATE); else the user the client claims
in its connection context, believed as Hadoop's simple authentication believes it (auth
SIMPLE); else :data:`ANONYMOUS_USER`. Groups come from the server's :class:`Groups`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from hadoop_qjm.common.auth_to_local import (
    AUTH_TO_LOCAL_KEY,
    AuthToLocal,
    parse_auth_to_local,
    subject_of_peer_cert,
)
from hadoop_qjm.common.exceptions import AuthorizationException, ConfigurationError
from hadoop_qjm.common.security.groups import Groups, groups_from_conf
from hadoop_qjm.common.security.user_group_information import (
    AuthenticationMethod,
    UserGroupInformation,
)

__all__ = [
    "ANONYMOUS_USER",
    "CallerIdentity",
    "ConnectionUser",
    "caller_identity_from_conf",
    "certificate_user_name",
]

#: The user of a plain connection whose client sent no connection context (a stock Thrift
#: client): Hadoop's ``hadoop.http.staticuser.user`` default, the anonymous web user.
ANONYMOUS_USER = "dr.who"


@dataclass(frozen=True)
class CallerIdentity:
    """How one server names its callers: ``auth_to_local`` for certificates, ``groups``."""

    auth_to_local: AuthToLocal = field(default_factory=lambda: parse_auth_to_local(None))
    groups: Groups = field(default_factory=Groups)

    def connection_user(self, peer_cert: Mapping[str, Any] | None) -> ConnectionUser:
        """The user of a new connection, whose verified certificate is ``peer_cert`` (None
        over plain TCP); a plain connection's :meth:`ConnectionUser.claim` may follow."""
        if peer_cert is None:
            return ConnectionUser(self, ANONYMOUS_USER, AuthenticationMethod.SIMPLE)
        subject = subject_of_peer_cert(peer_cert)
        user = self.auth_to_local.short_name(subject)
        return ConnectionUser(
            self, user, AuthenticationMethod.CERTIFICATE, subject.dn if subject else None
        )


@dataclass
class ConnectionUser:
    """The user of one connection (its call context's part, :mod:`hadoop_qjm.ipc.call_context`).

    ``user`` None: a certificate no ``auth_to_local`` rule maps to a user (its ``subject``
    in RFC 4514 form).
    """

    identity: CallerIdentity
    user: str | None
    auth_method: AuthenticationMethod
    subject: str | None = None
    #: The last ugi() answer: every call of the connection asks, and a frozen dataclass
    #: costs microseconds to build; it is rebuilt when the user or its groups change.
    _ugi: UserGroupInformation | None = field(default=None, repr=False, compare=False)

    def claim(self, user: str) -> None:
        """The client's connection context says it is ``user``: believed over plain TCP
        (simple authentication), ignored over TLS (the certificate names the user)."""
        if self.auth_method is AuthenticationMethod.SIMPLE:
            self.user = user

    def ugi(self) -> UserGroupInformation:
        """The caller with its groups; AuthorizationException for a certificate that maps to
        no user."""
        if self.user is None:
            raise AuthorizationException(
                f"No rules applied to {self.subject} in {AUTH_TO_LOCAL_KEY}: the caller has "
                "no user name"
            )
        user = self.user
        groups = self.identity.groups.groups(user)
        ugi = self._ugi
        if ugi is None or ugi.short_user_name != user or ugi.groups != groups:
            ugi = self._ugi = UserGroupInformation(user, groups, self.auth_method)
        return ugi


def caller_identity_from_conf(
    conf: Any, clock: Callable[[], float] = time.monotonic
) -> CallerIdentity:
    """A daemon's :class:`CallerIdentity`; ConfigurationError (one sentence) for a malformed
    ``auth_to_local`` rule or group mapping: the daemon does not start."""
    return CallerIdentity(
        parse_auth_to_local(conf.get(AUTH_TO_LOCAL_KEY)), groups_from_conf(conf, clock)
    )


def certificate_user_name(conf: Any) -> str | None:
    """The user this client is to the servers it reaches with mutual TLS: the short name
    ``hadoop.security.auth_to_local`` (this client's copy) gives its certificate's subject,
    as a server maps it — Hadoop's UGI login user, whose short name a Kerberos client takes
    from its own principal the same way. None without TLS on RPC (the user is then the one
    the client claims: ``HADOOP_USER_NAME``, else the OS user). ConfigurationError (one
    sentence) for an unreadable certificate, a malformed rule, or a subject no rule maps."""
    from hadoop_qjm.common.security.ssl_factory import SSLFactory

    factory = SSLFactory(conf)
    if not factory.rpc_tls:
        return None
    subject = subject_of_peer_cert(factory.client_certificate())
    user = parse_auth_to_local(conf.get(AUTH_TO_LOCAL_KEY)).short_name(subject)
    if user is None:
        dn = subject.dn if subject is not None else "the client certificate"
        raise ConfigurationError(
            f"No rules applied to {dn} in {AUTH_TO_LOCAL_KEY}: this client has no user name"
        )
    return user
