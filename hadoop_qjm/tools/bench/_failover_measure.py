"""What ``bench failover`` measures: a failover's length and the txns it had to recover
(:func:`measure_failover`), and how far the standby's tailing lags the active
(:func:`measure_lag`), on an in-process HA pair over a MiniJournalCluster;
:mod:`hadoop_qjm.tools.bench.failover` runs them and prints the figures."""

from __future__ import annotations

import bisect
import hashlib
import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from hadoop_qjm.editlog.edit_log_file_input_stream import scan_edit_log
from hadoop_qjm.editlog.fs_edit_log_op import FSEditLogOp, MkdirOp
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.testing.in_process_ha import HAPair, ha_conf
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster

__all__ = ["FailoverResult", "LagResult", "measure_failover", "measure_lag"]


#: Failover (transitionToActive -> first acknowledged write) with this many unfinalized txns.
GOAL_FAILOVER_S = 1.0
GOAL_FAILOVER_TXNS = 10_000
#: p99 tailing lag with in-progress tailing on.
GOAL_LAG_P99_MS = 100.0
TAIL_PERIOD = "20ms"
#: The long poll's wait when tailing by push.
PUSH_WAIT = "1s"
#: With the kept state: the most txns' failover within this many times the fewest's ...
GOAL_CONSTANT_RATIO = 1.5
#: ... and within this fraction of the rescanning path's.
GOAL_VS_RESCAN_RATIO = 0.1
#: Push: p99 lag within this fraction of the 20 ms poll's.
GOAL_PUSH_P99_RATIO = 0.25
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
    kept: bool = True
    #: The finalized segment is the same on every JournalNode and equals a rescan's result.
    identical: bool = True
    #: On how many JournalNodes the recovered segment was finalized when checked.
    finalized_on: int = 0


@dataclass(frozen=True)
class LagResult:
    in_progress: bool
    ops: int
    seconds: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    push: bool = False
    #: CPU seconds per second an idle pair costs (NameNodes and JournalNodes), push or poll.
    idle_cpu: float | None = None


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


def _rescanned_md5(path: Path) -> str:
    """What the rescanning path makes of an in-progress copy: its bytes up to the end of
    its last whole op."""
    length = scan_edit_log(path).valid_length
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        while length > 0:
            chunk = f.read(min(1 << 20, length))
            if not chunk:
                break
            digest.update(chunk)
            length -= len(chunk)
    return digest.hexdigest()


def _file_md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def measure_failover(
    mjc: MiniJournalCluster,
    base: Path,
    txns: int,
    batch: int,
    timeout_s: float,
    kept: bool = True,
) -> FailoverResult:
    """Scenario (a) for one count (see the module docstring); ``kept`` only labels the
    result (the JournalNodes' configuration decides)."""
    jid = f"failover-{txns}"
    pair = _pair(mjc, base, jid, **{"dfs.ha.log-roll.period": "-1"})
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
        segment = expected = None
        if txns:
            (open_copy,) = mjc.current_dir(0, jid).glob("edits_inprogress_*")
            segment = open_copy.name.removeprefix("edits_inprogress_")
            expected = _rescanned_md5(open_copy)

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
        identical, finalized_on = True, 0
        if segment is not None:
            found = [
                _file_md5(p)
                for i in range(mjc.num_journal_nodes)
                for p in mjc.current_dir(i, jid).glob(f"edits_{segment}-*")
            ]
            # Recovery finalizes on the nodes that answered its prepare (a majority at least).
            identical = len(found) > mjc.num_journal_nodes // 2 and set(found) == {expected}
            finalized_on = len(found)
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
            kept=kept,
            identical=identical,
            finalized_on=finalized_on,
        )
    finally:
        pair.stop()


def _cpu_seconds(pids: Sequence[int]) -> float:
    total = time.process_time()
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def measure_lag(
    mjc: MiniJournalCluster,
    base: Path,
    in_progress: bool,
    seconds: float,
    max_ops: int,
    push: bool = False,
    idle_s: float = 0.0,
) -> LagResult:
    """Scenario (b) with in-progress tailing on (by push or by poll) or off (see the
    module docstring)."""
    extra: dict[str, object] = {"dfs.ha.tail-edits.in-progress": str(in_progress).lower()}
    extra["dfs.ha.log-roll.period"] = "-1" if in_progress else LOG_ROLL_PERIOD
    extra["dfs.ha.tail-edits.in-progress.wait"] = PUSH_WAIT if push else "0"
    mode = ("push" if push else "on") if in_progress else "off"
    pair = _pair(mjc, base, "lag-" + mode, **extra)
    idle_cpu = None
    applied: list[tuple[int, float]] = [(0, 0.0)]
    stop = threading.Event()
    poller: threading.Thread | None = None
    try:
        nn1, nn2 = pair["nn1"], pair["nn2"]
        nn1.transition_to_active()
        if idle_s > 0:
            pids = [node.pid for node in mjc.nodes if node is not None and node.pid]
            time.sleep(0.5)  # settled: the standby's first rounds are done
            cpu0, wall0 = _cpu_seconds(pids), time.perf_counter()
            time.sleep(idle_s)
            idle_cpu = (_cpu_seconds(pids) - cpu0) / (time.perf_counter() - wall0)
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
        push=push,
        idle_cpu=idle_cpu,
    )
