"""FSEditLogOpCodes: the opcode byte of every edit-log op (HADOOP-QJM-DIGEST.md §4.3). Pure."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["FSEditLogOpCodes", "OBSOLETE_OPCODES"]


class FSEditLogOpCodes(IntEnum):
    """Opcode byte values, named and ordered as Hadoop's enum (``OP_INVALID`` is byte 0xFF)."""

    OP_ADD = 0
    OP_RENAME_OLD = 1
    OP_DELETE = 2
    OP_MKDIR = 3
    OP_SET_REPLICATION = 4
    OP_DATANODE_ADD = 5  # obsolete: reading it is "invalid opcode"
    OP_DATANODE_REMOVE = 6  # obsolete: reading it is "invalid opcode"
    OP_SET_PERMISSIONS = 7
    OP_SET_OWNER = 8
    OP_CLOSE = 9
    OP_SET_GENSTAMP_V1 = 10
    OP_SET_NS_QUOTA = 11
    OP_CLEAR_NS_QUOTA = 12
    OP_TIMES = 13
    OP_SET_QUOTA = 14
    OP_RENAME = 15
    OP_CONCAT_DELETE = 16
    OP_SYMLINK = 17
    OP_GET_DELEGATION_TOKEN = 18
    OP_RENEW_DELEGATION_TOKEN = 19
    OP_CANCEL_DELEGATION_TOKEN = 20
    OP_UPDATE_MASTER_KEY = 21
    OP_REASSIGN_LEASE = 22
    OP_END_LOG_SEGMENT = 23
    OP_START_LOG_SEGMENT = 24
    OP_UPDATE_BLOCKS = 25
    OP_CREATE_SNAPSHOT = 26
    OP_DELETE_SNAPSHOT = 27
    OP_RENAME_SNAPSHOT = 28
    OP_ALLOW_SNAPSHOT = 29
    OP_DISALLOW_SNAPSHOT = 30
    OP_SET_GENSTAMP_V2 = 31
    OP_ALLOCATE_BLOCK_ID = 32
    OP_ADD_BLOCK = 33
    OP_ADD_CACHE_DIRECTIVE = 34
    OP_REMOVE_CACHE_DIRECTIVE = 35
    OP_ADD_CACHE_POOL = 36
    OP_MODIFY_CACHE_POOL = 37
    OP_REMOVE_CACHE_POOL = 38
    OP_MODIFY_CACHE_DIRECTIVE = 39
    OP_SET_ACL = 40
    OP_ROLLING_UPGRADE_START = 41
    OP_ROLLING_UPGRADE_FINALIZE = 42
    OP_SET_XATTR = 43
    OP_REMOVE_XATTR = 44
    OP_SET_STORAGE_POLICY = 45
    OP_TRUNCATE = 46
    OP_APPEND = 47
    OP_SET_QUOTA_BY_STORAGETYPE = 48
    OP_ADD_ERASURE_CODING_POLICY = 49
    OP_ENABLE_ERASURE_CODING_POLICY = 50
    OP_DISABLE_ERASURE_CODING_POLICY = 51
    OP_REMOVE_ERASURE_CODING_POLICY = 52
    # Padding and the end-of-log marker; never a real op.
    OP_INVALID = 0xFF

    @property
    def java_byte(self) -> int:
        """The signed byte Java's getOpCode() returns (-1 for OP_INVALID)."""
        return self.value - 256 if self.value > 127 else self.value

    @classmethod
    def from_byte(cls, value: int) -> FSEditLogOpCodes | None:
        """The opcode of a byte, or None when the byte is not one (Hadoop's fromByte)."""
        return _BY_BYTE[value & 0xFF]


#: Opcodes Hadoop still names but can no longer read.
OBSOLETE_OPCODES = frozenset(
    {FSEditLogOpCodes.OP_DATANODE_ADD, FSEditLogOpCodes.OP_DATANODE_REMOVE}
)

_BY_BYTE: list[FSEditLogOpCodes | None] = [None] * 256
for _code in FSEditLogOpCodes:
    _BY_BYTE[_code.value] = _code
