"""Real ``hdfs-py journalnode`` processes: SIGKILL mid-stream, SIGTERM, bad configs, the daemon script."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.editlog.fs_edit_log_op import encode_op
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, create_txn_data, make_request

PROJECT = Path(__file__).resolve().parents[2]
HDFS_PY = [sys.executable, str(PROJECT / "bin" / "hdfs-py")]


@pytest.mark.timeout(120)
def test_sigkill_mid_stream_loses_no_acknowledged_txid(tmp_path):
    with MiniJournalCluster(1, base_dir=tmp_path, processes=True) as cluster:
        proxy = QJournalProtocolProxy(*cluster.rpc_address(0), timeout_s=30)
        proxy.format(JID, FAKE_NSINFO)
        proxy.new_epoch(JID, FAKE_NSINFO, 1)
        proxy.start_log_segment(make_request(1), 1, CURRENT_LAYOUT_VERSION)
        acked: list[int] = []
        progress = threading.Condition()
        failure: list[BaseException] = []

        def write_until_killed() -> None:
            txid, serial = 1, 2
            try:
                while txid < 1_000_000:  # bounded; the kill ends it long before
                    proxy.journal(make_request(serial), 1, txid, 5, create_txn_data(txid, 5))
                    with progress:
                        acked.append(txid + 4)
                        progress.notify_all()
                    txid, serial = txid + 5, serial + 1
            except OSError as e:
                failure.append(e)
                with progress:
                    progress.notify_all()

        writer = threading.Thread(target=write_until_killed, daemon=True)
        writer.start()
        with progress:
            assert progress.wait_for(lambda: len(acked) >= 200 or failure, timeout=60)
        assert not failure, failure
        cluster.kill_journal_node(0)  # SIGKILL while the writer is still sending
        writer.join(60)
        assert not writer.is_alive() and failure, "the writer should have seen the connection die"
        last_acked = acked[-1]
        proxy.close()

        cluster.restart_journal_node(0)
        with QJournalProtocolProxy(*cluster.rpc_address(0), timeout_s=30) as again:
            manifest = again.get_edit_log_manifest(JID, 1, in_progress_ok=True).manifest
            (log,) = manifest.logs
            assert log.is_in_progress and log.end_txid >= last_acked
        # Every acknowledged op is on disk, byte for byte.
        segment = cluster.current_dir(0, JID) / "edits_inprogress_0000000000000000001"
        with EditLogFileInputStream(segment) as stream:
            ops = {op.txid: encode_op(op) for op in iter(stream.read_op, None)}
        expected = create_txn_data(1, last_acked)
        assert b"".join(ops[t] for t in range(1, last_acked + 1)) == expected


@pytest.mark.timeout(60)
def test_sigterm_stops_cleanly_and_releases_the_lock(tmp_path):
    with MiniJournalCluster(1, base_dir=tmp_path, processes=True) as cluster:
        with QJournalProtocolProxy(*cluster.rpc_address(0), timeout_s=30) as proxy:
            proxy.format(JID, FAKE_NSINFO)
        lock = cluster.journal_dir(0, JID) / "in_use.lock"
        assert lock.exists()
        node = cluster.nodes[0]
        cluster.nodes[0] = None
        assert node.terminate() == 0
        assert not lock.exists()
        assert "JournalNode stopped" in node.log_path.read_text()


@pytest.mark.parametrize(
    "edits_dir,message",
    [("relative/dir", "should be an absolute path"), ("{file}", "Not a directory")],
)
def test_bad_config_is_one_line_and_exit_1(tmp_path, edits_dir, message):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    result = subprocess.run(
        HDFS_PY
        + [
            "-D",
            f"dfs.journalnode.edits.dir={edits_dir.format(file=a_file)}",
            "-D",
            "dfs.journalnode.rpc-address=127.0.0.1:0",
            "-D",
            "dfs.journalnode.http-address=127.0.0.1:0",
            "journalnode",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert message in last and last.startswith("hdfs-py: ")
    assert "Traceback" not in result.stderr


def test_malformed_config_file_is_one_line(tmp_path):
    (tmp_path / "hdfs-site.xml").write_text("<configuration><property>\n")
    result = subprocess.run(
        HDFS_PY + ["--config", str(tmp_path), "journalnode"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert (
        result.stderr.count("\n") == 1
        and "hdfs-site.xml" in result.stderr
        and "line" in result.stderr
    )


def test_garbage_for_a_key_read_late_refuses_to_start_in_one_line(tmp_path):
    """Issue 38: a key a journal reads when it is first created (the kept segment state)
    stopped nothing at start; the schema (conf/hdfs-default.xml) checks every key a
    JournalNode reads before it makes a directory or binds a port."""
    edits = tmp_path / "jn"
    site = tmp_path / "hdfs-site.xml"
    site.write_text(
        "<configuration>\n"
        f"<property><name>dfs.journalnode.edits.dir</name><value>{edits}</value></property>\n"
        "<property><name>dfs.journalnode.rpc-address</name><value>127.0.0.1:0</value></property>\n"
        "<property><name>dfs.journalnode.http-address</name><value>127.0.0.1:0</value></property>\n"
        "<property><name>dfs.journalnode.kept-segment-state.enabled</name><value>yes please"
        "</value></property>\n"
        "</configuration>\n"
    )
    result = subprocess.run(
        HDFS_PY + ["--config", str(tmp_path), "journalnode"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    assert result.stderr.strip().splitlines() == [
        "hdfs-py: Invalid value for dfs.journalnode.kept-segment-state.enabled: 'yes please' is "
        f"not true or false (set at {site}:5)"
    ]
    assert not edits.exists()


@pytest.mark.timeout(120)
def test_daemon_script_start_status_stop(tmp_path):
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "hdfs-site.xml").write_text(
        "<configuration>"
        f"<property><name>dfs.journalnode.edits.dir</name><value>{tmp_path / 'jn'}</value></property>"
        "<property><name>dfs.journalnode.rpc-address</name><value>127.0.0.1:0</value></property>"
        "<property><name>dfs.journalnode.http-address</name><value>127.0.0.1:0</value></property>"
        "</configuration>"
    )
    env = dict(
        os.environ,
        HADOOP_PID_DIR=str(tmp_path / "pids"),
        HADOOP_LOG_DIR=str(tmp_path / "logs"),
        HADOOP_IDENT_STRING="qjmtest",
        PYTHON=sys.executable,
    )
    script = str(PROJECT / "sbin" / "hadoop-daemon-py.sh")
    pid_file = tmp_path / "pids" / "hadoop-qjmtest-journalnode.pid"
    try:
        start = subprocess.run(
            [script, "--config", str(conf_dir), "start", "journalnode"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert start.returncode == 0, start.stderr
        assert "JournalNode started pid=" in start.stdout
        pid = int(pid_file.read_text())
        again = subprocess.run(
            [script, "--config", str(conf_dir), "start", "journalnode"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert again.returncode == 1 and f"running as process {pid}" in again.stderr
        status = subprocess.run(
            [script, "status", "journalnode"], capture_output=True, text=True, env=env, timeout=60
        )
        assert status.returncode == 0
        stop = subprocess.run(
            [script, "stop", "journalnode"], capture_output=True, text=True, env=env, timeout=120
        )
        assert stop.returncode == 0 and "stopping journalnode" in stop.stdout
        assert not pid_file.exists()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            pytest.fail("the daemon did not exit")
        assert list((tmp_path / "logs").glob("hadoop-qjmtest-journalnode-*.log"))
    finally:
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
