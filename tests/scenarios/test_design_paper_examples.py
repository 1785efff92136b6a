"""The design paper's worked examples of log synchronization (§2.10.1–2.10.7).

Each test drives three real JournalNodes (a MiniJournalCluster in this process:
Thrift and HTTP on 127.0.0.1) into the state the paper's table shows, through
the protocol itself: writers are QuorumJournalManagers, and the faults are of
two kinds — a JournalNode stopped (and later restarted on the same ports and
directory), and a writer that "crashes before sending" a call to a chosen node
(:class:`CrashingChannel` fails that call without sending it). No state is
written to disk by hand — except in the last test, which plants §2.10.7's state
file by file as Hadoop's JournalNodes leave it, to show that a journal taken
over from Hadoop in the middle of a recovery recovers as our own does. A new writer then recovers, and the test asserts the
paper's outcome: the recovery source, the decided segment, which txids survive
and whose they are, that every acknowledged txid survives, and that every
finalized copy of a segment is byte-identical on every node holding it.

**The tables in the docstrings are checked.** :func:`assert_drawn` reads each
node's directory and compares it, cell by cell, with the table under the given
label, so a picture cannot drift from what the test builds. Columns:

* ``segments`` — the segment files from txid 101 on (every node also holds the
  finalized ``edits_1-100``, which the paper leaves out); ``(empty)`` marks an
  in-progress file holding no transaction; moved-aside files are not listed.
* ``last txid`` — the highest txid any of the node's segments holds.
* ``lastPromisedEpoch``, ``lastWriterEpoch`` — the files of the same names.
* ``acceptedInEpoch`` — the epoch of the accepted recovery in ``paxos/``.

The paper's JN1, JN2, JN3 are the cluster's nodes 0, 1, 2. Writer *k* holds
epoch *k* and logs ``MKDIR /w<k>/<txid>``, so the surviving ops tell whose they
are. Every writer's channel runs its calls in the writer's thread (a
DirectExecutor, as in Hadoop's TestQuorumJournalManager), JN1 first: no sleeps,
no races, one order.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, INVALID_TXID
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.file_journal_manager import (
    finalized_edits_file_name,
    inprogress_edits_file_name,
    match_edit_logs,
)
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp, edit_log_header, encode_op
from hadoop_qjm.qjournal.client.executors import DirectExecutor
from hadoop_qjm.qjournal.client.ipc_logger_channel import IPCLoggerChannel
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.client.quorum_output_stream import QuorumOutputStream
from hadoop_qjm.qjournal.client.segment_recovery_comparator import best_recovery_source
from hadoop_qjm.qjournal.protocol.exceptions import QuorumException
from hadoop_qjm.qjournal.protocol.messages import PersistedRecoveryPaxosData, SegmentState
from hadoop_qjm.qjournal.server.paxos_record import encode_paxos_record, read_paxos_record
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID
from tests.paxos_record_fixtures import HADOOP_RECORD_101_150_IN_EPOCH_2, old_json_record

pytestmark = pytest.mark.timeout(60)

JN1, JN2, JN3 = 0, 1, 2
NAMES = {JN1: "JN1", JN2: "JN2", JN3: "JN3"}
#: The tables show segments from this txid on.
TABLE_FROM_TXID = 101


# ---- a writer that crashes before sending a chosen call ----------------------------------------


@dataclasses.dataclass
class Call:
    method: str
    args: tuple[Any, ...]
    future: Future


def _crash_or_send(method: str) -> Callable[..., Future]:
    real = getattr(IPCLoggerChannel, method)

    def call(self: CrashingChannel, *args: Any) -> Future:
        if any(name == method and when(*args) for name, when in self.unsent):
            future: Future = Future()
            future.set_exception(
                IOException(f"writer crashed before sending {method}{args[:2]} to {self}")
            )
        else:
            future = real(self, *args)
        self.calls.append(Call(method, args, future))
        return future

    call.__name__ = method
    return call


class CrashingChannel(IPCLoggerChannel):
    """An IPCLoggerChannel running every call in the writer's thread; records each call
    and its answer, and fails (unsent) the calls :meth:`crash_before` names."""

    def __init__(self, conf, ns_info, journal_id, name_service_id, address) -> None:
        super().__init__(
            conf,
            ns_info,
            journal_id,
            address,
            name_service_id=name_service_id,
            executor=DirectExecutor(),
            parallel_executor=DirectExecutor(),
        )
        self.calls: list[Call] = []
        self.unsent: list[tuple[str, Callable[..., bool]]] = []

    def crash_before(self, method: str, when: Callable[..., bool] = lambda *args: True) -> None:
        """From now on, ``method`` calls whose arguments ``when`` accepts are never sent."""
        self.unsent.append((method, when))

    def calls_to(self, method: str) -> list[Call]:
        return [c for c in self.calls if c.method == method]

    #: Every call a recovery makes (a node cut off from the writer misses all of them).
    RECOVERY_CALLS = (
        "get_journal_state",
        "new_epoch",
        "prepare_recovery",
        "accept_recovery",
        "finalize_log_segment",
    )

    get_journal_state = _crash_or_send("get_journal_state")
    new_epoch = _crash_or_send("new_epoch")
    start_log_segment = _crash_or_send("start_log_segment")
    send_edits = _crash_or_send("send_edits")
    finalize_log_segment = _crash_or_send("finalize_log_segment")
    prepare_recovery = _crash_or_send("prepare_recovery")
    accept_recovery = _crash_or_send("accept_recovery")


def batch_from(txid: int) -> Callable[..., bool]:
    """``when`` for send_edits: the batches starting at ``txid`` or later."""
    return lambda segment_txid, first_txid, num_txns, data: first_txid >= txid


def finalize_of(start: int, end: int) -> Callable[..., bool]:
    return lambda first, last: (first, last) == (start, end)


# ---- the journals' state, as the paper draws it ------------------------------------------------


def _short_name(log) -> str:
    if log.is_in_progress:
        return f"edits_inprogress_{log.first_txid}"
    return f"edits_{log.first_txid}-{log.last_txid}"


def journal_row(cluster: MiniJournalCluster, i: int) -> tuple[str, ...]:
    """Node ``i``'s row, read from its directory (running or stopped)."""
    current = cluster.current_dir(i, JID)
    segments, last = [], 0
    for log in sorted(match_edit_logs(current), key=lambda log: log.first_txid):
        if log.is_in_progress:
            log.scan_log()
        empty = log.last_txid == INVALID_TXID
        if not empty:
            last = max(last, log.last_txid)
        if log.first_txid >= TABLE_FROM_TXID:
            segments.append(_short_name(log) + (" (empty)" if empty else ""))

    def epoch_file(name: str) -> str:
        path = current / name
        return path.read_text().strip() if path.exists() else "0"

    paxos_dir = current / "paxos"
    accepted = [
        read_paxos_record(p)
        for p in sorted(paxos_dir.iterdir() if paxos_dir.is_dir() else [])
        if p.name.isdigit()
    ]
    return (
        NAMES[i],
        " ".join(segments) or "-",
        str(last),
        epoch_file("last-promised-epoch"),
        epoch_file("last-writer-epoch"),
        " ".join(str(a.accepted_in_epoch) for a in accepted) or "-",
    )


def _cells(line: str) -> tuple[str, ...]:
    return tuple(" ".join(cell.split()) for cell in line.split("|"))


def drawn_table(doc: str, label: str) -> list[tuple[str, ...]]:
    """The rows (``JN…`` lines) of the table after the line ``label`` in ``doc``."""
    lines = [line.strip() for line in doc.splitlines()]
    try:
        at = lines.index(label)
    except ValueError:
        raise AssertionError(f"no table labelled {label!r} in the docstring") from None
    rows = []
    for line in lines[at + 1 :]:
        cells = _cells(line)
        if not rows and (cells[0] in ("", "JN") or set(line) <= set("-+")):
            continue  # blank lines, the header and its rule
        if not re.fullmatch(r"JN\d+", cells[0]):
            break
        rows.append(cells)
    if not rows:
        raise AssertionError(f"the table labelled {label!r} has no rows")
    return rows


def assert_drawn(cluster: MiniJournalCluster, test: Callable[..., Any], label: str) -> None:
    """Every node's state is exactly the docstring table of ``test`` under ``label``."""
    if test.__doc__ is None:
        pytest.skip("docstrings stripped (python -OO): the drawn tables cannot be checked")
    drawn = drawn_table(test.__doc__, label)
    actual = [journal_row(cluster, i) for i in range(cluster.num_journal_nodes)]
    if drawn != actual:
        render = "\n".join(" | ".join(row) for row in actual)
        pytest.fail(f"state differs from the table {label!r}; on disk:\n{render}")


# ---- one scenario: the cluster, its writers, what they were told ---------------------------------


@dataclasses.dataclass(frozen=True)
class Decision:
    """What a recovery decided: the source node and the segment it made everyone accept."""

    source: int
    segment: SegmentState


class Scenario:
    """The cluster, the writers made so far (closed at the end), and every txn a write
    quorum acknowledged to any of them."""

    def __init__(self, cluster: MiniJournalCluster, conf: Configuration) -> None:
        self.cluster = cluster
        self.conf = conf
        #: txid -> path of every txn a write quorum acknowledged, whoever wrote it.
        self.acked: dict[int, str] = {}
        self._qjms: list[QuorumJournalManager] = []

    def writer(self) -> QuorumJournalManager:
        qjm = QuorumJournalManager(
            self.conf,
            self.cluster.quorum_journal_uri(JID),
            FAKE_NSINFO,
            logger_factory=CrashingChannel,
        )
        self._qjms.append(qjm)
        return qjm

    @staticmethod
    def channel(qjm: QuorumJournalManager, i: int) -> CrashingChannel:
        return qjm.loggers.loggers[i]  # type: ignore[return-value]

    def write(self, qjm: QuorumJournalManager, stm: QuorumOutputStream, first: int, n: int) -> None:
        """One batch of MKDIR ``/w<epoch>/<txid>``; recorded as acknowledged if flush returns."""
        ops = {txid: f"/w{qjm.loggers.epoch}/{txid}" for txid in range(first, first + n)}
        for txid, path in ops.items():
            stm.write(MkdirOp.create(txid, path))
        stm.set_ready_to_flush()
        stm.flush()
        for txid, path in ops.items():
            old = self.acked.setdefault(txid, path)
            assert old == path, f"txid {txid} acknowledged as {old} and as {path}"

    def write_segment(self, qjm: QuorumJournalManager, first: int, n: int) -> None:
        """A whole segment in one batch, finalized."""
        stm = qjm.start_log_segment(first, CURRENT_LAYOUT_VERSION)
        self.write(qjm, stm, first, n)
        stm.close()
        qjm.finalize_log_segment(first, first + n - 1)

    def crash(self, qjm: QuorumJournalManager, stm: QuorumOutputStream | None = None) -> None:
        """The writer dies: nothing more is sent, nothing is cleaned up."""
        if stm is not None:
            stm.abort()
        qjm.close()

    def first_writer(self) -> QuorumJournalManager:
        """Writer 1 (epoch 1): format, recover, and edits_1-100 finalized on every node."""
        qjm = self.writer()
        qjm.format(FAKE_NSINFO)
        qjm.recover_unfinalized_segments()
        assert qjm.loggers.epoch == 1
        self.write_segment(qjm, 1, 100)
        return qjm

    def recover(self, without: int | None = None) -> tuple[QuorumJournalManager, Decision | None]:
        """A new writer recovers with node ``without`` stopped; what did it decide?"""
        if without is not None:
            self.cluster.stop_journal_node(without)
        qjm = self.writer()
        qjm.recover_unfinalized_segments()
        return qjm, self.decision(qjm)

    def decision(self, qjm: QuorumJournalManager) -> Decision | None:
        accepts = [
            call
            for i in range(self.cluster.num_journal_nodes)
            for call in self.channel(qjm, i).calls_to("accept_recovery")
        ]
        if not accepts:
            return None
        segment, url = accepts[0].args
        assert all(c.args == (segment, url) for c in accepts), "one value proposed to all"
        port = urlsplit(url).port
        return Decision(self.cluster.http_ports.index(port), segment)

    def restart_stopped(self) -> None:
        for i in range(self.cluster.num_journal_nodes):
            if not self.cluster.is_running(i):
                self.cluster.restart_journal_node(i)

    # ---- the paper's checks ----------------------------------------------------------------
    def read_log(self) -> dict[int, str]:
        """Every finalized txn a reader sees (over HTTP, from any nodes), txid -> path."""
        reader = self.writer()
        log: dict[int, str] = {}
        streams = reader.select_input_streams(1, in_progress_ok=False)
        try:
            for stream in streams:
                while (op := stream.read_op()) is not None:
                    assert op.txid == len(log) + 1, f"read txid {op.txid} after {len(log)}"
                    log[op.txid] = op.path
        finally:
            for stream in streams:
                stream.close()
        return log

    def finalized_file(self, i: int, first_txid: int) -> Path:
        (log,) = [
            log
            for log in match_edit_logs(self.cluster.current_dir(i, JID))
            if log.first_txid == first_txid and not log.is_in_progress
        ]
        return log.path

    def finalized_copies(self, first_txid: int) -> dict[int, tuple[str, bytes]]:
        """node -> (file name, bytes) of its finalized segment starting at ``first_txid``."""
        copies = {}
        for i in range(self.cluster.num_journal_nodes):
            for log in match_edit_logs(self.cluster.current_dir(i, JID)):
                if log.first_txid == first_txid and not log.is_in_progress:
                    copies[i] = (log.name, log.path.read_bytes())
        return copies

    def assert_finalized_identical(self) -> None:
        """Every finalized segment has one name and one content on every node holding it."""
        starts = {
            log.first_txid
            for i in range(self.cluster.num_journal_nodes)
            for log in match_edit_logs(self.cluster.current_dir(i, JID))
            if not log.is_in_progress
        }
        for start in starts:
            copies = self.finalized_copies(start)
            assert len(set(copies.values())) == 1, (
                f"finalized copies of segment {start} differ: "
                + ", ".join(
                    f"{NAMES[i]}: {name} ({len(data)} bytes)" for i, (name, data) in copies.items()
                )
            )

    def finish(self, qjm: QuorumJournalManager, expected: dict[int, str]) -> None:
        """§2.6: the new writer goes on from the recovered end; then check the whole log.

        The stopped nodes come back, the writer logs one more segment, and a reader
        must see exactly ``expected`` plus that segment: every acknowledged txid with
        the content that was acknowledged, nothing else; all finalized copies equal.
        """
        self.restart_stopped()
        end = max(expected)
        self.write_segment(qjm, end + 1, 3)
        expected = {
            **expected,
            **{t: f"/w{qjm.loggers.epoch}/{t}" for t in range(end + 1, end + 4)},
        }
        log = self.read_log()
        assert log == expected
        assert {t: log.get(t) for t in self.acked} == self.acked, "an acknowledged txn was lost"
        self.assert_finalized_identical()

    def close(self) -> None:
        for qjm in reversed(self._qjms):
            qjm.close()


def writer1_ops(first: int, last: int) -> dict[int, str]:
    return {t: f"/w1/{t}" for t in range(first, last + 1)}


@pytest.fixture
def cluster() -> Iterator[MiniJournalCluster]:
    with MiniJournalCluster(3, conf=Configuration()) as c:
        yield c


@pytest.fixture
def s(cluster) -> Iterator[Scenario]:
    scenario = Scenario(cluster, Configuration())
    try:
        yield scenario
    finally:
        scenario.close()


WITHOUT = pytest.mark.parametrize(
    "without", [None, JN1, JN2, JN3], ids=["all-JNs", "without-JN1", "without-JN2", "without-JN3"]
)


# ---- §2.10.1 -------------------------------------------------------------------------------------


@WITHOUT
def test_2_10_1_inconsistency_in_middle_of_log_prior_quorum_succeeded(
    s: Scenario, without: int | None
) -> None:
    """§2.10.1: writer 1 sent the batch 151-153 to JN2 and JN3, then crashed before
    sending it to JN1. A quorum acknowledged 153, so every recovery — whichever node
    is missing — must decide 153, from JN2 or JN3 (equal maxSeenEpoch: rule 3c); JN1,
    when present, downloads the segment.

    After writer 1 crashed:

        JN  | segments             | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+----------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_inprogress_101 | 150       | 1                 | 1               | -
        JN2 | edits_inprogress_101 | 153       | 1                 | 1               | -
        JN3 | edits_inprogress_101 | 153       | 1                 | 1               | -

    After writer 2 recovered with all three nodes:

        JN  | segments             | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+----------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_101-153        | 153       | 2                 | 1               | -
        JN2 | edits_101-153        | 153       | 2                 | 1               | -
        JN3 | edits_101-153        | 153       | 2                 | 1               | -
    """
    w1 = s.first_writer()
    stm = w1.start_log_segment(101, CURRENT_LAYOUT_VERSION)
    s.write(w1, stm, 101, 50)
    s.channel(w1, JN1).crash_before("send_edits", batch_from(151))
    s.write(w1, stm, 151, 3)  # acknowledged by JN2 and JN3
    s.crash(w1, stm)
    assert_drawn(
        s.cluster,
        test_2_10_1_inconsistency_in_middle_of_log_prior_quorum_succeeded,
        "After writer 1 crashed:",
    )

    w2, decision = s.recover(without)

    assert decision is not None
    assert decision.segment == SegmentState(101, 153, True)
    assert decision.source in {JN2, JN3} - {without}
    if without is None:
        assert_drawn(
            s.cluster,
            test_2_10_1_inconsistency_in_middle_of_log_prior_quorum_succeeded,
            "After writer 2 recovered with all three nodes:",
        )
    assert set(s.finalized_copies(101)) == {JN1, JN2, JN3} - {without}
    s.finish(w2, writer1_ops(1, 153))


# ---- §2.10.2 -------------------------------------------------------------------------------------


def setup_150_153_125(s: Scenario) -> None:
    """Writer 1 leaves JN1 at 150, JN2 at 153 (unacknowledged 151-153), JN3 at 125."""
    w1 = s.first_writer()
    stm = w1.start_log_segment(101, CURRENT_LAYOUT_VERSION)
    s.write(w1, stm, 101, 25)
    s.channel(w1, JN3).crash_before("send_edits", batch_from(126))  # JN3 is slow, lags behind
    s.write(w1, stm, 126, 25)  # acknowledged by JN1 and JN2
    s.channel(w1, JN1).crash_before("send_edits", batch_from(151))
    with pytest.raises(QuorumException, match="too many exceptions to achieve quorum size 2/3"):
        s.write(w1, stm, 151, 3)  # reaches JN2 only: not acknowledged
    s.crash(w1, stm)


@pytest.mark.parametrize(
    ("without", "source", "end"),
    [(None, JN2, 153), (JN3, JN2, 153), (JN2, JN1, 150), (JN1, JN2, 153)],
    ids=["all-JNs", "saw-JN1-JN2", "saw-JN1-JN3", "saw-JN2-JN3"],
)
def test_2_10_2_inconsistency_in_middle_of_log_prior_quorum_failed(
    s: Scenario, without: int | None, source: int, end: int
) -> None:
    """§2.10.2: writer 1 sent the batch 151-153 to JN2 only, then crashed; JN3 had been
    slow for a while. 150 and 153 are both correct (150 is on a quorum, 153 was never
    acknowledged); 125 is not, and no quorum can choose it. By rule 3c: seeing JN1 and
    JN2 → 153, JN1 and JN3 → 150, JN2 and JN3 → 153.

    After writer 1 crashed:

        JN  | segments             | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+----------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_inprogress_101 | 150       | 1                 | 1               | -
        JN2 | edits_inprogress_101 | 153       | 1                 | 1               | -
        JN3 | edits_inprogress_101 | 125       | 1                 | 1               | -

    When JN2 is the one missing, its unacknowledged 151-153 stay behind in an
    in-progress file no reader selects, and writer 2's own 151-153 supersede them.

    After writer 2 recovered from JN1 and JN3 (JN2 stopped):

        JN  | segments             | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+----------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_101-150        | 150       | 2                 | 1               | -
        JN2 | edits_inprogress_101 | 153       | 1                 | 1               | -
        JN3 | edits_101-150        | 150       | 2                 | 1               | -
    """
    setup_150_153_125(s)
    assert_drawn(
        s.cluster,
        test_2_10_2_inconsistency_in_middle_of_log_prior_quorum_failed,
        "After writer 1 crashed:",
    )

    w2, decision = s.recover(without)

    assert decision == Decision(source, SegmentState(101, end, True))
    if without == JN2:
        assert_drawn(
            s.cluster,
            test_2_10_2_inconsistency_in_middle_of_log_prior_quorum_failed,
            "After writer 2 recovered from JN1 and JN3 (JN2 stopped):",
        )
    assert set(s.finalized_copies(101)) == {JN1, JN2, JN3} - {without}
    assert s.acked == writer1_ops(1, 150)
    s.finish(w2, writer1_ops(1, end))


# ---- §2.10.3 -------------------------------------------------------------------------------------


@WITHOUT
def test_2_10_3_inconsistency_finalizing_log_prior_quorum_succeeded(
    s: Scenario, without: int | None
) -> None:
    """§2.10.3: writer 1 finalized 101-150 on JN1 and JN2, then crashed before sending
    the finalize to JN3, which lagged at 145. Every quorum sees a finalized copy, the
    source by rule 2; JN3 (when present) is synchronized to 150.

    After writer 1 crashed:

        JN  | segments             | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+----------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_101-150        | 150       | 1                 | 1               | -
        JN2 | edits_101-150        | 150       | 1                 | 1               | -
        JN3 | edits_inprogress_101 | 145       | 1                 | 1               | -
    """
    w1 = s.first_writer()
    stm = w1.start_log_segment(101, CURRENT_LAYOUT_VERSION)
    s.write(w1, stm, 101, 45)
    s.channel(w1, JN3).crash_before("send_edits", batch_from(146))
    s.channel(w1, JN3).crash_before("finalize_log_segment", finalize_of(101, 150))
    s.write(w1, stm, 146, 5)
    stm.close()
    w1.finalize_log_segment(101, 150)  # a quorum finalized it
    s.crash(w1)
    assert_drawn(
        s.cluster,
        test_2_10_3_inconsistency_finalizing_log_prior_quorum_succeeded,
        "After writer 1 crashed:",
    )
    finalized_before = s.finalized_copies(101)

    w2, decision = s.recover(without)

    assert decision is not None
    assert decision.segment == SegmentState(101, 150, False)
    assert decision.source in {JN1, JN2} - {without}
    # The finalized copies were never touched; JN3's, if it took part, equals them.
    after = s.finalized_copies(101)
    assert set(after) == {JN1, JN2} | ({JN3} - {without})
    assert all(after[i] == finalized_before[i] for i in finalized_before)
    s.finish(w2, writer1_ops(1, 150))


# ---- §2.10.4 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("without", "source", "rule"),
    [(None, JN1, "2"), (JN1, JN2, "3c"), (JN2, JN1, "2"), (JN3, JN1, "2")],
    ids=["all-JNs", "without-JN1", "without-JN2", "without-JN3"],
)
def test_2_10_4_inconsistency_finalizing_log_prior_quorum_failed(
    s: Scenario, without: int | None, source: int, rule: str
) -> None:
    """§2.10.4: writer 1 sent finalizeLogSegment(101, 150) to JN1 only, then crashed.
    With JN1 in the quorum its finalized copy wins (rule 2); without it, JN2 beats JN3
    (rule 3c) — and JN2 has the full 150, since the writer had a quorum on the last
    edit before finalizing. Either way: 150.

    After writer 1 crashed:

        JN  | segments             | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+----------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_101-150        | 150       | 1                 | 1               | -
        JN2 | edits_inprogress_101 | 150       | 1                 | 1               | -
        JN3 | edits_inprogress_101 | 125       | 1                 | 1               | -
    """
    w1 = s.first_writer()
    stm = w1.start_log_segment(101, CURRENT_LAYOUT_VERSION)
    s.write(w1, stm, 101, 25)
    s.channel(w1, JN3).crash_before("send_edits", batch_from(126))
    s.write(w1, stm, 126, 25)
    stm.close()
    for node in (JN2, JN3):
        s.channel(w1, node).crash_before("finalize_log_segment", finalize_of(101, 150))
    with pytest.raises(QuorumException, match="too many exceptions to achieve quorum size 2/3"):
        w1.finalize_log_segment(101, 150)
    s.crash(w1)
    assert_drawn(
        s.cluster,
        test_2_10_4_inconsistency_finalizing_log_prior_quorum_failed,
        "After writer 1 crashed:",
    )

    w2, decision = s.recover(without)

    in_progress = rule == "3c"
    assert decision == Decision(source, SegmentState(101, 150, in_progress))
    assert set(s.finalized_copies(101)) == {JN1, JN2, JN3} - {without} | {JN1}
    s.finish(w2, writer1_ops(1, 150))


# ---- §2.10.5 -------------------------------------------------------------------------------------


def setup_start_151_on_jn1_only(s: Scenario) -> None:
    """101-150 finalized everywhere; startLogSegment(151) reached JN1 only."""
    w1 = s.first_writer()
    s.write_segment(w1, 101, 50)
    for node in (JN2, JN3):
        s.channel(w1, node).crash_before("start_log_segment")
    with pytest.raises(QuorumException, match="too many exceptions to achieve quorum size 2/3"):
        w1.start_log_segment(151, CURRENT_LAYOUT_VERSION)
    s.crash(w1)


# "cut-off": JN1 never sees the new writer's recovery, keeps its empty edits_inprogress_151
# and must still accept startLogSegment(151) (Hadoop refuses it: "seems to contain valid
# transactions"; we accept a 0-txn in-progress file, which holds nothing acknowledged).
@pytest.mark.parametrize("jn1", ["up", "restarted", "cut-off"])
def test_2_10_5_inconsistency_starting_log_prior_quorum_failed(s: Scenario, jn1: str) -> None:
    """§2.10.5: writer 1 sent startLogSegment(151) to JN1 only, then crashed. JN1's
    edits_inprogress_151 holds no transaction: JN1 moves it aside (``.empty``) when it
    scans its storage — at newEpoch, or on loading the journal after a restart — and
    then all three nodes are equal. Recovery decides the finalized 101-150 and no log
    data is transferred (every node's copy is the same file as before), and the next
    writer's startLogSegment(151) succeeds on all three.

    The paper's last sentence needs JN1 to have rescanned its storage. In the case
    ``cut-off`` JN1 stays up but writer 2's recovery never reaches it (a partition that
    heals once writer 2 has recovered from JN2 and JN3): JN1 keeps the empty file and
    refuses startLogSegment(151), so it sits out segment 151 (writes go on with JN2 and
    JN3). That case is an expected failure (strict): see its reason.

    After writer 1 crashed:

        JN  | segments                                   | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+--------------------------------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_101-150 edits_inprogress_151 (empty) | 150       | 1                 | 1               | -
        JN2 | edits_101-150                              | 150       | 1                 | 1               | -
        JN3 | edits_101-150                              | 150       | 1                 | 1               | -

    After writer 2 recovered (JN1 up or restarted):

        JN  | segments      | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+---------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_101-150 | 150       | 2                 | 1               | -
        JN2 | edits_101-150 | 150       | 2                 | 1               | -
        JN3 | edits_101-150 | 150       | 2                 | 1               | -
    """
    setup_start_151_on_jn1_only(s)
    test = test_2_10_5_inconsistency_starting_log_prior_quorum_failed
    assert_drawn(s.cluster, test, "After writer 1 crashed:")
    inodes = {i: os.stat(s.finalized_file(i, 101)).st_ino for i in range(3)}
    if jn1 == "restarted":
        s.cluster.restart_journal_node(JN1)

    w2 = s.writer()
    if jn1 == "cut-off":
        for method in CrashingChannel.RECOVERY_CALLS:
            s.channel(w2, JN1).crash_before(method)
    w2.recover_unfinalized_segments()
    s.channel(w2, JN1).unsent.clear()

    decision = s.decision(w2)
    assert decision is not None
    assert decision.segment == SegmentState(101, 150, False)
    if jn1 != "cut-off":
        assert_drawn(s.cluster, test, "After writer 2 recovered (JN1 up or restarted):")
        moved_aside = s.cluster.current_dir(JN1, JID) / "edits_inprogress_0000000000000000151.empty"
        assert moved_aside.exists()
    assert {i: os.stat(s.finalized_file(i, 101)).st_ino for i in range(3)} == inodes

    stm = w2.start_log_segment(151, CURRENT_LAYOUT_VERSION)
    for i in range(3):
        (start,) = s.channel(w2, i).calls_to("start_log_segment")
        assert start.future.exception() is None, f"{NAMES[i]}: {start.future.exception()}"
    s.write(w2, stm, 151, 3)
    stm.close()
    w2.finalize_log_segment(151, 153)
    assert set(s.finalized_copies(151)) == {JN1, JN2, JN3}
    s.finish(w2, {**writer1_ops(1, 150), **{t: f"/w2/{t}" for t in range(151, 154)}})


# ---- §2.10.6 -------------------------------------------------------------------------------------


@pytest.mark.parametrize("without", [None, JN3, JN2], ids=["all-JNs", "saw-JN1-JN2", "saw-JN1-JN3"])
def test_2_10_6_inconsistency_on_first_batch_prior_quorum_failed(
    s: Scenario, without: int | None
) -> None:
    """§2.10.6: segment 151 started on all three nodes, but its first batch 151-153
    reached JN1 only. Writer 2, seeing only JN2 and JN3 (their empty 151 moved aside at
    newEpoch), commits txn 151 in epoch 2. Writer 3 must then recover to writer 2's 151,
    not to JN1's longer 153: JN2's and JN3's lastWriterEpoch 2 beats JN1's 1 (rule 3b),
    whichever two nodes it sees, and JN1's 151-153 are replaced.

    The paper draws "-" for JN2's and JN3's segment 151: the next newEpoch there moves
    their empty file aside.

    After writer 1 crashed:

        JN  | segments                                   | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+--------------------------------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_101-150 edits_inprogress_151         | 153       | 1                 | 1               | -
        JN2 | edits_101-150 edits_inprogress_151 (empty) | 150       | 1                 | 1               | -
        JN3 | edits_101-150 edits_inprogress_151 (empty) | 150       | 1                 | 1               | -

    After writer 2 (epoch 2; JN1 stopped) committed txn 151 and crashed:

        JN  | segments                           | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+------------------------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_101-150 edits_inprogress_151 | 153       | 1                 | 1               | -
        JN2 | edits_101-150 edits_inprogress_151 | 151       | 2                 | 2               | -
        JN3 | edits_101-150 edits_inprogress_151 | 151       | 2                 | 2               | -

    After writer 3 recovered with all three nodes:

        JN  | segments                    | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+-----------------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_101-150 edits_151-151 | 151       | 3                 | 1               | -
        JN2 | edits_101-150 edits_151-151 | 151       | 3                 | 2               | -
        JN3 | edits_101-150 edits_151-151 | 151       | 3                 | 2               | -
    """
    test = test_2_10_6_inconsistency_on_first_batch_prior_quorum_failed
    w1 = s.first_writer()
    s.write_segment(w1, 101, 50)
    stm = w1.start_log_segment(151, CURRENT_LAYOUT_VERSION)
    for node in (JN2, JN3):
        s.channel(w1, node).crash_before("send_edits", batch_from(151))
    with pytest.raises(QuorumException, match="too many exceptions to achieve quorum size 2/3"):
        s.write(w1, stm, 151, 3)
    s.crash(w1, stm)
    assert_drawn(s.cluster, test, "After writer 1 crashed:")

    w2, decision = s.recover(without=JN1)
    assert decision == Decision(JN2, SegmentState(101, 150, False))  # nothing to change
    stm = w2.start_log_segment(151, CURRENT_LAYOUT_VERSION)
    s.write(w2, stm, 151, 1)  # acknowledged by JN2 and JN3
    s.crash(w2, stm)
    assert_drawn(
        s.cluster, test, "After writer 2 (epoch 2; JN1 stopped) committed txn 151 and crashed:"
    )

    s.cluster.restart_journal_node(JN1)
    w3, decision = s.recover(without)

    assert decision is not None
    assert decision.segment == SegmentState(151, 151, True)
    assert decision.source in {JN2, JN3} - {without}
    prepared = {
        i: s.channel(w3, i).calls_to("prepare_recovery") for i in {JN1, JN2, JN3} - {without}
    }
    jn1 = prepared[JN1][0].future.result()
    assert (jn1.segment_state, jn1.last_writer_epoch) == (SegmentState(151, 153, True), 1)
    if without is None:
        assert_drawn(s.cluster, test, "After writer 3 recovered with all three nodes:")
    assert set(s.finalized_copies(151)) == {JN1, JN2, JN3} - {without}
    assert s.acked == {**writer1_ops(1, 150), 151: "/w2/151"}
    s.finish(w3, {**writer1_ops(1, 150), 151: "/w2/151"})


# ---- §2.10.7 -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lost", "source", "rule"),
    [(JN3, JN1, "3b"), (JN1, JN3, "2"), (JN2, JN3, "2")],
    ids=["saw-JN1-JN2", "saw-JN2-JN3", "saw-JN1-JN3"],
)
def test_2_10_7_multiple_attempts_at_recovery_first_failed(
    s: Scenario, lost: int, source: int, rule: str
) -> None:
    """§2.10.7: the journals are left at 150, 153, 125 as in §2.10.2. Writer 2 recovers
    from JN1 and JN3 only (JN2 stopped), decides 150, has JN1 and JN3 accept it, and
    finalizes on JN3 but crashes before the finalize reaches JN1. Then JN3 is lost and
    JN2 returns: writer 3 sees JN1 and JN2. Without acceptedInEpoch it would pick JN2's
    longer 153, contradicting JN3's finalized 150; with it, JN1's maxSeenEpoch is 2
    against JN2's 1 (rule 3b), so JN1 is the source again and 150 is finalized on JN1
    and JN2, identical to JN3's copy. Had JN1 been lost instead (writer 3 sees JN2 and
    JN3), or JN2 stayed away (JN1 and JN3), JN3's finalized copy is the source by
    rule 2 — again 150, never JN2's 153.

    After writer 1 crashed:

        JN  | segments             | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+----------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_inprogress_101 | 150       | 1                 | 1               | -
        JN2 | edits_inprogress_101 | 153       | 1                 | 1               | -
        JN3 | edits_inprogress_101 | 125       | 1                 | 1               | -

    After writer 2's recovery crashed before finalizing on JN1:

        JN  | segments             | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+----------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_inprogress_101 | 150       | 2                 | 1               | 2
        JN2 | edits_inprogress_101 | 153       | 1                 | 1               | -
        JN3 | edits_101-150        | 150       | 2                 | 1               | -

    After writer 3 recovered from JN1 and JN2 (JN3 stopped):

        JN  | segments             | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+----------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_101-150        | 150       | 3                 | 1               | -
        JN2 | edits_101-150        | 150       | 3                 | 1               | -
        JN3 | edits_101-150        | 150       | 2                 | 1               | -
    """
    test = test_2_10_7_multiple_attempts_at_recovery_first_failed
    setup_150_153_125(s)
    assert_drawn(s.cluster, test, "After writer 1 crashed:")

    s.cluster.stop_journal_node(JN2)
    w2 = s.writer()
    s.channel(w2, JN1).crash_before("finalize_log_segment")
    with pytest.raises(QuorumException, match="too many exceptions to achieve quorum size 2/3"):
        w2.recover_unfinalized_segments()
    assert s.decision(w2) == Decision(JN1, SegmentState(101, 150, True))
    s.crash(w2)
    assert_drawn(s.cluster, test, "After writer 2's recovery crashed before finalizing on JN1:")
    jn3_copy = s.finalized_copies(101)[JN3]

    s.cluster.restart_journal_node(JN2)
    w3, decision = s.recover(without=lost)

    seen = {JN1, JN2, JN3} - {lost}
    prepared = {i: s.channel(w3, i).calls_to("prepare_recovery")[0].future.result() for i in seen}
    expected_answers = {
        JN1: (SegmentState(101, 150, True), 2),
        JN2: (SegmentState(101, 153, True), None),
        JN3: (SegmentState(101, 150, False), None),
    }
    assert {i: (r.segment_state, r.accepted_in_epoch) for i, r in prepared.items()} == {
        i: expected_answers[i] for i in seen
    }
    assert decision == Decision(source, SegmentState(101, 150, rule == "3b"))
    if rule == "3b":
        # The paper's counterfactual: ignoring acceptedInEpoch, JN2's longer log would win.
        forgetful = {i: dataclasses.replace(r, accepted_in_epoch=None) for i, r in prepared.items()}
        assert best_recovery_source(forgetful.items())[0] == JN2
        assert_drawn(s.cluster, test, "After writer 3 recovered from JN1 and JN2 (JN3 stopped):")
    assert s.finalized_copies(101) == {i: jn3_copy for i in seen | {JN3}}
    s.finish(w3, writer1_ops(1, 150))


# ---- §2.10.7, taken over from Hadoop in the middle of the recovery --------------------------------


def _segment_bytes(first: int, last: int, padding: int = 0) -> bytes:
    """Writer 1's MKDIR /w1/<txid> ops ``first``..``last`` in a segment file (0xFF padding
    after them, as the writer's preallocation leaves an in-progress file)."""
    ops = b"".join(encode_op(MkdirOp.create(t, f"/w1/{t}")) for t in range(first, last + 1))
    return edit_log_header(CURRENT_LAYOUT_VERSION) + ops + b"\xff" * padding


# VERSION as Hadoop's JournalNode writes it (Properties.store, Hashtable order), for FAKE_NSINFO.
HADOOP_VERSION = (
    "#Tue Sep 11 14:08:51 PDT 2012\n"
    f"namespaceID={FAKE_NSINFO.namespace_id}\n"
    f"clusterID={FAKE_NSINFO.cluster_id}\n"
    "cTime=0\n"
    "storageType=JOURNAL_NODE\n"
    f"layoutVersion={CURRENT_LAYOUT_VERSION}\n"
)


def plant_2_10_7_after_writer_2(base: Path, jn1_record: bytes) -> None:
    """The three journal directories as Hadoop's JournalNodes leave them when writer 2
    (epoch 2) has had JN1 and JN3 accept 101-150 and finalized it on JN3 only; JN1's
    paxos/101 is ``jn1_record``. Every file is written here, byte by byte."""
    one_mib = 1 << 20
    nodes = {
        # node: (last-promised-epoch, committed-txid, segments from 101 on)
        JN1: (2, 125, {inprogress_edits_file_name(101): _segment_bytes(101, 150, one_mib)}),
        JN2: (1, 150, {inprogress_edits_file_name(101): _segment_bytes(101, 153, one_mib)}),
        JN3: (2, 100, {finalized_edits_file_name(101, 150): _segment_bytes(101, 150)}),
    }
    for i, (promised, committed, segments) in nodes.items():
        current = base / f"journalnode-{i}" / JID / "current"
        (current / "paxos").mkdir(parents=True)
        (current / "VERSION").write_text(HADOOP_VERSION, "ascii")
        (current / "last-promised-epoch").write_text(f"{promised}\n", "ascii")
        (current / "last-writer-epoch").write_text("1\n", "ascii")
        (current / "committed-txid").write_bytes(committed.to_bytes(8, "big"))
        (current / finalized_edits_file_name(1, 100)).write_bytes(_segment_bytes(1, 100))
        for name, data in segments.items():
            (current / name).write_bytes(data)
    (base / f"journalnode-{JN1}" / JID / "current" / "paxos" / "101").write_bytes(jn1_record)


#: JN1's copy up to its last txn: the md5 our records carry.
JN1_MD5 = hashlib.md5(_segment_bytes(101, 150)).hexdigest()
PLANTED_RECORDS = {
    "hadoop": HADOOP_RECORD_101_150_IN_EPOCH_2,  # literal bytes: tests/paxos_record_fixtures.py
    "ours": encode_paxos_record(
        PersistedRecoveryPaxosData(SegmentState(101, 150, True, JN1_MD5), 2)
    ),
    "old-json": old_json_record(101, 150, True, 2, JN1_MD5),
}


@pytest.mark.parametrize("record", sorted(PLANTED_RECORDS))
def test_2_10_7_taken_over_from_hadoop_in_the_middle_of_the_recovery(
    tmp_path: Path, record: str
) -> None:
    """§2.10.7 from writer 3 on, over journal directories Hadoop's JournalNodes left: the
    state is planted by hand, file by file, in Hadoop's layout, JN1's paxos/101 being the
    record Hadoop writes (``hadoop``: no md5), ours (``ours``: with the md5 as field 1000)
    or our old JSON (``old-json``). Whatever the record's form, writer 3 — seeing JN1 and
    JN2, JN3 lost — takes JN1's accepted 150 (maxSeenEpoch 2 beats JN2's 1, rule 3b), not
    JN2's longer 153, and 101-150 is finalized on JN1 and JN2, byte-identical to JN3's.

    Planted:

        JN  | segments             | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+----------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_inprogress_101 | 150       | 2                 | 1               | 2
        JN2 | edits_inprogress_101 | 153       | 1                 | 1               | -
        JN3 | edits_101-150        | 150       | 2                 | 1               | -

    After writer 3 recovered from JN1 and JN2 (JN3 stopped):

        JN  | segments             | last txid | lastPromisedEpoch | lastWriterEpoch | acceptedInEpoch
        ----+----------------------+-----------+-------------------+-----------------+----------------
        JN1 | edits_101-150        | 150       | 3                 | 1               | -
        JN2 | edits_101-150        | 150       | 3                 | 1               | -
        JN3 | edits_101-150        | 150       | 2                 | 1               | -
    """
    test = test_2_10_7_taken_over_from_hadoop_in_the_middle_of_the_recovery
    plant_2_10_7_after_writer_2(tmp_path, PLANTED_RECORDS[record])
    jn3_copy = (finalized_edits_file_name(101, 150), _segment_bytes(101, 150))
    with MiniJournalCluster(3, tmp_path, Configuration()) as cluster:
        s = Scenario(cluster, Configuration())
        try:
            assert_drawn(cluster, test, "Planted:")
            assert s.finalized_copies(101) == {JN3: jn3_copy}

            w3, decision = s.recover(without=JN3)

            prepared = {
                i: s.channel(w3, i).calls_to("prepare_recovery")[0].future.result()
                for i in (JN1, JN2)
            }
            jn1, jn2 = prepared[JN1], prepared[JN2]
            assert (jn1.segment_state, jn1.accepted_in_epoch) == (SegmentState(101, 150, True), 2)
            assert (jn2.segment_state, jn2.accepted_in_epoch) == (
                SegmentState(101, 153, True),
                None,
            )
            # Whatever the record held, JN1 reports its copy's md5 (the unknown-md5 rule).
            assert jn1.segment_state.md5 == JN1_MD5
            assert decision == Decision(JN1, SegmentState(101, 150, True))
            assert_drawn(cluster, test, "After writer 3 recovered from JN1 and JN2 (JN3 stopped):")
            assert s.finalized_copies(101) == {JN1: jn3_copy, JN2: jn3_copy, JN3: jn3_copy}
            s.finish(w3, writer1_ops(1, 150))
        finally:
            s.close()
