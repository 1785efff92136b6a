"""FSNamesystem's permission checks and audit log (issue 35, items 2 and 4).

Who calls is whatever the namesystem's ``caller`` returns (here: a settable identity, as
the RPC server's caller will be); every refusal is Hadoop's AccessControlException and
changes nothing. The randomized test compares every decision with a literal model of
Hadoop's rules written here, independently of FSPermissionChecker.
"""

from __future__ import annotations

import logging

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hadoop_qjm.common.exceptions import AccessControlException, HadoopException
from hadoop_qjm.common.security.user_group_information import (
    AuthenticationMethod,
    UserGroupInformation,
)
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.fs_edit_log_op import PermissionStatus
from hadoop_qjm.namenode.fs_namesystem import FSNamesystem
from hadoop_qjm.namenode.fs_namesystem_audit_logger import AUDIT_LOG, escape_java
from tests.unit.test_fs_namesystem import Clock, RecordingEditLog

pytestmark = pytest.mark.timeout(120)

HDFS = UserGroupInformation("hdfs", ("hadoop",))
ALICE = UserGroupInformation("alice", ("alice", "staff"), AuthenticationMethod.CERTIFICATE)
BOB = UserGroupInformation("bob", ("bob", "staff"), AuthenticationMethod.CERTIFICATE)
OPERATOR = UserGroupInformation("op", ("op", "supergroup"), AuthenticationMethod.CERTIFICATE)


class Caller:
    """The identity the namesystem sees; ``ip`` the client's address."""

    def __init__(self) -> None:
        self.ugi = HDFS
        self.ip: str | None = "127.0.0.1"

    def __call__(self) -> UserGroupInformation:
        return self.ugi


def namesystem(caller: Caller, log: RecordingEditLog, **conf_keys: str) -> FSNamesystem:
    conf = Configuration()
    for key, value in conf_keys.items():
        conf.set(key, value)
    return FSNamesystem(
        conf,
        edit_log=log,
        clock=Clock(),
        fs_owner="hdfs",
        supergroup="supergroup",
        caller=caller,
        remote_ip=lambda: caller.ip,
    )


@pytest.fixture
def caller() -> Caller:
    return Caller()


@pytest.fixture
def log() -> RecordingEditLog:
    return RecordingEditLog()


@pytest.fixture
def ns(caller: Caller, log: RecordingEditLog) -> FSNamesystem:
    """/home/bob is bob:staff 0755 and /tmp hdfs:supergroup 1777, made by the superuser."""
    ns = namesystem(caller, log)
    ns.mkdirs("/home/bob", 0o755)
    ns.set_owner("/home/bob", "bob", "staff")
    ns.mkdirs("/tmp", 0o1777)
    return ns


def refused(call) -> str:
    with pytest.raises(AccessControlException) as info:
        call()
    message = str(info.value)
    assert "\n" not in message
    return message


def test_alice_cannot_mkdir_in_bobs_home_until_he_opens_it(ns, caller, log) -> None:
    caller.ugi = ALICE
    before, logged = ns.snapshot(), len(log.frames)
    assert refused(lambda: ns.mkdirs("/home/bob/x", 0o755)) == (
        'Permission denied: user=alice, access=WRITE, inode="/home/bob":bob:staff:drwxr-xr-x'
    )
    assert ns.snapshot() == before and len(log.frames) == logged  # nothing logged or changed
    caller.ugi = BOB
    ns.set_permission("/home/bob", 0o777)
    caller.ugi = ALICE
    assert ns.mkdirs("/home/bob/x", 0o755)
    status = ns.get_file_info("/home/bob/x")
    # Owner: the caller; group: the parent's; mode: what the (umasking) client sent.
    assert (status.owner, status.group, status.permission) == ("alice", "staff", 0o755)


def test_new_inodes_default_to_the_configured_umask(caller, log) -> None:
    ns = namesystem(caller, log, **{"fs.permissions.umask-mode": "u=rwx,g=rx,o="})
    ns.mkdirs("/d")
    ns.create("/d/f")
    assert ns.get_file_info("/d").permission == 0o750
    assert ns.get_file_info("/d/f").permission == 0o640


def test_chown_is_for_superusers_chgrp_for_members(ns, caller) -> None:
    caller.ugi = BOB
    assert refused(lambda: ns.set_owner("/home/bob", "alice", None)) == (
        "User bob is not a super user (non-super user cannot change owner)."
    )
    assert refused(lambda: ns.set_owner("/home/bob", None, "admins")) == (
        "User bob does not belong to admins"
    )
    ns.set_owner("/home/bob", "bob", "bob")  # his own name, a group of his
    caller.ugi = ALICE
    assert refused(lambda: ns.set_owner("/home/bob", None, "staff")) == (
        "Permission denied. user=alice is not the owner of inode=/home/bob"
    )
    assert refused(lambda: ns.set_permission("/home/bob", 0o777)).startswith(
        "Permission denied. user=alice is not the owner"
    )
    caller.ugi = OPERATOR  # a member of supergroup
    ns.set_owner("/home/bob", "alice", "admins")
    status = ns.get_file_info("/home/bob")
    assert (status.owner, status.group) == ("alice", "admins")


def test_sticky_tmp_only_the_owner_deletes(ns, caller) -> None:
    caller.ugi = BOB
    ns.create("/tmp/bobs", 0o666)
    caller.ugi = ALICE
    ns.create("/tmp/alices", 0o644)
    assert refused(lambda: ns.delete("/tmp/bobs", False)) == (
        'Permission denied by sticky bit: user=alice, path="/tmp/bobs":bob:supergroup:-rw-rw-rw-, '
        'parent="/tmp":hdfs:supergroup:drwxrwxrwt'
    )
    assert "sticky bit" in refused(lambda: ns.rename2("/tmp/bobs", "/tmp/mine"))
    assert ns.delete("/tmp/alices", False)
    caller.ugi = BOB
    assert ns.delete("/tmp/bobs", False)


def test_reads_need_traverse_and_listing_read_execute(ns, caller) -> None:
    caller.ugi = BOB
    ns.mkdirs("/home/bob/private/inner", 0o700)
    caller.ugi = ALICE
    assert refused(lambda: ns.get_file_info("/home/bob/private/inner")).endswith(
        'access=EXECUTE, inode="/home/bob/private":bob:staff:drwx------'
    )
    assert ns.get_file_info("/home/bob/private").owner == "bob"  # the last needs no x
    assert "access=READ_EXECUTE" in refused(lambda: ns.get_listing("/home/bob/private"))
    assert [s.name for s in ns.get_listing("/home/bob")] == ["private"]


def test_recursive_delete_needs_all_below(ns, caller) -> None:
    caller.ugi = BOB
    ns.set_permission("/home/bob", 0o777)
    caller.ugi = ALICE
    ns.mkdirs("/home/bob/a/b", 0o755)
    ns.create("/home/bob/a/b/f")
    ns.set_permission("/home/bob/a/b", 0o555)
    assert "access=ALL" in refused(lambda: ns.delete("/home/bob/a", True))
    ns.set_permission("/home/bob/a/b", 0o755)
    assert ns.delete("/home/bob/a", True)


def test_permissions_off_checks_only_chmod_and_chown(caller, log) -> None:
    ns = namesystem(caller, log, **{"dfs.permissions.enabled": "false"})
    ns.mkdirs("/home", 0o755)
    ns.mkdirs("/home/bob", 0o711)  # others may traverse, not write
    ns.set_owner("/home/bob", "bob", "bob")
    caller.ugi = ALICE
    ns.mkdirs("/home/bob/x")
    assert [s.name for s in ns.get_listing("/home/bob")] == ["x"]
    assert "not the owner" in refused(lambda: ns.set_permission("/home/bob", 0o777))
    assert "non-super user cannot change owner" in refused(
        lambda: ns.set_owner("/home/bob/x", "bob", None)
    )


# ---- the audit log --------------------------------------------------------------------------------


def test_audit_log_has_one_line_per_call_in_hadoops_format(ns, caller, audit) -> None:
    caller.ugi = ALICE
    with pytest.raises(AccessControlException):
        ns.mkdirs("/home/bob/x", 0o755)
    ns.mkdirs("/tmp/a/b", 0o755)
    ns.get_file_info("/tmp/a")
    ns.get_listing("/tmp")
    ns.rename2("/tmp/a/b", "/tmp/c")
    assert ns.rename("/tmp/c", "/tmp/a")  # into the directory /tmp/a
    caller.ip = None  # a call from inside the NameNode
    ns.set_times("/tmp/a", 5, -1)
    assert not ns.delete("/tmp/nothing", False)
    caller.ip = "127.0.0.1"
    with pytest.raises(HadoopException):
        ns.get_listing("/nope")  # not an AccessControlException: no line, as Hadoop
    assert audit.lines[0] == (
        "allowed=false\tugi=alice (auth:CERTIFICATE)\tip=/127.0.0.1\tcmd=mkdirs\t"
        "src=/home/bob/x\tdst=null\tperm=null\tproto=rpc"
    )
    rows = audit.parsed()
    assert [(r["allowed"], r["cmd"], r["src"], r["dst"], r["perm"]) for r in rows] == [
        ("false", "mkdirs", "/home/bob/x", "null", "null"),
        ("true", "mkdirs", "/tmp/a/b", "null", "alice:supergroup:rwxr-xr-x"),
        ("true", "getfileinfo", "/tmp/a", "null", "null"),
        ("true", "listStatus", "/tmp", "null", "null"),
        ("true", "rename (options=[NONE])", "/tmp/a/b", "/tmp/c", "alice:supergroup:rwxr-xr-x"),
        ("true", "rename", "/tmp/c", "/tmp/a", "alice:supergroup:rwxr-xr-x"),
        ("true", "setTimes", "/tmp/a", "null", "alice:supergroup:rwxr-xr-x"),
        ("false", "delete", "/tmp/nothing", "null", "null"),  # Hadoop: allowed=<deleted>
    ]
    assert {r["ugi"] for r in rows} == {"alice (auth:CERTIFICATE)"}
    assert [r["ip"] for r in rows][-2:] == ["null", "null"]
    assert ns.access.audit.denied_calls() == {"mkdirs": 1}


def test_audit_escapes_as_java(ns, caller, audit) -> None:
    ns.mkdirs("/tmp/tab\there")
    assert audit.parsed()[0]["src"] == "/tmp/tab\\there"
    assert escape_java('a"b\\c\u00e9\U0001f600') == 'a\\"b\\\\c\\u00E9\\uD83D\\uDE00'
    assert escape_java(None) == "null"


def test_refusals_are_counted_when_the_log_is_off(ns, caller, audit) -> None:
    AUDIT_LOG.setLevel(logging.WARNING)  # hdfs.audit.logger=WARN (the fixture restores it)
    caller.ugi = ALICE
    with pytest.raises(AccessControlException):
        ns.mkdirs("/home/bob/x")
    ns.mkdirs("/tmp/x")
    assert audit.lines == []
    assert ns.access.audit.denied_calls() == {"mkdirs": 1}


# ---- randomized: every decision agrees with a literal model of Hadoop's rules ----------------------

USERS = ("hdfs", "alice", "bob", "carol")
#: Modes drawn: the usual ones (sticky /tmp, homes, read-only, closed) or any at all.
MODES = st.sampled_from((0o755, 0o777, 0o1777, 0o1770, 0o700, 0o750, 0o770, 0o711, 0o570)) | (
    st.integers(0, 0o1777)
)
GROUPS = ("supergroup", "staff", "dev")
NAMES = ("a", "b", "c")


#: Mostly sticky, writable directories: where only the owners may remove.
STICKY_MODES = st.sampled_from((0o1777, 0o1770, 0o1775, 0o777))


@st.composite
def trees(draw, modes: st.SearchStrategy[int]):
    """``{path: (is_dir, owner, group, mode)}`` below a root with a random mode."""
    tree = {"/": (True, "hdfs", "supergroup", draw(modes))}
    frontier = ["/"]
    while frontier:
        parent = frontier.pop()
        depth = parent.count("/") if parent != "/" else 0
        if depth >= 3:
            continue
        for name in draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=2)):
            path = parent.rstrip("/") + "/" + name
            is_dir = draw(st.booleans())
            # Groups a tenant may be in (supergroup members are superusers: no check).
            owner, group = draw(st.sampled_from(USERS)), draw(st.sampled_from(GROUPS[1:]))
            tree[path] = (is_dir, owner, group, draw(modes))
            if is_dir:
                frontier.append(path)
    return tree


paths = st.lists(st.sampled_from(NAMES), min_size=0, max_size=4).map(
    lambda names: "/" + "/".join(names)
)


def calls(where: st.SearchStrategy[str]) -> st.SearchStrategy[tuple]:
    """One namespace call on ``where`` (mostly the tree's own, some missing ones)."""
    return st.one_of(
        st.tuples(st.just("mkdirs"), where),
        st.tuples(st.just("create"), where, st.booleans()),
        st.tuples(st.just("delete"), where, st.booleans()),
        st.tuples(st.just("rename"), where, where),
        st.tuples(st.just("rename2"), where, where, st.booleans()),
        st.tuples(st.just("setPermission"), where),
        st.tuples(
            st.just("setOwner"),
            where,
            st.sampled_from((None,) + USERS),
            st.sampled_from((None,) + GROUPS),
        ),
        st.tuples(st.just("setTimes"), where),
        st.tuples(st.just("getfileinfo"), where),
        st.tuples(st.just("listStatus"), where),
    )


class Model:
    """Hadoop's rules read literally (FSDir*Op + FSPermissionChecker), over a dict tree."""

    def __init__(self, tree: dict, user: str, groups: tuple[str, ...]) -> None:
        self.tree, self.user, self.groups = tree, user, set(groups)
        self.superuser = user == "hdfs" or "supergroup" in self.groups

    def may(self, path: str, bits: int) -> bool:
        _, owner, group, mode = self.tree[path]
        if owner == self.user:
            triple = (mode >> 6) & 7
        elif group in self.groups:
            triple = (mode >> 3) & 7
        else:
            triple = mode & 7
        return triple & bits == bits

    @staticmethod
    def prefixes(path: str) -> list[str]:
        names = [n for n in path.split("/") if n]
        return ["/"] + ["/" + "/".join(names[: i + 1]) for i in range(len(names))]

    def resolve(self, path: str) -> str | None:
        """'denied' or 'error' for what resolving ``path`` refuses, else None."""
        for prefix in self.prefixes(path)[:-1]:
            if prefix not in self.tree:
                return None
            if not self.tree[prefix][0]:
                return "error"  # ParentNotDirectoryException
            if not self.superuser and not self.may(prefix, 1):
                return "denied"
        return None

    def closest_ancestor(self, path: str) -> str:
        return [p for p in self.prefixes(path)[:-1] if p in self.tree][-1]

    def sticky_ok(self, parent: str, child: str) -> bool:
        return not (self.tree[parent][3] & 0o1000) or self.user in (
            self.tree[parent][1],
            self.tree[child][1],
        )

    def may_remove(self, path: str) -> bool:
        """parentAccess WRITE with its sticky-bit rule, for ``path`` (not the root)."""
        parent = self.prefixes(path)[-2]
        if parent not in self.tree:
            return True
        if path in self.tree and not self.sticky_ok(parent, path):
            return False
        return self.may(parent, 2)

    def subtree_ok(self, top: str) -> bool:
        """subAccess ALL with ignoreEmptyDir: every non-empty directory below, and the sticky
        rule of each."""
        if top not in self.tree or not self.tree[top][0]:
            return True
        for d, (is_dir, *_rest) in self.tree.items():
            if not is_dir or not (d == top or d.startswith(top.rstrip("/") + "/")):
                continue
            children = [p for p in self.tree if p != "/" and self.prefixes(p)[-2] == d]
            if children and not self.may(d, 7):
                return False
            if children and any(not self.sticky_ok(d, c) for c in children):
                return False
        return True

    def decide(self, call: tuple) -> str:
        """'denied' if Hadoop refuses ``call`` with an AccessControlException, else 'other'."""
        op, path = call[0], call[1]
        first = self.resolve(path)
        if op in ("rename", "rename2"):
            second = self.resolve(call[2])
            if first or second:
                return "denied" if (first or second) == "denied" else "other"
        elif first:
            return "denied" if first == "denied" else "other"
        exists = path in self.tree
        if self.superuser:
            return "other"
        if op == "setPermission":
            return "denied" if exists and self.tree[path][1] != self.user else "other"
        if op == "setOwner":
            if not exists:
                return "other"
            if self.tree[path][1] != self.user:
                return "denied"
            user, group = call[2], call[3]
            if (
                user is not None
                and user != self.user
                or group is not None
                and group not in self.groups
            ):
                return "denied"
            return "other"
        ok = True
        if op == "mkdirs":
            ok = exists or self.may(self.closest_ancestor(path), 2)
        elif op == "create":
            ok = path == "/" or self.may(self.closest_ancestor(path), 2)
            if ok and exists and not self.tree[path][0] and call[2]:
                ok = self.may(path, 2)
        elif op == "delete":
            ok = (path == "/" or self.may_remove(path)) and self.subtree_ok(path)
        elif op in ("rename", "rename2"):
            dst = call[2]
            if op == "rename" and dst in self.tree and self.tree[dst][0]:
                src_names = [n for n in path.split("/") if n]
                dst = dst.rstrip("/") + "/" + (src_names[-1] if src_names else "")
                dst = "/" + "/".join(n for n in dst.split("/") if n)
                if self.resolve(dst) == "denied":  # the real target's own traverse
                    return "denied"
            ok = (path == "/" or self.may_remove(path)) and (
                dst == "/" or self.may(self.closest_ancestor(dst), 2)
            )
        elif op == "setTimes":
            ok = not exists or self.may(path, 2)
        elif op == "listStatus":
            ok = not (exists and self.tree[path][0]) or self.may(path, 5)
        return "other" if ok else "denied"


def run(ns: FSNamesystem, call: tuple) -> None:
    op, path = call[0], call[1]
    if op == "mkdirs":
        ns.mkdirs(path, 0o755)
    elif op == "create":
        ns.create(path, 0o644, overwrite=call[2])
    elif op == "delete":
        ns.delete(path, call[2])
    elif op == "rename":
        ns.rename(path, call[2])
    elif op == "rename2":
        ns.rename2(path, call[2], call[3])
    elif op == "setPermission":
        ns.set_permission(path, 0o700)
    elif op == "setOwner":
        ns.set_owner(path, call[2], call[3])
    elif op == "setTimes":
        ns.set_times(path, 1, 1)
    elif op == "getfileinfo":
        ns.get_file_info(path)
    else:
        ns.get_listing(path)


def check_against_model(tree: dict, user: str, groups: list[str], call: tuple) -> None:
    caller, log = Caller(), RecordingEditLog()
    ns = namesystem(caller, log)
    ns.set_permission("/", tree["/"][3])
    for path, (is_dir, owner, group, mode) in tree.items():
        if path == "/":
            continue
        if is_dir:
            ns.mkdirs(path, PermissionStatus(owner, group, mode), create_parent=False)
        else:
            ns.create(path, PermissionStatus(owner, group, mode), create_parent=False)
    caller.ugi = UserGroupInformation(user, tuple(groups))
    before, logged = ns.snapshot(), len(log.frames)
    expected = Model(tree, user, tuple(groups)).decide(call)
    try:
        run(ns, call)
        outcome = "other"
    except AccessControlException:
        outcome = "denied"
        assert ns.snapshot() == before and len(log.frames) == logged
    except HadoopException:
        outcome = "other"
    assert outcome == expected, (call, user, groups)


#: Tenants mostly: a superuser (hdfs, or a member of supergroup) is never checked.
callers = {
    "user": st.sampled_from(("alice", "bob", "carol", "alice", "bob", "carol", "hdfs")),
    "groups": st.lists(
        st.sampled_from(("staff", "dev", "staff", "dev", "supergroup")), unique=True, max_size=2
    ),
}


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees(MODES), data=st.data(), **callers)
def test_every_decision_agrees_with_the_model(tree, user, groups, data) -> None:
    check_against_model(tree, user, groups, data.draw(calls(st.sampled_from(sorted(tree)) | paths)))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees(STICKY_MODES | MODES), data=st.data(), **callers)
def test_removals_agree_with_the_model(tree, user, groups, data) -> None:
    where = st.sampled_from(sorted(tree))
    call = data.draw(
        st.one_of(
            st.tuples(st.just("delete"), where, st.booleans()),
            st.tuples(st.just("rename"), where, where),
            st.tuples(st.just("rename2"), where, where, st.booleans()),
        )
    )
    check_against_model(tree, user, groups, call)
