"""The design paper's LogTester test (§7.4.1) with real processes.

Three JournalNode processes; three LogTesters restarted in loops so that they fence each
other, while JournalNodes are SIGKILLed and restarted, or frozen (SIGSTOP) and resumed.
Afterwards ``logtester-verify`` and an independent check through the quorum client:
no txid in two LogTester dirs, every txid in a LogTester dir in the journal with the
same bytes, every finalized segment of one name byte-identical on every JournalNode.
The default run is short; ``-m slow`` runs a longer one.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.editlog.file_journal_manager import match_edit_logs
from hadoop_qjm.editlog.fs_edit_log_op import encode_op
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.tools.log_tester import namespace_for

PROJECT = Path(__file__).resolve().parents[2]
HDFS_PY = [sys.executable, str(PROJECT / "bin" / "hdfs-py")]
JID = "logtest"


def logtester(uri, local_dir, *extra):
    return subprocess.Popen(
        HDFS_PY + ["logtester", "--shared-edits", uri, "--local-dir", str(local_dir), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def run_tester_loop(uri, local_dir, seed, stop: threading.Event, outcomes: list, lock) -> None:
    """Restart a LogTester until told to stop (bounded: at most 200 runs)."""
    rng = random.Random(seed)
    for run in range(200):
        if stop.is_set():
            return
        proc = logtester(
            uri,
            local_dir,
            "--duration",
            f"{rng.uniform(0.5, 2.0):.2f}",
            "--batch",
            str(rng.randint(1, 20)),
            "--roll-every",
            str(rng.randint(20, 200)),
            "--seed",
            str(seed * 1000 + run),
        )
        try:
            out, _ = proc.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, _ = proc.communicate()
            out += "\n(killed after 120 s)"
        with lock:
            outcomes.append((proc.returncode, out.strip().splitlines()[-1:] or [""]))


def journal_ops_via_quorum(conf, uri) -> dict[int, bytes]:
    """Recover the journal as one more writer, then read every finalized op through it."""
    with QuorumJournalManager(conf, uri, namespace_for(JID)) as qjm:
        qjm.recover_unfinalized_segments()
        ops: dict[int, bytes] = {}
        for stream in qjm.select_input_streams(1):
            try:
                while (op := stream.read_op()) is not None:
                    ops[op.txid] = encode_op(op)
            finally:
                stream.close()
        return ops


def local_ops(directory: Path) -> dict[int, bytes]:
    ops = {}
    for log in match_edit_logs(directory / "current"):
        with EditLogFileInputStream(log.path) as stream:
            ops.update({op.txid: encode_op(op) for op in iter(stream.read_op, None)})
    return ops


def chaos(cluster, rng, stop: threading.Event, events: list) -> None:
    """Kill/restart or freeze/resume one JournalNode at a time (bounded: 500 actions)."""
    for _ in range(500):
        if stop.wait(rng.uniform(0.3, 1.0)):
            return
        i = rng.randrange(3)
        if rng.random() < 0.5:
            cluster.kill_journal_node(i)
            events.append(f"killed JN{i}")
            stop.wait(rng.uniform(0.1, 0.5))
            cluster.restart_journal_node(i)
        else:
            pid = cluster.nodes[i].pid
            os.kill(pid, signal.SIGSTOP)
            events.append(f"froze JN{i}")
            try:
                stop.wait(rng.uniform(0.1, 0.8))
            finally:
                os.kill(pid, signal.SIGCONT)


def run_campaign(tmp_path: Path, seconds: float, seed: int) -> None:
    rng = random.Random(seed)
    with MiniJournalCluster(3, base_dir=tmp_path / "jns", processes=True) as cluster:
        uri = cluster.quorum_journal_uri(JID)
        first = logtester(uri, tmp_path / "lt-0", "--format", "--max-txns", "20", "--seed", "1")
        out, _ = first.communicate(timeout=120)
        assert first.returncode == 0, out
        local_dirs = [tmp_path / f"lt-{i}" for i in range(3)]
        stop = threading.Event()
        outcomes: list = []
        events: list[str] = []
        lock = threading.Lock()
        threads = [
            threading.Thread(target=run_tester_loop, args=(uri, d, seed + i, stop, outcomes, lock))
            for i, d in enumerate(local_dirs)
        ]
        chaos_thread = threading.Thread(target=chaos, args=(cluster, rng, stop, events))
        for t in [*threads, chaos_thread]:
            t.start()
        try:
            stop.wait(seconds)
        finally:
            stop.set()
            for t in [*threads, chaos_thread]:
                t.join(180)
        assert not any(t.is_alive() for t in [*threads, chaos_thread])
        codes = [code for code, _ in outcomes]
        print(
            f"{len(outcomes)} LogTester runs: {codes.count(0)} finished, {codes.count(3)} fenced; "
            f"chaos: {events}"
        )
        # Only clean exits or "fenced / lost quorum" (3): never a crash or a traceback.
        bad = [(code, line) for code, line in outcomes if code not in (0, 3)]
        assert not bad, bad
        assert codes.count(3) > 0, "the LogTesters never fenced each other"

        for i in range(3):  # every node up for the verification
            if not cluster.is_running(i):
                cluster.restart_journal_node(i)
        verify = subprocess.run(
            HDFS_PY
            + [
                "logtester-verify",
                "--local-dirs",
                *map(str, local_dirs),
                "--journal-dirs",
                *(str(cluster.journal_dir(i, JID)) for i in range(3)),
            ],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert verify.returncode == 0, verify.stdout + verify.stderr
        assert "OK" in verify.stdout

        # The independent check, through the quorum client.
        journal = journal_ops_via_quorum(Configuration(), uri)
        seen: dict[int, Path] = {}
        total = 0
        for directory in local_dirs:
            for txid, data in local_ops(directory).items():
                assert txid not in seen, f"txid {txid} acknowledged to {seen[txid]} and {directory}"
                seen[txid] = directory
                assert journal.get(txid) == data, f"txid {txid} of {directory} lost or changed"
                total += 1
        assert total > 0
        names: dict[str, set[bytes]] = {}
        for i in range(3):
            for log in match_edit_logs(cluster.current_dir(i, JID)):
                if not log.is_in_progress:
                    names.setdefault(log.name, set()).add(log.path.read_bytes())
        assert all(len(copies) == 1 for copies in names.values())


@pytest.mark.timeout(300)
def test_log_testers_fencing_each_other_under_journal_node_faults(tmp_path):
    run_campaign(tmp_path, seconds=8, seed=7)


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_log_testers_long_run(tmp_path):
    run_campaign(tmp_path, seconds=180, seed=11)
