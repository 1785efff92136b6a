"""Who calls the NameNode, and whether that caller is a superuser (Hadoop's
``FSNamesystem.getPermissionChecker()`` / ``checkSuperuserPrivilege``).

The caller of an RPC is its connection's user (:func:`hadoop_qjm.ipc.call_context.remote_ugi`:
a certificate through ``hadoop.security.auth_to_local``, else the user a plain client
claims); an in-process call is the NameNode's own user. Superusers are the NameNode's own
user (``fs_owner``, by default the OS user it runs as: Hadoop's fsOwner) and the members of
``dfs.permissions.superusergroup`` (``supergroup``). With ``dfs.permissions.enabled=false``
no superuser check refuses anything, as in Hadoop.
"""

from __future__ import annotations

import getpass
import time
from collections.abc import Callable
from typing import Any

from hadoop_qjm.common.security.caller_identity import caller_identity_from_conf
from hadoop_qjm.common.security.service_authorization import service_authorization_from_conf
from hadoop_qjm.common.security.user_group_information import (
    UserGroupInformation,
    is_superuser,
)
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.ipc import call_context
from hadoop_qjm.ipc.dispatcher import Rpc
from hadoop_qjm.namenode.fs_permission_checker import FSPermissionChecker
from hadoop_qjm.namenode.namespace_access import superuser_names

__all__ = ["NameNodeCallers"]


class NameNodeCallers:
    """The NameNode's callers: :meth:`caller` (what the namesystem's ``caller`` is given)
    and :meth:`check_superuser_privilege` (the admin calls'). Reads its keys once; a
    malformed ``auth_to_local`` rule or an unknown group mapping raises ConfigurationError
    here, before the NameNode binds anything."""

    def __init__(
        self,
        conf: Any,
        fs_owner: str | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.identity = caller_identity_from_conf(conf, clock)
        self.fs_owner = fs_owner or getpass.getuser()
        self.superusers = superuser_names(self.fs_owner)
        self._own: UserGroupInformation | None = None
        self.supergroup = (
            conf.get_trimmed(keys.DFS_PERMISSIONS_SUPERUSERGROUP_KEY)
            or keys.DFS_PERMISSIONS_SUPERUSERGROUP_DEFAULT
        )
        self.permissions_enabled = conf.get_bool(
            keys.DFS_PERMISSIONS_ENABLED_KEY, keys.DFS_PERMISSIONS_ENABLED_DEFAULT
        )
        #: hadoop-policy.xml's ACLs with hadoop.security.authorization=true, else None.
        self.service_authorization = service_authorization_from_conf(conf)

    def authorize_service(self, rpc: Rpc) -> None:
        """Service-level authorization of one call (the RPC server's ``authorize``)."""
        if self.service_authorization is not None:
            self.service_authorization.authorize(self.caller(), rpc.service_name)

    def caller(self) -> UserGroupInformation:
        """The caller of the call this thread runs: its connection's user, or (in-process)
        the NameNode's own."""
        remote = call_context.remote_ugi()
        if remote is not None:
            return remote
        groups = self.identity.groups.groups(self.fs_owner)
        own = self._own
        if own is None or own.groups != groups:  # one object while the groups hold
            own = self._own = UserGroupInformation(self.fs_owner, groups)
        return own

    def check_superuser_privilege(self) -> None:
        """AccessControlException ``Access denied for user alice. Superuser privilege is
        required`` unless the caller is a superuser (or permissions are off)."""
        if not self.permissions_enabled:
            return
        ugi = self.caller()
        FSPermissionChecker(
            ugi.short_user_name,
            ugi.groups,
            is_superuser(ugi, self.superusers, self.supergroup),
        ).check_superuser_privilege()
