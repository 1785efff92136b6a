"""TestQJMWithFaults (HADOOP-QJM-DIGEST.md §8; design paper §7.3), on the local transport.

* :func:`test_recover_after_double_failures` — every pair of RPC indices.
* :func:`test_randomized` — ``run_seed`` over a fixed list of seeds; every
  failure prints the command that replays it.
* Determinism, the planted-bug self-test, the command line, and one run over
  real JournalNodes (loopback Thrift).

The default run is kept short; ``-m slow`` runs the long versions (more seeds,
more writers, the planted-bug searches from seed 0).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import always_assert
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.protocol.exceptions import QuorumException
from hadoop_qjm.testing.faults import RpcCounter, is_injected, wrap_with
from hadoop_qjm.testing.invariants import FinalizedSegmentChecker
from hadoop_qjm.testing.local_transport import LocalJournalCluster
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    create_txn_data,
    make_request,
    recover_and_return_last_txn,
    write_segment,
)
from hadoop_qjm.testing.randomized import (
    PLANTED_BUGS,
    HadoopPaxosRecordJournal,
    SeedResult,
    hadoop_record_nodes,
    main,
    run_seed,
)
from tests.paxos_record_fixtures import HADOOP_RECORD_4_4_IN_EPOCH_3

PROJECT = Path(__file__).resolve().parents[2]

#: The seeds of the default run, and the writers per seed (about 3 s a seed).
SEEDS = range(10)
ITERATIONS = 200
#: Seeds of the default run whose writers pipeline their syncs: up to 3 batches sent and
#: unacknowledged, so a fault falls between two batches in flight (issue 23).
PIPELINED_SEEDS = range(4)
PIPELINE_DEPTH = 3
PIPELINED_ITERATIONS = 100
#: Writers per seed in the planted-bug searches.
PLANTED_ITERATIONS = 100
#: The long run (``-m slow``).
SLOW_SEEDS = range(100, 150)
SLOW_ITERATIONS = 500


def _describe(result: SeedResult) -> str:
    return (
        f"seed {result.seed} failed after {result.writers} writers: {result.first_failure}\n"
        f"replay: {result.replay_command}\n--- trace (tail) ---\n{result.log_excerpt}"
    )


# ---- testRecoverAfterDoubleFailures --------------------------------------------------------------


def _workload(qjm: QuorumJournalManager) -> int:
    """Become the writer, write segments 1-3 and 4-6; the last acknowledged txid.

    A quorum failure ends the workload (it must be an injected one).
    """
    last_acked = 0
    try:
        qjm.recover_unfinalized_segments()
        write_segment(qjm, 1, 3, True)
        last_acked = 3
        write_segment(qjm, 4, 3, True)
        last_acked = 6
    except QuorumException as e:
        always_assert(is_injected(e), f"a non-injected failure: {e}")
    return last_acked


def _new_cluster(base: Path) -> LocalJournalCluster:
    cluster = LocalJournalCluster(3, base, Configuration())
    with cluster.qjm(JID, FAKE_NSINFO) as qjm:
        qjm.format(FAKE_NSINFO)  # before any fault, as Hadoop formats before arming them
    return cluster


def _max_ipc_number(base: Path) -> int:
    """Hadoop's determineMaxIpcNumber: the RPCs each node gets in a fault-free workload."""
    cluster = _new_cluster(base)
    try:
        counter = RpcCounter()
        with cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(counter)) as qjm:
            assert _workload(qjm) == 6
        counts = {counter.counts[i] for i in range(3)}
        assert len(counts) == 1, f"without faults every node gets the same RPCs: {counter.counts}"
        return counts.pop()
    finally:
        cluster.shutdown()


def _double_failure(base: Path, fail_a: int, fail_b: int) -> None:
    cluster = _new_cluster(base)
    try:
        counter = RpcCounter(fail_at={0: [fail_a], 1: [fail_b]})
        with cluster.qjm(JID, FAKE_NSINFO, wrap_proxy=wrap_with(counter)) as qjm:
            last_acked = _workload(qjm)
        assert not counter.assertion_errors, counter.assertion_errors
        with cluster.qjm(JID, FAKE_NSINFO) as qjm:
            recovered = recover_and_return_last_txn(qjm)
            assert recovered >= last_acked, f"recovered {recovered}, but {last_acked} was acked"
            write_segment(qjm, recovered + 1, 3, True)
        FinalizedSegmentChecker(lambda: [cluster.current_dir(i, JID) for i in range(3)]).check()
    finally:
        cluster.shutdown(delete_dirs=True)


@pytest.mark.timeout(60)
def test_recover_after_double_failures(fast_dir: Path) -> None:
    """Node 0 fails its a-th RPC and node 1 its b-th, for every (a, b); a new writer recovers.

    The failed call never reaches the node. The writer may lose its quorum;
    a new writer must then recover at least what was acknowledged, and write
    three more txns.
    """
    max_ipc = _max_ipc_number(fast_dir / "count")
    assert max_ipc == 8  # getJournalState, newEpoch, 2 x (start, journal, finalize)
    failures = []
    for fail_a in range(1, max_ipc + 1):
        for fail_b in range(1, max_ipc + 1):
            try:
                _double_failure(fast_dir / f"{fail_a}-{fail_b}", fail_a, fail_b)
            except AssertionError as e:
                failures.append(f"failing at ({fail_a}, {fail_b}): {e}")
    assert not failures, "\n".join(failures)


# ---- testRandomized --------------------------------------------------------------------------------


@pytest.mark.timeout(60)
@pytest.mark.parametrize("seed", SEEDS)
def test_randomized(seed: int) -> None:
    """Hadoop's testRandomized for one seed: every invariant holds after every step."""
    result = run_seed(seed, ITERATIONS)
    assert result.writers == ITERATIONS
    assert result.passed, _describe(result)
    assert result.hadoop_record_nodes == hadoop_record_nodes(seed)
    assert result.recoveries > 0 and result.txns_acknowledged > 0 and result.faults_injected > 0


@pytest.mark.timeout(60)
@pytest.mark.parametrize("seed", PIPELINED_SEEDS)
def test_randomized_with_pipelined_syncs(seed: int) -> None:
    """Writers with k > 1 batches in flight: the invariants are the same."""
    trace: list[str] = []
    result = run_seed(seed, PIPELINED_ITERATIONS, pipeline_depth=PIPELINE_DEPTH, trace=trace)
    assert result.passed, _describe(result)
    assert result.txns_acknowledged > 0 and result.faults_injected > 0
    assert result.replay_command.endswith(f"--pipeline-depth {PIPELINE_DEPTH}")
    # Some writer failed with batches still unacknowledged: a fault between two in flight.
    assert any("writing txid" in line and "failed" in line for line in trace), (
        "no write failed in this seed"
    )


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_randomized_long() -> None:
    """Many seeds with Hadoop-sized runs; reports every failing seed with its replay command."""
    failed = [
        _describe(result)
        for seed in SLOW_SEEDS
        if not (result := run_seed(seed, SLOW_ITERATIONS)).passed
    ]
    assert not failed, f"{len(failed)} of {len(SLOW_SEEDS)} seeds failed:\n\n" + "\n\n".join(failed)


def test_the_seeds_mix_hadoops_paxos_records_with_ours() -> None:
    """Across the default seeds, records with and without md5 meet: in some runs one or
    two nodes write Hadoop's records (no md5) and the others ours; some runs are all ours,
    some all Hadoop's."""
    counts = {len(hadoop_record_nodes(seed)) for seed in SEEDS}
    assert counts == {0, 1, 2, 3}
    assert hadoop_record_nodes(3) == hadoop_record_nodes(3) == (0, 2)


@pytest.mark.timeout(30)
def test_a_hadoop_record_node_writes_hadoops_bytes(tmp_path: Path) -> None:
    """The harness's Hadoop node writes exactly the record Hadoop writes (the literal
    fixture), and reports the unknown md5 as its copy's (the unknown-md5 rule)."""
    journal = HadoopPaxosRecordJournal(Configuration(), tmp_path / JID, JID)
    try:
        journal.format(FAKE_NSINFO)
        journal.new_epoch(FAKE_NSINFO, 1)
        journal.start_log_segment(make_request(1), 4, CURRENT_LAYOUT_VERSION)
        journal.journal(make_request(2), 4, 4, 1, create_txn_data(4, 1))
        journal.new_epoch(FAKE_NSINFO, 3)
        own = journal.prepare_recovery(make_request(1, epoch=3), 4).segment_state
        assert own is not None and own.md5 is not None
        journal.accept_recovery(make_request(2, epoch=3), own, "unused:")  # same copy: kept
        assert journal.storage.paxos_file(4).read_bytes() == HADOOP_RECORD_4_4_IN_EPOCH_3
        again = journal.prepare_recovery(make_request(3, epoch=3), 4)
        assert again.accepted_in_epoch == 3
        assert (again.segment_state, again.segment_state.md5) == (own, own.md5)
    finally:
        journal.close()


@pytest.mark.timeout(60)
def test_same_seed_same_trace() -> None:
    """A run is a pure function of its seed: same faults, same order, same trace."""
    first: list[str] = []
    second: list[str] = []
    a = run_seed(5, 40, trace=first)
    b = run_seed(5, 40, trace=second)
    assert first == second
    assert a.trace_digest == b.trace_digest
    assert (a.writers, a.recoveries, a.txns_acknowledged, a.faults_injected) == (
        b.writers,
        b.recoveries,
        b.txns_acknowledged,
        b.faults_injected,
    )
    other = run_seed(6, 40)
    assert other.trace_digest != a.trace_digest


# ---- the harness finds a planted bug ---------------------------------------------------------------


def _first_failing_seed(bug: str, iterations: int, seeds: range) -> SeedResult:
    """The first seed that fails with ``bug`` planted and passes without it."""
    for seed in seeds:
        result = run_seed(seed, iterations, planted_bug=bug)
        depth = result.pipeline_depth
        if not result.passed and run_seed(seed, iterations, pipeline_depth=depth).passed:
            return result
    pytest.fail(f"no seed in {seeds} found the planted bug {bug!r}")


def _replay(result: SeedResult) -> subprocess.CompletedProcess[str]:
    argv = result.replay_command.split()[1:]  # "python" -> this interpreter
    return subprocess.run(
        [sys.executable, *argv, "--tail", "5"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.timeout(120)
def test_harness_finds_a_journal_node_that_acks_before_writing() -> None:
    result = _first_failing_seed("ack-before-write", PLANTED_ITERATIONS, range(200))
    assert result.first_failure is not None
    replay = _replay(result)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert f"first failure: {result.first_failure}" in replay.stdout


#: The first seed (100 writers) that finds the planted comparator bug: the slow test
#: searches for it. A change to the protocol or the faults changes every trace, and so
#: this number: re-run that search and update it.
COMPARATOR_BUG_SEED = 49


@pytest.mark.timeout(120)
def test_harness_finds_a_comparator_that_ignores_the_writer_epoch() -> None:
    bug = "comparator-ignores-writer-epoch"
    result = run_seed(COMPARATOR_BUG_SEED, PLANTED_ITERATIONS, planted_bug=bug)
    assert not result.passed, f"the planted bug went unnoticed; search again: {_describe(result)}"
    assert run_seed(COMPARATOR_BUG_SEED, PLANTED_ITERATIONS).passed
    replay = _replay(result)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert f"first failure: {result.first_failure}" in replay.stdout


#: The first seed (100 writers, depth 3) that finds the planted pipeline bug.
PIPELINE_BUG_SEED = 0


@pytest.mark.timeout(120)
def test_harness_finds_a_writer_that_acknowledges_a_batch_ahead_of_the_older_ones() -> None:
    """Issue 23: acknowledging batch n+1 before batch n is on a quorum loses an
    acknowledged txn; the replay command (with its --pipeline-depth) shows it again."""
    bug = "pipeline-ack-ahead"
    result = run_seed(PIPELINE_BUG_SEED, PLANTED_ITERATIONS, planted_bug=bug)
    assert not result.passed, f"the planted bug went unnoticed; search again: {_describe(result)}"
    assert "had been acknowledged" in (result.first_failure or ""), result.first_failure
    assert result.replay_command.endswith(f"--pipeline-depth 3 --planted-bug {bug}")
    assert run_seed(PIPELINE_BUG_SEED, PLANTED_ITERATIONS, pipeline_depth=3).passed
    replay = _replay(result)
    assert replay.returncode == 1, replay.stdout + replay.stderr
    assert f"first failure: {result.first_failure}" in replay.stdout


#: The set-change bug needs five nodes and set changes (``--membership``): its search is
#: tests/fault/test_membership_faults.py::test_the_bug_seed_is_the_first_that_finds_it.
MEMBERSHIP_BUGS = {"joint-quorum-new-set-only"}


@pytest.mark.slow
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("bug", sorted(set(PLANTED_BUGS) - MEMBERSHIP_BUGS))
def test_harness_finds_each_planted_bug_among_the_first_200_seeds(bug: str) -> None:
    result = _first_failing_seed(bug, PLANTED_ITERATIONS, range(200))
    again = run_seed(result.seed, PLANTED_ITERATIONS, planted_bug=bug)
    assert (again.passed, again.first_failure) == (False, result.first_failure)
    if bug == "comparator-ignores-writer-epoch":
        assert result.seed == COMPARATOR_BUG_SEED, "update COMPARATOR_BUG_SEED"
    if bug == "pipeline-ack-ahead":
        assert result.seed == PIPELINE_BUG_SEED, "update PIPELINE_BUG_SEED"


@pytest.mark.timeout(120)
def test_harness_finds_a_kept_segment_state_whose_md5_is_not_moved(monkeypatch) -> None:
    """Invariant 5: a running md5 that misses the batches is caught at the next recovery."""
    from hadoop_qjm.qjournal.server import journal_write_path as write_path_module

    def planted(state, position, records, *_args):
        if position != state.valid_length:
            return None
        state.valid_length += len(records)  # the txid too, but not the md5
        return state

    monkeypatch.setattr(write_path_module, "after_append", planted)
    result = run_seed(1, 40)
    assert not result.passed
    assert "kept state" in (result.first_failure or ""), result.first_failure


def test_unknown_planted_bug_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown planted bug"):
        run_seed(1, 1, planted_bug="no-such-bug")


# ---- the command line and the Thrift transport -----------------------------------------------------


@pytest.mark.timeout(60)
def test_replay_command_prints_the_trace_and_the_result(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--seed", "3", "--iterations", "5"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "seed 3, 5 writers, transport local\n"
        "Hadoop's paxos records (no md5) on jn0 jn2\n"
        "formatted\n--- writer 0\n"
    )
    assert "seed 3: PASSED — 5 writers" in out


@pytest.mark.timeout(120)
def test_randomized_over_thrift_against_real_journal_nodes() -> None:
    """The same workload against a MiniJournalCluster: real Thrift, real HTTP, real threads."""
    result = run_seed(3, 15, transport="thrift")
    assert result.passed, _describe(result)
    assert result.writers == 15 and result.recoveries > 0 and result.faults_injected > 0
