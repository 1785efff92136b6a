"""Paxos records as Hadoop writes them, as literal bytes, and a decoder of our own.

Both are written from Hadoop's QJournalProtocol.proto and Journal.persistPaxosData,
independently of the production encoder (``hadoop_qjm.qjournal.server.paxos_record``),
so a test comparing the two checks the encoder against the format, not against itself::

    message SegmentStateProto {             // proto2
      required uint64 startTxId = 1;
      required uint64 endTxId = 2;
      required bool isInProgress = 3;
    }
    message PersistedRecoveryPaxosData {
      required SegmentStateProto segmentState = 1;
      required uint64 acceptedInEpoch = 2;
    }

persistPaxosData writes ``newData.writeDelimitedTo(fos)`` (a varint byte count, then
the message), ``'\\n'``, ``String.valueOf(newData)`` (the text format, each field on a
line of its own, nested fields indented two spaces) and ``'\\n'``. A field's key is
``field_number << 3 | wire_type``: wire type 0 for a varint, 2 for a length-delimited
value.
"""

from __future__ import annotations

#: Hadoop's record after the §2.10.7 writer 2 accepted 101-150 (in progress) in epoch 2.
HADOOP_RECORD_101_150_IN_EPOCH_2 = (
    bytes(
        [
            0x0B,  # writeDelimitedTo's prefix: the message is the next 11 bytes
            0x0A,  # key: field 1 (segmentState) << 3 | wire type 2
            0x07,  #   ... its 7 bytes:
            0x08,  #   key: field 1 (startTxId) << 3 | wire type 0
            0x65,  #     101
            0x10,  #   key: field 2 (endTxId) << 3 | 0
            0x96,  #     150 = 0b1_0010110: low 7 bits 0x16 with the "more" bit 0x80 ...
            0x01,  #     ... then 150 >> 7 = 1
            0x18,  #   key: field 3 (isInProgress) << 3 | 0
            0x01,  #     true
            0x10,  # key: field 2 (acceptedInEpoch) << 3 | 0
            0x02,  #   2
            0x0A,  # fos.write('\n')
        ]
    )
    + b"segmentState {\n"
    + b"  startTxId: 101\n"
    + b"  endTxId: 150\n"
    + b"  isInProgress: true\n"
    + b"}\n"
    + b"acceptedInEpoch: 2\n"  # the end of String.valueOf(newData) ...
    + b"\n"  # ... and writer.write('\n')
)

#: Hadoop's record of segment 4 (txn 4 only, in progress) accepted in epoch 3.
HADOOP_RECORD_4_4_IN_EPOCH_3 = (
    bytes(
        [
            0x0A,  # the message is the next 10 bytes
            0x0A,  # field 1 (segmentState), length-delimited,
            0x06,  #   6 bytes:
            0x08,  #   field 1 (startTxId), varint:
            0x04,  #     4
            0x10,  #   field 2 (endTxId), varint:
            0x04,  #     4
            0x18,  #   field 3 (isInProgress), varint:
            0x01,  #     true
            0x10,  # field 2 (acceptedInEpoch), varint:
            0x03,  #   3
            0x0A,  # '\n'
        ]
    )
    + b"segmentState {\n  startTxId: 4\n  endTxId: 4\n  isInProgress: true\n}\n"
    + b"acceptedInEpoch: 3\n\n"
)


def old_json_record(start: int, end: int, in_progress: bool, epoch: int, md5: str | None) -> bytes:
    """A record in the one-line JSON form our JournalNodes wrote before Hadoop's."""
    segment = f'"endTxId": {end}, "isInProgress": {"true" if in_progress else "false"}, '
    if md5 is not None:
        segment += f'"md5": "{md5}", '
    segment += f'"startTxId": {start}'
    return f'{{"acceptedInEpoch": {epoch}, "segmentState": {{{segment}}}, "version": 1}}\n'.encode()


# ---- a protobuf decoder, as plain as it gets -------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]  # IndexError if the data ends inside the varint
        pos += 1
        value += (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def decode_fields(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """Every ``(field number, wire type, value)`` of a message, in order (varints and
    length-delimited values only: nothing else may appear in these records)."""
    fields: list[tuple[int, int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire_type = key >> 3, key & 7
        if wire_type == 0:
            value, pos = _varint(data, pos)
            fields.append((number, 0, value))
        elif wire_type == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ValueError("length-delimited field runs past the end")
            fields.append((number, 2, data[pos : pos + size]))
            pos += size
        else:
            raise ValueError(f"wire type {wire_type}")
    return fields


def parse_delimited(raw: bytes) -> tuple[bytes, bytes]:
    """``parseDelimitedFrom``'s view of a file: (the message, what follows it)."""
    size, pos = _varint(raw, 0)
    if pos + size > len(raw):
        raise ValueError("message runs past the end")
    return raw[pos : pos + size], raw[pos + size :]
