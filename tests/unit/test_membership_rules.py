"""The joint-consensus rules of a JournalNode set change (protocol/membership.py).

Three kinds of test: hypothesis against a literal reading of each rule; a
bounded exhaustive check of the whole switch (every placement of the records a
crash can leave, every quorum a later writer can read) for replace-one-of-three,
3 → 5 and 5 → 3; and a planted bug ("the new set alone decides during the
switch") that the exhaustive check must catch, with the counterexample printed.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.qjournal.protocol import membership as m
from hadoop_qjm.qjournal.protocol.membership import Action, Config, MembershipRecord

pytestmark = pytest.mark.timeout(60)

NODES = [f"h{i}:8485" for i in range(7)]


def _majorities(nodes: frozenset[str]) -> list[frozenset[str]]:
    """Every minimal majority of ``nodes`` (a literal reading: more than half)."""
    k = len(nodes) // 2 + 1
    return [frozenset(c) for c in itertools.combinations(sorted(nodes), k)]


def _literal_reached(config: Config, successes: set[str]) -> bool:
    return all(any(q <= successes for q in _majorities(half)) for half in config.halves)


nodesets = st.sets(st.sampled_from(NODES), min_size=1, max_size=5).map(frozenset)


@settings(max_examples=300, deadline=None)
@given(old=nodesets, new=nodesets, answered=st.sets(st.sampled_from(NODES)))
def test_joint_quorum_is_a_majority_of_each_half(
    old: frozenset[str], new: frozenset[str], answered: set[str]
) -> None:
    for config in (Config(old), Config(old, new)):
        assert config.quorum_reached(answered) == _literal_reached(config, answered)
        # Impossible exactly when the nodes not failed cannot reach the quorum.
        alive = config.members - answered
        assert config.quorum_impossible(answered) == (not _literal_reached(config, alive))


# ---- the safety property of the quorum rule, and the planted bug -----------------------------------


def _quorums(config: Config, reached: Callable[[Config, set[str]], bool]) -> list[frozenset[str]]:
    members = sorted(config.members)
    return [
        frozenset(s)
        for r in range(1, len(members) + 1)
        for s in itertools.combinations(members, r)
        if reached(config, set(s))
    ]


def _quorum_intersection_violation(
    reached: Callable[[Config, set[str]], bool], old: frozenset[str], new: frozenset[str]
) -> tuple[frozenset[str], frozenset[str]] | None:
    """A joint quorum that misses a majority of O or of N (edits acknowledged there
    before or after the switch), or misses another joint quorum."""
    joint = Config(old, new)
    others = _majorities(old) + _majorities(new) + _quorums(joint, reached)
    for q in _quorums(joint, reached):
        for other in others:
            if not q & other:
                return q, other
    return None


SWITCHES = {
    "replace one of three": (frozenset(NODES[:3]), frozenset(NODES[:2] + [NODES[3]])),
    "grow 3 to 5": (frozenset(NODES[:3]), frozenset(NODES[:5])),
    "shrink 5 to 3": (frozenset(NODES[:5]), frozenset(NODES[2:5])),
    "replace all three": (frozenset(NODES[:3]), frozenset(NODES[3:6])),
}


def _new_set_alone_decides(config: Config, successes: set[str]) -> bool:
    """The planted bug: during the switch only the new set's majority is counted."""
    half = config.new if config.new is not None else config.old
    return len(set(successes) & half) >= len(half) // 2 + 1


@pytest.mark.parametrize("switch", sorted(SWITCHES))
def test_every_joint_quorum_meets_every_quorum_of_either_set(switch: str) -> None:
    old, new = SWITCHES[switch]
    assert _quorum_intersection_violation(lambda c, s: c.quorum_reached(s), old, new) is None


@pytest.mark.parametrize("switch", ["grow 3 to 5", "replace all three", "shrink 5 to 3"])
def test_the_check_catches_the_new_set_alone_deciding(switch: str) -> None:
    old, new = SWITCHES[switch]
    found = _quorum_intersection_violation(_new_set_alone_decides, old, new)
    assert found is not None, "the planted bug went unnoticed"
    q, other = found
    assert not q & other


# ---- records --------------------------------------------------------------------------------------


records = st.builds(
    lambda joint, old, new, epoch, version: (
        MembershipRecord.joint(old, new, epoch, version)
        if joint
        else MembershipRecord.stable(new, epoch, version, previous=old)
    ),
    st.booleans(),
    nodesets,
    nodesets,
    st.integers(0, 2**40),
    st.integers(0, 2**40),
)


@settings(max_examples=200, deadline=None)
@given(record=records)
def test_a_record_survives_its_text_form(record: MembershipRecord) -> None:
    assert MembershipRecord.parse(record.to_text()) == record


@pytest.mark.parametrize(
    "text",
    [
        "",
        "state=JOINT\nold=a:1\nepoch=1\nversion=1\n",
        "state=MAYBE\nmembers=a:1\nepoch=1\nversion=1\n",
        "state=STABLE\nmembers=a\nepoch=1\nversion=1\n",
        "state=STABLE\nmembers=a:1\nepoch=x\nversion=1\n",
        "state=STABLE\nmembers=a:1\nepoch=-1\nversion=1\n",
        "garbage",
    ],
)
def test_a_bad_record_is_one_sentence(text: str) -> None:
    with pytest.raises(IllegalArgumentException) as e:
        MembershipRecord.parse(text)
    assert "\n" not in str(e.value)


O3 = frozenset(NODES[:3])
N3 = frozenset(NODES[:2] + [NODES[3]])


def test_legal_successors() -> None:
    joint = MembershipRecord.joint(O3, N3, 5, 1)
    done = MembershipRecord.stable(N3, 5, 2, previous=O3)
    undone = MembershipRecord.stable(O3, 5, 2, previous=N3)
    assert m.check_successor(None, joint) is None
    assert m.check_successor(joint, joint) is None  # a retry
    assert m.check_successor(joint, done) is None
    assert m.check_successor(joint, undone) is None
    assert m.check_successor(MembershipRecord.stable(O3, 4, 0), joint) is None
    # Not newer, or (within one writer's epoch) skipping the joint step or starting from
    # another set: refused.
    assert "not newer" in m.check_successor(done, joint)
    assert "skips the joint step" in m.check_successor(
        MembershipRecord.stable(O3, 5, 0), MembershipRecord.stable(N3, 5, 1)
    )
    assert "does not start from" in m.check_successor(
        MembershipRecord.stable(N3, 5, 0), MembershipRecord.joint(O3, N3, 5, 1)
    )
    # A newer writer's record replaces any older one: a node that missed steps catches up.
    assert m.check_successor(MembershipRecord.stable(N3, 4, 7), joint) is None
    # A newer writer re-proposes the joint configuration it adopted.
    assert m.check_successor(joint, MembershipRecord.joint(O3, N3, 6, 2)) is None


def test_writer_decisions() -> None:
    o, n, j = Config(O3), Config(N3), Config(O3, N3)
    joint = MembershipRecord.joint(O3, N3, 5, 1)
    done = MembershipRecord.stable(N3, 5, 2, previous=O3)
    assert m.decide_configuration(o, [None, None]).action is Action.PROCEED
    assert m.decide_configuration(o, [None, joint]) == m.WriterDecision(Action.ADOPT, j, joint)
    assert m.decide_configuration(n, [joint]).action is Action.ADOPT
    assert m.decide_configuration(j, [joint, None]).action is Action.PROCEED
    assert m.decide_configuration(j, [joint, done]).action is Action.FOLLOW
    assert m.decide_configuration(o, [done, joint]).config == n
    assert m.decide_configuration(n, [done, None]).action is Action.PROCEED
    # A set the records cannot connect to: refused, with the sentence for the operator.
    other = Config(frozenset(NODES[4:7]))
    refused = m.decide_configuration(other, [done], "mycluster")
    assert refused.action is Action.REFUSE
    assert refused.reason == (
        f"journal mycluster moved to the JournalNodes {n.describe()}; "
        "set dfs.namenode.shared.edits.dir to them"
    )
    # The newer writer's record wins over a higher version from an older one.
    stale = MembershipRecord.joint(O3, frozenset(NODES[4:7]), 4, 9)
    assert m.decide_configuration(j, [stale, joint]).action is Action.PROCEED


def test_a_reader_reads_one_set_the_writer_commits_to() -> None:
    o, n = Config(O3), Config(N3)
    joint = MembershipRecord.joint(O3, N3, 5, 1)
    done = MembershipRecord.stable(N3, 5, 2, previous=O3)
    assert m.reader_config(o, [None, None]) == o
    assert m.reader_config(o, [None, joint]) == o  # joint: the old set, which has the history
    assert m.reader_config(n, [joint]) == o
    assert m.reader_config(o, [joint, done]) == n
    # A reader configured with a set several switches back goes straight to the newest.
    later = MembershipRecord.stable(frozenset(NODES[4:7]), 7, 4, previous=N3)
    assert m.reader_config(o, [done, later]) == Config(frozenset(NODES[4:7]))
    # The newer writer's record wins over a higher version from an older one.
    stale = MembershipRecord.stable(frozenset(NODES[4:7]), 4, 9, previous=O3)
    assert m.reader_config(o, [stale, done]) == n


def test_node_promises_only_to_the_recorded_configuration() -> None:
    joint = MembershipRecord.joint(O3, N3, 5, 1)
    assert m.check_writer(None, None) is None
    assert m.check_writer(None, Config(O3)) is None
    assert m.check_writer(joint, Config(O3, N3)) is None
    for writer in (None, Config(O3), Config(N3)):
        assert "set dfs.namenode.shared.edits.dir" in m.check_writer(joint, writer, "j")


def test_history_needs_a_copy_in_every_majority_of_the_new_set() -> None:
    assert [m.copies_needed(n) for n in (1, 2, 3, 4, 5)] == [1, 1, 2, 2, 3]
    new = frozenset(NODES[:5])
    segs = [(1, 10), (11, 20)]
    held = {NODES[0]: segs, NODES[1]: segs, NODES[2]: [(1, 10)], NODES[6]: segs}
    # (11, 20) is on two nodes of five (h6 is not in the set): a majority may miss it.
    assert m.history_covered(held, new, segs) == [(11, 20)]
    held[NODES[3]] = [(1, 10), (11, 21)]  # a different end is not a copy
    assert m.history_covered(held, new, segs) == [(11, 20)]
    held[NODES[4]] = segs
    assert m.history_covered(held, new, segs) == []


# ---- the whole switch, exhaustively ----------------------------------------------------------------
#
# A crash can leave each node of O ∪ N with no record, JOINT(O, N) or STABLE(N) (S2 and S5
# write to every node and count a joint quorum). Edits were last acknowledged under the
# newest configuration whose record reached its quorum: O before S2 commits, O+N after, N
# after S5. A later writer, configured with O or with N (after the switch: the config
# edit), reads *any* quorum of the configuration it asks, adopts/follows as decided, and
# must win newEpoch on a quorum whose every node accepts it (check_writer). It is safe if
# that quorum meets every quorum the last edits may have been acknowledged by.

NONE, JOINT, STABLE = 0, 1, 2
Decide = Callable[..., m.WriterDecision]
Check = Callable[..., "str | None"]


def _last_acked_config(
    old: frozenset[str],
    new: frozenset[str],
    placement: dict,
    rule: Callable[[Config, set[str]], bool],
) -> Config:
    """The configuration the newest edits were acknowledged under: the writer counts its
    record writes (S2, S5) with the same quorum ``rule`` as its batches."""
    joint = Config(old, new)
    if not rule(joint, {n for n, s in placement.items() if s != NONE}):
        return Config(old)
    if rule(joint, {n for n, s in placement.items() if s == STABLE}):
        return Config(new)
    return joint


def _writer_outcomes(
    old: frozenset[str],
    new: frozenset[str],
    placement: dict[str, int],
    configured: Config,
    decide: Decide,
    check: Check,
) -> set[tuple[Config, frozenset[str]]]:
    """Every (configuration, newEpoch quorum) a later writer can end with. The writer
    decides on every record it has read so far (over all its hops)."""
    record = {
        NONE: None,
        JOINT: MembershipRecord.joint(old, new, 5, 1),
        STABLE: MembershipRecord.stable(new, 5, 2, previous=old),
    }
    outcomes: set[tuple[Config, frozenset[str]]] = set()
    done: set[tuple[Config, frozenset[int]]] = set()
    todo = [(configured, frozenset[int](), 0)]
    while todo:
        asked, seen, hops = todo.pop()
        if (asked, seen) in done:
            continue
        done.add((asked, seen))
        for q in _quorums(asked, lambda c, s: c.quorum_reached(s)):
            now = seen | {placement[n] for n in q}
            d = decide(asked, [record[s] for s in now])
            if d.action is Action.PROCEED:
                if all(check(record[placement[n]], asked) is None for n in q):
                    outcomes.add((asked, q))
            elif d.action in (Action.ADOPT, Action.FOLLOW) and hops < m.MAX_HOPS:
                todo.append((d.config, now, hops + 1))
    return outcomes


def _switch_violation(
    old: frozenset[str],
    new: frozenset[str],
    decide: Decide,
    check: Check = m.check_writer,
    ack_rule: Callable[[Config, set[str]], bool] = lambda c, s: c.quorum_reached(s),
) -> str | None:
    members = sorted(old | new)
    for states in itertools.product((NONE, JOINT, STABLE), repeat=len(members)):
        placement = dict(zip(members, states, strict=True))
        if STABLE in states and not ack_rule(
            Config(old, new), {n for n, s in placement.items() if s != NONE}
        ):
            continue  # S5 (STABLE) runs only after S2 (JOINT) reached its quorum
        acked_config = _last_acked_config(old, new, placement, ack_rule)
        acked = _quorums(acked_config, ack_rule)
        acked = [a for a in acked if not any(b < a for b in acked)]  # the minimal ones
        # A writer configured with N is legal only once the switch is done (S6).
        writers = [Config(old)] + ([Config(new)] if acked_config == Config(new) else [])
        for configured in writers:
            for config, q in _writer_outcomes(old, new, placement, configured, decide, check):
                for a in acked:
                    if not q & a:
                        return (
                            f"records {placement}: edits acked by {sorted(a)} under "
                            f"{acked_config.describe()}; a writer configured with "
                            f"{configured.describe()} recovers from {sorted(q)} under "
                            f"{config.describe()}"
                        )
    return None


@pytest.mark.parametrize("switch", ["replace one of three", "grow 3 to 5", "shrink 5 to 3"])
def test_no_crash_during_the_switch_lets_a_writer_miss_an_acknowledged_edit(switch: str) -> None:
    old, new = SWITCHES[switch]
    assert _switch_violation(old, new, m.decide_configuration) is None


def test_the_exhaustive_check_catches_the_new_set_alone_deciding_during_the_switch() -> None:
    """The planted bug of issue 22: while joint, a call (the JOINT record's write, and
    every batch) counts as done once a majority of N has it. JOINT may then sit on a
    minority of O only, and a writer configured with O that fails over reads a majority
    of O without it, recovers from O alone and misses the batches N acknowledged."""
    old, new = SWITCHES["grow 3 to 5"]
    found = _switch_violation(old, new, m.decide_configuration, ack_rule=_new_set_alone_decides)
    assert found is not None, "the planted bug went unnoticed"
    assert "a writer configured with h0:8485;h1:8485;h2:8485 recovers from" in found, found
    # The same search with the joint rule finds nothing (the other test): the bug is seen.


def _ignores_stable_records(asked: Config, records, journal_id: str = "") -> m.WriterDecision:  # noqa: ANN001
    """A planted bug: a writer that goes on with its configured set after the switch."""
    decision = m.decide_configuration(asked, records, journal_id)
    if decision.action is Action.FOLLOW:
        return m.WriterDecision(Action.PROCEED, asked)
    return decision


def _no_node_check(*args: object) -> None:
    return None


@pytest.mark.parametrize("switch", ["replace one of three", "shrink 5 to 3"])
def test_the_node_check_stops_an_old_writer_that_ignores_the_records(switch: str) -> None:
    old, new = SWITCHES[switch]
    # The node check alone stops it (nodes holding a record refuse it an epoch) ...
    assert _switch_violation(old, new, _ignores_stable_records) is None
    # ... without it, the check finds the lost edit and says how ...
    found = _switch_violation(old, new, _ignores_stable_records, _no_node_check)
    assert found is not None and "recovers from" in found, found
    # ... and the correct writer needs no node check to be safe.
    assert _switch_violation(old, new, m.decide_configuration, _no_node_check) is None
