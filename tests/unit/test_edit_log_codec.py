"""The primitive encodings of edit-log op bodies (HADOOP-QJM-DIGEST.md §4.4)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hadoop_qjm.common.exceptions import EditLogCorruptionError
from hadoop_qjm.editlog.edit_log_codec import (
    MAX_UTF8_CHARS,
    AclEntry,
    Block,
    ByteReader,
    PermissionStatus,
    XAttr,
    client_id_to_string,
    encode_acl_entries,
    encode_block_array,
    encode_compact_block_array,
    encode_rpc_ids,
    encode_text,
    encode_utf8,
    encode_vlong,
    encode_xattrs,
    to_int64,
)

INT64 = st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1)


# ---- VInt / VLong ------------------------------------------------------------------------------

# Values and the bytes WritableUtils.writeVLong writes for them.
VLONG_VECTORS = [
    (0, "00"),
    (127, "7f"),
    (-112, "90"),
    (128, "8f80"),
    (255, "8fff"),
    (256, "8e0100"),
    (-113, "8770"),
    (-256, "87ff"),
    (-257, "860100"),
    ((1 << 63) - 1, "887fffffffffffffff"),
    (-(1 << 63), "807fffffffffffffff"),
]


@pytest.mark.parametrize("value,hexbytes", VLONG_VECTORS)
def test_vlong_matches_writable_utils(value: int, hexbytes: str) -> None:
    assert encode_vlong(value).hex() == hexbytes
    reader = ByteReader(bytes.fromhex(hexbytes))
    assert reader.vlong() == value
    assert reader.remaining() == 0


@given(INT64)
def test_vlong_round_trips(value: int) -> None:
    data = encode_vlong(value)
    assert 1 <= len(data) <= 9
    assert ByteReader(data).vlong() == value


def test_vint_rejects_values_beyond_an_int() -> None:
    with pytest.raises(EditLogCorruptionError, match="fit in integer"):
        ByteReader(encode_vlong(1 << 40)).vint()


def test_to_int64_wraps_like_java() -> None:
    assert to_int64(1 << 63) == -(1 << 63)
    assert to_int64(-(1 << 63) - 1) == (1 << 63) - 1
    assert to_int64(5) == 5


# ---- strings -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,hexbytes",
    [
        ("", "0000"),
        ("/a", "00022f61"),
        ("\x00", "000100"),  # NUL is one plain byte, unlike Java's modified UTF-8
        ("é", "0002c3a9"),
        ("€", "0003e282ac"),
        ("😀", "0006eda0bdedb880"),  # a surrogate pair: each half on its own (CESU-8-like)
    ],
)
def test_utf8_string_encoding(text: str, hexbytes: str) -> None:
    assert encode_utf8(text).hex() == hexbytes
    assert ByteReader(bytes.fromhex(hexbytes)).utf8() == text


def test_utf8_keeps_a_lone_surrogate_like_java() -> None:
    text = "a\ud800b"
    data = encode_utf8(text)
    assert data.hex() == "000561eda08062"
    assert ByteReader(data).utf8() == text


def test_utf8_accepts_a_four_byte_sequence_on_read() -> None:
    # Hadoop's reader takes standard 4-byte UTF-8 too (it never writes it).
    assert ByteReader(bytes.fromhex("0004f09f9880")).utf8() == "😀"


def test_utf8_rejects_an_invalid_lead_byte() -> None:
    with pytest.raises(EditLogCorruptionError, match="Invalid UTF8"):
        ByteReader(bytes.fromhex("0002ff41")).utf8()


def test_utf8_truncates_long_strings_like_hadoop() -> None:
    data = encode_utf8("x" * (MAX_UTF8_CHARS + 10))
    assert ByteReader(data).utf8() == "x" * MAX_UTF8_CHARS
    data = encode_utf8("€" * (MAX_UTF8_CHARS + 1))
    assert len(data) == 2 + 3 * MAX_UTF8_CHARS


@given(st.text(max_size=200))
def test_utf8_round_trips(text: str) -> None:
    assert ByteReader(encode_utf8(text)).utf8() == text


@given(st.text(max_size=200))
def test_text_round_trips(text: str) -> None:
    data = encode_text(text)
    assert ByteReader(data).text() == text


def test_text_length_is_a_vint() -> None:
    assert encode_text("lei").hex() == "036c6569"
    assert encode_text("a" * 200)[:2].hex() == "8fc8"


def test_reading_past_the_body_is_an_error_not_an_allocation() -> None:
    with pytest.raises(EditLogCorruptionError, match="too short"):
        ByteReader(bytes.fromhex("fff0")).utf8()  # claims 65520 bytes, has none
    with pytest.raises(EditLogCorruptionError, match="too short"):
        ByteReader(b"\x00\x00").i64()


# ---- composite values --------------------------------------------------------------------------


def test_permission_status_encoding() -> None:
    perm = PermissionStatus("lei", "supergroup", 0o644)
    assert perm.encoded.hex() == "036c65690a737570657267726f757001a4"
    assert ByteReader(perm.encoded).permission_status() == perm
    # The second read of the same bytes comes from the cache: same value.
    assert ByteReader(perm.encoded).permission_status() == perm


@given(st.text(max_size=300), st.text(max_size=20), st.integers(0, 0xFFFF))
def test_permission_status_round_trips(user: str, group: str, mode: int) -> None:
    perm = PermissionStatus(user, group, mode)
    reader = ByteReader(perm.encoded)
    assert reader.permission_status() == PermissionStatus(
        user.encode("utf-8", "replace").decode("utf-8"), group, mode
    )
    assert reader.remaining() == 0


BLOCKS = st.tuples(INT64, st.integers(0, (1 << 63) - 1), INT64).map(lambda t: Block(*t))


@given(st.lists(BLOCKS, max_size=5).map(tuple))
def test_block_arrays_round_trip(blocks: tuple[Block, ...]) -> None:
    assert ByteReader(encode_block_array(blocks)).block_array() == blocks
    assert ByteReader(encode_compact_block_array(blocks)).compact_block_array() == blocks


def test_compact_block_array_uses_deltas() -> None:
    blocks = (Block(1073741826, 512, 1002), Block(1073741827, 0, 1003))
    data = encode_compact_block_array(blocks)
    # count 2; id, size +512, genstamp +1002; id, size -512 (one's complement 0x01ff), gs +1
    assert data.hex() == ("0200000000400000028e02008e03ea00000000400000038601ff01")


def test_a_negative_block_size_is_corrupt() -> None:
    with pytest.raises(EditLogCorruptionError, match="Unexpected block size"):
        ByteReader(encode_block_array((Block(1, -5, 1),))).block_array()


def test_a_block_count_beyond_the_body_is_corrupt() -> None:
    with pytest.raises(EditLogCorruptionError, match="number of blocks"):
        ByteReader(b"\x7f\xff\xff\xff").block_array()


def test_rpc_ids() -> None:
    client = bytes.fromhex("cab1aa2de08a4d2f821676e167eccd94")
    data = encode_rpc_ids(client, 35)
    assert data.hex() == "0010" + client.hex() + "00000023"
    assert ByteReader(data).rpc_ids() == (client, 35)
    assert client_id_to_string(client) == "cab1aa2d-e08a-4d2f-8216-76e167eccd94"
    assert client_id_to_string(b"") == ""
    assert ByteReader(encode_rpc_ids(b"", -2)).rpc_ids() == (b"", -2)


ACLS = st.builds(
    AclEntry,
    st.integers(0, 1),
    st.integers(0, 3),
    st.integers(0, 7),
    st.none() | st.text(max_size=10),
)


@given(st.lists(ACLS, max_size=4).map(tuple))
def test_acl_entries_round_trip(entries: tuple[AclEntry, ...]) -> None:
    assert ByteReader(encode_acl_entries(entries)).acl_entries() == entries


def test_acl_entry_byte_layout() -> None:
    # DEFAULT scope (1<<5) | GROUP type (1<<3) | rwx (7), with a name (bit 6).
    data = encode_acl_entries((AclEntry(1, 1, 7, "g"),))
    assert data.hex() == "00000001" + "6f" + "000167"


XATTRS = st.builds(
    XAttr, st.integers(0, 4), st.text(max_size=10), st.none() | st.binary(max_size=10)
)


@given(st.lists(XATTRS, max_size=4).map(tuple))
def test_xattrs_round_trip(xattrs: tuple[XAttr, ...]) -> None:
    reader = ByteReader(encode_xattrs(xattrs))
    assert reader.xattrs() == xattrs
    assert reader.remaining() == 0


def test_xattrs_protobuf_layout() -> None:
    assert encode_xattrs(()) == b"\x00"
    # XAttrEditLogProto{xAttrs: [{namespace: USER, name: "a1", value: "123"}]}
    data = encode_xattrs((XAttr(0, "a1", b"123"),))
    assert data.hex() == "0d" + "120b" + "0800" + "12026131" + "1a03313233"


def test_xattr_without_a_name_is_corrupt() -> None:
    with pytest.raises(EditLogCorruptionError, match="namespace or name"):
        ByteReader(bytes.fromhex("0412020800")).xattrs()
