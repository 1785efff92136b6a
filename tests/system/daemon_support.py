"""Helpers of the tests that run daemons in the background (``hdfs-py --daemon``, the sbin
scripts): free ports on the loopback "hosts", a site file, pid files, and processes found
and stopped by pid."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import psutil

from hadoop_qjm.testing import ports

__all__ = [
    "LOOPBACK_HOSTS",
    "alive",
    "free_ports",
    "kill_all",
    "pids_in",
    "run",
    "wait_gone",
    "write_site",
]

#: One machine standing in for three hosts.
LOOPBACK_HOSTS = ("127.0.0.1", "127.0.0.2", "127.0.0.3")


def free_ports(count: int, hosts: tuple[str, ...] = LOOPBACK_HOSTS) -> list[int]:
    """``count`` different ports, each free on every one of ``hosts``, outside the OS's
    ephemeral range (:mod:`hadoop_qjm.testing.ports`)."""
    return ports.free_ports(count, hosts)


def write_site(conf_dir: Path, props: dict[str, str]) -> None:
    conf_dir.mkdir(parents=True, exist_ok=True)
    body = "".join(
        f"<property><name>{k}</name><value>{v}</value></property>" for k, v in props.items()
    )
    (conf_dir / "hdfs-site.xml").write_text(f"<configuration>{body}</configuration>")


def run(
    args: Iterable[object], env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, env=env, timeout=timeout
    )


def pids_in(pid_dir: Path) -> dict[str, int]:
    """The pid files of ``pid_dir``: name -> pid."""
    if not pid_dir.exists():
        return {}
    return {p.name: int(p.read_text()) for p in pid_dir.glob("*.pid")}


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def kill_all(pids: Iterable[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_gone(pids: Iterable[int], timeout_s: float = 30) -> None:
    pids = list(pids)
    deadline = time.monotonic() + timeout_s
    while any(alive(p) for p in pids):
        if time.monotonic() > deadline:
            raise AssertionError(f"processes {pids} are still running")
        time.sleep(0.05)
