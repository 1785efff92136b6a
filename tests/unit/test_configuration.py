"""Configuration: Hadoop XML resources, expansion, final, typed getters, errors."""

from __future__ import annotations

import pytest

from hadoop_qjm.common.exceptions import ConfigurationError
from hadoop_qjm.conf import Configuration, parse_host_port, parse_storage_size, parse_time_duration


def write_conf(path, props, final=()):
    body = "".join(
        f"<property><name>{k}</name><value>{v}</value>"
        + ("<final>true</final>" if k in final else "")
        + "</property>\n"
        for k, v in props.items()
    )
    path.write_text(f'<?xml version="1.0"?>\n<configuration>\n{body}</configuration>\n')
    return path


def test_defaults_are_hadoops():
    conf = Configuration()
    assert conf.get("dfs.journalnode.rpc-address") == "0.0.0.0:8485"
    assert conf.get("dfs.journalnode.http-address") == "0.0.0.0:8480"
    assert conf.get_int("dfs.journalnode.handler.count") == 5
    assert conf.get_bool("dfs.journalnode.enable.sync") is True
    assert conf.get_int("dfs.qjournal.write-txns.timeout.ms") == 20000
    assert conf.get_int("dfs.qjournal.prepare-recovery.timeout.ms") == 120000
    assert conf.get_time_duration("dfs.qjm.operations.timeout", 0, "ms") == 60000
    assert conf.get_int("dfs.namenode.max.op.size") == 52428800
    assert conf.get("dfs.namenode.shared.edits.dir") is None
    # ${dfs.namenode.name.dir} -> file://${hadoop.tmp.dir}/dfs/name -> /tmp/hadoop-<user>/...
    edits = conf.get("dfs.namenode.edits.dir")
    assert edits.startswith("file:///tmp/hadoop-") and edits.endswith("/dfs/name")
    assert "${" not in edits


def test_no_defaults():
    assert Configuration(load_defaults=False).get("dfs.journalnode.rpc-address") is None


def test_site_files_layer_and_override(tmp_path):
    write_conf(tmp_path / "core-site.xml", {"hadoop.tmp.dir": "/data/tmp", "x.y": "core"})
    write_conf(tmp_path / "hdfs-site.xml", {"x.y": "hdfs"})
    conf = Configuration()
    conf.add_conf_dir(tmp_path)
    assert conf.get("x.y") == "hdfs"
    assert conf.get("dfs.namenode.name.dir") == "file:///data/tmp/dfs/name"
    assert conf.source("x.y").startswith(str(tmp_path / "hdfs-site.xml"))


def test_final_is_honoured(tmp_path):
    first = write_conf(tmp_path / "a.xml", {"k": "first"}, final={"k"})
    second = write_conf(tmp_path / "b.xml", {"k": "second"})
    conf = Configuration(load_defaults=False)
    conf.add_resource(first)
    conf.add_resource(second)
    assert conf.get("k") == "first"
    assert conf.is_final("k")
    conf.set("k", "programmatic")  # Hadoop's set() ignores final
    assert conf.get("k") == "programmatic"


def test_expansion_of_keys_and_environment(monkeypatch):
    monkeypatch.setenv("QJM_TEST_DATA", "/srv/data")
    monkeypatch.delenv("QJM_TEST_UNSET", raising=False)
    conf = Configuration(load_defaults=False)
    conf.set("base", "/b")
    conf.set("nested", "${base}/n")
    conf.set("deep", "${nested}/d/${env.QJM_TEST_DATA}")
    conf.set("fallback", "${env.QJM_TEST_UNSET:-/fallback}/x")
    conf.set("unbound", "${no.such.key}/rest")
    assert conf.get("deep") == "/b/n/d//srv/data"
    assert conf.get("fallback") == "/fallback/x"
    assert conf.get("unbound") == "${no.such.key}/rest"
    assert conf.get_raw("deep") == "${nested}/d/${env.QJM_TEST_DATA}"


@pytest.mark.parametrize(
    "props",
    [
        {"a": "${a}"},
        {"a": "${b}", "b": "${a}"},
        {"a": "x${b}", "b": "y${c}", "c": "z${a}"},
    ],
)
def test_cycles_are_detected(props):
    conf = Configuration(load_defaults=False)
    for key, value in props.items():
        conf.set(key, value)
    with pytest.raises(ConfigurationError, match="Variable substitution depth too large"):
        conf.get("a")


def test_long_but_finite_chain_expands():
    conf = Configuration(load_defaults=False)
    conf.set("k0", "end")
    for i in range(1, 15):
        conf.set(f"k{i}", f"${{k{i - 1}}}")
    assert conf.get("k14") == "end"


def test_typed_getters():
    conf = Configuration(load_defaults=False)
    conf.set("i", " 42 ")
    conf.set("hex", "0x10")
    conf.set("f", "0.25")
    conf.set("b1", "TRUE")
    conf.set("b2", "false")
    conf.set("t1", "60s")
    conf.set("t2", "5m")
    conf.set("t3", "100ms")
    conf.set("t4", "250")
    conf.set("s1", "10m")
    conf.set("s2", "1g")
    conf.set("s3", "4096")
    conf.set("list", " a, b ,,c ")
    conf.set("addr", "jn1.example.com:8485")
    conf.set("addr6", "[::1]:9000")
    conf.set("bindhost", "0.0.0.0")
    assert conf.get_int("i") == 42
    assert conf.get_long("hex") == 16
    assert conf.get_int("missing", 7) == 7
    assert conf.get_float("f") == 0.25
    assert conf.get_bool("b1") is True and conf.get_bool("b2") is False
    assert conf.get_bool("missing", True) is True
    assert conf.get_time_duration("t1", 0) == 60000
    assert conf.get_time_duration("t2", 0, "s") == 300
    assert conf.get_time_duration("t3", 0) == 100
    assert conf.get_time_duration("t4", 0) == 250  # bare number: the default unit
    assert conf.get_time_duration("t4", 0, "s") == 250
    assert conf.get_time_duration("missing", "2m") == 120000
    assert conf.get_storage_size("s1", 0) == 10 * 1024 * 1024
    assert conf.get_storage_size("s2", 0) == 1024**3
    assert conf.get_storage_size("s3", 0) == 4096
    assert conf.get_storage_size("missing", "1k") == 1024
    assert conf.get_trimmed_strings("list") == ["a", "b", "c"]
    assert conf.get_trimmed_strings("missing", ["z"]) == ["z"]
    assert conf.get_socket_address("addr") == ("jn1.example.com", 8485)
    assert conf.get_socket_address("addr6") == ("::1", 9000)
    assert conf.get_socket_address("addr", bind_host_key="bindhost") == ("0.0.0.0", 8485)
    assert conf.get_socket_address("missing", "localhost:1") == ("localhost", 1)


@pytest.mark.parametrize(
    "getter,value",
    [
        ("get_int", "forty"),
        ("get_float", "1.2.3"),
        ("get_bool", "yes"),
        ("get_time_duration", "10 parsecs"),
        ("get_storage_size", "12 elephants"),
        ("get_socket_address", "host:notaport"),
    ],
)
def test_bad_value_names_key_and_value(getter, value):
    conf = Configuration(load_defaults=False)
    conf.set("dfs.some.key", value)
    with pytest.raises(ConfigurationError) as info:
        if getter == "get_time_duration":
            conf.get_time_duration("dfs.some.key", 0)
        elif getter == "get_storage_size":
            conf.get_storage_size("dfs.some.key", 0)
        else:
            getattr(conf, getter)("dfs.some.key")
    assert "dfs.some.key" in str(info.value)
    if getter != "get_socket_address":
        assert value in str(info.value)


def test_bad_value_says_where_it_was_set(tmp_path):
    from hadoop_qjm.cli import load_configuration

    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "hdfs-site.xml").write_text(
        "<configuration>\n<property><name>in.file</name><value>x</value></property>\n"
        "</configuration>\n"
    )
    conf = load_configuration(str(conf_dir), [("on.command.line", "five")])
    conf.set("in.code", "y")
    assert conf.source("on.command.line") == "from command line"  # Hadoop's -D source
    expected = {
        "in.file": f"(set at {conf_dir / 'hdfs-site.xml'}:2)",
        "on.command.line": "(set from command line)",
        "in.code": "(set programmatically)",
    }
    for key, where in expected.items():
        with pytest.raises(ConfigurationError) as info:
            conf.get_int(key)
        assert str(info.value).endswith(f"is not an integer {where}"), str(info.value)


@pytest.mark.parametrize(
    "text,line",
    [
        ("<configuration>\n<property><name>a</name>\n<value>1</value>\n</configuration>\n", 4),
        ("<configuration>\n<property>\n<value>1</value></property>\n</configuration>\n", 2),
        ("<notconfiguration/>\n", 1),
        ("<configuration>\n\n<bogus/>\n</configuration>\n", 3),
        ("", 1),
    ],
)
def test_malformed_file_names_file_and_line(tmp_path, text, line):
    path = tmp_path / "hdfs-site.xml"
    path.write_text(text)
    conf = Configuration(load_defaults=False)
    conf.set("keep", "me")
    with pytest.raises(ConfigurationError) as info:
        conf.add_resource(path)
    message = str(info.value)
    assert str(path) in message
    assert f"line {line}" in message
    assert conf.get("keep") == "me" and conf.resources == []


def test_malformed_file_changes_nothing(tmp_path):
    path = tmp_path / "bad.xml"
    path.write_text(
        "<configuration><property><name>a</name><value>new</value></property>"
        "<property><value>x</value></property></configuration>"
    )
    conf = Configuration(load_defaults=False)
    conf.set("a", "old")
    with pytest.raises(ConfigurationError):
        conf.add_resource(path)
    assert conf.get("a") == "old"


def test_missing_file_is_a_configuration_error(tmp_path):
    with pytest.raises(ConfigurationError, match="Cannot read configuration file"):
        Configuration().add_resource(tmp_path / "absent.xml")


def test_write_xml_round_trip(tmp_path):
    conf = Configuration(load_defaults=False)
    conf.set("a", "${b}/x")
    conf.set("b", "/y")
    conf.write_xml(tmp_path / "out.xml")
    again = Configuration(load_defaults=False)
    again.add_resource(tmp_path / "out.xml")
    assert again.get("a") == "/y/x" and again.get_raw("a") == "${b}/x"


def test_parsers_directly():
    assert parse_time_duration("2h", "s") == 7200
    assert parse_time_duration("1500us", "ms") == 1
    assert parse_storage_size("2kb") == 2048
    assert parse_host_port("qjournal://h:1/x") == ("h", 1)
    assert parse_host_port("h", 8485) == ("h", 8485)
    with pytest.raises(ValueError):
        parse_host_port("h")
    with pytest.raises(ValueError):
        parse_host_port("h:70000")


_HA = {
    "ha.zookeeper.quorum": "127.0.0.1:2181",
    "dfs.nameservices": "ns1",
    "dfs.ha.namenodes.ns1": "nn1",
    "dfs.namenode.rpc-address.ns1.nn1": "127.0.0.1:1",
}


def _ha_conf(**props) -> Configuration:
    """One NameNode of nameservice ns1 and a ZooKeeper quorum, then ``props``."""
    conf = Configuration()
    for key, value in {**_HA, **props}.items():
        conf.set(key, value)
    return conf


def _duration_readers():
    """(key, read(conf) -> the value its daemon uses, in that value's unit): every duration
    key a daemon or command reads, through the reader that daemon uses."""
    from hadoop_qjm.common.security.ssl_factory import SSLFactory
    from hadoop_qjm.ha.health_monitor import HealthMonitorSettings
    from hadoop_qjm.ha.node_fencer import ShellCommandFencer, SshFenceByTcpPort
    from hadoop_qjm.ha.zk_failover_controller import ZKFCSettings
    from hadoop_qjm.namenode.ha.failover_proxy import FailoverNameNodeProxy
    from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalTimeouts
    from hadoop_qjm.qjournal.server.journal_node_settings import (
        JournalNodeSettings,
        format_live_writer_window_ms,
    )
    from hadoop_qjm.qjournal.server.journal_scrubber import ScrubSettings
    from hadoop_qjm.tools.ha_admin import HAAdmin

    def attr(reader, name, scale=1):
        return lambda conf: getattr(reader(conf), name) * scale

    qjm = {
        "dfs.qjournal.start-segment.timeout.ms": "start_segment_ms",
        "dfs.qjournal.prepare-recovery.timeout.ms": "prepare_recovery_ms",
        "dfs.qjournal.accept-recovery.timeout.ms": "accept_recovery_ms",
        "dfs.qjournal.finalize-segment.timeout.ms": "finalize_segment_ms",
        "dfs.qjournal.select-input-streams.timeout.ms": "select_input_streams_ms",
        "dfs.qjournal.get-journal-state.timeout.ms": "get_journal_state_ms",
        "dfs.qjournal.new-epoch.timeout.ms": "new_epoch_ms",
        "dfs.qjournal.write-txns.timeout.ms": "write_txns_ms",
        "dfs.qjournal.http.open.timeout.ms": "http_open_ms",
        "dfs.qjournal.http.read.timeout.ms": "http_read_ms",
        "dfs.qjm.operations.timeout": "operations_ms",
    }
    readers = [(k, attr(QuorumJournalTimeouts.from_conf, f)) for k, f in qjm.items()]
    hm = HealthMonitorSettings.from_conf
    zkfc = lambda conf: ZKFCSettings.from_conf(conf, "ns1")  # noqa: E731
    admin = lambda conf: HAAdmin(conf, "ns1", proxy_factory=object, zkfc_proxy_factory=object)  # noqa: E731
    readers += [
        ("dfs.journalnode.sync.interval", attr(JournalNodeSettings.from_conf, "sync_interval_ms")),
        (
            "dfs.edit.log.transfer.timeout",
            attr(JournalNodeSettings.from_conf, "edit_log_transfer_timeout_ms"),
        ),
        ("dfs.journalnode.scrub.interval", attr(ScrubSettings.from_conf, "interval_ms")),
        ("ha.health-monitor.check-interval.ms", attr(hm, "check_interval_s", 1000)),
        ("ha.health-monitor.connect-retry-interval.ms", attr(hm, "connect_retry_interval_s", 1000)),
        ("ha.health-monitor.sleep-after-disconnect.ms", attr(hm, "sleep_after_disconnect_s", 1000)),
        ("ha.health-monitor.rpc-timeout.ms", attr(hm, "rpc_timeout_s", 1000)),
        ("ha.zookeeper.session-timeout.ms", attr(zkfc, "session_timeout_s", 1000)),
        (
            "ha.failover-controller.graceful-fence.rpc-timeout.ms",
            attr(zkfc, "graceful_fence_timeout_s", 1000),
        ),
        (
            "ha.failover-controller.new-active.rpc-timeout.ms",
            attr(zkfc, "new_active_timeout_s", 1000),
        ),
        ("ha.failover-controller.cli-check.rpc-timeout.ms", attr(admin, "check_timeout_s", 1000)),
        ("dfs.ha.fencing.shell.timeout.ms", attr(ShellCommandFencer, "timeout_ms")),
        ("dfs.ha.fencing.ssh.connect-timeout", attr(SshFenceByTcpPort, "connect_timeout_ms")),
        (
            "dfs.client.failover.sleep.base.millis",
            attr(lambda c: FailoverNameNodeProxy(c, "ns1"), "sleep_base_ms"),
        ),
        (
            "dfs.client.failover.sleep.max.millis",
            attr(lambda c: FailoverNameNodeProxy(c, "ns1"), "sleep_max_ms"),
        ),
        (
            "hadoop.ssl.handshake.timeout",
            attr(lambda c: SSLFactory(c).security, "handshake_timeout_s", 1000),
        ),
        ("dfs.journalnode.format.live-writer.window.ms", format_live_writer_window_ms),
    ]
    return readers


_DURATION_READERS = _duration_readers()


@pytest.mark.parametrize("key,read", _DURATION_READERS, ids=[k for k, _ in _DURATION_READERS])
def test_every_duration_key_takes_hadoops_time_units(key, read):
    """Issue 33 item 9: `2m` for a key in ms was refused ("'2m' is not a positive number of
    milliseconds") and stopped the daemon. Each key is read as getTimeDuration reads it: a
    unit suffix, or a bare number in the key's default unit (ms for all of these)."""
    assert read(_ha_conf(**{key: "2m"})) == pytest.approx(120_000)
    assert read(_ha_conf(**{key: "1500"})) == pytest.approx(1_500)
    assert read(_ha_conf(**{key: "3S"})) == pytest.approx(3_000)
    with pytest.raises(ConfigurationError) as info:
        read(_ha_conf(**{key: "2 fortnights"}))
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"Invalid value for {key}: '2 fortnights' is not a ")


def _seconds_readers():
    from hadoop_qjm.namenode.ha.edit_log_tailer import TailerSettings
    from hadoop_qjm.namenode.ha.standby_checkpointer import CheckpointConf

    def attr(reader, name):
        return lambda conf: getattr(reader(conf), name) * 1000

    return [
        ("dfs.ha.tail-edits.period", attr(TailerSettings, "period_s")),
        ("dfs.ha.tail-edits.period.backoff-max", attr(TailerSettings, "backoff_max_s")),
        ("dfs.ha.log-roll.period", attr(TailerSettings, "log_roll_period_s")),
        ("dfs.namenode.checkpoint.check.period", attr(CheckpointConf.from_conf, "check_period_s")),
    ]


_SECONDS_READERS = _seconds_readers()


@pytest.mark.parametrize("key,read", _SECONDS_READERS, ids=[k for k, _ in _SECONDS_READERS])
def test_a_bare_number_is_seconds_where_hadoop_reads_seconds(key, read):
    """Hadoop reads these with getTimeDuration(key, default, SECONDS, MILLISECONDS)
    (EditLogTailer, CheckpointConf): an hdfs-site.xml of Hadoop's with `120` meant 120 ms
    here. A suffix still says its own unit, and a fraction of a second is kept."""
    assert read(_ha_conf(**{key: "90"})) == pytest.approx(90_000)
    assert read(_ha_conf(**{key: "20ms"})) == pytest.approx(20)
    assert read(_ha_conf(**{key: "2m"})) == pytest.approx(120_000)
    with pytest.raises(ConfigurationError) as info:
        read(_ha_conf(**{key: "2 fortnights"}))
    assert str(info.value).startswith(f"Invalid value for {key}: '2 fortnights' is not a ")


def test_duration_keys_in_other_units_and_bounds():
    conf = Configuration()
    conf.set("dfs.namenode.checkpoint.period", "2h")
    assert conf.get_time_duration("dfs.namenode.checkpoint.period", 3600, "s") == 7200
    assert conf.get_time_duration("dfs.namenode.checkpoint.period", 3600, "ms") == 7_200_000
    conf.set("t", "1500us")
    assert conf.get_time_duration("t", 0, "ms") == 1  # truncated, as TimeUnit.convert
    conf.set("t", "-1500us")
    assert conf.get_time_duration("t", 0, "ms") == -1
    conf.set("t", "0s")
    with pytest.raises(ConfigurationError) as info:
        conf.get_time_duration("t", 1, "ms", minimum=1)
    assert str(info.value) == (
        "Invalid value for t: '0s' is not a positive time duration (a number of "
        "milliseconds, or with a unit: ns us ms s m h d) (set programmatically)"
    )
    assert conf.get_time_duration("t", 1, "ms", minimum=0) == 0
