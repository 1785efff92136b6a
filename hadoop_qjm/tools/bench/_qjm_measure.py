"""What ``bench qjm`` measures: the phases (a writer's QuorumJournalManager over a
MiniJournalCluster, healthy, frozen, five nodes, busy-poll, pre-encoded), run in
alternating slices (:func:`run_interleaved`), and the ideal and plain-quorum baselines of
the same run; :mod:`hadoop_qjm.tools.bench._qjm_report` prints them."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.security import SSLFactory
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp, encode_op
from hadoop_qjm.qjournal.client.ipc_logger_channel import IPCLoggerChannel
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO

__all__ = [
    "PhaseResult",
    "Writer",
    "measure",
    "mkdir_op",
    "print_progress",
    "run_ideal",
    "run_interleaved",
    "run_plain_quorum",
]

JID = "bench-qjm"
#: The phase suffix of the runs whose writer busy-polls (``dfs.qjournal.busy-poll.us``).
BUSY_POLL = "busy-poll"
#: The phase suffix of the runs whose ops were encoded ahead of time, like the ideal's.
PRE_ENCODED = "pre-encoded"
#: txns/s as a fraction of the ideal baseline's, at these batch sizes.
IDEAL_RATIO_GOAL = 0.8
IDEAL_GOAL_BATCHES = (1, 100, 1000)
#: ``dfs.qjournal.busy-poll.us`` of the busy-poll phase (``--busy-poll-us``).
DEFAULT_BUSY_POLL_US = 1000
#: p50 with one JournalNode frozen / healthy p50.
FROZEN_P50_GOAL = 1.1
#: p50 with 5 JournalNodes / p50 with 3.
FIVE_P50_GOAL = 1.3
#: The two clusters of ``--secure`` (``qjm_secure``).
PLAIN, TLS = "3 JNs, plain", "3 JNs, TLS"
#: The phases compared with each other run in alternating slices of this length (s).
DEFAULT_SLICE_S = 0.5
MIN_SLICE_S = 0.05
#: Batches written before the clock starts (connections warm, segment open).
WARMUP_BATCHES = 20
#: Pre-encoded phases encode at most this many batches, or ops, between two timed runs.
PRE_ENCODED_CHUNK_BATCHES = 2000
PRE_ENCODED_CHUNK_OPS = 50_000

# With this prefix an op's frame is 100 bytes (17 of framing, 83 of MKDIR body), as in
# ``bench edits`` and ``bench journalnode``.
_PATH_PREFIX = "/bench/edit/tx "
_TIMESTAMP = 1_700_000_000_000
_PROJECT_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_IDEAL = _PROJECT_ROOT.parent / "shared" / "bench" / "ideal_quorum.py"


@dataclass
class PhaseResult:
    """One (phase, batch size) measurement."""

    phase: str
    batch: int
    batches: int = 0
    seconds: float = 0.0
    cpu_seconds: float = 0.0  # the writer process
    jn_cpu_seconds: float = 0.0  # all JournalNode processes together
    flush_seconds: float = 0.0  # the sum of the flush() latencies
    latencies: list[float] = field(default_factory=list)  # seconds, sorted
    ideal: dict | None = None  # the baseline's JSON line for this batch size, run just before
    #: journal() RPC p50 (ms): the 2nd fastest of three nodes, and the slower of the two
    #: that stay up when the last one is frozen (healthy 3-node phases only).
    rpc_quorum_p50_ms: float = float("nan")
    rpc_both_p50_ms: float = float("nan")
    #: With interleaved slices: per round, the ratio the goals look at (run_interleaved).
    round_ratios: list[float] = field(default_factory=list)
    #: 5-node phase: per round, the plain-socket quorum's p50 with 5 servers / with 3.
    floor_ratios: list[float] = field(default_factory=list)
    #: Busy-poll phase: per round, its txns/s / the pre-encoded (default) phase's.
    default_ratios: list[float] = field(default_factory=list)

    @property
    def txns_per_s(self) -> float:
        return self.batches * self.batch / self.seconds if self.seconds else 0.0

    @property
    def flush_bound_txns_per_s(self) -> float:
        """txns/s were the ops already encoded (the ideal baseline pre-encodes its records)."""
        return self.batches * self.batch / self.flush_seconds if self.flush_seconds else 0.0

    def merge(self, part: PhaseResult) -> None:
        """Add the figures of ``part``, a slice of the same phase and batch size."""
        self.batches += part.batches
        self.seconds += part.seconds
        self.cpu_seconds += part.cpu_seconds
        self.jn_cpu_seconds += part.jn_cpu_seconds
        self.flush_seconds += part.flush_seconds
        self.latencies = sorted(self.latencies + part.latencies)

    def per_batch_us(self, seconds: float) -> float:
        return seconds / self.batches * 1e6 if self.batches else float("nan")

    def percentile_ms(self, q: float) -> float:
        """The ideal baseline's percentile (nearest rank, no interpolation), in ms."""
        lats = self.latencies
        if not lats:
            return float("nan")
        return lats[min(len(lats) - 1, int(q * (len(lats) - 1)))] * 1000

    @property
    def p50_ms(self) -> float:
        return self.percentile_ms(0.5)

    @property
    def p99_ms(self) -> float:
        return self.percentile_ms(0.99)


def mkdir_op(txid: int) -> MkdirOp:
    return MkdirOp.create(txid, f"{_PATH_PREFIX}{txid:019d}", timestamp=_TIMESTAMP)


class _TimedChannel(IPCLoggerChannel):
    """An IPCLoggerChannel recording each successful journal() call's time, by first txid."""

    def __init__(self, *args, times: dict[int, float], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._times = times

    def _record_journal_latency(self, first_txid, num_txns, size, rpc_s, end_to_end_s) -> None:
        super()._record_journal_latency(first_txid, num_txns, size, rpc_s, end_to_end_s)
        if self.highest_acked_txid >= first_txid + num_txns - 1:
            self._times[first_txid] = rpc_s


def _timed_logger_factory(rpc_times: list[dict[int, float]], socket_factory=None):
    """IPCLoggerChannels whose journal() RPC times land in ``rpc_times[node]``; their
    connections come from ``socket_factory`` (None: plain TCP)."""

    def factory(conf, ns_info, journal_id, name_service_id, address):
        times: dict[int, float] = {}
        rpc_times.append(times)
        return _TimedChannel(
            conf,
            ns_info,
            journal_id,
            address,
            name_service_id=name_service_id,
            socket_factory=socket_factory,
            times=times,
        )

    return factory


def _rpc_order_samples(
    rpc_times: list[dict[int, float]], quorum: list[float], both: list[float]
) -> None:
    """For a healthy 3-node phase, per batch: the 2nd fastest RPC (what a quorum of three
    waits for) into ``quorum``, and the slower of nodes 0 and 1 (what a quorum of the two
    left waits for once node 2 is frozen — the least a frozen node costs any client) into
    ``both``."""
    for first_txid, t0 in rpc_times[0].items():
        t1, t2 = rpc_times[1].get(first_txid), rpc_times[2].get(first_txid)
        if t1 is not None and t2 is not None:
            quorum.append(sorted((t0, t1, t2))[1])
            both.append(max(t0, t1))


def _cpu_seconds(pids: Sequence[int]) -> float:
    """User + system CPU time of the processes ``pids`` (not their children)."""
    total = 0.0
    for pid in pids:
        times = psutil.Process(pid).cpu_times()
        total += times.user + times.system
    return total


def _encoded_batch(first_txid: int, batch: int) -> bytes:
    """The bytes ``write(op)`` buffers for the ops of one batch, encoded ahead of time."""
    return b"".join(encode_op(mkdir_op(t)) for t in range(first_txid, first_txid + batch))


def measure(
    qjm: QuorumJournalManager,
    phase: str,
    first_txid: int,
    batch: int,
    seconds: float,
    max_ops: int,
    jn_pids: Sequence[int] = (),
    *,
    pre_encoded: bool = False,
) -> tuple[PhaseResult, int]:
    """One segment of batches of ``batch`` ops for ``seconds`` (≤ ``max_ops`` txns, at
    least one batch); returns the result and the next txid.

    The writer makes and encodes each op as it logs it (``write(op)``), or with
    ``pre_encoded`` logs ops serialized ahead of time (``write_raw``), as the ideal
    baseline sends records encoded once: then the clock runs only while chunks of
    such batches are logged back to back, not while the next chunk is encoded.
    """
    result = PhaseResult(phase, batch)
    max_batches = max(1, max_ops // batch)
    stm = qjm.start_log_segment(first_txid, CURRENT_LAYOUT_VERSION)
    txid = first_txid
    write, write_raw, create, clock = stm.write, stm.write_raw, mkdir_op, time.perf_counter
    latencies = result.latencies

    def one_batch(encoded: bytes | None = None) -> float:
        nonlocal txid
        if encoded is None:
            for t in range(txid, txid + batch):
                write(create(t))
        else:
            write_raw(encoded, batch, txid)
        txid += batch
        stm.set_ready_to_flush()
        began = clock()
        stm.flush()
        return clock() - began

    for _ in range(WARMUP_BATCHES):
        one_batch()
    chunk = max(1, min(PRE_ENCODED_CHUNK_BATCHES, PRE_ENCODED_CHUNK_OPS // batch))
    out_of_time = False
    while result.batches < max_batches and not out_of_time:
        if pre_encoded:
            count = min(chunk, max_batches - result.batches)
            todo = [_encoded_batch(txid + i * batch, batch) for i in range(count)]
        jn_cpu_start = _cpu_seconds(jn_pids)
        cpu_start = time.process_time()
        start = clock()
        deadline = start + seconds - result.seconds
        if pre_encoded:
            for encoded in todo:
                latencies.append(one_batch(encoded))
                result.batches += 1
                if clock() >= deadline:
                    break
        else:
            while result.batches < max_batches and clock() < deadline:
                latencies.append(one_batch())
                result.batches += 1
        end = clock()
        out_of_time = end >= deadline
        result.seconds += end - start
        result.cpu_seconds += time.process_time() - cpu_start
        result.jn_cpu_seconds += _cpu_seconds(jn_pids) - jn_cpu_start
    result.flush_seconds = sum(latencies)
    latencies.sort()
    stm.close()
    qjm.finalize_log_segment(first_txid, txid - 1)
    return result, txid


class Writer:
    """A JournalNode cluster (processes) and a writer logging to it, one segment per slice."""

    def __init__(
        self, stack: contextlib.ExitStack, base: Path, num_nodes: int, conf: Configuration
    ) -> None:
        self.cluster = stack.enter_context(
            MiniJournalCluster(num_nodes, base_dir=base, conf=conf, processes=True)
        )
        self.pids = [node.pid for node in self.cluster.nodes]
        self.rpc_times: list[dict[int, float]] = []  # per node: first txid -> journal() s
        self.qjm = QuorumJournalManager(
            conf,
            self.cluster.quorum_journal_uri(JID),
            FAKE_NSINFO,
            logger_factory=_timed_logger_factory(
                self.rpc_times, SSLFactory(conf).rpc_client_socket_factory()
            ),
        )
        stack.callback(self.qjm.close)  # before the cluster stops
        self.qjm.format(FAKE_NSINFO)
        self.qjm.recover_unfinalized_segments()
        self.txid = 1

    def measure(
        self,
        phase: str,
        batch: int,
        seconds: float,
        max_ops: int,
        *,
        pre_encoded: bool = False,
        purge: bool = True,
    ) -> PhaseResult:
        """One slice; afterwards ``rpc_times`` holds its journal() RPC times (only).

        With ``purge`` the slice's segment is purged afterwards, outside the clock, and
        every node's purge waited for — as the ideal deletes its file after each run, and
        as a NameNode purges the segments a checkpoint made redundant. Left on disk, the
        segments pile up (gigabytes at batch 1000) and the JournalNodes' CPU per batch
        grew by half (full runs measured 0.66-0.69x the ideal at batch 1000 without
        purging, 0.95-0.96x with it) — likely because this virtual machine hands free
        memory back to its host, so that fresh pages for new edits cost more than the
        pages the ideal frees and reuses. No purge with a node frozen: it would never
        answer.
        """
        for times in self.rpc_times:
            times.clear()
        result, self.txid = measure(
            self.qjm, phase, self.txid, batch, seconds, max_ops, self.pids, pre_encoded=pre_encoded
        )
        if purge:
            self.qjm.purge_logs_older_than(self.txid)
            self.qjm.loggers.wait_for_all_pending_calls()
        return result


def print_progress(result: PhaseResult) -> None:
    line = (
        f"  {result.phase}, batch {result.batch}: {result.txns_per_s:,.0f} txns/s, "
        f"flush p50 {result.p50_ms:.2f} ms"
    )
    if result.ideal is not None:
        line += f" (ideal {result.ideal['records_per_s']:,.0f} txns/s)"
    print(line, file=sys.stderr, flush=True)


def run_interleaved(
    base: Path,
    batches: Sequence[int],
    seconds: float,
    slice_s: float,
    max_ops: int,
    *,
    ideal: Path | None,
    five: bool,
    frozen: bool,
    busy_poll_us: int = 0,
    conf: Configuration | None = None,
) -> list[PhaseResult]:
    """The default run (see the module docstring): for each batch size, rounds of one
    slice of each phase compared — the ideal, 3 JNs, 3 JNs pre-encoded, 5 JNs, and with
    ``busy_poll_us`` 3 JNs pre-encoded with that busy poll — in an order that rotates from
    round to round; then the frozen phases. Every cluster runs from start to end. Every
    process is stopped on return. ``conf`` (default: the defaults) configures the writer
    and the JournalNodes of every phase; the busy-poll phase's sets its busy poll on top."""
    rounds = max(1, round(seconds / slice_s))
    slice_s = seconds / rounds
    cap = max(1, max_ops // rounds)  # --max-ops is per phase
    results: list[PhaseResult] = []
    conf = Configuration() if conf is None else conf
    with contextlib.ExitStack() as stack:
        three = Writer(stack, base / "three", 3, conf)
        fives = Writer(stack, base / "five", 5, conf) if five else None
        busy = None
        if busy_poll_us > 0:
            busy_conf = conf.copy()
            busy_conf.set(keys.DFS_QJOURNAL_BUSY_POLL_KEY, str(busy_poll_us))
            busy = Writer(stack, base / "three-busy-poll", 3, busy_conf)
        for batch in batches:
            healthy = PhaseResult("3 JNs", batch)
            pre = PhaseResult(f"3 JNs, {PRE_ENCODED}", batch)
            five_result = PhaseResult("5 JNs", batch)
            busy_result = PhaseResult(f"3 JNs, {PRE_ENCODED}, {BUSY_POLL}", batch)
            ideal_runs: list[dict] = []
            quorum_rpcs: list[float] = []  # see _rpc_order_samples (healthy slices only)
            both_rpcs: list[float] = []
            steps = ["ideal"] if ideal is not None else []
            steps += ["3", "3 pre"] + (["3 busy"] if busy is not None else [])
            if fives is not None:  # and the plain-socket quorum's floor under the 5-node goal
                steps += ["5", "plain 3", "plain 5"]
            for r in range(rounds):
                part: dict[str, PhaseResult] = {}
                plain: dict[str, dict] = {}
                baseline = None
                for step in steps[r % len(steps) :] + steps[: r % len(steps)]:
                    if step == "ideal":
                        baseline = run_ideal(ideal, base, batch, slice_s, cap)  # type: ignore[arg-type]
                        ideal_runs.append(baseline)
                    elif step == "3":
                        part[step] = three.measure(healthy.phase, batch, slice_s, cap)
                        _rpc_order_samples(three.rpc_times, quorum_rpcs, both_rpcs)
                    elif step == "3 pre":
                        part[step] = three.measure(pre.phase, batch, slice_s, cap, pre_encoded=True)
                    elif step == "3 busy":
                        part[step] = busy.measure(  # type: ignore[union-attr]
                            busy_result.phase, batch, slice_s, cap, pre_encoded=True
                        )
                    elif step == "5":
                        part[step] = fives.measure(five_result.phase, batch, slice_s, cap)  # type: ignore[union-attr]
                    else:
                        plain[step] = run_plain_quorum(int(step[-1]), base, batch, slice_s)
                healthy.merge(part["3"])
                pre.merge(part["3 pre"])
                if baseline is not None and baseline["records_per_s"]:
                    rate = baseline["records_per_s"]
                    healthy.round_ratios.append(part["3"].txns_per_s / rate)
                    pre.round_ratios.append(part["3 pre"].txns_per_s / rate)
                    if "3 busy" in part:
                        busy_result.round_ratios.append(part["3 busy"].txns_per_s / rate)
                if "3 busy" in part:
                    busy_result.merge(part["3 busy"])
                    if part["3 pre"].txns_per_s:
                        busy_result.default_ratios.append(
                            part["3 busy"].txns_per_s / part["3 pre"].txns_per_s
                        )
                if "5" in part:
                    five_result.merge(part["5"])
                    five_result.round_ratios.append(part["5"].p50_ms / part["3"].p50_ms)
                    five_result.floor_ratios.append(
                        plain["plain 5"]["lat_ms_p50"] / plain["plain 3"]["lat_ms_p50"]
                    )
            if ideal_runs:
                summary = {
                    "records_per_s": statistics.median(i["records_per_s"] for i in ideal_runs),
                    "lat_ms_p50": statistics.median(i["lat_ms_p50"] for i in ideal_runs),
                }
                healthy.ideal = pre.ideal = busy_result.ideal = summary
            if quorum_rpcs:
                healthy.rpc_quorum_p50_ms = statistics.median(quorum_rpcs) * 1000
                healthy.rpc_both_p50_ms = statistics.median(both_rpcs) * 1000
            phases = [healthy, pre] + ([busy_result] if busy is not None else [])
            phases += [five_result] if fives is not None else []
            for result in phases:
                print_progress(result)
            results += phases
        if frozen:
            node = three.cluster.nodes[2]
            os.kill(node.pid, signal.SIGSTOP)
            try:
                for batch in batches:
                    result = three.measure("3 JNs, 1 frozen", batch, seconds, max_ops, purge=False)
                    print_progress(result)
                    results.append(result)
            finally:
                os.kill(node.pid, signal.SIGCONT)
    return results


def run_ideal(ideal: Path, directory: Path, batch: int, seconds: float, max_ops: int) -> dict:
    """The ideal baseline's JSON line for one batch size (a subprocess, bounded in time)."""
    cmd = [
        sys.executable,
        str(ideal),
        "--dir",
        str(directory),
        "--rec",
        str(len(encode_op(mkdir_op(1)))),
        "--batch",
        str(batch),
        "--secs",
        str(seconds),
        "--max-batches",
        str(max(1, max_ops // batch)),
    ]
    return _json_line(cmd, str(ideal), seconds)


def run_plain_quorum(servers: int, directory: Path, batch: int, seconds: float) -> dict:
    """The plain-socket quorum's JSON line (``_plain_quorum``: ``servers`` appenders)."""
    cmd = [
        sys.executable,
        "-m",
        "hadoop_qjm.tools.bench._plain_quorum",
        "--servers",
        str(servers),
        "--batch",
        str(batch),
        "--rec",
        str(len(encode_op(mkdir_op(1)))),
        "--seconds",
        str(seconds),
        "--dir",
        str(directory),
    ]
    return _json_line(cmd, "the plain-socket quorum", seconds)


def _json_line(cmd: list[str], what: str, seconds: float) -> dict:
    """The last line a baseline subprocess prints, as JSON (bounded in time)."""
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 120, check=False)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode != 0 or not lines:
        raise RuntimeError(f"{what} exited with {done.returncode}: {done.stderr.strip()[-500:]}")
    return json.loads(lines[-1])
