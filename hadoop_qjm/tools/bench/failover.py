"""``hdfs-py bench failover``: how fast a standby takes over, and how far behind it tails.

Three JournalNode processes on 127.0.0.1 (``MiniJournalCluster(processes=True)``, so the
JournalNodes' work is not in this process) and an HA pair of NameNodes in this process
(:class:`~hadoop_qjm.testing.in_process_ha.HAPair`, which makes every timing exact).

(a) **Failover.** For each count in ``--txns`` (0, 10,000, 1,000,000) nn1 becomes active
and logs that many OP_MKDIRs in its first segment; nn2 tails them with
``dfs.ha.tail-edits.in-progress`` on, and once it has applied them nn1 crashes (its edit
log is aborted: the segment stays in progress on the JournalNodes, nothing finalized).
Measured over RPC: ``transitionToActive`` on nn2, then the first ``mkdirs`` acknowledged
by it. The split: *recovery* (stop the tailer, new epoch, Paxos recovery and finalizing
of the crashed segment), *catch-up* (reading what the standby had not applied yet from
the now finalized segment), *segment* (starting the new segment, until the transition
returns) and *first write* (one mkdirs, durable on a quorum); recovery itself is split
at the quorum client's log records: *new epoch*, *prepare* (prepareRecovery), *accept and
finalize* (acceptRecovery, finalizeLogSegment). The mkdirs are logged
directly through nn1's namesystem in batches of ``--batch`` with one ``log_sync`` per
batch (over RPC one call per mkdirs would take an hour for a million); the time this
setup took is printed.

(b) **Tailing lag.** A client thread calls ``mkdirs`` on the active over RPC for
``--lag-seconds`` (at most ``--lag-ops`` calls); each call's txid is taken as nn1 logs it
and its acknowledge time when the call returns; a thread polls nn2's last applied txid
every 0.5 ms. Lag = applied on the standby - acknowledged to the client (0 when the
standby applied it first), p50 and p99, with in-progress tailing on, then off (then only
finalized segments are read: the standby asks the active to roll every
``dfs.ha.log-roll.period``, 1 s here).

Issue 25: (a) runs twice in one run, on JournalNodes with the kept segment state on
(``dfs.journalnode.kept-segment-state.enabled``, the default) and off (every recovery
step rescans the segment, as Hadoop does). After each failover the finalized segment is
compared on the three JournalNodes, and with what a rescan of the crashed in-progress copy
gives (its bytes up to the end of its last whole op, taken before the failover): "recovered
segment identical" says whether all four agree. (b) runs with in-progress tailing by push
(the long poll, ``dfs.ha.tail-edits.in-progress.wait`` 1 s) and by the 20 ms poll
(``wait`` 0), then with in-progress tailing off; for push and poll it also measures the
CPU an idle pair costs (this process, both NameNodes, plus the three JournalNode
processes) over ``--idle-seconds``.

Goals, printed beside the figures and never asserted: failover under 1 s with 10,000
unfinalized txns; tailing lag p99 under 100 ms with in-progress tailing on; with the kept
state, failover with the most txns within 1.5x the one with the fewest and within 0.1x the
rescanning path's; push p99 lag within 0.25x the poll's, and idle CPU with push at most
the poll's. Every phase is bounded in count and time; every process is stopped by its pid,
also on errors.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

from hadoop_qjm.conf import Configuration
from hadoop_qjm.testing.in_process_ha import journal_node_conf
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.tools.bench import mode_options
from hadoop_qjm.tools.bench._failover_measure import (
    GOAL_CONSTANT_RATIO,
    GOAL_FAILOVER_S,
    GOAL_FAILOVER_TXNS,
    GOAL_LAG_P99_MS,
    GOAL_PUSH_P99_RATIO,
    GOAL_VS_RESCAN_RATIO,
    LOG_ROLL_PERIOD,
    PUSH_WAIT,
    TAIL_PERIOD,
    FailoverResult,
    LagResult,
    measure_failover,
    measure_lag,
)

__all__ = [
    "FailoverResult",
    "GOAL_FAILOVER_S",
    "GOAL_FAILOVER_TXNS",
    "GOAL_LAG_P99_MS",
    "LagResult",
    "measure_failover",
    "measure_lag",
    "run",
]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:9.1f} ms"


def _print_failover(r: FailoverResult) -> None:
    print(
        f"  {r.txns:>9,} txns: failover {_ms(r.total_s)} = recovery {_ms(r.recovery_s)}"
        f" + catch-up {_ms(r.catchup_s)} ({r.catchup_txns} txns) + segment {_ms(r.segment_s)}"
        f" + first write {_ms(r.first_write_s)}  (setup {r.setup_s:.1f} s)\n"
        f"  {'':>9}       recovery = new epoch {_ms(r.epoch_s)} + prepare {_ms(r.prepare_s)}"
        f" + accept and finalize {_ms(r.recovery_s - r.epoch_s - r.prepare_s)}",
        flush=True,
    )
    if r.txns:
        print(
            f"  {'':>9}       recovered segment identical on the {r.finalized_on} JournalNodes "
            f"that finalized it and to a rescan: {'yes' if r.identical else 'NO'}",
            flush=True,
        )


def _print_lag(r: LagResult) -> None:
    if r.in_progress and r.push:
        mode = f"in-progress on  (push, long poll up to {PUSH_WAIT})"
    elif r.in_progress:
        mode = f"in-progress on  (poll, tail period {TAIL_PERIOD})"
    else:
        mode = f"in-progress off (log-roll period {LOG_ROLL_PERIOD}, tail period {TAIL_PERIOD})"
    print(
        f"  {mode}: p50 {r.p50_ms:8.1f} ms  p99 {r.p99_ms:8.1f} ms  max {r.max_ms:8.1f} ms"
        f"  ({r.ops} ops in {r.seconds:.1f} s)",
        flush=True,
    )


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def run(argv: Sequence[str], conf: Configuration | None) -> int:
    from hadoop_qjm.common.command_line import CommandParser, finite_float

    parser = CommandParser(prog="hdfs-py bench failover", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--txns",
        default="10000,100000,1000000",
        help="unfinalized txns before each failover, comma-separated (10000,100000,1000000)",
    )
    parser.add_argument(
        "--idle-seconds",
        type=finite_float,
        default=3.0,
        help="idle CPU measured over this long, push and poll (3)",
    )
    parser.add_argument("--batch", type=int, default=5000, help="mkdirs per log_sync (5000)")
    parser.add_argument("--lag-seconds", type=finite_float, default=5.0, help="per lag phase (5)")
    parser.add_argument("--lag-ops", type=int, default=5000, help="cap per lag phase (5000)")
    parser.add_argument(
        "--timeout", type=finite_float, default=900.0, help="bound on each wait and call, s (900)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="--txns 0,1000 --lag-seconds 1.5 --lag-ops 300"
    )
    parser.add_argument("--dir", default=None, help="where the NameNodes and JournalNodes write")
    auto = parser.add_argument_group(
        "automatic failover (--auto): ZooKeeper, NameNode and zkfc processes; kill -9 and "
        "frozen-host rounds, signal -> first acknowledged mkdirs"
    )
    auto.add_argument("--auto", action="store_true", help="measure automatic failover instead")
    auto.add_argument("--rounds", type=int, default=None, help="rounds of each kind (10)")
    auto.add_argument(
        "--check-interval-ms",
        type=int,
        default=None,
        help="ha.health-monitor.check-interval.ms (1000)",
    )
    auto.add_argument(
        "--session-timeout-ms",
        type=int,
        default=None,
        help="ha.zookeeper.session-timeout.ms (10000)",
    )
    auto.add_argument(
        "--graceful-fence-ms",
        type=int,
        default=None,
        help="ha.failover-controller.graceful-fence.rpc-timeout.ms (1000 here; Hadoop's 5000)",
    )
    args = parser.parse_args(argv)
    if args.auto and args.quick:  # what --rounds or --session-timeout-ms give still counts
        args.rounds = 2 if args.rounds is None else args.rounds
        args.session_timeout_ms = (
            3000 if args.session_timeout_ms is None else args.session_timeout_ms
        )
    auto_defaults = {
        "rounds": 10,
        "check_interval_ms": 1000,
        "session_timeout_ms": 10000,
        "graceful_fence_ms": 1000,
    }
    mode_options(parser, args, "--auto", auto_defaults)
    if args.auto:
        if (
            min(
                args.rounds, args.check_interval_ms, args.session_timeout_ms, args.graceful_fence_ms
            )
            <= 0
        ):
            parser.error("--rounds and the --*-ms settings must be positive")
        from hadoop_qjm.tools.bench._failover_auto import run_auto

        return run_auto(args)
    if args.quick:
        args.txns, args.lag_seconds, args.lag_ops = "0,1000", 1.5, 300
        args.idle_seconds = 0.5
    try:
        counts = [int(c) for c in args.txns.split(",") if c.strip()]
    except ValueError:
        parser.error(f"--txns must be comma-separated integers, not {args.txns!r}")
    if not counts or min(counts) < 0 or max(counts) > 10_000_000:
        parser.error("--txns must be between 0 and 10000000")
    if args.batch <= 0 or args.lag_seconds <= 0 or args.lag_ops <= 0 or args.timeout <= 0:
        parser.error("--batch, --lag-seconds, --lag-ops and --timeout must be positive")

    base = Path(tempfile.mkdtemp(prefix="bench-failover-", dir=args.dir))
    failovers: list[FailoverResult] = []
    lags: list[LagResult] = []
    try:
        for kept in (True, False):
            jn_conf = journal_node_conf()
            jn_conf.set("dfs.journalnode.kept-segment-state.enabled", str(kept).lower())
            with MiniJournalCluster(3, base / f"jn-{kept}", jn_conf, processes=True) as cluster:
                pids = ", ".join(str(cluster.nodes[i].pid) for i in range(3))  # type: ignore[union-attr]
                if kept:
                    print(
                        f"3 JournalNode processes (pids {pids}); NameNodes nn1, nn2 in this "
                        f"process; tail period {TAIL_PERIOD}"
                    )
                else:
                    print(f"3 JournalNode processes (pids {pids}), kept segment state off")
                print(
                    "(a) transitionToActive -> first acknowledged mkdirs on the new active, "
                    f"kept segment state {'on' if kept else 'off (rescans)'}:"
                )
                for n in counts:
                    result = measure_failover(
                        cluster, base / f"failover-{n}-{kept}", n, args.batch, args.timeout, kept
                    )
                    failovers.append(result)
                    _print_failover(result)
                if not kept:
                    break
                print(
                    "(b) tailing lag, mkdirs acknowledged on the active -> applied on the standby:"
                )
                for in_progress, push in ((True, True), (True, False), (False, False)):
                    result = measure_lag(
                        cluster,
                        base / f"lag-{in_progress}-{push}",
                        in_progress,
                        args.lag_seconds,
                        args.lag_ops,
                        push=push,
                        idle_s=args.idle_seconds if in_progress else 0.0,
                    )
                    lags.append(result)
                    _print_lag(result)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    goal = next((r for r in failovers if r.txns == GOAL_FAILOVER_TXNS), None)
    if goal is not None:
        print(
            f"failover with {GOAL_FAILOVER_TXNS:,} unfinalized txns: {goal.total_s:.3f} s "
            f"(goal < {GOAL_FAILOVER_S:g} s: {_verdict(goal.total_s < GOAL_FAILOVER_S)})"
        )
    on = next(r for r in lags if r.in_progress)
    print(
        f"tailing lag p99 with in-progress tailing: {on.p99_ms:.1f} ms "
        f"(goal < {GOAL_LAG_P99_MS:g} ms: {_verdict(on.p99_ms < GOAL_LAG_P99_MS)})"
    )
    _print_issue_25_goals(failovers, lags)
    return 0


def _print_issue_25_goals(failovers: list[FailoverResult], lags: list[LagResult]) -> None:
    kept = sorted((r for r in failovers if r.kept and r.txns), key=lambda r: r.txns)
    rescans = {r.txns: r for r in failovers if not r.kept}
    if len(kept) >= 2:
        small, big = kept[0], kept[-1]
        ratio = big.total_s / small.total_s if small.total_s else float("inf")
        print(
            f"kept state: failover with {big.txns:,} txns / with {small.txns:,}: {ratio:.2f}x "
            f"(goal <= {GOAL_CONSTANT_RATIO:g}x: {_verdict(ratio <= GOAL_CONSTANT_RATIO)})"
        )
    if kept and kept[-1].txns in rescans:
        big, old = kept[-1], rescans[kept[-1].txns]
        ratio = big.total_s / old.total_s if old.total_s else float("inf")
        print(
            f"failover with {big.txns:,} txns, kept state / rescans: {big.total_s:.3f} s / "
            f"{old.total_s:.3f} s = {ratio:.3f}x "
            f"(goal <= {GOAL_VS_RESCAN_RATIO:g}x: {_verdict(ratio <= GOAL_VS_RESCAN_RATIO)})"
        )
    if failovers:
        same = all(r.identical for r in failovers)
        print(f"recovered segments identical everywhere and to a rescan: {'yes' if same else 'NO'}")
    push = next((r for r in lags if r.in_progress and r.push), None)
    poll = next((r for r in lags if r.in_progress and not r.push), None)
    if push is not None and poll is not None:
        ratio = push.p99_ms / poll.p99_ms if poll.p99_ms else float("inf")
        print(
            f"tail lag p99 push / poll: {push.p99_ms:.1f} ms / {poll.p99_ms:.1f} ms = "
            f"{ratio:.2f}x (goal <= {GOAL_PUSH_P99_RATIO:g}x: "
            f"{_verdict(ratio <= GOAL_PUSH_P99_RATIO)})"
        )
        if push.idle_cpu is not None and poll.idle_cpu is not None:
            print(
                f"idle CPU (NameNodes + JournalNodes), push / poll: "
                f"{push.idle_cpu * 1000:.1f} / {poll.idle_cpu * 1000:.1f} ms per s "
                f"(goal push <= poll: {_verdict(push.idle_cpu <= poll.idle_cpu)})"
            )
