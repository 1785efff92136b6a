"""RedundantEditLogInputStream, chain_and_make_redundant_streams and the lazy HTTP
stream (HADOOP-QJM-DIGEST.md §9), over in-memory segments and a fake HTTP opener."""

from __future__ import annotations

import http.client
import io

import pytest

from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.editlog.fs_edit_log_op import edit_log_header
from hadoop_qjm.editlog.redundant_edit_log_input_stream import (
    EditLogHttpInputStream,
    RedundantEditLogInputStream,
    chain_and_make_redundant_streams,
)
from hadoop_qjm.testing.qjm_test_util import create_txn_data, verify_edits


def segment(first: int, last: int, *, in_progress: bool = False, corrupt_at: int | None = None):
    data = bytearray(edit_log_header() + create_txn_data(first, last - first + 1))
    if corrupt_at is not None:
        # Flip a byte inside the op of txid corrupt_at: its CRC no longer matches.
        offset = 8 + len(create_txn_data(first, corrupt_at - first)) + 20
        data[offset] ^= 0xFF
    return EditLogFileInputStream.from_bytes(
        bytes(data),
        first,
        last,
        in_progress,
        name=f"seg[{first},{last}]{'*' if corrupt_at else ''}",
    )


def test_reads_the_longest_copy() -> None:
    stream = RedundantEditLogInputStream([segment(1, 3), segment(1, 5)], 1)
    assert (stream.first_txid, stream.last_txid) == (1, 5)
    verify_edits([stream], 1, 5)


def test_starts_at_the_requested_txid() -> None:
    stream = RedundantEditLogInputStream([segment(1, 10)], 4)
    verify_edits([stream], 4, 10)


def test_fails_over_to_another_copy_and_skips_ahead() -> None:
    stream = RedundantEditLogInputStream([segment(1, 5, corrupt_at=3), segment(1, 5)], 1)
    assert [op.txid for op in stream] == [1, 2, 3, 4, 5]


def test_refuses_to_fail_over_to_a_shorter_copy() -> None:
    stream = RedundantEditLogInputStream([segment(1, 5, corrupt_at=3), segment(1, 4)], 1)
    assert stream.read_op().txid == 1
    assert stream.read_op().txid == 2
    with pytest.raises(IOException, match="metadata will be lost forever"):
        stream.read_op()


def test_last_copy_failing_raises_its_error() -> None:
    stream = RedundantEditLogInputStream([segment(1, 5, corrupt_at=2)], 1)
    assert stream.read_op().txid == 1
    with pytest.raises(IOException, match="corrupt"):
        stream.read_op()


def test_premature_end_fails_over() -> None:
    # A copy that claims more than it holds (a manifest ahead of the data).
    short = EditLogFileInputStream.from_bytes(
        edit_log_header() + create_txn_data(1, 3), 1, 5, True, name="short"
    )
    stream = RedundantEditLogInputStream([short, segment(1, 5)], 1)
    # Equal claimed ends: the order is kept, "short" is read first and fails over at 4.
    assert [op.txid for op in stream] == [1, 2, 3, 4, 5]
    lone = EditLogFileInputStream.from_bytes(
        edit_log_header() + create_txn_data(1, 3), 1, 5, True, name="lone"
    )
    with pytest.raises(IOException, match="got premature end-of-file at txid 3"):
        list(RedundantEditLogInputStream([lone], 1))


def test_copies_must_share_a_first_txid() -> None:
    with pytest.raises(IllegalArgumentException, match="same start transaction ID"):
        RedundantEditLogInputStream([segment(1, 3), segment(2, 3)], 1)


def test_skip_until_keeps_the_op() -> None:
    stream = RedundantEditLogInputStream([segment(1, 5)], 1)
    assert stream.skip_until(3)
    assert stream.read_op().txid == 3
    assert not stream.skip_until(9)


def test_chain_groups_by_first_txid_and_prefers_finalized() -> None:
    streams = chain_and_make_redundant_streams(
        [
            segment(4, 6, in_progress=True),
            segment(1, 3),
            segment(4, 6),
            segment(1, 3),
            segment(7, 9, in_progress=True),
            segment(7, 8, in_progress=True),
        ],
        1,
    )
    assert [(s.first_txid, s.last_txid, len(s.streams)) for s in streams] == [
        (1, 3, 2),
        (4, 6, 1),  # the in-progress copy of 4 was discarded
        (7, 9, 2),
    ]
    assert not streams[1].is_in_progress
    verify_edits(streams, 1, 9)


class _Response(io.BytesIO):
    def __init__(self, body: bytes, headers: dict[str, str], status: int = 200) -> None:
        super().__init__(body)
        self.headers = headers
        self.status = status


def test_http_stream_is_lazy_and_reads_the_segment() -> None:
    body = edit_log_header() + create_txn_data(1, 3)
    fetched = []

    def opener(url: str, timeout_s: float):
        fetched.append((url, timeout_s))
        return _Response(body, {"Content-Length": str(len(body))})

    stream = EditLogHttpInputStream("http://jn/getJournal?x", 1, 3, False, opener=opener)
    assert fetched == []
    verify_edits([RedundantEditLogInputStream([stream], 1)], 1, 3)
    assert fetched == [("http://jn/getJournal?x", 60.0)]


def test_http_stream_needs_a_content_length_and_all_of_it() -> None:
    body = edit_log_header() + create_txn_data(1, 3)
    no_length = EditLogHttpInputStream("u", 1, 3, False, opener=lambda u, t: _Response(body, {}))
    with pytest.raises(IOException, match="Content-Length header is not provided"):
        no_length.read_op()
    truncated = EditLogHttpInputStream(
        "u", 1, 3, False, opener=lambda u, t: _Response(body[:-5], {"Content-Length": "999"})
    )
    with pytest.raises(IOException, match="advertised 999"):
        truncated.read_op()


def test_http_failure_fails_over_to_another_node() -> None:
    def down(url: str, timeout_s: float):
        raise IOException(f"Unable to fetch {url}: connection refused")

    broken = EditLogHttpInputStream("http://jn0/x", 1, 3, False, opener=down)
    body = edit_log_header() + create_txn_data(1, 3)
    good = EditLogHttpInputStream(
        "http://jn1/x",
        1,
        3,
        False,
        opener=lambda u, t: _Response(body, {"Content-Length": str(len(body))}),
    )
    [stream] = chain_and_make_redundant_streams([broken, good], 1)
    verify_edits([stream], 1, 3)
    stream.close()


def test_http_body_breaking_off_fails_over() -> None:
    body = edit_log_header() + create_txn_data(1, 3)

    class Broken(_Response):
        def read(self, n: int = -1) -> bytes:
            raise http.client.IncompleteRead(b"", 10)

    broken = EditLogHttpInputStream(
        "http://jn0/x", 1, 3, False, opener=lambda u, t: Broken(body, {"Content-Length": "99"})
    )
    good = EditLogHttpInputStream(
        "http://jn1/x",
        1,
        3,
        False,
        opener=lambda u, t: _Response(body, {"Content-Length": str(len(body))}),
    )
    with pytest.raises(IOException, match="IncompleteRead"):
        broken.read_op()
    broken2 = EditLogHttpInputStream(
        "http://jn0/x", 1, 3, False, opener=lambda u, t: Broken(body, {"Content-Length": "99"})
    )
    verify_edits(chain_and_make_redundant_streams([broken2, good], 1), 1, 3)
