"""The offline edits viewer's output formats, without files."""

from __future__ import annotations

import io
from collections import Counter

from lxml import etree

from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.editlog.fs_edit_log_op import (
    AclEntry,
    FSEditLogOpCodes,
    MkdirOp,
    OpaqueOp,
    PermissionStatus,
    XAttr,
    edit_log_header,
    encode_op,
)
from hadoop_qjm.tools.oev import mangle_xml_string, record_element, statistics_text, write_xml


def test_mangling_follows_hadoops_xml_utils() -> None:
    assert mangle_xml_string("/plain path") == "/plain path"
    assert mangle_xml_string("a\\b") == "a\\005c;b"
    assert mangle_xml_string("\x00\x01\t\n\r") == "\\0000;\\0001;\t\n\r"
    assert mangle_xml_string("\ud800x\ufffe") == "\\d800;x\\fffe;"
    assert mangle_xml_string("é😀") == "é😀"


def test_record_of_a_mkdir_with_acls_and_xattrs() -> None:
    op = MkdirOp(
        7,
        inode_id=16390,
        path="/d\x01",
        timestamp=99,
        permissions=PermissionStatus("u", "g", 0o1755),
        acl_entries=(AclEntry(1, 0, 7, "bob"), AclEntry(0, 3, 4)),
        xattrs=(XAttr(0, "a1", b"123"), XAttr(4, "x")),
    )
    record = record_element(op)
    assert etree.tostring(record).decode() == (
        "<RECORD><OPCODE>OP_MKDIR</OPCODE><DATA><TXID>7</TXID><LENGTH>0</LENGTH>"
        "<INODEID>16390</INODEID><PATH>/d\\0001;</PATH><TIMESTAMP>99</TIMESTAMP>"
        "<PERMISSION_STATUS><USERNAME>u</USERNAME><GROUPNAME>g</GROUPNAME><MODE>1005</MODE>"
        "</PERMISSION_STATUS>"
        "<ENTRY><SCOPE>DEFAULT</SCOPE><TYPE>USER</TYPE><NAME>bob</NAME><PERM>rwx</PERM></ENTRY>"
        "<ENTRY><SCOPE>ACCESS</SCOPE><TYPE>OTHER</TYPE><PERM>r--</PERM></ENTRY>"
        "<XATTR><NAMESPACE>USER</NAMESPACE><NAME>a1</NAME><VALUE>0x313233</VALUE></XATTR>"
        "<XATTR><NAMESPACE>RAW</NAMESPACE><NAME>x</NAME></XATTR>"
        "</DATA></RECORD>"
    )


def test_unmodelled_ops_print_opcode_and_txid_only() -> None:
    record = record_element(OpaqueOp(FSEditLogOpCodes.OP_SET_GENSTAMP_V2, 3, bytes(8)))
    assert etree.tostring(record).decode() == (
        "<RECORD><OPCODE>OP_SET_GENSTAMP_V2</OPCODE><DATA><TXID>3</TXID></DATA></RECORD>"
    )


def test_xml_document_layout() -> None:
    data = edit_log_header() + encode_op(MkdirOp.create(1, "/a"))
    out = io.BytesIO()
    assert write_xml(EditLogFileInputStream.from_bytes(data), out) == 1
    lines = out.getvalue().decode().splitlines()
    assert lines[:5] == [
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>',
        "<EDITS>",
        "  <EDITS_VERSION>-67</EDITS_VERSION>",
        "  <RECORD>",
        "    <OPCODE>OP_MKDIR</OPCODE>",
    ]
    assert lines[5:7] == ["    <DATA>", "      <TXID>1</TXID>"]
    assert lines[-3:] == ["    </DATA>", "  </RECORD>", "</EDITS>"]


def test_statistics_layout() -> None:
    text = statistics_text(-67, Counter({FSEditLogOpCodes.OP_MKDIR: 5}))
    lines = text.splitlines()
    assert text.endswith("\n")
    assert len(lines) == 1 + len(FSEditLogOpCodes)
    assert lines[0] == "    VERSION" + " " * 23 + "      : -67"
    assert lines[4] == "    OP_MKDIR" + " " * 22 + " (  3): 5"
    assert lines[-1] == "    OP_INVALID" + " " * 20 + " ( -1): 0"
    # Names are cut at 30 characters, as Java's %-30.30s does.
    assert "    OP_DISABLE_ERASURE_CODING_POLI ( 51): 0" in lines
