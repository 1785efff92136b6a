"""The dfs shell's pure parts: Hadoop's -ls layout, permission strings, chmod modes."""

from __future__ import annotations

import io
import time

import pytest

from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.namenode.fs_directory import FileStatus
from hadoop_qjm.tools.dfs_shell import format_listing, parse_mode, permission_string


def status(path, is_dir, mode, owner="hdfs", group="supergroup", length=0, repl=3):
    mtime = int(time.mktime((2026, 11, 22, 14, 5, 0, 0, 0, -1)) * 1000)
    return FileStatus(path, is_dir, length, 0 if is_dir else repl, 0, mtime, 0, mode, owner,
                      group, 16390, 0)  # fmt: skip


def test_ls_lines_are_hadoops() -> None:
    lines = format_listing(
        [
            (status("/path", True, 0o755), "/path"),
            (status("/f", False, 0o644, owner="alice", group="g"), "/f"),
        ]
    )
    assert lines == [
        "drwxr-xr-x   - hdfs  supergroup          0 2026-11-22 14:05 /path",
        "-rw-r--r--   3 alice g                   0 2026-11-22 14:05 /f",
    ]
    (alone,) = format_listing([(status("/path", True, 0o755), "/path")])
    assert alone == "drwxr-xr-x   - hdfs supergroup          0 2026-11-22 14:05 /path"
    (wide,) = format_listing([(status("/big", False, 0o600, length=12345678901, repl=1000), "x")])
    assert wide == "-rw------- 1000 hdfs supergroup 12345678901 2026-11-22 14:05 x"


@pytest.mark.parametrize(
    "mode,text",
    [(0o755, "rwxr-xr-x"), (0o000, "---------"), (0o1777, "rwxrwxrwt"), (0o1770, "rwxrwx--T")],
)
def test_permission_strings(mode, text) -> None:
    assert permission_string(mode) == text


@pytest.mark.parametrize(
    "spec,old,is_dir,new",
    [
        ("700", 0o755, True, 0o700),
        ("1777", 0o755, True, 0o1777),
        ("g+w", 0o755, True, 0o775),
        ("o-rx", 0o755, True, 0o750),
        ("u=rw,go=r", 0o777, False, 0o644),
        ("a+X", 0o644, True, 0o755),
        ("a+X", 0o644, False, 0o644),
        ("+t", 0o777, True, 0o1777),
        ("=", 0o1777, True, 0o000),
    ],
)
def test_chmod_modes(spec, old, is_dir, new) -> None:
    assert parse_mode(spec)(old, is_dir) == new


@pytest.mark.parametrize("spec", ["9z9", "u+q", "rwx", "u+r,,", "77777"])
def test_bad_chmod_modes(spec) -> None:
    with pytest.raises(IllegalArgumentException):
        parse_mode(spec)


class FakeNameNode:
    """get_file_info and list_status over a dict of path -> FileStatus (children sorted)."""

    def __init__(self, statuses: list[FileStatus]) -> None:
        self.statuses = {s.path: s for s in statuses}
        self.listed: list[str] = []

    def get_file_info(self, path):
        return self.statuses.get(path)

    def list_status(self, path):
        self.listed.append(path)
        prefix = path.rstrip("/") + "/"
        children = [
            p for p in self.statuses if p.startswith(prefix) and "/" not in p[len(prefix) :]
        ]
        children = [p for p in children if p != path]
        return iter([self.statuses[p] for p in sorted(children)])

    def close(self) -> None:
        pass


TREE = [
    status("/", True, 0o755),
    status("/a", True, 0o755),
    status("/a/b", True, 0o755),
    status("/a/b/f", False, 0o644, length=1536),
    status("/a/g", False, 0o644, length=12345678),
    status("/z", False, 0o644, length=1024),
]


def ls(argv: list[str], tree=TREE) -> tuple[int, list[str], str]:
    from hadoop_qjm.conf import Configuration
    from hadoop_qjm.tools import dfs_shell

    out, err = io.StringIO(), io.StringIO()
    shell = dfs_shell.FsShell(Configuration(load_defaults=True), out=out, err=err)
    shell._proxies[""] = FakeNameNode(tree)
    code = dfs_shell._dispatch(shell, "ls", argv)
    return code, out.getvalue().splitlines(), err.getvalue()


def test_ls_recursive_is_depth_first_with_full_paths_and_no_found_line() -> None:
    code, lines, err = ls(["-R", "/"])
    assert (code, err) == (0, "")
    assert [line.split()[-1] for line in lines] == ["/a", "/a/b", "/a/b/f", "/a/g", "/z"]
    assert lines[0] == "drwxr-xr-x   - hdfs supergroup          0 2026-11-22 14:05 /a"
    assert lines[2] == "-rw-r--r--   3 hdfs supergroup       1536 2026-11-22 14:05 /a/b/f"
    code, lines, _ = ls(["-R", "/a/b"])
    assert lines == ["-rw-r--r--   3 hdfs supergroup       1536 2026-11-22 14:05 /a/b/f"]
    code, lines, _ = ls(["-R", "-d", "/a"])  # -d: the directory itself, no recursion
    assert [line.split()[-1] for line in lines] == ["/a"]


def test_ls_human_readable_sizes_and_combined_flags() -> None:
    code, lines, err = ls(["-R", "-h", "/a"])
    assert (code, err) == (0, "")
    assert lines == [
        "drwxr-xr-x   - hdfs supergroup          0 2026-11-22 14:05 /a/b",
        "-rw-r--r--   3 hdfs supergroup      1.5 K 2026-11-22 14:05 /a/b/f",
        "-rw-r--r--   3 hdfs supergroup     11.8 M 2026-11-22 14:05 /a/g",
    ]
    code, lines, _ = ls(["-hd", "/z"])
    assert lines == ["-rw-r--r--   3 hdfs supergroup        1 K 2026-11-22 14:05 /z"]
    code, lines, _ = ls(["-h", "/"])  # not recursive: Found N items, one level
    assert lines[0] == "Found 2 items" and len(lines) == 3


@pytest.mark.parametrize(
    "n,text",
    [(0, "0"), (1023, "1023"), (1024, "1 K"), (1536, "1.5 K"), (1024 * 1024 - 1, "1.0 M"),
     (12345678, "11.8 M"), (3 << 30, "3 G"), ((1 << 40) + (1 << 38), "1.3 T")],
)  # fmt: skip
def test_human_sizes_are_hadoops(n, text) -> None:
    from hadoop_qjm.tools.dfs_shell import human_size

    assert human_size(n) == text


class RefusingNameNode(FakeNameNode):
    """A NameNode whose mkdirs refuses, as FSPermissionChecker words it."""

    def mkdirs(self, path, mode, create_parent=True):
        from hadoop_qjm.common.exceptions import AccessControlException

        raise AccessControlException(
            'Permission denied: user=alice, access=WRITE, inode="/a":hdfs:supergroup:drwxr-xr-x'
        )


def test_a_refusal_is_one_line_per_path_and_the_others_go_on() -> None:
    from hadoop_qjm.conf import Configuration
    from hadoop_qjm.tools import dfs_shell

    out, err = io.StringIO(), io.StringIO()
    shell = dfs_shell.FsShell(Configuration(), out=out, err=err)
    shell._proxies[""] = RefusingNameNode(TREE)
    assert dfs_shell._dispatch(shell, "mkdir", ["/a/x", "/a/y"]) == 1
    assert (
        err.getvalue().splitlines()
        == [
            'mkdir: Permission denied: user=alice, access=WRITE, inode="/a":hdfs:supergroup:drwxr-xr-x'
        ]
        * 2
    )


def test_a_symbolic_umask_is_read_and_a_bad_one_is_a_usage_error() -> None:
    from hadoop_qjm.common.exceptions import UsageError
    from hadoop_qjm.conf import Configuration
    from hadoop_qjm.tools import dfs_shell

    conf = Configuration()
    conf.set("fs.permissions.umask-mode", "u=rwx,g=rx,o=")
    assert dfs_shell.FsShell(conf).umask == 0o027
    conf.set("fs.permissions.umask-mode", "22")
    with pytest.raises(
        UsageError, match="^Unable to parse configuration fs.permissions.umask-mode"
    ):
        dfs_shell.FsShell(conf)
