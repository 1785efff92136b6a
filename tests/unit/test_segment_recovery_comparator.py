"""TestSegmentRecoveryComparator (digest §8) and a hypothesis check of the choice of the
recovery source against a brute-force reading of the design paper's §2.9 rules."""

from __future__ import annotations

from functools import cmp_to_key

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.common.exceptions import HadoopAssertionError, IllegalArgumentException
from hadoop_qjm.qjournal.client.segment_recovery_comparator import (
    RecoveryDecision,
    best_recovery_source,
    compare,
    decide_recovery,
    max_seen_epoch,
)
from hadoop_qjm.qjournal.protocol.messages import PrepareRecoveryResponse, SegmentState


def response(
    start: int | None,
    end: int = 0,
    in_progress: bool = True,
    accepted_in_epoch: int | None = None,
    last_writer_epoch: int = 0,
) -> PrepareRecoveryResponse:
    state = None if start is None else SegmentState(start, end, in_progress)
    return PrepareRecoveryResponse(state, accepted_in_epoch, last_writer_epoch)


INPROGRESS_1_3 = response(1, 3)
INPROGRESS_1_4 = response(1, 4)
FINALIZED_1_3 = response(1, 3, in_progress=False)


def test_equal_to_itself() -> None:
    for r in (INPROGRESS_1_3, FINALIZED_1_3, response(None)):
        assert compare(r, r) == 0


def test_longer_in_progress_wins() -> None:
    assert compare(INPROGRESS_1_4, INPROGRESS_1_3) > 0
    assert compare(INPROGRESS_1_3, INPROGRESS_1_4) < 0


def test_finalized_beats_longer_in_progress() -> None:
    assert compare(FINALIZED_1_3, INPROGRESS_1_4) > 0
    assert compare(INPROGRESS_1_4, FINALIZED_1_3) < 0


def test_finalized_beats_in_progress_with_accepted_proposal() -> None:
    accepted = response(1, 4, accepted_in_epoch=1)
    assert compare(FINALIZED_1_3, accepted) > 0


def test_any_segment_beats_none() -> None:
    assert compare(INPROGRESS_1_3, response(None)) > 0
    assert compare(response(None), response(None)) == 0


def test_newer_writer_epoch_beats_longer_log() -> None:
    """Design paper §2.10.6: 151 written in epoch 2 beats 151-153 written in epoch 1."""
    jn1 = response(151, 153, last_writer_epoch=1)
    jn2 = response(151, 151, last_writer_epoch=2)
    assert compare(jn2, jn1) > 0


def test_accepted_epoch_beats_longer_log() -> None:
    """Design paper §2.10.7: JN1 accepted 150 in epoch 2; JN2's 153 is from epoch 1."""
    jn1 = response(101, 150, accepted_in_epoch=2, last_writer_epoch=1)
    jn2 = response(101, 153, last_writer_epoch=1)
    assert max_seen_epoch(jn1) == 2 and max_seen_epoch(jn2) == 1
    assert best_recovery_source([("JN1", jn1), ("JN2", jn2)])[0] == "JN1"


def test_mismatched_segments_are_refused() -> None:
    with pytest.raises(IllegalArgumentException, match="do not have the same start txid"):
        compare(response(1, 3), response(4, 6))
    with pytest.raises(HadoopAssertionError, match="finalized segs with different lengths"):
        compare(response(1, 3, in_progress=False), response(1, 4, in_progress=False))


def test_first_of_equals_wins() -> None:
    assert best_recovery_source([("a", INPROGRESS_1_3), ("b", response(1, 3))])[0] == "a"


# ---- brute force: the paper's rules read literally --------------------------------------------


def acceptable_sources(responses: list[PrepareRecoveryResponse]) -> set[int]:
    """Indexes of the responses §2.9 allows as recovery source.

    Rule 1: a node without the segment is no source (if none has it, there is
    nothing to recover and any answer will do). Rule 2: if any node has it
    finalized, a finalized copy is the source. Rule 3: otherwise the highest
    maxSeenEpoch (3a, 3b), then the most transactions (3c).
    """
    with_segment = [i for i, r in enumerate(responses) if r.segment_state is not None]
    if not with_segment:
        return set(range(len(responses)))
    finalized = [i for i in with_segment if not responses[i].segment_state.is_in_progress]
    if finalized:
        return set(finalized)

    def seen(i: int) -> int:
        r = responses[i]
        return max(r.last_writer_epoch, r.accepted_in_epoch or 0)

    top_epoch = max(seen(i) for i in with_segment)
    newest = [i for i in with_segment if seen(i) == top_epoch]
    longest = max(responses[i].segment_state.end_txid for i in newest)
    return {i for i in newest if responses[i].segment_state.end_txid == longest}


@st.composite
def prepare_responses(draw) -> list[PrepareRecoveryResponse]:
    """Answers for segment 101 as real nodes could give them: finalized copies agree."""
    finalized_end = draw(st.integers(101, 110))
    answers = []
    for _ in range(draw(st.integers(1, 7))):
        kind = draw(st.sampled_from(["none", "in_progress", "finalized"]))
        writer_epoch = draw(st.integers(0, 4))
        if kind == "none":
            answers.append(response(None, last_writer_epoch=writer_epoch))
        elif kind == "finalized":
            answers.append(response(101, finalized_end, False, None, writer_epoch))
        else:
            accepted = draw(st.one_of(st.none(), st.integers(1, 5)))
            end = draw(st.integers(101, 115))
            answers.append(response(101, end, True, accepted, writer_epoch))
    return answers


@settings(max_examples=600, deadline=None)
@given(prepare_responses())
def test_chosen_source_follows_the_papers_rules(answers) -> None:
    chosen, _ = best_recovery_source(list(enumerate(answers)))
    assert chosen in acceptable_sources(answers)


@settings(max_examples=500, deadline=None)
@given(prepare_responses())
def test_compare_is_a_total_preorder(answers) -> None:
    for a in answers:
        for b in answers:
            assert compare(a, b) == -compare(b, a)
            for c in answers:
                if compare(a, b) >= 0 and compare(b, c) >= 0:
                    assert compare(a, c) >= 0
    # Sorting by it agrees with the maximum.
    ordered = sorted(answers, key=cmp_to_key(compare))
    assert compare(ordered[-1], best_recovery_source(list(enumerate(answers)))[1]) == 0


# ---- the writer's decision after prepareRecovery (decide_recovery) ---------------------------
def answered(last_committed_txid: int | None = None, **kwargs) -> PrepareRecoveryResponse:
    r = response(**kwargs)
    return PrepareRecoveryResponse(
        r.segment_state, r.accepted_in_epoch, r.last_writer_epoch, last_committed_txid
    )


def test_no_node_with_the_segment_means_nothing_to_recover() -> None:
    assert decide_recovery(1, [("jn0", response(None)), ("jn1", response(None))]) is None


def test_an_accepted_proposal_is_recovered_as_accepted() -> None:
    #   jn0   1 2 3        (last writer 1)
    #   jn1   1 2          accepted in epoch 2
    accepted = response(1, 2, accepted_in_epoch=2, last_writer_epoch=1)
    decision = decide_recovery(1, [("jn0", response(1, 3, last_writer_epoch=1)), ("jn1", accepted)])
    assert decision == RecoveryDecision("jn1", accepted)
    assert decision.already_accepted


def test_otherwise_the_longest_log() -> None:
    decision = decide_recovery(1, [("jn0", INPROGRESS_1_3), ("jn1", INPROGRESS_1_4)])
    assert decision == RecoveryDecision("jn1", INPROGRESS_1_4)
    assert not decision.already_accepted


def test_a_committed_txid_past_the_source_is_never_cut_off() -> None:
    #   jn0   1 2 3        saw txid 4 committed
    #   jn1   1 2 3 (source: finalized)
    answers = [
        ("jn0", answered(4, start=1, end=3)),
        ("jn1", answered(None, start=1, end=3, in_progress=False)),
    ]
    with pytest.raises(HadoopAssertionError, match="logger jn0 had seen txid 4 committed"):
        decide_recovery(1, answers)


def test_the_source_must_start_at_the_segment() -> None:
    with pytest.raises(HadoopAssertionError, match="does not start at 2"):
        decide_recovery(2, [("jn0", INPROGRESS_1_3)])
