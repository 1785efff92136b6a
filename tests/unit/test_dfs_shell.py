"""The dfs shell's pure parts: Hadoop's -ls layout, permission strings, chmod modes."""

from __future__ import annotations

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
