"""The daemon's log file name: Hadoop's ``hadoop-<ident>-<daemon>-<host>.log``."""

from __future__ import annotations

import os
import pwd
import socket
from pathlib import Path

import pytest

from hadoop_qjm.cli import daemon_log_file

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    "ident,user,expected",
    [
        ("ops", "alice", "ops"),  # $HADOOP_IDENT_STRING first
        (None, "alice", "alice"),  # then $USER
        (None, None, pwd.getpwuid(os.getuid()).pw_name),  # then `id -un`
    ],
)
def test_ident_is_the_same_as_the_daemon_scripts(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, ident, user, expected
) -> None:
    monkeypatch.setenv("HADOOP_LOG_DIR", str(tmp_path / "logs"))
    for name, value in (("HADOOP_IDENT_STRING", ident), ("USER", user)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    host = socket.gethostname()
    assert daemon_log_file("journalnode") == str(
        tmp_path / "logs" / f"hadoop-{expected}-journalnode-{host}.log"
    )
    assert (tmp_path / "logs").is_dir()


def test_no_log_dir_no_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("HADOOP_LOG_DIR", raising=False)
    assert daemon_log_file("namenode") is None
