"""``hdfs-py oev -i EDITS -o OUT [-p xml|stats] [-r]``: the offline edits viewer.

Prints a binary segment the way Hadoop's ``hdfs oev`` does:

* ``xml`` (default): ``<EDITS><EDITS_VERSION>…<RECORD><OPCODE>…<DATA><TXID>…``, with the
  fields, their order and their formatting of Hadoop's ``toXml`` for every op whose body we
  model (RPC client ids as UUIDs, LENGTH as 0) and just OPCODE and TXID for the others;
* ``stats``: the per-opcode counts in the layout of Hadoop's StatisticsEditsVisitor.

``-o -`` writes to standard output. An input that cannot be read (missing, empty, not an
edit log) is reported before any output is written; an error in the middle of the log
ends the output cleanly and fails the command, unless ``-r`` (recovery mode) skips the
broken bytes.
"""

from __future__ import annotations

import os
import re
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import BinaryIO

from lxml import etree

from hadoop_qjm.cli import CommandParser
from hadoop_qjm.common.exceptions import EditLogCorruptionError, IOException
from hadoop_qjm.namenode.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.namenode.edit_log_ops import XmlField
from hadoop_qjm.namenode.fs_edit_log_op import DEFAULT_MAX_OP_SIZE, FSEditLogOp, FSEditLogOpCodes

__all__ = [
    "run",
    "write_xml",
    "write_stats",
    "statistics_text",
    "mangle_xml_string",
    "record_element",
]

_XML_DECLARATION = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
# Code points XML cannot carry, and the backslash that starts Hadoop's escapes (XMLUtils).
_MUST_MANGLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\\\\\ud800-\udfff\ufffe\uffff]")


def mangle_xml_string(text: str) -> str:
    r"""XMLUtils.mangleXmlString: an unrepresentable code point becomes ``\XXXX;`` (hex)."""
    if _MUST_MANGLE.search(text) is None:
        return text
    return _MUST_MANGLE.sub(lambda m: f"\\{ord(m.group()):04x};", text)


def record_element(op: FSEditLogOp) -> etree._Element:
    """The ``<RECORD>`` element of one op (FSEditLogOp.outputToXml)."""
    record = etree.Element("RECORD")
    etree.SubElement(record, "OPCODE").text = op.opcode.name
    data = etree.SubElement(record, "DATA")
    etree.SubElement(data, "TXID").text = str(op.txid)
    _add_fields(data, op.xml_fields())
    return record


def _add_fields(parent: etree._Element, fields: list[XmlField]) -> None:
    for tag, value in fields:
        child = etree.SubElement(parent, tag)
        if isinstance(value, list):
            _add_fields(child, value)
        elif value:
            child.text = mangle_xml_string(value)


def _ops(stream: EditLogFileInputStream, recover: bool) -> Iterator[FSEditLogOp]:
    while True:
        try:
            op = stream.read_op()
        except EditLogCorruptionError:
            if not recover:
                raise
            stream.resync()
            continue
        if op is None:
            return
        yield op


def write_xml(stream: EditLogFileInputStream, out: BinaryIO, recover: bool = False) -> int:
    """Write the XML of every op of ``stream`` to ``out``; returns the number of ops.

    If reading fails midway the document is still closed properly before the error
    propagates, so the output holds every op read until then.
    """
    count = 0
    out.write(_XML_DECLARATION)
    try:
        with etree.xmlfile(out, encoding="UTF-8") as xf, xf.element("EDITS"):
            xf.write("\n  ")
            version = etree.Element("EDITS_VERSION")
            version.text = str(stream.get_version(True))
            xf.write(version)
            try:
                for op in _ops(stream, recover):
                    record = record_element(op)
                    etree.indent(record, space="  ", level=1)
                    xf.write("\n  ")
                    xf.write(record)
                    count += 1
            finally:
                xf.write("\n")
    finally:
        out.write(b"\n")
    return count


def statistics_text(version: int, counts: Counter) -> str:
    """StatisticsEditsVisitor.getStatisticsString: every opcode, in Hadoop's enum order."""
    lines = [f"    {'VERSION':<30.30}      : {version}"]
    for code in FSEditLogOpCodes:
        lines.append(f"    {code.name:<30.30} ({code.java_byte:3d}): {counts.get(code, 0)}")
    return "\n".join(lines) + "\n"


def write_stats(stream: EditLogFileInputStream, out: BinaryIO, recover: bool = False) -> int:
    """Write the per-opcode counts of ``stream`` to ``out``; returns the number of ops.

    On an error midway the counts so far are written with Hadoop's "EXITING ON ERROR" line,
    then the error propagates.
    """
    version = stream.get_version(True)
    counts: Counter = Counter()
    error: BaseException | None = None
    try:
        for op in _ops(stream, recover):
            counts[op.opcode] += 1
    except EditLogCorruptionError as e:
        error = e
    text = statistics_text(version, counts)
    if error is not None:
        text += f"EXITING ON ERROR: {type(error).__name__}: {error}\n"
    out.write(text.encode("utf-8"))
    if error is not None:
        raise error
    return sum(counts.values())


@contextmanager
def _output(target: str) -> Iterator[BinaryIO]:
    if target == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    try:
        out = open(target, "wb")  # noqa: SIM115 - closed below
    except OSError as e:
        raise IOException(f"Cannot write {target}: {e.strerror or e}") from e
    with out:
        yield out


def run(argv: Sequence[str], conf) -> int:
    """Entry point of ``hdfs-py oev``."""
    parser = CommandParser(
        prog="hdfs-py oev",
        description="Offline edits viewer: print a binary edit log as Hadoop's XML or statistics.",
    )
    parser.add_argument("-i", "--inputFile", required=True, help="edits file to read")
    parser.add_argument("-o", "--outputFile", required=True, help="output file ('-' for stdout)")
    parser.add_argument(
        "-p",
        "--processor",
        default="xml",
        type=str.lower,
        choices=("xml", "stats"),
        help="xml (default) or stats",
    )
    parser.add_argument(
        "-r", "--recover", action="store_true", help="skip over broken parts of the log"
    )
    args = parser.parse_args(list(argv))
    if os.path.isdir(args.inputFile):
        raise IOException(f"Cannot read {args.inputFile}: it is a directory, not an edits file")
    max_op_size = DEFAULT_MAX_OP_SIZE
    if conf is not None:
        max_op_size = conf.get_int("dfs.namenode.max.op.size", DEFAULT_MAX_OP_SIZE)

    stream = EditLogFileInputStream(args.inputFile, max_op_size=max_op_size)
    try:
        stream.get_version(True)  # a bad input fails here, before any output is created
        with _output(args.outputFile) as out:
            if args.processor == "stats":
                write_stats(stream, out, args.recover)
            else:
                write_xml(stream, out, args.recover)
    finally:
        stream.close()
    return 0
