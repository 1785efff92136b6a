"""``hdfs-py bench qjm``: a writer logging through QuorumJournalManager to JournalNode processes.

One writer (this process) logs MKDIR ops of about 100 bytes through
:class:`QuorumJournalManager` to JournalNode processes on 127.0.0.1 (a
``MiniJournalCluster(processes=True)``): for each batch size it writes the ops
of a batch (``write(op)``), ``set_ready_to_flush()`` and ``flush()`` — which
returns once a write quorum has fsynced the batch — and prints the committed
txns/s and the p50/p99 latency of ``flush()``. Phases, in one run:

* ``3 JNs``: three healthy JournalNodes;
* ``3 JNs, pre-encoded``: the same, the ops encoded ahead of time and logged with
  ``write_raw`` — what the ideal baseline measures ("transport + durability +
  quorum bookkeeping, not encoding": it sends records encoded once). The
  clock runs while chunks of such batches are logged back to back;
* ``3 JNs, 1 frozen``: the same with one JournalNode stopped by SIGSTOP (and
  SIGCONT-ed afterwards, always) — a slow node must add no latency (design
  paper §2.2 step 4);
* ``5 JNs``: five JournalNodes, a majority of three;
* ``3 JNs, pre-encoded, busy-poll``: the pre-encoded phase on a cluster of its own,
  the writer configured with ``dfs.qjournal.busy-poll.us`` (``--busy-poll-us``,
  1000; 0: no such phase) — polling the sockets without blocking while it waits
  for its quorum instead of blocking at once (docs/quorum-client.md, "Busy
  polling"; not Hadoop's, and not the default);
* ``ideal``: the ideal quorum baseline ``../shared/bench/ideal_quorum.py``
  (plain sockets, 3 appenders with fdatasync, wait for 2 of 3; or ``--ideal
  PATH``), run as a subprocess on the same disk for the same batch size.

The phases compared with each other — the ideal, ``3 JNs``, ``3 JNs,
pre-encoded``, ``5 JNs`` and the busy-poll phase — run interleaved: for each
batch size, rounds of one ``--slice`` (0.5 s) of each, in an order that rotates
from round to round, ``--seconds`` of each in all; the clusters run side by side
for the whole time (an idle JournalNode costs nothing). Each ratio is the median
over the rounds of the ratio within a round — on a shared machine the disk's and
the CPUs' speed drift within seconds, and phases run one after the other would
put that drift into the ratio (``bench journalnode`` does the same). Every slice
is a segment of its own, started, finalized and purged (as the ideal deletes its
file) outside the clock. The frozen phases follow, on the 3-node cluster (a node
once frozen is out of sync until the next segment: they cannot be interleaved
with healthy slices without slowing those).

For context beside the 5-node goal, two more slices in each round run a plain-socket
quorum (``_plain_quorum``: the ideal baseline's design with 3 and with 5 servers, no
Thrift, no Journal): the ratio of its two p50s is what a majority of 5 instead of 3
costs on this machine without any of our code — the floor under that goal.

Beside the figures: the writer's and the JournalNodes' CPU time per batch (on a
small machine the writer and every JournalNode share the cores), and the
"flush-bound" rate — txns over the time spent in ``flush()`` alone, i.e.
without encoding the ops, which the baseline does not do either.

The configuration given (``hdfs-py --config DIR -D key=value bench qjm``; default: the
defaults and ``$HADOOP_CONF_DIR``) configures the writer and every JournalNode of every
phase; the run sets only each node's directory and ports (127.0.0.1, chosen by the OS),
the busy-poll phase's ``dfs.qjournal.busy-poll.us`` and, with ``--secure``, the TLS keys.

Goals are printed beside the figures, never asserted: ≥ 0.8× the ideal's
txns/s at batch 1, 100 and 1000 (the pre-encoded phase against the ideal, which
does not encode either; the ratio with each op made and encoded in the loop is
printed beside it); p50 with one node frozen ≤ 1.1× the healthy p50; p50 with
5 nodes ≤ 1.3× the p50 with 3. After the goals, apart and with no verdict, the
busy-poll phase's txns/s as a multiple of the pre-encoded phase's and of the
ideal's.

``--secure`` measures what mutual TLS costs instead (docs/security.md): the
healthy 3-JN phase with security off and with it on (RPC and HTTPS, a test PKI
made for the run), each on its own cluster, in ``--rounds`` rounds whose order
alternates (plain, TLS, TLS, plain, …) so that a neighbour's load falls on
both alike; it prints both figures, the median over the rounds, and the ratio.
Goal: TLS costs ≤ 15 % of the committed txns/s at batch 100.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import psutil

from hadoop_qjm.cli import CommandParser, finite_float
from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.security import SSLFactory
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode.fs_edit_log_op import MkdirOp, encode_op
from hadoop_qjm.qjournal.client.ipc_logger_channel import IPCLoggerChannel
from hadoop_qjm.qjournal.client.pipelined_channel import MAX_BUSY_POLL_US
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO
from hadoop_qjm.tools.bench.qjm_pipeline import report_pipelined, run_pipelined

__all__ = [
    "run",
    "PhaseResult",
    "IDEAL_RATIO_GOAL",
    "FROZEN_P50_GOAL",
    "FIVE_P50_GOAL",
    "TLS_RATIO_GOAL",
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
#: txns/s with mutual TLS / without, at batch 100 (TLS costs at most 15 %).
TLS_RATIO_GOAL = 0.85
TLS_GOAL_BATCH = 100
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


def _op(txid: int) -> MkdirOp:
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
    return b"".join(encode_op(_op(t)) for t in range(first_txid, first_txid + batch))


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
    write, write_raw, create, clock = stm.write, stm.write_raw, _op, time.perf_counter
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


class _Writer:
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
        three = _Writer(stack, base / "three", 3, conf)
        fives = _Writer(stack, base / "five", 5, conf) if five else None
        busy = None
        if busy_poll_us > 0:
            busy_conf = conf.copy()
            busy_conf.set(keys.DFS_QJOURNAL_BUSY_POLL_KEY, str(busy_poll_us))
            busy = _Writer(stack, base / "three-busy-poll", 3, busy_conf)
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
                _print_progress(result)
            results += phases
        if frozen:
            node = three.cluster.nodes[2]
            os.kill(node.pid, signal.SIGSTOP)
            try:
                for batch in batches:
                    result = three.measure("3 JNs, 1 frozen", batch, seconds, max_ops, purge=False)
                    _print_progress(result)
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
        str(len(encode_op(_op(1)))),
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
        str(len(encode_op(_op(1)))),
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


def _print_progress(result: PhaseResult) -> None:
    line = (
        f"  {result.phase}, batch {result.batch}: {result.txns_per_s:,.0f} txns/s, "
        f"flush p50 {result.p50_ms:.2f} ms"
    )
    if result.ideal is not None:
        line += f" (ideal {result.ideal['records_per_s']:,.0f} txns/s)"
    print(line, file=sys.stderr, flush=True)


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def _ideal_ratio(result: PhaseResult) -> float:
    """txns/s over the ideal's: the median of the rounds' ratios when interleaved."""
    if result.round_ratios:
        return statistics.median(result.round_ratios)
    rate = result.ideal["records_per_s"] if result.ideal else 0.0
    return result.txns_per_s / rate if rate else 0.0


def _spread(ratios: Sequence[float]) -> str:
    """`` (median of N rounds, lo-hi)`` for interleaved ratios; empty otherwise."""
    if len(ratios) < 2:
        return ""
    return f" (median of {len(ratios)} rounds, {min(ratios):.2f}-{max(ratios):.2f})"


def report(results: list[PhaseResult], batches: Sequence[int], busy_poll_us: int = 0) -> None:
    """The table of figures, each goal with its figure, then what busy polling changed."""
    print(
        f"{'phase':<16} {'batch':>5} {'txns/s':>10} {'flush p50':>10} {'p99':>9} "
        f"{'flush-bound':>11} {'writer CPU':>10} {'JNs CPU':>9} "
        f"{'ideal txns/s':>12} {'ideal p50':>10} {'ratio':>5}"
    )
    print(
        f"{'':<16} {'':>5} {'':>10} {'':>10} {'':>9} {'txns/s':>11} "
        f"{'us/batch':>10} {'us/batch':>9}"
    )
    for r in results:
        line = (
            f"{r.phase:<16} {r.batch:>5} {r.txns_per_s:>10,.0f} {r.p50_ms:>7.2f} ms "
            f"{r.p99_ms:>6.2f} ms {r.flush_bound_txns_per_s:>11,.0f} "
            f"{r.per_batch_us(r.cpu_seconds):>10,.0f} {r.per_batch_us(r.jn_cpu_seconds):>9,.0f}"
        )
        if r.ideal is not None:
            ideal_rate = r.ideal["records_per_s"]
            ratio = _ideal_ratio(r)
            line += f" {ideal_rate:>12,.0f} {r.ideal['lat_ms_p50']:>7.2f} ms {ratio:>5.2f}"
        print(line)
    print(
        "flush-bound txns/s: txns / total time in flush() — the rate without encoding the "
        "ops,\nwhich the ideal baseline does not do either (it pre-encodes its records)."
    )
    rounds = max((len(r.round_ratios) for r in results), default=0)
    if rounds:
        print(
            f"interleaved: {rounds} rounds of slices per batch size; the ideal's figures are "
            "the median of its\nslices, and each ratio the median of the rounds' ratios "
            "(a slice is compared with its\nneighbours in time)."
        )

    by_key = {(r.phase, r.batch): r for r in results}
    print()
    print("goals (printed, not asserted):")
    for batch in IDEAL_GOAL_BATCHES:
        r = by_key.get((f"3 JNs, {PRE_ENCODED}", batch))
        encoding = by_key.get(("3 JNs", batch))
        if r is None or r.ideal is None or not r.ideal["records_per_s"]:
            continue
        ratio = _ideal_ratio(r)
        line = (
            f"  batch {batch:>4}: {ratio:.2f}x the ideal's txns/s with the ops encoded ahead "
            f"of time, as the ideal's are (goal >= {IDEAL_RATIO_GOAL}) "
            f"{_verdict(ratio >= IDEAL_RATIO_GOAL)}{_spread(r.round_ratios)}"
        )
        if encoding is not None and encoding.ideal is not None:
            line += f"; making and encoding each op in the loop: {_ideal_ratio(encoding):.2f}x"
        print(line)
    for batch in batches:
        healthy = by_key.get(("3 JNs", batch))
        frozen = by_key.get(("3 JNs, 1 frozen", batch))
        five = by_key.get(("5 JNs", batch))
        if healthy is None:
            continue
        if frozen is not None:
            ratio = frozen.p50_ms / healthy.p50_ms
            inherent = healthy.rpc_both_p50_ms / healthy.rpc_quorum_p50_ms
            print(
                f"  batch {batch:>4}: p50 with one JN frozen {ratio:.2f}x healthy "
                f"(goal <= {FROZEN_P50_GOAL}) {_verdict(ratio <= FROZEN_P50_GOAL)}; "
                f"the two left must both answer: in the healthy phase the slower of their "
                f"RPCs had p50 {inherent:.2f}x the 2nd fastest of three"
            )
        if five is not None:
            ratios = five.round_ratios
            ratio = statistics.median(ratios) if ratios else five.p50_ms / healthy.p50_ms
            print(
                f"  batch {batch:>4}: p50 with 5 JNs {ratio:.2f}x with 3 "
                f"(goal <= {FIVE_P50_GOAL}) {_verdict(ratio <= FIVE_P50_GOAL)}{_spread(ratios)}"
            )
            if five.floor_ratios:
                print(
                    f"              for context, a plain-socket quorum (no Thrift, no Journal) "
                    f"on this machine: p50 with 5 servers "
                    f"{statistics.median(five.floor_ratios):.2f}x with 3"
                    f"{_spread(five.floor_ratios)}"
                )

    busy = [by_key.get((f"3 JNs, {PRE_ENCODED}, {BUSY_POLL}", batch)) for batch in batches]
    if any(r is not None and r.default_ratios for r in busy):
        print()
        print(
            f"the writer busy-polling ({keys.DFS_QJOURNAL_BUSY_POLL_KEY}={busy_poll_us}; "
            "not the default, and not a goal):"
        )
        for r in busy:
            if r is None or not r.default_ratios:
                continue
            line = (
                f"  batch {r.batch:>4}: {statistics.median(r.default_ratios):.2f}x the txns/s "
                f"of the default writer, both pre-encoded{_spread(r.default_ratios)}"
            )
            if r.ideal is not None and r.round_ratios:
                line += f"; {_ideal_ratio(r):.2f}x the ideal's{_spread(r.round_ratios)}"
            print(line)


def _positive_ints(text: str) -> list[int]:
    values = [int(v) for v in text.split(",") if v.strip()]
    if not values or any(v <= 0 for v in values):
        raise ValueError(text)
    return values


def run(argv: Sequence[str], conf) -> int:
    parser = CommandParser(prog="hdfs-py bench qjm", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--batches", default="1,10,100,1000", help="batch sizes, ops per flush (1,10,100,1000)"
    )
    parser.add_argument(
        "--seconds", type=finite_float, default=3.0, help="duration of each phase (3)"
    )
    parser.add_argument(
        "--slice",
        type=finite_float,
        default=DEFAULT_SLICE_S,
        help=f"length of the interleaved slices ({DEFAULT_SLICE_S:g}; --seconds or more: none)",
    )
    parser.add_argument(
        "--max-ops", type=int, default=2_000_000, help="cap on txns per phase (2000000)"
    )
    parser.add_argument("--skip-frozen", action="store_true", help="no phase with a frozen JN")
    parser.add_argument("--skip-five", action="store_true", help="no phase with 5 JNs")
    parser.add_argument(
        "--ideal", default=None, help=f"the ideal baseline script (default {DEFAULT_IDEAL})"
    )
    parser.add_argument("--skip-ideal", action="store_true", help="do not run the baseline")
    parser.add_argument(
        "--busy-poll-us",
        type=int,
        default=DEFAULT_BUSY_POLL_US,
        help=f"{keys.DFS_QJOURNAL_BUSY_POLL_KEY} of the busy-poll phase "
        f"({DEFAULT_BUSY_POLL_US}; 0: no such phase)",
    )
    parser.add_argument("--dir", default=None, help="where the JournalNodes and baseline write")
    parser.add_argument(
        "--secure",
        action="store_true",
        help="measure mutual TLS: 3 JNs with security off and on, side by side (no other phase)",
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="with --secure: rounds of (plain, TLS) pairs (2)"
    )
    parser.add_argument(
        "--pipeline",
        action="store_true",
        help="measure pipelined edit-log syncs: FSEditLog at each --depths against depth 1, "
        "batch 1, --writers threads (no other phase)",
    )
    parser.add_argument(
        "--depths", default="2,4,8", help="with --pipeline: sync pipeline depths (2,4,8)"
    )
    parser.add_argument(
        "--writers", type=int, default=8, help="with --pipeline: writer threads (8)"
    )
    args = parser.parse_args(list(argv))
    try:
        batches = _positive_ints(args.batches)
    except ValueError:
        parser.error(f"--batches must be positive integers separated by commas: {args.batches}")
    if args.seconds <= 0 or args.max_ops <= 0:
        parser.error("--seconds and --max-ops must be positive")
    if args.slice < MIN_SLICE_S:
        parser.error(f"--slice must be at least {MIN_SLICE_S:g} s (each slice is a segment)")
    if args.rounds <= 0:
        parser.error("--rounds must be positive")
    if not 0 <= args.busy_poll_us <= MAX_BUSY_POLL_US:
        parser.error(f"--busy-poll-us must be between 0 and {MAX_BUSY_POLL_US}")
    if args.pipeline:
        try:
            depths = _positive_ints(args.depths)
        except ValueError:
            parser.error(f"--depths must be positive integers separated by commas: {args.depths}")
        if args.writers <= 0:
            parser.error("--writers must be positive")
        return _run_pipeline(args, depths, conf)
    if args.secure:
        return run_secure(batches, args.seconds, args.max_ops, args.rounds, args.dir, conf)

    base = Path(tempfile.mkdtemp(prefix="bench-qjm-", dir=args.dir))
    try:
        sample = encode_op(_op(1))
        print(f"ops: MKDIR, {len(sample)} bytes each; batches {batches}; {args.seconds:g} s each")
        print(f"directory: {base}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
        ideal: Path | None = Path(args.ideal) if args.ideal else DEFAULT_IDEAL
        if args.skip_ideal:
            print("ideal baseline: skipped (--skip-ideal); no ratios")
            ideal = None
        elif not ideal.is_file():
            print(f"ideal baseline: {ideal} not found (give it with --ideal); no ratios")
            ideal = None
        else:
            print(f"ideal baseline: {ideal}, a slice in each round")

        results = run_interleaved(
            base,
            batches,
            args.seconds,
            args.slice,
            args.max_ops,
            ideal=ideal,
            five=not args.skip_five,
            frozen=not args.skip_frozen,
            busy_poll_us=args.busy_poll_us,
            conf=conf,
        )
        print()
        report(results, batches, args.busy_poll_us)
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


def _run_pipeline(args, depths: list[int], conf) -> int:
    """``--pipeline`` (qjm_pipeline.py): FSEditLog's pipelined syncs against depth 1."""
    conf = Configuration() if conf is None else conf
    goal_depth = conf.get_int(
        keys.DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_KEY,
        keys.DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_DEFAULT,
    )
    ideal: Path | None = Path(args.ideal) if args.ideal else DEFAULT_IDEAL
    if args.skip_ideal or not ideal.is_file():
        print("ideal baseline: none (--skip-ideal, or not found: give it with --ideal)")
        ideal = None
    base = Path(tempfile.mkdtemp(prefix="bench-qjm-", dir=args.dir))
    try:
        print(f"directory: {base}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}")
        results = run_pipelined(
            base,
            depths,
            args.writers,
            args.seconds,
            args.slice,
            ideal=ideal,
            conf=conf,
            ideal_runner=lambda path, d, batch, s: run_ideal(path, d, batch, s, args.max_ops),
        )
        print()
        report_pipelined(results, goal_depth, args.writers)
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


# ---- --secure: what mutual TLS costs ------------------------------------------------------------
PLAIN, TLS = "3 JNs, plain", "3 JNs, TLS"


def secure_conf(directory: Path, base: Configuration | None = None) -> Configuration:
    """``base`` (default: the defaults) with mutual TLS on RPC and HTTPS, over a test PKI
    in ``directory``."""
    from hadoop_qjm.common.security.certs import secure_conf_properties

    conf = Configuration() if base is None else base.copy()
    for key, value in secure_conf_properties(directory).items():
        conf.set(key, value)
    return conf


def _median_result(results: list[PhaseResult]) -> PhaseResult:
    """The round with the median txns/s (its latencies and CPU times come with it)."""
    ordered = sorted(results, key=lambda r: r.txns_per_s)
    return ordered[(len(ordered) - 1) // 2]


def report_secure(results: list[PhaseResult], batches: Sequence[int]) -> None:
    """Per batch: every round's txns/s, the medians side by side, the ratio; then the goal."""
    by_key: dict[tuple[str, int], list[PhaseResult]] = {}
    for r in results:
        by_key.setdefault((r.phase, r.batch), []).append(r)
    print(
        f"{'batch':>5} {'plain txns/s':>12} {'TLS txns/s':>11} {'ratio':>6} "
        f"{'plain p50':>10} {'TLS p50':>9} {'writer CPU us/batch':>20} {'JNs CPU us/batch':>17}"
    )
    ratios: dict[int, float] = {}
    for batch in batches:
        plain, tls = by_key.get((PLAIN, batch)), by_key.get((TLS, batch))
        if not plain or not tls:
            continue
        p, t = _median_result(plain), _median_result(tls)
        ratios[batch] = ratio = t.txns_per_s / p.txns_per_s if p.txns_per_s else 0.0
        print(
            f"{batch:>5} {p.txns_per_s:>12,.0f} {t.txns_per_s:>11,.0f} {ratio:>6.2f} "
            f"{p.p50_ms:>7.2f} ms {t.p50_ms:>6.2f} ms "
            f"{p.per_batch_us(p.cpu_seconds):>9,.0f} → {t.per_batch_us(t.cpu_seconds):>7,.0f} "
            f"{p.per_batch_us(p.jn_cpu_seconds):>7,.0f} → {t.per_batch_us(t.jn_cpu_seconds):>6,.0f}"
        )
        rounds = ", ".join(
            f"{a.txns_per_s:,.0f}/{b.txns_per_s:,.0f}" for a, b in zip(plain, tls, strict=False)
        )
        print(f"      rounds (plain/TLS txns/s): {rounds}")
    print("medians over the rounds; a round's plain and TLS runs are neighbours in time")
    print()
    print("goal (printed, not asserted):")
    ratio = ratios.get(TLS_GOAL_BATCH)
    if ratio is None:
        print(f"  batch {TLS_GOAL_BATCH} not measured (add it to --batches)")
    else:
        print(
            f"  batch {TLS_GOAL_BATCH}: TLS gives {ratio:.2f}x the plain txns/s, a cost of "
            f"{(1 - ratio) * 100:.0f}% (goal <= {(1 - TLS_RATIO_GOAL) * 100:.0f}%) "
            f"{_verdict(ratio >= TLS_RATIO_GOAL)}"
        )


def run_secure(
    batches: Sequence[int],
    seconds: float,
    max_ops: int,
    rounds: int,
    directory: str | None,
    conf: Configuration | None = None,
) -> int:
    """``bench qjm --secure``: see the module docstring; ``conf`` as in
    :func:`run_interleaved`, TLS set on top of it for the TLS runs."""
    plain_conf = Configuration() if conf is None else conf
    base = Path(tempfile.mkdtemp(prefix="bench-qjm-secure-", dir=directory))
    try:
        tls_conf = secure_conf(base / "pki", plain_conf)
        print(f"ops: MKDIR, {len(encode_op(_op(1)))} bytes each; batches {batches}; {seconds:g} s")
        print(
            f"directory: {base}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
            f"{rounds} round(s), order alternating plain/TLS"
        )
        results: list[PhaseResult] = []
        for i in range(rounds * 2):
            # plain, TLS, TLS, plain, plain, TLS, ...: each mode runs first as often.
            secure = (i % 2 == 1) != (i // 2 % 2 == 1)
            name = TLS if secure else PLAIN
            with contextlib.ExitStack() as stack:
                writer = _Writer(stack, base / f"run-{i}", 3, tls_conf if secure else plain_conf)
                for batch in batches:
                    result = writer.measure(name, batch, seconds, max_ops)
                    _print_progress(result)
                    results.append(result)
        print()
        report_secure(results, batches)
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0
