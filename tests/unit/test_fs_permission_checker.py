"""FSPermissionChecker, FsPermission and UserGroupInformation: every rule, with Hadoop's
messages (FSPermissionChecker.java, FsPermission.java, UmaskParser.java).

Pure: the checker runs over an FSDirectory tree built by hand, no namesystem, no edit log.
"""

from __future__ import annotations

import pytest

from hadoop_qjm.common.exceptions import (
    AccessControlException,
    IllegalArgumentException,
    ParentNotDirectoryException,
)
from hadoop_qjm.common.fs_permission import FsAction, FsPermission, get_umask, parse_umask
from hadoop_qjm.common.security.user_group_information import (
    AuthenticationMethod,
    UserGroupInformation,
    is_superuser,
)
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.fs_directory import FSDirectory, INodeDirectory, INodeFile
from hadoop_qjm.namenode.fs_permission_checker import FSPermissionChecker

pytestmark = pytest.mark.timeout(60)

R, W, X = FsAction.READ, FsAction.WRITE, FsAction.EXECUTE


def build(*nodes: tuple[str, str, str, int]) -> FSDirectory:
    """A tree: ``(path, owner, group, mode)`` each, parents first; a path ending in ``/``
    is a directory. The root is hdfs:supergroup 0755."""
    fs = FSDirectory("hdfs", "supergroup", 0o755)
    for path, owner, group, mode in nodes:
        is_dir = path.endswith("/")
        path = path.rstrip("/")
        parent_path, name = path.rsplit("/", 1)
        parent = fs.get_inode(parent_path or "/")
        inode_id = fs.allocate_inode_id()
        if is_dir:
            node = INodeDirectory(inode_id, name, owner, group, mode, 0, 0)
        else:
            node = INodeFile(inode_id, name, owner, group, mode, 0, 0, replication=1, block_size=1)
        assert fs.add_child(parent, node)  # type: ignore[arg-type]
    return fs


def checker(user: str, *groups: str, superuser: bool = False) -> FSPermissionChecker:
    return FSPermissionChecker(user, groups, superuser)


def denied(call) -> str:
    with pytest.raises(AccessControlException) as info:
        call()
    return str(info.value)


HOME = build(("/home/", "hdfs", "supergroup", 0o755), ("/home/bob/", "bob", "staff", 0o755))


# ---- FsPermission, FsAction, the umask ------------------------------------------------------------


@pytest.mark.parametrize(
    "mode,text",
    [
        (0o755, "rwxr-xr-x"),
        (0o644, "rw-r--r--"),
        (0o000, "---------"),
        (0o1777, "rwxrwxrwt"),
        (0o1770, "rwxrwx--T"),
        (0o7777, "rwxrwxrwt"),  # setuid/setgid are not FsPermission's: masked off
    ],
)
def test_permission_strings_are_hadoops(mode: int, text: str) -> None:
    assert str(FsPermission(mode)) == text


def test_actions() -> None:
    assert str(FsAction.READ_EXECUTE) == "READ_EXECUTE" and FsAction.ALL.symbol == "rwx"
    assert FsAction.ALL.implies(FsAction.WRITE) and not FsAction.READ.implies(FsAction.WRITE)
    assert FsAction.READ_EXECUTE.implies(FsAction.EXECUTE)
    permission = FsPermission.from_octal("1750")
    assert permission.sticky_bit and permission.user_action is FsAction.ALL
    assert permission.group_action is FsAction.READ_EXECUTE
    assert permission.other_action is FsAction.NONE
    assert FsPermission(0o1777).apply_umask(0o022) == FsPermission(0o755)  # sticky dropped
    with pytest.raises(IllegalArgumentException):
        FsPermission.from_octal("8")


@pytest.mark.parametrize(
    "text,umask",
    [
        ("022", 0o022),
        ("0022", 0o022),
        (" 077 ", 0o077),
        ("000", 0o000),
        ("u=rwx,g=rx,o=", 0o027),  # symbolic: what stays allowed
        ("u=rwx,g=rwx,o=rx", 0o002),
        ("a=rx", 0o222),
        ("u+rwx", 0o077),
        ("=", 0o777),
    ],
)
def test_umask_as_hadoop_reads_it(text: str, umask: int) -> None:
    assert parse_umask(text) == umask


@pytest.mark.parametrize("text", ["22", "1022", "u=rwxt", "abc", "u=rwx g=rx", ""])
def test_bad_umask_is_one_sentence(text: str) -> None:
    conf = Configuration(load_defaults=False)
    conf.set("fs.permissions.umask-mode", text)
    with pytest.raises(IllegalArgumentException) as info:
        get_umask(conf)
    assert str(info.value) == (
        f"Unable to parse configuration fs.permissions.umask-mode with value {text} as octal"
        " or symbolic umask."
    )


def test_umask_default() -> None:
    assert get_umask(Configuration()) == 0o022
    assert get_umask(Configuration(load_defaults=False)) == 0o022


# ---- UserGroupInformation and the superuser rule ----------------------------------------------------


def test_ugi_prints_as_hadoop() -> None:
    alice = UserGroupInformation("alice", ("staff",), AuthenticationMethod.CERTIFICATE)
    assert str(alice) == "alice (auth:CERTIFICATE)" and alice.primary_group == "staff"
    assert str(UserGroupInformation("hdfs")) == "hdfs (auth:SIMPLE)"
    proxy = UserGroupInformation("bob", (), AuthenticationMethod.PROXY, UserGroupInformation("nn"))
    assert str(proxy) == "bob (auth:PROXY) via nn (auth:SIMPLE)"


def test_superuser_is_the_namenode_user_or_a_supergroup_member() -> None:
    assert is_superuser(UserGroupInformation("hdfs"), "hdfs", "supergroup")
    assert is_superuser(UserGroupInformation("op", ("staff", "admins")), "hdfs", "admins")
    assert not is_superuser(UserGroupInformation("alice", ("supergroup",)), "hdfs", "admins")
    assert not is_superuser(UserGroupInformation("alice", ("staff",)), "hdfs", "supergroup")
    with pytest.raises(AccessControlException, match=r"^Access denied for user alice\. "):
        checker("alice").check_superuser_privilege()
    checker("op", superuser=True).check_superuser_privilege()


# ---- the rules ------------------------------------------------------------------------------------


def test_write_on_the_ancestor_names_the_inode_as_hadoop() -> None:
    iip = HOME.resolve("/home/bob/new/deeper")
    message = denied(lambda: checker("alice", "staff").check_permission(iip, ancestor_access=W))
    assert message == (
        'Permission denied: user=alice, access=WRITE, inode="/home/bob":bob:staff:drwxr-xr-x'
    )
    checker("bob").check_permission(iip, ancestor_access=W)  # the owner may


def test_whose_bits_apply_owner_then_group_then_other() -> None:
    fs = build(("/d/", "bob", "staff", 0o070))  # the group may everything, the owner nothing
    iip = fs.resolve("/d")
    owner, member, other = checker("bob", "staff"), checker("carol", "staff"), checker("dave")
    assert not owner.has_permission(
        iip.last, R
    )  # the owner class wins even if the group would allow
    assert member.has_permission(iip.last, FsAction.ALL)
    assert not other.has_permission(iip.last, R)
    message = denied(lambda: owner.check_permission(iip, access=FsAction.READ_EXECUTE))
    assert (
        message
        == 'Permission denied: user=bob, access=READ_EXECUTE, inode="/d":bob:staff:d---rwx---'
    )


def test_traverse_needs_execute_on_every_existing_ancestor() -> None:
    fs = build(("/a/", "bob", "staff", 0o750), ("/a/b/", "bob", "staff", 0o777))
    iip = fs.resolve("/a/b/c")
    message = denied(lambda: checker("alice").check_traverse(iip))
    assert (
        message == 'Permission denied: user=alice, access=EXECUTE, inode="/a":bob:staff:drwxr-x---'
    )
    checker("carol", "staff").check_traverse(iip)
    checker("alice", superuser=True).check_traverse(iip)  # a superuser is not checked
    # The last component itself needs no x: /a/b is checked for /a/b/c, /a/b/c is not.
    checker("carol", "staff").check_traverse(fs.resolve("/a"))


def test_traverse_through_a_file_is_parent_not_directory() -> None:
    fs = build(("/f", "bob", "staff", 0o777))
    for pc in (checker("alice"), checker("hdfs", superuser=True)):
        with pytest.raises(ParentNotDirectoryException, match=r"^/f \(is not a directory\)$"):
            pc.check_traverse(fs.resolve("/f/x/y"))
    # A directory without x before the file is refused first, as Hadoop walks in order.
    fs = build(("/d/", "bob", "staff", 0o700), ("/d/f", "bob", "staff", 0o777))
    assert "access=EXECUTE" in denied(lambda: checker("alice").check_traverse(fs.resolve("/d/f/x")))


def test_parent_and_path_access() -> None:
    fs = build(("/d/", "bob", "staff", 0o755), ("/d/f", "alice", "staff", 0o644))
    iip = fs.resolve("/d/f")
    message = denied(lambda: checker("carol").check_permission(iip, parent_access=W))
    assert 'inode="/d":bob:staff:drwxr-xr-x' in message
    message = denied(lambda: checker("carol").check_permission(iip, access=W))
    assert (
        message
        == 'Permission denied: user=carol, access=WRITE, inode="/d/f":alice:staff:-rw-r--r--'
    )
    checker("alice").check_permission(iip, access=W)
    # A missing parent or node is not checked (the call then fails another way).
    checker("carol").check_permission(fs.resolve("/d/nope/x"), parent_access=W, access=W)


def test_sticky_bit_lets_only_the_owners_remove() -> None:
    fs = build(("/tmp/", "hdfs", "supergroup", 0o1777), ("/tmp/f", "bob", "staff", 0o644))
    iip = fs.resolve("/tmp/f")
    message = denied(lambda: checker("alice").check_permission(iip, parent_access=W))
    assert message == (
        'Permission denied by sticky bit: user=alice, path="/tmp/f":bob:staff:-rw-r--r--, '
        'parent="/tmp":hdfs:supergroup:drwxrwxrwt'
    )
    checker("bob").check_permission(iip, parent_access=W)  # the file's owner
    checker("hdfs").check_permission(iip, parent_access=W)  # the directory's owner
    # Only a WRITE on the parent of an existing node checks it.
    checker("alice").check_permission(iip, parent_access=R)
    checker("alice").check_permission(fs.resolve("/tmp/new"), parent_access=W)


def test_sub_access_covers_every_non_empty_directory_below() -> None:
    fs = build(
        ("/d/", "alice", "staff", 0o777),
        ("/d/x/", "bob", "staff", 0o755),
        ("/d/x/f", "bob", "staff", 0o644),
        ("/d/empty/", "bob", "staff", 0o500),
    )
    iip = fs.resolve("/d")
    message = denied(lambda: checker("alice").check_permission(iip, sub_access=FsAction.ALL))
    assert message == 'Permission denied: user=alice, access=ALL, inode="/d/x":bob:staff:drwxr-xr-x'
    assert "/d/empty" in denied(
        lambda: checker("alice").check_permission(
            fs.resolve("/d/empty"), sub_access=FsAction.ALL, ignore_empty_dir=False
        )
    )
    checker("alice").check_permission(
        fs.resolve("/d/empty"), sub_access=FsAction.ALL, ignore_empty_dir=True
    )
    checker("bob").check_permission(fs.resolve("/d/x"), sub_access=FsAction.ALL)
    checker("alice").check_permission(
        fs.resolve("/d/x/f"), sub_access=FsAction.ALL
    )  # a file: nothing below


def test_sub_access_honours_sticky_directories_below() -> None:
    fs = build(
        ("/d/", "alice", "staff", 0o777),
        ("/d/tmp/", "hdfs", "supergroup", 0o1777),
        ("/d/tmp/f", "bob", "staff", 0o644),
    )
    message = denied(
        lambda: checker("alice").check_permission(
            fs.resolve("/d"), sub_access=FsAction.ALL, ignore_empty_dir=True
        )
    )
    # As Hadoop: the parent's path is the sticky directory's, its attributes the top's.
    assert message == (
        'Permission denied by sticky bit: user=alice, path="/d/tmp/f":bob:staff:-rw-r--r--, '
        'parent="/d/tmp":alice:staff:drwxrwxrwx'
    )


def test_owner_check() -> None:
    iip = HOME.resolve("/home/bob")
    message = denied(lambda: checker("alice", "staff").check_permission(iip, do_check_owner=True))
    assert message == "Permission denied. user=alice is not the owner of inode=/home/bob"
    checker("bob").check_permission(iip, do_check_owner=True)
    root = HOME.resolve("/")
    assert denied(lambda: checker("bob").check_permission(root, do_check_owner=True)).endswith(
        "inode=/"
    )
