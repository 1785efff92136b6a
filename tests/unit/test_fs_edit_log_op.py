"""Op framing, the opcode table and the op bodies (HADOOP-QJM-DIGEST.md §4.1-4.5). No disk."""

from __future__ import annotations

import ast
import struct
import zlib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hadoop_qjm.editlog as editlog_pkg
from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, INVALID_TXID
from hadoop_qjm.common.exceptions import (
    EditLogCorruptionError,
    IllegalArgumentException,
    IOException,
)
from hadoop_qjm.editlog.fs_edit_log_op import (
    DEFAULT_MAX_OP_SIZE,
    MIN_OP_LENGTH,
    OP_CLASSES,
    AclEntry,
    AddBlockOp,
    AddOp,
    Block,
    ChecksumException,
    CloseOp,
    DeleteOp,
    EndLogSegmentOp,
    FSEditLogOpCodes,
    LogHeaderCorruptException,
    MkdirOp,
    OpaqueOp,
    PermissionStatus,
    RenameOldOp,
    RenameOp,
    SetGenstampV2Op,
    SetOwnerOp,
    SetPermissionsOp,
    SetReplicationOp,
    StartLogSegmentOp,
    TimesOp,
    XAttr,
    decode_op,
    edit_log_header,
    encode_op,
    frame_length_at,
    parse_edit_log_header,
    scan_op,
)
from hadoop_qjm.editlog.fs_edit_log_op_codes import OBSOLETE_OPCODES

# ---- the opcode table (§4.3) -------------------------------------------------------------------

DIGEST_TABLE = """
0 ADD 1 RENAME_OLD 2 DELETE 3 MKDIR 4 SET_REPLICATION 5 DATANODE_ADD 6 DATANODE_REMOVE
7 SET_PERMISSIONS 8 SET_OWNER 9 CLOSE 10 SET_GENSTAMP_V1 11 SET_NS_QUOTA 12 CLEAR_NS_QUOTA
13 TIMES 14 SET_QUOTA 15 RENAME 16 CONCAT_DELETE 17 SYMLINK 18 GET_DELEGATION_TOKEN
19 RENEW_DELEGATION_TOKEN 20 CANCEL_DELEGATION_TOKEN 21 UPDATE_MASTER_KEY 22 REASSIGN_LEASE
23 END_LOG_SEGMENT 24 START_LOG_SEGMENT 25 UPDATE_BLOCKS 26 CREATE_SNAPSHOT 27 DELETE_SNAPSHOT
28 RENAME_SNAPSHOT 29 ALLOW_SNAPSHOT 30 DISALLOW_SNAPSHOT 31 SET_GENSTAMP_V2
32 ALLOCATE_BLOCK_ID 33 ADD_BLOCK 34 ADD_CACHE_DIRECTIVE 35 REMOVE_CACHE_DIRECTIVE
36 ADD_CACHE_POOL 37 MODIFY_CACHE_POOL 38 REMOVE_CACHE_POOL 39 MODIFY_CACHE_DIRECTIVE
40 SET_ACL 41 ROLLING_UPGRADE_START 42 ROLLING_UPGRADE_FINALIZE 43 SET_XATTR 44 REMOVE_XATTR
45 SET_STORAGE_POLICY 46 TRUNCATE 47 APPEND 48 SET_QUOTA_BY_STORAGETYPE
49 ADD_ERASURE_CODING_POLICY 50 ENABLE_ERASURE_CODING_POLICY 51 DISABLE_ERASURE_CODING_POLICY
52 REMOVE_ERASURE_CODING_POLICY 255 INVALID
"""


def test_opcode_table_is_the_digest_table() -> None:
    words = DIGEST_TABLE.split()
    expected = {"OP_" + name: int(code) for code, name in zip(words[::2], words[1::2])}
    assert {c.name: c.value for c in FSEditLogOpCodes} == expected
    assert list(FSEditLogOpCodes)[-1] is FSEditLogOpCodes.OP_INVALID  # Hadoop's enum order
    assert FSEditLogOpCodes.OP_INVALID.java_byte == -1
    assert FSEditLogOpCodes.from_byte(24) is FSEditLogOpCodes.OP_START_LOG_SEGMENT
    assert FSEditLogOpCodes.from_byte(53) is None


def test_every_readable_opcode_has_its_op_class() -> None:
    readable = {
        c
        for c in FSEditLogOpCodes
        if c not in OBSOLETE_OPCODES and c is not FSEditLogOpCodes.OP_INVALID
    }
    assert set(OP_CLASSES) == readable
    for code, cls in OP_CLASSES.items():
        assert cls.opcode is code


def _frame(opcode: int, txid: int, body: bytes = b"", length: int | None = None) -> bytes:
    head = struct.pack(">Biq", opcode, 12 + len(body) if length is None else length, txid)
    return head + body + struct.pack(">I", zlib.crc32(head + body))


@pytest.mark.parametrize("opcode", [5, 6, 53, 200])
def test_obsolete_and_unknown_opcodes_are_invalid_on_read(opcode: int) -> None:
    frame = _frame(opcode, 7)
    assert scan_op(frame) == (7, len(frame))  # a frame check does not look at the opcode
    with pytest.raises(EditLogCorruptionError, match="Read invalid opcode"):
        decode_op(frame)


# ---- header (§4.1) -----------------------------------------------------------------------------


def test_header_bytes() -> None:
    assert edit_log_header(-67).hex() == "ffffffbd00000000"
    assert parse_edit_log_header(edit_log_header()) == CURRENT_LAYOUT_VERSION


@pytest.mark.parametrize(
    "data,message",
    [
        (b"", "Reached EOF when reading log header"),
        (b"\xff\xff", "Reached EOF when reading log header"),
        (b"\xff\xff\xff\xbd\x00", "EOF while reading layout flags"),
        (b"\xff" * 8, "value is -1"),
    ],
)
def test_missing_or_truncated_header_is_corrupt(data: bytes, message: str) -> None:
    with pytest.raises(LogHeaderCorruptException, match=message):
        parse_edit_log_header(data)


def test_header_with_layout_flags_is_refused() -> None:
    with pytest.raises(IOException, match="feature flags") as info:
        parse_edit_log_header(b"\xff\xff\xff\xbd\x00\x00\x00\x01")
    assert not isinstance(info.value, LogHeaderCorruptException)
    with pytest.raises(IOException, match="negative"):
        parse_edit_log_header(b"\xff\xff\xff\xbd\xff\xff\xff\xfe")


def test_header_version_check() -> None:
    assert parse_edit_log_header(edit_log_header(-60), verify_version=True) == -60
    # -68: the project's test-only future layout (docs/ha.md, "Upgrades"), read like -67.
    assert parse_edit_log_header(edit_log_header(-68), verify_version=True) == -68
    for bad in (-69, -15, 1):
        with pytest.raises(LogHeaderCorruptException, match="Unexpected version"):
            parse_edit_log_header(edit_log_header(bad), verify_version=True)


# ---- framing (§4.2) ----------------------------------------------------------------------------


def test_start_log_segment_frame_is_hadoops() -> None:
    # The first op of editsStored, quoted in the digest.
    frame = encode_op(StartLogSegmentOp(1))
    assert frame.hex() == "180000000c00000000000000017043f0b7"
    assert len(frame) == MIN_OP_LENGTH
    assert decode_op(frame) == (StartLogSegmentOp(1), 17)
    assert scan_op(frame) == (1, 17)


def test_length_field_counts_itself_txid_and_body() -> None:
    op = MkdirOp.create(9, "/x")
    frame = encode_op(op)
    length = struct.unpack_from(">i", frame, 1)[0]
    assert length == len(frame) - 5 == 4 + 8 + len(op.encode_body())
    assert frame_length_at(frame, 0) == len(frame)
    assert struct.unpack_from(">I", frame, len(frame) - 4)[0] == zlib.crc32(frame[:-4])


def test_clean_ends() -> None:
    frame = encode_op(EndLogSegmentOp(4))
    assert scan_op(frame, len(frame)) == (INVALID_TXID, len(frame))
    padded = frame + b"\xff" * 10 + b"\x00" * 3 + b"\xff"
    assert scan_op(padded, len(frame)) == (INVALID_TXID, len(padded))
    assert decode_op(padded, len(frame)) == (None, len(padded))


def test_bytes_after_the_terminator_are_corrupt() -> None:
    data = b"\xff\xff\xff\x01\xff"
    with pytest.raises(EditLogCorruptionError, match="Read extra bytes after the terminator!"):
        scan_op(data)
    with pytest.raises(EditLogCorruptionError, match="Read extra bytes after the terminator!"):
        decode_op(data)


def test_bad_checksum() -> None:
    frame = bytearray(encode_op(MkdirOp.create(3, "/dir")))
    frame[-1] ^= 0x01
    with pytest.raises(ChecksumException, match="Transaction is corrupt") as info:
        scan_op(bytes(frame))
    assert info.value.txid == 3
    with pytest.raises(EditLogCorruptionError, match="Transaction is corrupt"):
        decode_op(bytes(frame))


def test_truncated_frame() -> None:
    frame = encode_op(MkdirOp.create(3, "/dir"))
    for cut in range(1, len(frame)):
        with pytest.raises(EditLogCorruptionError):
            scan_op(frame[:cut])
        with pytest.raises(EditLogCorruptionError):
            decode_op(frame[:cut])


def test_lengths_are_checked_before_anything_is_read() -> None:
    # A frame claiming 2 GiB: refused from its length alone, no allocation.
    huge = b"\x03\x7f\xff\xff\xf0" + b"\x00" * 20
    with pytest.raises(EditLogCorruptionError, match="maxOpSize = 52428800"):
        scan_op(huge)
    with pytest.raises(EditLogCorruptionError, match="maxOpSize = 52428800"):
        decode_op(huge)
    # Shorter than the 17-byte minimum, or negative.
    for length in (11, 0, -5):
        with pytest.raises(EditLogCorruptionError, match="minimum op size is 17"):
            scan_op(_frame(3, 1, length=length) + b"\x00" * 16)
    # A caller's smaller max op size.
    frame = encode_op(MkdirOp.create(3, "/" + "d" * 100))
    with pytest.raises(EditLogCorruptionError, match="maxOpSize = 64"):
        scan_op(frame, 0, max_op_size=64)
    assert scan_op(frame, 0, max_op_size=len(frame))[0] == 3
    assert DEFAULT_MAX_OP_SIZE == 50 * 1024 * 1024


def test_body_must_be_used_exactly() -> None:
    body = StartLogSegmentOp(1).encode_body() + b"\x00"
    with pytest.raises(EditLogCorruptionError, match="unread bytes"):
        decode_op(_frame(FSEditLogOpCodes.OP_START_LOG_SEGMENT, 1, body))
    short = MkdirOp.create(2, "/d").encode_body()[:-3]
    with pytest.raises(EditLogCorruptionError, match="OP_MKDIR txid 2"):
        decode_op(_frame(FSEditLogOpCodes.OP_MKDIR, 2, short))


def test_opaque_ops_keep_their_body() -> None:
    op = OpaqueOp(FSEditLogOpCodes.OP_SET_GENSTAMP_V2, 12, b"\x00" * 8)
    frame = encode_op(op)
    assert decode_op(frame, layout_version=-66) == (op, len(frame))
    # At the current layout version the same bytes are the modelled op.
    modelled, _ = decode_op(frame)
    assert modelled == SetGenstampV2Op(12, gen_stamp=0) and encode_op(modelled) == frame
    with pytest.raises(IllegalArgumentException):
        OpaqueOp(FSEditLogOpCodes.OP_INVALID, 1, b"")


def test_other_layout_versions_decode_as_opaque() -> None:
    op = MkdirOp.create(5, "/a")
    decoded, _ = decode_op(encode_op(op), 0, layout_version=-66)
    assert decoded == OpaqueOp(FSEditLogOpCodes.OP_MKDIR, 5, op.encode_body())


def test_an_unencodable_op_is_refused() -> None:
    with pytest.raises(IllegalArgumentException):
        encode_op(StartLogSegmentOp(1 << 64))
    with pytest.raises(IllegalArgumentException):
        encode_op(MkdirOp.create(1, "/a", inode_id=1 << 63))
    with pytest.raises(IllegalArgumentException):
        encode_op(SetReplicationOp(1, path="/a", replication=1 << 15))


# ---- op bodies (§4.5) --------------------------------------------------------------------------

PERM = PermissionStatus("lei", "supergroup", 0o644)
CLIENT = bytes.fromhex("cab1aa2de08a4d2f821676e167eccd94")


def test_mkdir_create_defaults() -> None:
    op = MkdirOp.create(40, "tx 40")
    assert op.opcode is FSEditLogOpCodes.OP_MKDIR
    assert (op.txid, op.path, op.timestamp, op.inode_id) == (40, "tx 40", 0, 16386 + 40)
    assert op.permissions == PermissionStatus("hdfs", "supergroup", 0o755)
    assert op == MkdirOp(40, inode_id=16426, path="tx 40", timestamp=0, permissions=op.permissions)
    assert decode_op(encode_op(op))[0] == op


def test_mkdir_body_layout() -> None:
    op = MkdirOp(18, inode_id=16388, path="/d", timestamp=5, permissions=PERM)
    assert op.encode_body().hex() == (
        "0000000000004004"
        "00022f64"
        "0000000000000005"
        "0000000000000005"
        + PERM.encoded.hex()
        + "00000000"  # no ACL entries
        + "00"  # empty XAttrEditLogProto
    )


def test_mkdir_keeps_a_different_atime() -> None:
    op = MkdirOp(1, inode_id=2, path="/d", timestamp=5, permissions=PERM, atime=7)
    assert decode_op(encode_op(op))[0] == op


def test_set_owner_absent_values_are_empty_strings() -> None:
    op = SetOwnerOp(29, src="/f", username="newOwner")
    assert op.encode_body().hex() == "00022f6600086e65774f776e65720000"
    assert decode_op(encode_op(op))[0] == op


def test_rename_options() -> None:
    op = RenameOp(33, src="/a", dst="/b", timestamp=1, options=(2,), rpc_client_id=CLIENT)
    assert decode_op(encode_op(op))[0] == op
    assert ("OPTIONS", "TO_TRASH") in op.xml_fields()
    with pytest.raises(IllegalArgumentException):
        RenameOp(1, src="/a", dst="/b", timestamp=1, options=(7,))


def test_add_block_needs_one_or_two_blocks() -> None:
    body = bytes.fromhex("00022f66000000fffffffe")  # path, zero blocks, rpc ids
    with pytest.raises(EditLogCorruptionError, match="expected 1 or 2"):
        decode_op(_frame(FSEditLogOpCodes.OP_ADD_BLOCK, 3, body))


def test_xml_fields_follow_hadoops_to_xml() -> None:
    op = SetOwnerOp(29, src="/file_create", username="newOwner")
    assert op.xml_fields() == [("SRC", "/file_create"), ("USERNAME", "newOwner")]
    times = TimesOp(30, path="/f", mtime=1, atime=2)
    assert times.xml_fields() == [("LENGTH", "0"), ("PATH", "/f"), ("MTIME", "1"), ("ATIME", "2")]
    perms = SetPermissionsOp(28, src="/f", permission=0o777 | 0xF000)
    assert perms.xml_fields() == [("SRC", "/f"), ("MODE", "511")]  # only FsPermission's bits


# ---- property: anything written reads back the same --------------------------------------------

TXIDS = st.integers(min_value=0, max_value=(1 << 63) - 1)
I64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)
SHORT = st.integers(min_value=-(1 << 15), max_value=(1 << 15) - 1)
TEXT = st.text(max_size=40)
PERMS = st.builds(PermissionStatus, TEXT, TEXT, st.integers(0, 0xFFFF))
BLOCK = st.builds(Block, I64, st.integers(0, 1 << 40), st.integers(0, 1 << 40))
ACL = st.builds(AclEntry, st.integers(0, 1), st.integers(0, 3), st.integers(0, 7), st.none() | TEXT)
XATTR = st.builds(XAttr, st.integers(0, 4), TEXT, st.none() | st.binary(max_size=16))
CLIENT_ID = st.sampled_from([b"", CLIENT])
CALL_ID = st.integers(-(1 << 31), (1 << 31) - 1)


def _tuples(strategy, max_size=3):
    return st.lists(strategy, max_size=max_size).map(tuple)


def _op_strategy(txid):
    return st.one_of(
        st.builds(StartLogSegmentOp, txid),
        st.builds(EndLogSegmentOp, txid),
        st.builds(lambda t, p: MkdirOp.create(t % (1 << 62), p), txid, TEXT),
        st.builds(
            MkdirOp,
            txid,
            inode_id=I64,
            path=TEXT,
            timestamp=I64,
            permissions=PERMS,
            acl_entries=_tuples(ACL),
            xattrs=_tuples(XATTR),
            atime=st.none() | I64,
        ).filter(lambda op: op.atime != op.timestamp),
        st.builds(
            AddOp,
            txid,
            inode_id=I64,
            path=TEXT,
            replication=SHORT,
            mtime=I64,
            atime=I64,
            block_size=I64,
            permissions=PERMS,
            blocks=_tuples(BLOCK),
            acl_entries=_tuples(ACL),
            xattrs=_tuples(XATTR),
            client_name=TEXT,
            client_machine=TEXT,
            overwrite=st.booleans(),
            storage_policy_id=st.integers(-128, 127),
            erasure_coding_policy_id=st.integers(-128, 127),
            rpc_client_id=CLIENT_ID,
            rpc_call_id=CALL_ID,
        ),
        st.builds(
            CloseOp,
            txid,
            inode_id=I64,
            path=TEXT,
            replication=SHORT,
            mtime=I64,
            atime=I64,
            block_size=I64,
            permissions=PERMS,
            blocks=_tuples(BLOCK),
        ),
        st.builds(
            DeleteOp,
            txid,
            path=TEXT,
            timestamp=I64,
            rpc_client_id=CLIENT_ID,
            rpc_call_id=CALL_ID,
        ),
        st.builds(
            RenameOldOp,
            txid,
            src=TEXT,
            dst=TEXT,
            timestamp=I64,
            rpc_client_id=CLIENT_ID,
            rpc_call_id=CALL_ID,
        ),
        st.builds(
            RenameOp,
            txid,
            src=TEXT,
            dst=TEXT,
            timestamp=I64,
            options=_tuples(st.integers(0, 2)),
            rpc_client_id=CLIENT_ID,
            rpc_call_id=CALL_ID,
        ),
        st.builds(TimesOp, txid, path=TEXT, mtime=I64, atime=I64),
        st.builds(SetPermissionsOp, txid, src=TEXT, permission=st.integers(0, 0xFFFF)),
        st.builds(
            SetOwnerOp,
            txid,
            src=TEXT,
            username=st.none() | TEXT.filter(bool),
            groupname=st.none() | TEXT.filter(bool),
        ),
        st.builds(SetReplicationOp, txid, path=TEXT, replication=SHORT),
        st.builds(
            AddBlockOp,
            txid,
            path=TEXT,
            last_block=BLOCK,
            penultimate_block=st.none() | BLOCK,
            rpc_client_id=CLIENT_ID,
            rpc_call_id=CALL_ID,
        ),
    )


@settings(max_examples=120, deadline=None)
@given(st.data())
def test_any_ops_written_then_read_back_are_the_same(data) -> None:
    count = data.draw(st.integers(0, 6))
    ops = [data.draw(_op_strategy(TXIDS)) for _ in range(count)]
    buf = b"".join(encode_op(op) for op in ops)
    read = []
    offset = 0
    while True:
        op, offset = decode_op(buf, offset)
        if op is None:
            break
        read.append(op)
        # Every op re-encodes to exactly the bytes it was read from.
        assert encode_op(op) == buf[offset - len(encode_op(op)) : offset]
    assert read == ops
    assert offset == len(buf)
    # Frame-only scanning sees the same txids.
    txids = []
    offset = 0
    while True:
        txid, offset = scan_op(buf, offset)
        if txid == INVALID_TXID:
            break
        txids.append(txid)
    assert txids == [op.txid for op in ops]


# ---- purity (STYLE.md habit 1) -----------------------------------------------------------------

PURE_MODULES = [
    "fs_edit_log_op.py",
    "fs_edit_log_op_codes.py",
    "edit_log_ops.py",
    "edit_log_path_ops.py",
    "edit_log_codec.py",
    "edits_double_buffer.py",
    "edit_log_xml.py",
    "edit_log_field_ops.py",
    "edit_log_admin_ops.py",
    "edit_log_token_ops.py",
]
IMPURE = {
    "os",
    "io",
    "socket",
    "threading",
    "multiprocessing",
    "concurrent",
    "asyncio",
    "subprocess",
    "mmap",
    "pathlib",
    "shutil",
    "tempfile",
    "selectors",
    "thriftpy2",
    "logging",
    "time",
}


@pytest.mark.parametrize("module", PURE_MODULES)
def test_format_modules_are_pure(module: str) -> None:
    tree = ast.parse((Path(editlog_pkg.__file__).parent / module).read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            imported.add(node.module.split(".")[0])
            if node.module.startswith("hadoop_qjm."):
                assert node.module.rsplit(".", 1)[-1] + ".py" in PURE_MODULES or node.module in (
                    "hadoop_qjm.common.exceptions",
                    "hadoop_qjm.common.constants",
                    "hadoop_qjm.common.protobuf_wire",
                ), f"{module} imports {node.module}"
    assert not imported & IMPURE, f"{module} imports {imported & IMPURE}"
