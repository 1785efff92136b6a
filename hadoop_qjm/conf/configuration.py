"""Hadoop's ``Configuration``: XML resources, variable expansion, ``final``, typed getters.

Resources are Hadoop XML files::

    <configuration>
      <property><name>dfs.journalnode.edits.dir</name><value>/data/jn</value>
                <final>true</final></property>
    </configuration>

Later resources override earlier ones unless the earlier one marked the key
``final``. Values may refer to other keys or to the environment:
``${hadoop.tmp.dir}/dfs``, ``${env.HOME}``, ``${env.DATA:-/data}``.
"""

from __future__ import annotations

import getpass
import os
import re
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from lxml import etree

from hadoop_qjm.conf.dfs_config_keys import DEFAULTS
from hadoop_qjm.conf.errors import ConfigurationError, IllegalArgumentException

__all__ = ["Configuration", "parse_time_duration", "parse_storage_size", "parse_host_port"]

#: Hadoop's MAX_SUBST: deeper nesting than this is taken to be a cycle.
MAX_SUBST = 20

_VAR = re.compile(r"\$\{([^${}]+)\}")

_TIME_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
    "d": 86_400_000_000_000,
}
_TIME_VALUE = re.compile(r"^\s*(-?\d+)\s*(ns|us|ms|s|m|h|d)?\s*$", re.IGNORECASE)

_SIZE_UNITS = {"": 1, "b": 1}
for _i, _p in enumerate("kmgtpe", start=1):
    _SIZE_UNITS[_p] = 1024**_i
    _SIZE_UNITS[_p + "b"] = 1024**_i
_SIZE_VALUE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtpe]?b?)\s*$", re.IGNORECASE)


def parse_time_duration(text: str, unit: str = "ms", return_unit: str | None = None) -> int:
    """``'60s'`` → 60000 (in ``unit``); a bare number is already in ``unit``.

    Hadoop's ``Configuration.getTimeDuration``: the suffix (``ns us ms s m h d``, any
    case) names the value's unit; the result is truncated towards zero in ``unit``
    (``1500us`` in ms is 1), as Java's ``TimeUnit.convert``. With ``return_unit`` (the
    four-argument getTimeDuration) a bare number is in ``unit`` and the result in
    ``return_unit``: ``'2'`` with unit s and return unit ms is 2000, ``'20ms'`` is 20."""
    match = _TIME_VALUE.match(text)
    if not match:
        raise ValueError(f"not a time duration: '{text}'")
    number, suffix = int(match.group(1)), (match.group(2) or unit).lower()
    magnitude = abs(number) * _TIME_UNITS_NS[suffix] // _TIME_UNITS_NS[return_unit or unit]
    return -magnitude if number < 0 else magnitude


def parse_storage_size(text: str) -> int:
    """``'10m'`` → 10485760 bytes; binary prefixes k, m, g, t, p, e (with or without ``b``)."""
    match = _SIZE_VALUE.match(text)
    if not match:
        raise ValueError(f"not a storage size: '{text}'")
    return int(float(match.group(1)) * _SIZE_UNITS[match.group(2).lower()])


def parse_host_port(text: str, default_port: int | None = None) -> tuple[str, int]:
    """``'host:port'`` or ``'[v6addr]:port'``; a missing port takes ``default_port``."""
    text = text.strip()
    if "://" in text:
        text = text.split("://", 1)[1].split("/", 1)[0]
    host, port_text = text, None
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"bad address '{text}'")
        host, rest = text[1:end], text[end + 1 :]
        if rest.startswith(":"):
            port_text = rest[1:]
        elif rest:
            raise ValueError(f"bad address '{text}'")
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    if not host:
        raise ValueError(f"no host in address '{text}'")
    if port_text is None or port_text == "":
        if default_port is None:
            raise ValueError(f"no port in address '{text}'")
        return host, default_port
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        raise ValueError(f"bad port in address '{text}'")
    return host, int(port_text)


class Configuration:
    """A set of Hadoop configuration properties.

    ``Configuration(load_defaults=True)`` starts from the defaults of
    :mod:`hadoop_qjm.conf.dfs_config_keys`; :meth:`add_resource` layers XML files on
    top; :meth:`set` overrides programmatically (as Hadoop's ``set``, ignoring ``final``).
    """

    def __init__(self, load_defaults: bool = True, other: Configuration | None = None) -> None:
        self._props: dict[str, str] = {}
        self._finals: set[str] = set()
        self._sources: dict[str, str] = {}
        self.resources: list[str] = []
        #: The configuration directory in use (:meth:`add_conf_dir`: ``--config``, else
        #: ``$HADOOP_CONF_DIR``), where other files (ssl-server.xml, ssl-client.xml) are read.
        self.conf_dir: str | None = None
        if other is not None:
            self._props.update(other._props)
            self._finals.update(other._finals)
            self._sources.update(other._sources)
            self.resources.extend(other.resources)
            self.conf_dir = other.conf_dir
        elif load_defaults:
            self._props.update(DEFAULTS)
            self._sources.update(dict.fromkeys(DEFAULTS, "defaults"))

    # ---- resources ------------------------------------------------------------------------------
    def add_resource(self, path: str | os.PathLike[str]) -> None:
        """Layer one Hadoop XML file on top. A malformed file raises ConfigurationError
        naming the file and line, and leaves this configuration unchanged."""
        path = os.fspath(path)
        try:
            parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False)
            tree = etree.parse(path, parser)
        except OSError as e:
            raise ConfigurationError(f"Cannot read configuration file {path}: {e}") from None
        except etree.XMLSyntaxError as e:
            line = e.lineno if e.lineno else "?"
            msg = e.msg if hasattr(e, "msg") else str(e)
            raise ConfigurationError(
                f"Malformed configuration file {path}, line {line}: {msg}"
            ) from None
        root = tree.getroot()
        if root.tag != "configuration":
            raise ConfigurationError(
                f"Malformed configuration file {path}, line {root.sourceline}: "
                f"the root element is <{root.tag}>, expected <configuration>"
            )
        updates: list[tuple[str, str, bool, int]] = []
        for prop in root:
            if not isinstance(prop.tag, str):  # comments, processing instructions
                continue
            if prop.tag != "property":
                raise ConfigurationError(
                    f"Malformed configuration file {path}, line {prop.sourceline}: "
                    f"unexpected element <{prop.tag}> (expected <property>)"
                )
            fields: dict[str, str] = {}
            for child in prop:
                if isinstance(child.tag, str) and child.tag in ("name", "value", "final"):
                    fields[child.tag] = (
                        (child.text or "").strip() if child.tag != "value" else (child.text or "")
                    )
            name = fields.get("name", "").strip()
            if not name:
                raise ConfigurationError(
                    f"Malformed configuration file {path}, line {prop.sourceline}: "
                    "a <property> has no <name>"
                )
            if "value" not in fields:
                continue  # Hadoop ignores a property without a value
            final = fields.get("final", "false").strip().lower() == "true"
            updates.append((name, fields["value"].strip(), final, prop.sourceline or 0))
        for name, value, final, line in updates:
            if name in self._finals:
                continue  # an earlier resource declared it final: never overridden
            self._props[name] = value
            self._sources[name] = f"{path}:{line}"
            if final:
                self._finals.add(name)
        self.resources.append(path)

    def add_conf_dir(self, conf_dir: str | os.PathLike[str]) -> None:
        """Load ``core-site.xml`` then ``hdfs-site.xml`` from ``conf_dir`` (each if present);
        ``conf_dir`` becomes :attr:`conf_dir`."""
        self.conf_dir = os.fspath(conf_dir)
        for name in ("core-site.xml", "hdfs-site.xml"):
            path = Path(conf_dir) / name
            if path.exists():
                self.add_resource(path)

    def copy(self) -> Configuration:
        return Configuration(other=self)

    # ---- raw access -----------------------------------------------------------------------------
    def set(self, key: str, value: object, source: str = "programmatically") -> None:
        """Set ``key`` (as Hadoop's ``set``, ignoring ``final``); ``source`` is where the value
        came from, as Hadoop's ``set(name, value, source)``: ``-D`` gives "from command line"."""
        if isinstance(value, bool):
            value = "true" if value else "false"
        self._props[key] = str(value)
        self._sources[key] = source

    def set_if_unset(self, key: str, value: object) -> None:
        if key not in self._props:
            self.set(key, value)

    def unset(self, key: str) -> None:
        self._props.pop(key, None)
        self._finals.discard(key)

    def get_raw(self, key: str) -> str | None:
        return self._props.get(key)

    def source(self, key: str) -> str | None:
        """Where the value of ``key`` came from (file:line, defaults, programmatically)."""
        return self._sources.get(key)

    def describe_source(self, key: str) -> str | None:
        """Where the value of ``key`` came from, for a message: "set at FILE:LINE", "set from
        command line", "set programmatically", "the default"; None when unset."""
        source = self._sources.get(key)
        return _describe_source(source) if source is not None else None

    def is_set_over_resources(self, key: str) -> bool:
        """Whether the value of ``key`` was :meth:`set` (``-D``, or programmatically) rather
        than read from a resource or the defaults: it overrides files read later, such as
        ssl-server.xml and ssl-client.xml, as it overrides the site files."""
        source = self._sources.get(key)
        return source is not None and _is_set_source(source)

    def is_final(self, key: str) -> bool:
        return key in self._finals

    def __contains__(self, key: object) -> bool:
        return key in self._props

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._props))

    def as_dict(self) -> Mapping[str, str]:
        return {key: self.get(key) or "" for key in self}

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value of ``key`` with ``${...}`` expanded, or ``default`` when unset."""
        raw = self._props.get(key)
        if raw is None:
            return default
        return self.substitute_vars(raw, key)

    def get_trimmed(self, key: str, default: str | None = None) -> str | None:
        value = self.get(key)
        if value is None or not value.strip():
            return default
        return value.strip()

    def substitute_vars(self, expr: str, key: str = "") -> str:
        """Expand ``${key}``, ``${env.NAME}`` and ``${env.NAME:-default}``.

        Expansion stops at an unbound variable, which is left as written (Hadoop's
        behaviour); nesting deeper than
        :data:`MAX_SUBST` is a cycle and raises ConfigurationError.
        """
        for _ in range(MAX_SUBST):
            match = _VAR.search(expr)
            if match is None:
                return expr
            value = self._resolve_var(match.group(1))
            if value is None:
                return expr  # Hadoop leaves an unbound ${var} (and what follows) as written
            expr = expr[: match.start()] + value + expr[match.end() :]
        raise ConfigurationError(
            f"Variable substitution depth too large: {MAX_SUBST} in the value of "
            f"'{key}': {self._props.get(key, expr)}"
        )

    def _resolve_var(self, var: str) -> str | None:
        if var.startswith("env."):
            name, default = var[4:], None
            for sep in (":-", "-"):
                if sep in name:
                    name, default = name.split(sep, 1)
                    break
            value = os.environ.get(name)
            if value is None or (value == "" and default is not None):
                return default
            return value
        system = _system_property(var)
        if system is not None:
            return system
        return self._props.get(var)

    # ---- typed getters --------------------------------------------------------------------------
    def invalid_value(self, key: str, expected: str) -> ConfigurationError:
        """The error for a value of ``key`` that is not ``expected``, in one sentence:
        ``Invalid value for KEY: 'VALUE' is not EXPECTED (set at FILE:LINE)``."""
        value = self.get_trimmed(key, "")
        source = self.describe_source(key)
        return ConfigurationError(
            f"Invalid value for {key}: '{value}' is not {expected}"
            + (f" ({source})" if source is not None else "")
        )

    def _typed(self, key: str, default, parse, kind: str):
        value = self.get_trimmed(key)
        if value is None:
            return default
        try:
            return parse(value)
        except (ValueError, TypeError, KeyError):
            raise self.invalid_value(key, kind) from None

    def get_int(self, key: str, default: int | None = None) -> int:
        return self._typed(key, default, _parse_int, "an integer")

    get_long = get_int

    def get_float(self, key: str, default: float | None = None) -> float:
        return self._typed(key, default, float, "a number")

    def get_bool(self, key: str, default: bool = False) -> bool:
        return self._typed(key, default, _parse_bool, "true or false")

    def get_time_duration(
        self,
        key: str,
        default: int | str | None,
        unit: str = "ms",
        *,
        minimum: int | None = None,
        return_unit: str | None = None,
    ) -> int:
        """A duration in ``unit``, as Hadoop's ``getTimeDuration``: ``60s``, ``5m``,
        ``100ms`` (suffixes ``ns us ms s m h d``), or a bare number already in ``unit``
        (the key's default unit). The one reader of every duration key the daemons read.
        ``return_unit``: the result in that unit instead (Hadoop's four-argument form, for
        a key whose bare numbers are seconds read in ms).

        ``minimum`` (in the unit returned), when given, is the least value accepted (1:
        positive). A value that does not parse or is below ``minimum`` raises one
        ConfigurationError naming the key, the value and where it was set."""
        if isinstance(default, str):
            default = parse_time_duration(default, unit, return_unit)
        expected = duration_expected(unit, minimum)
        value = self._typed(
            key, default, lambda v: parse_time_duration(v, unit, return_unit), expected
        )
        if minimum is not None and value is not None and value < minimum:
            raise self.invalid_value(key, expected)
        return value

    def get_storage_size(self, key: str, default: int | str | None) -> int:
        """A size in bytes: ``10m``, ``1g``, ``512k``, ``4096``."""
        if isinstance(default, str):
            default = parse_storage_size(default)
        return self._typed(key, default, parse_storage_size, "a storage size")

    def get_trimmed_strings(self, key: str, default: tuple[str, ...] | list[str] = ()) -> list[str]:
        value = self.get(key)
        if value is None:
            return list(default)
        return [part.strip() for part in value.split(",") if part.strip()]

    def get_socket_address(
        self,
        key: str,
        default: str | None = None,
        default_port: int | None = None,
        bind_host_key: str | None = None,
    ) -> tuple[str, int]:
        """``host:port`` from ``key`` (else ``default``); ``bind_host_key``, when set,
        overrides the host part (Hadoop's ``*-bind-host`` keys)."""
        value = self.get_trimmed(key, default)
        if value is None:
            raise ConfigurationError(f"No address configured for {key}")
        try:
            host, port = parse_host_port(value, default_port)
        except ValueError as e:
            raise ConfigurationError(f"Invalid value for {key}: {e}") from None
        if bind_host_key:
            bind_host = self.get_trimmed(bind_host_key)
            if bind_host:
                host = bind_host
        return host, port

    # ---- output ---------------------------------------------------------------------------------
    def write_xml(self, path: str | os.PathLike[str], keys: list[str] | None = None) -> None:
        """Write the (raw, unexpanded) properties as a Hadoop XML resource."""
        root = etree.Element("configuration")
        for key in keys if keys is not None else list(self):
            prop = etree.SubElement(root, "property")
            etree.SubElement(prop, "name").text = key
            etree.SubElement(prop, "value").text = self._props[key]
            if key in self._finals:
                etree.SubElement(prop, "final").text = "true"
        data = etree.tostring(root, pretty_print=True, xml_declaration=True, encoding="UTF-8")
        Path(path).write_bytes(data)

    def resource_of(self, key: str) -> str:
        """Where ``key``'s value came from, named as Hadoop's ``updatingResource``: the file,
        ``core-default.xml`` / ``hdfs-default.xml``, ``programmatically``, ``from command
        line``; ``Unknown`` for a key that is not set."""
        source = self._sources.get(key)
        if source is None:
            return "Unknown"
        if source == "defaults":
            return "hdfs-default.xml" if key.startswith("dfs.") else "core-default.xml"
        return re.sub(r":[0-9]+$", "", source)

    def _keys_to_show(self, name: str | None) -> list[str]:
        if name is None:
            return list(self)
        if name not in self._props:
            raise IllegalArgumentException(f"Property {name} not found")
        return [name]

    def dump_configuration(self, name: str | None = None, redactor: Any = None) -> dict:
        """Hadoop's ``Configuration.dumpConfiguration`` as a dict for JSON:
        ``{"properties": [{"key", "value", "isFinal", "resource"}, ...]}``, or for one
        ``name`` ``{"property": {...}}`` (IllegalArgumentException if unset). Values are
        expanded; a sensitive key's value is ``redactor.redact``-ed."""
        entries = []
        for key in self._keys_to_show(name):
            try:
                value: str | None = self.get(key)
            except ConfigurationError:
                value = self._props[key]  # a cycle: show what was written
            entries.append(
                {
                    "key": key,
                    "value": redactor.redact(key, value) if redactor is not None else value,
                    "isFinal": key in self._finals,
                    "resource": self.resource_of(key),
                }
            )
        return {"property": entries[0]} if name is not None else {"properties": entries}

    def to_xml(self, name: str | None = None, redactor: Any = None) -> bytes:
        """Hadoop's ``Configuration.writeXml(propertyName, out)``: the raw (unexpanded)
        values with ``<final>`` and ``<source>``; sensitive values redacted."""
        root = etree.Element("configuration")
        for key in self._keys_to_show(name):
            value = self._props[key]
            prop = etree.SubElement(root, "property")
            etree.SubElement(prop, "name").text = key
            etree.SubElement(prop, "value").text = (
                redactor.redact(key, value) if redactor is not None else value
            )
            etree.SubElement(prop, "final").text = str(key in self._finals).lower()
            etree.SubElement(prop, "source").text = self.resource_of(key)
        return etree.tostring(
            root, pretty_print=True, xml_declaration=True, encoding="UTF-8", standalone=False
        )

    def __repr__(self) -> str:
        return f"Configuration: {', '.join(self.resources) or 'defaults only'}"


_UNIT_NAMES = {
    "ns": "nanoseconds",
    "us": "microseconds",
    "ms": "milliseconds",
    "s": "seconds",
    "m": "minutes",
    "h": "hours",
    "d": "days",
}


def duration_expected(unit: str, minimum: int | None) -> str:
    """What :meth:`Configuration.get_time_duration` expects, for its error."""
    if minimum == 1:
        bound = "a positive time duration"
    elif minimum == 0:
        bound = "a time duration of 0 or more"
    elif minimum is not None:
        bound = f"a time duration of at least {minimum}{unit}"
    else:
        bound = "a time duration"
    return f"{bound} (a number of {_UNIT_NAMES[unit]}, or with a unit: ns us ms s m h d)"


def _parse_int(value: str) -> int:
    text = value.lower()
    if text.startswith(("0x", "-0x")):
        return int(text, 16)
    return int(text, 10)


def _parse_bool(value: str) -> bool:
    text = value.lower()
    if text == "true":
        return True
    if text == "false":
        return False
    raise ValueError(value)


def _system_property(name: str) -> str | None:
    """The few Java system properties Hadoop's defaults refer to."""
    if name == "user.name":
        try:
            return getpass.getuser()
        except (KeyError, OSError):
            return str(os.getuid())
    if name == "java.io.tmpdir":
        return tempfile.gettempdir()
    if name == "user.home":
        return os.path.expanduser("~")
    return None


def _describe_source(source: str) -> str:
    """Where a value came from, for an error: "set at FILE:LINE", "set from command line"…"""
    if source == "defaults":
        return "the default"
    if _is_set_source(source):
        return f"set {source}"
    return f"set at {source}"


def _is_set_source(source: str) -> bool:
    """Whether ``source`` names a :meth:`Configuration.set` (not a file, not the defaults)."""
    return source == "programmatically" or source.startswith("from ")
