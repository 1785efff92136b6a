"""``hdfs-py bench qjm --pipeline``: pipelined edit-log syncs against one sync in flight.

``--writers`` handler threads (8) each log one MKDIR through :class:`FSEditLog` and call
``log_sync`` for it (batch 1: one op per call, group commit decides the batches), over a
:class:`QuorumJournalManager` to three JournalNode processes on 127.0.0.1. Phases, run
interleaved in rounds of one ``--slice`` each, the order rotating from round to round:

* ``depth 1``: ``dfs.namenode.edits.sync.pipeline.depth=1`` — Hadoop's double buffer,
  one sync in flight (the unpipelined writer);
* ``depth k`` for each k of ``--depths``: k syncs in flight;
* ``ideal``: the ideal quorum baseline at batch 1 (one batch in flight: it waits for each
  quorum before sending the next), or ``--skip-ideal``.

Each depth writes its own journal (a journal id per depth, on the same three nodes), so
their writers do not fence each other; each slice is a segment of its own, rolled and
purged outside the clock. Printed per phase: txns/s, the p50/p99 latency of a handler's
``log_edit`` + ``log_sync`` (what its client waits for), txns per sync and the most syncs
ever in flight at once; then, for ``dfs.namenode.edits.sync.pipeline.depth`` (the
configured depth, default 4) the goals, each a median of the rounds' ratios: txns/s ≥ 3×
depth 1's, ≥ 1.5× the ideal's, p99 ≤ 2× depth 1's. Printed, never asserted.
"""

from __future__ import annotations

import contextlib
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp
from hadoop_qjm.namenode.fs_edit_log import FSEditLog
from hadoop_qjm.namenode.journal_set import JournalSet
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO

__all__ = [
    "PipelineResult",
    "THROUGHPUT_GOAL",
    "IDEAL_GOAL",
    "P99_GOAL",
    "run_pipelined",
    "report_pipelined",
]

#: Pipelined txns/s over the unpipelined writer's, and over the ideal's (batch 1).
THROUGHPUT_GOAL = 3.0
IDEAL_GOAL = 1.5
#: Pipelined p99 over the unpipelined p99 (at most).
P99_GOAL = 2.0
#: Syncs by each writer before the clock starts (connections warm, segment open).
WARMUP_SYNCS = 10

_PATH = "/bench/pipeline/d"


@dataclass
class PipelineResult:
    """One phase (a depth, or the ideal) over all its slices."""

    phase: str
    depth: int  # 0: the ideal
    txns: int = 0
    syncs: int = 0
    max_in_flight: int = 0
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)  # seconds, sorted
    #: Per round: txns/s over depth 1's, over the ideal's; p99 over depth 1's.
    vs_unpipelined: list[float] = field(default_factory=list)
    vs_ideal: list[float] = field(default_factory=list)
    p99_vs_unpipelined: list[float] = field(default_factory=list)
    #: The ideal's JSON lines (it reports its percentiles, not its latencies).
    ideal_lines: list[dict] = field(default_factory=list)

    @property
    def txns_per_s(self) -> float:
        return self.txns / self.seconds if self.seconds else 0.0

    def percentile_ms(self, q: float) -> float:
        if self.ideal_lines:
            name = "lat_ms_p50" if q <= 0.5 else "lat_ms_p99"
            return statistics.median(line[name] for line in self.ideal_lines)
        lats = self.latencies
        if not lats:
            return float("nan")
        return lats[min(len(lats) - 1, int(q * (len(lats) - 1)))] * 1000

    def merge(self, part: PipelineResult) -> None:
        self.txns += part.txns
        self.syncs += part.syncs
        self.max_in_flight = max(self.max_in_flight, part.max_in_flight)
        self.seconds += part.seconds
        self.latencies = sorted(self.latencies + part.latencies)
        self.ideal_lines += part.ideal_lines


class _PipelinedWriter:
    """An FSEditLog of ``depth`` over its own journal on ``cluster``."""

    def __init__(
        self, stack: contextlib.ExitStack, cluster: MiniJournalCluster, depth: int, conf
    ) -> None:
        self.depth = depth
        qjm = QuorumJournalManager(
            conf, cluster.quorum_journal_uri(f"bench-pipeline-{depth}"), FAKE_NSINFO
        )
        qjm.format(FAKE_NSINFO)
        journals = JournalSet()
        journals.add(qjm, required=True, shared=True)
        self.edit_log = FSEditLog(journals, terminate=_refuse, pipeline_depth=depth)
        stack.callback(self.edit_log.close)  # before the cluster stops
        self.edit_log.init_journals_for_write()
        self.edit_log.recover_unclosed_streams()
        self.edit_log.open_for_write()

    def measure(self, writers: int, seconds: float) -> PipelineResult:
        """``writers`` threads logging and syncing for ``seconds``; then roll and purge."""
        edit_log = self.edit_log
        stop = threading.Event()
        start = threading.Barrier(writers + 1)
        per_thread: list[list[float]] = [[] for _ in range(writers)]

        def handler(i: int) -> None:
            lats = per_thread[i]
            clock = time.perf_counter
            for _ in range(WARMUP_SYNCS):
                edit_log.log_sync(edit_log.log_edit(MkdirOp.create(0, f"{_PATH}{i}")))
            start.wait()
            while not stop.is_set():
                began = clock()
                txid = edit_log.log_edit(MkdirOp.create(0, f"{_PATH}{i}"))
                edit_log.log_sync(txid)
                lats.append(clock() - began)

        threads = [threading.Thread(target=handler, args=(i,), daemon=True) for i in range(writers)]
        for t in threads:
            t.start()
        start.wait()
        before = edit_log.stats()
        began = time.perf_counter()
        time.sleep(seconds)
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - began
        after = edit_log.stats()
        result = PipelineResult(
            f"depth {self.depth}",
            self.depth,
            txns=sum(len(lats) for lats in per_thread),
            syncs=after.syncs - before.syncs,
            max_in_flight=after.max_syncs_in_flight,
            seconds=elapsed,
            latencies=sorted(lat for lats in per_thread for lat in lats),
        )
        first = edit_log.roll_edit_log()
        edit_log.purge_logs_older_than(first)
        return result


def _refuse(status: int, message: str) -> None:
    raise RuntimeError(f"the bench's edit log failed: {message}")


def run_pipelined(
    base: Path,
    depths: Sequence[int],
    writers: int,
    seconds: float,
    slice_s: float,
    *,
    ideal: Path | None,
    conf: Configuration,
    ideal_runner,
) -> list[PipelineResult]:
    """Rounds of one slice of each phase (see the module docstring); every process is
    stopped on return. ``ideal_runner(ideal, directory, batch, seconds)`` runs the ideal."""
    rounds = max(1, round(seconds / slice_s))
    slice_s = seconds / rounds
    all_depths = [1, *sorted(set(depths) - {1})]
    results = {d: PipelineResult(f"depth {d}", d) for d in all_depths}
    ideal_result = PipelineResult("ideal", 0)
    with contextlib.ExitStack() as stack:
        cluster = stack.enter_context(
            MiniJournalCluster(3, base_dir=base / "pipeline", conf=conf, processes=True)
        )
        writers_by_depth = {d: _PipelinedWriter(stack, cluster, d, conf) for d in all_depths}
        steps: list[int] = list(all_depths) + ([0] if ideal is not None else [])
        for r in range(rounds):
            part: dict[int, PipelineResult] = {}
            for step in steps[r % len(steps) :] + steps[: r % len(steps)]:
                if step == 0:
                    line = ideal_runner(ideal, base, 1, slice_s)
                    part[0] = PipelineResult(
                        "ideal",
                        0,
                        txns=int(line["records_per_s"] * slice_s),
                        seconds=slice_s,
                        ideal_lines=[line],
                    )
                    ideal_result.merge(part[0])
                else:
                    part[step] = writers_by_depth[step].measure(writers, slice_s)
                    results[step].merge(part[step])
            base_rate = part[1].txns_per_s
            base_p99 = part[1].percentile_ms(0.99)
            for d in all_depths:
                if base_rate:
                    results[d].vs_unpipelined.append(part[d].txns_per_s / base_rate)
                if base_p99:
                    results[d].p99_vs_unpipelined.append(part[d].percentile_ms(0.99) / base_p99)
                if 0 in part and part[0].txns_per_s:
                    results[d].vs_ideal.append(part[d].txns_per_s / part[0].txns_per_s)
            for d in all_depths:
                print(
                    f"  round {r + 1}: depth {d}: {part[d].txns_per_s:,.0f} txns/s",
                    file=sys.stderr,
                    flush=True,
                )
    return [*(results[d] for d in all_depths)] + ([ideal_result] if ideal is not None else [])


def _median(values: Sequence[float]) -> str:
    if not values:
        return "n/a"
    text = f"{statistics.median(values):.2f}x"
    if len(values) > 1:
        text += f" (median of {len(values)} rounds, {min(values):.2f}-{max(values):.2f})"
    return text


def _verdict(values: Sequence[float], goal: float, at_least: bool) -> str:
    if not values:
        return "no figure"
    median = statistics.median(values)
    return "met" if (median >= goal if at_least else median <= goal) else "MISSED"


def report_pipelined(results: list[PipelineResult], goal_depth: int, writers: int) -> None:
    """The table, then the goals for ``goal_depth`` (the configured depth)."""
    print(f"pipelined syncs: batch 1, {writers} writer threads, 3 JNs")
    print(
        f"{'phase':<10} {'txns/s':>10} {'p50 ms':>8} {'p99 ms':>8} {'txns/sync':>9} "
        f"{'max in flight':>13} {'vs depth 1':>10}"
    )
    for r in results:
        per_sync = f"{r.txns / r.syncs:.1f}" if r.syncs else "-"
        in_flight = str(r.max_in_flight) if r.depth else "1"
        vs = f"{statistics.median(r.vs_unpipelined):.2f}x" if r.vs_unpipelined else "-"
        print(
            f"{r.phase:<10} {r.txns_per_s:>10,.0f} {r.percentile_ms(0.5):>8.2f} "
            f"{r.percentile_ms(0.99):>8.2f} {per_sync:>9} {in_flight:>13} {vs:>10}"
        )
    chosen = next((r for r in results if r.depth == goal_depth), None)
    key = keys.DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_KEY
    if chosen is None or goal_depth == 1:
        print(f"goals: {key}={goal_depth} was not measured (add it to --depths)")
        return
    print(f"goals for {key}={goal_depth} (printed, not asserted):")
    print(
        f"  txns/s vs depth 1 (unpipelined): {_median(chosen.vs_unpipelined)} "
        f"(goal >= {THROUGHPUT_GOAL:g}): "
        f"{_verdict(chosen.vs_unpipelined, THROUGHPUT_GOAL, True)}"
    )
    print(
        f"  txns/s vs the ideal (one batch in flight): {_median(chosen.vs_ideal)} "
        f"(goal >= {IDEAL_GOAL:g}): {_verdict(chosen.vs_ideal, IDEAL_GOAL, True)}"
    )
    print(
        f"  p99 vs depth 1's p99: {_median(chosen.p99_vs_unpipelined)} "
        f"(goal <= {P99_GOAL:g}): {_verdict(chosen.p99_vs_unpipelined, P99_GOAL, False)}"
    )
