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

Goals, printed beside the figures and never asserted: failover under 1 s with 10,000
unfinalized txns; tailing lag p99 under 100 ms with in-progress tailing on. Every phase is
bounded in count and time; every process is stopped by its pid, also on errors.
"""

from __future__ import annotations

import bisect
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.fs_edit_log_op import FSEditLogOp, MkdirOp
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.testing.in_process_ha import HAPair, ha_conf, journal_node_conf
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster

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

#: Failover (transitionToActive -> first acknowledged write) with this many unfinalized txns.
GOAL_FAILOVER_S = 1.0
GOAL_FAILOVER_TXNS = 10_000
#: p99 tailing lag with in-progress tailing on.
GOAL_LAG_P99_MS = 100.0
TAIL_PERIOD = "20ms"
LOG_ROLL_PERIOD = "1s"
#: The tailer's thread name (EditLogTailer.start): its tail_edits calls are not the transition's.
_TAILER_THREAD = "Edit log tailer"


@dataclass(frozen=True)
class FailoverResult:
    txns: int
    setup_s: float
    total_s: float
    recovery_s: float
    epoch_s: float
    prepare_s: float
    catchup_s: float
    catchup_txns: int
    segment_s: float
    first_write_s: float


@dataclass(frozen=True)
class LagResult:
    in_progress: bool
    ops: int
    seconds: float
    p50_ms: float
    p99_ms: float
    max_ms: float


def _percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    return sorted_values[min(len(sorted_values) - 1, int(fraction * len(sorted_values)))]


def _wait(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(0.002)


class _RecoverySteps(logging.Filter):
    """A filter on the quorum client's logger that notes when each recovery step ends (the
    wall time of its log record) and lets through only what the logger let through before
    (it is lowered to INFO while this filter is on)."""

    MARKS = {
        "Successfully started new epoch": "epoch",
        "Recovery prepare phase complete": "prepare",
    }

    def __init__(self, logger: logging.Logger) -> None:
        super().__init__()
        self.times: dict[str, float] = {}
        self._logger = logger
        self._level = logger.level
        self._effective = logger.getEffectiveLevel()

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            for prefix, step in self.MARKS.items():
                if record.msg.startswith(prefix):
                    self.times.setdefault(step, record.created)
        return record.levelno >= self._effective

    def __enter__(self) -> _RecoverySteps:
        self._logger.addFilter(self)
        self._logger.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._logger.setLevel(self._level)
        self._logger.removeFilter(self)


class _DeferredSync:
    """The active namesystem's edit log while the bench loads it: ops are logged as usual,
    ``log_sync`` is left to the bench (one per batch). A full buffer still syncs at once
    inside FSEditLog.log_edit (its auto-sync)."""

    def __init__(self, edit_log: Any) -> None:
        self._edit_log = edit_log

    def log_edit(self, op: FSEditLogOp) -> int:
        return self._edit_log.log_edit(op)

    def log_sync(self, txid: int | None = None) -> None:
        pass


class _TxidRecorder:
    """The active namesystem's edit log during the lag phase: records each MKDIR's txid."""

    def __init__(self, edit_log: Any) -> None:
        self._edit_log = edit_log
        self.txids: dict[str, int] = {}

    def log_edit(self, op: FSEditLogOp) -> int:
        txid = self._edit_log.log_edit(op)
        if isinstance(op, MkdirOp):
            self.txids[op.path] = txid
        return txid

    def log_sync(self, txid: int | None = None) -> None:
        self._edit_log.log_sync(txid)


def _pair(mjc: MiniJournalCluster, base: Path, jid: str, **extra: object) -> HAPair:
    settings: dict[str, object] = {
        "dfs.ha.tail-edits.period": TAIL_PERIOD,
        "dfs.ha.standby.checkpoints": "false",  # no image saves in the middle of a timing
    }
    settings.update(extra)
    base.mkdir(parents=True)
    return HAPair(ha_conf(base, mjc, jid, **settings), base)


def _load_segment(pair: HAPair, txns: int, batch: int) -> None:
    """Log ``txns`` OP_MKDIRs in nn1's open segment, ``batch`` per log_sync."""
    core = pair["nn1"].core
    namesystem, edit_log = core.namesystem, core.edit_log
    target = edit_log.last_written_txid + txns
    original = namesystem.edit_log
    namesystem.edit_log = _DeferredSync(original)
    try:
        i = 0
        while edit_log.last_written_txid < target:
            for _ in range(min(batch, target - edit_log.last_written_txid)):
                namesystem.mkdirs(f"/d{i}")
                i += 1
            edit_log.log_sync_all()
    finally:
        namesystem.edit_log = original


def measure_failover(
    mjc: MiniJournalCluster, base: Path, txns: int, batch: int, timeout_s: float
) -> FailoverResult:
    """Scenario (a) for one count (see the module docstring)."""
    pair = _pair(mjc, base, f"failover-{txns}", **{"dfs.ha.log-roll.period": "-1"})
    try:
        nn1, nn2 = pair["nn1"], pair["nn2"]
        setup_start = time.perf_counter()
        nn1.transition_to_active()
        _load_segment(pair, txns, batch)
        last = nn1.core.edit_log.last_written_txid
        _wait(lambda: nn2.core.last_applied_txid >= last, timeout_s, f"nn2 to tail txid {last}")
        setup_s = time.perf_counter() - setup_start
        # The crash: nothing finalized, the segment stays in progress on the JournalNodes.
        nn1.core.abort()
        nn1.stop()

        core = nn2.core
        calls: list[tuple[float, float, int]] = []
        tail_edits = core.tail_edits

        def timed_tail_edits(*args: Any, **kwargs: Any) -> int:
            start = time.perf_counter()
            n = tail_edits(*args, **kwargs)
            if threading.current_thread().name != _TAILER_THREAD:
                calls.append((start, time.perf_counter(), n))
            return n

        core.tail_edits = timed_tail_edits  # an instance attribute: the transition uses it
        qjm_logger = logging.getLogger("hadoop_qjm.qjournal.client.quorum_journal_manager")
        with (
            NameNodeProxy(*nn2.rpc_address, timeout_s=timeout_s) as proxy,
            _RecoverySteps(qjm_logger) as steps,
        ):
            proxy.get_service_status()  # connected before the clock starts
            wall0, t0 = time.time(), time.perf_counter()
            proxy.transition_to_active()
            t1 = time.perf_counter()
            if not proxy.mkdirs("/first-write"):
                raise RuntimeError("mkdirs /first-write was not acknowledged")
            t2 = time.perf_counter()
        first_catchup = calls[0][0] if calls else t1
        last_catchup = calls[-1][1] if calls else t1
        epoch_s = steps.times.get("epoch", wall0) - wall0
        prepare_s = max(0.0, steps.times.get("prepare", wall0 + epoch_s) - wall0 - epoch_s)
        return FailoverResult(
            txns=txns,
            setup_s=setup_s,
            total_s=t2 - t0,
            recovery_s=first_catchup - t0,
            epoch_s=epoch_s,
            prepare_s=prepare_s,
            catchup_s=last_catchup - first_catchup,
            catchup_txns=sum(n for _, _, n in calls),
            segment_s=t1 - last_catchup,
            first_write_s=t2 - t1,
        )
    finally:
        pair.stop()


def measure_lag(
    mjc: MiniJournalCluster, base: Path, in_progress: bool, seconds: float, max_ops: int
) -> LagResult:
    """Scenario (b) with in-progress tailing on or off (see the module docstring)."""
    extra: dict[str, object] = {"dfs.ha.tail-edits.in-progress": str(in_progress).lower()}
    extra["dfs.ha.log-roll.period"] = "-1" if in_progress else LOG_ROLL_PERIOD
    pair = _pair(mjc, base, "lag-" + ("on" if in_progress else "off"), **extra)
    applied: list[tuple[int, float]] = [(0, 0.0)]
    stop = threading.Event()
    poller: threading.Thread | None = None
    try:
        nn1, nn2 = pair["nn1"], pair["nn2"]
        nn1.transition_to_active()
        recorder = _TxidRecorder(nn1.core.namesystem.edit_log)
        nn1.core.namesystem.edit_log = recorder
        standby = nn2.core

        def poll() -> None:
            while not stop.is_set():
                txid = standby.last_applied_txid
                if txid > applied[-1][0]:
                    applied.append((txid, time.perf_counter()))
                stop.wait(0.0005)

        poller = threading.Thread(target=poll, name="lag poller", daemon=True)
        poller.start()
        acked: list[tuple[str, float]] = []
        with NameNodeProxy(*nn1.rpc_address, timeout_s=60) as proxy:
            proxy.mkdirs("/lag")
            start = time.perf_counter()
            deadline = start + seconds
            while time.perf_counter() < deadline and len(acked) < max_ops:
                path = f"/lag/d{len(acked)}"
                if not proxy.mkdirs(path, create_parent=False):
                    raise RuntimeError(f"mkdirs {path} was not acknowledged")
                acked.append((path, time.perf_counter()))
            elapsed = time.perf_counter() - start
        last = max(recorder.txids[path] for path, _ in acked) if acked else 0
        _wait(lambda: applied[-1][0] >= last, 60.0, f"nn2 to apply txid {last}")
    finally:
        stop.set()
        if poller is not None:
            poller.join(10)
        pair.stop()
    txids = [txid for txid, _ in applied]
    lags = []
    for path, acked_at in acked:
        applied_at = applied[bisect.bisect_left(txids, recorder.txids[path])][1]
        lags.append(max(0.0, applied_at - acked_at) * 1000)
    lags.sort()
    return LagResult(
        in_progress=in_progress,
        ops=len(lags),
        seconds=elapsed,
        p50_ms=_percentile(lags, 0.50),
        p99_ms=_percentile(lags, 0.99),
        max_ms=lags[-1] if lags else 0.0,
    )


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


def _print_lag(r: LagResult) -> None:
    mode = (
        f"in-progress on  (tail period {TAIL_PERIOD})"
        if r.in_progress
        else f"in-progress off (log-roll period {LOG_ROLL_PERIOD}, tail period {TAIL_PERIOD})"
    )
    print(
        f"  {mode}: p50 {r.p50_ms:8.1f} ms  p99 {r.p99_ms:8.1f} ms  max {r.max_ms:8.1f} ms"
        f"  ({r.ops} ops in {r.seconds:.1f} s)",
        flush=True,
    )


def _verdict(ok: bool) -> str:
    return "met" if ok else "NOT met"


def run(argv: Sequence[str], conf: Configuration | None) -> int:
    from hadoop_qjm.cli import CommandParser, finite_float

    parser = CommandParser(prog="hdfs-py bench failover", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--txns",
        default="0,10000,1000000",
        help="unfinalized txns before each failover, comma-separated (0,10000,1000000)",
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
    auto.add_argument("--rounds", type=int, default=10, help="rounds of each kind (10)")
    auto.add_argument(
        "--check-interval-ms",
        type=int,
        default=1000,
        help="ha.health-monitor.check-interval.ms (1000)",
    )
    auto.add_argument(
        "--session-timeout-ms",
        type=int,
        default=10000,
        help="ha.zookeeper.session-timeout.ms (10000)",
    )
    auto.add_argument(
        "--graceful-fence-ms",
        type=int,
        default=1000,
        help="ha.failover-controller.graceful-fence.rpc-timeout.ms (1000 here; Hadoop's 5000)",
    )
    args = parser.parse_args(argv)
    if args.auto:
        if args.quick:
            args.rounds, args.session_timeout_ms = 2, 3000
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
        with MiniJournalCluster(3, base / "jn", journal_node_conf(), processes=True) as cluster:
            pids = ", ".join(str(cluster.nodes[i].pid) for i in range(3))  # type: ignore[union-attr]
            print(
                f"3 JournalNode processes (pids {pids}); NameNodes nn1, nn2 in this process; "
                f"tail period {TAIL_PERIOD}"
            )
            print("(a) transitionToActive -> first acknowledged mkdirs on the new active:")
            for n in counts:
                result = measure_failover(
                    cluster, base / f"failover-{n}", n, args.batch, args.timeout
                )
                failovers.append(result)
                _print_failover(result)
            print("(b) tailing lag, mkdirs acknowledged on the active -> applied on the standby:")
            for in_progress in (True, False):
                result = measure_lag(
                    cluster,
                    base / f"lag-{in_progress}",
                    in_progress,
                    args.lag_seconds,
                    args.lag_ops,
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
    return 0
