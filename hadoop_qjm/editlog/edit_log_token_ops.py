"""The delegation-token and master-key ops (layout version -67). Pure.

They are :class:`~hadoop_qjm.editlog.edit_log_field_ops.FieldsOp` classes whose fields
include a composite value: a DelegationTokenIdentifier (a Writable of version 0, Text
strings, VLong dates, VInt numbers) or a DelegationKey (VInt id, VLong expiry, VInt
length -1 for no key bytes). Each has a :class:`FieldKind` saying how it is written,
read, printed and parsed.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass

from hadoop_qjm.common.exceptions import EditLogCorruptionError
from hadoop_qjm.editlog.edit_log_codec import ByteReader, encode_text, encode_vlong
from hadoop_qjm.editlog.edit_log_field_ops import FieldKind, FieldsOp, fields_op
from hadoop_qjm.editlog.edit_log_xml import (
    InvalidXmlException,
    Stanza,
    XmlField,
    hex_bytes,
    xml_int,
    xml_long,
)
from hadoop_qjm.editlog.fs_edit_log_op_codes import FSEditLogOpCodes as Op

__all__ = [
    "DelegationTokenIdentifier",
    "DelegationKey",
    "GetDelegationTokenOp",
    "RenewDelegationTokenOp",
    "CancelDelegationTokenOp",
    "UpdateMasterKeyOp",
]

#: The only token kind an HDFS NameNode logs (DelegationTokenIdentifier.HDFS_DELEGATION_KIND).
HDFS_DELEGATION_KIND = "HDFS_DELEGATION_TOKEN"


@dataclass(frozen=True, slots=True)
class DelegationTokenIdentifier:
    """An HDFS delegation token's identifier (AbstractDelegationTokenIdentifier, version 0)."""

    owner: str
    renewer: str
    real_user: str
    issue_date: int
    max_date: int
    sequence_number: int
    master_key_id: int


@dataclass(frozen=True, slots=True)
class DelegationKey:
    """A delegation-token master key; ``key`` is None when the key bytes are absent."""

    key_id: int
    expiry_date: int
    key: bytes | None = None


def _read_token(reader: ByteReader) -> DelegationTokenIdentifier:
    version = reader.u8()
    if version != 0:
        raise EditLogCorruptionError(f"Unknown version of delegation token {version}")
    owner, renewer, real_user = reader.text(), reader.text(), reader.text()
    return DelegationTokenIdentifier(
        owner, renewer, real_user, reader.vlong(), reader.vlong(), reader.vint(), reader.vint()
    )


def _encode_token(t: DelegationTokenIdentifier) -> bytes:
    return b"".join(
        (
            b"\x00",
            encode_text(t.owner),
            encode_text(t.renewer),
            encode_text(t.real_user),
            encode_vlong(t.issue_date),
            encode_vlong(t.max_date),
            encode_vlong(t.sequence_number),
            encode_vlong(t.master_key_id),
        )
    )


def _token_xml(tag: str, t: DelegationTokenIdentifier) -> list[XmlField]:
    return [
        (
            tag,
            [
                ("KIND", HDFS_DELEGATION_KIND),
                ("SEQUENCE_NUMBER", str(t.sequence_number)),
                ("OWNER", t.owner),
                ("RENEWER", t.renewer),
                ("REALUSER", t.real_user),
                ("ISSUE_DATE", str(t.issue_date)),
                ("MAX_DATE", str(t.max_date)),
                ("MASTER_KEY_ID", str(t.master_key_id)),
            ],
        )
    ]


def _token_from_xml(st: Stanza, tag: str) -> DelegationTokenIdentifier:
    t = st.one(tag)
    if t.get("KIND").strip() != HDFS_DELEGATION_KIND:
        raise InvalidXmlException(
            f"can't understand DelegationTokenIdentifier KIND {t.get('KIND')}"
        )
    return DelegationTokenIdentifier(
        t.get("OWNER"),
        t.get("RENEWER"),
        t.get("REALUSER"),
        xml_long(t, "ISSUE_DATE"),
        xml_long(t, "MAX_DATE"),
        xml_int(t, "SEQUENCE_NUMBER"),
        xml_int(t, "MASTER_KEY_ID"),
    )


def _read_key(reader: ByteReader) -> DelegationKey:
    key_id = reader.vint()
    expiry = reader.vlong()
    n = reader.vint()
    return DelegationKey(key_id, expiry, None if n == -1 else reader.raw(n))


def _encode_key(k: DelegationKey) -> bytes:
    key = b"" if k.key is None else k.key
    length = encode_vlong(-1 if k.key is None else len(key))
    return encode_vlong(k.key_id) + encode_vlong(k.expiry_date) + length + key


def _key_xml(tag: str, k: DelegationKey) -> list[XmlField]:
    children: list[XmlField] = [("KEY_ID", str(k.key_id)), ("EXPIRY_DATE", str(k.expiry_date))]
    if k.key is not None:
        children.append(("KEY", k.key.hex()))
    return [(tag, children)]


def _key_from_xml(st: Stanza, tag: str) -> DelegationKey:
    k = st.one(tag)
    key = k.get_or_none("KEY")
    return DelegationKey(
        xml_int(k, "KEY_ID"),
        xml_long(k, "EXPIRY_DATE"),
        None if key is None else hex_bytes(key, "<KEY>"),
    )


TOKEN = FieldKind(_encode_token, _read_token, _token_xml, _token_from_xml)
KEY = FieldKind(_encode_key, _read_key, _key_xml, _key_from_xml)


# ---- delegation tokens -----------------------------------------------------------------------

_TOKEN = ("token", "DELEGATION_TOKEN_IDENTIFIER", TOKEN)


@fields_op(Op.OP_GET_DELEGATION_TOKEN, (_TOKEN, ("expiry_time", "EXPIRY_TIME", "long")))
class GetDelegationTokenOp(FieldsOp):
    txid: int
    _: KW_ONLY
    token: DelegationTokenIdentifier
    expiry_time: int


@fields_op(Op.OP_RENEW_DELEGATION_TOKEN, (_TOKEN, ("expiry_time", "EXPIRY_TIME", "long")))
class RenewDelegationTokenOp(FieldsOp):
    txid: int
    _: KW_ONLY
    token: DelegationTokenIdentifier
    expiry_time: int


@fields_op(Op.OP_CANCEL_DELEGATION_TOKEN, (_TOKEN,))
class CancelDelegationTokenOp(FieldsOp):
    txid: int
    _: KW_ONLY
    token: DelegationTokenIdentifier


@fields_op(Op.OP_UPDATE_MASTER_KEY, (("key", "DELEGATION_KEY", KEY),))
class UpdateMasterKeyOp(FieldsOp):
    txid: int
    _: KW_ONLY
    key: DelegationKey
