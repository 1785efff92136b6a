"""The randomized fault test (design paper §7.3, Hadoop's TestQJMWithFaults.testRandomized).

``run_seed(seed)`` is a pure function of its seed (STYLE.md habit 8)::

    result = run_seed(42, iterations=300)          # a SeedResult; result.passed
    python -m hadoop_qjm.testing.randomized --seed 42 --iterations 300

Three JournalNodes; hundreds of writers take over from each other. Each
writer is a new QuorumJournalManager that recovers (new epoch, Paxos recovery
of the last segment, finalize), reads back what a reader would see, then
writes up to two segments of four single-txn flushes and finalizes them;
when ``txid > 100 and i % 10 == 1`` it also purges older than ``txid - 100``.
Any step may fail because of the faults of :class:`~hadoop_qjm.testing.faults.RandomFaults`
(nodes flapping up and down, a node cut off from a whole writer, the writer
crashing between two calls, nodes restarting, acceptRecovery failing on
either side of its commit point); the writer is then abandoned and the next
one takes over.

After every step the invariants are checked with ``always_assert``:

1. every recovery reaches at least the last acknowledged txid;
2. every failure is an injected one ("Injected" in its message), and no
   AssertionError was raised anywhere — not even by a node whose error the
   quorum hid;
3. finalized segments with the same first txid are byte-identical on every
   node (the files on disk);
4. no txid was ever acknowledged with two different contents: every writer
   writes its own content (``/w<writer>/tx<txid>``), the bytes of every
   acknowledged op are recorded, and after each recovery the finalized edits
   read back through ``select_input_streams`` must hold exactly those bytes;
   every txid read back once must read back the same forever after;
5. every JournalNode's kept scan state of its open segment (issue 25) equals a
   fresh scan of the file whenever newEpoch, prepareRecovery, acceptRecovery or
   finalizeLogSegment answers from it (``dfs.journalnode.kept-segment-state.verify``:
   the node's ``always_assert``, so a mismatch fails the run as in 2).

The first violation ends the run: ``SeedResult.first_failure`` says what, and
``log_excerpt`` ends with the trace leading to it. With ``transport="local"``
(the default) the nodes are real Journals on real files reached through
:mod:`~hadoop_qjm.testing.local_transport`, every call runs in this thread in a
fixed order, and one ``random.Random(seed)`` decides every fault: the same
seed replays the same trace. With ``transport="thrift"`` the same workload
runs against a MiniJournalCluster over loopback Thrift and HTTP, the faults
injected in the client's proxies (the paxos faults by the same injector,
armed from the client before each acceptRecovery); the client still makes
its calls in one thread in a fixed order, but the JournalNodes' own threads,
sockets and timers make a seed's run NOT exactly repeatable there, and nodes
do not restart (a restart breaks the client's connection with an error that
is not an injected one).

**Hadoop's paxos records.** With the local transport, each node writes its paxos
records either as ours (with the md5 of the accepted copy, field 1000) or as Hadoop's
JournalNode does (no md5: :class:`HadoopPaxosRecordJournal`), decided per node by the
seed (:func:`hadoop_record_nodes`, a random stream of its own, so the faults are drawn
as before): records with and without md5 meet in one recovery, and every invariant
must still hold — the unknown-md5 rule of docs/journalnode.md at work.

``planted_bug`` switches on a deliberately broken rule (:data:`PLANTED_BUGS`)
so the harness can show it finds it. ``run_seed`` keeps no state between
calls (a Spark executor may call it for thousands of seeds); it patches a
module only for a planted bug, and restores it before returning (do not run
planted-bug seeds in several threads of one process).
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import hashlib
import logging
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hadoop_qjm.qjournal.client import segment_recovery_comparator
from hadoop_qjm.testing.faults import (
    FaultProbabilities,
)
from hadoop_qjm.testing.randomized_run import (
    DEFAULT_ITERATIONS,
    AckWithoutWriteJournal,
    HadoopPaxosRecordJournal,
    SeedRun,
    hadoop_record_nodes,
)

__all__ = [
    "DEFAULT_ITERATIONS",
    "PLANTED_BUGS",
    "AckWithoutWriteJournal",
    "HadoopPaxosRecordJournal",
    "SeedResult",
    "hadoop_record_nodes",
    "main",
    "run_seed",
    "sweep_seeds",
]

#: The pipeline depth of a "pipeline-ack-ahead" run that asked for none.
PLANTED_PIPELINE_DEPTH = 3
#: Lines of the trace kept in ``SeedResult.log_excerpt``.
EXCERPT_LINES = 80

PLANTED_BUGS = {
    "comparator-ignores-writer-epoch": (
        "SegmentRecoveryComparator ignores lastWriterEpoch: a longer log from an older "
        "writer beats a newer writer's log (design paper §2.9 rule 3b broken)"
    ),
    "ack-before-write": (
        "JournalNode 0 acknowledges journal() batches without writing them, so a later "
        "recovery may miss acknowledged txns"
    ),
    "pipeline-ack-ahead": (
        "with syncs pipelined (--pipeline-depth > 1), the writer acknowledges batch n+1 as "
        "soon as it is sent, before batch n and batch n+1 are known to be on a quorum"
    ),
    "joint-quorum-new-set-only": (
        "while the JournalNode set changes (--membership), a call counts as done once a "
        "majority of the new set has it: the new set alone decides"
    ),
}


@dataclass(frozen=True)
class SeedResult:
    """What one seed's run did, and whether every invariant held."""

    seed: int
    passed: bool
    #: Writers that took over (new QJMs), i.e. failovers.
    writers: int
    txns_acknowledged: int
    #: Recoveries that succeeded.
    recoveries: int
    faults_injected: int
    duration_s: float
    #: The first violated invariant (None if passed).
    first_failure: str | None
    #: The tail of the trace.
    log_excerpt: str
    iterations: int = DEFAULT_ITERATIONS
    transport: str = "local"
    planted_bug: str | None = None
    #: SHA-256 of the whole trace: two runs of one seed (local transport) agree.
    trace_digest: str = ""
    #: The nodes that wrote Hadoop's paxos records, without md5 (local transport).
    hadoop_record_nodes: tuple[int, ...] = ()
    #: Whether the writers also changed the JournalNode set (randomized_membership.py).
    membership: bool = False
    #: Set changes begun and finished (membership runs).
    switches: tuple[int, int] = (0, 0)
    #: The chance a writer begins a set change (membership runs; None: the default).
    switch_probability: float | None = None
    #: Batches a writer may have sent and not yet had acknowledged (1: one at a time).
    pipeline_depth: int = 1

    @property
    def replay_command(self) -> str:
        """The command line that replays this seed."""
        return replay_command(
            self.seed,
            self.iterations,
            self.transport,
            self.planted_bug,
            self.membership,
            self.switch_probability,
            self.pipeline_depth,
        )


def replay_command(
    seed: int,
    iterations: int,
    transport: str = "local",
    planted_bug: str | None = None,
    membership: bool = False,
    switch_probability: float | None = None,
    pipeline_depth: int = 1,
) -> str:
    """The command line that replays one seed run with these options (:func:`main`)."""
    cmd = f"python -m hadoop_qjm.testing.randomized --seed {seed} --iterations {iterations}"
    if transport != "local":
        cmd += f" --transport {transport}"
    if membership:
        cmd += " --membership"
    if switch_probability is not None:
        cmd += f" --switch-probability {switch_probability}"
    if pipeline_depth > 1:
        cmd += f" --pipeline-depth {pipeline_depth}"
    if planted_bug:
        cmd += f" --planted-bug {planted_bug}"
    return cmd


def harness_options_error(
    membership: bool, switch_probability: float | None, pipeline_depth: int
) -> str | None:
    """What is wrong with these options of a run (named by their command-line flags),
    or None: the one check of :func:`run_seed`, its command line and the Spark campaign's."""
    if pipeline_depth < 1:
        return f"--pipeline-depth must be at least 1, not {pipeline_depth}"
    if switch_probability is not None:
        if not membership:
            return "--switch-probability needs --membership"
        if not 0.0 <= switch_probability <= 1.0:
            return f"--switch-probability must lie between 0 and 1, not {switch_probability}"
    return None


def _ignore_writer_epoch(response: Any) -> int:
    # PLANTED BUG "comparator-ignores-writer-epoch": rule 3a without lastWriterEpoch.
    return response.accepted_in_epoch or 0


@contextlib.contextmanager
def _planted(bug: str | None) -> Iterator[None]:
    if bug is not None and bug not in PLANTED_BUGS:
        raise ValueError(f"unknown planted bug {bug!r}; known: {', '.join(PLANTED_BUGS)}")
    if bug == "joint-quorum-new-set-only":
        from hadoop_qjm.testing.randomized_membership import new_set_alone_decides

        with new_set_alone_decides():
            yield
        return
    if bug != "comparator-ignores-writer-epoch":
        yield
        return
    original = segment_recovery_comparator.max_seen_epoch
    segment_recovery_comparator.max_seen_epoch = _ignore_writer_epoch
    try:
        yield
    finally:
        segment_recovery_comparator.max_seen_epoch = original


@contextlib.contextmanager
def _quiet_library_logs(quiet: bool) -> Iterator[None]:
    # Thousands of expected warnings (every injected failure is logged with its
    # traceback); the trace says what happened.
    if not quiet:
        yield
        return
    logger = logging.getLogger("hadoop_qjm")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)


def _work_dir(base_dir: str | os.PathLike[str] | None, seed: int) -> tuple[Path, bool]:
    """A fresh directory for the run; ``(path, delete afterwards)``."""
    if base_dir is not None:
        Path(base_dir).mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(prefix=f"seed-{seed}-", dir=base_dir)), False
    # tmpfs makes the Journals' fsyncs free; the files are the same.
    shm = Path("/dev/shm")
    parent = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix=f"qjm-seed-{seed}-", dir=parent)), True


def run_seed(
    seed: int,
    iterations: int = DEFAULT_ITERATIONS,
    transport: str = "local",
    base_dir: str | os.PathLike[str] | None = None,
    planted_bug: str | None = None,
    *,
    probabilities: FaultProbabilities | None = None,
    trace: list[str] | None = None,
    quiet: bool = True,
    membership: bool = False,
    switch_probability: float | None = None,
    pipeline_depth: int = 1,
) -> SeedResult:
    """Run the randomized test for ``seed``; never raises for a failed invariant.

    ``base_dir``: where the JournalNodes' directories go (kept afterwards);
    default a temporary directory (on tmpfs when there is one), deleted.
    ``trace``: a list that receives every line of the trace. ``quiet``
    silences the ``hadoop_qjm`` loggers during the run. ``membership``: the
    writers also change the JournalNode set, among five nodes
    (:mod:`~hadoop_qjm.testing.randomized_membership`; local transport only);
    ``switch_probability``: the chance that a writer begins one (None: the default,
    ``randomized_membership.SWITCH_PROBABILITY``; short runs use more).
    ``pipeline_depth`` k > 1: each writer keeps up to k batches sent and unacknowledged
    (pipelined syncs, :meth:`SeedRun.write_segment`; the "pipeline-ack-ahead" bug runs at
    depth 3 when given 1).
    """
    problem = harness_options_error(membership, switch_probability, pipeline_depth)
    if problem is not None:
        raise ValueError(problem)
    if planted_bug == "pipeline-ack-ahead" and pipeline_depth == 1:
        pipeline_depth = PLANTED_PIPELINE_DEPTH  # the bug needs batches in flight
    if planted_bug is not None and planted_bug not in PLANTED_BUGS:
        raise ValueError(f"unknown planted bug {planted_bug!r}; known: {', '.join(PLANTED_BUGS)}")
    lines: list[str] = trace if trace is not None else []
    lines.append(
        f"seed {seed}, {iterations} writers, transport {transport}"
        + (", membership changes" if membership else "")
        + (f", pipeline depth {pipeline_depth}" if pipeline_depth > 1 else "")
        + (f", planted bug {planted_bug}" if planted_bug else "")
    )
    started = time.perf_counter()
    work_dir, delete = _work_dir(base_dir, seed)
    first_failure: str | None = None
    run: SeedRun | None = None
    try:
        with _quiet_library_logs(quiet), _planted(planted_bug):
            run_class: Any = SeedRun
            if membership:
                from hadoop_qjm.testing.randomized_membership import MembershipRun

                run_class = MembershipRun
            elif planted_bug == "joint-quorum-new-set-only":
                raise ValueError("the joint-quorum-new-set-only bug needs --membership")
            extra: dict[str, Any] = {"pipeline_depth": pipeline_depth}
            if switch_probability is not None:
                extra["switch_probability"] = switch_probability
            run = run_class(seed, transport, work_dir, planted_bug, probabilities, lines, **extra)
            try:
                run.run(iterations)
                run.check_hidden_assertions()
            except AssertionError as e:
                first_failure = f"{type(e).__name__}: {e}"
            except Exception as e:  # noqa: BLE001 - an error outside any step is a failure too
                lines.extend(traceback.format_exc().rstrip().splitlines()[-12:])
                first_failure = f"unexpected {type(e).__name__}: {e}"
            finally:
                run.close()
    finally:
        if delete:
            shutil.rmtree(work_dir, ignore_errors=True)
    if first_failure is not None:
        first_failure = first_failure.replace(str(work_dir), "<dir>")
    lines.append(f"FAILED: {first_failure}" if first_failure else "passed")
    return SeedResult(
        seed=seed,
        passed=first_failure is None,
        writers=run.writers if run else 0,
        txns_acknowledged=run.txns_acknowledged if run else 0,
        recoveries=run.recoveries if run else 0,
        faults_injected=run.faults.injected if run else 0,
        duration_s=time.perf_counter() - started,
        first_failure=first_failure,
        log_excerpt="\n".join(lines[-EXCERPT_LINES:]),
        iterations=iterations,
        transport=transport,
        planted_bug=planted_bug,
        trace_digest=hashlib.sha256("\n".join(lines).encode()).hexdigest(),
        hadoop_record_nodes=run.hadoop_record_nodes if run else (),
        membership=membership,
        switches=getattr(run, "switches", (0, 0)),
        switch_probability=switch_probability,
        pipeline_depth=pipeline_depth,
    )


def _sweep_worker(seeds: list[int], deadline: float, kwargs: dict[str, Any]) -> list[Any]:
    """Run ``seeds`` in order until the wall-clock ``deadline`` (a worker process)."""
    results = []
    for seed in seeds:
        if time.time() > deadline:
            break
        results.append(run_seed(seed, membership=True, **kwargs))
    return results


def sweep_seeds(
    seeds: Sequence[int], budget_s: float, workers: int | None = None, **kwargs: Any
) -> list[Any]:
    """Membership runs of as many of ``seeds`` as fit in ``budget_s``, spread over
    ``workers`` processes (default: one per core); ``kwargs`` go to ``run_seed``.
    Returns the SeedResults, in no particular order. Every worker is a process of the
    ``spawn`` kind (no thread of this process is inherited) and is joined before return;
    a seed begun before the deadline runs to its end."""
    n = max(1, workers or os.cpu_count() or 1)
    deadline = time.time() + budget_s
    if n == 1:
        return _sweep_worker(list(seeds), deadline, kwargs)
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(n, mp_context=context) as pool:
        futures = [
            pool.submit(_sweep_worker, list(seeds)[i::n], deadline, kwargs) for i in range(n)
        ]
        return [result for future in futures for result in future.result()]


def main(argv: list[str] | None = None) -> int:
    """``python -m hadoop_qjm.testing.randomized --seed N``: replay one seed, print its trace."""
    parser = argparse.ArgumentParser(
        prog="python -m hadoop_qjm.testing.randomized",
        description="Replay one seed of the randomized QJM fault test and print its trace.",
    )
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS)
    parser.add_argument("--transport", choices=("local", "thrift"), default="local")
    parser.add_argument("--planted-bug", choices=sorted(PLANTED_BUGS), default=None)
    parser.add_argument(
        "--membership", action="store_true", help="the writers also change the JournalNode set"
    )
    parser.add_argument(
        "--switch-probability",
        type=float,
        default=None,
        help="with --membership: the chance that a writer begins a set change",
    )
    parser.add_argument(
        "--pipeline-depth",
        type=int,
        default=1,
        help="batches a writer keeps sent and unacknowledged (pipelined syncs; 1)",
    )
    parser.add_argument("--base-dir", help="keep the JournalNodes' directories here")
    parser.add_argument("--tail", type=int, default=None, help="print only the last N lines")
    parser.add_argument("--verbose", action="store_true", help="also show the library's logs")
    args = parser.parse_args(argv)
    problem = harness_options_error(args.membership, args.switch_probability, args.pipeline_depth)
    if problem is not None:
        parser.error(problem)
    if args.verbose:
        logging.basicConfig(level=logging.INFO, stream=sys.stderr)
    lines: list[str] = []
    result = run_seed(
        args.seed,
        iterations=args.iterations,
        transport=args.transport,
        base_dir=args.base_dir,
        planted_bug=args.planted_bug,
        trace=lines,
        quiet=not args.verbose,
        membership=args.membership,
        switch_probability=args.switch_probability,
        pipeline_depth=args.pipeline_depth,
    )
    shown = lines if args.tail is None else lines[-args.tail :]
    print("\n".join(shown))
    print(
        f"\nseed {result.seed}: {'PASSED' if result.passed else 'FAILED'} — "
        f"{result.writers} writers, {result.recoveries} recoveries, "
        f"{result.txns_acknowledged} txns acknowledged, {result.faults_injected} faults injected, "
        f"{result.duration_s:.2f} s, trace {result.trace_digest[:16]}"
        + (
            f", set changes begun {result.switches[0]}, finished {result.switches[1]}"
            if result.membership
            else ""
        )
    )
    if not result.passed:
        print(f"first failure: {result.first_failure}")
        print(f"replay: {result.replay_command}")
    return 0 if result.passed else 1


if __name__ == "__main__":
    sys.exit(main())
