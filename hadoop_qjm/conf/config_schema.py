"""The schema of every configuration key: ``conf/core-default.xml`` and ``conf/hdfs-default.xml``.

Hadoop's ``*-default.xml`` shape, one ``<property>`` per key: ``<name>``, ``<value>`` (the
default; absent: unset), ``<description>``, and this project's typed kind::

    <property>
      <name>dfs.journalnode.sync.interval</name>
      <value>120000</value>
      <description>ms between two sync rounds</description>
      <kind>duration</kind> <unit>ms</unit> <min>1</min>
      <read-by>journalnode</read-by>
    </property>

``<kind>`` is one of :data:`KINDS`; ``<unit>`` is a duration's unit for a bare number (as
Hadoop's ``getTimeDuration``) or what an int counts; ``<min>`` / ``<max>`` bound it
(``<exclusive>true</exclusive>``: both bounds excluded); ``<values>`` lists an enum's
values (or those a list's items may take); ``<expected>`` replaces the generated "what was
expected" of the error; ``<suffix>`` (repeatable) is a per-nameservice or per-NameNode form
of the key, read the same way (``.{nameservice}``, ``.{nameservice}.{namenode}``); a
``{placeholder}`` in ``<name>`` stands for one dot-free word; ``<read-by>`` names the
daemons that read the key (``journalnode namenode zkfc``; ``client``: the commands), each
of which checks all of its keys when it starts (:func:`validate`).

:func:`read` gives a key's typed value, or one :class:`ConfigurationError` naming the key,
the value, where it was set (file and line) and what was expected. The parsing is
:class:`~hadoop_qjm.conf.configuration.Configuration`'s own (``get_time_duration``,
``get_storage_size``, ``get_int``…): this module adds the kinds and bounds, not a parser.
The defaults the code uses stay in :mod:`~hadoop_qjm.conf.dfs_config_keys`; a unit test
checks each equals the schema's ``<value>``.
"""

from __future__ import annotations

import importlib.resources
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from lxml import etree

from hadoop_qjm.conf.configuration import (
    Configuration,
    duration_expected,
    parse_host_port,
    parse_time_duration,
)
from hadoop_qjm.conf.errors import ConfigurationError

__all__ = ["KINDS", "SCHEMA_FILES", "ConfigKey", "keys_read_by", "load", "lookup", "read"]
__all__ += ["validate", "schema_dir", "kind_text", "render_doc", "doc_blocks", "main"]

#: The schema files, in Hadoop's order (core before hdfs).
SCHEMA_FILES = ("core-default.xml", "hdfs-default.xml")

#: Kinds a key may have; the first group is checked, the second taken as written.
KINDS = (
    "duration",
    "size",
    "int",
    "float",
    "bool",
    "enum",
    "hostport",
    "octal",
    "regex",
    "list",
    "string",
    "path",
    "uri",
)

DAEMONS = ("journalnode", "namenode", "zkfc", "client")

_OCTAL_PERMISSION = re.compile(r"[0-7]{3,4}")
_REGEX_SEPARATORS = re.compile(r"\s*[,\n]\s*")
_PLACEHOLDER = re.compile(r"\{[a-z_]+\}")


@dataclass(frozen=True)
class ConfigKey:
    """One ``<property>`` of a schema file (see the module doc)."""

    name: str
    default: str | None
    description: str
    kind: str
    read_by: tuple[str, ...]
    source: str
    unit: str | None = None
    minimum: str | None = None
    maximum: str | None = None
    exclusive: bool = False
    values: tuple[str, ...] = ()
    expected_text: str | None = None
    suffixes: tuple[str, ...] = ()

    @property
    def forms(self) -> tuple[str, ...]:
        """The key's name and its suffixed forms, placeholders as written."""
        return (self.name, *(self.name + suffix for suffix in self.suffixes))

    def matches(self, key: str) -> bool:
        """Whether ``key`` is this key or one of its suffixed forms."""
        return any(_form_regex(form).fullmatch(key) for form in self.forms)

    def expected(self) -> str:
        """What a value must be, for the error: ``a positive time duration (…)``."""
        if self.expected_text:
            return self.expected_text
        return _EXPECTED[self.kind](self)


@cache
def _form_regex(form: str) -> re.Pattern[str]:
    parts = _PLACEHOLDER.split(form)
    return re.compile(r"[^.]+".join(re.escape(part) for part in parts))


def schema_dir() -> Any:
    """Where the schema files are: ``conf/`` beside the package in a checkout, else
    ``<prefix>/etc/hadoop-qjm-py`` (where ``pip install`` puts the shipped ``conf/``), else
    inside the package itself (``hadoop_qjm/conf/``: the zip a Spark job ships to its
    executors carries them there, :func:`hadoop_qjm.spark.session.package_zip`). A
    directory, or an ``importlib.resources`` traversable of one."""
    checkout = Path(__file__).resolve().parents[2] / "conf"
    packaged = importlib.resources.files("hadoop_qjm.conf")
    for candidate in (checkout, Path(sys.prefix) / "etc" / "hadoop-qjm-py", packaged):
        if (candidate / SCHEMA_FILES[-1]).is_file():
            return candidate
    raise ConfigurationError(f"The configuration schema ({', '.join(SCHEMA_FILES)}) is missing")


@cache
def load(directory: str | None = None) -> tuple[ConfigKey, ...]:
    """Every key of the schema files in ``directory`` (default :func:`schema_dir`), in
    file order; read once."""
    base = Path(directory) if directory is not None else schema_dir()
    entries: list[ConfigKey] = []
    for name in SCHEMA_FILES:
        entries.extend(_parse_file(base / name))
    return tuple(entries)


def _parse_file(path: Any) -> Iterator[ConfigKey]:
    parser = etree.XMLParser(resolve_entities=False, no_network=True, remove_comments=True)
    root = etree.fromstring(path.read_bytes(), parser)
    for prop in root.iter("property"):
        fields: dict[str, list[str]] = {}
        for child in prop:
            if isinstance(child.tag, str):
                fields.setdefault(child.tag, []).append((child.text or "").strip())

        def one(tag: str, fields: dict[str, list[str]] = fields) -> str | None:
            return fields[tag][0] if tag in fields else None

        name, kind = one("name"), one("kind")
        if not name or kind not in KINDS:
            raise ConfigurationError(
                f"Malformed configuration schema {path}, line {prop.sourceline}: a <property> "
                f"needs a <name> and a <kind> of {', '.join(KINDS)}"
            )
        yield ConfigKey(
            name=name,
            default=one("value"),
            description=" ".join((one("description") or "").split()),
            kind=kind,
            read_by=tuple((one("read-by") or "").split()),
            source=path.name,
            unit=one("unit"),
            minimum=one("min"),
            maximum=one("max"),
            exclusive=one("exclusive") == "true",
            values=tuple((one("values") or "").split()),
            expected_text=one("expected"),
            suffixes=tuple(fields.get("suffix", ())),
        )


def lookup(key: str) -> ConfigKey | None:
    """The schema entry of ``key``: the one of that exact name, else the one whose pattern
    or suffixed form it is (``dfs.namenode.rpc-address.ns1.nn1``); None if undeclared."""
    exact = _by_name().get(key)
    if exact is not None:
        return exact
    return next((entry for entry in load() if entry.matches(key)), None)


@cache
def _by_name() -> dict[str, ConfigKey]:
    return {entry.name: entry for entry in load()}


def keys_read_by(daemon: str) -> tuple[ConfigKey, ...]:
    """The schema's keys that ``daemon`` (``journalnode``, ``namenode``, ``zkfc``) reads."""
    return tuple(entry for entry in load() if daemon in entry.read_by)


def read(conf: Configuration, key: str) -> Any:
    """The typed value of ``key`` (its schema default when unset; None when neither), or
    one ConfigurationError: ``Invalid value for KEY: 'VALUE' is not EXPECTED (set at
    FILE:LINE)``. A key the schema does not declare is an error too (a typo in the code)."""
    entry = lookup(key)
    if entry is None:
        raise ConfigurationError(f"{key} is not a configuration key of the schema")
    return _read(conf, key, entry)


def validate(conf: Configuration, daemon: str) -> None:
    """Read every key ``daemon`` will ever read, with each suffixed form set in ``conf``:
    the first bad one raises its ConfigurationError, so a typo stops the daemon at start
    (before it binds a port or touches a directory), never at failover time."""
    patterned = False
    for entry in keys_read_by(daemon):
        if _is_plain(entry):
            if entry.name in conf:
                _read(conf, entry.name, entry)
        else:
            patterned = True
    if patterned:
        for key in conf:
            entry = lookup(key)
            if entry is not None and daemon in entry.read_by and not _is_plain(entry):
                _read(conf, key, entry)


def _is_plain(entry: ConfigKey) -> bool:
    """Whether ``entry`` is one key, with no suffixed forms (``….<nameservice>``)."""
    return entry.forms == (entry.name,) and "{" not in entry.name


# ---- reading one kind --------------------------------------------------------------------------


def _read(conf: Configuration, key: str, entry: ConfigKey) -> Any:
    text = conf.get_trimmed(key)
    if text is None:
        if entry.default is None or (entry.default == "" and entry.kind not in _AS_WRITTEN):
            return None
        conf = Configuration(load_defaults=False)  # the schema's default, read the same way
        conf.set(key, entry.default, source="defaults")
    try:
        return _READERS[entry.kind](conf, key, entry)
    except ConfigurationError:
        raise conf.invalid_value(key, entry.expected()) from None


def _bounded(conf: Configuration, key: str, entry: ConfigKey, value: Any, cast: Any) -> Any:
    low = cast(entry.minimum) if entry.minimum is not None else None
    high = cast(entry.maximum) if entry.maximum is not None else None
    if entry.exclusive:
        ok = (low is None or value > low) and (high is None or value < high)
    else:
        ok = (low is None or value >= low) and (high is None or value <= high)
    if not ok:
        raise conf.invalid_value(key, entry.expected())
    return value


def _read_duration(conf: Configuration, key: str, entry: ConfigKey) -> int:
    value = conf.get_time_duration(key, None, entry.unit or "ms")
    return _bounded(conf, key, entry, value, lambda v: parse_time_duration(v, entry.unit or "ms"))


def _read_size(conf: Configuration, key: str, entry: ConfigKey) -> int:
    return _bounded(conf, key, entry, conf.get_storage_size(key, None), int)


def _read_int(conf: Configuration, key: str, entry: ConfigKey) -> int:
    return _bounded(conf, key, entry, conf.get_int(key), int)


def _read_float(conf: Configuration, key: str, entry: ConfigKey) -> float:
    value = conf.get_float(key)
    if value != value:  # nan is within no bounds
        raise conf.invalid_value(key, entry.expected())
    return _bounded(conf, key, entry, value, float)


def _read_bool(conf: Configuration, key: str, entry: ConfigKey) -> bool:
    return conf.get_bool(key)


def _one_of(conf: Configuration, key: str, entry: ConfigKey, text: str) -> str:
    for value in entry.values:
        if value.lower() == text.lower():
            return value
    raise conf.invalid_value(key, entry.expected())


def _read_enum(conf: Configuration, key: str, entry: ConfigKey) -> str:
    return _one_of(conf, key, entry, conf.get_trimmed(key) or "")


def _read_list(conf: Configuration, key: str, entry: ConfigKey) -> list[str]:
    items = conf.get_trimmed_strings(key)
    if entry.values:
        return [_one_of(conf, key, entry, item) for item in items]
    return items


def _read_hostport(conf: Configuration, key: str, entry: ConfigKey) -> tuple[str, int]:
    default_port = None
    if entry.default:
        default_port = parse_host_port(entry.default)[1]
    try:
        return parse_host_port(conf.get_trimmed(key) or "", default_port)
    except ValueError:
        raise conf.invalid_value(key, entry.expected()) from None


def _read_octal(conf: Configuration, key: str, entry: ConfigKey) -> int:
    text = conf.get_trimmed(key) or ""
    if not _OCTAL_PERMISSION.fullmatch(text):
        raise conf.invalid_value(key, entry.expected())
    return int(text, 8)


def _read_regex(conf: Configuration, key: str, entry: ConfigKey) -> list[re.Pattern[str]]:
    patterns = []
    for text in _REGEX_SEPARATORS.split((conf.get(key) or "").strip()):
        if text:
            try:
                patterns.append(re.compile(text))
            except re.error:
                raise conf.invalid_value(key, entry.expected()) from None
    return patterns


def _read_as_written(conf: Configuration, key: str, entry: ConfigKey) -> str:
    return conf.get_trimmed(key) or ""


_AS_WRITTEN = ("string", "path", "uri")

_READERS = {
    "duration": _read_duration,
    "size": _read_size,
    "int": _read_int,
    "float": _read_float,
    "bool": _read_bool,
    "enum": _read_enum,
    "list": _read_list,
    "hostport": _read_hostport,
    "octal": _read_octal,
    "regex": _read_regex,
    **dict.fromkeys(_AS_WRITTEN, _read_as_written),
}


# ---- what was expected -------------------------------------------------------------------------


def _join_or(values: tuple[str, ...]) -> str:
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} or {values[-1]}"


def _expected_duration(entry: ConfigKey) -> str:
    unit = entry.unit or "ms"
    if entry.maximum is None:
        minimum = int(entry.minimum) if entry.minimum is not None else None
        return duration_expected(unit, minimum)
    low = entry.minimum or "0"
    return duration_expected(unit, None).replace(
        "a time duration", f"a time duration from {low}{unit} to {entry.maximum}{unit}", 1
    )


def _expected_number(entry: ConfigKey, noun: str, plural: str) -> str:
    what = f"a number of {entry.unit}" if entry.unit else noun
    low, high = entry.minimum, entry.maximum
    if entry.exclusive:
        return f"a number above {low} and below {high}" + (
            f", such as {entry.default}" if entry.default else ""
        )
    if low is not None and high is not None:
        return f"{plural} from {low} to {high}"
    if low == "1":
        return f"a positive number of {entry.unit}" if entry.unit else f"a positive {noun[3:]}"
    if low is not None:
        return f"{what}, {low} or more"
    return what


_EXPECTED = {
    "duration": _expected_duration,
    "size": lambda e: (
        "a positive size in bytes, such as 1048576 or 1m"
        if e.minimum == "1"
        else "a size in bytes, such as 134217728 or 128m (suffixes k m g t p e)"
    ),
    "int": lambda e: _expected_number(e, "an integer", "an integer"),
    "float": lambda e: _expected_number(e, "a number", "a number"),
    "bool": lambda e: "true or false",
    "enum": lambda e: _join_or(e.values),
    "list": lambda e: f"a comma-separated list of {_join_or(e.values)}",
    "hostport": lambda e: "a host:port address with a port from 0 to 65535",
    "octal": lambda e: "an octal permission of 3 or 4 digits 0-7, such as 700",
    "regex": lambda e: "comma- or newline-separated regular expressions",
    **dict.fromkeys(_AS_WRITTEN, lambda e: "a value"),
}


# ---- docs/configuration.md's tables ------------------------------------------------------------

#: The generated blocks of docs/configuration.md, each between ``<!-- schema:NAME begin … -->``
#: and ``<!-- schema:NAME end -->``.
DOC_BLOCKS = ("keys", "durations")

_UNIT_WORDS = {"ns": "nanoseconds", "us": "microseconds", "ms": "milliseconds", "s": "seconds"}
_UNIT_WORDS.update({"m": "minutes", "h": "hours", "d": "days"})


def _bounds_text(entry: ConfigKey) -> str:
    low, high = entry.minimum, entry.maximum
    if entry.exclusive:
        return f"{low} < x < {high}"
    if low is not None and high is not None:
        return f"{low} to {high}"
    if low is not None:
        return f"≥ {low}"
    return ""


def kind_text(entry: ConfigKey) -> str:
    """The kind column of the key table: ``duration (ms, ≥ 1)``, ``enum: `A`, `B```…"""
    details = [entry.unit] if entry.unit else []
    if entry.kind == "size":
        details.append("bytes; k m g t p e")
    if _bounds_text(entry):
        details.append(_bounds_text(entry))
    if entry.values:
        listed = ", ".join(f"`{value}`" for value in entry.values)
        return f"{entry.kind}: {listed}" if entry.kind == "enum" else f"{entry.kind} of {listed}"
    return f"{entry.kind} ({', '.join(details)})" if details else entry.kind


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def _keys_table() -> list[str]:
    lines = ["| key | default | kind | meaning |", "|---|---|---|---|"]
    for entry in load():
        name = f"`{entry.name}`"
        if entry.suffixes:
            name += ", also " + ", ".join(f"`{suffix}`" for suffix in entry.suffixes)
        default = f"`{entry.default}`" if entry.default else "unset"
        if entry.default == "":
            default = "(empty)"
        cells = (name, default, kind_text(entry), entry.description)
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return lines


def _durations_table() -> list[str]:
    groups: dict[tuple[str, str], list[str]] = {}
    for entry in load():
        if entry.kind == "duration":
            unit = _UNIT_WORDS[entry.unit or "ms"]
            groups.setdefault((unit, _bounds_text(entry) or "any"), []).append(f"`{entry.name}`")
    lines = ["| default unit of a bare number | accepted | keys |", "|---|---|---|"]
    for (unit, bounds), names in groups.items():
        lines.append(f"| {unit} | {bounds} | {', '.join(names)} |")
    return lines


def doc_blocks() -> dict[str, list[str]]:
    """Each generated block of docs/configuration.md, as lines."""
    return {"keys": _keys_table(), "durations": _durations_table()}


def render_doc(text: str) -> str:
    """``text`` (docs/configuration.md) with each generated block replaced by the schema's."""
    for name, lines in doc_blocks().items():
        begin = re.compile(rf"^<!-- schema:{name} begin[^\n]*-->\n", re.MULTILINE)
        end = f"<!-- schema:{name} end -->"
        start = begin.search(text)
        if start is None or end not in text[start.end() :]:
            raise ConfigurationError(f"No <!-- schema:{name} begin/end --> block in the document")
        stop = text.index(end, start.end())
        text = text[: start.end()] + "\n".join(lines) + "\n" + text[stop:]
    return text


def main(argv: list[str] | None = None) -> int:
    """``python -m hadoop_qjm.conf.config_schema --markdown`` prints the tables;
    ``--update-doc FILE`` rewrites the generated blocks of FILE in place."""
    args = sys.argv[1:] if argv is None else argv
    if args == ["--markdown"]:
        for name, lines in doc_blocks().items():
            print(f"<!-- schema:{name} -->")
            print("\n".join(lines))
        return 0
    if len(args) == 2 and args[0] == "--update-doc":
        path = Path(args[1])
        try:
            path.write_text(render_doc(path.read_text()))
        except (OSError, ConfigurationError) as e:
            print(f"config_schema: {e}", file=sys.stderr)
            return 1
        return 0
    print("Usage: python -m hadoop_qjm.conf.config_schema --markdown | --update-doc FILE")
    return 2


if __name__ == "__main__":
    sys.exit(main())
