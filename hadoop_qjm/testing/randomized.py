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
import contextlib
import hashlib
import logging
import os
import random
import shutil
import sys
import tempfile
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import always_assert
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.file_journal_manager import EDITS_REGEX
from hadoop_qjm.namenode.fs_edit_log_op import MkdirOp, encode_op
from hadoop_qjm.qjournal.client import segment_recovery_comparator
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.protocol.messages import PersistedRecoveryPaxosData, RequestInfo
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.testing.faults import (
    FaultInjectingProxy,
    FaultProbabilities,
    PaxosCrashInjector,
    RandomFaults,
    is_injected,
    thrift_logger_factory,
)
from hadoop_qjm.testing.invariants import FinalizedSegmentChecker
from hadoop_qjm.testing.local_transport import LocalJournalCluster
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    close_streams,
    flip_byte_in_op,
    op_offsets,
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
]

#: Writers per seed by default (Hadoop runs 500).
DEFAULT_ITERATIONS = 300
SEGMENTS_PER_WRITER = 2
TXNS_PER_SEGMENT = 4
#: Purge what is older than this many txns behind the writer (every tenth writer).
PURGE_KEEP = 100
NUM_NODES = 3
#: A read-back after a recovery re-reads this many txns before the last one read.
READBACK_OVERLAP = 2 * TXNS_PER_SEGMENT
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


class AckWithoutWriteJournal(Journal):
    """PLANTED BUG "ack-before-write": checks the writer's epoch, then acknowledges
    a journal() batch without writing anything."""

    def journal(
        self, req: RequestInfo, segment_txid: int, first_txid: int, num_txns: int, records: bytes
    ) -> None:
        with self._lock:
            self._check_formatted()
            self._check_write_request(req)

    def journal_in_order(self, *args: Any) -> bool:
        return False  # every batch takes the broken journal() above


class HadoopPaxosRecordJournal(Journal):
    """A JournalNode whose paxos records are the ones Hadoop's JournalNode writes:
    the same bytes as ours less the md5 field (what a node taken over from Hadoop holds)."""

    def _persist_paxos_data(self, segment_txid: int, data: PersistedRecoveryPaxosData) -> None:
        without_md5 = replace(data.segment_state, md5=None)
        super()._persist_paxos_data(
            segment_txid, PersistedRecoveryPaxosData(without_md5, data.accepted_in_epoch)
        )


def hadoop_record_nodes(seed: int) -> tuple[int, ...]:
    """The nodes that write Hadoop's paxos records in ``seed``'s run: each with
    probability 1/2, from a stream of its own (the fault stream stays as it was)."""
    rng = random.Random(f"hadoop-paxos-records-{seed}")
    return tuple(n for n in range(NUM_NODES) if rng.random() < 0.5)


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


def _one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).strip().splitlines()]
    return f"{type(error).__name__}: {' | '.join(line for line in lines if line)}"


class _Run:
    """One seed's run: the cluster, the faults, the invariants' bookkeeping."""

    def __init__(
        self,
        seed: int,
        transport: str,
        work_dir: Path,
        planted_bug: str | None,
        probabilities: FaultProbabilities | None,
        trace: list[str],
        num_nodes: int = NUM_NODES,
        pipeline_depth: int = 1,
    ) -> None:
        self.trace = trace
        self.pipeline_depth = pipeline_depth
        self.ack_ahead = planted_bug == "pipeline-ack-ahead"
        self.num_nodes = num_nodes
        # Error messages name files; the run's directory differs from run to run.
        work_prefix = str(work_dir)

        def trace_line(line: str) -> None:
            trace.append(line.replace(work_prefix, "<dir>"))

        self.trace_line = trace_line
        self.conf = Configuration()
        # The harness flips bits itself and checks what the readers make of them; a
        # scrubber repairing them behind its back would spoil the bookkeeping.
        self.conf.set("dfs.journalnode.scrub.enabled", "false")
        self.conf.set("dfs.journalnode.kept-segment-state.enabled", "true")
        self.conf.set("dfs.journalnode.kept-segment-state.verify", "true")  # invariant 5
        self.paxos = PaxosCrashInjector()
        self.rng = random.Random(seed)
        restart: Callable[[int], None] | None = None
        self.hadoop_record_nodes: tuple[int, ...] = ()
        if transport == "local":
            self.hadoop_record_nodes = hadoop_record_nodes(seed)
            journal_classes: dict[int, type[Journal]] = dict.fromkeys(
                self.hadoop_record_nodes, HadoopPaxosRecordJournal
            )
            if planted_bug == "ack-before-write":
                journal_classes[0] = AckWithoutWriteJournal
                self.hadoop_record_nodes = tuple(n for n in self.hadoop_record_nodes if n)
            if self.hadoop_record_nodes:
                nodes = " ".join(f"jn{n}" for n in self.hadoop_record_nodes)
                trace_line(f"Hadoop's paxos records (no md5) on {nodes}")
            self.cluster: Any = LocalJournalCluster(
                num_nodes,
                work_dir,
                self.conf,
                fault_injector=self.paxos,
                journal_classes=journal_classes,
            )
            restart = self.cluster.crash_and_restart
            self.http_opener: Any = self.cluster.open_url
        elif transport == "thrift":
            if planted_bug == "ack-before-write":
                raise ValueError("the ack-before-write bug is planted in the local transport only")
            from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster

            self.cluster = MiniJournalCluster(
                NUM_NODES, work_dir, self.conf, node_kwargs={"fault_injector": self.paxos}
            )
            self.http_opener = None
        else:
            raise ValueError(f"transport must be 'local' or 'thrift', not {transport!r}")
        self.transport = transport
        self.faults = RandomFaults(
            self.rng,
            num_nodes,
            probabilities,
            paxos=self.paxos,
            restart=restart,
            trace=trace_line,
        )
        if transport == "local":
            self.faulty_factory = self.cluster.make_logger_factory(self._wrap)
            self.plain_factory = self.cluster.logger_factory
        else:
            addresses = [self.cluster.rpc_address(i) for i in range(NUM_NODES)]
            registry = CollectorRegistry()  # the channels' metrics stay out of the global one
            self.faulty_factory = thrift_logger_factory(
                addresses, self._wrap, metrics_registry=registry
            )
            self.plain_factory = thrift_logger_factory(addresses, metrics_registry=registry)
        self.uri = self.cluster.quorum_journal_uri(JID)
        # Invariant bookkeeping.
        self.last_acked = 0
        self.acked: dict[int, bytes] = {}  # txid -> the bytes of the acknowledged op
        self.decided: dict[int, bytes] = {}  # txid -> bytes once read back after a recovery
        self.purge_horizon = 0
        self.read_through = 0  # the last txid read back
        self.writers = 0
        self.recoveries = 0
        self.txns_acknowledged = 0
        # Bit rot (issue 27), drawn from its own RNG so the other faults of a seed stay
        # what they were: (node, file) -> offsets flipped; (file, txid) -> the damaged node.
        self.flip_rng = random.Random(seed * 7919 + 27)
        self.flips: dict[tuple[int, str], set[int]] = {}
        self.damaged: dict[tuple[str, int], int] = {}
        self.segments = FinalizedSegmentChecker(
            lambda: [self.cluster.current_dir(n, JID) for n in range(num_nodes)],
            lambda node, name: self.flips.get((node, name), ()),
        )

    def _wrap(self, node: int, proxy: Any) -> FaultInjectingProxy:
        return FaultInjectingProxy(proxy, node, self.faults)

    def _qjm(self, factory: Any) -> QuorumJournalManager:
        kwargs: dict[str, Any] = {"logger_factory": factory}
        if self.http_opener is not None:
            kwargs["http_opener"] = self.http_opener
        return QuorumJournalManager(self.conf, self.uri, FAKE_NSINFO, **kwargs)

    def close(self) -> None:
        self.cluster.shutdown()

    # ---- the workload ---------------------------------------------------------------------------
    def run(self, iterations: int) -> None:
        with self._qjm(self.plain_factory) as qjm:
            qjm.format(FAKE_NSINFO)
        self.trace_line("formatted")
        for i in range(iterations):
            self.writer(i)

    def writer(self, i: int) -> None:
        """Writer ``i`` takes over: recover, read back, maybe purge, write two segments."""
        self.writers += 1
        self.faults.start_writer(i)
        self.trace_line(f"--- writer {i}")
        self.maybe_flip_a_bit(i)
        qjm = self._qjm(self.faulty_factory)
        try:
            recovered = self.recover(i, qjm)
            if recovered is not None:
                txid = recovered + 1
                if txid > PURGE_KEEP and i % 10 == 1:
                    self.trace_line(f"writer {i}: purge older than {txid - PURGE_KEEP}")
                    qjm.purge_logs_older_than(txid - PURGE_KEEP)
                    self.purge_horizon = max(self.purge_horizon, txid - PURGE_KEEP)
                self.before_segments(i, qjm)
                written = 0
                for _ in range(SEGMENTS_PER_WRITER):
                    if not self.write_segment(i, qjm, txid):
                        break
                    txid += TXNS_PER_SEGMENT
                    written += 1
                if written == SEGMENTS_PER_WRITER:
                    self.after_segments(i, qjm)
        finally:
            qjm.close()
        self.check_disk(i)
        self.check_hidden_assertions()

    def before_segments(self, i: int, qjm: QuorumJournalManager) -> None:
        """Between recovery and the first segment (a membership run begins a switch)."""

    def after_segments(self, i: int, qjm: QuorumJournalManager) -> None:
        """After every segment was written (a membership run finishes a switch)."""

    def recover(self, i: int, qjm: QuorumJournalManager) -> int | None:
        """Recover and read back; the last txid a reader sees, None if a step failed."""
        try:
            qjm.recover_unfinalized_segments()
            streams = qjm.select_input_streams(0, in_progress_ok=False)
        except Exception as e:  # noqa: BLE001 - judged by the invariant
            self.check_failure(i, "recovery", e)
            return None
        # Every tenth writer re-reads everything from the purge horizon on;
        # the others what is new since the last read-back, and a little more.
        since = self.purge_horizon if i % 10 == 0 else self.read_through - READBACK_OVERLAP
        try:
            recovered = self.read_back(streams, max(since, self.purge_horizon))
        finally:
            close_streams(streams)
        self.recoveries += 1
        self.trace_line(f"writer {i}: epoch {qjm.loggers.epoch}, recovered through {recovered}")
        always_assert(
            recovered >= self.last_acked,
            f"writer {i} recovered only through txid {recovered} but txid {self.last_acked} "
            "had been acknowledged",
        )
        self.check_disk(i)
        return recovered

    def write_segment(self, i: int, qjm: QuorumJournalManager, first: int) -> bool:
        """Start, four single-txn flushes, close, finalize; False if a step failed.

        With ``pipeline_depth`` k > 1 the flushes are pipelined, as FSEditLog's syncs
        are: each batch is sent (``send_ready``) and acknowledged later, in txid order
        (``wait_sent``), with up to k sent and unacknowledged — so a fault may fall
        between two batches in flight, or on a batch with earlier ones unacknowledged.
        """
        txid = first
        in_flight: deque[tuple[int, bytes, Any]] = deque()
        try:
            stm = qjm.start_log_segment(first, CURRENT_LAYOUT_VERSION)
            for txid in range(first, first + TXNS_PER_SEGMENT):
                op = MkdirOp.create(txid, f"/w{i}/tx{txid}")
                stm.write(op)
                stm.set_ready_to_flush()
                if self.pipeline_depth == 1:
                    stm.flush()
                    self.acknowledged(i, txid, encode_op(op))
                    continue
                in_flight.append((txid, encode_op(op), stm.send_ready()))
                if self.ack_ahead and len(in_flight) > 1:
                    # PLANTED BUG "pipeline-ack-ahead": the newest batch is acknowledged
                    # as soon as it is sent, the older ones still unacknowledged.
                    newest, data, _ = in_flight[-1]
                    self.acknowledged(i, newest, data)
                if len(in_flight) == self.pipeline_depth:
                    self.acknowledge_oldest(i, stm, in_flight)
            while in_flight:
                self.acknowledge_oldest(i, stm, in_flight)
            stm.close()
            last = first + TXNS_PER_SEGMENT - 1
            qjm.finalize_log_segment(first, last)
            self.trace_line(f"writer {i}: finalized {first}-{last}")
        except Exception as e:  # noqa: BLE001 - judged by the invariant
            self.check_failure(i, f"writing txid {txid}", e)
            return False
        return True

    def acknowledge_oldest(
        self, i: int, stm: Any, in_flight: deque[tuple[int, bytes, Any]]
    ) -> None:
        """Wait until the oldest batch in flight is on a quorum, then acknowledge it."""
        txid, data, sent = in_flight[0]
        stm.wait_sent(sent)
        in_flight.popleft()
        self.acknowledged(i, txid, data)

    def maybe_flip_a_bit(self, i: int) -> None:
        """Bit rot in a finalized segment of one node (FaultProbabilities.bit_flip)."""
        rng = self.flip_rng
        if rng.random() >= self.faults.p.bit_flip:
            return
        node = rng.randrange(self.num_nodes)
        directory = self.cluster.current_dir(node, JID)
        try:
            names = sorted(n for n in os.listdir(directory) if EDITS_REGEX.fullmatch(n))
        except FileNotFoundError:
            return
        if len(names) < 2:
            return
        name = rng.choice(names[:-1])  # never the newest: a recovery may copy it
        if not all(
            (self.cluster.current_dir(n, JID) / name).exists() for n in range(self.num_nodes)
        ):
            return  # only where every node holds it: any two nodes then hold each op intact
        txid = rng.choice(sorted(op_offsets(directory / name)))
        if (name, txid) in self.damaged:
            return  # every op keeps an intact copy somewhere
        # Byte 12 of an op is the last byte of its txid: inside every op, covered by its CRC.
        offset = flip_byte_in_op(directory / name, txid, 12)
        self.damaged[(name, txid)] = node
        self.flips.setdefault((node, name), set()).add(offset)
        self.trace_line(f"writer {i}: bit flip in jn{node} {name} at txid {txid}")

    # ---- the invariants -------------------------------------------------------------------------
    def check_failure(self, i: int, step: str, error: BaseException) -> None:
        """Invariant 2: a step may fail only because of an injected fault."""
        self.trace_line(f"writer {i}: {step} failed: {_one_line(error)}")
        always_assert(
            is_injected(error),
            f"writer {i}: {step} failed with a non-injected error: {type(error).__name__}: {error}",
        )
        self.check_hidden_assertions()

    def check_hidden_assertions(self) -> None:
        always_assert(
            not self.faults.assertion_errors,
            f"a JournalNode raised an AssertionError: {self.faults.assertion_errors[:1]}",
        )

    def acknowledged(self, i: int, txid: int, data: bytes) -> None:
        """Invariant 4, at the ack: a txid is acknowledged with one content only."""
        previous = self.acked.get(txid, self.decided.get(txid))
        always_assert(
            previous is None or previous == data,
            f"writer {i}: txid {txid} acknowledged with new contents, but it was decided before",
        )
        self.acked[txid] = data
        self.last_acked = max(self.last_acked, txid)
        self.txns_acknowledged += 1
        self.trace_line(f"writer {i}: acked {txid}")

    def read_back(self, streams: list[Any], since: int) -> int:
        """Invariant 4, after a recovery: read the finalized edits; returns the last txid.

        Reads the segments holding ``since`` and later (the earlier ones are
        only listed). Below the purge horizon segments may be missing from
        some nodes; from it on the edits must be contiguous, and each txid's
        bytes must be the acknowledged ones and the same as every earlier read.
        """
        last = 0
        expected: int | None = None
        for stream in streams:
            always_assert(
                stream.first_txid > last,
                f"stream {stream} starts at {stream.first_txid}, not after {last}",
            )
            last = stream.last_txid
            if last < since:
                continue
            if expected is not None:
                always_assert(
                    stream.first_txid == expected,
                    f"gap in the finalized edits: {stream} starts at {stream.first_txid}, "
                    f"expected {expected}",
                )
            expected = stream.first_txid
            while (op := stream.read_op()) is not None:
                always_assert(op.txid == expected, f"read txid {op.txid}, expected {expected}")
                self.check_contents(op.txid, encode_op(op))
                expected += 1
            always_assert(
                expected == stream.last_txid + 1,
                f"{stream} ended at txid {expected - 1}, not {stream.last_txid}",
            )
        self.read_through = max(self.read_through, last)
        return last

    def check_contents(self, txid: int, data: bytes) -> None:
        acked = self.acked.get(txid)
        always_assert(
            acked is None or acked == data,
            f"txid {txid} was acknowledged as {acked!r} but reads back as {data!r}",
        )
        decided = self.decided.setdefault(txid, data)
        always_assert(
            decided == data, f"txid {txid} read back as {decided!r} before, now as {data!r}"
        )

    def check_disk(self, i: int) -> None:
        """Invariant 3: finalized segments of one first txid are byte-identical everywhere."""
        self.segments.check(f"after writer {i}: ")


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
    (pipelined syncs, :meth:`_Run.write_segment`; the "pipeline-ack-ahead" bug runs at
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
    run: _Run | None = None
    try:
        with _quiet_library_logs(quiet), _planted(planted_bug):
            run_class: Any = _Run
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
