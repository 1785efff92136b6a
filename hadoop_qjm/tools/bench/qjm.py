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
made for the run), each on its own cluster, side by side, in interleaved slices
like the default run's (``_qjm_secure``; ``--rounds`` fresh pairs of clusters);
it prints both figures, the ratio, and the CPU per batch of the writer and the
JournalNodes. Goals: TLS gives ≥ 0.85× the plain txns/s at batch 1 and ≥ 0.88×
at batch 100.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from hadoop_qjm.common.command_line import CommandParser, finite_float
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.fs_edit_log_op import encode_op
from hadoop_qjm.qjournal.client.pipelined_channel import MAX_BUSY_POLL_US
from hadoop_qjm.tools.bench import mode_options
from hadoop_qjm.tools.bench._qjm_measure import (
    DEFAULT_BUSY_POLL_US,
    DEFAULT_IDEAL,
    DEFAULT_SLICE_S,
    FIVE_P50_GOAL,
    FROZEN_P50_GOAL,
    IDEAL_RATIO_GOAL,
    MIN_SLICE_S,
    PhaseResult,
    mkdir_op,
    run_ideal,
    run_interleaved,
)
from hadoop_qjm.tools.bench._qjm_pipeline import report_pipelined, run_pipelined
from hadoop_qjm.tools.bench._qjm_report import report
from hadoop_qjm.tools.bench._qjm_secure import (
    TLS_RATIO_GOALS,
    measure_secure,
    report_secure,
    secure_conf,
)

__all__ = [
    "run",
    "PhaseResult",
    "IDEAL_RATIO_GOAL",
    "FROZEN_P50_GOAL",
    "FIVE_P50_GOAL",
    "TLS_RATIO_GOALS",
    "secure_conf",
]


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
        "--rounds",
        type=int,
        default=None,
        help="with --secure: pairs of clusters (plain, TLS), each measured in interleaved "
        "slices (1)",
    )
    parser.add_argument(
        "--pipeline",
        action="store_true",
        help="measure pipelined edit-log syncs: FSEditLog at each --depths against depth 1, "
        "batch 1, --writers threads (no other phase)",
    )
    parser.add_argument(
        "--depths", default=None, help="with --pipeline: sync pipeline depths (2,4,8)"
    )
    parser.add_argument(
        "--writers", type=int, default=None, help="with --pipeline: writer threads (8)"
    )
    args = parser.parse_args(list(argv))
    if args.secure and args.pipeline:
        parser.error("--secure and --pipeline are two different runs: give one of them")
    mode_options(parser, args, "--secure", {"rounds": 1})
    mode_options(parser, args, "--pipeline", {"depths": "2,4,8", "writers": 8})
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
        return run_secure(
            batches, args.seconds, args.max_ops, args.rounds, args.dir, args.slice, conf
        )

    sample = encode_op(mkdir_op(1))
    print(f"ops: MKDIR, {len(sample)} bytes each; batches {batches}; {args.seconds:g} s each")
    with _run_dir("bench-qjm-", args.dir) as base:
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
    return 0


@contextlib.contextmanager
def _run_dir(prefix: str, parent: str | None, note: str = "") -> Iterator[Path]:
    """A new directory under ``parent`` (None: the system's temporary directory) for one
    run, removed afterwards, also when the run failed. Printed first, with the machine's
    cores and load average (and ``note``); the load average again at the end of a run
    that completed: a neighbour's load shows in the figures."""
    base = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        print(
            f"directory: {base}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}{note}"
        )
        yield base
        print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run_pipeline(args, depths: list[int], conf) -> int:
    """``--pipeline`` (_qjm_pipeline.py): FSEditLog's pipelined syncs against depth 1."""
    conf = Configuration() if conf is None else conf
    goal_depth = conf.get_int(
        keys.DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_KEY,
        keys.DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_DEFAULT,
    )
    ideal: Path | None = Path(args.ideal) if args.ideal else DEFAULT_IDEAL
    if args.skip_ideal or not ideal.is_file():
        print("ideal baseline: none (--skip-ideal, or not found: give it with --ideal)")
        ideal = None
    with _run_dir("bench-qjm-", args.dir) as base:
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
    return 0


# ---- --secure: what mutual TLS costs ------------------------------------------------------------


def run_secure(
    batches: Sequence[int],
    seconds: float,
    max_ops: int,
    rounds: int,
    directory: str | None,
    slice_s: float = DEFAULT_SLICE_S,
    conf: Configuration | None = None,
) -> int:
    """``bench qjm --secure``: see ``_qjm_secure``; ``conf`` as in :func:`run_interleaved`,
    TLS set on top of it for the TLS cluster."""
    plain_conf = Configuration() if conf is None else conf
    print(
        f"ops: MKDIR, {len(encode_op(mkdir_op(1)))} bytes each; batches {batches}; "
        f"{seconds:g} s of each in slices of {min(slice_s, seconds):g} s"
    )
    note = f"; {rounds} pair(s) of clusters, plain and TLS side by side"
    with _run_dir("bench-qjm-secure-", directory, note) as base:
        tls_conf = secure_conf(base / "pki", plain_conf)
        results = measure_secure(
            base, batches, seconds, slice_s, max_ops, rounds, plain_conf, tls_conf
        )
        print()
        report_secure(results, batches)
    return 0
