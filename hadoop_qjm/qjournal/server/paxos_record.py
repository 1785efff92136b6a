"""The persisted Paxos record of an accepted recovery: ``current/paxos/<segmentTxId>``.

Hadoop stores a length-delimited protobuf (``PersistedRecoveryPaxosData``) plus a
text dump. Ours is one line of JSON, version-tagged, written atomically
(tmp → fsync → rename → fsync dir)::

    {"version": 1, "segmentState": {"startTxId": 101, "endTxId": 150,
     "isInProgress": true, "md5": "<hex md5 of the segment up to txid 150>"},
     "acceptedInEpoch": 7}

Reading accepts only this form; anything else is an IOException naming the
file, so a damaged record stops recovery instead of being misread.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hadoop_qjm.common.durable import atomic_replace
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.qjournal.protocol.messages import PersistedRecoveryPaxosData, SegmentState

__all__ = [
    "PAXOS_RECORD_VERSION",
    "encode_paxos_record",
    "decode_paxos_record",
    "read_paxos_record",
    "write_paxos_record",
]

PAXOS_RECORD_VERSION = 1


def encode_paxos_record(data: PersistedRecoveryPaxosData) -> bytes:
    seg = data.segment_state
    record = {
        "version": PAXOS_RECORD_VERSION,
        "segmentState": {
            "startTxId": seg.start_txid,
            "endTxId": seg.end_txid,
            "isInProgress": seg.is_in_progress,
            **({"md5": seg.md5} if seg.md5 else {}),
        },
        "acceptedInEpoch": data.accepted_in_epoch,
    }
    return (json.dumps(record, sort_keys=True) + "\n").encode("ascii")


def decode_paxos_record(raw: bytes, source: str = "paxos record") -> PersistedRecoveryPaxosData:
    try:
        record = json.loads(raw.decode("ascii"))
        if record["version"] != PAXOS_RECORD_VERSION:
            raise ValueError(f"unknown version {record['version']}")
        seg = record["segmentState"]
        md5 = seg.get("md5")
        if md5 is not None and not isinstance(md5, str):
            raise ValueError("md5 is not a string")
        state = SegmentState(
            int(seg["startTxId"]), int(seg["endTxId"]), bool(seg["isInProgress"]), md5
        )
        return PersistedRecoveryPaxosData(state, int(record["acceptedInEpoch"]))
    except (ValueError, KeyError, TypeError, UnicodeDecodeError) as e:
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


def write_paxos_record(path: str | os.PathLike[str], data: PersistedRecoveryPaxosData) -> None:
    """Durably replace ``path`` with ``data``: when this returns, the record survives a crash."""
    atomic_replace(path, encode_paxos_record(data))
