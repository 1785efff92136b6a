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
    UNFORMATTED,
    PeerAnswer,
    PeerManifest,
    catch_up_state,
    decide_format,
    majority,
    reported_catch_up,
)
from hadoop_qjm.qjournal.protocol.sync_rules import segments_to_fetch

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


def seg(start: int, end: int) -> RemoteEditLog:
    return RemoteEditLog(start, end)


def test_catch_up_counts_finalized_segments_and_txns() -> None:
    peer = PeerManifest("p:1", (seg(1, 10), seg(11, 15), RemoteEditLog(16, -1, True)), 15)
    c = catch_up_state([], [peer], 15)
    assert (c.segments_behind, c.txns_behind, c.state, c.text) == (2, 15, SYNCING, SYNCING)
    c = catch_up_state([seg(1, 10), seg(11, 15)], [peer], 15)
    assert (c.state, c.text) == (IN_SYNC, "in sync with 1 of 1 peers")


def test_a_segment_only_one_peer_holds_keeps_the_node_syncing() -> None:
    """Issue 33 item 2, as found: JN2 (wiped) synced from JN3, which lacks 29-56 too;
    only JN1 holds it. Against JN3 alone JN2 looked in sync; against both it is not.

    ::

        JN1: 1-28  29-56  57-80
        JN3: 1-28         57-80
        JN2: 1-28         57-80   <- this node
    """
    here = [seg(1, 28), seg(57, 80)]
    jn1 = PeerManifest("jn1:8485", (seg(1, 28), seg(29, 56), seg(57, 80)), 80)
    jn3 = PeerManifest("jn3:8485", (seg(1, 28), seg(57, 80)), 80)
    assert catch_up_state(here, [jn3], 80).state == IN_SYNC  # what the old round saw
    c = catch_up_state(here, [jn3, jn1], 80)
    assert (c.state, c.segments_behind, c.txns_behind, c.peers_answered) == (SYNCING, 1, 28, 2)
    c = catch_up_state([*here, seg(29, 56)], [jn3, jn1], 80)
    assert c.text == "in sync with 2 of 2 peers"


def test_an_unreachable_peer_is_counted_and_named() -> None:
    here = [seg(1, 28)]
    jn3 = PeerManifest("jn3:8485", (seg(1, 28),), 28)
    down = PeerManifest("jn1:8485", error="ConnectException: refused")
    c = catch_up_state(here, [jn3, down], 28)
    assert (c.text, c.unreachable) == ("in sync with 1 of 2 peers", ("jn1:8485",))
    # No peer's word: never "in sync".
    c = catch_up_state(here, [down, PeerManifest("jn3:8485", error="timed out")], 28)
    assert (c.state, c.peers_answered, c.peers) == (SYNCING, 0, 2)


def test_segments_past_every_known_committed_txid_are_not_behind() -> None:
    peer = PeerManifest("p:1", (seg(1, 10), seg(11, 20)), 10)
    assert catch_up_state([seg(1, 10)], [peer], 10).state == IN_SYNC
    # A peer knowing 20 committed: this node (committed 10) is one segment behind.
    peer = PeerManifest("p:1", (seg(1, 10), seg(11, 20)), 20)
    assert catch_up_state([seg(1, 10)], [peer], 10).segments_behind == 1


def test_a_formatted_journal_never_reads_unformatted() -> None:
    assert reported_catch_up(UNFORMATTED, formatted=True) == SYNCING
    assert reported_catch_up(UNFORMATTED, formatted=False) == UNFORMATTED
    assert reported_catch_up(IN_SYNC, formatted=True) == IN_SYNC


def _layout(parts: list[tuple[int, int]]) -> list[RemoteEditLog]:
    """A manifest's segments: in order, never overlapping (gap, length) after each other."""
    logs, start = [], 1
    for gap, length in parts:
        logs.append(seg(start + gap, start + gap + length))
        start += gap + length + 1
    return logs


segments = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 4)), max_size=6).map(_layout)


@given(
    here=segments,
    peers=st.lists(st.one_of(st.none(), st.tuples(segments, st.integers(0, 50))), max_size=4),
    committed=st.integers(0, 50),
)
def test_catch_up_matches_a_literal_reading(here, peers, committed) -> None:
    """Behind by each start txid that some answering peer lists finalized, up to the
    highest committed txid known, and that no segment here starts at."""
    answers = [
        PeerManifest(f"p{i}", None if p is None else tuple(p[0]), 0 if p is None else p[1])
        for i, p in enumerate(peers)
    ]
    c = catch_up_state(here, answers, committed)
    answered = [a for a in answers if a.logs is not None]
    bound = max([committed, *(a.committed_txid for a in answered)])
    starts = {log.start_txid for log in here}
    behind = {
        log.start_txid for a in answered for log in a.logs
        if log.start_txid not in starts and log.end_txid <= bound
    }  # fmt: skip
    assert c.segments_behind == len(behind)
    assert c.peers_answered == len(answered) and c.peers == len(answers)
    assert (c.state == IN_SYNC) == (not behind and bool(answered))


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


_LOGS = st.lists(
    st.builds(
        lambda start, length, in_progress: RemoteEditLog(start, start + length, in_progress),
        st.integers(1, 8),
        st.integers(0, 2),
        st.booleans(),
    ),
    max_size=5,
).map(lambda logs: list({log.start_txid: log for log in logs}.values()))


@given(_LOGS, st.lists(_LOGS, max_size=3))
def test_the_syncer_fetches_each_missing_finalized_segment_once_from_the_first_peer(local, remote):
    """sync_rules.segments_to_fetch, against the rule read literally: every finalized
    segment a peer lists whose start txid is not here, the first peer's, by start txid."""
    here = {log.start_txid for log in local}
    literal: dict[int, RemoteEditLog] = {}
    for logs in remote:
        for log in logs:
            if not log.is_in_progress and log.start_txid not in here:
                literal.setdefault(log.start_txid, log)
    assert segments_to_fetch(local, remote) == [literal[s] for s in sorted(literal)]
