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

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from hadoop_qjm.conf import Configuration
from hadoop_qjm.testing.daemon_process import DaemonProcess, child_env

__all__ = ["NameNodeProcess", "child_env", "write_conf_dir"]

_STARTED = re.compile(r"NameNode started pid=(\d+) rpc=(\S+):(\d+) http=(\S+):(\d+)")


def write_conf_dir(conf_dir: Path, properties: Mapping[str, object]) -> Path:
    """A configuration directory whose ``hdfs-site.xml`` holds ``properties``."""
    conf_dir.mkdir(parents=True, exist_ok=True)
    conf = Configuration(load_defaults=False)
    for key, value in properties.items():
        conf.set(key, value)
    conf.write_xml(conf_dir / "hdfs-site.xml")
    return conf_dir


class NameNodeProcess(DaemonProcess):
    """One ``hdfs-py --config conf_dir namenode`` process (see the module docstring)."""

    what = "NameNode"
    stop_timeout_s = 60.0

    def __init__(
        self,
        conf_dir: Path,
        log_path: Path,
        *,
        generic_args: Sequence[str] = (),
        namenode_args: Sequence[str] = (),
        start_timeout_s: float = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> None:
        args = [*generic_args, "namenode", *namenode_args]
        super().__init__(conf_dir, log_path, args, _STARTED, start_timeout_s, env)
        self.rpc_port = int(self.started_match.group(3))
        self.http_port = int(self.started_match.group(5))

    @property
    def rpc_address(self) -> tuple[str, int]:
        return "127.0.0.1", self.rpc_port
