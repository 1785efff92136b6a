"""The scrubber's pure rules (issue 27): SegmentVerifier, throttle_delay, is_copy_confirmed."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.editlog.edit_log_file_input_stream import scan_edit_log
from hadoop_qjm.editlog.fs_edit_log_op import DEFAULT_MAX_OP_SIZE, edit_log_header
from hadoop_qjm.qjournal.server.scrub_rules import (
    RepairOutcome,
    SegmentVerifier,
    confirmed_copy,
    is_copy_confirmed,
    throttle_delay,
)
from hadoop_qjm.testing.qjm_test_util import create_txn_data

pytestmark = pytest.mark.timeout(60)

SEGMENT = edit_log_header() + create_txn_data(1, 10)


def verify(data: bytes, first: int = 1, last: int = 10, pieces: list[int] | None = None):
    v = SegmentVerifier(first, last, DEFAULT_MAX_OP_SIZE)
    at = 0
    for size in pieces or [len(data)]:
        v.feed(data[at : at + size])
        at += size
    v.feed(data[at:])
    return v.finish(), v


def test_an_intact_segment_has_no_finding_and_its_valid_length() -> None:
    finding, v = verify(SEGMENT + b"\xff" + b"\x00" * 100)
    assert finding is None
    assert v.valid_length == len(SEGMENT)


@pytest.mark.parametrize(
    ("damage", "txid", "reason"),
    [
        (lambda d: d[: len(d) - 30], 10, "truncated"),
        (lambda d: d[:8], 1, "ends before"),
        (lambda d: d[:4], 1, "header is truncated"),
        (lambda d: b"\xff\xff\xff\xff" + d[4:], 1, "bad header"),
    ],
)
def test_truncation_and_bad_headers_are_findings(damage, txid, reason) -> None:
    finding, _ = verify(damage(SEGMENT))
    assert finding is not None and finding.txid == txid and reason in finding.reason


def test_a_missing_txid_is_a_finding_even_with_good_crcs() -> None:
    data = edit_log_header() + create_txn_data(1, 3) + create_txn_data(5, 6)
    finding, _ = verify(data)
    assert finding is not None and finding.txid == 4 and "found txid 5" in finding.reason


@settings(max_examples=200, deadline=None)
@given(
    flip=st.integers(min_value=8, max_value=len(SEGMENT) - 1),
    bit=st.integers(min_value=0, max_value=7),
    pieces=st.lists(st.integers(min_value=1, max_value=64), max_size=12),
)
def test_any_flipped_bit_is_found_whatever_the_read_sizes(flip, bit, pieces) -> None:
    # A literal reading: the segment is intact iff it equals what was written; and where
    # the verifier says the damage is, the op at that position holds the flipped byte.
    damaged = bytearray(SEGMENT)
    damaged[flip] ^= 1 << bit
    finding, _ = verify(bytes(damaged), pieces=pieces)
    assert finding is not None
    whole, _ = verify(bytes(damaged))
    assert finding == whole
    assert finding.position <= flip
    # Everything before the finding's position scans cleanly up to the txid before it.
    assert scan_edit_log(bytes(damaged[: finding.position])).last_txid in (
        finding.txid - 1,
        -12345,
    )


def test_throttle_delay() -> None:
    assert throttle_delay(1000, 0.0, 1000) == pytest.approx(1.0)
    assert throttle_delay(1000, 2.0, 1000) == 0.0
    assert throttle_delay(500, 0.25, 1000) == pytest.approx(0.25)


def test_a_copy_is_confirmed_only_by_a_second_peer_with_equal_bytes() -> None:
    assert is_copy_confirmed(True, "a", ["b", "a"])
    assert not is_copy_confirmed(True, "a", [])  # one copy alone is never enough
    assert not is_copy_confirmed(True, "a", ["b"])
    assert not is_copy_confirmed(False, "a", ["a"])  # it must verify by itself


class _PerOpVerifier(SegmentVerifier):
    """The verifier without its fast path: every op through ``scan_op``, one call each."""

    def _walk(self, pos: int) -> int:
        return pos


@settings(max_examples=300, deadline=None)
@given(
    flips=st.lists(st.tuples(st.integers(0, len(SEGMENT) - 1), st.integers(0, 7)), max_size=2),
    cut=st.integers(min_value=0, max_value=len(SEGMENT) + 20),
    last=st.integers(min_value=1, max_value=12),
    pieces=st.lists(st.integers(min_value=1, max_value=64), max_size=12),
)
def test_the_fast_path_finds_what_the_per_op_path_finds(flips, cut, last, pieces) -> None:
    damaged = bytearray(SEGMENT + b"\xff" * 20)
    for at, bit in flips:
        damaged[at] ^= 1 << bit
    data = bytes(damaged[:cut])
    results = []
    for cls in (SegmentVerifier, _PerOpVerifier):
        v = cls(1, last, DEFAULT_MAX_OP_SIZE)
        at = 0
        for size in pieces:
            v.feed(data[at : at + size])
            at += size
        v.feed(data[at:])
        results.append((v.finish(), v.valid_length))
    assert results[0] == results[1]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.sampled_from(["a", "b", "c"])), max_size=5))
def test_the_confirmed_copy_is_the_first_verified_one_another_peer_holds_too(copies):
    """confirmed_copy, against the rule read literally: the first copy (in the peers'
    order) that verifies itself and whose md5 some other peer's copy has."""
    literal = next(
        (
            j
            for j, (verified, md5) in enumerate(copies)
            if verified and any(other == md5 for k, (_, other) in enumerate(copies) if k != j)
        ),
        None,
    )
    assert confirmed_copy(copies) == literal


def test_repair_outcomes_are_the_words_the_scrubber_logged():
    assert [o.value for o in RepairOutcome] == ["in use", "gone", "done"]
    assert RepairOutcome.IN_USE == "in use"
