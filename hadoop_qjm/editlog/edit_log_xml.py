"""The XML side of every op: Hadoop's oev element names, both ways. Pure.

Writing, an op lists its elements as :data:`XmlField` values (``(tag, text)`` or
``(tag, [children])``, in the order of Hadoop's ``FSEditLogOp.toXml``). Reading, the
``<DATA>`` of a ``<RECORD>`` arrives as a :class:`Stanza` (Hadoop's ``XMLUtils.Stanza``):
a value and the children by tag, in document order. Turning lxml elements into stanzas,
and text into files, is :mod:`hadoop_qjm.tools.oev`'s business; nothing here parses XML
text. Numbers are range-checked for their Java type, so a value the binary format cannot
hold is an :class:`InvalidXmlException`, never a silently wrapped field.
"""

from __future__ import annotations

import base64
import binascii
import uuid
from dataclasses import dataclass, field

from hadoop_qjm.common.exceptions import IllegalArgumentException, register_exception
from hadoop_qjm.editlog.edit_log_codec import (
    ACL_SCOPES,
    ACL_TYPES,
    DUMMY_CLIENT_ID,
    INVALID_CALL_ID,
    XATTR_NAMESPACES,
    AclEntry,
    Block,
    PermissionStatus,
    XAttr,
    client_id_to_string,
    fs_action_symbol,
)

__all__ = [
    "XmlField",
    "Stanza",
    "InvalidXmlException",
    "xml_long",
    "xml_int",
    "xml_short",
    "xml_byte",
    "xml_bool",
    "permission_xml",
    "permission_from_xml",
    "block_xml",
    "block_from_xml",
    "blocks_from_xml",
    "acl_xml",
    "acl_from_xml",
    "xattr_xml",
    "xattrs_from_xml",
    "rpc_xml",
    "rpc_from_xml",
    "hex_bytes",
]

#: (tag, text) or (tag, [children]): the shape of one element of Hadoop's oev XML.
XmlField = tuple[str, str | list["XmlField"]]


@register_exception
class InvalidXmlException(IllegalArgumentException):
    """The XML of an edit log is not what Hadoop's oev writes (XMLUtils.InvalidXmlException)."""

    java_name = "org.apache.hadoop.hdfs.util.XMLUtils.InvalidXmlException"


@dataclass
class Stanza:
    """One element: its text and its child elements by tag, in document order."""

    value: str = ""
    children: dict[str, list[Stanza]] = field(default_factory=dict)

    def add(self, tag: str, child: Stanza) -> None:
        self.children.setdefault(tag, []).append(child)

    def has(self, tag: str) -> bool:
        return tag in self.children

    def all(self, tag: str) -> list[Stanza]:
        """Every child called ``tag`` (none is an error, as in Hadoop's getChildren)."""
        found = self.children.get(tag)
        if not found:
            raise InvalidXmlException(f"no entry found for <{tag}>")
        return found

    def one(self, tag: str) -> Stanza:
        found = self.all(tag)
        if len(found) > 1:
            raise InvalidXmlException(f"more than one <{tag}>")
        return found[0]

    def get(self, tag: str) -> str:
        """The text of the child ``tag``; a missing child is an error."""
        return self.one(tag).value

    def get_or_none(self, tag: str) -> str | None:
        return self.one(tag).value if tag in self.children else None


def _integer(st: Stanza, tag: str, bits: int) -> int:
    text = st.get(tag)
    try:
        value = int(text.strip(), 10)
    except ValueError:
        raise InvalidXmlException(f"<{tag}> is not a number: {text!r}") from None
    if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
        raise InvalidXmlException(f"<{tag}> {value} does not fit in a {bits}-bit integer")
    return value


def xml_long(st: Stanza, tag: str) -> int:
    return _integer(st, tag, 64)


def xml_int(st: Stanza, tag: str) -> int:
    return _integer(st, tag, 32)


def xml_short(st: Stanza, tag: str) -> int:
    return _integer(st, tag, 16)


def xml_byte(st: Stanza, tag: str) -> int:
    return _integer(st, tag, 8)


def xml_bool(st: Stanza, tag: str) -> bool:
    """Boolean.parseBoolean: "true" in any case is true, anything else false."""
    return st.get(tag).strip().lower() == "true"


def hex_bytes(text: str, what: str) -> bytes:
    try:
        return bytes.fromhex(text.strip())
    except ValueError:
        raise InvalidXmlException(f"{what} is not hexadecimal: {text!r}") from None


# ---- composite values ------------------------------------------------------------------------


def permission_xml(perm: PermissionStatus) -> XmlField:
    # FsPermission keeps only the sticky bit and the nine rwx bits of the stored short.
    mode = str(perm.mode & 0o1777)
    return (
        "PERMISSION_STATUS",
        [("USERNAME", perm.user), ("GROUPNAME", perm.group), ("MODE", mode)],
    )


def permission_from_xml(st: Stanza) -> PermissionStatus:
    status = st.one("PERMISSION_STATUS")
    return PermissionStatus(
        status.get("USERNAME"), status.get("GROUPNAME"), xml_short(status, "MODE") & 0xFFFF
    )


def block_xml(b: Block) -> XmlField:
    return (
        "BLOCK",
        [
            ("BLOCK_ID", str(b.block_id)),
            ("NUM_BYTES", str(b.num_bytes)),
            ("GENSTAMP", str(b.gen_stamp)),
        ],
    )


def block_from_xml(st: Stanza) -> Block:
    return Block(xml_long(st, "BLOCK_ID"), xml_long(st, "NUM_BYTES"), xml_long(st, "GENSTAMP"))


def blocks_from_xml(st: Stanza) -> tuple[Block, ...]:
    return tuple(block_from_xml(b) for b in st.children.get("BLOCK", ()))


_FS_ACTIONS = {fs_action_symbol(i): i for i in range(8)}


def acl_xml(entries: tuple[AclEntry, ...]) -> list[XmlField]:
    out: list[XmlField] = []
    for e in entries:
        children: list[XmlField] = [("SCOPE", ACL_SCOPES[e.scope]), ("TYPE", ACL_TYPES[e.type])]
        if e.name is not None:
            children.append(("NAME", e.name))
        children.append(("PERM", fs_action_symbol(e.perm)))
        out.append(("ENTRY", children))
    return out


def _enum(st: Stanza, tag: str, names: tuple[str, ...]) -> int:
    text = st.get(tag).strip()
    try:
        return names.index(text)
    except ValueError:
        raise InvalidXmlException(f"<{tag}> must be one of {', '.join(names)}: {text!r}") from None


def acl_from_xml(st: Stanza) -> tuple[AclEntry, ...]:
    entries = []
    for e in st.children.get("ENTRY", ()):
        perm = _FS_ACTIONS.get(e.get("PERM").strip())
        if perm is None:
            raise InvalidXmlException(f"Invalid value for FsAction: {e.get('PERM')!r}")
        entries.append(
            AclEntry(
                _enum(e, "SCOPE", ACL_SCOPES),
                _enum(e, "TYPE", ACL_TYPES),
                perm,
                e.get_or_none("NAME"),
            )
        )
    return tuple(entries)


def xattr_xml(xattrs: tuple[XAttr, ...]) -> list[XmlField]:
    out: list[XmlField] = []
    for x in xattrs:
        children: list[XmlField] = [("NAMESPACE", XATTR_NAMESPACES[x.namespace]), ("NAME", x.name)]
        if x.value is not None:
            children.append(("VALUE", "0x" + x.value.hex()))
        out.append(("XATTR", children))
    return out


def _xattr_value(text: str) -> bytes:
    """XAttrCodec.decodeValue: ``0x`` hex, ``0s`` base64, else a quoted or plain string."""
    text = text.strip()
    prefix = text[:2].lower()
    if prefix == "0x":
        return hex_bytes(text[2:], "<VALUE>")
    if prefix == "0s":
        try:
            return base64.b64decode(text[2:], validate=True)
        except binascii.Error:
            raise InvalidXmlException(f"<VALUE> is not base64: {text!r}") from None
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    return text.encode("utf-8")


def xattrs_from_xml(st: Stanza) -> tuple[XAttr, ...]:
    out = []
    for x in st.children.get("XATTR", ()):
        value = x.get_or_none("VALUE")
        out.append(
            XAttr(
                _enum(x, "NAMESPACE", XATTR_NAMESPACES),
                x.get("NAME"),
                None if value is None else _xattr_value(value),
            )
        )
    return tuple(out)


def rpc_xml(client_id: bytes, call_id: int) -> list[XmlField]:
    return [("RPC_CLIENTID", client_id_to_string(client_id)), ("RPC_CALLID", str(call_id))]


def rpc_from_xml(st: Stanza) -> dict:
    """readRpcIdsFromXml: absent elements mean "no retry-cache ids"."""
    client_id = DUMMY_CLIENT_ID
    text = st.get_or_none("RPC_CLIENTID")
    if text is not None and text.strip():
        try:
            client_id = uuid.UUID(text.strip()).bytes
        except ValueError:
            raise InvalidXmlException(f"<RPC_CLIENTID> is not a UUID: {text!r}") from None
    call_id = xml_int(st, "RPC_CALLID") if st.has("RPC_CALLID") else INVALID_CALL_ID
    return {"rpc_client_id": client_id, "rpc_call_id": call_id}
