"""RollingAuditFileHandler: the RFAAUDIT appender's bytes, its rolling, and its two ways of
writing (by the calls' threads, or by one writer thread with dfs.namenode.audit.log.async)."""

from __future__ import annotations

import logging
import re
import threading
from pathlib import Path

import pytest

from hadoop_qjm.common.rolling_audit_file_handler import RollingAuditFileHandler
from hadoop_qjm.common.security.user_group_information import UserGroupInformation
from hadoop_qjm.namenode.fs_namesystem_audit_logger import (
    AsyncAuditLog,
    FSNamesystemAuditLogger,
)

pytestmark = pytest.mark.timeout(60)

_STAMP = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"


@pytest.fixture
def logger(request: pytest.FixtureRequest):
    logger = logging.getLogger(f"test.rfaaudit.{request.node.name}")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    yield logger
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_an_appended_line_and_a_logged_record_are_the_same_bytes(tmp_path, logger) -> None:
    """Hadoop's layout %d{ISO8601} %p %c{2}: %m, whether the line comes from a record
    (logging's Formatter) or from append (no record made)."""
    path = tmp_path / "hdfs-audit.log"
    handler = RollingAuditFileHandler(str(path), 1 << 20, 2, "FSNamesystem.audit")
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s FSNamesystem.audit: %(message)s")
    )
    logger.addHandler(handler)
    handler.append("allowed=true\tcmd=mkdirs\tsrc=/ünïcode")
    logger.info("allowed=false\tcmd=delete")
    first, second = _lines(path)
    assert re.fullmatch(
        rf"{_STAMP} INFO FSNamesystem\.audit: allowed=true\tcmd=mkdirs\tsrc=/ünïcode", first
    )
    assert re.fullmatch(rf"{_STAMP} INFO FSNamesystem\.audit: allowed=false\tcmd=delete", second)


def test_the_file_rolls_before_a_line_would_pass_max_bytes(tmp_path, logger) -> None:
    path = tmp_path / "hdfs-audit.log"
    handler = RollingAuditFileHandler(str(path), 1000, 2, "FSNamesystem.audit")
    for i in range(40):
        handler.append(f"line {i:02d} " + "x" * 80)
    handler.close()
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["hdfs-audit.log", "hdfs-audit.log.1", "hdfs-audit.log.2"]
    for name in files:
        assert (tmp_path / name).stat().st_size <= 1000
    # the newest lines are in the live file, in order, none cut
    assert _lines(path)[-1].endswith(f"line 39 {'x' * 80}")
    kept = [
        line.split("line ")[1][:2] for name in reversed(files) for line in _lines(tmp_path / name)
    ]
    assert kept == sorted(kept) and kept[-1] == "39"


def test_a_reopened_file_counts_what_it_holds_already(tmp_path) -> None:
    path = tmp_path / "hdfs-audit.log"
    path.write_text("x" * 950 + "\n")
    handler = RollingAuditFileHandler(str(path), 1000, 1, "FSNamesystem.audit")
    handler.append("y" * 60)  # 951 + ~90 > 1000: rolled first
    handler.close()
    assert (tmp_path / "hdfs-audit.log.1").read_text() == "x" * 950 + "\n"
    assert _lines(path)[0].endswith("y" * 60)


def test_lines_of_many_threads_are_all_written_whole(tmp_path, logger) -> None:
    path = tmp_path / "hdfs-audit.log"
    handler = RollingAuditFileHandler(str(path), 1 << 26, 1, "FSNamesystem.audit")
    logger.addHandler(handler)
    audit = FSNamesystemAuditLogger(logger)
    alice = UserGroupInformation("alice", ("staff",))

    def calls(t: int) -> None:
        for i in range(500):
            audit.log_audit_event(True, alice, "127.0.0.1", "mkdirs", f"/t{t}/d{i}")

    threads = [threading.Thread(target=calls, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    lines = _lines(path)
    assert len(lines) == 8 * 500
    srcs = [re.search(r"\tsrc=(\S+)\t", line).group(1) for line in lines]
    assert sorted(srcs) == sorted(f"/t{t}/d{i}" for t in range(8) for i in range(500))
    for t in range(8):  # each thread's lines in the order it logged them
        mine = [s for s in srcs if s.startswith(f"/t{t}/")]
        assert mine == [f"/t{t}/d{i}" for i in range(500)]


def test_async_lines_are_written_by_the_writer_thread_and_all_by_stop(tmp_path, logger) -> None:
    """dfs.namenode.audit.log.async with the daemon's RFAAUDIT: no LogRecord queue, the
    handler's own writer; a caller's append returns before its line is written, and
    stop writes every line listed."""
    path = tmp_path / "hdfs-audit.log"
    handler = RollingAuditFileHandler(str(path), 1 << 26, 1, "FSNamesystem.audit")
    logger.addHandler(handler)
    audit = FSNamesystemAuditLogger(logger)
    log = AsyncAuditLog(logger)
    log.start()
    assert logger.handlers == [handler]  # no QueueHandler in front of it
    writes: list[str] = []
    write = handler._write
    gate = threading.Event()

    def gated(text: str) -> None:
        writes.append(threading.current_thread().name)
        gate.wait(30)
        write(text)

    handler._write = gated  # type: ignore[method-assign]
    alice = UserGroupInformation("alice", ("staff",))
    for i in range(50):
        audit.log_audit_event(True, alice, "127.0.0.1", "mkdirs", f"/a/d{i}")
    assert _lines(path) == []  # all 50 calls returned; the writer is held at its write
    gate.set()
    log.stop()
    srcs = [re.search(r"\tsrc=(\S+)\t", line).group(1) for line in _lines(path)]
    assert srcs == [f"/a/d{i}" for i in range(50)]
    assert set(writes) == {"audit-log-writer"} and len(writes) < 50  # many lines a write
    audit.log_audit_event(True, alice, "127.0.0.1", "mkdirs", "/after")
    assert _lines(path)[-1].endswith("\tsrc=/after\tdst=null\tperm=null\tproto=rpc")


def test_a_second_owner_leaves_a_running_writer_to_the_first(tmp_path, logger) -> None:
    handler = RollingAuditFileHandler(str(tmp_path / "a.log"), 1 << 20, 1, "FSNamesystem.audit")
    logger.addHandler(handler)
    first, second = AsyncAuditLog(logger), AsyncAuditLog(logger)
    first.start()
    second.start()
    second.stop()
    assert handler._writer is not None and handler._writer.is_alive()
    first.stop()
    assert handler._writer is None
