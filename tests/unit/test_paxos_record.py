"""The paxos record (``current/paxos/<segmentTxId>``) in Hadoop's format, read and written.

The expected bytes come from ``tests/paxos_record_fixtures.py``: literal bytes derived by
hand from Hadoop's proto definition, and a protobuf decoder written for the tests.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.durable import BEFORE_RENAME
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.fs_edit_log_op import edit_log_header
from hadoop_qjm.qjournal.protocol.messages import PersistedRecoveryPaxosData, SegmentState
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.qjournal.server.paxos_record import (
    MD5_FIELD,
    decode_paxos_record,
    encode_paxos_record,
    read_paxos_record,
    write_paxos_record,
)
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, create_txn_data, make_request
from tests.paxos_record_fixtures import (
    HADOOP_RECORD_4_4_IN_EPOCH_3,
    HADOOP_RECORD_101_150_IN_EPOCH_2,
    decode_fields,
    old_json_record,
    parse_delimited,
)

pytestmark = pytest.mark.timeout(30)

MD5 = hashlib.md5(b"a segment").hexdigest()
ACCEPTED_150 = PersistedRecoveryPaxosData(SegmentState(101, 150, True), 2)


# ---- Hadoop's bytes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "raw"),
    [
        (ACCEPTED_150, HADOOP_RECORD_101_150_IN_EPOCH_2),
        (PersistedRecoveryPaxosData(SegmentState(4, 4, True), 3), HADOOP_RECORD_4_4_IN_EPOCH_3),
    ],
)
def test_a_record_without_md5_is_byte_for_byte_the_one_hadoop_writes(data, raw) -> None:
    assert encode_paxos_record(data) == raw
    assert decode_paxos_record(raw) == data
    assert decode_paxos_record(raw).segment_state.md5 is None


def test_our_record_is_hadoops_message_plus_the_md5_as_field_1000(tmp_path: Path) -> None:
    path = tmp_path / "101"
    write_paxos_record(path, PersistedRecoveryPaxosData(SegmentState(101, 150, True, MD5), 2))
    raw = path.read_bytes()

    message, rest = parse_delimited(raw)
    outer = decode_fields(message)
    assert [(n, w) for n, w, _ in outer] == [(1, 2), (2, 0)]  # segmentState, acceptedInEpoch
    assert outer[1][2] == 2
    segment = outer[0][2]
    assert isinstance(segment, bytes)
    # Hadoop's three fields, in order, then ours: a number Hadoop's parser does not know.
    assert decode_fields(segment) == [
        (1, 0, 101),
        (2, 0, 150),
        (3, 0, 1),
        (MD5_FIELD, 2, MD5.encode("ascii")),
    ]
    assert MD5_FIELD == 1000
    # Then "\n" and the text dump (field 1000 printed by number, as Java's TextFormat
    # prints an unknown field), then "\n".
    assert rest == (
        b"\nsegmentState {\n  startTxId: 101\n  endTxId: 150\n  isInProgress: true\n"
        + f'  1000: "{MD5}"\n'.encode()
        + b"}\nacceptedInEpoch: 2\n\n"
    )
    # Without field 1000 the message is exactly Hadoop's.
    hadoop_message, _ = parse_delimited(HADOOP_RECORD_101_150_IN_EPOCH_2)
    assert [f for f in decode_fields(segment) if f[0] != MD5_FIELD] == decode_fields(
        decode_fields(hadoop_message)[0][2]  # type: ignore[arg-type]
    )
    assert read_paxos_record(path) == PersistedRecoveryPaxosData(
        SegmentState(101, 150, True, MD5), 2
    )
    assert read_paxos_record(path).segment_state.md5 == MD5


txids = st.integers(min_value=1, max_value=2**63 - 1)


@given(
    start=txids,
    length=st.integers(min_value=0, max_value=2**20),
    in_progress=st.booleans(),
    epoch=txids,
    md5=st.none() | st.binary(min_size=1, max_size=64).map(lambda b: hashlib.md5(b).hexdigest()),
)
def test_any_record_round_trips_and_decodes_independently(
    start: int, length: int, in_progress: bool, epoch: int, md5: str | None
) -> None:
    end = min(start + length, 2**63 - 1)
    data = PersistedRecoveryPaxosData(SegmentState(start, end, in_progress, md5), epoch)
    raw = encode_paxos_record(data)
    decoded = decode_paxos_record(raw)
    assert (decoded, decoded.segment_state.md5) == (data, md5)
    message, rest = parse_delimited(raw)
    assert rest.startswith(b"\n") and rest.endswith(b"\n\n")
    (seg_field, epoch_field) = decode_fields(message)
    assert epoch_field == (2, 0, epoch)
    expected = [(1, 0, start), (2, 0, end), (3, 0, int(in_progress))]
    if md5 is not None:
        expected.append((1000, 2, md5.encode()))
    assert decode_fields(seg_field[2]) == expected  # type: ignore[arg-type]


def test_unknown_fields_are_skipped_as_hadoops_parser_skips_them() -> None:
    # Hadoop's record with an extra varint field 7 in SegmentStateProto and field 9 outside.
    message, _ = parse_delimited(HADOOP_RECORD_101_150_IN_EPOCH_2)
    segment = bytes([0x08, 0x65, 0x10, 0x96, 0x01, 0x18, 0x01, 0x38, 0x05])
    message = bytes([0x0A, len(segment)]) + segment + bytes([0x10, 0x02, 0x48, 0x01])
    raw = bytes([len(message)]) + message + b"\nwhatever\n"
    assert decode_paxos_record(raw) == ACCEPTED_150


# ---- the old JSON form ------------------------------------------------------------------------


@pytest.mark.parametrize("md5", [MD5, None])
def test_a_record_in_the_old_json_form_is_still_read(tmp_path: Path, md5: str | None) -> None:
    path = tmp_path / "101"
    path.write_bytes(old_json_record(101, 150, True, 2, md5))
    data = read_paxos_record(path)
    assert data == ACCEPTED_150
    assert data is not None and data.segment_state.md5 == md5


def test_an_old_json_record_is_rewritten_in_hadoops_form_by_the_next_accept(
    tmp_path: Path,
) -> None:
    """Upgrade: a journal with an old record recovers from it, and the next
    acceptRecovery of that segment writes Hadoop's form."""
    conf = Configuration()
    journal = Journal(conf, tmp_path / JID, JID)
    try:
        journal.format(FAKE_NSINFO)
        journal.new_epoch(FAKE_NSINFO, 1)
        journal.start_log_segment(make_request(1), 1, CURRENT_LAYOUT_VERSION)
        journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
        copy = journal.storage.in_progress_edit_log(1)
        digest = hashlib.md5(edit_log_header(CURRENT_LAYOUT_VERSION) + create_txn_data(1, 3))
        paxos = journal.storage.paxos_file(1)
        paxos.write_bytes(old_json_record(1, 3, True, 1, digest.hexdigest()))
        journal.new_epoch(FAKE_NSINFO, 2)

        prepared = journal.prepare_recovery(make_request(1, epoch=2), 1)
        assert (prepared.segment_state, prepared.accepted_in_epoch) == (SegmentState(1, 3, True), 1)
        journal.accept_recovery(make_request(2, epoch=2), prepared.segment_state, "unused:")

        assert paxos.read_bytes() == encode_paxos_record(
            PersistedRecoveryPaxosData(SegmentState(1, 3, True, digest.hexdigest()), 2)
        )
        assert paxos.read_bytes()[:2] == bytes([0x2D, 0x0A])  # a length prefix, field 1's key
        assert copy.exists()
    finally:
        journal.close()


# ---- bad input --------------------------------------------------------------------------------

_MESSAGE_101_150 = HADOOP_RECORD_101_150_IN_EPOCH_2[1:12]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"", "the file is empty"),
        (b"\x8b", "cut short inside its length prefix"),
        (HADOOP_RECORD_101_150_IN_EPOCH_2[:7], "the length prefix says 11 bytes but 6 follow"),
        (HADOOP_RECORD_101_150_IN_EPOCH_2[:12], "no newline after the 11-byte message"),
        # Wrong length prefixes, longer and shorter than the message.
        (b"\x0c" + HADOOP_RECORD_101_150_IN_EPOCH_2[1:], "no newline after the 12-byte message"),
        (b"\xff\x01" + HADOOP_RECORD_101_150_IN_EPOCH_2[1:], "the length prefix says 255 bytes"),
        (b"\x0a" + HADOOP_RECORD_101_150_IN_EPOCH_2[1:], "no newline after the 10-byte message"),
        (b"\x09" + _MESSAGE_101_150[:9] + b"\n", "lacks required field.s. acceptedInEpoch"),
        (b"\x02\x10\x02\n", "lacks required field.s. segmentState$"),
        (  # segmentState {startTxId: 101, isInProgress: true}, nothing else
            b"\x06" + b"\x0a\x04" + b"\x08\x65\x18\x01" + b"\n",
            "lacks required field.s. segmentState.endTxId, acceptedInEpoch",
        ),
        (b"\x06" + _MESSAGE_101_150[:6] + b"\n", "field 1 needs 7 bytes, 4 are left"),
        (  # field 1000 (key 1000 << 3 | 2 = 0xC2 0x3E) holding "ab"
            b"\x10" + b"\x0a\x0c\x08\x65\x10\x96\x01\x18\x01\xc2\x3e\x02ab" + b"\x10\x02\n",
            "field 1000 .md5. is not 32 lowercase hex digits: 'ab'",
        ),
        (b'{"version": 2}\n', "bad JSON record .the old form.: unknown version 2"),
        (b'{"version": 1, "acceptedInEpoch": 2}\n', "bad JSON record .the old form.: KeyError"),
    ],
    ids=[
        "empty",
        "cut-in-prefix",
        "cut-in-message",
        "cut-after-message",
        "prefix-one-too-long",
        "prefix-past-the-end",
        "prefix-one-too-short",
        "no-epoch",
        "no-segment",
        "no-end-txid",
        "segment-cut-short",
        "bad-md5",
        "json-version",
        "json-missing-field",
    ],
)
def test_a_damaged_record_is_an_error_naming_the_file(tmp_path: Path, raw: bytes, reason: str):
    path = tmp_path / "paxos" / "101"
    path.parent.mkdir()
    path.write_bytes(raw)
    with pytest.raises(IOException, match=f"^Malformed {path}: .*{reason}") as info:
        read_paxos_record(path)
    assert "\n" not in str(info.value)


def test_prepare_recovery_stops_at_a_damaged_record_and_names_it(tmp_path: Path) -> None:
    journal = Journal(Configuration(), tmp_path / JID, JID)
    try:
        journal.format(FAKE_NSINFO)
        journal.new_epoch(FAKE_NSINFO, 1)
        journal.start_log_segment(make_request(1), 1, CURRENT_LAYOUT_VERSION)
        journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
        paxos = journal.storage.paxos_file(1)
        paxos.write_bytes(HADOOP_RECORD_4_4_IN_EPOCH_3[:8])
        with pytest.raises(IOException, match=f"^Malformed {paxos}: the length prefix says 10"):
            journal.prepare_recovery(make_request(3), 1)
    finally:
        journal.close()


# ---- durability -------------------------------------------------------------------------------


def test_the_write_fsyncs_and_a_crash_before_the_rename_keeps_the_old_record(
    tmp_path: Path,
) -> None:
    path = tmp_path / "101"
    write_paxos_record(path, ACCEPTED_150)
    fsynced: list[int] = []

    def fsync(fd: int) -> None:
        fsynced.append(fd)
        os.fsync(fd)

    def crash(point: str, _target: Path) -> None:
        if point == BEFORE_RENAME:
            raise IOException("Injected crash before the rename")

    newer = PersistedRecoveryPaxosData(SegmentState(101, 153, True, MD5), 3)
    with pytest.raises(IOException, match="Injected"):
        write_paxos_record(path, newer, fsync=fsync, hook=crash)
    assert path.read_bytes() == HADOOP_RECORD_101_150_IN_EPOCH_2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["101"]
    assert len(fsynced) == 1  # the temporary file, before the rename

    fsynced.clear()
    write_paxos_record(path, newer, fsync=fsync)
    assert read_paxos_record(path) == newer
    assert len(fsynced) == 2  # the file, then the directory
