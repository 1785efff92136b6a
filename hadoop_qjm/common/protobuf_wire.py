"""The few pieces of protobuf's wire format the project writes by hand (pure).

Hadoop stores some records as protobuf messages: the xattrs and ACL entries inside edit-log
ops (:mod:`hadoop_qjm.namenode.edit_log_codec`), the ZKFC's ActiveNodeInfo in ZooKeeper
(:mod:`hadoop_qjm.ha.election_rules`). Both need only varints and length-delimited fields.
"""

from __future__ import annotations

__all__ = ["encode_varint"]


def encode_varint(value: int) -> bytes:
    """A non-negative integer as a base-128 varint (a negative int32 must be passed as its
    64-bit two's complement, as protobuf encodes it)."""
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)
