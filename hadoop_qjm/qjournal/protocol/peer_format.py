"""Formatting a journal from its peers, and how far a copy is behind them: pure rules.

HDFS-16690 lets an unformatted JournalNode format itself with the storage info one peer
reports. We are stricter (docs/journalnode.md, "Replacing a JournalNode"):
:func:`decide_format` formats only when a **majority of the configured JournalNodes**
(this one included in the count, so it can never be the majority's missing member)
answer with a formatted journal and **all that answer agree** on the namespace id, the
cluster id, the cTime and the layout version. A JournalNode planted with another
namespace, or a minority answering, is a refusal with the reason spelled out; the caller
then changes nothing on disk.

:func:`decide_membership` applies the same rule to the journal's membership record
(``current/membership``, docs/journalnode.md, "Online, by joint consensus"): a
formatted newcomer takes the record only when a majority of the configured JournalNodes
hold the very same one; otherwise it takes none, and the writer's re-proposal brings it
up to date (a node without a record must not read as "the set never changed" while its
peers agree that it did).

:func:`catch_up_state` reads a sync round against **every** peer's manifest (issue 33:
a segment only one peer still holds must keep this node "syncing", however many other
peers lack it too): the committed, finalized segments any peer that answered holds and
this node lacks, how many txns they span, and how many of the peers answered — "in sync
with N of M peers" (replace the next JournalNode only at M of M).

No socket, thread, Thrift or file code here (tests/unit/test_rules_purity.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.remote_edit_log import RemoteEditLog
from hadoop_qjm.common.storage_info import StorageInfo

__all__ = [
    "CATCH_UP_STATES",
    "FORMATTING",
    "IN_SYNC",
    "SYNCING",
    "UNFORMATTED",
    "CatchUp",
    "FormatDecision",
    "PeerAnswer",
    "PeerManifest",
    "catch_up_state",
    "decide_format",
    "decide_membership",
    "majority",
    "missing_log_segments",
    "reported_catch_up",
]

#: The catch-up states a journal's syncer reports (/jmx ``Syncer.CatchUp``, /metrics
#: ``journalnode_sync_state``).
UNFORMATTED = "unformatted"
FORMATTING = "formatting"
SYNCING = "syncing"
IN_SYNC = "in sync"
CATCH_UP_STATES = (UNFORMATTED, FORMATTING, SYNCING, IN_SYNC)


def majority(configured: int) -> int:
    """How many of ``configured`` JournalNodes make a majority."""
    return configured // 2 + 1


@dataclass(frozen=True)
class PeerAnswer:
    """What one peer said when asked for the journal's storage info.

    ``storage_info`` None: it gave none — ``error`` says why (its journal is not
    formatted, it did not answer, …). ``holds_edits``: its journal holds at least one
    segment, finalized or in progress. ``membership``: the text of its membership
    record, None if it holds none (or could not say).
    """

    peer: str
    storage_info: StorageInfo | None = None
    holds_edits: bool = False
    error: str | None = None
    membership: str | None = None


@dataclass(frozen=True)
class FormatDecision:
    """Format with ``storage_info``, or (None) refuse for ``reason``."""

    storage_info: StorageInfo | None
    reason: str

    @property
    def ok(self) -> bool:
        return self.storage_info is not None


def _describe(si: StorageInfo) -> str:
    return (
        f"namespaceID={si.namespace_id}, clusterID={si.cluster_id}, cTime={si.ctime}, "
        f"layoutVersion={si.layout_version}"
    )


def decide_format(
    answers: Sequence[PeerAnswer], configured: int, *, require_edits: bool = False
) -> FormatDecision:
    """Whether to format an unformatted journal from its peers' ``answers``.

    ``configured``: how many JournalNodes the shared-edits URI names, this one included.
    Rules, in order: every peer that gave a storage info must give the same one (a
    single disagreeing peer refuses: which copy is right is for an operator to say);
    those peers must be a majority of ``configured``; with ``require_edits`` (the
    daemon's self-format), one of them must hold edits already — a freshly formatted
    journal with none may be one a NameNode is formatting right now, whose ``format``
    call to this node is still on its way (the race HDFS-16690 avoids the same way).
    """
    formatted = [a for a in answers if a.storage_info is not None]
    groups: dict[tuple[int, str, int, int], list[str]] = {}
    for a in formatted:
        si = a.storage_info
        key = (si.namespace_id, si.cluster_id, si.ctime, si.layout_version)  # type: ignore[union-attr]
        groups.setdefault(key, []).append(a.peer)
    if len(groups) > 1:
        parts = []
        for (ns_id, cluster_id, ctime, lv), peers in groups.items():
            si = StorageInfo(lv, ns_id, cluster_id, ctime)
            parts.append(f"{', '.join(peers)} say {_describe(si)}")
        return FormatDecision(
            None,
            "the JournalNodes disagree about the journal's storage ("
            + "; ".join(parts)
            + "): not formatting; find out which one is wrong",
        )
    need = majority(configured)
    if len(formatted) < need:
        silent = [
            f"{a.peer}: {a.error or 'no storage info'}" for a in answers if not a.storage_info
        ]
        detail = f" ({'; '.join(silent)})" if silent else ""
        return FormatDecision(
            None,
            f"only {len(formatted)} of the {configured} configured JournalNodes answered with "
            f"a formatted journal, a majority needs {need}{detail}: not formatting",
        )
    if require_edits and not any(a.holds_edits for a in formatted):
        return FormatDecision(
            None,
            "no peer's journal holds edits yet (a NameNode may be formatting it right now): "
            "not formatting",
        )
    si = formatted[0].storage_info
    peers = ", ".join(a.peer for a in formatted)
    return FormatDecision(
        si, f"{len(formatted)} of {configured} JournalNodes ({peers}) agree on {_describe(si)}"
    )  # type: ignore[arg-type]


@dataclass(frozen=True)
class MembershipDecision:
    """Take the membership record ``record`` (its text), or (None) none, for ``reason``."""

    record: str | None
    reason: str


def decide_membership(answers: Sequence[PeerAnswer], configured: int) -> MembershipDecision:
    """Which membership record a journal formatted from its peers takes: the one a
    majority of the ``configured`` JournalNodes hold, identical on every peer that holds
    one; otherwise none (a switch under way, or records that differ: the writer brings
    the node up to date)."""
    held = [a for a in answers if a.storage_info is not None and a.membership is not None]
    if not held:
        return MembershipDecision(None, "no peer holds a membership record")
    texts = {a.membership for a in held}
    if len(texts) > 1:
        return MembershipDecision(
            None,
            f"the peers' membership records differ ({len(texts)} versions): not copying one; "
            "the writer brings this node up to date",
        )
    need = majority(configured)
    if len(held) < need:
        return MembershipDecision(
            None,
            f"only {len(held)} of the {configured} configured JournalNodes hold a membership "
            f"record, a majority needs {need}: not copying it",
        )
    peers = ", ".join(a.peer for a in held)
    return MembershipDecision(held[0].membership, f"{len(held)} of {configured} ({peers}) hold it")


def missing_log_segments(
    local: Iterable[RemoteEditLog], remote: Iterable[RemoteEditLog]
) -> list[RemoteEditLog]:
    """Remote finalized segments whose start txid is not here, plus all past our last one
    (Hadoop's JournalNodeSyncer.getMissingLogList)."""
    local = sorted(local)
    remote = sorted(log for log in remote if not log.is_in_progress)
    missing: list[RemoteEditLog] = []
    i = j = 0
    while i < len(local) and j < len(remote):
        if local[i].start_txid == remote[j].start_txid:
            i += 1
            j += 1
        elif local[i].start_txid > remote[j].start_txid:
            missing.append(remote[j])
            j += 1
        else:
            i += 1
    missing.extend(remote[j:])
    return missing


@dataclass(frozen=True)
class PeerManifest:
    """What one peer answered to ``getEditLogManifestFromJournal``: its segments and its
    committed txid; ``logs`` None when it did not answer (``error`` says why)."""

    peer: str
    logs: tuple[RemoteEditLog, ...] | None = None
    committed_txid: int = INVALID_TXID
    error: str | None = None


@dataclass(frozen=True)
class CatchUp:
    """How far this copy is behind its peers: the committed, finalized segments it lacks
    that a peer holds, their txns, and how many of the ``peers`` answered (the names of
    those that did not in ``unreachable``)."""

    segments_behind: int
    txns_behind: int
    peers_answered: int = 1
    peers: int = 1
    unreachable: tuple[str, ...] = ()

    @property
    def state(self) -> str:
        """IN_SYNC or SYNCING; never IN_SYNC on no peer's word."""
        return IN_SYNC if self.segments_behind == 0 and self.peers_answered > 0 else SYNCING

    @property
    def text(self) -> str:
        """What the status page and /jmx ``CatchUp`` say: "in sync with N of M peers"."""
        if self.state == IN_SYNC:
            return f"{IN_SYNC} with {self.peers_answered} of {self.peers} peers"
        return self.state


def catch_up_state(
    local: Iterable[RemoteEditLog], answers: Sequence[PeerManifest], committed_txid: int
) -> CatchUp:
    """This copy's catch-up after a round: ``local`` its finalized segments, ``answers``
    every peer's manifest (None logs: it did not answer), ``committed_txid`` its own.

    Behind by every finalized segment that **any** peer that answered lists and this copy
    lacks (:func:`missing_log_segments`, per peer: one peer holding a segment is enough),
    up to the highest committed txid known — this node's or any answering peer's, the
    best reading of the writer's — since the syncer never installs a segment past the
    committed txid (digest §2) and one past every known committed txid was never
    acknowledged. Each missing segment counts once however many peers hold it.
    """
    local = list(local)
    answered = [a for a in answers if a.logs is not None]
    bound = max([committed_txid, *(a.committed_txid for a in answered)])
    behind: dict[int, RemoteEditLog] = {}
    for a in answered:
        for log in missing_log_segments(local, a.logs or ()):
            if log.end_txid <= bound:
                behind.setdefault(log.start_txid, log)
    return CatchUp(
        len(behind),
        sum(log.end_txid - log.start_txid + 1 for log in behind.values()),
        len(answered),
        len(answers),
        tuple(a.peer for a in answers if a.logs is None),
    )


def reported_catch_up(state: str, formatted: bool) -> str:
    """The catch-up state to show: a journal formatted since the syncer last looked (by a
    NameNode's ``format``, between two rounds) is SYNCING — waiting for its first round —
    never UNFORMATTED (issue 33)."""
    if formatted and state == UNFORMATTED:
        return SYNCING
    return state
