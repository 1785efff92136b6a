"""A ``journal`` call as one pure step: ``step(state, call) -> Ready | Decision`` (issue 34).

A JournalNode serves the open segment's writer's batches through one write path
(``JournalWritePath._write_group_locked``): each call of a group is stepped against the
state the calls before it left, and the step says what the call changes, what must be
persisted and whether the batch must be fsynced before it is acknowledged — etcd-io
raft's ``Ready`` (state persisted before messages go out; ``MustSync``), for the one
call a JournalNode serves most.

Every other call (:func:`rules.is_in_order_batch` false) gets a :class:`Decision`:
journal()'s checks in Hadoop's order (digest §2: checkNumTxns, checkRequest,
checkWriteRequest, the batch's segment and txid), decided with ``rules``' step
functions — a newer epoch to promise before the other checks, the effects checkRequest
keeps even when a later check fails, the rejection with Hadoop's exception and
message, or the batch to write. ``Journal.journal`` applies it and writes the batch by
the same write path, a group of one. For a call answered by a :class:`Ready` the
decision would agree: :class:`Ready` is exactly its effects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import HadoopException
from hadoop_qjm.qjournal.protocol import rules
from hadoop_qjm.qjournal.protocol.exceptions import SegmentMismatchException

__all__ = ["Batch", "BatchCall", "Decision", "Ready", "WriterState", "step"]


@dataclass(frozen=True, slots=True)
class WriterState:
    """What the writer's next batch is checked against: the :class:`rules.EpochState`
    fields, the last writer epoch, the open segment (None: none) and the next txid."""

    last_promised_epoch: int
    ipc_serial: int
    committed_txid: int
    last_writer_epoch: int
    segment_txid: int | None
    next_txid: int


@dataclass(frozen=True, slots=True)
class Ready:
    """What one in-order ``journal`` call does.

    * ``state``: the journal's state after the call (its serial, committed txid and
      next txid moved).
    * ``committed_txid``: a new committed txid to persist (lazily: a hint read as a
      lower bound, docs/journalnode.md), None when unchanged.
    * ``first_txid``/``last_txid``: the batch to append to the open segment.
    * ``must_sync``: the batch must be fsynced before it is acknowledged; False only
      for a batch the quorum already committed (this node is catching up).
    """

    state: WriterState
    committed_txid: int | None
    first_txid: int
    last_txid: int
    must_sync: bool


class BatchCall(NamedTuple):
    """What :func:`step` reads of a ``journal`` call: its RequestInfo's numbers
    (``rules.request_numbers``: epoch, IPC serial, committed txid or INVALID_TXID) and
    its batch's."""

    epoch: int
    ipc_serial: int
    committed_txid: int
    segment_txid: int
    first_txid: int
    num_txns: int


class Batch(NamedTuple):
    """The batch a decided ``journal`` call writes: its txids, and whether it must be
    fsynced before it is acknowledged (not a batch the quorum already committed)."""

    first_txid: int
    last_txid: int
    must_sync: bool


@dataclass(frozen=True, slots=True)
class Decision:
    """What a ``journal`` call that is not the writer's next batch does: ``rules``'
    :class:`~hadoop_qjm.qjournal.protocol.rules.EpochDecision` grown up, with
    journal()'s own checks (digest §2, "journal").

    Apply in field order, each step only if the one before it did not raise:

    * ``request``: checkRequest's decision: persist its promise, take its IPC serial and
      committed txid, raise its error; then the writer watch sees the call's epoch.
      None: the call was rejected before checkRequest (``error``, nothing changed).
    * ``abort_segment``: the writer names another segment than the open one: abort the
      open segment (then ``error`` is the SegmentMismatchException).
    * ``error``: reject the call with this exception (Hadoop's message).
    * ``batch``: then write this batch (checked against the state after the effects);
      None: nothing to write (the legacy numTxns 0 call, or a rejection).
    """

    request: rules.EpochDecision | None
    abort_segment: bool = False
    error: HadoopException | None = None
    batch: Batch | None = None


def step(
    state: WriterState,
    call: BatchCall,
    journal_id: str = "",
    *,
    client: str | None = None,
    request_journal_id: str | None = None,
) -> Ready | Decision:
    """The call's :class:`Ready` if it is the writer's next batch, else its
    :class:`Decision`: a newer epoch to promise before the other checks, or the
    rejection, each as ``Journal.journal`` has always applied them.

    ``journal_id`` names the journal in the messages of journal()'s own checks,
    ``request_journal_id`` (default: the same) in checkRequest's, which name the
    request's; ``client`` is the caller's address in the IPC-serial message.
    """
    epoch, ipc_serial, committed_txid, segment_txid, first_txid, num_txns = call
    if rules.is_in_order_batch(
        state.last_promised_epoch,
        state.ipc_serial,
        state.committed_txid,
        state.last_writer_epoch,
        state.segment_txid,
        state.next_txid,
        epoch,
        ipc_serial,
        committed_txid,
        segment_txid,
        first_txid,
        num_txns,
    ):
        moved = committed_txid != INVALID_TXID and committed_txid != state.committed_txid
        committed = committed_txid if moved else state.committed_txid
        last_txid = first_txid + num_txns - 1
        after = WriterState(
            state.last_promised_epoch,
            ipc_serial,
            committed,
            state.last_writer_epoch,
            state.segment_txid,
            last_txid + 1,
        )
        return Ready(
            after, committed if moved else None, first_txid, last_txid, last_txid > committed
        )
    return _decide(state, call, journal_id, client, request_journal_id)


def _decide(
    state: WriterState,
    call: BatchCall,
    journal_id: str,
    client: str | None,
    request_journal_id: str | None,
) -> Decision:
    """journal()'s checks in Hadoop's order, as a decision (digest §2, "journal")."""
    epoch, ipc_serial, committed_txid, segment_txid, first_txid, num_txns = call
    try:
        rules.check_num_txns(num_txns, journal_id)
    except HadoopException as e:
        return Decision(None, error=e)
    request = rules.check_request(
        rules.EpochState(state.last_promised_epoch, state.ipc_serial, state.committed_txid),
        _Request(
            journal_id if request_journal_id is None else request_journal_id,
            epoch,
            ipc_serial,
            committed_txid,
        ),
        client=client,
    )
    if request.error is not None:
        return Decision(request)
    try:
        rules.check_writer_epoch(epoch, state.last_writer_epoch, journal_id)
        action = rules.check_journal_batch(
            state.segment_txid,
            state.next_txid,
            segment_txid,
            first_txid,
            num_txns=num_txns,
            journal_id=journal_id,
        )
    except SegmentMismatchException as e:
        # The writer missed a finalize and a start: stop writing this segment.
        return Decision(request, abort_segment=True, error=e)
    except HadoopException as e:
        return Decision(request, error=e)
    if action is rules.BatchAction.SKIP:
        return Decision(request)  # the legacy "only update the committed txid" call
    committed = state.committed_txid if request.committed_txid is None else request.committed_txid
    last_txid = first_txid + num_txns - 1
    return Decision(request, batch=Batch(first_txid, last_txid, last_txid > committed))


class _Request(NamedTuple):
    """The fields of a RequestInfo that ``rules.check_request`` reads (messages imports
    Thrift; this module stays pure)."""

    journal_id: str
    epoch: int
    ipc_serial_number: int
    committed_txid: int

    @property
    def has_committed_txid(self) -> bool:
        return self.committed_txid != INVALID_TXID
