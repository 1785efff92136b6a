"""The writer's next batch as one pure step: ``step(state, call) -> Ready`` (issue 34).

A JournalNode serves the open segment's writer's batches through one write path
(``Journal._write_group_locked``): each call of a group is stepped against the state
the calls before it left, and the step says what the call changes, what must be
persisted and whether the batch must be fsynced before it is acknowledged — etcd-io
raft's ``Ready`` (state persisted before messages go out; ``MustSync``), for the one
call a JournalNode serves most.

:func:`step` answers None for every call that is not the writer's next batch
(:func:`rules.is_in_order_batch`); the Journal then serves it alone with the step
functions of ``rules`` (``check_request``, ``check_writer_epoch``,
``check_journal_batch``), which decide a promise or a rejection. For a call it
answers, those functions agree: :class:`Ready` is exactly their effects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.qjournal.protocol import rules

__all__ = ["BatchCall", "Ready", "WriterState", "step"]


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


def step(state: WriterState, call: BatchCall) -> Ready | None:
    """The call's :class:`Ready` if it is the writer's next batch, else None (nothing
    decided: the caller serves it with ``rules``' step functions)."""
    epoch, ipc_serial, committed_txid, segment_txid, first_txid, num_txns = call
    if not rules.is_in_order_batch(
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
        return None
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
    return Ready(after, committed if moved else None, first_txid, last_txid, last_txid > committed)
