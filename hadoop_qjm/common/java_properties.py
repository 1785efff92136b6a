"""The text format of ``java.util.Properties``, as Hadoop's ``VERSION`` files use it.

``store_properties`` writes what ``Properties.store(OutputStream, null)``
writes: a ``#<date>`` comment line in ``java.util.Date.toString()`` form,
then one ``key=value`` line per entry, escaped so that the output is plain
ASCII (``\\uXXXX`` for anything outside printable ASCII). ``load_properties``
reads what ``Properties.load(InputStream)`` reads: ISO-8859-1 text, ``#`` and
``!`` comments, ``=``, ``:`` or whitespace as the separator, backslash line
continuations and escapes. Pure code: no file access.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping

from hadoop_qjm.common.exceptions import IllegalArgumentException

__all__ = ["load_properties", "store_properties", "java_date_string", "unicode_escape"]

_DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_WHITESPACE = " \t\f"
_SIMPLE_ESCAPES = {"\t": "\\t", "\n": "\\n", "\r": "\\r", "\f": "\\f"}
_SIMPLE_UNESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_NATURAL_LINE_END = re.compile(r"\r\n|\r|\n")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")


def java_date_string(timestamp: float) -> str:
    """``java.util.Date.toString()`` in the local time zone: ``Wed Jan 01 00:00:00 UTC 2020``."""
    when = datetime.datetime.fromtimestamp(timestamp).astimezone()
    # Fixed English names: Java's Date.toString() ignores the locale.
    return (
        f"{_DAYS[when.weekday()]} {_MONTHS[when.month - 1]} {when.day:02d} "
        f"{when:%H:%M:%S} {when.tzname() or 'GMT'} {when.year}"
    )


def _escape(text: str, *, is_key: bool) -> str:
    out: list[str] = []
    for index, ch in enumerate(text):
        if ch == "\\":
            out.append("\\\\")
        elif ch == " ":
            # Keys escape every space; values only a leading one (it would be skipped on load).
            out.append("\\ " if is_key or index == 0 else " ")
        elif ch in _SIMPLE_ESCAPES:
            out.append(_SIMPLE_ESCAPES[ch])
        elif ch in "=:#!":
            out.append("\\" + ch)
        elif " " < ch <= "~":
            out.append(ch)
        else:
            out.append(unicode_escape(ch))
    return "".join(out)


def unicode_escape(ch: str) -> str:
    """``\\uXXXX`` per UTF-16 code unit of ``ch``, as Java writes them: a character beyond
    the BMP becomes a surrogate pair (``\\uD83D\\uDE00``)."""
    units = ch.encode("utf-16-be")
    return "".join(f"\\u{units[i]:02X}{units[i + 1]:02X}" for i in range(0, len(units), 2))


def store_properties(properties: Mapping[str, str], *, timestamp: float) -> str:
    """Serialise ``properties`` like ``Properties.store``; entries keep the mapping's order."""
    lines = ["#" + java_date_string(timestamp)]
    for key, value in properties.items():
        lines.append(f"{_escape(str(key), is_key=True)}={_escape(str(value), is_key=False)}")
    return "\n".join(lines) + "\n"


def _logical_lines(text: str) -> list[str]:
    """Join continued natural lines; drop blank and comment lines (still escaped)."""
    result: list[str] = []
    pending: str | None = None
    for natural in _NATURAL_LINE_END.split(text):
        stripped = natural.lstrip(_WHITESPACE)
        if pending is None:
            if not stripped or stripped[0] in "#!":
                continue
            current = stripped
        else:
            current = pending + stripped
        trailing = len(current) - len(current.rstrip("\\"))
        if trailing % 2 == 1:
            # An odd number of trailing backslashes continues the line; the last one is dropped.
            pending = current[:-1]
        else:
            pending = None
            result.append(current)
    if pending:
        result.append(pending)
    return result


def _unescape(text: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(text):
        ch = text[index]
        index += 1
        if ch != "\\":
            out.append(ch)
            continue
        if index >= len(text):
            break
        ch = text[index]
        index += 1
        if ch == "u":
            digits = text[index : index + 4]
            if not _HEX4.fullmatch(digits):
                raise IllegalArgumentException("Malformed \\uxxxx encoding.")
            out.append(chr(int(digits, 16)))
            index += 4
        else:
            out.append(_SIMPLE_UNESCAPES.get(ch, ch))
    # Join surrogate pairs written as two \\u escapes back into one character.
    return "".join(out).encode("utf-16-be", "surrogatepass").decode("utf-16-be", "replace")


def _split_key_value(line: str) -> tuple[str, str]:
    index = 0
    escaped = False
    while index < len(line):
        ch = line[index]
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch in "=:" or ch in _WHITESPACE:
            break
        index += 1
    key = line[:index]
    rest = line[index:].lstrip(_WHITESPACE)
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(_WHITESPACE)
    return key, rest


def load_properties(text: str | bytes) -> dict[str, str]:
    """Parse ``Properties`` text (bytes are decoded as ISO-8859-1, like ``load(InputStream)``).

    A later duplicate key replaces an earlier one. A malformed ``\\uXXXX``
    escape raises IllegalArgumentException, as in Java.
    """
    if isinstance(text, bytes):
        text = text.decode("iso-8859-1")
    properties: dict[str, str] = {}
    for line in _logical_lines(text):
        key, value = _split_key_value(line)
        properties[_unescape(key)] = _unescape(value)
    return properties
