"""The persisted Paxos record of an accepted recovery: ``current/paxos/<segmentTxId>``.

Written in Hadoop's format (``Journal.persistPaxosData``), so that a JournalNode
directory moves between Hadoop and this project in either direction, also in the
middle of a recovery::

    varint(len(M))  M  "\\n"  <M in protobuf text format>  "\\n"

``M`` is ``PersistedRecoveryPaxosData`` (QJournalProtocol.proto, proto2)::

    message SegmentStateProto {
      required uint64 startTxId = 1;
      required uint64 endTxId = 2;
      required bool isInProgress = 3;
      optional string md5 = 1000;        // ours: see below
    }
    message PersistedRecoveryPaxosData {
      required SegmentStateProto segmentState = 1;
      required uint64 acceptedInEpoch = 2;
    }

The text after the message is for people (Hadoop writes it "only to assist in
debugging -- it's not parsed at all") and is not read back: it is what Java's
``TextFormat`` prints, field 1000 included as Hadoop would print it, by number.

**The md5 (field** :data:`MD5_FIELD` **).** This project's SegmentState carries the
hex MD5 of the segment's bytes up to its last txn (the design paper's content proxy,
§2.8; see the Thrift IDL). Hadoop's SegmentStateProto has no such field, so ours is
field 1000, far from any number Hadoop may add: Hadoop's proto2 parser keeps it as an
unknown field and reads the record as it reads its own. A record without it (Hadoop
wrote it) has an *unknown md5*; what that means is the rule of
:func:`~hadoop_qjm.qjournal.protocol.rules.accepted_state_to_report`.

**The old form.** Until this format, our JournalNodes wrote one line of JSON
(``{"acceptedInEpoch": …, "segmentState": {…}, "version": 1}``). Such a record is
still read (a protobuf record cannot start with ``{"``: its second byte is field 1's
tag, 0x0A), and the next acceptRecovery of that segment rewrites it in Hadoop's form.

Anything else — an empty file, a message cut short, a length prefix that does not
end where the message does (the byte after it must be the ``"\\n"`` Hadoop writes),
a required field missing, an md5 that is not 32 hex digits — is an IOException
naming the file: a damaged record stops recovery instead of being guessed at.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from hadoop_qjm.common.durable import CommitHook, FsyncFunction, atomic_replace
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.protobuf_wire import (
    WIRE_LEN,
    WIRE_VARINT,
    decode_varint,
    encode_len_field,
    encode_varint,
    encode_varint_field,
    iter_fields,
)
from hadoop_qjm.qjournal.protocol.messages import PersistedRecoveryPaxosData, SegmentState

__all__ = [
    "MD5_FIELD",
    "decode_paxos_record",
    "encode_paxos_record",
    "paxos_record_text",
    "read_paxos_record",
    "write_paxos_record",
]

#: SegmentStateProto's field number for our md5 (a string: 32 lowercase hex digits).
MD5_FIELD = 1000

# SegmentStateProto and PersistedRecoveryPaxosData field numbers (Hadoop's).
_START_TXID, _END_TXID, _IS_IN_PROGRESS = 1, 2, 3
_SEGMENT_STATE, _ACCEPTED_IN_EPOCH = 1, 2

_MD5_HEX = re.compile(r"[0-9a-f]{32}")
_UINT64 = 1 << 64
_LEGACY_JSON_START = b'{"'
_LEGACY_JSON_VERSION = 1


def _segment_state_message(seg: SegmentState) -> bytes:
    out = (
        encode_varint_field(_START_TXID, seg.start_txid)
        + encode_varint_field(_END_TXID, seg.end_txid)
        + encode_varint_field(_IS_IN_PROGRESS, int(seg.is_in_progress))
    )
    if seg.md5 is not None:
        out += encode_len_field(MD5_FIELD, seg.md5.encode("ascii"))
    return out


def paxos_record_text(data: PersistedRecoveryPaxosData) -> str:
    """The record in protobuf text format, as Java's ``toString()`` prints it (uint64
    fields unsigned; our md5 as an unknown field, by number)."""
    seg = data.segment_state
    lines = [
        "segmentState {",
        f"  startTxId: {seg.start_txid % _UINT64}",
        f"  endTxId: {seg.end_txid % _UINT64}",
        f"  isInProgress: {'true' if seg.is_in_progress else 'false'}",
    ]
    if seg.md5 is not None:
        lines.append(f'  {MD5_FIELD}: "{seg.md5}"')
    lines += ["}", f"acceptedInEpoch: {data.accepted_in_epoch % _UINT64}"]
    return "".join(line + "\n" for line in lines)


def encode_paxos_record(data: PersistedRecoveryPaxosData) -> bytes:
    """The file's bytes: the delimited message, ``"\\n"``, the text dump, ``"\\n"``."""
    message = encode_len_field(
        _SEGMENT_STATE, _segment_state_message(data.segment_state)
    ) + encode_varint_field(_ACCEPTED_IN_EPOCH, data.accepted_in_epoch)
    text = paxos_record_text(data).encode("utf-8")
    return encode_varint(len(message)) + message + b"\n" + text + b"\n"


def _long(value: int) -> int:
    """A uint64 field as Java's ``long`` getter returns it."""
    return value - _UINT64 if value >= _UINT64 >> 1 else value


def _decode_segment_state(raw: bytes, ints: dict[int, int], md5: list[bytes]) -> None:
    # A message field that occurs twice is merged (a later scalar wins), as protobuf's
    # parsers do; a known number with another wire type is an unknown field, skipped.
    for number, wire_type, value in iter_fields(raw):
        if isinstance(value, int) and wire_type == WIRE_VARINT:
            if number in (_START_TXID, _END_TXID, _IS_IN_PROGRESS):
                ints[number] = value
        elif isinstance(value, bytes) and wire_type == WIRE_LEN and number == MD5_FIELD:
            md5[:] = [value]


def _decode_message(message: bytes) -> PersistedRecoveryPaxosData:
    seg: dict[int, int] = {}
    md5_raw: list[bytes] = []
    epoch: int | None = None
    has_segment = False
    for number, wire_type, value in iter_fields(message):
        if number == _SEGMENT_STATE and wire_type == WIRE_LEN and isinstance(value, bytes):
            has_segment = True
            _decode_segment_state(value, seg, md5_raw)
        elif number == _ACCEPTED_IN_EPOCH and isinstance(value, int):
            epoch = value
    missing = [
        name
        for name, present in (
            ("segmentState", has_segment),
            ("segmentState.startTxId", not has_segment or _START_TXID in seg),
            ("segmentState.endTxId", not has_segment or _END_TXID in seg),
            ("segmentState.isInProgress", not has_segment or _IS_IN_PROGRESS in seg),
            ("acceptedInEpoch", epoch is not None),
        )
        if not present
    ]
    if missing or epoch is None:
        raise ValueError(f"the message lacks required field(s) {', '.join(missing)}")
    md5: str | None = None
    if md5_raw:
        md5 = md5_raw[0].decode("ascii", "replace")
        if not _MD5_HEX.fullmatch(md5):
            raise ValueError(f"field {MD5_FIELD} (md5) is not 32 lowercase hex digits: {md5!r}")
    state = SegmentState(
        _long(seg[_START_TXID]), _long(seg[_END_TXID]), seg[_IS_IN_PROGRESS] != 0, md5
    )
    return PersistedRecoveryPaxosData(state, _long(epoch))


def _decode_delimited(raw: bytes) -> PersistedRecoveryPaxosData:
    if not raw:
        raise ValueError("the file is empty")
    try:
        length, start = decode_varint(raw, 0)
    except ValueError:
        raise ValueError("the file is cut short inside its length prefix") from None
    end = start + length
    if end > len(raw):
        raise ValueError(
            f"the length prefix says {length} bytes but {len(raw) - start} follow "
            "(cut short, or a wrong length prefix)"
        )
    if raw[end : end + 1] != b"\n":
        # Hadoop writes "\n" right after the message: anything else means the prefix
        # does not end where the message ends.
        raise ValueError(f"no newline after the {length}-byte message (a wrong length prefix?)")
    try:
        return _decode_message(raw[start:end])
    except ValueError as e:
        raise ValueError(f"bad {length}-byte PersistedRecoveryPaxosData: {e}") from None


def _decode_legacy_json(raw: bytes) -> PersistedRecoveryPaxosData:
    """The one-line JSON our JournalNodes wrote before they wrote Hadoop's format."""
    try:
        record = json.loads(raw.decode("ascii"))
        if record["version"] != _LEGACY_JSON_VERSION:
            raise ValueError(f"unknown version {record['version']}")
        seg = record["segmentState"]
        md5 = seg.get("md5")
        if md5 is not None and not (isinstance(md5, str) and _MD5_HEX.fullmatch(md5)):
            raise ValueError("md5 is not 32 lowercase hex digits")
        state = SegmentState(
            int(seg["startTxId"]), int(seg["endTxId"]), bool(seg["isInProgress"]), md5
        )
        return PersistedRecoveryPaxosData(state, int(record["acceptedInEpoch"]))
    except (KeyError, TypeError, UnicodeDecodeError) as e:
        raise ValueError(f"bad JSON record (the old form): {type(e).__name__} {e}") from None
    except ValueError as e:
        raise ValueError(f"bad JSON record (the old form): {e}") from None


def decode_paxos_record(raw: bytes, source: str = "paxos record") -> PersistedRecoveryPaxosData:
    """Parse a record (Hadoop's form, or our old JSON); IOException naming ``source``."""
    try:
        if raw.startswith(_LEGACY_JSON_START):
            return _decode_legacy_json(raw)
        return _decode_delimited(raw)
    except ValueError as e:
        raise IOException(f"Malformed {source}: {e}") from None


def read_paxos_record(path: str | os.PathLike[str]) -> PersistedRecoveryPaxosData | None:
    """The record in ``path``, or None if there is none."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise IOException(f"Cannot read {path}: {e}") from e
    return decode_paxos_record(raw, str(path))


def write_paxos_record(
    path: str | os.PathLike[str],
    data: PersistedRecoveryPaxosData,
    *,
    fsync: FsyncFunction = os.fsync,
    hook: CommitHook | None = None,
) -> None:
    """Durably replace ``path`` with ``data`` in Hadoop's form: tmp, fsync, rename (the
    commit point), fsync the directory. When this returns, the record survives a crash."""
    atomic_replace(path, encode_paxos_record(data), fsync=fsync, hook=hook)
