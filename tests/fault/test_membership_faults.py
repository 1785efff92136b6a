"""The randomized fault test with JournalNode set changes (randomized_membership.py).

Five nodes; writers replace one of three, grow 3 → 5 and shrink 5 → 3 while the
faults of the plain harness hit nodes of the old set, the new set and both, and
writers configured with the set from before the last switch take over; the
invariants are the plain harness's. A planted bug (a joint call done once the
new set alone has it) is caught with a replay command.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hadoop_qjm.testing.randomized import SeedResult, run_seed, sweep_seeds

PROJECT = Path(__file__).resolve().parents[2]

#: The default run's seeds and writers per seed (about 2 s a seed).
SEEDS = range(8)
ITERATIONS = 100
SLOW_SEEDS = range(100, 150)
SLOW_ITERATIONS = 500
#: The first seed (100 writers) that finds the planted bug; a change to the protocol or
#: the faults changes every trace: search again (the slow test) and update it.
NEW_SET_ALONE_BUG_SEED = 4
BUG = "joint-quorum-new-set-only"

#: The sweep: many short seeds, as many as fit in SWEEP_BUDGET_S over one process per core
#: (each seed about 0.1-0.25 s of one core: on an idle 2-core machine some 2,000 of the
#: 5,000 per run; the range is larger than a budget can use, so a faster machine runs more).
#: Writers begin switches more often than in the long runs, so that short seeds switch
#: at all.
SWEEP_SEEDS = range(10_000, 15_000)
SWEEP_WRITERS = 10
SWEEP_SWITCH_PROBABILITY = 0.5
SWEEP_BUDGET_S = 130.0
SWEEP_MIN_SEEDS = 50
#: The first sweep seed that finds the planted bug (search again if the traces change).
SWEEP_BUG_SEED = 10_039


def _describe(result: SeedResult) -> str:
    return (
        f"seed {result.seed} failed after {result.writers} writers: {result.first_failure}\n"
        f"replay: {result.replay_command}\n--- trace (tail) ---\n{result.log_excerpt}"
    )


@pytest.mark.timeout(60)
@pytest.mark.parametrize("seed", SEEDS)
def test_randomized_with_set_changes(seed: int) -> None:
    result = run_seed(seed, ITERATIONS, membership=True)
    assert result.passed, _describe(result)
    assert result.writers == ITERATIONS and result.txns_acknowledged > 0
    assert result.switches[0] > 0, "no writer began a set change"


def _sweep_seed(seed: int, planted_bug: str | None = None) -> SeedResult:
    return run_seed(
        seed,
        SWEEP_WRITERS,
        membership=True,
        switch_probability=SWEEP_SWITCH_PROBABILITY,
        planted_bug=planted_bug,
    )


@pytest.mark.timeout(SWEEP_BUDGET_S + 120)
def test_a_sweep_of_short_seeds_within_a_budget() -> None:
    """As many of SWEEP_SEEDS as fit in the budget, over one process per core; every
    failing seed is reported with its replay command (not only the first)."""
    results = sweep_seeds(
        SWEEP_SEEDS,
        SWEEP_BUDGET_S,
        iterations=SWEEP_WRITERS,
        switch_probability=SWEEP_SWITCH_PROBABILITY,
    )
    ran = len(results)
    begun = sum(r.switches[0] for r in results)
    finished = sum(r.switches[1] for r in results)
    failures = [
        f"{r.replay_command}\n    {r.first_failure}"
        for r in sorted(results, key=lambda r: r.seed)
        if not r.passed
    ]
    print(
        f"sweep: {ran} seeds x {SWEEP_WRITERS} writers, {begun} switches begun, {finished} finished"
    )
    assert not failures, f"{len(failures)} of {ran} seeds failed:\n" + "\n".join(failures)
    assert ran >= SWEEP_MIN_SEEDS, f"only {ran} seeds fit in {SWEEP_BUDGET_S}s"
    assert begun > ran // 2 and finished > 0, (begun, finished)


@pytest.mark.timeout(60)
def test_the_sweep_finds_the_new_set_deciding_alone() -> None:
    found = _sweep_seed(SWEEP_BUG_SEED, BUG)
    assert not found.passed, f"the planted bug went unnoticed; search again: {_describe(found)}"
    assert _sweep_seed(SWEEP_BUG_SEED).passed
    assert f"--switch-probability {SWEEP_SWITCH_PROBABILITY}" in found.replay_command


@pytest.mark.timeout(90)
def test_seed_193_a_history_check_on_no_answers() -> None:
    """Found by the sweep of seeds 100-219: the history check passed with every node
    down (tests/integration/test_journal_set_change.py has the scenario)."""
    result = run_seed(193, 200, membership=True)
    assert result.passed, _describe(result)


@pytest.mark.timeout(60)
def test_the_default_run_finishes_set_changes() -> None:
    """Across the default run's seeds, switches do finish (not only begin): the runs
    cover writers on the new set and writers following records to it."""
    finished = sum(run_seed(s, ITERATIONS, membership=True).switches[1] for s in SEEDS[:3])
    assert finished >= 3


@pytest.mark.timeout(60)
def test_same_seed_same_trace() -> None:
    first: list[str] = []
    second: list[str] = []
    a = run_seed(3, 40, membership=True, trace=first)
    b = run_seed(3, 40, membership=True, trace=second)
    assert first == second and a.trace_digest == b.trace_digest


@pytest.mark.timeout(120)
def test_harness_finds_the_new_set_deciding_alone() -> None:
    result = run_seed(NEW_SET_ALONE_BUG_SEED, ITERATIONS, planted_bug=BUG, membership=True)
    assert not result.passed, f"the planted bug went unnoticed; search again: {_describe(result)}"
    assert run_seed(NEW_SET_ALONE_BUG_SEED, ITERATIONS, membership=True).passed
    assert result.replay_command.endswith(f"--membership --planted-bug {BUG}")
    argv = result.replay_command.split()[1:]  # "python" -> this interpreter
    replay = subprocess.run(
        [sys.executable, *argv, "--tail", "5"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert f"first failure: {result.first_failure}" in replay.stdout


@pytest.mark.timeout(30)
def test_the_bug_needs_set_changes() -> None:
    with pytest.raises(ValueError, match="needs --membership"):
        run_seed(1, 1, planted_bug=BUG)


@pytest.mark.slow
@pytest.mark.timeout(3600)
@pytest.mark.parametrize("seed", SLOW_SEEDS)
def test_randomized_with_set_changes_long(seed: int) -> None:
    result = run_seed(seed, SLOW_ITERATIONS, membership=True)
    assert result.passed, _describe(result)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_the_bug_seed_is_the_first_that_finds_it() -> None:
    for seed in range(200):
        result = run_seed(seed, ITERATIONS, planted_bug=BUG, membership=True)
        if not result.passed and run_seed(seed, ITERATIONS, membership=True).passed:
            assert seed == NEW_SET_ALONE_BUG_SEED, "update NEW_SET_ALONE_BUG_SEED"
            return
    pytest.fail("no seed in range(200) found the planted bug")
