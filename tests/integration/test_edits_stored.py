"""Hadoop's own test vector: editsStored and the `hdfs oev` XML Hadoop printed for it."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

import pytest
from lxml import etree

from hadoop_qjm.editlog.edit_log_file_input_stream import (
    EditLogFileInputStream,
    EditLogValidation,
    scan_edit_log,
)
from hadoop_qjm.editlog.fs_edit_log_op import (
    HEADER_LENGTH,
    OP_CLASSES,
    FSEditLogOpCodes,
    decode_op,
    encode_op,
    parse_edit_log_header,
)
from hadoop_qjm.tools import oev


@pytest.fixture(scope="module")
def edits_stored(hadoop_testdata: Path) -> Path:
    return hadoop_testdata / "editsStored"


@pytest.fixture(scope="module")
def hadoop_xml(hadoop_testdata: Path) -> etree._ElementTree:
    return etree.parse(str(hadoop_testdata / "editsStored.xml"))


def test_scan(edits_stored: Path) -> None:
    size = edits_stored.stat().st_size
    assert size == 7933
    assert scan_edit_log(edits_stored) == EditLogValidation(size, 1, 121, False)
    assert scan_edit_log(edits_stored.read_bytes()) == EditLogValidation(size, 1, 121, False)


def test_every_op_re_serializes_to_its_bytes(edits_stored: Path) -> None:
    data = edits_stored.read_bytes()
    assert parse_edit_log_header(data, verify_version=True) == -67
    offset = HEADER_LENGTH
    txids = []
    while True:
        op, end = decode_op(data, offset)
        if op is None:
            break
        assert encode_op(op) == data[offset:end], op
        assert type(op) is OP_CLASSES[op.opcode], op  # every body is decoded, none opaque
        txids.append(op.txid)
        offset = end
    assert offset == len(data)
    assert txids == list(range(1, 122))


def test_read_with_the_stream(edits_stored: Path) -> None:
    with EditLogFileInputStream(edits_stored, 1, 121) as stream:
        ops = list(stream)
    assert [op.txid for op in ops] == list(range(1, 122))
    assert ops[0].opcode is FSEditLogOpCodes.OP_START_LOG_SEGMENT
    assert ops[-1].opcode is FSEditLogOpCodes.OP_END_LOG_SEGMENT


def test_oev_stats_counts_match_the_xml(
    edits_stored: Path, hadoop_xml: etree._ElementTree, tmp_path: Path
) -> None:
    out = tmp_path / "stats.txt"
    assert oev.run(["-i", str(edits_stored), "-o", str(out), "-p", "stats"], None) == 0
    lines = out.read_text().splitlines()
    # Java's String.format("    %-30.30s      : %d%n", "VERSION", version)
    assert lines[0] == "    " + "VERSION".ljust(30) + "      : -67"
    # "    OP_NAME (truncated to 30)   ( code): count", one line per opcode in enum order.
    counts = {}
    for line in lines[1:]:
        code = int(line[line.index("(") + 1 : line.index(")")])
        counts[code] = int(line.rsplit(":", 1)[1])
    assert list(counts) == [c.java_byte for c in FSEditLogOpCodes]
    expected = Counter(
        FSEditLogOpCodes[name].java_byte for name in hadoop_xml.getroot().xpath("//OPCODE/text()")
    )
    assert counts == {c.java_byte: expected.get(c.java_byte, 0) for c in FSEditLogOpCodes}
    assert "    OP_REMOVE_ERASURE_CODING_POLIC ( 52): 2" in lines
    assert "    OP_INVALID                     ( -1): 0" in lines


def _shape(element: etree._Element) -> tuple:
    """An element as (tag, text, children), whitespace-only text ignored."""
    text = (element.text or "").strip() if len(element) else (element.text or "")
    return (element.tag, text, [_shape(child) for child in element])


def test_oev_xml_agrees_with_hadoop_field_by_field(
    edits_stored: Path, hadoop_xml: etree._ElementTree
) -> None:
    with EditLogFileInputStream(edits_stored) as stream:
        buf = io.BytesIO()
        assert oev.write_xml(stream, buf) == 121
    ours = etree.fromstring(buf.getvalue())
    theirs = hadoop_xml.getroot()
    assert ours.findtext("EDITS_VERSION") == theirs.findtext("EDITS_VERSION") == "-67"
    our_records = ours.findall("RECORD")
    their_records = theirs.findall("RECORD")
    assert len(our_records) == len(their_records) == 121
    for mine, hadoops in zip(our_records, their_records):
        opcode = hadoops.findtext("OPCODE")
        assert mine.findtext("OPCODE") == opcode
        assert _shape(mine.find("DATA")) == _shape(hadoops.find("DATA")), opcode


def test_oev_xml_is_byte_identical_to_hadoops(edits_stored: Path, hadoop_testdata: Path) -> None:
    out = io.BytesIO()
    with EditLogFileInputStream(edits_stored) as stream:
        oev.write_xml(stream, out)
    assert out.getvalue() == (hadoop_testdata / "editsStored.xml").read_bytes()


def _without_padding(data: bytes) -> bytes:
    """A segment without the trailing 0x00/0xFF padding (TestOfflineEditsViewer ignores it)."""
    return data.rstrip(b"\x00\xff")


def test_oev_binary_gives_back_edits_stored(
    edits_stored: Path, hadoop_testdata: Path, tmp_path: Path
) -> None:
    out = tmp_path / "edits"
    args = ["-p", "binary", "-i", str(hadoop_testdata / "editsStored.xml"), "-o", str(out)]
    assert oev.run(args, None) == 0
    assert _without_padding(out.read_bytes()) == _without_padding(edits_stored.read_bytes())
    assert out.read_bytes() == edits_stored.read_bytes()  # we write no padding at all
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edits"]  # no temporary left


def test_binary_to_xml_to_binary(edits_stored: Path, tmp_path: Path) -> None:
    xml, back, xml_again = tmp_path / "e.xml", tmp_path / "e", tmp_path / "e2.xml"
    assert oev.run(["-i", str(edits_stored), "-o", str(xml)], None) == 0
    assert oev.run(["-p", "binary", "-i", str(xml), "-o", str(back)], None) == 0
    assert back.read_bytes() == edits_stored.read_bytes()
    assert oev.run(["-i", str(back), "-o", str(xml_again)], None) == 0
    assert xml_again.read_bytes() == xml.read_bytes()
