"""The fault campaign on Spark: 20 seeds pass on local[2]; the same seeds give the same
per-seed results in separate executor processes (local-cluster); a planted bug is caught
and its replay command reproduces it without Spark; the grep stage flags what the quorum
hid."""

from __future__ import annotations

import io
import os
import re
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from hadoop_qjm.spark.campaign_tasks import TASK_FIELDS, run_one_seed  # noqa: E402
from hadoop_qjm.spark.fault_campaign import grep_stage, run_campaign  # noqa: E402

PROJECT = Path(__file__).resolve().parents[2]
#: Seed 4's trace holds a JournalNode's traceback (file paths that differ between a
#: checkout and the zip an executor imports): the digest must not depend on them.
SEEDS = list(range(20))
ITERATIONS = 8
#: Per-seed figures that depend only on the seed (not the timings, not the executor).
SAME = (
    "seed",
    "passed",
    "writers",
    "txns_acknowledged",
    "recoveries",
    "faults_injected",
    "first_failure",
    "trace_digest",
    "status",
)


@pytest.mark.timeout(180)
def test_progress_moves_with_each_seed_not_each_task(spark, tmp_path):
    # One task runs all four seeds: its accumulators reach the driver once, at its end.
    stream = io.StringIO()
    report = run_campaign(
        spark,
        [0, 1, 2, 3],
        str(tmp_path / "out"),
        iterations=ITERATIONS,
        partitions=1,
        progress_interval_s=0.05,
        progress_stream=stream,
    )
    assert report.ok, report.summary
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()  # not a terminal: plain lines
    counts = [int(re.match(r"fault-campaign: (\d+)/4 seeds \(", line)[1]) for line in lines]
    assert any(0 < n < 4 for n in counts), lines
    assert counts == sorted(counts)
    assert re.fullmatch(r"fault-campaign: 4/4 seeds \(100%\), .*, in \d+s, 0 failed", lines[-1])


def _per_seed(spark, out: Path) -> dict[int, tuple]:
    rows = spark.read.parquet(str(out / "results")).collect()
    return {row["seed"]: tuple(row[name] for name in SAME) for row in rows}


@pytest.fixture(scope="module")
def local_campaign(spark, tmp_path_factory):
    out = tmp_path_factory.mktemp("campaign") / "out"
    report = run_campaign(spark, SEEDS, str(out), iterations=ITERATIONS)
    return report, out


def test_twenty_seeds_pass_on_local2(spark, local_campaign):
    report, out = local_campaign
    assert report.ok, report.summary
    assert (report.seeds, report.passed) == (20, 20)
    assert report.totals["writers"] == 20 * ITERATIONS
    assert report.totals["faults_injected"] > 0
    per_seed = _per_seed(spark, out)
    assert sorted(per_seed) == SEEDS
    assert all(row[SAME.index("status")] == "passed" for row in per_seed.values())
    # The executors' rows are the ones this process computes for the same seeds.
    for seed in (0, 4, 19):
        row = run_one_seed(seed, ITERATIONS)
        assert per_seed[seed][:-1] == tuple(row[name] for name in SAME[:-1])
    summary = (out / "summary.txt").read_text()
    assert "passed 20, failed 0" in summary
    # Every task's whole log is kept, as the paper's streaming job kept them on HDFS.
    logs = spark.read.parquet(str(out / "tasks")).select("seed", "log").collect()
    assert len(logs) == 20 and all(row["log"].startswith(f"seed {row['seed']}") for row in logs)


@pytest.mark.timeout(180)
def test_the_command_names_its_seeds_and_refuses_a_used_out_dir(spark, tmp_path, capsys):
    """``hdfs-py fault-campaign`` itself (in the running session): the seed range on stderr
    before it runs, the summary on stdout; a second run into the same ``--out`` refused."""
    from hadoop_qjm.spark.fault_campaign import run

    out = tmp_path / "out"
    args = ["--seeds", "2", "--first-seed", "0", "--iterations", "3", "--out", str(out),
            "--progress-interval", "0"]  # fmt: skip
    assert run(args) == 0
    captured = capsys.readouterr()
    assert "fault-campaign: seeds 0..1" in captured.err.splitlines()
    assert "passed 2, failed 0" in captured.out
    assert captured.out.endswith(f"summary: {out}/summary.txt\n")
    assert run(args) == 1
    captured = capsys.readouterr()
    refused = f"fault-campaign: {out} exists and is not empty (use --overwrite)"
    assert captured.err.splitlines() == [refused] and captured.out == ""


def _java_processes_with(marker: str) -> list[int]:
    import psutil

    found = []
    for proc in psutil.process_iter(["pid", "name"]):
        try:
            if proc.info["name"] == "java" and proc.environ().get("QJM_SPARK_TEST") == marker:
                found.append(proc.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_same_per_seed_results_in_separate_executor_processes(spark, local_campaign, tmp_path):
    """local-cluster[2,1,1024]: two worker JVMs, each with its own Python workers, in a
    separate driver process (one SparkContext per process): nothing may depend on the
    driver's state."""
    _, local_out = local_campaign
    out = tmp_path / "out"
    marker = uuid.uuid4().hex
    env = dict(os.environ, QJM_SPARK_TEST=marker)
    cmd = [
        sys.executable, "-m", "hadoop_qjm.cli", "fault-campaign",
        "--seeds", str(len(SEEDS)), "--first-seed", str(SEEDS[0]),
        "--iterations", str(ITERATIONS), "--master", "local-cluster[2,1,1024]",
        "--out", str(out), "--progress-interval", "0",
    ]  # fmt: skip
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=280)
    try:
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "passed 20, failed 0" in proc.stdout
        assert _per_seed(spark, out) == _per_seed(spark, local_out)
        executors = {row["executor"] for row in spark.read.parquet(str(out / "results")).collect()}
        assert all(not e.endswith(f":{os.getpid()}") for e in executors)
    finally:
        # The driver JVM and both worker JVMs must be gone with the driver.
        deadline = time.monotonic() + 30
        while _java_processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.5)
        stray = _java_processes_with(marker)
        assert not stray, f"stray JVMs left by the local-cluster run: {stray}"


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_spark_submit_runs_a_job_on_its_own_master(tmp_path):
    """The spark-submit line of docs/spark.md: spark-submit chooses the master."""
    from pyspark.find_spark_home import _find_spark_home

    submit = Path(_find_spark_home()) / "bin" / "spark-submit"
    script = subprocess.run(
        [sys.executable, "-m", "hadoop_qjm.spark.submit", "--path"],
        capture_output=True, text=True, check=True, timeout=60,
    ).stdout.strip()  # fmt: skip
    out = tmp_path / "out"
    marker = uuid.uuid4().hex
    env = dict(os.environ, QJM_SPARK_TEST=marker, PYSPARK_PYTHON=sys.executable)
    cmd = [
        str(submit), "--master", "local[2]", "--conf", "spark.ui.enabled=false",
        "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
        script, "fault-campaign", "--seeds", "4", "--first-seed", "0", "--iterations", "5",
        "--out", str(out), "--progress-interval", "0",
    ]  # fmt: skip
    try:
        proc = subprocess.run(
            cmd, env=env, capture_output=True, text=True, timeout=280, cwd=tmp_path
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr[-3000:]
        assert "passed 4, failed 0" in proc.stdout and "master local[2]" in proc.stdout
    finally:
        deadline = time.monotonic() + 30
        while _java_processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not _java_processes_with(marker)


@pytest.mark.timeout(180)
def test_planted_bug_is_caught_and_its_replay_command_reproduces_it(spark, tmp_path):
    # The QJM issue's broken rules: "ack-before-write" (a JournalNode acknowledging
    # before it writes) fails most seeds within a few writers; the rarer
    # "comparator-ignores-writer-epoch" needs hundreds of seeds of hundreds of writers.
    bug = "ack-before-write"
    report = run_campaign(spark, range(20), str(tmp_path / "out"), iterations=8, planted_bug=bug)
    assert not report.ok
    assert report.failed, report.summary
    row = report.failed[0]
    assert row["replay_command"] in report.summary
    assert f"--planted-bug {bug}" in row["replay_command"]
    argv = shlex.split(row["replay_command"])
    assert argv[:3] == ["python", "-m", "hadoop_qjm.testing.randomized"]
    assert f"seed {row['seed']}: FAILED" in replay_fails(argv)


@pytest.mark.slow
@pytest.mark.timeout(240)
def test_the_campaign_runs_set_changes_and_catches_the_new_set_deciding_alone(spark, tmp_path):
    bug = "joint-quorum-new-set-only"
    report = run_campaign(
        spark, range(3, 6), str(tmp_path / "out"), iterations=100, planted_bug=bug, membership=True
    )
    # Seeds 0-3 do not find it (tests/fault/test_membership_faults.py); 4 is the first.
    assert [row["seed"] for row in report.failed][:1] == [4], report.summary
    assert "JournalNode set changes" in report.summary
    argv = shlex.split(report.failed[0]["replay_command"])
    assert argv[-3:] == ["--membership", "--planted-bug", bug]
    assert f"seed {report.failed[0]['seed']}: FAILED" in replay_fails(argv)


@pytest.mark.timeout(180)
def test_short_set_change_seeds_pass_the_switch_probability_to_each_seed(spark, tmp_path):
    """The default run's sweep settings on Spark: 10 writers a seed beginning switches
    with probability 0.5; the sweep's bug seed (tests/fault/test_membership_faults.py)
    fails, the other passes, and the replay command carries the probability."""
    bug = "joint-quorum-new-set-only"
    report = run_campaign(
        spark,
        [10_038, 10_039],
        str(tmp_path / "out"),
        iterations=10,
        planted_bug=bug,
        membership=True,
        switch_probability=0.5,
    )
    assert [row["seed"] for row in report.failed] == [10_039], report.summary
    assert "(switch probability 0.5)" in report.summary
    argv = shlex.split(report.failed[0]["replay_command"])
    assert argv[-5:] == ["--membership", "--switch-probability", "0.5", "--planted-bug", bug]
    assert "seed 10039: FAILED" in replay_fails(argv)


def replay_fails(argv: list[str]) -> str:
    """Run a replay command (``python -m …``) with this interpreter; it must fail (exit 1).
    Its stdout."""
    replay = subprocess.run(
        [sys.executable, *argv[1:], "--tail", "5"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert replay.returncode == 1, replay.stdout + replay.stderr
    return replay.stdout


def test_grep_stage_flags_hidden_assertions_and_foreign_tracebacks(spark, tmp_path):
    """The paper's second job: a seed that passed but whose log shows an AssertionError
    (hidden by the quorum) or a non-injected traceback is marked."""
    names = [name for name, _ in TASK_FIELDS]
    injected = (
        'Traceback (most recent call last):\n  File "x.py", line 1\nIOException: Injected - down'
    )
    foreign = "Traceback (most recent call last):\n  File \"x.py\", line 1\nKeyError: 'epoch'"
    logs = {
        1: "seed 1\npassed",
        2: "seed 2\njn1 journal(...) -> HadoopAssertionError: bad txid\npassed",
        3: f"seed 3\npassed\nWARNING hadoop_qjm.x: failed\n{injected}",
        4: f"seed 4\npassed\nERROR hadoop_qjm.x: boom\n{foreign}",
    }
    rows = []
    for seed, log in logs.items():
        row = dict.fromkeys(names)
        row.update(seed=seed, passed=True, writers=1, txns_acknowledged=1, recoveries=1,
                   faults_injected=0, duration_s=0.1, log=log, replay_command=f"replay {seed}",
                   iterations=1, transport="local", executor="x")  # fmt: skip
        rows.append(tuple(row[name] for name in names))
    schema = ", ".join(f"{name} {kind}" for name, kind in TASK_FIELDS)
    tasks = str(tmp_path / "tasks")
    spark.createDataFrame(rows, schema).write.parquet(tasks)
    grep_stage(spark, tasks, str(tmp_path / "results"), files=1, mode="errorifexists")
    results = {r["seed"]: r for r in spark.read.parquet(str(tmp_path / "results")).collect()}
    assert {seed: r["status"] for seed, r in results.items()} == {
        1: "passed",
        2: "unexpected",
        3: "passed",
        4: "unexpected",
    }
    assert results[4]["unexpected"] == ["traceback: KeyError: 'epoch'"]
    assert "log" not in results[1].asDict()
