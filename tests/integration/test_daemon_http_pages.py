"""Every daemon's pages (issue 24, item 2) on a real JournalNode and a real HA NameNode pair
over loopback: /conf with its redaction, /stacks, /logLevel and ``hdfs-py daemonlog``,
/logs/ without path traversal, /prom, and the NameNode's /isActive (405 on a standby)."""

from __future__ import annotations

import http.client
import json
import logging
import os

import pytest
from lxml import etree

from hadoop_qjm.cli import main as cli_main
from hadoop_qjm.conf import Configuration
from hadoop_qjm.testing.in_process_ha import HAPair, ha_conf, journal_node_conf, wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.tools import daemon_log

pytestmark = pytest.mark.timeout(90)

SECRET = "hunter2-do-not-show"
#: Set on the JournalNodes and the NameNodes alike.
KEYS = {
    "fs.s3a.secret.key": SECRET,
    "ssl.server.keystore.keypassword": SECRET,
    "my.test.visible": "shown",
}


@pytest.fixture
def mjc():
    conf = journal_node_conf()
    for key, value in KEYS.items():
        conf.set(key, value)
    with MiniJournalCluster(3, conf=conf) as cluster:
        yield cluster


@pytest.fixture
def pair(mjc, tmp_path):
    p = HAPair(ha_conf(tmp_path, mjc, "pages", **KEYS, **{"my.db.password": SECRET}), tmp_path)
    try:
        yield p
    finally:
        p.stop()


def request(port: int, path: str, headers: dict[str, str] | None = None):
    """(status, headers, body text) of one GET."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.headers, response.read().decode("utf-8", "replace")
    finally:
        conn.close()


def jn_port(mjc: MiniJournalCluster) -> int:
    return mjc.http_address(0)[1]


# ---- /isActive ----------------------------------------------------------------------------------
def test_is_active_is_200_on_the_active_and_405_on_a_standby(pair):
    for nnid in ("nn1", "nn2"):
        status, headers, body = request(pair[nnid].http_address[1], "/isActive")
        assert (status, body.strip()) == (405, "I am not Active!")
        assert headers["Connection"] == "close"
    pair["nn1"].transition_to_active()
    status, headers, body = request(pair["nn1"].http_address[1], "/isActive")
    assert (status, body) == (200, "I am Active!") and headers["Connection"] == "close"
    assert request(pair["nn2"].http_address[1], "/isActive")[0] == 405


# ---- /conf --------------------------------------------------------------------------------------
def test_conf_shows_the_configuration_with_secrets_redacted(mjc, pair):
    ports = {"JournalNode": jn_port(mjc), "NameNode": pair["nn1"].http_address[1]}
    for daemon, port in ports.items():
        status, headers, body = request(port, "/conf")
        assert status == 200 and headers["Content-Type"].startswith("text/xml"), daemon
        assert SECRET not in body, daemon
        props = {
            p.findtext("name"): (p.findtext("value"), p.findtext("final"), p.findtext("source"))
            for p in etree.fromstring(body.encode()).iter("property")
        }
        assert props["fs.s3a.secret.key"][0] == "<redacted>"
        assert props["ssl.server.keystore.keypassword"][0] == "<redacted>"
        assert props["hadoop.security.sensitive-config-keys"][0] == "<redacted>"
        assert props["my.test.visible"] == ("shown", "false", "programmatically")
        assert props["dfs.http.policy"] == ("HTTP_ONLY", "false", "hdfs-default.xml")

        status, headers, body = request(port, "/conf?format=json")
        assert status == 200 and headers["Content-Type"].startswith("application/json")
        assert SECRET not in body
        entries = {e["key"]: e for e in json.loads(body)["properties"]}
        assert entries["fs.s3a.secret.key"]["value"] == "<redacted>"
        assert entries["hadoop.tmp.dir"]["value"].startswith("/tmp/hadoop-")  # expanded
        assert set(entries["my.test.visible"]) == {"key", "value", "isFinal", "resource"}

        # Hadoop 3 picks JSON by the Accept header; one key by name.
        status, _, body = request(
            port, "/conf?name=my.test.visible", {"Accept": "application/json"}
        )
        assert json.loads(body) == {
            "property": {
                "key": "my.test.visible",
                "value": "shown",
                "isFinal": False,
                "resource": "programmatically",
            }
        }
        assert request(port, "/conf?name=no.such.key")[:3:2] == (
            404,
            "Property no.such.key not found\n",
        )
        assert request(port, "/conf?format=yaml")[0] == 400
    # The NameNode's own keys too.
    body = request(ports["NameNode"], "/conf?format=json&name=my.db.password")[2]
    assert json.loads(body)["property"]["value"] == "<redacted>"


# ---- /stacks ------------------------------------------------------------------------------------
def test_stacks_shows_every_thread(mjc, pair):
    for server, name in (
        (mjc.journal_node(0).http_server, "JournalNodeHttpServer"),
        (pair["nn1"].http_server, "NameNodeHttpServer"),
    ):
        status, headers, body = request(server.port, "/stacks")
        assert status == 200 and headers["Content-Type"].startswith("text/plain")
        assert body.startswith("Process Thread Dump: \n")
        # The accept loop of the server answering, and the handler answering, with its frame.
        assert f"({name}-{server.port}):" in body
        assert "    page_stacks (" in body
        count = int(body.splitlines()[1].split()[0])
        assert body.count("\nThread ") == count


# ---- /logLevel and daemonlog --------------------------------------------------------------------
@pytest.fixture
def http_server_logger():
    """The logger of the HTTP request lines (DEBUG), its level restored afterwards."""
    logger = logging.getLogger("hadoop_qjm.common.http_server")
    saved = logger.level
    logger.setLevel(logging.INFO)
    try:
        yield logger
    finally:
        logger.setLevel(saved)


def test_daemonlog_sets_a_level_seen_in_the_next_log_line(mjc, http_server_logger, capsys, caplog):
    port = jn_port(mjc)
    name = http_server_logger.name
    target = f"127.0.0.1:{port}"

    def lines_of(marker: str) -> list[logging.LogRecord]:
        return [r for r in caplog.records if r.name == name and marker in r.getMessage()]

    assert daemon_log.run(["-getlevel", target, name], Configuration()) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"Connecting to http://{target}/logLevel?log={name}",
        f"Submitted Class Name: {name}",
        "Log Class: logging.Logger",
        "Effective Level: INFO",
    ]
    request(port, "/jmx?qry=before:name=*")
    assert daemon_log.run(["-setlevel", target, name, "DEBUG"], Configuration()) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"Connecting to http://{target}/logLevel?log={name}&level=DEBUG",
        f"Submitted Class Name: {name}",
        "Log Class: logging.Logger",
        "Submitted Level: DEBUG",
        "Setting Level to DEBUG ...",
        "Effective Level: DEBUG",
    ]
    request(port, "/jmx?qry=after:name=*")
    wait_until(lambda: lines_of("/jmx?qry=after"), what="the DEBUG line of the next request")
    assert not lines_of("/jmx?qry=before")  # at INFO it was not logged
    assert lines_of("/jmx?qry=after")[0].levelno == logging.DEBUG

    # A level log4j does not know changes nothing: the command refuses it, one line, exit 2,
    # before connecting; the page itself answers Hadoop's "Bad Level".
    assert cli_main(["daemonlog", "-setlevel", target, name, "LOUD"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        "hdfs-py: daemonlog: Bad level 'LOUD': use one of ALL, TRACE, DEBUG, INFO, WARN, "
        "ERROR, FATAL, OFF"
    ]
    status, _, body = request(port, f"/logLevel?log={name}&level=LOUD")
    assert status == 200 and "Bad Level : <b>LOUD</b>" in body
    assert http_server_logger.level == logging.DEBUG
    # log4j's names (any case) for Python's levels.
    assert daemon_log.run(["-setlevel", target, name, "warn"], Configuration()) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "Effective Level: WARN"


def test_daemonlog_takes_hadoops_class_names_of_what_is_ported(mjc, capsys):
    target = f"127.0.0.1:{jn_port(mjc)}"
    java = "org.apache.hadoop.hdfs.qjournal.server.Journal"
    logger = logging.getLogger("hadoop_qjm.qjournal.server.journal")
    saved = logger.level
    try:
        assert cli_main(["daemonlog", "-setlevel", target, java, "TRACE"]) == 0
        out = capsys.readouterr().out.splitlines()
        assert out[1:4] == [
            f"Submitted Class Name: {java}",
            "Log Class: logging.Logger",
            "Python Logger: hadoop_qjm.qjournal.server.journal",
        ]
        assert out[-1] == "Effective Level: TRACE" and logger.level == 5
    finally:
        logger.setLevel(saved)
    # Hadoop's other classes are refused, naming ours, and nothing is created or sent.
    datanode = "org.apache.hadoop.hdfs.server.datanode.DataNode"
    assert cli_main(["daemonlog", "-setlevel", target, datanode, "DEBUG"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert f"{datanode} is not ported" in err and "hadoop_qjm.qjournal.server.journal," in err
    assert datanode not in logging.root.manager.loggerDict


def test_daemonlog_bad_input_is_one_line(mjc, capsys):
    assert cli_main(["daemonlog", "-getlevel", "127.0.0.1:1"]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "hdfs-py: daemonlog: -getlevel needs two parameters (usage: hdfs-py daemonlog "
        "-getlevel HOST:PORT NAME | -setlevel HOST:PORT NAME LEVEL [-protocol http|https])"
    ]
    target = f"127.0.0.1:{jn_port(mjc)}"
    assert cli_main(["daemonlog", "-getlevel", target, "x", "-protocol", "ftp"]) == 2
    assert "Invalid protocol: ftp" in capsys.readouterr().err
    # https against a plain listener: one line, exit 1.
    assert cli_main(["daemonlog", "-getlevel", target, "x", "-protocol", "https"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and err[0].startswith("hdfs-py: ")


# ---- /logs/ -------------------------------------------------------------------------------------
def test_logs_serves_the_log_directory_and_nothing_outside_it(mjc, tmp_path, monkeypatch):
    log_dir = tmp_path / "logs"
    log_dir.mkdir()
    log_name = "hadoop-hdfs-journalnode-host1.log"
    (log_dir / log_name).write_text("2024-01-01 INFO started\n")
    (log_dir / "old").mkdir()
    (log_dir / "old" / "x.out").write_text("older\n")
    outside = tmp_path / "secret.txt"
    outside.write_text(SECRET)
    os.symlink(outside, log_dir / "link.log")
    monkeypatch.setenv("HADOOP_LOG_DIR", str(log_dir))
    port = jn_port(mjc)

    status, headers, body = request(port, "/logs")
    assert (status, headers["Location"]) == (302, "/logs/")
    status, _, body = request(port, "/logs/")
    assert status == 200 and f"href='{log_name}'" in body and "href='old/'" in body
    status, headers, body = request(port, f"/logs/{log_name}")
    assert (status, body) == (200, "2024-01-01 INFO started\n")
    assert headers["Content-Type"].startswith("text/plain")
    assert request(port, "/logs/old")[1]["Location"] == "/logs/old/"
    assert request(port, "/logs/old/x.out")[2] == "older\n"
    for path in (
        "/logs/../secret.txt",
        "/logs/%2e%2e/secret.txt",
        "/logs/old/../../secret.txt",
        "/logs/link.log",
        f"/logs/{outside}",
        "/logs/nothere.log",
    ):
        status, _, body = request(port, path)
        assert status == 404 and SECRET not in body, path


def test_logs_is_404_when_the_daemon_writes_no_log_file(mjc, monkeypatch):
    monkeypatch.delenv("HADOOP_LOG_DIR", raising=False)
    root = logging.getLogger()
    monkeypatch.setattr(
        root, "handlers", [h for h in root.handlers if not hasattr(h, "baseFilename")]
    )
    status, _, body = request(jn_port(mjc), "/logs/")
    assert status == 404 and "HADOOP_LOG_DIR" in body


# ---- /prom --------------------------------------------------------------------------------------
def test_prom_is_the_prometheus_text_of_metrics(mjc, pair):
    for port, metric in (
        (jn_port(mjc), "journalnode_"),
        (pair["nn1"].http_address[1], "namenode_"),
    ):
        status, headers, body = request(port, "/prom")
        metrics = request(port, "/metrics")
        assert status == 200 and headers["Content-Type"] == metrics[1]["Content-Type"]
        assert f"# TYPE {metric}" in body
        names = {line.split()[2] for line in body.splitlines() if line.startswith("# TYPE")}
        assert names == {
            line.split()[2] for line in metrics[2].splitlines() if line.startswith("# TYPE")
        }


def test_the_name_node_rpc_server_counts_its_calls_on_jmx_and_prom(pair):
    """Hadoop's RpcMetrics on the NameNode (Hadoop:service=NameNode,name=RpcActivityForPort<port>)."""
    nn = pair["nn1"]
    nn.transition_to_active()
    rpc_port, http_port = nn.rpc_address[1], nn.http_address[1]
    qry = f"Hadoop:service=NameNode,name=RpcActivityForPort{rpc_port}"

    def activity() -> dict:
        status, _, body = request(http_port, f"/jmx?qry={qry}")
        assert status == 200
        (bean,) = json.loads(body)["beans"]
        return bean

    before = activity()["TotalRequests"]
    with pair.proxy("nn1") as p1:
        for i in range(3):
            assert p1.mkdirs(f"/rpc-metrics-{i}")
        wait_until(lambda: activity()["TotalRequests"] >= before + 3)
        bean = activity()
        assert bean["NumOpenConnections"] >= 1
    assert bean["RpcQueueTimeNumOps"] == bean["RpcProcessingTimeNumOps"] == bean["TotalRequests"]
    assert bean["RpcProcessingTimeAvgTime"] > 0 and bean["CallQueueLength"] >= 0
    assert bean["tag.port"] == str(rpc_port)
    _, _, prom = request(http_port, "/prom")
    assert f'rpc_rpc_queue_time_num_ops{{port="{rpc_port}"}}' in prom


# ---- the JournalNodes on a NameNode's page -------------------------------------------------------
def test_a_standby_shows_its_journal_nodes_as_not_writing(pair):
    """Issue 33 item 12: a standby writes to no JournalNode, so its page must not list
    each one as "in sync" with a written txid of 0."""
    pair["nn1"].transition_to_active()

    def channels(nnid: str) -> list[dict]:
        status, _, body = request(pair[nnid].http_address[1], "/jmx?qry=Hadoop:service=NameNode,*")
        assert status == 200
        beans = json.loads(body)["beans"]
        return [b for b in beans if b["modelerType"] == "IPCLoggerChannel"]

    wait_until(lambda: len(channels("nn2")) == 3, what="the standby's three JournalNodes")
    assert {c["SyncState"] for c in channels("nn2")} == {"not writing (standby)"}
    assert {c["SyncState"] for c in channels("nn1")} == {"in sync"}


@pytest.mark.parametrize(
    ("target", "name", "complaint"),
    [
        ("http://127.0.0.1:80", "x", "'http://127.0.0.1:80' is not HOST:PORT"),
        ("127.0.0.1:80/logLevel", "x", "'127.0.0.1:80/logLevel' is not HOST:PORT"),
        ("127.0.0.1:80", " ", "the logger name is empty"),
    ],
)
def test_daemonlog_refuses_a_url_or_an_empty_name_before_connecting(
    capsys, target: str, name: str, complaint: str
) -> None:
    # The URL was taken as a host ("Connecting to http://http://127.0.0.1:80/logLevel...").
    assert cli_main(["daemonlog", "-getlevel", target, name]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and complaint in err
