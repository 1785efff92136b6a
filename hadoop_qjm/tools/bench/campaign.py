"""``hdfs-py bench campaign``: the fault campaign on Spark against one process.

Runs the same seeds of the randomized fault test (a) one after another in this Python
process, through the very function a campaign task runs, and (b) as a fault campaign
on ``--master`` (``local[2]``), and prints seeds per minute for both and their ratio.
For scale it also runs them (c) in as many plain processes as the master has task
slots, without Spark: what the machine gives to parallel work at that moment (other
programs' load included), i.e. the best the campaign can do there.
The goal (≥ 1.7× on a 2-core machine) says Spark's overhead is small next to the work,
so that more executors give more seeds per minute. The campaign is measured in a warm
session (after a first, tiny campaign: a session's first job starts the Python workers
and warms up the JVM), and also counting the session's start and that first job, which
a campaign pays once whatever its number of seeds. It also checks that (a) and (b) gave the
same per-seed results. Goals are printed, never asserted.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from hadoop_qjm.common.command_line import CommandParser

__all__ = ["run", "SPEEDUP_GOAL"]

SPEEDUP_GOAL = 1.7
#: A first, tiny campaign warms the session up (outside the measured seeds).
WARM_UP_SEEDS = [-1, -2]
#: The per-seed figures that must agree between (a) and (b).
SAME = ("passed", "writers", "txns_acknowledged", "recoveries", "faults_injected", "trace_digest")


def _rate(seeds: int, seconds: float) -> float:
    return 60.0 * seeds / seconds if seconds > 0 else float("inf")


def _verdict(ratio: float) -> str:
    return f"(goal >= {SPEEDUP_GOAL}: {'met' if ratio >= SPEEDUP_GOAL else 'NOT met'})"


def _parallelism(master: str) -> int:
    """Task slots of a local master (``local[N]``, ``local[*]``, ``local``); else the CPUs."""
    cpus = os.cpu_count() or 1
    m = re.fullmatch(r"local\[(\d+|\*)(?:,\d+)?\]", master)
    if master == "local":
        return 1
    if m is None:
        return cpus
    return cpus if m.group(1) == "*" else int(m.group(1))


def _run_seed_quietly(seed: int, iterations: int) -> bool:
    from hadoop_qjm.spark.campaign_tasks import run_one_seed

    return bool(run_one_seed(seed, iterations)["passed"])


def run(argv: Sequence[str], conf) -> int:
    """Entry point of ``hdfs-py bench campaign``."""
    parser = CommandParser(prog="hdfs-py bench campaign", description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=200, help="seeds (200)")
    parser.add_argument("--first-seed", type=int, default=0, help="first seed (0)")
    parser.add_argument("--iterations", type=int, default=50, help="writers per seed (50)")
    parser.add_argument("--master", default="local[2]", help="Spark master (local[2])")
    parser.add_argument("--partitions", type=int, help="Spark tasks (the campaign's default)")
    parser.add_argument(
        "--no-ceiling",
        dest="ceiling",
        action="store_false",
        help="skip (c), the same seeds in as many plain processes as the master has slots",
    )
    args = parser.parse_args(list(argv))
    from hadoop_qjm.spark.fault_campaign import check_counts

    check_counts(parser, seeds=args.seeds, iterations=args.iterations, partitions=args.partitions)

    from hadoop_qjm.spark.session import PysparkMissingError, require_pyspark

    try:
        require_pyspark()
    except PysparkMissingError as e:
        print(e, file=sys.stderr)
        return 1
    from hadoop_qjm.spark.campaign_tasks import run_one_seed
    from hadoop_qjm.spark.fault_campaign import run_campaign
    from hadoop_qjm.spark.session import spark_session

    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    cores = os.cpu_count() or 1
    print(
        f"bench campaign: {len(seeds)} seeds ({seeds[0]}..{seeds[-1]}), {args.iterations} "
        f"writers each, inproc transport; {cores} CPUs, load average "
        f"{os.getloadavg()[0]:.2f}"
    )

    started = time.perf_counter()
    sequential = {}
    for seed in seeds:
        row = run_one_seed(seed, args.iterations)
        sequential[seed] = tuple(row[name] for name in SAME)
    seq_s = time.perf_counter() - started
    seq_rate = _rate(len(seeds), seq_s)
    print(f"  (a) one process, one seed after another   {seq_rate:9.1f} seeds/min  ({seq_s:.1f} s)")

    workers = _parallelism(args.master)
    ceiling_rate = None
    if args.ceiling and workers > 1:
        # What this machine gives to `workers` plain processes, Spark or not (other
        # programs' load counts here too): the best a campaign on it can do.
        started = time.perf_counter()
        context = multiprocessing.get_context("fork")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            list(pool.map(_run_seed_quietly, seeds, [args.iterations] * len(seeds)))
        ceiling_s = time.perf_counter() - started
        ceiling_rate = _rate(len(seeds), ceiling_s)
        print(
            f"  (c) {workers} plain processes, no Spark          {ceiling_rate:9.1f} seeds/min  "
            f"({ceiling_s:.1f} s; {ceiling_rate / seq_rate:.2f}x: this machine's ceiling now)"
        )

    out = tempfile.mkdtemp(prefix="bench-campaign-")
    try:
        session_started = time.perf_counter()
        with spark_session("hadoop-qjm bench campaign", args.master) as spark:
            start_s = time.perf_counter() - session_started
            # A session's first job starts the Python workers, imports the package in
            # each and warms the JVM: paid once per session, whatever the seed count.
            warm_started = time.perf_counter()
            run_campaign(spark, WARM_UP_SEEDS, os.path.join(out, "warm-up"), iterations=2)
            warm_s = time.perf_counter() - warm_started
            campaign_started = time.perf_counter()
            report = run_campaign(
                spark,
                seeds,
                os.path.join(out, "campaign"),
                iterations=args.iterations,
                partitions=args.partitions,
            )
            campaign_s = time.perf_counter() - campaign_started
            rows = spark.read.parquet(os.path.join(out, "campaign", "results")).collect()
            master = spark.sparkContext.master
        cold_s = time.perf_counter() - session_started
    finally:
        shutil.rmtree(out, ignore_errors=True)
    campaign_rate = _rate(len(seeds), campaign_s)
    print(
        f"  (b) campaign on {master:<26} {campaign_rate:9.1f} seeds/min  ({campaign_s:.1f} s; "
        f"task time {report.totals['task_seconds']:.1f} s)"
    )
    print(
        f"      counting the session's start and first job "
        f"{_rate(len(seeds), cold_s):6.1f} seeds/min  ({cold_s:.1f} s: start {start_s:.1f} s, "
        f"first job {warm_s:.1f} s)"
    )
    ratio = campaign_rate / seq_rate
    print(f"  speed-up (b)/(a)                          {ratio:9.2f}x  {_verdict(ratio)}")
    ratio_cold = _rate(len(seeds), cold_s) / seq_rate
    print(f"  speed-up counting start and first job     {ratio_cold:9.2f}x  {_verdict(ratio_cold)}")
    campaign = {row["seed"]: tuple(row[name] for name in SAME) for row in rows}
    same = campaign == sequential
    print(f"  per-seed results identical in (a) and (b): {'yes' if same else 'NO'}")
    for seed in [s for s in seeds if campaign.get(s) != sequential[s]][:5]:
        differ = [
            f"{name} {a!r} / {b!r}"
            for name, a, b in zip(SAME, sequential[seed], campaign.get(seed, (None,) * len(SAME)))
            if a != b
        ]
        print(f"    seed {seed}: {'; '.join(differ)}")
    if ceiling_rate is not None:
        print(f"  campaign / plain processes                {campaign_rate / ceiling_rate:9.2f}")
    for row in report.failed + report.unexpected:
        print(f"  seed {row['seed']} {row['status']}: {(row['first_failure'] or '')[:150]}")
    return 0 if same else 1
