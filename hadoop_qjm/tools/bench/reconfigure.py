"""``hdfs-py bench reconfigure``: a writer's commit latency before, during and after a
JournalNode set change (docs/journalnode.md, "Online, by joint consensus").

One writer (a QuorumJournalManager) flushes single-op batches to JournalNode processes
on 127.0.0.1: ``--ops`` flushes on the old set (before), ``--ops`` under the joint
configuration (during: each flush waits for a majority of the old *and* of the new set),
then ``--ops`` on the new set (after) — the same writer, in the same run. Replacing one
of three by default; ``--grow`` grows 3 → 5. Prints p50/p99 of each phase and the
ratios to "before"; the goals are ≤ 2× during and 1.0× after. Printed, not asserted.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from pathlib import Path

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp
from hadoop_qjm.qjournal.client.membership_change import (
    begin_reconfiguration,
    finish_reconfiguration,
)
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO

__all__ = ["GOAL_DURING", "GOAL_AFTER", "run", "measure"]

JID = "bench-reconfigure"
GOAL_DURING = 2.0
GOAL_AFTER = 1.0


def _uri(cluster: MiniJournalCluster, nodes: list[int]) -> str:
    return "qjournal://" + ";".join(f"127.0.0.1:{cluster.rpc_ports[i]}" for i in nodes) + f"/{JID}"


def _segment(qjm: QuorumJournalManager, first: int, ops: int) -> list[float]:
    """One segment of ``ops`` single-op flushes; each flush's latency in seconds."""
    latencies = []
    stm = qjm.start_log_segment(first, CURRENT_LAYOUT_VERSION)
    for txid in range(first, first + ops):
        stm.write(MkdirOp.create(txid, f"/bench/d{txid}"))
        stm.set_ready_to_flush()
        started = time.perf_counter()
        stm.flush()
        latencies.append(time.perf_counter() - started)
    stm.close()
    qjm.finalize_log_segment(first, first + ops - 1)
    return latencies


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(ops: int, grow: bool, base_dir: str | None = None) -> dict[str, list[float]]:
    """The flush latencies of each phase: ``{"before": […], "during": […], "after": […]}``."""
    old, new = ([0, 1, 2], [0, 1, 2, 3, 4]) if grow else ([0, 1, 2], [0, 1, 3])
    base = Path(tempfile.mkdtemp(prefix="bench-reconfigure-", dir=base_dir))
    try:
        return _measure(ops, old, new, base)
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _measure(ops: int, old: list[int], new: list[int], base: Path) -> dict[str, list[float]]:
    with MiniJournalCluster(max(new) + 1, base, processes=True) as cluster:
        added = [[n] for n in sorted(set(new) - set(old))]
        for nodes in (old, *added):  # the new ones one by one, as -bootstrap would
            with QuorumJournalManager(Configuration(), _uri(cluster, nodes), FAKE_NSINFO) as q:
                q.format(FAKE_NSINFO)
        with QuorumJournalManager(Configuration(), _uri(cluster, old), FAKE_NSINFO) as qjm:
            qjm.recover_unfinalized_segments()
            _segment(qjm, 1, min(ops, 100))  # warm-up: connections, caches
            txid = 1 + min(ops, 100)
            phases = {"before": _segment(qjm, txid, ops)}
            txid += ops
            begin_reconfiguration(qjm, _uri(cluster, new))
            phases["during"] = _segment(qjm, txid, ops)
            txid += ops
            finish_reconfiguration(qjm, since_txid=1, last_txid=txid - 1)
            phases["after"] = _segment(qjm, txid, ops)
    return phases


def run(argv, conf) -> int:
    from hadoop_qjm.common.command_line import CommandParser

    parser = CommandParser(prog="hdfs-py bench reconfigure", description=__doc__.split("\n\n")[0])
    parser.add_argument("--ops", type=int, default=2000, help="flushes per phase (2000)")
    parser.add_argument("--grow", action="store_true", help="grow 3 -> 5 (default: replace one)")
    parser.add_argument("--dir", default=None, help="where the JournalNodes write")
    args = parser.parse_args(argv)
    if args.ops <= 0:
        parser.error("--ops must be positive")
    change = "grow 3 -> 5" if args.grow else "replace one of three"
    print(f"JournalNode set change: {change}; {args.ops} single-op flushes per phase")
    phases = measure(args.ops, args.grow, args.dir)
    before = phases["before"]
    for name, values in phases.items():
        p50, p99 = _p(values, 0.50), _p(values, 0.99)
        line = f"  {name:<7} p50 {p50 * 1e3:7.3f} ms  p99 {p99 * 1e3:7.3f} ms"
        if name != "before":
            goal = GOAL_DURING if name == "during" else GOAL_AFTER
            line += (
                f"   x{p50 / _p(before, 0.5):.2f} (p50), x{p99 / _p(before, 0.99):.2f} (p99)"
                f"  goal <= {goal:.1f}x"
            )
        print(line)
    print(f"  mean before {statistics.fmean(before) * 1e3:.3f} ms")
    return 0
