"""Every op class both ways: binary body and Hadoop's oev XML (FSEditLogOp.toXml/fromXml).

The property: an op written and read back is the same op, in binary and through the XML
oev writes (lxml, mangling and all). The XML carries less than the binary in three places
Hadoop's does too (OP_ADD's xattrs and storage policy, MKDIR's separate atime, permission
bits beyond FsPermission's), so the generated ops stay inside what the XML can say.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lxml import etree

from hadoop_qjm.editlog import edit_log_field_ops, edit_log_token_ops
from hadoop_qjm.editlog.edit_log_xml import InvalidXmlException, Stanza
from hadoop_qjm.editlog.fs_edit_log_op import (
    OP_CLASSES,
    AclEntry,
    AddCacheDirectiveInfoOp,
    AddCachePoolOp,
    AddErasureCodingPolicyOp,
    AddOp,
    Block,
    ConcatDeleteOp,
    DelegationKey,
    DelegationTokenIdentifier,
    FieldsOp,
    FSEditLogOpCodes,
    MkdirOp,
    ModifyCacheDirectiveInfoOp,
    ModifyCachePoolOp,
    PermissionStatus,
    RemoveXAttrOp,
    SetAclOp,
    SetXAttrOp,
    UpdateMasterKeyOp,
    XAttr,
    decode_op,
    encode_op,
)
from hadoop_qjm.tools.oev import op_from_record, record_element, unmangle_xml_string

I64 = st.integers(-(1 << 63), (1 << 63) - 1)
I32 = st.integers(-(1 << 31), (1 << 31) - 1)
I16 = st.integers(-(1 << 15), (1 << 15) - 1)
I8 = st.integers(-128, 127)
TEXT = st.text(max_size=20)  # any code point but surrogates, control characters included
MODE = st.integers(0, 0o1777)
PERMS = st.builds(PermissionStatus, TEXT, TEXT, MODE)
BLOCK = st.builds(Block, I64, st.integers(0, 1 << 40), st.integers(0, 1 << 40))
CLIENT_ID = st.sampled_from([b"", uuid.UUID(int=0x0123456789ABCDEF0123456789ABCDEF).bytes])
ACL = st.builds(AclEntry, st.integers(0, 1), st.integers(0, 3), st.integers(0, 7), st.none() | TEXT)
XATTR = st.builds(XAttr, st.integers(0, 4), TEXT, st.none() | st.binary(max_size=8))
TOKEN = st.builds(DelegationTokenIdentifier, TEXT, TEXT, TEXT, I64, I64, I32, I32)
KEY = st.builds(DelegationKey, I32, I64, st.none() | st.binary(max_size=8))


def _tuples(strategy):
    return st.lists(strategy, max_size=3).map(tuple)


_KIND_VALUES = {
    "str": TEXT,
    "long": I64,
    "int": I32,
    "short": I16,
    "byte": I8,
    "bool": st.booleans(),
    "perm": PERMS,
    "blocks": _tuples(BLOCK),
    "optional_block": st.none() | BLOCK,
    "token": TOKEN,
    "key": KEY,
}


def _kind_name(kind) -> str:
    if kind is edit_log_token_ops.TOKEN:
        return "token"
    return "key" if kind is edit_log_token_ops.KEY else kind


def _fields_op(cls: type[FieldsOp]):
    """Any instance of a FieldsOp class, from its FIELDS declaration."""
    values = {attr: _KIND_VALUES[_kind_name(kind)] for attr, _, kind in cls.FIELDS if attr}
    if cls.RPC_IDS:
        values.update(rpc_client_id=CLIENT_ID, rpc_call_id=I32)
    return st.builds(cls, I64.filter(lambda t: t >= 0), **values)


RPC = {"rpc_client_id": CLIENT_ID, "rpc_call_id": I32}
TXID = st.integers(0, (1 << 63) - 1)
_OTHERS = [
    st.builds(ConcatDeleteOp, TXID, trg=TEXT, srcs=_tuples(TEXT), timestamp=I64, **RPC),
    st.builds(SetAclOp, TXID, src=TEXT, acl_entries=_tuples(ACL)),
    st.builds(SetXAttrOp, TXID, src=TEXT, xattrs=_tuples(XATTR), **RPC),
    st.builds(RemoveXAttrOp, TXID, src=TEXT, xattrs=_tuples(XATTR), **RPC),
    *(
        st.builds(
            cls,
            TXID,
            id=I64,
            path=st.none() | TEXT,
            replication=st.none() | I16,
            pool=st.none() | TEXT,
            expiration=st.none() | I64,
            **RPC,
        )
        for cls in (AddCacheDirectiveInfoOp, ModifyCacheDirectiveInfoOp)
    ),
    *(
        st.builds(
            cls,
            TXID,
            pool_name=TEXT,
            owner_name=st.none() | TEXT,
            group_name=st.none() | TEXT,
            mode=st.none() | MODE,
            limit=st.none() | I64,
            max_relative_expiry=st.none() | I64,
            default_replication=st.none() | I16,
            **RPC,
        )
        for cls in (AddCachePoolOp, ModifyCachePoolOp)
    ),
    st.builds(
        AddErasureCodingPolicyOp,
        TXID,
        codec_name=TEXT,
        num_data_units=I32,
        num_parity_units=I32,
        cell_size=I32,
        extra_options=_tuples(st.tuples(TEXT, TEXT)),
        **RPC,
    ),
    st.builds(
        MkdirOp,
        TXID,
        inode_id=I64,
        path=TEXT,
        timestamp=I64,
        permissions=PERMS,
        acl_entries=_tuples(ACL),
        xattrs=_tuples(XATTR),
    ),
    st.builds(
        AddOp,
        TXID,
        inode_id=I64,
        path=TEXT,
        replication=I16,
        mtime=I64,
        atime=I64,
        block_size=I64,
        permissions=PERMS,
        blocks=_tuples(BLOCK),
        acl_entries=_tuples(ACL),
        client_name=TEXT,
        client_machine=TEXT,
        overwrite=st.booleans(),
        erasure_coding_policy_id=I8,
        **RPC,
    ),
]
FIELD_OPS = [
    getattr(module, name)
    for module in (edit_log_field_ops, edit_log_token_ops)
    for name in module.__all__
    if name.endswith("Op") and name != "FieldsOp"
]
ANY_OP = st.one_of(*(_fields_op(cls) for cls in FIELD_OPS), *_OTHERS)


_OTHER_CLASSES = {
    ConcatDeleteOp,
    SetAclOp,
    SetXAttrOp,
    RemoveXAttrOp,
    AddCacheDirectiveInfoOp,
    ModifyCacheDirectiveInfoOp,
    AddCachePoolOp,
    ModifyCachePoolOp,
    AddErasureCodingPolicyOp,
}


def test_the_strategies_cover_every_new_op_class() -> None:
    new = {
        cls
        for cls in OP_CLASSES.values()
        if cls.__module__.endswith(("field_ops", "admin_ops", "token_ops"))
    }
    assert new == set(FIELD_OPS) | _OTHER_CLASSES
    assert len(new) + 13 == len(OP_CLASSES) == 51  # 13 ops were modelled before


@settings(max_examples=300, deadline=None)
@given(ANY_OP)
def test_binary_and_xml_round_trips(op) -> None:
    frame = encode_op(op)
    assert decode_op(frame) == (op, len(frame))
    # Through the serialized XML, as -p xml writes it and -p binary reads it.
    text = etree.tostring(record_element(op), encoding="UTF-8")
    back = op_from_record(etree.fromstring(text))
    assert back == op
    assert encode_op(back) == frame


def test_a_delegation_token_and_key_in_hadoops_xml() -> None:
    op = UpdateMasterKeyOp(
        2, key=DelegationKey(1, 1513298395825, bytes.fromhex("ddb3d2c37b57926a"))
    )
    assert op.encode_body().hex() == "018a0160579d02b108ddb3d2c37b57926a"  # editsStored txid 2
    assert op.xml_fields() == [
        (
            "DELEGATION_KEY",
            [("KEY_ID", "1"), ("EXPIRY_DATE", "1513298395825"), ("KEY", "ddb3d2c37b57926a")],
        )
    ]
    token = DelegationTokenIdentifier("alice", "yarn", "", 5, 7, 3, 1)
    get = OP_CLASSES[FSEditLogOpCodes.OP_GET_DELEGATION_TOKEN](9, token=token, expiry_time=11)
    # version 0, Text owner/renewer/realUser, VLong dates, VInt sequence and key id, expiry
    assert get.encode_body() == (
        b"\x00\x05alice\x04yarn\x00\x05\x07\x03\x01" + (11).to_bytes(8, "big")
    )
    (tag, children), expiry = get.xml_fields()
    assert tag == "DELEGATION_TOKEN_IDENTIFIER" and children[0] == ("KIND", "HDFS_DELEGATION_TOKEN")
    assert expiry == ("EXPIRY_TIME", "11")


def test_unmangling_is_the_inverse_of_mangling() -> None:
    assert unmangle_xml_string("a\\005c;b\\0001;\\1f600;") == "a\\b\x01\U0001f600"
    for bad in ("a\\", "\\zz;", "\\0041", "\\110000;"):
        with pytest.raises(InvalidXmlException, match="invalid escape"):
            unmangle_xml_string(bad)


def test_stanza_lookups() -> None:
    st_ = Stanza()
    st_.add("A", Stanza("1"))
    st_.add("A", Stanza("2"))
    with pytest.raises(InvalidXmlException, match="more than one <A>"):
        st_.get("A")
    with pytest.raises(InvalidXmlException, match="no entry found for <B>"):
        st_.get("B")
    assert st_.get_or_none("B") is None and [s.value for s in st_.all("A")] == ["1", "2"]
