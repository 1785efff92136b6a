"""The in_use.lock across processes: exclusion, holder info, and release when the holder dies."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.storage import StorageDirectory, process_name

PROJECT = Path(__file__).resolve().parents[2]
DEADLINE_SECONDS = 60.0
LOCKED_EXIT = 3

# Locks the directory, says so, then waits for stdin to close (or a deadline) and exits normally.
HOLDER = """
import select, sys
from hadoop_qjm.common.storage import StorageDirectory
sd = StorageDirectory(sys.argv[1])
sd.lock()
print("LOCKED", flush=True)
select.select([sys.stdin], [], [], float(sys.argv[2]))
"""

# Tries once: exit 0 if it got the lock, LOCKED_EXIT (printing the message) if not.
TRY_LOCK = f"""
import sys
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.storage import StorageDirectory
sd = StorageDirectory(sys.argv[1])
try:
    sd.lock()
except IOException as e:
    print(e, flush=True)
    sys.exit({LOCKED_EXIT})
sd.unlock()
"""


def _env() -> dict[str, str]:
    paths = [str(PROJECT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}


def _try_lock(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", TRY_LOCK, str(root)],
        env=_env(),
        capture_output=True,
        text=True,
        timeout=DEADLINE_SECONDS,
    )


def _read_line(proc: subprocess.Popen[str], deadline: float) -> str:
    assert proc.stdout is not None
    remaining = deadline - time.monotonic()
    ready, _, _ = select.select([proc.stdout], [], [], max(0.0, remaining))
    if not ready:
        pytest.fail(f"process {proc.pid} said nothing before the deadline")
    return proc.stdout.readline().strip()


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[subprocess.Popen[str]]:
    """A child process holding the lock on ``tmp_path / "jn"``; killed by pid at teardown."""
    root = tmp_path / "jn"
    root.mkdir()
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(root), str(DEADLINE_SECONDS)],
        env=_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = _read_line(proc, time.monotonic() + DEADLINE_SECONDS)
        assert line == "LOCKED", f"holder failed to lock: {line!r}"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=DEADLINE_SECONDS)
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def test_other_process_cannot_lock_what_we_hold(tmp_path: Path) -> None:
    root = tmp_path / "jn"
    root.mkdir()
    sd = StorageDirectory(root)
    sd.lock()
    try:
        result = _try_lock(root)
        assert result.returncode == LOCKED_EXIT, result.stderr
        assert result.stdout.strip() == (
            f"Cannot lock storage {root}. The directory is already locked by {process_name()}"
        )
    finally:
        sd.unlock()
    result = _try_lock(root)
    assert result.returncode == 0, result.stderr


def test_we_cannot_lock_what_another_process_holds(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    root = tmp_path / "jn"
    sd = StorageDirectory(root)
    with pytest.raises(IOException) as info:
        sd.lock()
    assert str(info.value).startswith(
        f"Cannot lock storage {root}. The directory is already locked"
    )
    assert f"by {holder.pid}@" in str(info.value)
    result = _try_lock(root)
    assert result.returncode == LOCKED_EXIT, result.stderr


def test_lock_is_free_after_holder_is_killed(tmp_path: Path, holder: subprocess.Popen[str]) -> None:
    root = tmp_path / "jn"
    sd = StorageDirectory(root)
    with pytest.raises(IOException, match="already locked"):
        sd.lock()

    os.kill(holder.pid, signal.SIGKILL)
    assert holder.wait(timeout=DEADLINE_SECONDS) == -signal.SIGKILL

    # SIGKILL skips the holder's cleanup: the file is still there, but the kernel freed the lock.
    assert sd.lock_file.read_text().startswith(f"{holder.pid}@")
    sd.lock()
    try:
        assert sd.lock_file.read_text() == process_name()
        assert _try_lock(root).returncode == LOCKED_EXIT
    finally:
        sd.unlock()


def test_holder_that_exits_normally_deletes_the_lock_file(
    tmp_path: Path, holder: subprocess.Popen[str]
) -> None:
    root = tmp_path / "jn"
    assert (root / "in_use.lock").exists()
    assert holder.stdin is not None
    holder.stdin.close()  # the holder's select() returns and the process exits
    assert holder.wait(timeout=DEADLINE_SECONDS) == 0
    assert not (root / "in_use.lock").exists()
    assert _try_lock(root).returncode == 0
