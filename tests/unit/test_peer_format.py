"""The self-format rule (HDFS-16690, stricter): a majority of the configured JournalNodes
must answer with a formatted journal, all alike; and the catch-up count."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hadoop_qjm.common.remote_edit_log import RemoteEditLog
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.qjournal.protocol.peer_format import (
    IN_SYNC,
    SYNCING,
    PeerAnswer,
    catch_up_state,
    decide_format,
    majority,
)

pytestmark = pytest.mark.timeout(60)

SI = StorageInfo(-66, 12345, "mycluster", 0)
OTHER = StorageInfo(-66, 99999, "mycluster", 0)


def ok(peer: str, si: StorageInfo = SI, edits: bool = True) -> PeerAnswer:
    return PeerAnswer(peer, si, holds_edits=edits)


def test_a_majority_agreeing_formats() -> None:
    d = decide_format([ok("jn1:1"), ok("jn2:2")], 3, require_edits=True)
    assert d.ok and d.storage_info == SI
    assert "2 of 3 JournalNodes (jn1:1, jn2:2) agree on namespaceID=12345" in d.reason


def test_one_disagreeing_peer_refuses_even_with_a_majority() -> None:
    d = decide_format([ok("jn1:1"), ok("jn2:2"), ok("jn3:3", OTHER)], 5)
    assert not d.ok
    assert "disagree" in d.reason
    assert "jn1:1, jn2:2 say namespaceID=12345" in d.reason
    assert "jn3:3 say namespaceID=99999" in d.reason


def test_a_minority_refuses_and_says_who_did_not_answer() -> None:
    d = decide_format(
        [ok("jn1:1"), PeerAnswer("jn2:2", error="ConnectionRefusedError: refused")], 3
    )
    assert not d.ok
    assert "only 1 of the 3 configured JournalNodes" in d.reason
    assert "a majority needs 2" in d.reason
    assert "jn2:2: ConnectionRefusedError: refused" in d.reason


def test_an_unformatted_majority_refuses() -> None:
    unformatted = PeerAnswer("jn2:2", error="its journal is not formatted")
    d = decide_format([unformatted, PeerAnswer("jn3:3", error="its journal is not formatted")], 3)
    assert not d.ok and "only 0 of the 3" in d.reason


def test_the_daemon_waits_for_edits() -> None:
    answers = [ok("jn1:1", edits=False), ok("jn2:2", edits=False)]
    assert decide_format(answers, 3).ok
    d = decide_format(answers, 3, require_edits=True)
    assert not d.ok and "holds edits" in d.reason


@given(
    configured=st.integers(1, 9),
    kinds=st.lists(st.sampled_from(["same", "other", "none"]), max_size=9),
)
def test_decide_format_against_a_literal_reading(configured: int, kinds: list[str]) -> None:
    """Formats iff at least a majority answered, and all that answered said the same."""
    kinds = kinds[: configured - 1]  # the peers: every configured node but this one
    answers = [
        PeerAnswer(f"p{i}:{i}", {"same": SI, "other": OTHER, "none": None}[k], True)
        for i, k in enumerate(kinds)
    ]
    answered = [k for k in kinds if k != "none"]
    expected = len(answered) > configured / 2 and len(set(answered)) == 1
    assert decide_format(answers, configured).ok == expected
    assert majority(configured) > configured / 2 >= majority(configured) - 1


def test_catch_up_counts_finalized_segments_and_txns() -> None:
    c = catch_up_state([RemoteEditLog(1, 10), RemoteEditLog(11, 15), RemoteEditLog(16, -1, True)])
    assert (c.segments_behind, c.txns_behind, c.state) == (2, 15, SYNCING)
    assert catch_up_state([]).state == IN_SYNC


def test_the_membership_record_a_majority_agrees_on_is_copied() -> None:
    from hadoop_qjm.qjournal.protocol.peer_format import decide_membership

    si = StorageInfo(-66, 12345, "mycluster", 0)
    rec, other = "state=STABLE\nmembers=a:1\n", "state=STABLE\nmembers=b:1\n"

    def answers(*records):  # noqa: ANN002, ANN202
        return [PeerAnswer(f"p{i}:1", si, membership=r) for i, r in enumerate(records)]

    assert decide_membership(answers(rec, rec), 3).record == rec
    assert decide_membership(answers(rec, rec, None), 3).record == rec
    refused = decide_membership(answers(rec, None, None), 3)
    assert refused.record is None and "a majority needs 2" in refused.reason
    assert "differ" in decide_membership(answers(rec, rec, other), 3).reason
    assert decide_membership(answers(None, None), 3).record is None
    # An unformatted peer's record (there is none to have) never counts.
    unformatted = [PeerAnswer("p9:1", None, membership=rec)]
    assert decide_membership(answers(rec) + unformatted, 3).record is None
