"""The randomized fault test with JournalNode set changes (randomized_membership.py).

Five nodes; writers replace one of three, grow 3 → 5 and shrink 5 → 3 while the
faults of the plain harness hit nodes of the old set, the new set and both, and
writers configured with the set from before the last switch take over; the
invariants are the plain harness's. A planted bug (a joint call done once the
new set alone has it) is caught with a replay command.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from collections.abc import Iterable
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

#: The sweeps: short seeds (10 writers), writers beginning switches more often than in the
#: long runs, so that short seeds switch at all.
SWEEP_WRITERS = 10
SWEEP_SWITCH_PROBABILITY = 0.5
#: The default run's sweep: the first seeds of SWEEP_SEEDS, enough that their traces hold
#: every item of SWEEP_COVERS (test_a_sweep_of_short_seeds_covers_every_switch_and_fault
#: checks it; if the traces change and it fails, take more seeds). About 0.2-0.7 s a seed.
DEFAULT_SWEEP_SEEDS = range(10_000, 10_030)
#: The slow sweep: as many of SWEEP_SEEDS as fit in SWEEP_BUDGET_S over one process per
#: core (each seed about 0.1-0.25 s of one core: on an idle 2-core machine some 2,000 of the
#: 5,000 per run; the range is larger than a budget can use, so a faster machine runs more).
SWEEP_SEEDS = range(10_000, 15_000)
SWEEP_BUDGET_S = 130.0
SWEEP_MIN_SEEDS = 50
#: The first sweep seed that finds the planted bug (search again if the traces change).
SWEEP_BUG_SEED = 10_039

#: What a sweep's traces must hold, as (name, pattern of one trace line). The switch
#: kinds and the points a switch passes or stops at; the faults of the plain harness.
SWEEP_COVERS = {
    "switch: replace one of three": r"writer \d+: switch (jn\d ?){3} -> (jn\d ?){3}$",
    "switch: grow 3 -> 5": r"writer \d+: switch (jn\d ?){3} -> (jn\d ?){5}$",
    "switch: shrink 5 -> 3": r"writer \d+: switch (jn\d ?){5} -> (jn\d ?){3}$",
    "beginning a switch fails": r"beginning the switch failed",
    "finishing a switch fails": r"finishing the switch failed",
    "a switch not finished: the journal stays on": r"not finishing the switch: .* stays on",
    "finished on three nodes": r"the journal is now on (jn\d ?){3}$",
    "finished on five nodes": r"the journal is now on (jn\d ?){5}$",
    "the syncers copy history to the new set": r"^jn\d syncs edits_",
    "recovery of an in-progress segment": r"accept_recovery\(.*inprogress",
    "fault: a node down": r"^jn\d is down$",
    "fault: a node restarts": r"^jn\d restarts$",
    "fault: a node cut off from a writer": r"^jn\d is cut off from writer \d+$",
    "fault: the writer crashes between calls": r"^writer \d+ crashes$",
    "fault: an injected IOException": r"Injected - faking fault",
    "fault: a bit flip in a segment": r"bit flip in jn\d",
}


def _sweep_covers(trace: Iterable[str]) -> set[str]:
    """The items of SWEEP_COVERS that ``trace`` holds, and two read from its order: a
    writer configured with the set from before the last switch, and a switch finished by a
    later writer than the one that began it (having adopted O+N in its recovery)."""
    found: set[str] = set()
    members = begun_by = None
    for line in trace:
        found.update(name for name, pattern in SWEEP_COVERS.items() if re.search(pattern, line))
        if m := re.match(r"writer (\d+): switch ", line):
            begun_by = m.group(1)
        elif m := re.match(r"writer (\d+): the journal is now on (.*)$", line):
            if m.group(1) != begun_by:
                found.add("finished by a later writer")
            members = m.group(2)
        elif m := re.match(r"writer \d+ is configured with (.*)$", line):
            if members is not None and m.group(1) != members:
                found.add("a writer configured with the previous set")
    return found


def _describe(result: SeedResult) -> str:
    return (
        f"seed {result.seed} failed after {result.writers} writers: {result.first_failure}\n"
        f"replay: {result.replay_command}\n--- trace (tail) ---\n{result.log_excerpt}"
    )


@functools.cache
def _default_run(seed: int) -> SeedResult:
    """One seed of the default run (SEEDS, ITERATIONS), run once per process: several
    tests judge the same runs."""
    return run_seed(seed, ITERATIONS, membership=True)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("seed", SEEDS)
def test_randomized_with_set_changes(seed: int) -> None:
    result = _default_run(seed)
    assert result.passed, _describe(result)
    assert result.writers == ITERATIONS and result.txns_acknowledged > 0
    assert result.switches[0] > 0, "no writer began a set change"


def _sweep_seed(
    seed: int, planted_bug: str | None = None, trace: list[str] | None = None
) -> SeedResult:
    return run_seed(
        seed,
        SWEEP_WRITERS,
        membership=True,
        switch_probability=SWEEP_SWITCH_PROBABILITY,
        planted_bug=planted_bug,
        trace=trace,
    )


def _check_sweep(results: list[SeedResult]) -> None:
    """Every failing seed is reported with its replay command (not only the first)."""
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
    assert begun > ran // 2 and finished > 0, (begun, finished)


@pytest.mark.timeout(120)
def test_a_sweep_of_short_seeds_covers_every_switch_and_fault() -> None:
    """The default run's sweep: DEFAULT_SWEEP_SEEDS, one after another in this process.
    Together their traces hold every switch kind (replace one, grow 3 -> 5, shrink 5 -> 3),
    every point a switch reaches (begun, begin failed, finished on three and on five
    nodes, finished by a later writer that adopted O+N, finishing failed, not finished as
    the journal stays on, history copied by the syncers first), writers configured with
    the previous set, and every fault kind (a node down, restarting, cut off from a writer,
    the writer crashing between calls, an injected IOException, a bit flip), as
    SWEEP_COVERS lists; and every seed passes. The budget sweep of thousands of seeds is
    test_a_sweep_of_short_seeds_within_a_budget (-m slow)."""
    results, covered = [], set()
    for seed in DEFAULT_SWEEP_SEEDS:
        trace: list[str] = []
        results.append(_sweep_seed(seed, trace=trace))
        covered |= _sweep_covers(trace)
    _check_sweep(results)
    wanted = {
        *SWEEP_COVERS,
        "finished by a later writer",
        "a writer configured with the previous set",
    }
    assert not wanted - covered, f"not in the traces of {DEFAULT_SWEEP_SEEDS}: {wanted - covered}"


@pytest.mark.timeout(10)
def test_the_sweep_coverage_check_sees_what_a_trace_lacks() -> None:
    trace = ["writer 0: switch jn0 jn1 jn2 -> jn0 jn1 jn2 jn3 jn4", "jn3 is down"]
    assert _sweep_covers(trace) == {"switch: grow 3 -> 5", "fault: a node down"}
    trace += [
        "writer 1: the journal is now on jn0 jn1 jn2 jn3 jn4",
        "writer 2 is configured with jn0 jn1 jn2",
    ]
    assert {"finished by a later writer", "a writer configured with the previous set"} <= (
        _sweep_covers(trace)
    )
    assert "finished by a later writer" not in _sweep_covers(
        [
            "writer 1: switch jn0 jn1 jn2 -> jn0 jn1 jn3",
            "writer 1: the journal is now on jn0 jn1 jn3",
        ]
    )


@pytest.mark.slow
@pytest.mark.timeout(SWEEP_BUDGET_S + 120)
def test_a_sweep_of_short_seeds_within_a_budget() -> None:
    """Thousands of short seeds, a search for new failures: as many of SWEEP_SEEDS as fit
    in the budget, over one process per core; every failing seed is reported with its
    replay command (not only the first)."""
    results = sweep_seeds(
        SWEEP_SEEDS,
        SWEEP_BUDGET_S,
        iterations=SWEEP_WRITERS,
        switch_probability=SWEEP_SWITCH_PROBABILITY,
    )
    _check_sweep(results)
    assert len(results) >= SWEEP_MIN_SEEDS, f"only {len(results)} seeds fit in {SWEEP_BUDGET_S}s"


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
    finished = sum(_default_run(s).switches[1] for s in SEEDS[:3])
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
    assert _default_run(NEW_SET_ALONE_BUG_SEED).passed
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
