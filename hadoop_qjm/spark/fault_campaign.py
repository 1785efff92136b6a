"""``hdfs-py fault-campaign``: the randomized fault test over thousands of seeds, on Spark.

The design paper's §7.3 harness, and the blog post's: Hadoop ran TestQJMWithFaults as
5,000 map tasks of a Hadoop Streaming job, one seed each, every task writing its log to
HDFS; a second job grepped every log for failures and for unexpected messages
(AssertionError, NullPointerException) that the quorum had papered over. Here:

1. **run** — a Spark stage runs ``run_seed(seed, iterations)`` for every seed
   (:func:`~hadoop_qjm.spark.campaign_tasks.run_one_seed`; a few seeds per task, see
   :func:`default_partitions`) and writes one row per seed, with its whole log, to
   ``OUT/tasks`` (Parquet);
2. **grep** — a second stage reads ``OUT/tasks`` back, greps every log
   (:func:`~hadoop_qjm.spark.campaign_tasks.unexpected_messages`) and writes
   ``OUT/results`` (Parquet: the rows without the full log, plus ``unexpected`` and
   ``status`` = passed | failed | unexpected);
3. the driver writes ``OUT/summary.txt`` and prints it: the totals, and for every
   failing or suspicious seed its first failure and the command that replays it locally
   without Spark.

While stage 1 runs, a progress line goes to stderr: seeds done and failed, the rate and
an ETA, moving as each seed ends (:mod:`~hadoop_qjm.spark.task_progress`), rewritten in
place on a terminal, else a plain line every ``--progress-interval`` seconds.
Exit status 0 if every seed passed and no log held an unexpected message, else 1.

Executors need only the ``hadoop_qjm`` package (shipped by
:mod:`~hadoop_qjm.spark.session`) and its dependencies; each seed's run is a pure
function of its seed, so where a task runs changes nothing in its row but the timings.
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from hadoop_qjm.spark.campaign_tasks import TASK_FIELDS, run_one_seed, unexpected_messages
from hadoop_qjm.spark.session import join_path, write_text
from hadoop_qjm.spark.task_progress import ItemTracker, item_progress

__all__ = [
    "CampaignReport",
    "DEFAULT_ITERATIONS",
    "MAX_ITERATIONS",
    "MAX_PARTITIONS",
    "MAX_SEED",
    "MAX_SEEDS",
    "check_counts",
    "grep_stage",
    "main",
    "read_seed_file",
    "run",
    "run_campaign",
]

#: Writers per seed unless ``--iterations`` says otherwise (Hadoop's test runs 500 per
#: seed; the harness's own default is 300).
DEFAULT_ITERATIONS = 100
#: The most seeds one campaign runs (the driver lists them all; Hadoop's ran 5,000).
MAX_SEEDS = 1_000_000
#: The most writers per seed (a seed of 100,000 already runs for hours).
MAX_ITERATIONS = 100_000
#: The most Spark tasks (``--partitions``) a campaign asks for.
MAX_PARTITIONS = 100_000
#: The largest seed: the ``seed`` column is a Spark ``bigint``. Seeds are 0 or more.
MAX_SEED = 2**63 - 1
#: Seeds per Parquet file in ``OUT/tasks`` and ``OUT/results``.
SEEDS_PER_FILE = 1000
#: At most this many seeds per Spark task by default (see :func:`default_partitions`).
SEEDS_PER_TASK = 10
#: At least this many tasks per task slot by default.
TASKS_PER_SLOT = 4
#: Failing seeds listed in full in the summary.
SUMMARY_LISTED = 50
RESULT_COLUMNS = [name for name, _ in TASK_FIELDS if name != "log"] + ["unexpected", "status"]
#: The rows of stage 1, as Spark SQL DDL.
TASK_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in TASK_FIELDS)


@dataclass
class CampaignReport:
    """What a campaign found. ``failed`` and ``unexpected`` hold result rows as dicts."""

    out: str
    seeds: int
    passed: int
    failed: list[dict[str, Any]]
    unexpected: list[dict[str, Any]]
    totals: dict[str, float]
    wall_s: float
    master: str
    iterations: int
    transport: str
    planted_bug: str | None = None
    summary: str = ""
    seed_range: tuple[int, int] = (0, 0)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.unexpected

    @property
    def seeds_per_minute(self) -> float:
        return 60.0 * self.seeds / self.wall_s if self.wall_s > 0 else 0.0


def read_seed_file(path: str) -> list[int]:
    """Seeds from a text file: one integer a line; blank lines and ``#`` comments skipped."""
    seeds = []
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            text = line.split("#", 1)[0].strip()
            if not text:
                continue
            try:
                seeds.append(int(text))
            except ValueError:
                raise ValueError(f"{path}:{number}: not a seed: {text!r}") from None
    return seeds


# ---- executor side ------------------------------------------------------------------------------


def _run_partition(
    seeds: Iterable[int],
    iterations: int,
    transport: str,
    planted_bug: str | None,
    tracker: ItemTracker,
    membership: bool = False,
    harness: dict[str, Any] | None = None,
) -> Iterator[tuple]:
    names = [name for name, _ in TASK_FIELDS]
    for seed in seeds:
        row = run_one_seed(seed, iterations, transport, planted_bug, membership, **(harness or {}))
        tracker.item_done(str(seed), failed=not row["passed"])
        yield tuple(row[name] for name in names)


# ---- driver side --------------------------------------------------------------------------------


def default_partitions(num_seeds: int, slots: int) -> int:
    """Spark tasks for ``num_seeds`` seeds on ``slots`` task slots.

    Hadoop gave every seed its own task (NLineInputFormat), its seeds running for
    minutes. Ours run for about a second, and a Spark task costs tens of milliseconds
    to launch: a task runs up to :data:`SEEDS_PER_TASK` seeds, and there are at least
    :data:`TASKS_PER_SLOT` tasks per slot, so that seeds of unequal length still
    spread evenly (and the progress line moves often).
    """
    wanted = max(slots * TASKS_PER_SLOT, math.ceil(num_seeds / SEEDS_PER_TASK))
    return max(1, min(num_seeds, wanted))


def grep_stage(spark: Any, tasks: str, results: str, files: int = 1, mode: str = "errorifexists"):
    """Read the task rows at ``tasks``, grep every log, write ``results``.

    A seed's ``status`` is "failed" if its run failed, else "unexpected" if its log
    holds an unexpected message (:func:`unexpected_messages`), else "passed".
    """
    from pyspark.sql import functions as F
    from pyspark.sql.types import ArrayType, StringType

    grep = F.udf(unexpected_messages, ArrayType(StringType()), useArrow=False)
    scanned = spark.read.parquet(tasks).withColumn("unexpected", grep("log"))
    status = (
        F.when(~F.col("passed"), F.lit("failed"))
        .when(F.size("unexpected") > 0, F.lit("unexpected"))
        .otherwise(F.lit("passed"))
    )
    rows = scanned.withColumn("status", status).select(*RESULT_COLUMNS)
    rows.coalesce(files).write.mode(mode).parquet(results)


def run_campaign(
    spark: Any,
    seeds: Sequence[int],
    out: str,
    *,
    iterations: int = DEFAULT_ITERATIONS,
    transport: str = "local",
    planted_bug: str | None = None,
    partitions: int | None = None,
    overwrite: bool = False,
    progress_interval_s: float = 0.0,
    progress_stream=None,
    membership: bool = False,
    switch_probability: float | None = None,
    pipeline_depth: int = 1,
) -> CampaignReport:
    """Run the campaign on ``spark``; results under ``out``; returns the report.

    ``transport``: the harness's ("local" in-process, or "thrift" over loopback).
    ``membership``: the writers also change the JournalNode set (local transport), each
    beginning a change with ``switch_probability`` (None: the harness's default).
    ``pipeline_depth``: batches each writer keeps sent and unacknowledged (1: none).
    """
    from pyspark.sql import functions as F

    if not seeds:
        raise ValueError("no seeds to run")
    if transport not in ("local", "thrift"):
        raise ValueError(f"transport must be local or thrift, not {transport!r}")
    from hadoop_qjm.testing.randomized import harness_options_error

    problem = harness_options_error(membership, switch_probability, pipeline_depth)
    if problem is not None:
        raise ValueError(problem)  # before any Spark task starts
    harness = {"switch_probability": switch_probability, "pipeline_depth": pipeline_depth}
    sc = spark.sparkContext
    num_partitions = partitions or default_partitions(len(seeds), sc.defaultParallelism)
    mode = "overwrite" if overwrite else "errorifexists"
    files = max(1, math.ceil(len(seeds) / SEEDS_PER_FILE))
    started = time.perf_counter()
    stream = progress_stream if progress_stream is not None else sys.stderr
    with item_progress(
        sc, "fault-campaign", len(seeds), "seeds", interval_s=progress_interval_s, stream=stream
    ) as tracker:
        # Stage 1: run the seeds; each task's rows, whole logs included, go to OUT/tasks.
        def run_partition(part: Iterable[int]) -> Iterator[tuple]:
            return _run_partition(
                part, iterations, transport, planted_bug, tracker, membership, harness
            )

        rows = sc.parallelize(list(seeds), num_partitions).mapPartitions(run_partition)
        tasks = spark.createDataFrame(rows, TASK_SCHEMA).repartition(files, "seed")
        tasks.write.mode(mode).parquet(join_path(out, "tasks"))

    # Stage 2: grep every log, as the paper's second job did; OUT/results.
    grep_stage(spark, join_path(out, "tasks"), join_path(out, "results"), files, mode)
    wall_s = time.perf_counter() - started

    saved = spark.read.parquet(join_path(out, "results"))
    agg = saved.agg(
        F.count("*").alias("seeds"),
        F.sum(F.col("passed").cast("int")).alias("passed"),
        F.sum("writers").alias("writers"),
        F.sum("txns_acknowledged").alias("txns_acknowledged"),
        F.sum("recoveries").alias("recoveries"),
        F.sum("faults_injected").alias("faults_injected"),
        F.sum("duration_s").alias("task_seconds"),
        F.min("seed").alias("min_seed"),
        F.max("seed").alias("max_seed"),
        F.countDistinct("executor").alias("executors"),
    ).first()
    flagged = [
        row.asDict(recursive=True)
        for row in saved.where(F.col("status") != "passed").orderBy("seed").collect()
    ]
    report = CampaignReport(
        out=out,
        seeds=int(agg["seeds"]),
        passed=int(agg["passed"] or 0),
        failed=[r for r in flagged if r["status"] == "failed"],
        unexpected=[r for r in flagged if r["status"] == "unexpected"],
        totals={
            key: float(agg[key] or 0)
            for key in (
                "writers",
                "txns_acknowledged",
                "recoveries",
                "faults_injected",
                "task_seconds",
            )
        },
        wall_s=wall_s,
        master=sc.master,
        iterations=iterations,
        transport=transport,
        planted_bug=planted_bug,
        seed_range=(int(agg["min_seed"]), int(agg["max_seed"])),
        extra={
            "executors": int(agg["executors"]),
            "partitions": num_partitions,
            "membership": membership,
            "switch_probability": switch_probability,
            "pipeline_depth": pipeline_depth,
        },
    )
    report.summary = summary_text(report)
    report.extra["summary_path"] = write_text(spark, out, "summary.txt", report.summary, "tasks")
    return report


def _one_line(text: str | None, limit: int = 400) -> str:
    if not text:
        return ""
    joined = " | ".join(line.strip() for line in text.splitlines() if line.strip())
    return joined if len(joined) <= limit else joined[: limit - 1] + "…"


def summary_text(report: CampaignReport) -> str:
    """The one-page summary: what ran, the totals, every failing or suspicious seed."""
    t = report.totals
    lo, hi = report.seed_range
    lines = [
        f"fault campaign: {report.seeds} seeds ({lo}..{hi}), {report.iterations} writers each, "
        f"transport {report.transport}, master {report.master}"
        + (", JournalNode set changes" if report.extra.get("membership") else "")
        + (
            f" (switch probability {report.extra['switch_probability']})"
            if report.extra.get("switch_probability") is not None
            else ""
        )
        + (
            f", pipeline depth {report.extra['pipeline_depth']}"
            if report.extra.get("pipeline_depth", 1) > 1
            else ""
        )
        + (f", PLANTED BUG {report.planted_bug}" if report.planted_bug else ""),
        f"  passed {report.passed}, failed {len(report.failed)}, "
        f"unexpected log messages {len(report.unexpected)}",
        f"  writers (failovers) {t['writers']:,.0f}, txns acknowledged "
        f"{t['txns_acknowledged']:,.0f}, recoveries {t['recoveries']:,.0f}, "
        f"faults injected {t['faults_injected']:,.0f}",
        f"  wall {report.wall_s:.1f} s ({report.seeds_per_minute:.1f} seeds/min), "
        f"task time {t['task_seconds']:.1f} s on {report.extra.get('executors', '?')} "
        f"executor processes",
        f"  results: {report.out}/results (Parquet), task logs: {report.out}/tasks",
    ]
    for title, rows in (("FAILED", report.failed), ("UNEXPECTED LOG MESSAGES", report.unexpected)):
        if not rows:
            continue
        lines.append("")
        lines.append(f"{title} ({len(rows)} seeds):")
        for row in rows[:SUMMARY_LISTED]:
            lines.append(f"  seed {row['seed']}: {_one_line(row['first_failure'])}".rstrip())
            if row["status"] == "unexpected":
                for message in (row.get("unexpected") or [])[:3]:
                    lines.append(f"    log: {message[:300]}")
            replay = row["replay_command"]
            if row["status"] == "unexpected":
                replay += " --verbose"
            lines.append(f"    replay: {replay}")
        if len(rows) > SUMMARY_LISTED:
            lines.append(f"  … and {len(rows) - SUMMARY_LISTED} more (see {report.out}/results)")
    if report.ok:
        lines.append("")
        lines.append("every seed passed; no unexpected messages in any log")
    return "\n".join(lines) + "\n"


# ---- command line -------------------------------------------------------------------------------


def _parser():
    from hadoop_qjm.common.command_line import CommandParser
    from hadoop_qjm.spark.session import add_job_arguments
    from hadoop_qjm.testing.randomized import PLANTED_BUGS

    parser = CommandParser(
        prog="hdfs-py fault-campaign",
        description="Run the randomized QJM fault test for many seeds on Spark (design paper "
        "§7.3), grep every task's log, and report failing seeds with their replay commands.",
    )
    parser.add_argument("--seeds", type=int, help="number of seeds (all of --seed-file if omitted)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--first-seed", type=int, help="run seeds S, S+1, …, S+N-1 (default: a random S, printed)"
    )
    which.add_argument("--seed-file", help="a file of seeds, one per line")
    parser.add_argument(
        "--iterations",
        type=int,
        default=DEFAULT_ITERATIONS,
        help=f"writers (failovers) per seed ({DEFAULT_ITERATIONS})",
    )
    parser.add_argument(
        "--transport",
        choices=("inproc", "local", "thrift"),
        default="inproc",
        help="inproc: JournalNodes in the task's process, deterministic (default); "
        "thrift: real Thrift and HTTP on loopback",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        help=f"Spark tasks (default: {TASKS_PER_SLOT} per task slot, at most "
        f"{SEEDS_PER_TASK} seeds per task)",
    )
    parser.add_argument(
        "--planted-bug",
        choices=sorted(PLANTED_BUGS),
        help="switch on a deliberately broken rule, to show the campaign finds it",
    )
    parser.add_argument(
        "--membership",
        action="store_true",
        help="the writers also change the JournalNode set (five nodes; inproc transport)",
    )
    parser.add_argument(
        "--switch-probability",
        type=float,
        metavar="P",
        help="with --membership: the chance that a writer begins a set change (the "
        "harness's default 0.2; short seeds want more, e.g. 0.5)",
    )
    parser.add_argument(
        "--pipeline-depth",
        type=int,
        default=1,
        metavar="K",
        help="batches each writer keeps sent and unacknowledged (1: no pipelining)",
    )
    add_job_arguments(parser)
    return parser


#: The largest value of each count option (``--seeds`` …), checked by :func:`check_counts`.
_COUNT_MAXIMA = {"seeds": MAX_SEEDS, "iterations": MAX_ITERATIONS, "partitions": MAX_PARTITIONS}


def check_counts(parser, **counts: int | None) -> None:
    """``parser.error`` (one line, exit 2, before Spark starts) for the first count option
    given outside 1 … its maximum: ``check_counts(parser, seeds=args.seeds)``; None is
    an option not given. Shared by ``fault-campaign`` and ``bench campaign``."""
    for name, value in counts.items():
        maximum = _COUNT_MAXIMA[name]
        if value is not None and not 1 <= value <= maximum:
            parser.error(f"--{name} must be between 1 and {maximum}, not {value}")


def _seeds(args, parser) -> tuple[list[int], int | None]:
    """The seeds to run and the first of a range (None for a seed file); a usage error,
    before Spark starts, for a bad count, range or seed file."""
    check_counts(parser, seeds=args.seeds)
    if args.seed_file:
        try:
            seeds = read_seed_file(args.seed_file)
        except (OSError, ValueError) as e:
            parser.error(str(e))
        bad = next((seed for seed in seeds if not 0 <= seed <= MAX_SEED), None)
        if bad is not None:
            parser.error(f"{args.seed_file}: seed {bad} is out of range (0 to 2**63-1)")
        if args.seeds is not None:
            seeds = seeds[: args.seeds]
        if not seeds:
            parser.error(f"no seeds in {args.seed_file}")
        if len(seeds) > MAX_SEEDS:
            parser.error(f"{args.seed_file} holds more than {MAX_SEEDS} seeds")
        return seeds, None
    if args.seeds is None:
        parser.error("--seeds N (N >= 1) is required unless --seed-file is given")
    first = args.first_seed
    if first is None:
        first = random.SystemRandom().randrange(0, 2**31)
    elif not 0 <= first <= MAX_SEED - args.seeds + 1:
        parser.error(
            f"--first-seed must be between 0 and {MAX_SEED - args.seeds + 1} with --seeds "
            f"{args.seeds} (seeds are 0 to 2**63-1), not {first}"
        )
    return list(range(first, first + args.seeds)), first


def run(argv: Sequence[str], conf=None) -> int:
    """Entry point of ``hdfs-py fault-campaign``."""
    from hadoop_qjm.spark.session import run_job
    from hadoop_qjm.testing.randomized import harness_options_error

    parser = _parser()
    args = parser.parse_args(list(argv))
    check_counts(parser, iterations=args.iterations, partitions=args.partitions)
    if args.progress_interval < 0:
        parser.error("--progress-interval must be 0 (none) or positive")
    problem = harness_options_error(args.membership, args.switch_probability, args.pipeline_depth)
    if problem is not None:
        parser.error(problem)
    seeds, first = _seeds(args, parser)
    transport = "local" if args.transport == "inproc" else args.transport
    report = run_job(
        "fault-campaign",
        args,
        parser,
        lambda spark: run_campaign(
            spark,
            seeds,
            args.out,
            iterations=args.iterations,
            transport=transport,
            planted_bug=args.planted_bug,
            membership=args.membership,
            switch_probability=args.switch_probability,
            pipeline_depth=args.pipeline_depth,
            partitions=args.partitions,
            overwrite=args.overwrite,
            progress_interval_s=args.progress_interval,
        ),
        note=None if first is None else f"fault-campaign: seeds {first}..{first + len(seeds) - 1}",
    )
    if report is None:
        return 1
    sys.stdout.write(report.summary)
    print(f"summary: {report.extra['summary_path']}")
    return 0 if report.ok else 1


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m hadoop_qjm.spark.fault_campaign ARGS``: ``hdfs-py fault-campaign ARGS``."""
    from hadoop_qjm.common.command_line import run_command, run_main

    args = list(sys.argv[1:] if argv is None else argv)
    return run_main(lambda: run_command(run, args))


if __name__ == "__main__":
    sys.exit(main())
