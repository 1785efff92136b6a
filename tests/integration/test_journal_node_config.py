"""A JournalNode reads and checks every setting once, before it creates a directory or binds
a port: a bad value is one sentence naming the key, the value and what is expected."""

from __future__ import annotations

import logging
import os
import re
import socket
import stat

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.common.exceptions import ConfigurationError, IllegalArgumentException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.server.journal_node import JournalNode
from hadoop_qjm.testing import ports
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID

pytestmark = pytest.mark.timeout(60)

SET = "(set programmatically)"


def node_conf(edits_dir, **props) -> Configuration:
    conf = Configuration()
    conf.set("dfs.journalnode.edits.dir", str(edits_dir))
    conf.set("dfs.journalnode.rpc-address", "127.0.0.1:0")
    conf.set("dfs.journalnode.http-address", "127.0.0.1:0")
    for key, value in props.items():
        conf.set(key, value)
    return conf


def free_port() -> int:
    return ports.free_ports(1)[0]


def assert_port_free(port: int) -> None:
    """Nothing of the failed JournalNode still listens on ``port``."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


POSITIVE_DURATION = (
    "a positive time duration (a number of milliseconds, or with a unit: ns us ms s m h d)"
)


def _positive_ms(key: str, value: str) -> tuple[str, str, str]:
    return key, value, f"'{value}' is not {POSITIVE_DURATION}"


BAD_VALUES = [
    *[
        (
            "dfs.journalnode.edits.dir.perm",
            value,
            f"'{value}' is not an octal permission of 3 or 4 digits 0-7, such as 700",
        )
        for value in ("abc", "999", "77", "07777", "-700", "0x1c0")
    ],
    *[_positive_ms("dfs.journalnode.sync.interval", v) for v in ("abc", "-5", "0", "1.5")],
    _positive_ms("dfs.edit.log.transfer.timeout", "0"),
    _positive_ms("dfs.image.transfer.timeout", "-1"),
    ("dfs.journalnode.enable.sync", "maybe", "'maybe' is not true or false"),
    ("dfs.journalnode.enable.sync", "1", "'1' is not true or false"),
    ("dfs.ha.tail-edits.in-progress", "yes", "'yes' is not true or false"),
    # Read when a journal is first made: checked at start since the schema (issue 38).
    ("dfs.journalnode.kept-segment-state.enabled", "on", "'on' is not true or false"),
    ("dfs.journalnode.kept-segment-state.verify", "off", "'off' is not true or false"),
    *[
        (
            "dfs.journalnode.edit-cache-size.fraction",
            value,
            f"'{value}' is not a number above 0 and below 1, such as 0.5",
        )
        for value in ("2", "0", "1", "1.0", "-0.5", "abc", "nan")
    ],
    *[
        (
            "dfs.journalnode.edit-cache-size.bytes",
            value,
            f"'{value}' is not a positive size in bytes, such as 1048576 or 1m",
        )
        for value in ("0", "-1", "lots")
    ],
    *[
        ("ipc.maximum.data.length", value, f"'{value}' is not a positive number of bytes")
        for value in ("-1", "0", "64m")
    ],
    ("dfs.namenode.max.op.size", "0", "'0' is not a positive number of bytes"),
    (
        "dfs.image.transfer.bandwidthPerSec",
        "-1",
        "'-1' is not a number of bytes per second, 0 or more (0: no throttle)",
    ),
    ("dfs.journalnode.handler.count", "many", "'many' is not an integer"),
    ("hadoop.http.max.threads", "lots", "'lots' is not an integer"),
    *[
        (
            "dfs.journalnode.format.live-writer.window.ms",
            value,
            f"'{value}' is not a time duration of 0 or more (a number of milliseconds, or with "
            "a unit: ns us ms s m h d)",
        )
        for value in ("-1", "soon")
    ],
]


@pytest.mark.parametrize(
    "key,value,problem", BAD_VALUES, ids=[f"{k}={v}" for k, v, _ in BAD_VALUES]
)
def test_bad_value_is_refused_before_anything_is_created(tmp_path, key, value, problem):
    edits_dir = tmp_path / "jn"
    port = free_port()
    conf = node_conf(edits_dir, **{key: value})
    conf.set("dfs.journalnode.rpc-address", f"127.0.0.1:{port}")
    with pytest.raises(ConfigurationError) as info:
        JournalNode(conf)  # refused when made: start() is never reached
    assert str(info.value) == f"Invalid value for {key}: {problem} {SET}"
    assert not edits_dir.exists()
    assert_port_free(port)


def test_bad_address_names_its_key(tmp_path):
    conf = node_conf(tmp_path / "jn", **{"dfs.journalnode.rpc-address": "127.0.0.1:99999"})
    with pytest.raises(ConfigurationError) as info:
        JournalNode(conf)
    assert str(info.value) == (
        "Invalid value for dfs.journalnode.rpc-address: bad port in address '127.0.0.1:99999'"
    )


def test_good_values_are_accepted(tmp_path):
    """Boundaries that are allowed, and the documented meanings that are kept."""
    conf = node_conf(
        tmp_path / "jn",
        **{
            "dfs.journalnode.edits.dir.perm": "0750",
            "dfs.journalnode.sync.interval": "1",
            "dfs.journalnode.enable.sync": "FALSE",
            "dfs.journalnode.edit-cache-size.fraction": "0.9",
            "dfs.journalnode.edit-cache-size.bytes": "1m",
            "dfs.ha.tail-edits.in-progress": "true",
            "ipc.maximum.data.length": "1",
            "dfs.image.transfer.bandwidthPerSec": "0",  # 0: no throttle
            "dfs.journalnode.handler.count": "0",  # ≤ 0 means 5
            "hadoop.http.max.threads": "-1",  # ≤ 0: the default
            "dfs.journalnode.format.live-writer.window.ms": "0",  # 0: only a connected writer
        },
    )
    node = JournalNode(conf)
    node.start()
    try:
        settings = node.settings
        assert settings.sync_interval_ms == 1 and settings.enable_sync is False
        assert node.rpc_server.handler_count == 5 and node.rpc_server.max_frame_size == 1
        journal = node.get_or_create_journal(JID)
        journal.format(FAKE_NSINFO)
        assert stat.S_IMODE(os.stat(journal.storage.current_dir).st_mode) == 0o750
        assert journal.cache is not None and journal.cache.capacity == 1024 * 1024
    finally:
        node.stop()


@pytest.mark.parametrize(
    "props,key,host",
    [
        (
            {"dfs.journalnode.http-address": "nohost.invalid:0"},
            "dfs.journalnode.http-address",
            "nohost.invalid:0",
        ),
        (
            {"dfs.journalnode.rpc-bind-host": "nohost.invalid"},
            "dfs.journalnode.rpc-bind-host",
            "nohost.invalid:{port}",
        ),
    ],
    ids=["http-address", "rpc-bind-host"],
)
def test_unresolvable_host_is_one_line_naming_the_key(tmp_path, props, key, host):
    edits_dir = tmp_path / "jn"
    port = free_port()
    conf = node_conf(edits_dir, **props)
    conf.set("dfs.journalnode.rpc-address", f"127.0.0.1:{port}")
    node = JournalNode(conf)
    with pytest.raises(ConfigurationError) as info:
        node.start()
    message = str(info.value)
    assert re.fullmatch(
        f"Unable to resolve {re.escape(key)} {re.escape(host.format(port=port))}: [^\n]+",
        message,
    ), message
    assert node.rpc_server is None and node.http_server is None
    assert not edits_dir.exists()
    assert_port_free(port)


def test_every_edits_dir_is_checked_before_one_is_created(tmp_path):
    conf = node_conf(tmp_path / "default")
    conf.set("dfs.nameservices", "ns1")
    conf.set("dfs.journalnode.edits.dir.ns1", "relative/ns1")
    with pytest.raises(IllegalArgumentException, match="should be an absolute path"):
        JournalNode(conf).start()
    assert not (tmp_path / "default").exists()


@pytest.fixture
def root_logging():
    """``hdfs-py journalnode`` reconfigures the root logger: put it back afterwards."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        root.removeHandler(handler)
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(level)


def test_cli_prints_one_line_and_exits_1(tmp_path, capsys, monkeypatch, root_logging):
    monkeypatch.delenv("HADOOP_LOG_DIR", raising=False)
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    edits_dir = tmp_path / "jn"
    rc = main(
        [
            "--config",
            str(conf_dir),
            "-D",
            f"dfs.journalnode.edits.dir={edits_dir}",
            "-D",
            "dfs.journalnode.sync.interval=-5",
            "journalnode",
        ]
    )
    out, err = capsys.readouterr()
    assert rc == 1
    assert out == ""
    assert err == (
        "hdfs-py: Invalid value for dfs.journalnode.sync.interval: '-5' is not "
        f"{POSITIVE_DURATION} (set from command line)\n"
    )
    assert not edits_dir.exists()
