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


# ---- the NameNode's audit log: hdfs-audit.log beside the daemon's log (Hadoop's RFAAUDIT) ----------


@pytest.fixture
def audit_logger(request: pytest.FixtureRequest):
    """A logger of the test's own (configure_audit_logging changes the one it is given)."""
    import logging

    logger = logging.getLogger(f"test.audit.{request.node.name}")
    yield logger
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()


def _settings(text: str, tmp_path: Path):
    from hadoop_qjm.common.daemon_logging import logging_settings

    (tmp_path / "log4j.properties").write_text(text)
    return logging_settings(str(tmp_path))


def test_audit_lines_go_to_hdfs_audit_log_rolled_and_not_to_the_daemon_log(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, audit_logger, caplog
) -> None:
    from hadoop_qjm.common.daemon_logging import configure_audit_logging

    monkeypatch.delenv("HDFS_AUDIT_LOGGER", raising=False)
    settings = _settings(
        "hdfs.audit.log.maxfilesize=1KB\nhdfs.audit.log.maxbackupindex=2\n", tmp_path
    )
    daemon_log = tmp_path / "logs" / "hadoop-hdfs-namenode-h.log"
    path = configure_audit_logging(audit_logger.name, str(daemon_log), settings)
    assert path == str(tmp_path / "logs" / "hdfs-audit.log")
    line = "allowed=true\tugi=alice (auth:SIMPLE)\tip=null\tcmd=mkdirs\tsrc=/a\tdst=null\tperm=null\tproto=rpc"
    for _ in range(30):
        audit_logger.info(line)
    written = Path(path).read_text().splitlines()
    assert written and written[-1].endswith(f" INFO {audit_logger.name}: {line}")
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == [
        "hdfs-audit.log",
        "hdfs-audit.log.1",
        "hdfs-audit.log.2",
    ]
    assert not audit_logger.propagate and not caplog.records  # additivity=false


def test_null_appender_writes_nowhere_and_formats_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, audit_logger
) -> None:
    import logging

    from hadoop_qjm.common.daemon_logging import configure_audit_logging

    monkeypatch.setenv("HDFS_AUDIT_LOGGER", "INFO,NullAppender")  # wins over the file
    settings = _settings("hdfs.audit.logger=INFO,RFAAUDIT\n", tmp_path)
    assert configure_audit_logging(audit_logger.name, str(tmp_path / "nn.log"), settings) is None
    assert not audit_logger.isEnabledFor(logging.CRITICAL)
    assert not (tmp_path / "hdfs-audit.log").exists()


def test_a_bad_audit_appender_is_one_sentence(tmp_path: Path) -> None:
    from hadoop_qjm.common.exceptions import IllegalArgumentException

    with pytest.raises(IllegalArgumentException) as info:
        _settings("hdfs.audit.logger=INFO,RFA\n", tmp_path)
    assert str(info.value) == (
        f"{tmp_path / 'log4j.properties'}: hdfs.audit.logger: unknown appender 'RFA' "
        "(RFAAUDIT, NullAppender or console)"
    )
