"""Changing the JournalNode set by joint consensus: the rules, as pure functions.

The design and the safety argument of each step are in docs/journalnode.md,
"Online, by joint consensus: the design"; this module holds every decision in
it, and no I/O (STYLE.md habit 1; ``tests/unit/test_rules_purity.py``):

* :class:`Config`: a stable set, or the joint configuration O+N whose quorum is a
  majority of O **and** a majority of N (Raft's C_old,new; Ongaro's thesis §4.3);
* :class:`MembershipRecord`: what a JournalNode keeps in ``current/membership``,
  its text form, its order (epoch first, then version: the newest writer's
  record wins, as a Paxos value with the higher ballot does) and its legal
  successors (:func:`check_successor`);
* :func:`decide_configuration`: what a writer does with the records a quorum
  showed it (proceed, adopt O+N, follow to the new set, or refuse);
* :func:`check_writer`: whom a JournalNode promises an epoch to;
* :func:`reader_config`: which one set a reader (the standby's tailer) reads from;
* :func:`history_covered`: whether the new set holds the finalized history
  before the old set is let go.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.qjournal.protocol.rules import majority

__all__ = [
    "Config",
    "RecordState",
    "MembershipRecord",
    "parse_members",
    "check_successor",
    "Action",
    "WriterDecision",
    "decide_configuration",
    "check_writer",
    "reader_config",
    "copies_needed",
    "history_covered",
    "MAX_HOPS",
]


def parse_members(text: str) -> frozenset[str]:
    """``"a:8485;B:8485"`` → ``{"a:8485", "b:8485"}``: the set, case-folded (host names
    are case-insensitive), each entry ``host:port``; bad input raises one sentence."""
    members = frozenset(part.strip().lower() for part in text.split(";") if part.strip())
    for member in members:
        host, _, port = member.rpartition(":")
        if not host or not port.isdigit():
            raise IllegalArgumentException(f"not a host:port JournalNode address: {member!r}")
    return members


def _text(members: frozenset[str]) -> str:
    return ";".join(sorted(members))


@dataclass(frozen=True)
class Config:
    """The set a writer counts: ``old`` alone (stable), or ``old`` + ``new`` (joint)."""

    old: frozenset[str]
    new: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if not self.old or (self.new is not None and not self.new):
            raise IllegalArgumentException("a JournalNode set cannot be empty")

    @classmethod
    def stable(cls, members: Iterable[str]) -> Config:
        return cls(frozenset(members))

    @classmethod
    def joint(cls, old: Iterable[str], new: Iterable[str]) -> Config:
        return cls(frozenset(old), frozenset(new))

    @property
    def is_joint(self) -> bool:
        return self.new is not None

    @property
    def members(self) -> frozenset[str]:
        """Every node a call goes to: O ∪ N when joint."""
        return self.old | (self.new or frozenset())

    @property
    def halves(self) -> tuple[frozenset[str], ...]:
        """The sets each of which needs its own majority."""
        return (self.old,) if self.new is None else (self.old, self.new)

    def quorum_reached(self, successes: Iterable[str]) -> bool:
        """A majority of every half succeeded (joint: of O *and* of N)."""
        done = set(successes)
        return all(len(done & half) >= majority(len(half)) for half in self.halves)

    def quorum_impossible(self, failures: Iterable[str]) -> bool:
        """So many nodes of one half failed that it can no longer reach its majority."""
        failed = set(failures)
        return any(len(failed & half) > len(half) - majority(len(half)) for half in self.halves)

    def to_text(self) -> str:
        """The wire form (newEpoch's ``writerConfig``): ``"a:1;b:1"`` or ``"a:1;b:1|a:1;c:1"``."""
        return "|".join(_text(half) for half in self.halves)

    @classmethod
    def parse(cls, text: str) -> Config:
        """The configuration of :meth:`to_text`'s form; bad input raises one sentence."""
        halves = [parse_members(half) for half in text.split("|")]
        if len(halves) > 2 or not all(halves):
            raise IllegalArgumentException(f"not a JournalNode configuration: {text!r}")
        return cls(*halves)

    def describe(self) -> str:
        """``"a:1;b:2;c:3"`` or ``"a:1;b:2;c:3 + a:1;b:2;d:4"`` for messages."""
        if self.new is None:
            return _text(self.old)
        return f"{_text(self.old)} + {_text(self.new)}"


class RecordState(enum.Enum):
    #: The switch from ``old`` to ``new`` is under way: writers must use O+N.
    JOINT = "JOINT"
    #: The set is ``new`` (``old``: the set it was switched from, possibly empty).
    STABLE = "STABLE"


@dataclass(frozen=True)
class MembershipRecord:
    """A JournalNode's ``current/membership`` for one journal.

    JOINT(old, new) or STABLE(new, previous=old); ``epoch`` is the writer's that
    wrote it, ``version`` counts the records of the journal's history.
    """

    state: RecordState
    old: frozenset[str]
    new: frozenset[str]
    epoch: int
    version: int

    @classmethod
    def joint(cls, old: Iterable[str], new: Iterable[str], epoch: int, version: int):  # noqa: ANN206
        return cls(RecordState.JOINT, frozenset(old), frozenset(new), epoch, version)

    @classmethod
    def stable(  # noqa: ANN206
        cls, members: Iterable[str], epoch: int, version: int, previous: Iterable[str] = ()
    ):
        return cls(RecordState.STABLE, frozenset(previous), frozenset(members), epoch, version)

    @property
    def key(self) -> tuple[int, int]:
        """The order of records: the newer writer's first, then the later step."""
        return (self.epoch, self.version)

    @property
    def config(self) -> Config:
        """The configuration a writer must use under this record."""
        if self.state is RecordState.JOINT:
            return Config.joint(self.old, self.new)
        return Config.stable(self.new)

    def to_text(self) -> str:
        lines = [f"state={self.state.value}"]
        if self.state is RecordState.JOINT:
            lines += [f"old={_text(self.old)}", f"new={_text(self.new)}"]
        else:
            lines += [f"members={_text(self.new)}", f"previous={_text(self.old)}"]
        lines += [f"epoch={self.epoch}", f"version={self.version}"]
        return "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, text: str) -> MembershipRecord:
        """The record of :meth:`to_text`'s form; anything else raises one sentence."""
        fields: dict[str, str] = {}
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, sep, value = line.partition("=")
            if not sep:
                raise IllegalArgumentException(f"bad membership record line: {line!r}")
            fields[name.strip()] = value.strip()
        try:
            state = RecordState(fields["state"])
            epoch, version = int(fields["epoch"]), int(fields["version"])
            if state is RecordState.JOINT:
                old, new = parse_members(fields["old"]), parse_members(fields["new"])
            else:
                old = parse_members(fields.get("previous", ""))
                new = parse_members(fields["members"])
        except (KeyError, ValueError) as e:
            raise IllegalArgumentException(f"bad membership record: {e}") from None
        if epoch < 0 or version < 0 or not new or (state is RecordState.JOINT and not old):
            raise IllegalArgumentException(f"bad membership record: {text.strip()!r}")
        return cls(state, old, new, epoch, version)

    def __str__(self) -> str:
        what = (
            f"JOINT({_text(self.old)} -> {_text(self.new)})"
            if self.state is RecordState.JOINT
            else f"STABLE({_text(self.new)})"
        )
        return f"{what} at epoch {self.epoch} version {self.version}"


def check_successor(current: MembershipRecord | None, proposed: MembershipRecord) -> str | None:
    """Why ``proposed`` may not replace ``current`` on a JournalNode; None if it may.

    The same record again is allowed (a retried call). Otherwise it must be
    greater. A record of a newer writer (higher epoch) replaces any older
    one, as a Paxos value with a higher ballot does: that writer won its epoch
    on a quorum that showed it the newest record, and a node that missed steps
    (it was down, or had left the set and now rejoins) catches up. Within one
    writer's epoch, only its own steps: none or STABLE(X) → JOINT(X, Y);
    JOINT(X, Y) → STABLE(Y) (done) or STABLE(X) (abandoned).
    """
    if current == proposed:
        return None
    if current is not None and proposed.key <= current.key:
        return f"the record {proposed} is not newer than this node's {current}"
    if current is not None and proposed.epoch > current.epoch:
        return None
    if proposed.state is RecordState.JOINT:
        if current is None:
            return None
        if current.state is RecordState.STABLE and current.new == proposed.old:
            return None
        if current.state is RecordState.JOINT and current.config == proposed.config:
            return None  # a newer writer re-proposing the joint configuration it adopted
        if current.state is RecordState.JOINT and current.new == proposed.old:
            # This node missed STABLE(new) (it was down, or had left the set and now
            # rejoins): a switch from the new set can only follow STABLE(new).
            return None
        return f"the record {proposed} does not start from this node's {current}"
    if current is None or current.state is RecordState.STABLE:
        if current is None or current.new == proposed.new:
            return None
        return f"the record {proposed} skips the joint step from this node's {current}"
    if proposed.new in (current.new, current.old):
        return None
    return f"the record {proposed} does not end this node's {current}"


class Action(enum.Enum):
    PROCEED = "proceed"  # the configuration asked with is the one to use
    ADOPT = "adopt"  # ask again with the joint configuration before newEpoch
    FOLLOW = "follow"  # the set moved: ask again with the new set
    REFUSE = "refuse"


@dataclass(frozen=True)
class WriterDecision:
    action: Action
    config: Config
    record: MembershipRecord | None = None
    reason: str = ""


#: How many ADOPT/FOLLOW steps a writer takes before it refuses (O → O+N → N needs 2).
MAX_HOPS = 4


def _moved(journal_id: str, config: Config) -> str:
    return (
        f"journal {journal_id} moved to the JournalNodes {config.describe()}; "
        "set dfs.namenode.shared.edits.dir to them"
    )


def decide_configuration(
    asked: Config, records: Iterable[MembershipRecord | None], journal_id: str = ""
) -> WriterDecision:
    """What a writer does after ``getJournalState`` reached a quorum of ``asked``.

    ``records``: the record of each node that answered. The greatest record
    rules (docs/journalnode.md, "What a writer does with the records"):
    none → PROCEED with ``asked``; JOINT(O, N) → PROCEED if ``asked`` is O+N,
    ADOPT O+N if ``asked`` is O or N; STABLE(S) → PROCEED if ``asked`` is S,
    FOLLOW to S if ``asked`` is S's previous set or a joint configuration one
    of whose halves is S; anything else → REFUSE, with one sentence.
    """
    seen = [r for r in records if r is not None]
    if not seen:
        return WriterDecision(Action.PROCEED, asked)
    top = max(seen, key=lambda r: r.key)
    target = top.config
    if target == asked:
        return WriterDecision(Action.PROCEED, asked, top)
    if top.state is RecordState.JOINT:
        if asked.is_joint or asked.old not in (top.old, top.new):
            return WriterDecision(Action.REFUSE, asked, top, _moved(journal_id, target))
        return WriterDecision(Action.ADOPT, target, top)
    if asked.is_joint:
        related = top.new in asked.halves
    else:
        related = asked.old == top.old
    if related:
        return WriterDecision(Action.FOLLOW, target, top, _moved(journal_id, target))
    return WriterDecision(Action.REFUSE, asked, top, _moved(journal_id, target))


def check_writer(
    record: MembershipRecord | None, writer_config: Config | None, journal_id: str = ""
) -> str | None:
    """Why a JournalNode refuses ``newEpoch`` from a writer using ``writer_config``;
    None to accept.

    No record: anyone (Hadoop's behaviour; a Hadoop client sends no
    configuration). A record: a writer using exactly the record's
    configuration — O+N under JOINT, S under STABLE(S) — or a joint one
    starting from the record's newest set (S+X under STABLE(S), N+X under
    JOINT(O, N): a writer starting the next switch; such a configuration only
    exists once N became the set, and its quorums include a majority of it).
    Once a majority of O holds a record, no writer can win an epoch over a
    majority of O alone.
    """
    if record is None or writer_config == record.config:
        return None
    if writer_config is not None and writer_config.is_joint and writer_config.old == record.new:
        return None
    used = "no configuration" if writer_config is None else writer_config.describe()
    return f"{_moved(journal_id, record.config)} (the writer uses {used}; this node holds {record})"


def reader_config(asked: Config, records: Iterable[MembershipRecord | None]) -> Config:
    """The one set a reader reads from after a majority of ``asked`` showed it ``records``.

    The greatest record rules, as for a writer: none → ``asked``; STABLE(S) → S (the
    writer commits every batch to a majority of S); JOINT(O, N) → O (the writer commits
    to a majority of O *and* of N, and O holds the older history, which N may still be
    syncing). A reader needs no joint quorum: it only reads what a majority of the set it
    reads acknowledged, and a set the writer left shows it nothing newer, never
    something else (its record then names the set to move to).
    """
    seen = [r for r in records if r is not None]
    if not seen:
        return asked
    top = max(seen, key=lambda r: r.key)
    return Config(top.old) if top.state is RecordState.JOINT else Config(top.new)


def copies_needed(n: int) -> int:
    """How many of ``n`` nodes must hold a segment so that every majority of them holds
    one: ``n − majority(n) + 1`` (2 of 3, 3 of 5, 2 of 4)."""
    return n - majority(n) + 1


def history_covered(
    finalized: Mapping[str, Iterable[tuple[int, int]]],
    new_set: frozenset[str],
    segments: Iterable[tuple[int, int]],
) -> list[tuple[int, int]]:
    """The segments of ``segments`` that too few nodes of ``new_set`` hold; [] if none.

    ``finalized``: each answering node's finalized segments ``(first, last)``;
    a node holds a segment if it has it with the same bounds (the finalized
    ends agree on every node by the QJM's invariant; a different end is not
    counted). Each segment must be on :func:`copies_needed` nodes of the new
    set, so every majority of it can read it after the old set is let go.
    """
    need = copies_needed(len(new_set))
    held = {node: set(segs) for node, segs in finalized.items() if node in new_set}
    return [seg for seg in segments if sum(seg in segs for segs in held.values()) < need]
