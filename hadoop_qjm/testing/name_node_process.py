"""NameNodeProcess: a real ``hdfs-py namenode`` child process, for system tests and benchmarks.

::

    conf_dir = write_conf_dir(tmp / "conf", {"dfs.namenode.name.dir": ..., ...})
    nn = NameNodeProcess(conf_dir, tmp / "nn.log")     # waits for "NameNode started ..."
    proxy = NameNodeProxy("127.0.0.1", nn.rpc_port)
    nn.terminate()                                     # SIGTERM, then SIGKILL by pid

The process runs in its own session with stdout piped (the start line is read from it)
and stderr appended to ``log_path``. It is stopped by its pid only.
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

from hadoop_qjm.conf import Configuration

__all__ = ["NameNodeProcess", "write_conf_dir"]

_STARTED = re.compile(r"NameNode started pid=(\d+) rpc=(\S+):(\d+) http=(\S+):(\d+)")
_PROJECT_ROOT = Path(__file__).resolve().parents[2]


def write_conf_dir(conf_dir: Path, properties: Mapping[str, object]) -> Path:
    """A configuration directory whose ``hdfs-site.xml`` holds ``properties``."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    conf = Configuration(load_defaults=False)
    for key, value in properties.items():
        conf.set(key, value)
    conf.write_xml(conf_dir / "hdfs-site.xml")
    return conf_dir


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


class NameNodeProcess:
    """One ``hdfs-py --config conf_dir namenode`` process (see the module docstring)."""

    def __init__(
        self,
        conf_dir: Path,
        log_path: Path,
        *,
        generic_args: Sequence[str] = (),
        namenode_args: Sequence[str] = (),
        start_timeout_s: float = 60.0,
    ) -> None:
        self.log_path = log_path
        self._log = open(log_path, "ab")  # noqa: SIM115 - closed in _finish()
        self.popen = subprocess.Popen(
            [sys.executable, "-m", "hadoop_qjm.cli", "--config", str(conf_dir)]
            + list(generic_args)
            + ["namenode", *namenode_args],
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=child_env(),
            start_new_session=True,
        )
        self.pid = self.popen.pid
        self.rpc_port = self.http_port = 0
        self._finished: int | None = None
        self._wait_started(start_timeout_s)

    def _wait_started(self, timeout_s: float) -> None:
        result: dict[str, re.Match] = {}

        def read_first_line() -> None:
            line = self.popen.stdout.readline().decode("utf-8", "replace")  # type: ignore[union-attr]
            match = _STARTED.search(line)
            if match:
                result["m"] = match

        reader = threading.Thread(target=read_first_line, daemon=True)
        reader.start()
        reader.join(timeout_s)
        if "m" not in result:
            self.kill()
            tail = self.log_path.read_text(errors="replace")[-3000:]
            raise RuntimeError(f"NameNode process did not start within {timeout_s}s:\n{tail}")
        self.rpc_port = int(result["m"].group(3))
        self.http_port = int(result["m"].group(5))

    @property
    def rpc_address(self) -> tuple[str, int]:
        return "127.0.0.1", self.rpc_port

    def terminate(self, timeout_s: float = 60.0) -> int:
        """SIGTERM, wait; SIGKILL if it does not exit. Returns the exit status."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout_s)
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

    def __enter__(self) -> NameNodeProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.terminate()
