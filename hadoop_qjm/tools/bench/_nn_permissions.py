"""Where the cost of permission checks and the audit log goes, for ``bench namenode``.

``bench namenode`` measures the goal (issue 35: with checks and audit on, ≥ 0.85x the
mkdirs/s of the same load with both off) on NameNode processes; these lines break the
cost down. Three runs of the same loop of mkdirs on an in-process FSNamesystem whose edit
log only counts (no RPC, no edit-log I/O, so what differs between them is the checks and
the audit line alone): one with ``dfs.permissions.enabled=false`` and no audit log, one
with the checks alone, one with the checks and every call audited into an
``hdfs-audit.log`` by the daemon's RFAAUDIT appender. The caller is a tenant (``alice``,
not a superuser, so every check really runs: traverse of ``/`` and ``/user``, WRITE on
``/user/alice``). CPU per mkdir is this process's CPU time over the loop.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from pathlib import Path

from hadoop_qjm.common.rolling_audit_file_handler import RollingAuditFileHandler
from hadoop_qjm.common.security.user_group_information import UserGroupInformation
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.fs_namesystem import FSNamesystem
from hadoop_qjm.namenode.fs_namesystem_audit_logger import (
    AUDIT_LOGGER_NAME,
    FSNamesystemAuditLogger,
)

__all__ = ["PERMISSIONS_GOAL_RATIO", "PermissionsResult", "permissions_lines", "run_loop"]

#: mkdirs/s with the checks and the audit log on over mkdirs/s with both off.
PERMISSIONS_GOAL_RATIO = 0.85
_OWNER = UserGroupInformation("hdfs", ("hadoop",))
_TENANT = UserGroupInformation("alice", ("alice", "staff"))


@dataclass(frozen=True)
class PermissionsResult:
    """One run: ``ops`` mkdirs, their rate and this process's CPU per mkdir."""

    ops: int
    ops_per_s: float
    cpu_us_per_op: float


class _CountingEditLog:
    def __init__(self) -> None:
        self.txid = 0

    def log_edit(self, op: object) -> int:
        self.txid += 1
        return self.txid

    def log_sync(self, txid: int | None = None) -> None:
        pass


def run_loop(
    checked: bool, audited: bool, seconds: float, max_ops: int, audit_dir: Path
) -> PermissionsResult:
    """mkdirs of distinct paths under ``/user/alice`` until ``seconds`` pass or
    ``max_ops`` are made, as ``alice``: with the checks (``checked``, else
    ``dfs.permissions.enabled=false``) and with every call in ``audit_dir``'s
    hdfs-audit.log (``audited``, else no audit log)."""
    conf = Configuration()
    conf.set("dfs.permissions.enabled", "true" if checked else "false")
    who = [_OWNER]
    ns = FSNamesystem(
        conf,
        edit_log=_CountingEditLog(),
        fs_owner="hdfs",
        caller=lambda: who[0],
        remote_ip=lambda: "127.0.0.1",
    )
    logger = logging.getLogger(f"bench.namenode.audit.{'on' if audited else 'off'}")
    logger.propagate = False
    handler: logging.Handler | None = None
    if audited:
        # the daemon's RFAAUDIT appender (Hadoop's layout, the NameNode's logger name)
        handler = RollingAuditFileHandler(
            str(audit_dir / "hdfs-audit.log"), 256 * 1024 * 1024, 20, AUDIT_LOGGER_NAME
        )
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    else:
        logger.setLevel(logging.CRITICAL + 1)  # no line is even formatted
    ns.access.audit = FSNamesystemAuditLogger(logger)
    ns.mkdirs("/user/alice", 0o755)
    ns.set_owner("/user/alice", "alice", "staff")
    who[0] = _TENANT
    paths = [f"/user/alice/d{i}" for i in range(max_ops)]
    try:
        cpu0, start = time.process_time(), time.perf_counter()
        deadline = start + seconds
        ops = 0
        for path in paths:
            ns.mkdirs(path)
            ops += 1
            if ops % 256 == 0 and time.perf_counter() >= deadline:
                break
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu0
    finally:
        if handler is not None:
            logger.removeHandler(handler)
            handler.close()
    return PermissionsResult(
        ops, ops / elapsed if elapsed else 0.0, cpu / ops * 1e6 if ops else 0.0
    )


def permissions_lines(seconds: float, max_ops: int, audit_dir: Path) -> list[str]:
    """The breakdown's lines: the runs (off, the checks alone, the checks and the audit
    log), then what the checks and the audit line each cost per mkdir."""
    off = run_loop(False, False, seconds, max_ops, audit_dir)
    checks = run_loop(True, False, seconds, max_ops, audit_dir)
    on = run_loop(True, True, seconds, max_ops, audit_dir)
    runs = (
        ("off (dfs.permissions.enabled=false, no audit log):", off),
        ("checks only (as alice, no audit log):", checks),
        ("on  (checks as alice, every call in hdfs-audit.log):", on),
    )
    return [
        "Where it goes (in-process FSNamesystem: no RPC, no edit-log I/O; caller alice):",
        *(
            f"  {label:<54}{run.ops_per_s:>9,.0f} mkdirs/s  "
            f"CPU {run.cpu_us_per_op:6.0f} µs/mkdir  ({run.ops} ops)"
            for label, run in runs
        ),
        f"  the checks: {checks.cpu_us_per_op - off.cpu_us_per_op:+.0f} µs CPU per mkdir, "
        f"the audit line: {on.cpu_us_per_op - checks.cpu_us_per_op:+.0f} µs",
    ]
