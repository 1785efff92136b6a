"""The ``journal`` call's canonical encoding, read in one pass.

Every batch of edits crosses the wire as one ``journal`` call, and on the
JournalNode each one is on the writer's critical path: the time spent reading
it delays the fsync the writer waits for. Our clients, and any client that
writes a struct's fields in the order of their ids (thriftpy2's and Apache
Thrift's generated code do), encode it as::

    80 01 00 01 | 00 00 00 07 "journal" | seqid           message header (strict, CALL)
    0c 00 01                                               1: reqInfo (struct)
        0b 00 01 len jid | 0a 00 02 epoch | 0a 00 03 serial
        [0a 00 04 committedTxId] [0b 00 05 len nameServiceId] 00
    0a 00 02 firstTxnId | 08 00 03 numTxns | 0b 00 04 len records
    0a 00 05 segmentTxnId [0b 00 06 len nameServiceId] 00

:func:`parse_journal_call` reads exactly that, checking every length against
the bytes present, and answers ``None`` for anything else (another field
order, an unknown field, invalid UTF-8, trailing bytes): the caller then takes
the general path (``wire.decode_flat_struct``, then the checked decoders),
which accepts or rejects the call as it always did. So this never changes
what is accepted, only how fast the common case is read.

:func:`encode_journal_head` and :func:`encode_journal_body` write the same
encoding (byte for byte what thriftpy2 writes for ``journal_args``), in two
parts: a writer sends one batch to every JournalNode, so the body is encoded
once per batch and only the head (the message header and the node's
``reqInfo``) once per node.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

__all__ = ["JournalCall", "encode_journal_body", "encode_journal_head", "parse_journal_call"]

_HEADER = b"\x80\x01\x00\x01\x00\x00\x00\x07journal"
_HEADER_LEN = len(_HEADER)
_I32 = struct.Struct(">i")
# seqid, then the reqInfo field header and its journalId field header and length.
_SEQID_REQINFO_JID = struct.Struct(">i3s3si")
_REQINFO_JID = b"\x0c\x00\x01", b"\x0b\x00\x01"
# epoch and ipcSerialNumber, each with its field header.
_EPOCH_SERIAL = struct.Struct(">3sq3sq")
_EPOCH, _SERIAL = b"\x0a\x00\x02", b"\x0a\x00\x03"
_OPT_I64 = struct.Struct(">3sq")
_COMMITTED = b"\x0a\x00\x04"
_OPT_STRING = struct.Struct(">3si")
_REQ_NS_ID = b"\x0b\x00\x05"
# firstTxnId, numTxns and the records' header and length.
_FIRST_NUM_RECORDS = struct.Struct(">3sq3si3si")
_FIRST, _NUM, _RECORDS = b"\x0a\x00\x02", b"\x08\x00\x03", b"\x0b\x00\x04"
_SEGMENT = b"\x0a\x00\x05"
_ARGS_NS_ID = b"\x0b\x00\x06"
# A writer's usual call after the journal id — epoch, serial, committed txid, reqInfo's
# STOP, firstTxnId, numTxns and the records' header — then after the records the segment
# and the STOP: read with two unpacks. (A valid call always has enough bytes after the
# journal id for the first: 60 plus the records' even without a committed txid.)
_USUAL_MIDDLE = struct.Struct(">3sq3sq3sqB3sq3si3si")
_USUAL_HEADERS = (_EPOCH, _SERIAL, _COMMITTED, 0, _FIRST, _NUM, _RECORDS)
_USUAL_TAIL = struct.Struct(">3sqB")


# Per (journal id, name service id): one struct for a head with a committed txid — the
# writer's every call after its first — and the ids' encoded bytes (a writer has one).
_HEADS: dict[tuple[str, str | None], tuple[struct.Struct, bytes, bytes]] = {}
_MAX_HEADS = 64


def _head_struct(
    journal_id: str, name_service_id: str | None
) -> tuple[struct.Struct, bytes, bytes]:
    jid = journal_id.encode("utf-8")
    ns = b"" if name_service_id is None else name_service_id.encode("utf-8")
    ns_format = "" if name_service_id is None else f"3si{len(ns)}s"
    if len(_HEADS) >= _MAX_HEADS:
        _HEADS.clear()
    head = _HEADS[(journal_id, name_service_id)] = (
        struct.Struct(f">i3s3si{len(jid)}s3sq3sq3sq{ns_format}B"),
        jid,
        ns,
    )
    return head


def encode_journal_head(
    seqid: int,
    journal_id: str,
    epoch: int,
    ipc_serial_number: int,
    committed_txid: int | None,
    name_service_id: str | None,
) -> bytes:
    """The message header and the ``reqInfo`` field of a ``journal`` call.

    Raises struct.error if a number does not fit its field.
    """
    if committed_txid is not None:  # the usual head: one pack
        packer, jid, ns = _HEADS.get((journal_id, name_service_id)) or _head_struct(
            journal_id, name_service_id
        )
        if name_service_id is None:
            return _HEADER + packer.pack(
                seqid, *_REQINFO_JID, len(jid), jid, _EPOCH, epoch, _SERIAL,
                ipc_serial_number, _COMMITTED, committed_txid, 0,
            )  # fmt: skip
        return _HEADER + packer.pack(
            seqid, *_REQINFO_JID, len(jid), jid, _EPOCH, epoch, _SERIAL, ipc_serial_number,
            _COMMITTED, committed_txid, _REQ_NS_ID, len(ns), ns, 0,
        )  # fmt: skip
    jid = journal_id.encode("utf-8")
    parts = [
        _HEADER,
        _SEQID_REQINFO_JID.pack(seqid, *_REQINFO_JID, len(jid)),
        jid,
        _EPOCH_SERIAL.pack(_EPOCH, epoch, _SERIAL, ipc_serial_number),
    ]
    if committed_txid is not None:
        parts.append(_OPT_I64.pack(_COMMITTED, committed_txid))
    if name_service_id is not None:
        encoded = name_service_id.encode("utf-8")
        parts += (_OPT_STRING.pack(_REQ_NS_ID, len(encoded)), encoded)
    parts.append(b"\x00")
    return b"".join(parts)


def encode_journal_body(
    first_txid: int, num_txns: int, records: bytes, segment_txid: int, name_service_id: str | None
) -> bytes:
    """The ``journal`` call's fields after ``reqInfo``, and its closing STOP byte.

    Raises struct.error if a number does not fit its field.
    """
    parts = [
        _FIRST_NUM_RECORDS.pack(_FIRST, first_txid, _NUM, num_txns, _RECORDS, len(records)),
        records,
        _OPT_I64.pack(_SEGMENT, segment_txid),
    ]
    if name_service_id is not None:
        encoded = name_service_id.encode("utf-8")
        parts += (_OPT_STRING.pack(_ARGS_NS_ID, len(encoded)), encoded)
    parts.append(b"\x00")
    return b"".join(parts)


class JournalCall(NamedTuple):
    """A decoded ``journal`` call; ``committed_txid`` is None when the writer sent none.

    A parsed call's ``records`` is a read-only view of the payload (an immutable
    ``bytes``), not a copy: it stays valid as long as anyone holds it.
    """

    seqid: int
    journal_id: str
    epoch: int
    ipc_serial_number: int
    committed_txid: int | None
    req_name_service_id: str | None
    first_txid: int
    num_txns: int
    records: bytes | memoryview
    segment_txid: int
    name_service_id: str | None


def parse_journal_call(payload: bytes) -> JournalCall | None:
    """The ``journal`` call in ``payload`` if it is in the canonical encoding, else None.

    Safe on any bytes: a length is used only after it is checked against what
    is left, and reading past the end (struct.error, IndexError) means None.
    """
    if type(payload) is not bytes or not payload.startswith(_HEADER):
        return None
    try:
        return _parse(payload)
    except (struct.error, IndexError, UnicodeDecodeError):
        return None


def _parse(data: bytes) -> JournalCall | None:
    end = len(data)
    seqid, reqinfo, jid_header, size = _SEQID_REQINFO_JID.unpack_from(data, _HEADER_LEN)
    if (reqinfo, jid_header) != _REQINFO_JID or size < 0:
        return None
    pos = _HEADER_LEN + _SEQID_REQINFO_JID.size
    if pos + size > end:
        return None
    journal_id = str(data[pos : pos + size], "utf-8")
    pos += size
    eh, epoch, sh, serial, ch, committed, stop, fh, first, nh, num, rh, size = (
        _USUAL_MIDDLE.unpack_from(data, pos)
    )
    if (eh, sh, ch, stop, fh, nh, rh) == _USUAL_HEADERS and size >= 0:
        start = pos + _USUAL_MIDDLE.size
        if start + size + _USUAL_TAIL.size == end:
            segment_header, segment, stop = _USUAL_TAIL.unpack_from(data, start + size)
            if segment_header == _SEGMENT and stop == 0:
                records = memoryview(data)[start : start + size]  # a view, not a copy
                return JournalCall(
                    seqid, journal_id, epoch, serial, committed, None, first, num, records,
                    segment, None,
                )  # fmt: skip
    # Any other layout (no committed txid, name service ids), or not a journal call.
    epoch_header, epoch, serial_header, serial = _EPOCH_SERIAL.unpack_from(data, pos)
    if epoch_header != _EPOCH or serial_header != _SERIAL:
        return None
    pos += _EPOCH_SERIAL.size
    committed = req_ns_id = None
    if data[pos : pos + 3] == _COMMITTED:
        committed = _OPT_I64.unpack_from(data, pos)[1]
        pos += _OPT_I64.size
    if data[pos : pos + 3] == _REQ_NS_ID:
        req_ns_id, pos = _string(data, pos, end)
        if req_ns_id is None:
            return None
    if data[pos] != 0:  # reqInfo's STOP
        return None
    pos += 1
    first_header, first, num_header, num, records_header, size = _FIRST_NUM_RECORDS.unpack_from(
        data, pos
    )
    if (first_header, num_header, records_header) != (_FIRST, _NUM, _RECORDS) or size < 0:
        return None
    pos += _FIRST_NUM_RECORDS.size
    if pos + size > end:
        return None
    records = memoryview(data)[pos : pos + size]  # a view: the batch is not copied
    pos += size
    segment_header, segment = _OPT_I64.unpack_from(data, pos)
    if segment_header != _SEGMENT:
        return None
    pos += _OPT_I64.size
    ns_id = None
    if data[pos : pos + 3] == _ARGS_NS_ID:
        ns_id, pos = _string(data, pos, end)
        if ns_id is None:
            return None
    if pos != end - 1 or data[pos] != 0:  # the args' STOP, and nothing after it
        return None
    return JournalCall(
        seqid, journal_id, epoch, serial, committed, req_ns_id, first, num, records, segment, ns_id
    )


def _string(data: bytes, pos: int, end: int) -> tuple[str | None, int]:
    """The string field whose header is at ``pos``, and where it ends; (None, pos) if cut."""
    size = _OPT_STRING.unpack_from(data, pos)[1]
    start = pos + _OPT_STRING.size
    if size < 0 or start + size > end:
        return None, pos
    return str(data[start : start + size], "utf-8"), start + size
