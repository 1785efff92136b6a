"""Hadoop's TestJournalNode, ported: a real JournalNode on loopback, driven over Thrift and HTTP."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import socket
import time
import urllib.error
import urllib.request
from concurrent.futures import Future

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import (
    AuthorizationException,
    ConfigurationError,
    IllegalArgumentException,
    IOException,
)
from hadoop_qjm.common.progress import format_bytes
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.fs_edit_log_op import edit_log_header
from hadoop_qjm.qjournal.client.ipc_logger_channel import IPCLoggerChannel
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalInUseException,
    JournalNotFormattedException,
    JournalOutOfSyncException,
    QuorumException,
)
from hadoop_qjm.qjournal.protocol.messages import SegmentState
from hadoop_qjm.qjournal.server.journal_node import JournalNode
from hadoop_qjm.testing.domain_name_resolvers import StaticDomainNameResolver
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    create_txn_data,
    flip_byte_in_op,
    formatted_writer,
    make_request,
    snapshot_files,
    write_segment,
    write_txns,
)
from tests.integration.syncer_support import peer_holding_segments
from tests.unit.qjm_client_fakes import FakeClock

LV = CURRENT_LAYOUT_VERSION


def node_conf(edits_dir) -> Configuration:
    conf = Configuration()
    conf.set("dfs.journalnode.edits.dir", str(edits_dir))
    conf.set("dfs.journalnode.rpc-address", "127.0.0.1:0")
    conf.set("dfs.journalnode.http-address", "127.0.0.1:0")
    return conf


@pytest.fixture
def jn(tmp_path):
    node = JournalNode(node_conf(tmp_path / "jn"))
    node.start()
    yield node
    node.stop()


@pytest.fixture
def proxy(jn):
    p = QJournalProtocolProxy("127.0.0.1", jn.rpc_address[1], timeout_s=30)
    yield p
    p.close()


def http_get(jn, path):
    return http_get_port(jn.http_address[1], path)


def http_get_port(port: int, path: str):
    url = f"http://127.0.0.1:{port}{path}"
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def journal_bean(jn, jid=JID):
    status, body = http_get(jn, f"/jmx?qry=Hadoop:service=JournalNode,name=Journal-{jid}")
    assert status == 200
    (bean,) = json.loads(body)["beans"]
    return bean


def test_journal_metrics(jn, proxy):
    """testJournal: the JN does not parse records, and a lagging batch shows in the lag."""
    proxy.format(JID, FAKE_NSINFO)
    proxy.new_epoch(JID, FAKE_NSINFO, 1)
    proxy.start_log_segment(make_request(1), 1, LV)
    proxy.journal(make_request(2), 1, 1, 1, b"hello")
    bean = journal_bean(jn)
    assert bean["BatchesWritten"] == 1
    assert bean["BatchesWrittenWhileLagging"] == 0
    assert bean["LastWrittenTxId"] == 1
    assert bean["CurrentLagTxns"] == 0
    assert bean["tag.JournalId"] == JID
    proxy.journal(make_request(3, committed_txid=100), 1, 2, 1, b"goodbye")
    bean = journal_bean(jn)
    assert bean["BatchesWritten"] == 2
    assert bean["BatchesWrittenWhileLagging"] == 1
    assert bean["CurrentLagTxns"] == 98
    status, text = http_get(jn, "/metrics")
    assert (
        status == 200
        and b'journalnode_batches_written_total{journal_id="test-journal"} 2.0' in text
    )


def test_returns_segment_info_at_epoch_transition(jn, proxy):
    proxy.format(JID, FAKE_NSINFO)
    assert proxy.new_epoch(JID, FAKE_NSINFO, 1).last_segment_txid is None
    proxy.start_log_segment(make_request(1), 1, LV)
    proxy.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
    # A new epoch aborts the open segment: its padding stays, the txns are found.
    assert proxy.new_epoch(JID, FAKE_NSINFO, 2).last_segment_txid == 1
    proxy.finalize_log_segment(make_request(1, epoch=2), 1, 2)
    assert proxy.new_epoch(JID, FAKE_NSINFO, 3).last_segment_txid == 1
    # An empty new segment is moved aside, so the previous one is reported again.
    proxy.start_log_segment(make_request(1, epoch=3), 3, LV)
    assert proxy.new_epoch(JID, FAKE_NSINFO, 4).last_segment_txid == 1


def test_http_server(jn, proxy):
    proxy.format(JID, FAKE_NSINFO)
    proxy.new_epoch(JID, FAKE_NSINFO, 1)
    proxy.start_log_segment(make_request(1), 1, LV)
    data = create_txn_data(1, 3)
    proxy.journal(make_request(2), 1, 1, 3, data)
    proxy.finalize_log_segment(make_request(3), 1, 3)
    status, body = http_get(jn, "/jmx")
    assert status == 200 and b"Hadoop:service=JournalNode,name=JvmMetrics" in body
    status, body = http_get(jn, f"/getJournal?segmentTxId=1&jid={JID}")
    assert status == 200 and body == edit_log_header(LV) + data
    assert body[4:8] == b"\x00\x00\x00\x00"
    status, body = http_get(jn, f"/getJournal?segmentTxId=12345&jid={JID}")
    assert status == 404 and b"No edit log found starting at txid 12345" in body


def test_an_rpc_client_given_the_http_port_is_told_so_at_once(jn):
    """Issue 33 item 13: the HTTP port (8480) where the RPC port (8485) belongs. The HTTP
    server waited for a line end a Thrift frame never sends (60 s), then the client read
    "Invalid reply frame length 1213486160" (b"HTTP"). Now the server answers a request
    that cannot be HTTP at once, and both clients, the proxy and the writer's pipelined
    channel, name the mistake. The deadlines are below the server's 60 s socket timeout:
    a server still waiting fails the call with a timeout instead."""
    host, port = "127.0.0.1", jn.http_address[1]
    expected = f"{host}:{port} is an HTTP port, not a JournalNode RPC port"
    with QJournalProtocolProxy(host, port, timeout_s=10) as p:
        with pytest.raises(IOException) as info:
            p.get_journal_state(JID)
    assert str(info.value) == expected
    channel = IPCLoggerChannel(Configuration(), FAKE_NSINFO, JID, (host, port))
    try:
        with pytest.raises(IOException) as info:
            channel.get_journal_state().result(timeout=10)
        assert str(info.value) == expected
    finally:
        channel.close()


def test_accept_recovery_behavior(jn, proxy):
    proxy.format(JID, FAKE_NSINFO)
    # (Hadoop's "bad epoch" for a call before newEpoch is the client's check: IPCLoggerChannel.)
    proxy.new_epoch(JID, FAKE_NSINFO, 1)
    prep = proxy.prepare_recovery(make_request(1), 1)
    assert prep.segment_state is None and prep.accepted_in_epoch is None
    proxy.start_log_segment(make_request(2), 1, LV)
    proxy.journal(make_request(3), 1, 1, 1, create_txn_data(1, 1))
    prep = proxy.prepare_recovery(make_request(4), 1)
    assert prep.segment_state == SegmentState(1, 1, True) and prep.accepted_in_epoch is None
    # Same length as what is on disk: no download (the URL is never opened).
    proxy.accept_recovery(make_request(5), prep.segment_state, "file:///dev/null")
    proxy.new_epoch(JID, FAKE_NSINFO, 2)
    prep = proxy.prepare_recovery(make_request(1, epoch=2), 1)
    assert prep.accepted_in_epoch == 1 and prep.segment_state.end_txid == 1
    with pytest.raises(IOException, match="epoch 1 is less than the last promised epoch 2"):
        proxy.prepare_recovery(make_request(6), 1)
    with pytest.raises(IOException, match="epoch 1 is less than the last promised epoch 2"):
        proxy.accept_recovery(make_request(7), prep.segment_state, "file:///dev/null")


@pytest.mark.parametrize("jid", ["", "a/b", ".x", "../x", ".."])
def test_bad_journal_ids_are_refused_over_rpc(jn, proxy, tmp_path, jid):
    with pytest.raises(IllegalArgumentException, match="bad journal id"):
        proxy.is_formatted(jid)
    with pytest.raises(IllegalArgumentException, match="bad journal id"):
        proxy.format(jid, FAKE_NSINFO)
    assert sorted(os.listdir(tmp_path / "jn")) == []
    assert not (tmp_path / "x").exists()
    assert proxy.is_formatted("fine") is False  # the server still serves everyone else


def test_rejected_rpcs_leave_the_journal_byte_identical(jn, proxy, tmp_path):
    journal_dir = tmp_path / "jn" / JID
    proxy.format(JID, FAKE_NSINFO)
    proxy.new_epoch(JID, FAKE_NSINFO, 2)
    proxy.start_log_segment(make_request(1, epoch=2), 1, LV)
    proxy.journal(make_request(2, epoch=2, committed_txid=0), 1, 1, 3, create_txn_data(1, 3))
    proxy.journal(make_request(3, epoch=2, committed_txid=3), 1, 4, 1, create_txn_data(4, 1))
    before = snapshot_files(journal_dir)
    serial = iter(range(10, 1000))
    cases = [
        (
            IOException,
            "less than the last promised epoch",
            lambda: proxy.journal(
                make_request(next(serial), epoch=1, committed_txid=3),
                1,
                5,
                1,
                create_txn_data(5, 1),
            ),
        ),
        (
            JournalOutOfSyncException,
            "was not higher than prior highest IPC serial",
            lambda: proxy.journal(
                make_request(3, epoch=2, committed_txid=3), 1, 5, 1, create_txn_data(5, 1)
            ),
        ),
        (
            IllegalArgumentException,
            "move committed txid backward",
            lambda: proxy.heartbeat(make_request(next(serial), epoch=2, committed_txid=1)),
        ),
        (
            JournalOutOfSyncException,
            "Can't write txid 7 expecting nextTxId=5",
            lambda: proxy.journal(
                make_request(next(serial), epoch=2, committed_txid=3),
                1,
                7,
                1,
                create_txn_data(7, 1),
            ),
        ),
        (
            IOException,
            "Incompatible namespaceID",
            lambda: proxy.new_epoch(JID, NamespaceInfo(999, "mycluster", "bp"), 5),
        ),
        (
            JournalOutOfSyncException,
            "but only written up to txid 4",
            lambda: proxy.finalize_log_segment(
                make_request(next(serial), epoch=2, committed_txid=3), 1, 9
            ),
        ),
        (
            JournalOutOfSyncException,
            "no segment open",
            lambda: proxy.journal(
                make_request(next(serial), epoch=2, committed_txid=3),
                1,
                5,
                1,
                create_txn_data(5, 1),
            ),
        ),
        (
            JournalNotFormattedException,
            "not formatted",
            lambda: proxy.new_epoch("never-formatted", FAKE_NSINFO, 1),
        ),
    ]
    for exc_type, message, call in cases:
        with pytest.raises(exc_type, match=message):
            call()
        assert snapshot_files(journal_dir) == before, message


def test_fail_to_start_with_bad_config(tmp_path):
    for edits_dir, message in [
        ("relative/dir", "should be an absolute path"),
        (str(tmp_path / "a-file"), "Not a directory"),
        (str(tmp_path / "a-file" / "below"), "Cannot create directory"),
    ]:
        (tmp_path / "a-file").write_text("x")
        node = JournalNode(node_conf(edits_dir))
        with pytest.raises((IOException, IllegalArgumentException), match=message):
            node.start()
        node.stop()


def test_a_resolver_that_is_no_domain_name_resolver_refuses_to_start(tmp_path):
    conf = node_conf(tmp_path / "jn")
    conf.set("dfs.namenode.edits.qjournals.resolver.impl", "no.such.Resolver")
    with pytest.raises(ConfigurationError, match=r"^dfs.namenode.edits.qjournals.resolver.impl"):
        JournalNode(conf)


def test_startup_fails_cleanly_when_the_port_is_in_use(tmp_path):
    blocker = socket.socket()
    blocker.bind(("127.0.0.1", 0))
    blocker.listen()
    port = blocker.getsockname()[1]
    try:
        conf = node_conf(tmp_path / "jn")
        conf.set("dfs.journalnode.rpc-address", f"127.0.0.1:{port}")
        node = JournalNode(conf)
        # The message names the address and its key (the HTTP one was bound already).
        address = f"127.0.0.1:{port} (dfs.journalnode.rpc-address)"
        with pytest.raises(IOException, match=f"^Port in use: {re.escape(address)}: "):
            node.start()
        assert node.is_stopped
        assert node.http_server is None or node.http_server.port  # the HTTP server was stopped too
        conf = node_conf(tmp_path / "jn2")
        conf.set("dfs.journalnode.http-address", f"127.0.0.1:{port}")
        address = f"127.0.0.1:{port} (dfs.journalnode.http-address)"
        with pytest.raises(IOException, match=f"^Port in use: {re.escape(address)}: "):
            JournalNode(conf).start()
    finally:
        blocker.close()


@pytest.mark.parametrize("configured,expected", [(10, 10), (-1, 5)])
def test_handler_count(tmp_path, configured, expected):
    conf = node_conf(tmp_path / "jn")
    conf.set("dfs.journalnode.handler.count", str(configured))
    node = JournalNode(conf)
    node.start()
    try:
        assert node.rpc_server.handler_count == expected
    finally:
        node.stop()


def test_per_nameservice_edits_dir(tmp_path):
    conf = node_conf(tmp_path / "default")
    conf.set("dfs.nameservices", "ns1")
    conf.set("dfs.journalnode.edits.dir.ns1", str(tmp_path / "ns1-dir"))
    node = JournalNode(conf)
    try:
        assert node.get_log_dir("j", "ns1") == tmp_path / "ns1-dir" / "j"
        assert node.get_log_dir("j") == tmp_path / "default" / "j"
    finally:
        node.stop()


@pytest.mark.parametrize("processes", [False, True])
def test_mini_journal_cluster(tmp_path, processes):
    with MiniJournalCluster(3, base_dir=tmp_path, processes=processes) as cluster:
        uri = cluster.quorum_journal_uri(JID)
        ports = [
            int(part.rsplit(":", 1)[1])
            for part in uri[len("qjournal://") :].split("/")[0].split(";")
        ]
        assert len(set(ports)) == 3 and all(ports)
        for i in range(3):
            with QJournalProtocolProxy(*cluster.rpc_address(i), timeout_s=30) as p:
                p.format(JID, FAKE_NSINFO)
                assert p.is_formatted(JID)
        assert (cluster.current_dir(0, JID) / "VERSION").exists()
        old_ports = list(cluster.rpc_ports)
        cluster.stop_journal_node(1)
        assert not cluster.is_running(1)
        cluster.restart_journal_node(1)
        assert cluster.rpc_ports == old_ports
        with QJournalProtocolProxy(*cluster.rpc_address(1), timeout_s=30) as p:
            assert p.is_formatted(JID)  # same directory after the restart


def wait_for(condition, timeout_s=30.0, what="condition"):
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def rpc_activity(http_port: int, rpc_port: int) -> dict:
    """The JournalNode's ``RpcActivityForPort<rpc_port>`` bean."""
    qry = f"Hadoop:service=JournalNode,name=RpcActivityForPort{rpc_port}"
    url = f"http://127.0.0.1:{http_port}/jmx?qry={qry}"
    with urllib.request.urlopen(url, timeout=30) as response:
        (bean,) = json.loads(response.read())["beans"]
    return bean


def _write_three_finalized_segments(proxies) -> None:
    """Format, take epoch 1 and write segments 1-3, 4-6 and 7-9 on every node, committed."""
    for p in proxies:
        p.format(JID, FAKE_NSINFO)
        p.new_epoch(JID, FAKE_NSINFO, 1)
    serial = 0
    for start in (1, 4, 7):
        for p in proxies:
            p.start_log_segment(make_request(serial + 1, committed_txid=start - 1), start, LV)
            p.journal(
                make_request(serial + 2, committed_txid=start - 1),
                start,
                start,
                3,
                create_txn_data(start, 3),
            )
            p.finalize_log_segment(
                make_request(serial + 3, committed_txid=start + 2), start, start + 2
            )
        serial += 3
    for p in proxies:  # piggy-back the last committed txid
        p.heartbeat(make_request(serial + 1, committed_txid=9))


def test_syncer_restores_a_deleted_finalized_segment(tmp_path):
    """TestJournalNodeSync.testJournalNodeSync: a finalized segment deleted on one node
    comes back from its peers, and each node's RPC server counted its requests."""
    conf = Configuration()
    conf.set("dfs.journalnode.sync.interval", "100")
    with MiniJournalCluster(3, base_dir=tmp_path, conf=conf) as cluster:
        uri = cluster.quorum_journal_uri(JID)
        cluster.conf.set("dfs.namenode.shared.edits.dir", uri)
        for i in range(3):
            cluster.restart_journal_node(i)
        proxies = [QJournalProtocolProxy(*cluster.rpc_address(i), timeout_s=30) for i in range(3)]
        try:
            _write_three_finalized_segments(proxies)
            victim = cluster.current_dir(0, JID) / "edits_0000000000000000004-0000000000000000006"
            original = (cluster.current_dir(1, JID) / victim.name).read_bytes()
            victim.unlink()
            wait_for(victim.exists, what="the syncer to restore the segment")
            assert victim.read_bytes() == original
            bean = json.loads(
                urllib.request.urlopen(
                    f"http://127.0.0.1:{cluster.http_ports[0]}/jmx?qry=Hadoop:service=JournalNode,name=Journal-{JID}",
                    timeout=30,
                ).read()
            )["beans"][0]
            assert bean["NumEditLogsSynced"] >= 1
            for i in range(3):
                rpc_port = cluster.rpc_address(i)[1]
                activity = rpc_activity(cluster.http_ports[i], rpc_port)
                # 10 calls of the test's own, and node 0's syncer's manifest calls.
                assert activity["RpcQueueTimeNumOps"] >= 10
                assert activity["RpcProcessingTimeNumOps"] == activity["RpcQueueTimeNumOps"]
                assert activity["TotalRequests"] == activity["RpcQueueTimeNumOps"]
                assert activity["NumOpenConnections"] >= 1  # the test's proxy
                assert activity["RpcProcessingTimeAvgTime"] > 0
                assert activity["CallQueueLength"] == 0
                status, prom = http_get_port(cluster.http_ports[i], "/prom")
                assert status == 200
                assert re.search(
                    rf'^rpc_rpc_processing_time_num_ops{{port="{rpc_port}"}} [1-9]',
                    prom.decode(),
                    re.MULTILINE,
                )
        finally:
            for p in proxies:
                p.close()


def test_syncer_downloads_are_throttled_by_edit_log_transfer_bandwidth(tmp_path, monkeypatch):
    """dfs.edit.log.transfer.bandwidthPerSec: the syncer's download goes through Hadoop's
    DataTransferThrottler at that rate (JournalNodeSyncer.getThrottler), every byte of it;
    unset, no throttler at all."""
    from hadoop_qjm.common.http_server import DataTransferThrottler
    from hadoop_qjm.qjournal.server import journal_node_syncer

    made: list[tuple[int, list[int]]] = []

    class Recording(DataTransferThrottler):
        def __init__(self, bandwidth_per_sec: int) -> None:
            super().__init__(bandwidth_per_sec, sleep=lambda s: None)
            self.counted: list[int] = []
            made.append((bandwidth_per_sec, self.counted))

        def throttle(self, num_bytes: int) -> None:
            self.counted.append(num_bytes)
            super().throttle(num_bytes)

    monkeypatch.setattr(journal_node_syncer, "DataTransferThrottler", Recording)
    for bandwidth in ("0", "4096"):
        conf = Configuration()
        conf.set("dfs.journalnode.sync.interval", "100")
        conf.set("dfs.edit.log.transfer.bandwidthPerSec", bandwidth)
        with MiniJournalCluster(3, base_dir=tmp_path / bandwidth, conf=conf) as cluster:
            cluster.conf.set("dfs.namenode.shared.edits.dir", cluster.quorum_journal_uri(JID))
            for i in range(3):
                cluster.restart_journal_node(i)
            proxies = [
                QJournalProtocolProxy(*cluster.rpc_address(i), timeout_s=30) for i in range(3)
            ]
            try:
                _write_three_finalized_segments(proxies)
                name = "edits_0000000000000000004-0000000000000000006"
                victim = cluster.current_dir(0, JID) / name
                victim.unlink()
                wait_for(victim.exists, what="the syncer to restore the segment")
            finally:
                for p in proxies:
                    p.close()
        if bandwidth == "0":
            assert made == []
    ((rate, counted),) = made
    assert rate == 4096 and sum(counted) == victim.stat().st_size


# ---- when a journal gets its syncer (TestJournalNode's testJournalNodeSyncer* cases) ---------

SYNC_JID = "test-journalid-ns1"
SHARED_EDITS = "dfs.namenode.shared.edits.dir"


@contextlib.contextmanager
def syncing_node(tmp_path, settings: dict[str, str], resolver=None):
    """A started JournalNode with ``dfs.journalnode.enable.sync`` and ``settings``, whose
    host names ``resolver`` (no DNS: a StaticDomainNameResolver; None: the system's)
    resolves."""
    conf = node_conf(tmp_path / "jn")
    conf.set("dfs.journalnode.enable.sync", True)
    for key, value in settings.items():
        conf.set(key, value)
    node = JournalNode(conf) if resolver is None else JournalNode(conf, resolver=resolver)
    node.start()
    try:
        yield node
    finally:
        node.stop()


def syncer_state(node, jid=SYNC_JID) -> tuple[bool, bool]:
    """(syncer started, tried with a nameservice id): Hadoop's getJournalSyncerStatus and
    getTriedJournalSyncerStartedwithnsId."""
    return node.journal_syncer_started(jid), node.tried_journal_syncer_with_ns_id(jid)


def resolving(*names: str) -> StaticDomainNameResolver:
    """Hadoop's setupStaticHostResolution: each name resolves to an address of its own."""
    return StaticDomainNameResolver({name: [f"10.0.0.{i + 1}"] for i, name in enumerate(names)})


def test_journal_node_syncer_not_start_when_sync_disabled(tmp_path):
    uri = f"qjournal://jn0:9900;jn1:9901/{SYNC_JID}"
    settings = {SHARED_EDITS: uri, "dfs.journalnode.enable.sync": "false"}
    with syncing_node(tmp_path, settings, resolving("jn0", "jn1")) as node:
        node.get_or_create_journal(SYNC_JID)
        assert syncer_state(node) == (False, False)
        node.get_or_create_journal(SYNC_JID, "mycluster")
        assert syncer_state(node) == (False, False)


def test_journal_node_syncer_not_start_when_sync_enabled_incorrect_uri(tmp_path, caplog):
    """The shared edits hosts do not resolve: no syncer, and the reason logged once."""
    uri = f"qjournal://journalnode0:9900;journalnode1:9901/{SYNC_JID}"
    with syncing_node(tmp_path, {SHARED_EDITS: uri}, StaticDomainNameResolver()) as node:
        with caplog.at_level(logging.INFO, logger="hadoop_qjm.qjournal.server"):
            node.get_or_create_journal(SYNC_JID)
            assert syncer_state(node) == (False, False)
            why = [r.getMessage() for r in caplog.records if "could not parse" in r.getMessage()]
            assert len(why) == 1 and "UnknownHostException: journalnode0" in why[0]
            node.get_or_create_journal(SYNC_JID, "mycluster")
            assert syncer_state(node) == (False, True)
            node.get_or_create_journal(SYNC_JID, "mycluster")  # tried: never again
            why = [r.getMessage() for r in caplog.records if "could not parse" in r.getMessage()]
            assert len(why) == 2


def test_journal_node_syncer_not_start_when_sync_enabled(tmp_path):
    uri = f"qjournal://jn0:9900;jn1:9901/{SYNC_JID}"
    resolver = StaticDomainNameResolver()
    with syncing_node(tmp_path, {SHARED_EDITS: uri}, resolver) as node:
        node.get_or_create_journal(SYNC_JID)
        assert syncer_state(node) == (False, False)
        resolver.names.update(resolving("jn0", "jn1").names)
        node.get_or_create_journal(SYNC_JID, "mycluster")
        assert syncer_state(node) == (True, True)
        assert node.syncer_status(SYNC_JID)["Peers"] == ["jn0:9900", "jn1:9901"]


def test_journal_node_syncwith_federation_type_config_with_name_service_id(tmp_path):
    """Only ``dfs.namenode.shared.edits.dir.<nsId>``: a journal created without a
    nameservice id gets its syncer when a later call names ns1."""
    settings = {
        f"{SHARED_EDITS}.ns1": f"qjournal://journalnode0:9900;journalnode0:9901/{SYNC_JID}",
        f"{SHARED_EDITS}.ns2": "qjournal://journalnode0:9900;journalnode0:9901/test-journalid-ns2",
        "dfs.nameservices": "ns1,ns2",
    }
    with syncing_node(tmp_path, settings, resolving("journalnode0", "journalnode1")) as node:
        node.get_or_create_journal(SYNC_JID)
        assert syncer_state(node) == (False, False)
        node.get_or_create_journal(SYNC_JID, "ns1")
        assert syncer_state(node) == (True, True)


def test_journal_node_syncwith_federation_type_config_with_namenode_id(tmp_path):
    """Only ``dfs.namenode.shared.edits.dir.<nsId>.<nnId>``, the same for both NameNodes."""
    uri = f"qjournal://journalnode0:9900;journalnode1:9901/{SYNC_JID}"
    settings = {
        "dfs.ha.namenodes.ns1": "nn1,nn2",
        f"{SHARED_EDITS}.ns1.nn1": uri,
        f"{SHARED_EDITS}.ns1.nn2": uri,
    }
    with syncing_node(tmp_path, settings, resolving("journalnode0", "journalnode1")) as node:
        node.get_or_create_journal(SYNC_JID)
        assert syncer_state(node) == (False, False)
        node.get_or_create_journal(SYNC_JID, "ns1")
        assert syncer_state(node) == (True, True)


@pytest.mark.parametrize("own_host", ["127.0.0.1", "0.0.0.0"])
def test_journal_node_excludes_self_wild_card(tmp_path, own_host):
    """TestJournalNodeSync's testJournalNodeExcludesSelf / …SelfWildCard: this node's own
    entry, also as ``0.0.0.0:<its port>``, is not a peer; another port on it is."""
    with syncing_node(tmp_path, {}) as node:  # the real resolver: addresses only
        port = node.rpc_address[1]
        other = port + 1 if port < 65535 else port - 1
        uri = f"qjournal://{own_host}:{port};127.0.0.2:9901;127.0.0.1:{other}/{SYNC_JID}"
        node.conf.set(SHARED_EDITS, uri)
        node.get_or_create_journal(SYNC_JID)
        assert node.syncer_status(SYNC_JID)["Peers"] == ["127.0.0.2:9901", f"127.0.0.1:{other}"]


SEGMENT_1_3 = "edits_0000000000000000001-0000000000000000003"


def peer_holding_segment_1_3(tmp_path, committed_here: int, **settings: str):
    """Node 1 holds the finalized segment 1-3, node 0 (committed txid ``committed_here``)
    nothing yet. Yields (cluster, node 0's syncer, a proxy to node 0)."""
    return peer_holding_segments(tmp_path, committed_here, ((1, 3),), **settings)


def test_syncer_never_installs_a_damaged_copy(tmp_path, caplog):
    """A peer's finalized copy with a flipped byte (bit rot) is downloaded, fails its
    verification and is not installed; nothing is left in the sync dir; the same round
    installs an intact copy once the peer holds one."""
    with peer_holding_segment_1_3(
        tmp_path,
        3,
        **{"dfs.journalnode.scrub.enabled": "false"},  # the damage stays
    ) as (cluster, syncer, _):
        name = SEGMENT_1_3
        peer_copy = cluster.current_dir(1, JID) / name
        intact = peer_copy.read_bytes()
        flip_byte_in_op(peer_copy, 2)
        with caplog.at_level(logging.WARNING, logger="hadoop_qjm.qjournal.server"):
            assert syncer.sync_once() == 0
        assert not (cluster.current_dir(0, JID) / name).exists()
        assert any(r.getMessage().startswith(f"Not installing {name} from") for r in caplog.records)
        sync_dir = cluster.journal_node(0).get_or_create_journal(JID).storage.edits_sync_dir
        assert list(sync_dir.iterdir()) == []
        peer_copy.write_bytes(intact)
        assert syncer.sync_once() == 1
        assert (cluster.current_dir(0, JID) / name).read_bytes() == intact


def test_syncer_never_installs_an_uncommitted_segment(tmp_path, caplog):
    with peer_holding_segment_1_3(tmp_path, 0) as (cluster, syncer, p0):
        journal0 = cluster.journal_node(0).get_or_create_journal(JID)
        # Node 0's committed txid is 0: several rounds pass, nothing is installed.
        for _ in range(3):
            assert syncer.sync_once() == 0
        assert not (cluster.current_dir(0, JID) / SEGMENT_1_3).exists()
        p0.heartbeat(make_request(2, committed_txid=3))
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="hadoop_qjm.qjournal.server"):
            assert syncer.sync_once() == 1
        # The segment's size and the download's rate.
        size = format_bytes((cluster.current_dir(1, JID) / SEGMENT_1_3).stat().st_size)
        synced = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Synced")]
        assert len(synced) == 1 and re.fullmatch(
            rf"Synced edits_0+1-0+3 from \S+:\d+: {re.escape(size)} in \d+s \(.*B/s\)",
            synced[0],
        ), synced
        assert journal0.get_edit_log_manifest(0).logs[0].end_txid == 3


def test_syncer_asks_a_restarted_peer_on_a_fresh_connection(tmp_path):
    """Issue 33 item 6: the syncer keeps its RPC connection to a peer between rounds; the
    peer restarts (on the same address), closing it. The next round's manifest call finds
    it closed before any answer and is sent once more on a new connection, so the round
    still installs the peer's segment instead of failing for a whole sync interval."""
    with peer_holding_segment_1_3(tmp_path, 0) as (cluster, syncer, p0):
        assert syncer.sync_once() == 0  # uncommitted here: nothing, but the connection is made
        cluster.restart_journal_node(1)
        p0.heartbeat(make_request(2, committed_txid=3))
        assert syncer.sync_once() == 1
        assert (cluster.current_dir(0, JID) / SEGMENT_1_3).exists()


# ---- format never wipes a journal a writer uses (issue 33) ---------------------------------------
def test_format_force_is_refused_on_every_node_while_a_writer_is_live(tmp_path):
    """``namenode -format -force`` from another host while the active writes: every node
    refuses (one line, nothing changed on any node) and the writer goes on; once the writer
    stopped and its segment went quiet for the window, -force formats and says what it
    destroyed. The nodes' clock moves only when told (no waiting for the window)."""
    clock = FakeClock(time.time())
    conf = Configuration()
    with MiniJournalCluster(3, tmp_path, node_kwargs={"clock": clock}) as cluster:
        uri = cluster.quorum_journal_uri(JID)
        writer = formatted_writer(conf, uri)
        formatter = QuorumJournalManager(conf, uri, FAKE_NSINFO)
        try:
            write_segment(writer, 1, 3, True)
            stream = write_segment(writer, 4, 2, False)
            writer.loggers.wait_for_all_pending_calls()  # the third node has them too
            before = [snapshot_files(cluster.journal_dir(i, JID)) for i in range(3)]

            other = NamespaceInfo(6789, "other-cluster", "bp", 0)
            with pytest.raises(JournalInUseException) as info:
                formatter.format(other, force=True)
            message = str(info.value)
            assert "\n" not in message
            assert message.startswith("Not formatting: 3 of 3 JournalNodes have a live writer")
            assert message.count("in use by the writer of epoch 1 at 127.0.0.1:") == 3
            assert message.count("still connected, last write") == 3
            assert message.endswith(
                "nothing was changed on any JournalNode; stop the NameNodes first"
            )
            assert [snapshot_files(cluster.journal_dir(i, JID)) for i in range(3)] == before

            write_txns(stream, 6, 1)  # the writer did not notice
            stream.close()
            writer.close()  # the NameNode stops; segment 4 stays in progress on every node

            def refused_only_for_the_open_segment() -> bool:
                checks = [cluster.journal_node(i).open_journal(JID).can_format() for i in range(3)]
                return all(c.live_writer and "disconnected" in c.live_writer for c in checks)

            wait_until(refused_only_for_the_open_segment, what="the writer's connections to close")
            with pytest.raises(JournalInUseException, match="disconnected, last write"):
                formatter.format(other, force=True)

            clock.advance(60)  # dfs.journalnode.format.live-writer.window.ms's default
            destroyed = formatter.format(other, force=True)
            assert destroyed is not None
            assert destroyed.startswith(
                "Formatting destroys 6 segments (18 txns) on 3 JournalNodes"
            )
            for i in range(3):
                journal = cluster.journal_node(i).open_journal(JID)
                assert journal.storage.storage_info.namespace_id == 6789
                assert not [p for p in journal.storage.current_dir.iterdir() if "edits" in p.name]
        finally:
            formatter.close()
            writer.close()


class FormatAfterTheFirst(IPCLoggerChannel):
    """Sends format to every node but the first only once the first has answered: the
    answers arrive one after the other, as from nodes at different distances."""

    first: Future | None = None

    def __init__(self, conf, ns_info, journal_id, name_service_id, address) -> None:
        super().__init__(conf, ns_info, journal_id, address, name_service_id=name_service_id)

    def format(self, ns_info, force=False):
        if FormatAfterTheFirst.first is None:
            FormatAfterTheFirst.first = super().format(ns_info, force)
            return FormatAfterTheFirst.first
        result: Future = Future()

        def send(_) -> None:
            inner = IPCLoggerChannel.format(self, ns_info, force)
            inner.add_done_callback(
                lambda f: (
                    result.set_exception(f.exception())
                    if f.exception() is not None
                    else result.set_result(f.result())
                )
            )

        FormatAfterTheFirst.first.add_done_callback(send)
        return result


def test_a_format_all_three_nodes_refuse_counts_and_names_each(tmp_path, monkeypatch):
    """Issue 33 item 14: all three refused (not empty, no -force) and the message said
    "1 exceptions thrown": the client stopped at the first failure."""
    monkeypatch.setattr(FormatAfterTheFirst, "first", None)
    conf = Configuration()
    with MiniJournalCluster(3, tmp_path) as cluster:
        uri = cluster.quorum_journal_uri(JID)
        writer = formatted_writer(conf, uri)
        try:
            write_segment(writer, 1, 3, True)
            writer.loggers.wait_for_all_pending_calls()  # the slowest node finalized it too
        finally:
            writer.close()
        wait_until(
            lambda: (
                not any(
                    cluster.journal_node(i).open_journal(JID).can_format().live_writer
                    for i in range(3)
                )
            ),
            what="the writer's connections to close",
        )
        formatter = QuorumJournalManager(conf, uri, FAKE_NSINFO, logger_factory=FormatAfterTheFirst)
        try:
            with pytest.raises(QuorumException) as info:
                formatter.format(FAKE_NSINFO)
        finally:
            formatter.close()
    message = str(info.value)
    assert "Could not format one or more JournalNodes. 3 exceptions thrown:" in message
    for i in range(3):
        host, port = cluster.rpc_address(i)
        assert f"{host}:{port}: Can't format the storage directory" in message


def test_service_level_authorization_of_qjournal_protocol(tmp_path, monkeypatch):
    """hadoop.security.authorization=true: only security.qjournal.service.protocol.acl's
    users may call QJournalProtocol (here over plain TCP: the user the client claims);
    the refusal is Hadoop's AuthorizationException and the journal is untouched."""
    conf = node_conf(tmp_path / "jn")
    conf.set("hadoop.security.authorization", "true")
    conf.set("security.qjournal.service.protocol.acl", "hdfs")
    node = JournalNode(conf)
    node.start()
    try:
        port = node.rpc_address[1]
        monkeypatch.setenv("HADOOP_USER_NAME", "alice")
        with QJournalProtocolProxy("127.0.0.1", port, timeout_s=30) as alice:
            with pytest.raises(AuthorizationException) as e:
                alice.format(JID, FAKE_NSINFO)
        assert str(e.value) == (
            "User alice (auth:SIMPLE) is not authorized for protocol interface "
            "org.apache.hadoop.hdfs.qjournal.protocol.QJournalProtocol: denied by configured ACL"
        )
        assert not (tmp_path / "jn" / JID).exists()
        monkeypatch.setenv("HADOOP_USER_NAME", "hdfs")
        with QJournalProtocolProxy("127.0.0.1", port, timeout_s=30) as hdfs:
            hdfs.format(JID, FAKE_NSINFO)
            assert hdfs.is_formatted(JID)
    finally:
        node.stop()
