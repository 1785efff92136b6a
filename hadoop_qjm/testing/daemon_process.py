"""DaemonProcess: one ``hdfs-py`` daemon as a child process, for tests, tools and benchmarks.

The child runs this checkout (``PYTHONPATH``), in its own session, with stdout piped
(the daemon's one "… started pid=… rpc=HOST:PORT …" line is read from it) and stderr
appended to ``log_path``. It is stopped by its pid only: SIGTERM, then SIGKILL if it does
not exit in time. :class:`~hadoop_qjm.testing.mini_journal_cluster.JournalNodeProcess`
and :class:`~hadoop_qjm.testing.name_node_process.NameNodeProcess` read their ports from
the started line.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["DaemonProcess", "child_env", "running_children"]

_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def child_env() -> dict[str, str]:
    """The environment of a child ``hdfs-py``: this checkout first on the path, no
    ``HADOOP_CONF_DIR`` of the caller's, INFO logging."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(_PROJECT_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    env.setdefault("HADOOP_ROOT_LOGGER", "INFO,console")
    env.pop("HADOOP_CONF_DIR", None)
    return env


class DaemonProcess:
    """``hdfs-py --config conf_dir ARGS…``, started once its first stdout line matches
    ``started`` (then :attr:`started_match` holds the match)."""

    #: The daemon's name in errors ("JournalNode process did not start …").
    what = "daemon"
    #: How long :meth:`terminate` waits after SIGTERM before SIGKILL.
    stop_timeout_s = 30.0

    def __init__(
        self,
        conf_dir: Path,
        log_path: Path,
        args: Sequence[str],
        started: re.Pattern[str],
        start_timeout_s: float,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in _finish()
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "hadoop_qjm.cli", "--config", str(conf_dir), *args],
            stdout=subprocess.PIPE,
            stderr=self._log,
            env={**child_env(), **(env or {})},
            start_new_session=True,
        )
        self.pid = self.popen.pid
        self._finished: int | None = None
        self.started_match = self._wait_started(started, start_timeout_s)

    def _wait_started(self, started: re.Pattern[str], timeout_s: float) -> re.Match[str]:
        result: dict[str, re.Match[str]] = {}

        def read_first_line() -> None:
            line = self.popen.stdout.readline().decode("utf-8", "replace")  # type: ignore[union-attr]
            match = started.search(line)
            if match:
                result["m"] = match

        reader = threading.Thread(target=read_first_line, daemon=True)
        reader.start()
        reader.join(timeout_s)
        if "m" not in result:
            self.kill()
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"{self.what} process did not start within {timeout_s}s:\n{tail}")
        return result["m"]

    def terminate(self, timeout_s: float | None = None) -> int:
        """SIGTERM, wait; SIGKILL if it does not exit. Returns the exit status."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(self.stop_timeout_s if timeout_s is None else timeout_s)
            except subprocess.TimeoutExpired:
                return self.kill()
        return self._finish()

    def kill(self, sig: int = signal.SIGKILL) -> int:
        """Send ``sig`` to the process (by pid); for SIGKILL, wait and return the status."""
        if self.popen.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass
            if sig != signal.SIGKILL:
                return 0
        return self._finish()

    def _finish(self) -> int:
        if self._finished is None:
            self._finished = self.popen.wait(30)
            if self.popen.stdout is not None:
                self.popen.stdout.close()
            self._log.close()
        return self._finished

    def __enter__(self):
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.terminate()


def running_children(*markers: str) -> list:
    """This process's live descendants (``psutil.Process``) whose command line has one of
    ``markers`` as a word (any, without markers). A child that already exited, a zombie
    not reaped yet, is not live: a test that checks it stopped its daemons must not fail
    on another test's exited process."""
    import psutil

    found = []
    for child in psutil.Process(os.getpid()).children(recursive=True):
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                continue
            words = set(child.cmdline())
        except (psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
        if not markers or words & set(markers):
            found.append(child)
    return found
