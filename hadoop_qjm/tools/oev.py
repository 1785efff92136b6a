"""``hdfs-py oev -i IN -o OUT [-p xml|stats|binary] [-r]``: the offline edits viewer.

Converts an edit-log segment the way Hadoop's ``hdfs oev`` does:

* ``xml`` (default): ``<EDITS><EDITS_VERSION>…<RECORD><OPCODE>…<DATA><TXID>…``, every op
  with the elements, order and formatting of Hadoop's ``FSEditLogOp.toXml`` (RPC client
  ids as UUIDs, LENGTH as 0);
* ``stats``: the per-opcode counts in the layout of Hadoop's StatisticsEditsVisitor;
* ``binary``: the other way, such XML back into a segment (Hadoop's OfflineEditsXmlLoader
  and BinaryEditsVisitor): the header from EDITS_VERSION, each op framed with its length
  and a freshly computed CRC32, no padding.

The ops' bodies, both ways, are the op classes' own (:mod:`hadoop_qjm.editlog.fs_edit_log_op`);
this module only moves them between files and lxml.

``-o -`` writes to standard output. An output file is written whole or not at all: a
temporary file beside it, renamed into place once the run succeeded, so a bad input (one
that cannot be read, or a broken op in the middle of a binary log, unless ``-r`` recovery
mode skips the broken bytes) fails the command and leaves the output as it was. On
standard output an error midway ends the XML cleanly after the ops read until then; the
binary a ``-p binary`` run writes there is held back until every record converted.
"""

from __future__ import annotations

import io
import os
import re
import secrets
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import BinaryIO

from lxml import etree

from hadoop_qjm.common.command_line import CommandParser
from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import EditLogCorruptionError, IOException
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.editlog.edit_log_xml import InvalidXmlException, Stanza, XmlField, xml_long
from hadoop_qjm.editlog.fs_edit_log_op import (
    DEFAULT_MAX_OP_SIZE,
    OP_CLASSES,
    FSEditLogOp,
    FSEditLogOpCodes,
    append_op,
    edit_log_header,
)

__all__ = [
    "run",
    "write_xml",
    "write_stats",
    "statistics_text",
    "mangle_xml_string",
    "unmangle_xml_string",
    "record_element",
    "op_from_record",
    "read_xml",
    "write_binary",
]

_XML_DECLARATION = b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
# Code points XML cannot carry, and the backslash that starts Hadoop's escapes (XMLUtils).
_MUST_MANGLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\\\\\ud800-\udfff\ufffe\uffff]")


def mangle_xml_string(text: str) -> str:
    r"""XMLUtils.mangleXmlString: an unrepresentable code point becomes ``\XXXX;`` (hex)."""
    if _MUST_MANGLE.search(text) is None:
        return text
    return _MUST_MANGLE.sub(lambda m: f"\\{ord(m.group()):04x};", text)


_MANGLED = re.compile(r"\\(?:([0-9a-fA-F]{1,6});)?")


def unmangle_xml_string(text: str) -> str:
    r"""XMLUtils.unmangleXmlString: ``\XXXX;`` back to its code point; any other ``\`` is an error."""

    def code_point(m: re.Match) -> str:
        if m.group(1) is None or int(m.group(1), 16) > 0x10FFFF:
            raise InvalidXmlException(f"invalid escape in {text[:80]!r}: a \\ must start \\XXXX;")
        return chr(int(m.group(1), 16))

    return _MANGLED.sub(code_point, text) if "\\" in text else text


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


# ---- XML -> ops (OfflineEditsXmlLoader) ------------------------------------------------------


def _stanza(element: etree._Element) -> Stanza:
    """An element as a Stanza: children by tag, a leaf's text unmangled, comments ignored."""
    st = Stanza()
    for child in element:
        if isinstance(child.tag, str):
            st.add(child.tag, _stanza(child))
    if not st.children:
        st.value = unmangle_xml_string(element.text or "")
    return st


def op_from_record(record: etree._Element) -> FSEditLogOp:
    """The op of one ``<RECORD>``: its OPCODE, then its DATA (FSEditLogOp.decodeXml)."""
    children = [c for c in record if isinstance(c.tag, str)]
    if [c.tag for c in children] != ["OPCODE", "DATA"]:
        raise InvalidXmlException(
            f"expected <OPCODE> then <DATA> in a <RECORD>, got {[c.tag for c in children]}"
        )
    name = (children[0].text or "").strip()
    opcode = FSEditLogOpCodes.__members__.get(name)
    cls = OP_CLASSES.get(opcode) if opcode is not None else None
    if cls is None:
        raise InvalidXmlException(f"unknown or unwritable opcode {name!r}")
    data = _stanza(children[1])
    txid = xml_long(data, "TXID")
    try:
        return cls.from_xml(txid, data)
    except InvalidXmlException as e:
        raise InvalidXmlException(f"{name} txid {txid}: {e}") from None


def read_xml(source: BinaryIO) -> Iterator[int | FSEditLogOp]:
    """Yield the EDITS_VERSION of an oev XML document, then its ops in order.

    The document is parsed as a stream, a record at a time, so a large segment's XML is
    never all in memory. Entities are not expanded and nothing is fetched from the network.
    """
    events = etree.iterparse(
        source, events=("start", "end"), resolve_entities=False, no_network=True, load_dtd=False
    )
    depth = 0
    seen_version = False
    try:
        for event, element in events:
            if not isinstance(element.tag, str):
                continue
            if event == "start":
                depth += 1
                if depth == 1 and element.tag != "EDITS":
                    raise InvalidXmlException(
                        f"you must put <EDITS> at the top of the XML file! Got <{element.tag}>"
                    )
                continue
            depth -= 1
            if depth != 1:
                continue
            if not seen_version:
                if element.tag != "EDITS_VERSION":
                    raise InvalidXmlException(
                        f"<EDITS_VERSION> must come first in <EDITS>, got <{element.tag}>"
                    )
                seen_version = True
                yield xml_long(_stanza(element.getparent()), "EDITS_VERSION")
            elif element.tag != "RECORD":
                raise InvalidXmlException(f"expected a <RECORD>, got <{element.tag}>")
            else:
                yield op_from_record(element)
            # Done with this child of <EDITS>: free it and anything before it.
            element.clear()
            while element.getprevious() is not None:
                del element.getparent()[0]
    except etree.XMLSyntaxError as e:
        raise InvalidXmlException(f"XML parsing error: {e}") from None
    if not seen_version:
        raise InvalidXmlException("no <EDITS_VERSION> in <EDITS>")


def write_binary(source: BinaryIO, out: BinaryIO) -> int:
    """Write the segment ``source`` (oev XML) describes to ``out``; returns the number of ops."""
    records = read_xml(source)
    version = next(records)
    if version != CURRENT_LAYOUT_VERSION:
        raise IOException(
            f"Cannot write layout version {version}: only {CURRENT_LAYOUT_VERSION} is supported"
        )
    buf = bytearray(edit_log_header(version))
    count = 0
    for op in records:
        append_op(buf, op)  # type: ignore[arg-type]
        count += 1
        if len(buf) >= 1 << 20:
            out.write(buf)
            buf.clear()
    out.write(buf)
    return count


# ---- binary -> XML and statistics -----------------------------------------------------------


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
def _output(target: str, *, hold_stdout: bool = False) -> Iterator[BinaryIO]:
    """Where a conversion writes ``target``, a file whole or not at all.

    A file is written as a temporary file beside ``target`` and renamed onto it only if
    the block succeeds (the commit point); on any error the temporary file is removed and
    ``target`` is untouched: an existing one keeps its bytes, a new one is not created.
    ``-`` is standard output, streamed as the block writes (so a failure midway leaves
    what was written), or with ``hold_stdout`` held back and written only on success.
    """
    if target == "-":
        if not hold_stdout:
            yield sys.stdout.buffer
            sys.stdout.buffer.flush()
            return
        buf = io.BytesIO()
        yield buf
        sys.stdout.buffer.write(buf.getvalue())
        sys.stdout.buffer.flush()
        return
    if os.path.isdir(target):
        # Checked first: the rename would only fail once all the work was done.
        raise IOException(f"Cannot write {target}: Is a directory")
    directory, name = os.path.split(os.path.abspath(target))
    tmp = os.path.join(directory, f".{name}.{secrets.token_hex(4)}.tmp")
    try:
        # Mode 0666 less the umask, as a plain open() would give the output.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    except OSError as e:
        raise IOException(f"Cannot write {target}: {e.strerror or e}") from e
    try:
        with os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())
        try:
            os.replace(tmp, target)
        except OSError as e:
            raise IOException(f"Cannot write {target}: {e.strerror or e}") from e
    except BaseException:
        with suppress(OSError):
            os.unlink(tmp)
        raise


def run(argv: Sequence[str], conf) -> int:
    """Entry point of ``hdfs-py oev``."""
    parser = CommandParser(
        prog="hdfs-py oev",
        description=(
            "Offline edits viewer: a binary edit log as Hadoop's XML or statistics, "
            "or such XML back into a binary edit log."
        ),
    )
    parser.add_argument(
        "-i", "--inputFile", required=True, help="edits file to read (XML for -p binary)"
    )
    parser.add_argument("-o", "--outputFile", required=True, help="output file ('-' for stdout)")
    parser.add_argument(
        "-p",
        "--processor",
        default="xml",
        type=str.lower,
        choices=("xml", "stats", "binary"),
        help="xml (default), stats, or binary (XML in, edits out)",
    )
    parser.add_argument(
        "-r", "--recover", action="store_true", help="skip over broken parts of the log"
    )
    args = parser.parse_args(list(argv))
    for option, value in (("-i/--inputFile", args.inputFile), ("-o/--outputFile", args.outputFile)):
        if not value:
            parser.error(f"argument {option}: the file name is empty")
    if os.path.isdir(args.inputFile):
        raise IOException(f"Cannot read {args.inputFile}: it is a directory, not an edits file")
    if args.processor == "binary":
        with (
            open(args.inputFile, "rb") as source,
            _output(args.outputFile, hold_stdout=True) as out,
        ):
            write_binary(source, out)
        return 0
    max_op_size = DEFAULT_MAX_OP_SIZE
    if conf is not None:
        max_op_size = conf.get_int("dfs.namenode.max.op.size", DEFAULT_MAX_OP_SIZE)

    stream = EditLogFileInputStream(args.inputFile, max_op_size=max_op_size)
    try:
        stream.get_version(True)  # a bad input fails here, before a temporary file is made
        with _output(args.outputFile) as out:
            if args.processor == "stats":
                write_stats(stream, out, args.recover)
            else:
                write_xml(stream, out, args.recover)
    finally:
        stream.close()
    return 0
