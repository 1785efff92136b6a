"""node_fencer with real processes: shell(...) through bash, its environment, its output
in the log, its timeout (the whole process group killed), and sshfence failing against a
port where no sshd listens so the next method is tried."""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from hadoop_qjm.conf.configuration import Configuration
from hadoop_qjm.conf.dfs_config_keys import (
    DFS_HA_FENCE_METHODS_KEY,
    DFS_HA_FENCING_SHELL_TIMEOUT_KEY,
    DFS_HA_FENCING_SSH_CONNECT_TIMEOUT_KEY,
)
from hadoop_qjm.ha.node_fencer import (
    FenceTarget,
    NodeFencer,
    ShellCommandFencer,
    SshFenceByTcpPort,
    parse_fencing_methods,
)
from hadoop_qjm.testing.in_process_ha import wait_until

pytestmark = pytest.mark.timeout(60)

SHELL_CLASS = "org.apache.hadoop.ha.ShellCommandFencer"
SSH_CLASS = "org.apache.hadoop.ha.SshFenceByTcpPort"
TARGET = FenceTarget("mycluster", "nn1", "127.0.0.1", 8020)


@pytest.fixture
def log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.INFO, logger="hadoop_qjm.ha.node_fencer")
    return caplog


def fencer(methods: str, **settings: str) -> NodeFencer:
    conf = Configuration()
    conf.set(DFS_HA_FENCE_METHODS_KEY, methods)
    for key, value in settings.items():
        conf.set(key, value)
    return NodeFencer.create(conf)


def logged(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level]


def test_shell_true_fences(log: pytest.LogCaptureFixture) -> None:
    assert fencer("shell(/bin/true)").fence(TARGET)
    assert f"====== Fencing successful by method {SHELL_CLASS}(/bin/true) ======" in log.text


def test_the_second_method_wins_after_the_first_fails(log: pytest.LogCaptureFixture) -> None:
    assert fencer("shell(false)\nshell(true)").fence(TARGET)
    warnings = logged(log, logging.WARNING)
    assert "Fencing command 'false' exited with status 1" in warnings
    assert f"Fencing method {SHELL_CLASS}(false) was unsuccessful." in warnings
    assert f"Fencing method {SHELL_CLASS}(true) was successful." in logged(log, logging.INFO)


def test_none_succeeding_is_false(log: pytest.LogCaptureFixture) -> None:
    assert not fencer("shell(exit 1)\nshell(xxxxxxxxxxxx)").fence(TARGET)
    assert logged(log, logging.ERROR) == ["Unable to fence service by any configured method."]


def test_the_command_sees_the_target_and_the_configuration(tmp_path: Path) -> None:
    out = tmp_path / "env.txt"
    names = ["target_host", "target_port", "target_address", "target_nameserviceid"]
    names += ["target_namenodeid", "in_fencing_tests"]
    printed = " ".join(f'"${name}"' for name in names)
    command = f"printf '%s\\n' {printed} > {shlex.quote(str(out))}"
    assert fencer(f"shell({command})", **{"in.fencing.tests": "yessir"}).fence(TARGET)
    assert out.read_text().splitlines() == [
        "127.0.0.1",
        "8020",
        "127.0.0.1:8020",
        "mycluster",
        "nn1",
        "yessir",
    ]


def test_output_is_logged_line_by_line_with_the_abbreviated_command(
    log: pytest.LogCaptureFixture,
) -> None:
    assert fencer("shell(echo hello; echo world; echo oops >&2)").fence(TARGET)
    infos = [m for m in logged(log, logging.INFO) if m.startswith("[PID ")]
    warnings = [m for m in logged(log, logging.WARNING) if m.startswith("[PID ")]
    assert [m.split("] ", 1)[1] for m in infos] == [
        "echo hel... oops >&2: hello",
        "echo hel... oops >&2: world",
    ]
    assert [m.split("] ", 1)[1] for m in warnings] == ["echo hel... oops >&2: oops"]


def test_the_command_has_no_stdin() -> None:
    # Hadoop's testSubprocessInputIsClosed: 'read' hits end of input at once and fails
    assert not fencer("shell(read)").fence(TARGET)


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_command_past_its_timeout_is_killed_with_its_children(
    tmp_path: Path, log: pytest.LogCaptureFixture
) -> None:
    shell_pid, child_pid = tmp_path / "shell.pid", tmp_path / "child.pid"
    command = (
        f"echo $$ > {shlex.quote(str(shell_pid))}; sleep 300 & "
        f"echo $! > {shlex.quote(str(child_pid))}; wait"
    )
    fence = fencer(f"shell({command})", **{DFS_HA_FENCING_SHELL_TIMEOUT_KEY: "1500"})
    assert not fence.fence(TARGET)
    pids = [int(shell_pid.read_text()), int(child_pid.read_text())]
    wait_until(lambda: all(gone(pid) for pid in pids), timeout_s=10, what=f"{pids} to exit")
    assert any("timed out after 1500 ms" in m for m in logged(log, logging.WARNING))


def test_a_child_holding_the_output_past_the_timeout_is_killed(tmp_path: Path) -> None:
    child_pid = tmp_path / "child.pid"
    command = f"sleep 300 & echo $! > {shlex.quote(str(child_pid))}"
    fence = fencer(f"shell({command})", **{DFS_HA_FENCING_SHELL_TIMEOUT_KEY: "1000"})
    # bash exits 0 at once, but its child keeps stdout open: Hadoop would wait for it
    assert not fence.fence(TARGET)
    pid = int(child_pid.read_text())
    wait_until(lambda: gone(pid), timeout_s=10, what=f"{pid} to exit")


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port bound but not listening: a connection to it is refused at once."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def test_sshfence_failing_to_connect_moves_on_to_the_next_method(
    closed_port: int, log: pytest.LogCaptureFixture
) -> None:
    if shutil.which("ssh") is None:
        pytest.skip("no ssh client installed")
    methods = f"sshfence(:{closed_port})\nshell(true)"
    fence = fencer(methods, **{DFS_HA_FENCING_SSH_CONNECT_TIMEOUT_KEY: "1000"})
    assert fence.fence(TARGET)
    warnings = logged(log, logging.WARNING)
    assert f"Fencing method {SSH_CLASS}(:{closed_port}) was unsuccessful." in warnings
    assert any(m.startswith("Unable to connect to 127.0.0.1 as user ") for m in warnings)
    assert f"====== Fencing successful by method {SHELL_CLASS}(true) ======" in log.text


def test_sshfence_without_an_ssh_client_fails_with_a_reason(
    log: pytest.LogCaptureFixture,
) -> None:
    conf = Configuration()
    impls = {
        "sshfence": SshFenceByTcpPort(conf, ssh="no-such-ssh-client"),
        "shell": ShellCommandFencer(conf),
    }
    methods = parse_fencing_methods("sshfence(hdfs)\nshell(false)")
    assert not NodeFencer(methods, conf, implementations=impls).fence(TARGET)
    reason = "Unable to create SSH session: no 'no-such-ssh-client' client on the PATH"
    assert reason in logged(log, logging.WARNING)
