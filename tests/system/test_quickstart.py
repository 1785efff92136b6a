"""The main job, as a user runs it: ``bin/hdfs-py quickstart`` (and ``--journal-only``)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[2]


def hdfs_py(*args: str, timeout_s: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(PROJECT / "bin" / "hdfs-py"), *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )


@pytest.mark.timeout(240)
def test_quickstart_fails_over_an_ha_pair_under_load(tmp_path):
    result = hdfs_py("quickstart", "--ops", "300", "--dir", str(tmp_path), timeout_s=230)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "Started 3 JournalNode processes" in out
    assert "$ hdfs-py namenode -nnid nn1 -format -nonInteractive" in out
    assert "$ hdfs-py namenode -nnid nn2 -bootstrapStandby -nonInteractive" in out
    assert "$ hdfs-py haadmin -failover nn1 nn2" in out
    match = re.search(r"nn2 \(active\) holds all (\d+) acknowledged dirs", out)
    assert match and int(match.group(1)) >= 150, out
    assert "nn1 (standby) caught up to txid" in out
    assert re.search(r"nn1: http://127\.0\.0\.1:\d+/ ", out)
    assert "quickstart: OK" in out
    # Every process it started is gone: the NameNodes' and JournalNodes' logs end cleanly.
    logs = list((tmp_path / "cluster").glob("nn*.log"))
    assert len(logs) == 2 and all("NameNode stopped" in p.read_text() for p in logs)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_quickstart_with_three_namenode_processes_fails_over_nn1_to_nn3(tmp_path):
    """Issue 37 item 1 at process level: nn2 and nn3 bootstrapped from nn1, the failover
    from nn1 to nn3 under load, both standbys caught up, every acknowledged mkdir there."""
    result = hdfs_py(
        "quickstart", "--namenodes", "3", "--ops", "300", "--dir", str(tmp_path), timeout_s=290
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for nnid in ("nn2", "nn3"):
        assert f"$ hdfs-py namenode -nnid {nnid} -bootstrapStandby -nonInteractive" in out
    assert "$ hdfs-py haadmin -failover nn1 nn3" in out
    assert out.count("(standby) caught up to txid") == 2
    match = re.search(r"nn3 \(active\) holds all (\d+) acknowledged dirs", out)
    assert match and int(match.group(1)) >= 150, out
    states = re.findall(r"^\s*127\.0\.0\.1:\d+ +(active|standby)$", out, re.M)
    assert states[-3:] == ["standby", "standby", "active"], out
    logs = list((tmp_path / "cluster").glob("nn*.log"))
    assert len(logs) == 3 and all("NameNode stopped" in p.read_text() for p in logs)


@pytest.mark.timeout(180)
def test_journal_only_quickstart_runs_writer_failover_reader():
    result = hdfs_py(
        "quickstart", "--journal-only", "--txns", "300", "--segment", "100", timeout_s=170
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "Started 3 JournalNode processes" in out
    assert "Writer B: took over with epoch 2" in out
    assert "its next write is refused (fenced)" in out and "epoch" in out
    match = re.search(
        r"read (\d+) edits in \d+ segments; all (\d+) acknowledged edits present", out
    )
    assert match and int(match.group(2)) >= 600 and int(match.group(1)) >= int(match.group(2))
    assert "quickstart: OK" in out


# Slow: the default run keeps one full quickstart (the main job, above). What this one
# checks runs by default in faster tests: kill -9 of the active under load, a failover by
# the controllers alone with no acknowledged mkdir lost (test_zkfc_failover.py::
# test_kill_active_namenode_fails_over_without_a_command), controllers stopping on SIGTERM
# (::test_haadmin_goes_through_the_controllers), -formatZK (test_zkfc_cli.py), and the
# command's refusal without ZooKeeper (below).
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_quickstart_auto_failover_survives_kill_9_of_the_active(tmp_path):
    # Needs ZooKeeper (Debian's zookeeper package, which .ci/run installs).
    result = hdfs_py(
        "quickstart", "--auto-failover", "--ops", "300", "--dir", str(tmp_path), timeout_s=230
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "Started a ZooKeeper server: pid" in out
    assert "$ hdfs-py zkfc -nnid nn1 -formatZK -nonInteractive" in out
    assert "haadmin -transitionToActive" not in out and "haadmin -failover" not in out
    victim = re.search(r"kill -9 of the active NameNode (nn\d)", out)
    assert victim, out
    survivor = "nn2" if victim.group(1) == "nn1" else "nn1"
    assert re.search(rf"{survivor} became active [\d.]+s after the kill", out), out
    match = re.search(rf"{survivor} \(active\) holds all (\d+) acknowledged dirs", out)
    assert match and int(match.group(1)) >= 150, out
    assert f"{victim.group(1)} (standby) caught up to txid" in out
    assert "quickstart --auto-failover: OK" in out
    # Every controller it started stopped on SIGTERM, logging so.
    logs = list((tmp_path / "cluster").glob("zkfc-nn*.log"))
    assert len(logs) == 2 and all("Received signal 15" in p.read_text() for p in logs)


@pytest.mark.timeout(90)
def test_quickstart_auto_failover_without_zookeeper_says_what_to_install(tmp_path):
    env = {**os.environ, "ZOOKEEPER_HOME": str(tmp_path)}  # no ZooKeeper there
    env.pop("HADOOP_CONF_DIR", None)
    result = subprocess.run(
        [sys.executable, str(PROJECT / "bin" / "hdfs-py"), "quickstart", "--auto-failover"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "apt-get install" in lines[0], result.stderr
    assert result.stdout == ""


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_sigterm_to_a_kept_running_quickstart_stops_every_daemon(tmp_path):
    """``quickstart --keep-running`` ended by SIGTERM (as a service manager or ``timeout``
    ends it) stops the 3 JournalNodes and 2 NameNodes it started and exits 143."""
    import signal
    import time

    import psutil

    out_file = tmp_path / "stdout"
    with out_file.open("w") as out:
        command = subprocess.Popen(
            [sys.executable, str(PROJECT / "bin" / "hdfs-py"), "quickstart", "--ops", "100",
             "--keep-running", "--dir", str(tmp_path / "q")],
            stdout=out, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 200
        while "Running until Ctrl-C" not in out_file.read_text():
            assert command.poll() is None, out_file.read_text() + command.stderr.read()
            assert time.monotonic() < deadline, out_file.read_text()
            time.sleep(0.1)
        daemons = psutil.Process(command.pid).children(recursive=True)
        assert len(daemons) >= 5, daemons
        command.send_signal(signal.SIGTERM)
        assert command.wait(timeout=60) == 128 + signal.SIGTERM, command.stderr.read()
        _, alive = psutil.wait_procs(daemons, timeout=30)
        assert not alive, alive
        logs = list((tmp_path / "q" / "cluster").glob("nn*.log"))
        assert len(logs) == 2 and all("NameNode stopped" in p.read_text() for p in logs)
    finally:
        for process in psutil.Process(os.getpid()).children(recursive=True):
            process.kill()
        command.wait()
