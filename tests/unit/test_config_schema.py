"""The schema of every configuration key (issue 38, items 6 and 7): conf/core-default.xml and
conf/hdfs-default.xml against the code's defaults, the code's reads and docs/configuration.md,
and every key read once with a unit-suffixed value and once with garbage."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from hadoop_qjm.common.exceptions import ConfigurationError
from hadoop_qjm.conf import Configuration, config_schema
from hadoop_qjm.conf import dfs_config_keys as keys

pytestmark = pytest.mark.timeout(60)

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hadoop_qjm"
SCHEMA = config_schema.load()

#: A value with a unit (where the kind has units) and the typed value it reads as.
_MS_UNITS = {"ms": ("3s", 3000), "s": ("2m", 120), "us": ("1ms", 1000)}


def _good(entry: config_schema.ConfigKey) -> tuple[str, object]:
    if entry.kind == "duration":
        return _MS_UNITS[entry.unit or "ms"]
    if entry.kind == "list" and entry.values:
        return f" {entry.values[-1].lower()} , {entry.values[0]}", [
            entry.values[-1],
            entry.values[0],
        ]
    table: dict[str, tuple[str, object]] = {
        "size": ("2k", 2048),
        "int": ("7", 7),
        "float": ("0.25", 0.25),
        "bool": ("TRUE", True),
        "enum": (
            entry.values[-1].lower() if entry.values else "",
            entry.values[-1:] and entry.values[-1],
        ),
        "list": ("a, b", ["a", "b"]),
        "hostport": ("example.com:1234", ("example.com", 1234)),
        "octal": ("750", 0o750),
        "regex": ("a.*,b$", [re.compile("a.*"), re.compile("b$")]),
    }
    return table.get(entry.kind, ("some value", "some value"))


#: A value each checked kind refuses; the kinds taken as written have none.
_GARBAGE = {
    "duration": "2 fortnights",
    "size": "lots",
    "int": "many",
    "float": "abc",
    "bool": "maybe",
    "enum": "bogus",
    "hostport": "host:port",
    "octal": "999",
    "regex": "(",
}


def _concrete(name: str) -> str:
    """A key of ``name``'s pattern: ``dfs.ha.namenodes.{nameservice}`` -> ``…ns1``."""
    return (
        name.replace("{nameservice}", "ns1")
        .replace("{namenode}", "nn1")
        .replace("{mode}", "server")
    )


def _forms(entry: config_schema.ConfigKey) -> list[str]:
    return [_concrete(form) for form in entry.forms]


def _site_file(tmp_path: Path, key: str, value: str) -> tuple[Configuration, str]:
    """A Configuration of one hdfs-site.xml setting ``key``; and where (file:line) it is."""
    path = tmp_path / "hdfs-site.xml"
    path.write_text(
        "<?xml version='1.0'?>\n<configuration>\n"
        f"  <property><name>{key}</name><value>{value}</value></property>\n"
        "</configuration>\n"
    )
    conf = Configuration()
    conf.add_resource(path)
    return conf, f"{path}:3"


GOOD = [pytest.param(entry, key, id=key) for entry in SCHEMA for key in _forms(entry)]
BAD = [
    pytest.param(entry, key, id=key)
    for entry in SCHEMA
    if entry.kind in _GARBAGE or (entry.kind == "list" and entry.values)
    for key in _forms(entry)
]


@pytest.mark.parametrize(("entry", "key"), GOOD)
def test_every_key_reads_a_unit_suffixed_value(tmp_path, entry, key) -> None:
    text, value = _good(entry)
    conf, _ = _site_file(tmp_path, key, text)
    assert config_schema.read(conf, key) == value


@pytest.mark.parametrize(("entry", "key"), BAD)
def test_every_key_refuses_garbage_in_one_line_naming_key_and_file(tmp_path, entry, key) -> None:
    garbage = _GARBAGE.get(entry.kind, "bogus")
    conf, where = _site_file(tmp_path, key, garbage)
    with pytest.raises(ConfigurationError) as info:
        config_schema.read(conf, key)
    message = str(info.value)
    assert message == (
        f"Invalid value for {key}: '{garbage}' is not {entry.expected()} (set at {where})"
    )
    assert "\n" not in message
    for daemon in ("journalnode", "namenode", "zkfc"):
        if daemon in entry.read_by:
            with pytest.raises(ConfigurationError, match=re.escape(message)):
                config_schema.validate(conf, daemon)


@pytest.mark.parametrize("entry", SCHEMA, ids=[entry.name for entry in SCHEMA])
def test_every_default_reads(entry) -> None:
    """The schema's own default is a value of its kind (an unset key reads as it)."""
    config_schema.read(Configuration(load_defaults=False), _concrete(entry.name))


def test_every_default_of_the_code_is_the_schemas() -> None:
    """dfs_config_keys stays the one place of the defaults the code uses; each equals the
    schema's <value> as Hadoop writes it (booleans as true/false)."""
    declared = {entry.name: entry.default for entry in SCHEMA}
    for key, value in keys.DEFAULTS.items():
        assert declared.get(key, "undeclared") == value, key
    constants = vars(keys)
    checked = 0
    for name, value in constants.items():
        stem = name.removesuffix("_DEFAULT")
        key = constants.get(stem + "_KEY")
        if name.endswith("_DEFAULT") and isinstance(key, str):
            text = str(value).lower() if isinstance(value, bool) else str(value)
            assert declared.get(key, "undeclared") == text, (name, key)
            checked += 1
    assert checked > 90


def test_the_kinds_and_daemons_are_known() -> None:
    for entry in SCHEMA:
        assert entry.read_by and set(entry.read_by) <= set(config_schema.DAEMONS), entry.name
        assert entry.description, entry.name
        assert (entry.kind == "duration") == (entry.unit is not None) or entry.kind == "int"
    assert len({entry.name for entry in SCHEMA}) == len(SCHEMA)


def test_the_docs_tables_are_the_schemas() -> None:
    """docs/configuration.md's tables are generated: regenerate them with
    ``python -m hadoop_qjm.conf.config_schema --update-doc docs/configuration.md``."""
    text = (ROOT / "docs" / "configuration.md").read_text()
    assert config_schema.render_doc(text) == text


def test_a_site_file_may_be_a_default_file() -> None:
    """Hadoop's parser ignores the elements it does not know; so does ours, and a property
    without a <value> (unset) is skipped."""
    conf = Configuration(load_defaults=False)
    for name in config_schema.SCHEMA_FILES:
        conf.add_resource(config_schema.schema_dir() / name)
    assert conf.get("dfs.journalnode.sync.interval") == "120000"
    assert "ha.zookeeper.quorum" not in conf
    assert conf.source("dfs.journalnode.sync.interval").startswith(
        str(config_schema.schema_dir() / "hdfs-default.xml")
    )


def test_an_undeclared_key_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="dfs.journalnode.sync.intervall is not"):
        config_schema.read(Configuration(), "dfs.journalnode.sync.intervall")


def test_a_suffixed_form_is_read_as_its_key() -> None:
    conf = Configuration()
    conf.set("dfs.namenode.rpc-address.ns1.nn1", "nn1.example.com")
    assert config_schema.read(conf, "dfs.namenode.rpc-address.ns1.nn1") == (
        "nn1.example.com",
        8020,
    )
    assert config_schema.lookup("dfs.journalnode.edits.dir.perm").kind == "octal"
    assert config_schema.lookup("dfs.journalnode.edits.dir.ns1").kind == "path"


# ---- every key read is declared, every key declared is read ------------------------------------

_KEY_LIKE = re.compile(r"(dfs|hadoop|ipc|fs|ha|ssl|security|net)\.[\w.{}-]*")

#: Strings of the code that look like keys and are not configuration keys.
NOT_KEYS = {
    "dfs.": "a prefix: Configuration.resource_of names hdfs-default.xml for it",
    "dfs.journalnode.": "a prefix: the MiniHACluster hands these keys to its JournalNodes",
    "hadoop.": "a prefix: the MiniHACluster hands these keys to its JournalNodes",
    "ha.": "a prefix: bench failover --auto hands these keys to its ZKFCs",
    "dfs.ha.fencing": "a prefix: bench failover --auto hands these keys to its ZKFCs",
    "dfs.client.failover": "a prefix: bench failover --auto hands these keys to its ZKFCs",
    "hadoop.root.logger": "a log4j.properties property (common/log4j_properties.py)",
    "hadoop.log.maxfilesize": "a log4j.properties property (common/log4j_properties.py)",
    "hadoop.log.maxbackupindex": "a log4j.properties property (common/log4j_properties.py)",
}

#: Keys declared (in Hadoop's defaults, shown by getconf and /conf) that no code reads.
NOT_READ = {
    "dfs.ha.log-roll.rpc.timeout": "Hadoop's default; the standby's roll uses its own timeout",
    "dfs.ha.tail-edits.namenode-retries": "Hadoop's default; a standby here asks one active",
}


def _constants() -> dict[str, str]:
    return {
        name: value
        for name, value in vars(keys).items()
        if isinstance(value, str) and name.isupper() and not name.endswith("_DEFAULT")
    }


def _strings_read(path: Path, constants: dict[str, str]) -> set[str]:
    """Key-like strings of one module: literals (not docstrings), f-strings with their
    holes as ``{}`` (a dfs_config_keys constant in a hole is its value), and the
    dfs_config_keys constants it names."""
    tree = ast.parse(path.read_text())
    skip: set[int] = set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            skip.add(id(node.value))  # a docstring
        elif isinstance(node, ast.JoinedStr):
            parts = []
            for part in node.values:
                skip.add(id(part))
                if isinstance(part, ast.Constant):
                    parts.append(str(part.value))
                elif isinstance(part.value, ast.Attribute) and part.value.attr in constants:
                    parts.append(constants[part.value.attr])
                else:
                    parts.append("{}")
            found.add("".join(parts))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            found.add(node.value)
        elif isinstance(node, ast.Attribute) and node.attr in constants:
            found.add(constants[node.attr])
        elif isinstance(node, ast.Name) and node.id in constants:
            found.add(constants[node.id])
    return {text for text in found if _KEY_LIKE.fullmatch(text)}


def _normal(text: str) -> str:
    return re.sub(r"\{[^{}]*\}", "{}", text)


def _declares(entry: config_schema.ConfigKey, text: str) -> bool:
    """Whether ``text`` (a key read, maybe with ``{}`` holes or a key's stem) is ``entry``."""
    forms = [_normal(form) for form in entry.forms]
    holes = re.compile(r"[\w{}-]+".join(re.escape(part) for part in _normal(text).split("{}")))
    return any(holes.fullmatch(form) or form.startswith(text + ".{}") for form in forms)


def test_every_key_the_code_reads_is_declared_and_every_declared_key_is_read() -> None:
    constants = _constants()
    read: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name != "dfs_config_keys.py":
            read |= _strings_read(path, constants)
    for entry in SCHEMA:  # ${key} in a default reads that key (hadoop.tmp.dir)
        read |= set(re.findall(r"\$\{([^}]+)\}", entry.default or "")) - {"user.name"}
    undeclared = {
        text
        for text in read - set(NOT_KEYS)
        if not any(_declares(entry, text) for entry in SCHEMA)
        and config_schema.lookup(text) is None
    }
    assert not undeclared, f"read in hadoop_qjm/ but not in conf/*-default.xml: {undeclared}"
    unread = {
        entry.name for entry in SCHEMA if not any(_declares(entry, text) for text in read)
    } - set(NOT_READ)
    assert not unread, f"declared in conf/*-default.xml but read nowhere: {unread}"
    assert set(NOT_READ) <= {entry.name for entry in SCHEMA}
    now_read = {
        entry.name
        for entry in SCHEMA
        if entry.name in NOT_READ and any(_declares(entry, text) for text in read)
    }
    assert not now_read, f"read now, no longer NOT_READ: take them off: {now_read}"
    assert not (set(NOT_KEYS) - read), "an exclusion no longer needed: take it off"


def test_the_scan_sees_literals_f_strings_and_constants_but_not_docstrings(tmp_path) -> None:
    module = tmp_path / "reader.py"
    module.write_text(
        '"""Reads dfs.journalnode.sync.interval."""\n'
        "from hadoop_qjm.conf import dfs_config_keys as keys\n"
        'a = conf.get_int("dfs.journalnode.sync.intervall")\n'
        'b = conf.get(f"dfs.namenode.rpc-address.{ns}.{nn}")\n'
        'c = conf.get(f"{keys.DFS_HA_NAMENODES_KEY_PREFIX}.{ns}")\n'
        "d = conf.get_bool(keys.DFS_HA_STANDBY_CHECKPOINTS_KEY)\n"
    )
    found = _strings_read(module, _constants())
    assert found == {
        "dfs.journalnode.sync.intervall",
        "dfs.namenode.rpc-address.{}.{}",
        "dfs.ha.namenodes.{}",
        "dfs.ha.namenodes",  # the constant itself, a stem of dfs.ha.namenodes.{nameservice}
        "dfs.ha.standby.checkpoints",
    }
    declared = {text for text in found if any(_declares(entry, text) for entry in SCHEMA)}
    assert found - declared == {"dfs.journalnode.sync.intervall"}
