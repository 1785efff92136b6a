"""``hdfs-py bench namenode``: mkdirs over ClientProtocol against a NameNode process.

A NameNode process writes its edits to a local name directory and to three JournalNode
processes on 127.0.0.1 (a ``MiniJournalCluster(processes=True)``). For each client count
(``--clients``, default 1, 8, 64) that many threads of this process, each with its own
connection, call ``mkdirs`` on distinct paths for ``--seconds``; every call returns once
its edit is durable on the local directory and on a quorum of JournalNodes. Printed per
phase: ops/s, the p50 and p99 latency of one call, and the transactions per sync the
NameNode reports on ``/metrics`` for that phase — the group-commit factor: while one
thread's sync is out, the others' edits gather in the other half of the double buffer
and go out together in the next one.

Goal (printed, never asserted): with 64 clients, at least 10x the ops/s of 1 client —
group commit, not the disk, must set the pace. Every phase is bounded in time and in
calls (``--max-ops``); every process is stopped by its pid, also on errors.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.name_node_process import NameNodeProcess, write_conf_dir

__all__ = ["PhaseResult", "GOAL_RATIO", "run", "run_phase"]

JID = "bench-namenode"
#: ops/s with the most clients over ops/s with one client.
GOAL_RATIO = 10.0


@dataclass(frozen=True)
class PhaseResult:
    clients: int
    ops: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float
    txns: int
    syncs: int

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.seconds if self.seconds else 0.0

    @property
    def txns_per_sync(self) -> float:
        return self.txns / self.syncs if self.syncs else 0.0


def _percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, int(fraction * len(sorted_values)))
    return sorted_values[index]


def _edit_log_counters(http_port: int) -> tuple[int, int]:
    """(transactions, syncs) from the NameNode's /metrics."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=30).read()
    values = {}
    for name in ("namenode_transactions_total", "namenode_syncs_total"):
        match = re.search(rf"^{name} (\S+)$", text.decode(), re.MULTILINE)
        values[name] = int(float(match.group(1))) if match else 0
    return values["namenode_transactions_total"], values["namenode_syncs_total"]


def run_phase(
    rpc_port: int, http_port: int, clients: int, seconds: float, max_ops: int, tag: str
) -> PhaseResult:
    """``clients`` threads doing mkdirs until ``seconds`` pass or ``max_ops`` calls are made."""
    proxies = [NameNodeProxy("127.0.0.1", rpc_port, timeout_s=60) for _ in range(clients)]
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    ops_left = [max_ops]
    lock = threading.Lock()
    start_barrier = threading.Barrier(clients + 1)
    deadline = [0.0]

    def client(i: int) -> None:
        proxy, mine = proxies[i], latencies[i]
        try:
            proxy.mkdirs(f"/bench/{tag}/c{i}")  # connect and make the parent outside the timing
            start_barrier.wait(timeout=120)
        except (OSError, threading.BrokenBarrierError):
            start_barrier.abort()
            errors[i] += 1
            return
        n = 0
        while time.perf_counter() < deadline[0]:
            with lock:
                if ops_left[0] <= 0:
                    return
                ops_left[0] -= 1
            t0 = time.perf_counter()
            try:
                proxy.mkdirs(f"/bench/{tag}/c{i}/d{n}", create_parent=False)
            except OSError:
                errors[i] += 1
                if errors[i] > 100:
                    return  # a broken NameNode ends the phase; the figures say so
                continue
            mine.append(time.perf_counter() - t0)
            n += 1

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(clients)]
    try:
        for thread in threads:
            thread.start()
        txns0, syncs0 = _edit_log_counters(http_port)
        deadline[0] = time.perf_counter() + seconds
        start = time.perf_counter()
        start_barrier.wait(timeout=60)
        for thread in threads:
            thread.join(seconds + 120)
        elapsed = time.perf_counter() - start
        txns1, syncs1 = _edit_log_counters(http_port)
    finally:
        for proxy in proxies:
            proxy.close()
    all_latencies = sorted(x for mine in latencies for x in mine)
    return PhaseResult(
        clients=clients,
        ops=len(all_latencies),
        errors=sum(errors),
        seconds=elapsed,
        p50_ms=_percentile(all_latencies, 0.50) * 1000,
        p99_ms=_percentile(all_latencies, 0.99) * 1000,
        txns=txns1 - txns0,
        syncs=syncs1 - syncs0,
    )


def _format_namenode(base: Path, conf_dir: Path) -> None:
    import subprocess
    import sys

    from hadoop_qjm.testing.name_node_process import child_env

    result = subprocess.run(
        [sys.executable, "-m", "hadoop_qjm.cli", "--config", str(conf_dir)]
        + ["namenode", "-format", "-nonInteractive"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"namenode -format failed: {result.stderr.strip()[-2000:]}")


def run(argv: Sequence[str], conf) -> int:
    from hadoop_qjm.cli import CommandParser, finite_float

    parser = CommandParser(prog="hdfs-py bench namenode", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--clients", default="1,8,64", help="comma-separated client thread counts (1,8,64)"
    )
    parser.add_argument(
        "--seconds", type=finite_float, default=5.0, help="duration of each phase (5)"
    )
    parser.add_argument("--max-ops", type=int, default=1_000_000, help="cap per phase (1000000)")
    parser.add_argument("--handlers", type=int, default=None, help="dfs.namenode.handler.count")
    parser.add_argument("--dir", default=None, help="where the NameNode and JournalNodes write")
    args = parser.parse_args(argv)
    try:
        counts = [int(c) for c in args.clients.split(",") if c.strip()]
    except ValueError:
        parser.error(f"--clients must be comma-separated integers, not {args.clients!r}")
    if not counts or min(counts) <= 0 or max(counts) > 1024:
        parser.error("--clients must be between 1 and 1024")
    if args.seconds <= 0 or args.max_ops <= 0:
        parser.error("--seconds and --max-ops must be positive")

    base = Path(tempfile.mkdtemp(prefix="bench-nn-", dir=args.dir))
    results: list[PhaseResult] = []
    try:
        with MiniJournalCluster(3, base_dir=base / "jn", processes=True) as cluster:
            props = {
                "dfs.namenode.name.dir": str(base / "name"),
                "dfs.namenode.shared.edits.dir": cluster.quorum_journal_uri(JID),
                "dfs.namenode.rpc-address": "127.0.0.1:0",
                "dfs.namenode.http-address": "127.0.0.1:0",
            }
            if args.handlers:
                props["dfs.namenode.handler.count"] = args.handlers
            conf_dir = write_conf_dir(base / "conf", props)
            _format_namenode(base, conf_dir)
            with NameNodeProcess(conf_dir, base / "namenode.log") as nn:
                print(
                    f"NameNode pid {nn.pid} on 127.0.0.1:{nn.rpc_port}, 3 JournalNode processes, "
                    f"{args.seconds:g} s per phase"
                )
                with NameNodeProxy("127.0.0.1", nn.rpc_port) as proxy:
                    proxy.mkdirs("/bench")
                for i, clients in enumerate(counts):
                    result = run_phase(
                        nn.rpc_port, nn.http_port, clients, args.seconds, args.max_ops, f"p{i}"
                    )
                    results.append(result)
                    print(
                        f"{clients:>4} clients: {result.ops_per_s:>9,.0f} ops/s  "
                        f"p50 {result.p50_ms:7.2f} ms  p99 {result.p99_ms:7.2f} ms  "
                        f"txns/sync {result.txns_per_sync:6.2f}  ({result.ops} ops"
                        + (f", {result.errors} errors)" if result.errors else ")"),
                        flush=True,
                    )
    finally:
        shutil.rmtree(base, ignore_errors=True)
    one = next((r for r in results if r.clients == 1), None)
    most = max(results, key=lambda r: r.clients)
    if one is not None and most.clients > 1 and one.ops_per_s > 0:
        ratio = most.ops_per_s / one.ops_per_s
        verdict = "met" if ratio >= GOAL_RATIO else "NOT met"
        print(
            f"{most.clients} clients / 1 client: {ratio:.1f}x ops/s "
            f"(goal >= {GOAL_RATIO:g}x: {verdict})"
        )
    return 0
