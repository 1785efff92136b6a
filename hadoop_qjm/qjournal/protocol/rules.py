"""QJM's protocol rules as pure functions.

Each function decides; the caller (the Journal) persists and performs I/O.
Messages are Hadoop's, word for word where tests match them (two spaces in
"current writer epoch  " included), each ending in "; journal id: <jid>" as
Journal.java's do.

Pure: this module imports no socket, thread, Thrift or filesystem module
(STYLE.md habit 1; ``tests/unit/test_rules_purity.py`` checks it), so the
same code runs in the daemon, in the randomized harness and under
hypothesis.

References: HADOOP-QJM-DIGEST.md §2 ("checkRequest", "journal", "newEpoch",
"finalizeLogSegment"); the QJM design paper (HDFS-3077) §2.4–2.6 on epochs
and fencing; ZAB's invariant 25 ("a follower never accepts a proposal from
an older leader").
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import HadoopException, IllegalArgumentException, IOException
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalOutOfSyncException,
    SegmentMismatchException,
)

if TYPE_CHECKING:  # messages imports Thrift; rules only needs the type's fields
    from hadoop_qjm.qjournal.protocol.messages import RequestInfo, SegmentState

__all__ = [
    "INITIAL_IPC_SERIAL",
    "validate_journal_id",
    "majority",
    "EpochState",
    "EpochDecision",
    "check_request",
    "check_epoch",
    "check_ipc_serial",
    "check_committed_txid",
    "check_writer_epoch",
    "check_new_epoch",
    "BatchAction",
    "check_num_txns",
    "check_journal_batch",
    "is_in_order_batch",
    "request_numbers",
    "check_finalize_current",
    "rpc_readable_txn_count",
    "may_replace_in_progress_segment",
    "accepted_state_to_report",
]

#: ``currentEpochIpcSerial`` after a new promise: any serial (≥ 0) is accepted next.
INITIAL_IPC_SERIAL = -1


def _jid(journal_id: str) -> str:
    return f" ; journal id: {journal_id}"


def validate_journal_id(jid: object) -> str:
    """Check a journal id and return it (QuorumJournalManager.checkJournalId).

    Hadoop's rule: non-empty, no ``/``, not starting with ``.`` (so neither
    ``.`` nor ``..``). Ours adds: a ``str``, no NUL — the id names a
    directory under ``dfs.journalnode.edits.dir``, and a NUL would be
    truncated or rejected by the OS. The message starts with Hadoop's
    "bad journal id: ".
    """
    if not isinstance(jid, str):
        raise IllegalArgumentException(f"bad journal id: {'null' if jid is None else jid!r}")
    if not jid:
        raise IllegalArgumentException("bad journal id: ")
    if "/" in jid:
        raise IllegalArgumentException(f"bad journal id: {jid} (must not contain '/')")
    if jid.startswith("."):
        raise IllegalArgumentException(f"bad journal id: {jid} (must not start with '.')")
    if "\x00" in jid:
        raise IllegalArgumentException(f"bad journal id: {jid!r} (must not contain NUL)")
    return jid


def majority(n: int) -> int:
    """The quorum size for ``n`` JournalNodes: ``n // 2 + 1`` (AsyncLoggerSet.getMajoritySize)."""
    if n < 0:
        raise IllegalArgumentException(f"negative number of journals: {n}")
    return n // 2 + 1


# ------------------------------------------------------------- checkRequest


@dataclass(frozen=True)
class EpochState:
    """The part of a Journal's state that ``checkRequest`` reads and changes.

    ``last_promised_epoch`` and ``committed_txid`` are persisted (files
    ``last-promised-epoch`` and ``committed-txid``); ``ipc_serial`` is
    Journal.java's in-memory ``currentEpochIpcSerial``.
    """

    last_promised_epoch: int = 0
    ipc_serial: int = INITIAL_IPC_SERIAL
    committed_txid: int = INVALID_TXID


@dataclass(frozen=True)
class EpochDecision:
    """What ``checkRequest`` decided for one request.

    Apply the changes in field order, *then* raise ``error`` if set: Hadoop
    persists a higher promise before it checks the serial and the committed
    txid, so a request can fence older writers and still fail.

    * ``promise_epoch``: persist this as the new last promised epoch (and
      reset the serial, already reflected in ``ipc_serial``); ``None``: keep.
    * ``ipc_serial``: the new ``currentEpochIpcSerial``; ``None``: keep.
    * ``committed_txid``: persist this committed txid; ``None``: keep.
    * ``error``: the request is rejected with this exception.
    """

    promise_epoch: int | None = None
    ipc_serial: int | None = None
    committed_txid: int | None = None
    error: HadoopException | None = None

    def apply(self, state: EpochState) -> EpochState:
        """The state after the changes (whether or not the request is rejected)."""
        changes: dict[str, int] = {}
        if self.promise_epoch is not None:
            changes["last_promised_epoch"] = self.promise_epoch
            changes["ipc_serial"] = INITIAL_IPC_SERIAL
        if self.ipc_serial is not None:
            changes["ipc_serial"] = self.ipc_serial
        if self.committed_txid is not None:
            changes["committed_txid"] = self.committed_txid
        return replace(state, **changes)

    def raise_if_rejected(self) -> None:
        """Raise ``error``, if any (call after persisting the changes)."""
        if self.error is not None:
            raise self.error


def check_epoch(req_epoch: int, last_promised_epoch: int, journal_id: str) -> int | None:
    """checkRequest step 1–2 (digest §2; ZAB invariant 25; design paper §2.5).

    A request from an older epoch is refused with IOException "IPC's epoch E
    is less than the last promised epoch P". A newer epoch returns the epoch
    to promise (the caller persists it and resets the IPC serial to -1: this
    silently fences older writers). The same epoch returns ``None``.
    """
    if req_epoch < last_promised_epoch:
        raise IOException(
            f"IPC's epoch {req_epoch} is less than the last promised epoch "
            f"{last_promised_epoch}{_jid(journal_id)}"
        )
    return req_epoch if req_epoch > last_promised_epoch else None


def check_ipc_serial(
    ipc_serial_number: int, current_ipc_serial: int, journal_id: str, client: str | None = None
) -> int:
    """checkRequest step 3: IPCs of one epoch arrive strictly in order.

    Returns the serial to store; otherwise JournalOutOfSyncException "IPC
    serial S from client C was not higher than prior highest IPC serial P".
    ``client`` is the caller's address (Hadoop's ``Server.getRemoteIp()``;
    ``None`` prints as Java's ``null``).
    """
    if ipc_serial_number <= current_ipc_serial:
        raise JournalOutOfSyncException(
            f"IPC serial {ipc_serial_number} from client "
            f"{'null' if client is None else client} was not higher than prior highest "
            f"IPC serial {current_ipc_serial}{_jid(journal_id)}"
        )
    return ipc_serial_number


def check_committed_txid(committed_txid: int, stored_committed_txid: int, journal_id: str) -> int:
    """checkRequest step 4: the committed txid never moves backward.

    Call only when the request carries one (``req.has_committed_txid``).
    Returns the txid to persist; otherwise IllegalArgumentException "Client
    trying to move committed txid backward from X to Y". The stored value
    starts at INVALID_TXID (-12345), so any first value passes.
    """
    if committed_txid < stored_committed_txid:
        raise IllegalArgumentException(
            f"Client trying to move committed txid backward from {stored_committed_txid} "
            f"to {committed_txid}{_jid(journal_id)}"
        )
    return committed_txid


def check_request(state: EpochState, req: RequestInfo, client: str | None = None) -> EpochDecision:
    """Journal.checkRequest as one pure decision (digest §2, steps 1–4).

    Never raises for a rule violation: the violation is the decision's
    ``error``, because Hadoop applies the earlier steps' changes before a
    later step fails (see :class:`EpochDecision`). Typical use::

        d = rules.check_request(state, req, client)
        if d.promise_epoch is not None: persist the promise
        if d.ipc_serial is not None: remember the serial
        if d.committed_txid is not None: persist the committed txid
        d.raise_if_rejected()

    The step functions (:func:`check_epoch`, :func:`check_ipc_serial`,
    :func:`check_committed_txid`) raise directly, for callers that prefer
    Hadoop's straight-line form.
    """
    jid = req.journal_id
    try:
        promise = check_epoch(req.epoch, state.last_promised_epoch, jid)
    except HadoopException as e:
        return EpochDecision(error=e)
    current_serial = INITIAL_IPC_SERIAL if promise is not None else state.ipc_serial
    try:
        serial = check_ipc_serial(req.ipc_serial_number, current_serial, jid, client)
    except HadoopException as e:
        return EpochDecision(promise_epoch=promise, error=e)
    committed: int | None = None
    if req.has_committed_txid:
        try:
            committed = check_committed_txid(req.committed_txid, state.committed_txid, jid)
        except HadoopException as e:
            return EpochDecision(promise_epoch=promise, ipc_serial=serial, error=e)
    return EpochDecision(promise_epoch=promise, ipc_serial=serial, committed_txid=committed)


def check_writer_epoch(req_epoch: int, last_writer_epoch: int, journal_id: str) -> None:
    """checkWriteRequest's extra step, after checkRequest (digest §2).

    Only the writer that started the current segment (whose epoch
    ``startLogSegment`` recorded as ``last-writer-epoch``) may journal;
    otherwise IOException "IPC's epoch E is not the current writer epoch  W"
    (Hadoop's message has two spaces).
    """
    if req_epoch != last_writer_epoch:
        raise IOException(
            f"IPC's epoch {req_epoch} is not the current writer epoch  "
            f"{last_writer_epoch}{_jid(journal_id)}"
        )


def check_new_epoch(proposed_epoch: int, last_promised_epoch: int, journal_id: str) -> None:
    """newEpoch's promise rule (digest §2; design paper §2.4, Paxos phase 1 on epochs).

    A JournalNode promises an epoch only if it is higher than every epoch it
    promised before; otherwise IOException "Proposed epoch e <= last promise p".
    """
    if proposed_epoch <= last_promised_epoch:
        raise IOException(
            f"Proposed epoch {proposed_epoch} <= last promise {last_promised_epoch}"
            f"{_jid(journal_id)}"
        )


# ------------------------------------------------------------------ journal


class BatchAction(enum.Enum):
    """What ``journal()`` should do with a batch that passed the checks."""

    #: Append the records to the open segment.
    WRITE = "write"
    #: ``numTxns == 0``: the legacy "only update committedTxId" call; write nothing.
    SKIP = "skip"


def check_num_txns(num_txns: int, journal_id: str) -> None:
    """A journal() call's ``numTxns`` is a count: IllegalArgumentException if negative.

    Hadoop's field is a protobuf ``uint32``; ours is a Thrift i32, so a malformed
    call can carry a negative one. Checked before anything else, so such a call
    changes nothing.
    """
    if num_txns < 0:
        raise IllegalArgumentException(
            f"Negative number of transactions {num_txns} in journal(){_jid(journal_id)}"
        )


def check_journal_batch(
    cur_segment_txid: int | None,
    next_txid: int,
    segment_txid: int,
    first_txid: int,
    *,
    num_txns: int,
    journal_id: str,
) -> BatchAction:
    """journal()'s checks 2–5, in Hadoop's order (digest §2), after checkWriteRequest.

    ``cur_segment_txid`` is the open segment's first txid, or ``None`` /
    ``INVALID_TXID`` when no segment is open; ``next_txid`` the txid the
    segment expects next.

    2. ``num_txns == 0`` → :attr:`BatchAction.SKIP`.
    3. No open segment → JournalOutOfSyncException "Can't write, no segment open".
    4. The writer names another segment → :class:`SegmentMismatchException`
       (a JournalOutOfSyncException) "Writer out of sync: it thinks it is
       writing segment X but current segment is Y". The caller must **abort
       the open segment**, then re-raise: the writer missed a finalize and a
       start, and continuing would break the one-writer-per-segment
       invariant.
    5. ``next_txid != first_txid`` → JournalOutOfSyncException "Can't write
       txid F expecting nextTxId=N".

    Otherwise :attr:`BatchAction.WRITE`.
    """
    if num_txns == 0:
        return BatchAction.SKIP
    if cur_segment_txid is None or cur_segment_txid == INVALID_TXID:
        raise JournalOutOfSyncException(f"Can't write, no segment open{_jid(journal_id)}")
    if cur_segment_txid != segment_txid:
        raise SegmentMismatchException(
            f"Writer out of sync: it thinks it is writing segment {segment_txid} "
            f"but current segment is {cur_segment_txid}{_jid(journal_id)}"
        )
    if next_txid != first_txid:
        raise JournalOutOfSyncException(
            f"Can't write txid {first_txid} expecting nextTxId={next_txid}{_jid(journal_id)}"
        )
    return BatchAction.WRITE


def request_numbers(req: RequestInfo) -> tuple[int, int, int]:
    """What :func:`is_in_order_batch` reads of a RequestInfo: its epoch, IPC serial and
    committed txid (INVALID_TXID when it has none)."""
    return req.epoch, req.ipc_serial_number, req.committed_txid


def is_in_order_batch(
    last_promised_epoch: int,
    ipc_serial: int,
    committed_txid: int,
    last_writer_epoch: int,
    cur_segment_txid: int | None,
    next_txid: int,
    epoch: int,
    req_ipc_serial: int,
    req_committed_txid: int,
    segment_txid: int,
    first_txid: int,
    num_txns: int,
) -> bool:
    """Whether a journal() call is the open segment's writer sending its next batch.

    The journal's state comes first (its :class:`EpochState` fields, the last
    writer epoch, the open segment or None, the next txid), then the call's (its
    RequestInfo's epoch, serial and committed txid — :func:`request_numbers` —
    then the batch): plain numbers, so the JournalNode's hot path builds no object
    per call.

    True exactly when :func:`check_request` accepts the request without
    promising an epoch, :func:`check_writer_epoch` passes and
    :func:`check_journal_batch` says WRITE: then the call's only effects are the
    new IPC serial, the committed txid and the written batch (the one-pass path,
    ``Journal.journal_in_order``). False for everything else, which
    ``journal_step.step`` decides with the step functions (its ``Decision``).
    """
    return (
        num_txns > 0
        and cur_segment_txid is not None
        and cur_segment_txid != INVALID_TXID
        and segment_txid == cur_segment_txid
        and first_txid == next_txid
        and epoch == last_promised_epoch
        and epoch == last_writer_epoch
        and req_ipc_serial > ipc_serial
        and (req_committed_txid == INVALID_TXID or req_committed_txid >= committed_txid)
    )


def check_finalize_current(
    next_txid: int, end_txid: int, *, start_txid: int, journal_id: str
) -> None:
    """finalizeLogSegment of the open segment: it must end where writing stopped.

    digest §2, finalizeLogSegment step 2: require ``next_txid == end_txid +
    1``, else JournalOutOfSyncException "Trying to finalize in-progress log
    segment S to end at txid E but only written up to txid N-1".
    """
    if next_txid != end_txid + 1:
        raise JournalOutOfSyncException(
            f"Trying to finalize in-progress log segment {start_txid} to end at txid "
            f"{end_txid} but only written up to txid {next_txid - 1}{_jid(journal_id)}"
        )


def rpc_readable_txn_count(
    answers: Sequence[tuple[int, int]], majority_size: int, only_durable: bool
) -> tuple[int, int] | None:
    """How many txns a reader may take from getJournaledEdits answers, and from whose.

    ``answers`` are ``(txn_count, writer_epoch)``, at least ``majority_size`` of them.
    Returns ``(count, writer_epoch)``: read ``count`` txns (0: nothing new) from the
    answers of that writer; or None when the answers cannot say, and the reader must
    read the segment files instead.

    Only the newest writer's answers count (not in Hadoop, whose answers carry no
    epoch): a node that never heard of that writer may cache a fenced writer's tail
    for the same txids. If fewer than a majority answered for the newest writer, say
    a node promised a writer whose takeover failed while the old one goes on with
    the others, the answers decide nothing: None, never "nothing new", which would
    stall the reader until the next takeover. Durable: what a majority of the
    answers hold; otherwise the most any answer holds. An epoch of 0 is unknown (a
    JournalNode that does not send it): then every answer counts, as in Hadoop.
    """
    if any(epoch == 0 for _, epoch in answers):
        newest, counts = 0, sorted(count for count, _ in answers)
    else:
        newest = max(epoch for _, epoch in answers)
        counts = sorted(count for count, epoch in answers if epoch == newest)
        if len(counts) < majority_size:
            return None
    if not only_durable:
        return counts[-1], newest
    return counts[len(counts) - majority_size], newest


def may_replace_in_progress_segment(
    first_txid: int, last_txid: int, unscannable_layout: bool
) -> bool:
    """Whether a new startLogSegment may replace an in-progress file at ``first_txid``
    whose scan found txns up to ``last_txid`` (INVALID_TXID: none).

    It may hold at most the START_LOG_SEGMENT txn, written alone. One with no
    transaction at all (a start that reached only this node) holds nothing
    acknowledged either: unlike Hadoop, accept it, so the node rejoins at once
    (design paper 2.10.5: "all JNs will again succeed"). That includes a header
    that never landed whole (cut short, or still the preallocation's -1: the node
    died creating the file), which Hadoop too takes for a file with no
    transactions when it sidelines it. But a whole header of a layout too old to
    scan may hide txns: refused, as in Hadoop.
    """
    if last_txid == first_txid:
        return True
    return last_txid == INVALID_TXID and not unscannable_layout


def accepted_state_to_report(accepted: SegmentState, on_disk: SegmentState) -> SegmentState:
    """What prepareRecovery reports for a segment this node accepted in an earlier
    recovery and has not finalized: the accepted state, an unknown md5 filled in from
    the copy on disk.

    The unknown-md5 rule (docs/journalnode.md, "The paxos record"). A paxos record Hadoop
    wrote has no md5 (nor has one of our old JSON records from before the md5). By the
    time prepareRecovery asks, it has rolled a half-done accept forward (HDFS-3955) and
    checked that the copy on disk ends at the accepted txid: that copy *is* the one this
    node accepted (the one it downloaded, or — a Hadoop accept skips the download for a
    copy of the same length — the one it kept), so its md5 stands for the accepted
    content. Reporting it lets the coordinator propose a digest, and a node holding
    another copy of the same length then downloads the chosen one instead of keeping its
    own (the gap the md5 closes: design paper §2.8, "the highest txid and md5sum"). A
    known md5 is reported as recorded; a copy of another length is left to the caller's
    assertion.
    """
    if accepted.md5 is not None or on_disk.end_txid != accepted.end_txid:
        return accepted
    return replace(accepted, md5=on_disk.md5)
