"""SIGTERM ends a foreground command by unwinding it, so that what it started is stopped:
``run_main`` turns the signal into exit status 143 after the command's ``finally`` clauses
and ``with`` blocks have run (the default ended the process at once and left its daemons)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

PROJECT = Path(__file__).resolve().parents[2]

#: A foreground command that starts a child process and stops it in a ``finally`` clause.
COMMAND = textwrap.dedent(
    """
    import subprocess, sys, threading
    from pathlib import Path
    from hadoop_qjm.common.command_line import run_main

    def body():
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
        try:
            Path(sys.argv[1]).write_text(str(child.pid))
            threading.Event().wait()
        finally:
            child.terminate()
            child.wait()
            Path(sys.argv[2]).write_text("stopped")
        return 0

    sys.exit(run_main(body))
    """
)


def wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


@pytest.mark.timeout(60)
def test_sigterm_unwinds_a_foreground_command_and_stops_what_it_started(tmp_path):
    started, stopped = tmp_path / "child.pid", tmp_path / "stopped"
    env = {**os.environ, "PYTHONPATH": str(PROJECT)}
    command = subprocess.Popen(
        [sys.executable, "-c", COMMAND, str(started), str(stopped)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: started.exists() and started.read_text(), 30, "the child to start")
        child = psutil.Process(int(started.read_text()))
        command.send_signal(signal.SIGTERM)
        out, err = command.communicate(timeout=30)
        assert command.returncode == 128 + signal.SIGTERM, err
        assert stopped.read_text() == "stopped"  # the finally clause ran
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
        assert "Traceback" not in err, err
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()


def test_run_main_in_a_program_with_its_own_handler_leaves_it(capsys):
    from hadoop_qjm.common.command_line import run_main

    before = signal.getsignal(signal.SIGTERM)
    seen = []
    assert run_main(lambda: seen.append(signal.getsignal(signal.SIGTERM)) or 0) == 0
    assert seen == [before] and signal.getsignal(signal.SIGTERM) is before
