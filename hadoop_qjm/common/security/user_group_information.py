"""UserGroupInformation: who a caller is, as the NameNode's checks see it (pure).

Hadoop's ``org.apache.hadoop.security.UserGroupInformation`` reduced to what a permission
check and an audit line need: the short user name, the groups (the primary one first),
how the user was authenticated, and for a proxy user the real user behind it. Printed as
Hadoop prints one (``alice (auth:CERTIFICATE)``, ``alice (auth:PROXY) via nn (auth:SIMPLE)``):
that is the ``ugi=`` field of the audit log.

How a caller becomes a UserGroupInformation (a certificate, ``HADOOP_USER_NAME``, the
group mapping) is not decided here; :func:`is_superuser` is Hadoop's superuser rule.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = ["AuthenticationMethod", "UserGroupInformation", "is_superuser"]


class AuthenticationMethod(enum.Enum):
    """UserGroupInformation.AuthenticationMethod (the ones this port has)."""

    SIMPLE = "SIMPLE"
    CERTIFICATE = "CERTIFICATE"
    PROXY = "PROXY"


@dataclass(frozen=True, slots=True)
class UserGroupInformation:
    """A caller: ``short_user_name``, ``groups`` (primary first), ``auth_method``, and the
    ``real_user`` a proxy user acts for (None otherwise)."""

    short_user_name: str
    groups: tuple[str, ...] = ()
    auth_method: AuthenticationMethod = AuthenticationMethod.SIMPLE
    real_user: UserGroupInformation | None = None
    #: Computed once: the NameNode finds a caller's checker by it on every call, and
    #: hashing the fields (an Enum's __hash__ is Python code) each time cost more.
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash(self._args()))

    def _args(self) -> tuple:
        """The constructor's arguments: what equality compares and the hash covers."""
        return (self.short_user_name, self.groups, self.auth_method, self.real_user)

    def __hash__(self) -> int:
        return self._hash

    def __reduce__(self):  # noqa: ANN204 - rebuilt, so the hash is of the receiving process
        return UserGroupInformation, self._args()

    @property
    def primary_group(self) -> str | None:
        return self.groups[0] if self.groups else None

    def __str__(self) -> str:
        text = f"{self.short_user_name} (auth:{self.auth_method.value})"
        if self.real_user is not None:
            text += f" via {self.real_user}"
        return text


def is_superuser(
    ugi: UserGroupInformation, fs_owner: str | frozenset[str], supergroup: str
) -> bool:
    """Hadoop's superuser rule (FSPermissionChecker's ``isSuper``): the NameNode's own user
    (``fs_owner``, the user the NameNode runs as; a set of names where the owner of ``/``
    is not the OS user running the NameNode, which only tests do) or a member of
    ``supergroup`` (``dfs.permissions.superusergroup``, default ``supergroup``)."""
    owners = {fs_owner} if isinstance(fs_owner, str) else fs_owner
    return ugi.short_user_name in owners or supergroup in ugi.groups
