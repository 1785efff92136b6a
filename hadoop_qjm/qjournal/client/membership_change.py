"""Changing a running journal's JournalNode set by joint consensus: the writer's steps.

docs/journalnode.md, "Online, by joint consensus: the design", names the steps
and argues each one's safety; the decisions are ``protocol/membership.py``'s.
The active writer calls :func:`begin_reconfiguration` (S0–S2) and, at a later
segment boundary, :func:`finish_reconfiguration` (S4–S5), each between two
segments (after ``finalizeLogSegment``, before ``startLogSegment``). In
between it writes every call under the joint quorum (S3). Each refuses with
one sentence and leaves the writer in a safe configuration: on O when the
joint record did not reach its quorum, joint when the STABLE one did not.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING, Any, Protocol

from hadoop_qjm.common.exceptions import (
    IllegalArgumentException,
    IllegalStateException,
    IOException,
)
from hadoop_qjm.qjournal.client.joint_logger_set import logger_address
from hadoop_qjm.qjournal.client.qjournal_uri import parse_qjournal_uri
from hadoop_qjm.qjournal.protocol import membership
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalMembershipException,
    JournalNodesBehindException,
)
from hadoop_qjm.qjournal.protocol.membership import (
    Action,
    Config,
    MembershipRecord,
    parse_members,
)

if TYPE_CHECKING:
    from hadoop_qjm.qjournal.client.async_logger import AsyncLogger
    from hadoop_qjm.qjournal.client.async_logger_set import AsyncLoggerSet

__all__ = [
    "begin_reconfiguration",
    "finish_reconfiguration",
    "members_of_uri",
    "repair_records",
    "settle_configuration",
]

LOG = logging.getLogger(__name__)


class QuorumWriter(Protocol):
    """What these steps use of the writer's QuorumJournalManager (a type only: the manager
    imports this module, not the other way round)."""

    journal_id: str
    is_active_writer: bool
    loggers: AsyncLoggerSet
    config: Config
    membership_record: MembershipRecord | None
    open_segment_txid: int | None
    timeouts: Any  # QuorumJournalTimeouts (operations_ms, get_journal_state_ms, …)

    def note_stable_set(self) -> None: ...

    def use_config(self, config: Config) -> None: ...


def members_of_uri(uri: str) -> tuple[str, frozenset[str]]:
    """``(journal id, {"host:port", …})`` of a ``qjournal://`` URI."""
    parsed = parse_qjournal_uri(uri)
    hosts = ";".join(f"[{h}]:{p}" if ":" in h else f"{h}:{p}" for h, p in parsed.addresses)
    return parsed.journal_id, parse_members(hosts)


def _between_segments(qjm: QuorumWriter, step: str) -> None:
    if not qjm.is_active_writer:
        raise IllegalStateException(f"{step}: this writer has not recovered the journal yet")
    if qjm.open_segment_txid is not None:
        raise IllegalStateException(
            f"{step}: segment {qjm.open_segment_txid} is open; "
            "a JournalNode set changes between segments"
        )


def _next_version(qjm: QuorumWriter) -> int:
    record = qjm.membership_record
    return 1 if record is None else record.version + 1


def _all_of(qjm: QuorumWriter, loggers: list[AsyncLogger], method: str, *args: Any):  # noqa: ANN202
    """``method`` on every one of ``loggers``; each must succeed."""
    call = qjm.loggers.call(method, *args, only=loggers)
    try:
        call.wait_for(len(loggers), len(loggers), 0, qjm.timeouts.operations_ms, method)
    except TimeoutError:
        raise IOException(f"Timed out waiting for {method}() from the new JournalNodes") from None
    if call.count_exceptions():
        call.rethrow_exception(f"{method}() failed on a new JournalNode")
    return call.successes


def _write_record(qjm: QuorumWriter, record: MembershipRecord) -> None:
    """setMembership on every node of the (joint) set; done at its quorum."""
    qjm.loggers.wait_for_write_quorum(
        qjm.loggers.call("set_membership", record.to_text()),
        qjm.timeouts.operations_ms,
        f"setMembership({record})",
    )
    qjm.membership_record = record


def begin_reconfiguration(qjm: QuorumWriter, new_uri: str) -> None:
    """S0–S2: bring the nodes of ``new_uri`` under this writer's epoch and record the
    joint configuration; afterwards every call counts a majority of both sets."""
    _between_segments(qjm, "reconfigureSharedEdits")
    journal_id, new = members_of_uri(new_uri)
    if journal_id != qjm.journal_id:
        raise IllegalArgumentException(
            f"the new URI names journal {journal_id}, this writer writes {qjm.journal_id}"
        )
    if qjm.config.is_joint:
        raise IllegalStateException(
            f"journal {qjm.journal_id} is already changing its set ({qjm.config.describe()})"
        )
    old = qjm.config.old
    if new == old:
        raise IllegalArgumentException(f"journal {qjm.journal_id} already uses {new_uri}")
    epoch = qjm.loggers.epoch
    joint = Config(old, new)
    qjm.use_config(joint)
    try:
        record = MembershipRecord.joint(old, new, epoch, _next_version(qjm))
        added = [lg for lg in qjm.loggers.loggers if logger_address(lg) in new - old]
        if added:
            # S0 + S1: each new node is formatted for this namespace and comes under this
            # writer's epoch (the epoch-checked call raises its promise; one that promised
            # more refuses), taking the joint record — all of them must.
            _all_of(qjm, added, "set_membership", record.to_text(), True)
        # S2: the joint record, at the joint quorum.
        _write_record(qjm, record)
    except BaseException as e:
        # Nothing was written under O+N: going on with O alone is safe (a JOINT record on
        # a minority only makes a later writer use O+N, whose quorums include O's).
        qjm.use_config(Config(old))
        if isinstance(e, IOException):
            raise JournalMembershipException(
                f"not changing journal {qjm.journal_id} to {new_uri}: {e}"
            ) from e
        raise
    LOG.info("Journal %s: joint configuration %s recorded", qjm.journal_id, joint.describe())


def finish_reconfiguration(qjm: QuorumWriter, since_txid: int, last_txid: int) -> None:
    """S4–S5: once the new set holds every finalized segment from ``since_txid`` (the
    NameNode's newest checkpoint + 1) through ``last_txid`` (the last finalized txid:
    the writer is between segments) on enough nodes, record it as the set and use it
    alone. Refusing leaves the writer joint (safe), to try again at a later roll.

    The segments checked are the ones the answering nodes list, and they must chain
    from ``since_txid`` to ``last_txid``: with too few answers the check fails rather
    than passing on nothing (run_seed 193 --membership found a history check that
    passed with every node down, and a later writer that followed its STABLE record).
    """
    _between_segments(qjm, "finishing reconfigureSharedEdits")
    config = qjm.config
    if not config.is_joint or config.new is None:
        raise IllegalStateException(f"journal {qjm.journal_id} is not changing its set")
    old, new = config.old, config.new
    manifests = qjm.loggers.call("get_edit_log_manifest", since_txid, False)
    try:
        manifests.wait_for(
            len(config.members), 0, -1, qjm.timeouts.select_input_streams_ms, "history"
        )
    except TimeoutError:
        pass  # the silent ones hold nothing, as far as this check knows
    finalized: dict[str, list[tuple[int, int]]] = {
        logger_address(lg): [
            (log.start_txid, log.end_txid) for log in manifest.logs if not log.is_in_progress
        ]
        for lg, manifest in manifests.successes.items()
    }
    segments = sorted({seg for segs in finalized.values() for seg in segs})
    # The segments must chain from since_txid to last_txid: a gap is a segment no
    # answering node has.
    segments = [(first, last) for first, last in segments if first <= last_txid]
    expected = since_txid
    for first, last in segments:
        if last < since_txid:
            continue
        if first != expected and not (expected == since_txid and first <= since_txid <= last):
            break
        expected = last + 1
    if expected <= last_txid:
        raise JournalMembershipException(
            f"journal {qjm.journal_id} stays on {config.describe()}: no answering "
            f"JournalNode holds the finalized segment starting at txid {expected}"
        )
    segments = [(first, last) for first, last in segments if last >= since_txid]
    missing = membership.history_covered(finalized, new, segments)
    if missing:
        raise JournalNodesBehindException(
            f"journal {qjm.journal_id} stays on {config.describe()}: fewer than "
            f"{membership.copies_needed(len(new))} JournalNodes of the new set hold the "
            f"finalized segments {missing} (wait for their syncers, or run "
            "journalnode -bootstrap on them)"
        )
    epoch = qjm.loggers.epoch
    _write_record(qjm, MembershipRecord.stable(new, epoch, _next_version(qjm), previous=old))
    qjm.use_config(Config(new))
    qjm.note_stable_set()
    LOG.info("Journal %s now uses the JournalNodes %s", qjm.journal_id, Config(new).describe())


# ---- the writer's side of the records (called by QuorumJournalManager) ------------------------
def repair_records(qjm: QuorumWriter, states: dict[AsyncLogger, Any]) -> None:
    """Re-propose the record this writer follows, under its own epoch, to the nodes
    whose answer showed an older one (Paxos's re-proposal): a node that missed a step
    catches up and counts again. Not waited for."""
    record = qjm.membership_record
    if record is None:
        return
    behind = [
        logger
        for logger, state in states.items()
        if state.membership is None or MembershipRecord.parse(state.membership).key < record.key
    ]
    record = dataclasses.replace(record, epoch=qjm.loggers.epoch)
    qjm.membership_record = record
    if behind:
        qjm.loggers.call("set_membership", record.to_text(), only=behind)


def settle_configuration(qjm: QuorumWriter) -> dict[AsyncLogger, Any]:
    """getJournalState from a quorum, following the membership records it shows
    (``membership.decide_configuration``: adopt O+N, follow to the new set, or
    refuse) until the set asked is the one to use; that quorum's answers."""
    seen: list[MembershipRecord] = []
    for _ in range(membership.MAX_HOPS + 1):
        states = qjm.loggers.wait_for_write_quorum(
            qjm.loggers.call("get_journal_state"),
            qjm.timeouts.get_journal_state_ms,
            "getJournalState()",
        )
        for logger, state in states.items():
            if state.membership is not None:
                try:
                    seen.append(MembershipRecord.parse(state.membership))
                except IllegalArgumentException as e:
                    raise JournalMembershipException(
                        f"{logger} answered a bad membership record: {e}"
                    ) from None
        decision = membership.decide_configuration(qjm.config, seen, qjm.journal_id)
        if decision.action is Action.PROCEED:
            qjm.membership_record = decision.record
            qjm.note_stable_set()
            return states
        if decision.action is Action.REFUSE:
            raise JournalMembershipException(decision.reason)
        if decision.action is Action.FOLLOW:
            LOG.warning(decision.reason)
        else:
            LOG.warning(
                "Journal %s is changing its JournalNode set (%s): using %s",
                qjm.journal_id,
                decision.record,
                decision.config.describe(),
            )
        qjm.use_config(decision.config)
    raise JournalMembershipException(
        f"the membership records of journal {qjm.journal_id} did not settle on a "
        f"JournalNode set after {membership.MAX_HOPS} changes: {[str(r) for r in seen]}"
    )
