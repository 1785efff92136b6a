"""Who a peer is, and what it may do: pure rules, no socket, ssl or file code.

A peer's identity is the **common name (CN) of its certificate's subject**, the
certificate the TLS handshake verified against the trust store. A certificate with no CN
has no identity and is treated like no certificate at all. This is the Python stand-in
for Hadoop's Kerberos principal and its service-level authorization
(``ServiceAuthorizationManager``; design paper §1.3.4).

A JournalNode splits its RPCs in two (:data:`READ_ONLY_RPCS`):

* metadata reads — ``isFormatted``, ``getJournalCTime``, ``getEditLogManifest`` and
  InterQJournalProtocol's ``getEditLogManifestFromJournal`` and ``getStorageInfo`` — from
  any authenticated peer
  (any certificate the trust store accepts);
* everything else — every call that changes a journal, ``getJournalState`` (the first step
  of fencing: a writer learns the epoch to beat from it), and ``getJournaledEdits``, which
  returns edits themselves, as a ``/getJournal`` download does — only from the identities
  of ``dfs.journalnode.allowed.principals``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from hadoop_qjm.common.exceptions import AuthorizationException, ConfigurationError

__all__ = [
    "ANY_PRINCIPAL",
    "READ_ONLY_RPCS",
    "ServiceAuthorizer",
    "identity_from_peer_cert",
    "parse_admins",
    "parse_principals",
]

#: In an allowed list: every identity the trust store accepts.
ANY_PRINCIPAL = "*"

#: The JournalNode RPCs any authenticated peer may call: they read metadata only.
READ_ONLY_RPCS = frozenset(
    {
        "isFormatted",
        "getJournalCTime",
        "getEditLogManifest",
        "getEditLogManifestFromJournal",
        "getStorageInfo",
    }
)


def identity_from_peer_cert(cert: Mapping[str, Any] | None) -> str | None:
    """The subject CN of a verified peer certificate in ``SSLSocket.getpeercert()``'s form
    (``{"subject": ((("commonName", "nn1"),), ...), ...}``); None without one.

    With several CN attributes the last one counts (the most specific, as in an RFC 4514
    name read from the end).
    """
    if not cert:
        return None
    common_name = None
    for rdn in cert.get("subject", ()):
        for attribute, value in rdn:
            if attribute == "commonName" and value:
                common_name = value
    return common_name


def parse_principals(text: str | None, key: str) -> frozenset[str] | None:
    """The identities of a comma-separated list: ``nn1.example.com, CN=jn1, *``.

    A ``CN=`` prefix is accepted and dropped. None when ``text`` is unset or empty (the
    caller decides what that means); a list mixing ``*`` with names is an error, since it
    would read as a restriction that is none.
    """
    if text is None:
        return None
    names = []
    for part in text.split(","):
        name = part.strip()
        if name[:3].upper() == "CN=":
            name = name[3:].strip()
        if name:
            names.append(name)
    if not names:
        return None
    if ANY_PRINCIPAL in names and len(names) > 1:
        raise ConfigurationError(
            f"Invalid value for {key}: '{text}' mixes * (every certificate) with names"
        )
    return frozenset(names)


@dataclass(frozen=True)
class ServiceAuthorizer:
    """Which identities may change a journal and download its edits.

    ``allowed`` holds identities, or just :data:`ANY_PRINCIPAL`. An unauthenticated
    caller (identity None) is refused everything, reads included.
    """

    allowed: frozenset[str]
    read_only_rpcs: frozenset[str] = READ_ONLY_RPCS

    @classmethod
    def of(cls, names: Iterable[str]) -> ServiceAuthorizer:
        return cls(frozenset(names))

    def is_allowed(self, identity: str | None) -> bool:
        """Whether ``identity`` may write and download."""
        if identity is None:
            return False
        return ANY_PRINCIPAL in self.allowed or identity in self.allowed

    def check_rpc(self, rpc: str, identity: str | None) -> None:
        """Raise AuthorizationException unless ``identity`` may call ``rpc``."""
        if identity is not None and rpc in self.read_only_rpcs:
            return
        if not self.is_allowed(identity):
            raise AuthorizationException(_refusal(identity, f"call {rpc}"))

    def check_transfer(self, what: str, identity: str | None) -> None:
        """Raise AuthorizationException unless ``identity`` may download ``what``."""
        if not self.is_allowed(identity):
            raise AuthorizationException(_refusal(identity, f"fetch {what}"))

    def check_admin(self, page: str, identity: str | None) -> None:
        """Raise AuthorizationException unless ``identity`` is an administrator and may see
        ``page`` (HttpServer2.hasAdministratorAccess; Hadoop's words)."""
        if identity is None:
            raise AuthorizationException(
                "Unauthenticated users are not authorized to access this page."
            )
        if not self.is_allowed(identity):
            raise AuthorizationException(
                f"User {identity} is unauthorized to access the page {page}."
            )


def parse_admins(text: str | None, key: str) -> tuple[frozenset[str], bool]:
    """The administrators of an ACL in Hadoop's form ``user1,user2 group1,group2``:
    ``(identities, had_groups)``. ``*`` is everyone; unset or blank is nobody (Hadoop's
    default, " "). Certificates carry no groups: the caller warns when some were listed."""
    if text is None or not text.strip():
        return frozenset(), False
    if text.strip() == ANY_PRINCIPAL:
        return frozenset({ANY_PRINCIPAL}), False
    users, _, groups = text.partition(" ")
    return parse_principals(users, key) or frozenset(), bool(groups.strip())


def _refusal(identity: str | None, action: str) -> str:
    if identity is None:
        return f"Unauthenticated caller (no verified client certificate) is not allowed to {action}"
    return f"User {identity} is not authorized to {action}"
