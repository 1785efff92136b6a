"""One seed's run of the randomized fault test: the cluster, the writers and their faults,
the invariants' bookkeeping (:class:`SeedRun`); :func:`hadoop_qjm.testing.randomized.run_seed`
runs one and :mod:`hadoop_qjm.testing.randomized_membership` extends it with JournalNode
set changes. The invariants and the faults are described in :mod:`hadoop_qjm.testing.randomized`.
"""

from __future__ import annotations

import os
import random
from collections import deque
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import always_assert
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.file_journal_manager import EDITS_REGEX
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp, encode_op
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.protocol.messages import PersistedRecoveryPaxosData, RequestInfo
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.qjournal.server.paxos_record import write_paxos_record
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
    "NUM_NODES",
    "AckWithoutWriteJournal",
    "HadoopPaxosRecordJournal",
    "SeedRun",
    "hadoop_record_nodes",
    "one_line",
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


class AckWithoutWriteJournal(Journal):
    """PLANTED BUG "ack-before-write": checks the writer's epoch, then acknowledges
    a journal() batch without writing anything."""

    def journal(
        self, req: RequestInfo, segment_txid: int, first_txid: int, num_txns: int, records: bytes
    ) -> None:
        with self._lock:
            self._checks.check_formatted()
            self._checks.check_write_request(req)

    def journal_in_order(self, *args: Any) -> bool:
        return False  # every batch takes the broken journal() above


class HadoopPaxosRecordJournal(Journal):
    """A JournalNode whose paxos records are the ones Hadoop's JournalNode writes:
    the same bytes as ours less the md5 field (what a node taken over from Hadoop holds)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, write_paxos_record=_write_hadoop_paxos_record, **kwargs)


def _write_hadoop_paxos_record(path: Path, data: PersistedRecoveryPaxosData) -> None:
    without_md5 = replace(data.segment_state, md5=None)
    write_paxos_record(path, PersistedRecoveryPaxosData(without_md5, data.accepted_in_epoch))


def hadoop_record_nodes(seed: int) -> tuple[int, ...]:
    """The nodes that write Hadoop's paxos records in ``seed``'s run: each with
    probability 1/2, from a stream of its own (the fault stream stays as it was)."""
    rng = random.Random(f"hadoop-paxos-records-{seed}")
    return tuple(n for n in range(NUM_NODES) if rng.random() < 0.5)


def one_line(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).strip().splitlines()]
    return f"{type(error).__name__}: {' | '.join(line for line in lines if line)}"


class SeedRun:
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
        self.trace_line(f"writer {i}: {step} failed: {one_line(error)}")
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
