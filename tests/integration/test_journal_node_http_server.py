"""The JournalNode's HTTP server (JournalNodeHttpServer) on loopback: /getJournal exactly
as GetJournalEditServlet, /metrics, /jmx (TestJournalNodeMXBean,
TestJournalNode#testHttpServer), the status page, and the server's own hygiene (405, timeouts, connection limit, stop() freeing port and threads)."""

from __future__ import annotations

import hashlib
import http.client
import json
import socket
import threading
import urllib.parse

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.fs_edit_log_op import edit_log_header
from hadoop_qjm.qjournal.protocol.rules import validate_journal_id
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.qjournal.server.journal_metrics import JournalNodeMetrics
from hadoop_qjm.qjournal.server.journal_node_http_server import (
    DataTransferThrottler,
    JournalNodeHttpServer,
    journals_status,
    make_server_socket,
)
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, create_txn_data, make_request

LV = CURRENT_LAYOUT_VERSION
FINALIZED = "edits_0000000000000000001-0000000000000000003"
IN_PROGRESS = "edits_inprogress_0000000000000000004"


class FakeJournalNode:
    """What JournalNodeHttpServer needs of a JournalNode, around real Journals."""

    def __init__(self, conf: Configuration, edits_dir) -> None:
        self.conf = conf
        self.edits_dir = edits_dir
        self.metrics = JournalNodeMetrics()
        self.start_time_ms = 1_700_000_000_000
        self.version = "0.1.0, r0"
        self.rpc_address = ("127.0.0.1", 8485)
        self._journals: dict[str, Journal] = {}

    def add_journal(self, jid: str, formatted: bool = True) -> Journal:
        journal = Journal(self.conf, self.edits_dir / jid, jid, metrics=self.metrics)
        if formatted:
            journal.format(FAKE_NSINFO)
        self._journals[jid] = journal
        return journal

    def get_journal_if_exists(self, jid: str) -> Journal | None:
        validate_journal_id(jid)
        return self._journals.get(jid)

    def journals(self) -> dict[str, Journal]:
        return dict(self._journals)

    def journal_dirs_on_disk(self) -> list[str]:
        return sorted(p.name for p in self.edits_dir.iterdir() if p.is_dir())

    def cluster_ids(self) -> list[str]:
        return ["mycluster"]

    def storage_infos(self) -> list[str]:
        return ["{LayoutVersion=-67, ClusterId=mycluster, NamespaceId=12345, CreationTime=0}"]

    def syncer_status(self, jid: str) -> dict[str, object]:
        return {"State": "running", "Peers": ["127.0.0.1:1"], "LastRoundTime": 0}

    def close(self) -> None:
        for journal in self._journals.values():
            journal.close()


def write_segments(journal: Journal) -> None:
    """edits 1-3 finalized, then edits_inprogress_4 holding txns 4-5 (two batches)."""
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
    journal.finalize_log_segment(make_request(3), 1, 3)
    journal.start_log_segment(make_request(4), 4, LV)
    journal.journal(make_request(5), 4, 4, 2, create_txn_data(4, 2))


@pytest.fixture
def edits_dir(tmp_path):
    d = tmp_path / "jn"
    d.mkdir()
    return d


@pytest.fixture
def jn(edits_dir):
    node = FakeJournalNode(Configuration(), edits_dir)
    write_segments(node.add_journal(JID))
    yield node
    node.close()


@pytest.fixture
def server(jn):
    srv = JournalNodeHttpServer(jn, "127.0.0.1", 0)
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def get(server, path: str, method: str = "GET", body: bytes | None = None):
    """(status, headers, body) of one request on a fresh connection."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request(method, path, body=body)
        resp = conn.getresponse()
        return resp.status, resp.headers, resp.read()
    finally:
        conn.close()


def get_journal(server, jid=JID, txid="1", **extra):
    params = {"jid": jid, "segmentTxId": txid, **extra}
    query = urllib.parse.urlencode({k: v for k, v in params.items() if v is not None})
    return get(server, f"/getJournal?{query}")


# ---- /getJournal ------------------------------------------------------------------------------
def test_finalized_segment_downloads_as_exactly_its_bytes(server, jn):
    status, headers, body = get_journal(server)
    assert status == 200
    path = jn.journals()[JID].storage.current_dir / FINALIZED
    assert body == path.read_bytes() == edit_log_header(LV) + create_txn_data(1, 3)
    assert int(headers["Content-Length"]) == len(body)
    assert headers["Content-Disposition"] == f"attachment; filename={FINALIZED}"
    assert headers["X-Image-Edits-Name"] == FINALIZED
    # The md5 finalizeLogSegment kept from the bytes it checked (as Hadoop's servlet sends
    # a "<file>.md5"); without the file, none.
    assert headers["X-MD5-Digest"] == hashlib.md5(body).hexdigest()
    (path.parent / (FINALIZED + ".md5")).unlink()
    status, headers, _ = get_journal(server)
    assert status == 200 and "X-MD5-Digest" not in headers


def test_head_sends_the_headers_only(server):
    status, headers, body = get(server, f"/getJournal?jid={JID}&segmentTxId=1", method="HEAD")
    assert status == 200 and body == b""
    assert int(headers["Content-Length"]) == len(edit_log_header(LV) + create_txn_data(1, 3))


def test_in_progress_segment_unless_in_progress_ok_is_literally_false(server, jn):
    on_disk = (jn.journals()[JID].storage.current_dir / IN_PROGRESS).read_bytes()
    for flag in (None, "true", "False", ""):
        status, headers, body = get_journal(server, txid="4", inProgressOk=flag)
        assert status == 200, flag
        assert body == on_disk  # padding included
        assert headers["X-Image-Edits-Name"] == IN_PROGRESS
        assert "X-MD5-Digest" not in headers
    assert body.startswith(edit_log_header(LV) + create_txn_data(4, 2))
    status, _, body = get_journal(server, txid="4", inProgressOk="false")
    assert status == 404
    assert b"No edit log found starting at txid 4" in body


def test_missing_segment_is_404(server):
    status, headers, body = get_journal(server, txid="99")
    assert status == 404
    assert b"No edit log found starting at txid 99" in body
    assert headers["Content-Type"].startswith("text/plain")


@pytest.mark.parametrize(
    "query",
    [
        "segmentTxId=1",
        f"jid={JID}",
        f"jid={JID}&segmentTxId=abc",
        f"jid={JID}&segmentTxId=1.5",
        f"jid={JID}&segmentTxId=",
        f"jid={JID}&segmentTxId=99999999999999999999",
        f"jid={JID}&segmentTxId=1_0",
    ],
)
def test_missing_or_malformed_parameters_are_400(server, query):
    assert get(server, f"/getJournal?{query}")[0] == 400


@pytest.mark.parametrize("jid", ["", "a%2Fb", ".x", "..", "..%2Fx", "..%2F..%2Fjn%2F" + JID])
def test_bad_journal_ids_are_400_and_never_leave_the_edits_dir(server, jn, edits_dir, jid):
    # A journal outside the edits dir that a traversal would reach.
    outside = edits_dir.parent / "x" / "current"
    outside.mkdir(parents=True, exist_ok=True)
    (outside / FINALIZED).write_bytes(b"secret")
    status, _, body = get(server, f"/getJournal?jid={jid}&segmentTxId=1")
    assert status == 400
    assert b"bad journal id" in body and b"secret" not in body


def test_unknown_journal_is_404_and_creates_nothing(server, edits_dir):
    status, _, body = get_journal(server, jid="no-such-journal")
    assert status == 404
    assert not (edits_dir / "no-such-journal").exists()


@pytest.mark.parametrize(
    ("storage_info", "expected"),
    [
        (f"{LV}:12345:0:mycluster", 200),
        ("-60:12345:99:mycluster", 200),  # only nsId and clusterId are compared
        (f"{LV}:54321:0:mycluster", 403),
        (f"{LV}:12345:0:othercluster", 403),
        ("garbage", 400),
        ("1:2:3", 400),
        (f"{LV}:notanumber:0:mycluster", 400),
        ("", 400),
    ],
)
def test_storage_info_check(server, storage_info, expected):
    status, _, body = get_journal(server, storageInfo=storage_info)
    assert status == expected, body
    if expected == 403:
        assert b"This node has namespaceId '12345' and clusterId 'mycluster'" in body


def test_storage_info_of_an_unformatted_journal_is_403(server, jn):
    jn.add_journal("blank", formatted=False)
    assert get_journal(server, jid="blank", storageInfo=f"{LV}:12345:0:mycluster")[0] == 403
    assert get_journal(server, jid="blank")[0] == 404


def test_unexpected_error_is_500_without_a_traceback(server, jn, monkeypatch):
    def broken(*_args):
        raise OSError("disk on fire")

    monkeypatch.setattr(jn.journals()[JID], "open_segment_for_read", broken)
    status, _, body = get_journal(server)
    assert status == 500
    assert body.startswith(b"getedit failed. OSError: disk on fire")
    assert b"Traceback" not in body


def test_in_progress_download_sends_the_size_at_open_time(server, jn, monkeypatch):
    """The writer appends after the file was opened: exactly the bytes it had are promised."""
    journal = jn.journals()[JID]
    original = journal.open_segment_for_read
    opened_sizes = []

    def open_then_append(txid, in_progress_ok):
        opened = original(txid, in_progress_ok)
        opened_sizes.append(opened[2])
        journal.journal(make_request(6), 4, 6, 2, create_txn_data(6, 2))
        return opened

    monkeypatch.setattr(journal, "open_segment_for_read", open_then_append)
    status, headers, body = get_journal(server, txid="4")
    assert status == 200
    assert len(body) == int(headers["Content-Length"]) == opened_sizes[0]
    assert body.startswith(edit_log_header(LV) + create_txn_data(4, 2))


def test_segment_truncated_while_sent_drops_the_connection(server, jn, monkeypatch):
    """Content-Length is never a lie: a short body ends in a closed connection."""
    journal = jn.journals()[JID]
    original = journal.open_segment_for_read

    def open_then_truncate(txid, in_progress_ok):
        opened = original(txid, in_progress_ok)
        with open(journal.storage.current_dir / opened[1], "r+b") as f:
            f.truncate(10)
        return opened

    monkeypatch.setattr(journal, "open_segment_for_read", open_then_truncate)
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        conn.request("GET", f"/getJournal?jid={JID}&segmentTxId=4")
        resp = conn.getresponse()
        assert resp.status == 200
        with pytest.raises(http.client.IncompleteRead):
            resp.read()
    finally:
        conn.close()


def test_http_transfer_client_downloads_from_the_server(server, jn, tmp_path):
    from hadoop_qjm.common.http_transfer import download_to_file

    target = tmp_path / "downloaded"
    info = urllib.parse.quote(FAKE_NSINFO.storage_info().to_colon_separated_string())
    url = f"{server.uri}/getJournal?jid={JID}&segmentTxId=1&storageInfo={info}"
    calls: list[tuple[int, int]] = []
    size = download_to_file(url, target, 30, progress=lambda *call: calls.append(call))
    assert size == target.stat().st_size
    assert target.read_bytes() == (jn.journals()[JID].storage.current_dir / FINALIZED).read_bytes()
    # progress(received, length) after every chunk, ending at the whole length.
    assert calls and calls[-1] == (size, size)
    assert all(length == size for _, length in calls)
    assert [r for r, _ in calls] == sorted({r for r, _ in calls})


def test_throttled_download_is_still_exact(jn):
    jn.conf.set("dfs.image.transfer.bandwidthPerSec", str(64 * 1024 * 1024))
    srv = JournalNodeHttpServer(jn, "127.0.0.1", 0)
    srv.start()
    try:
        assert srv.new_throttler() is not None
        status, _, body = get_journal(srv)
        assert status == 200 and body == edit_log_header(LV) + create_txn_data(1, 3)
    finally:
        srv.stop()


@pytest.fixture
def real_node(tmp_path):
    """A real (not started) JournalNode: get_journal_if_exists is the lead's, not a fake's."""
    from hadoop_qjm.qjournal.server.journal_node import JournalNode

    conf = Configuration()
    (tmp_path / "edits").mkdir()
    conf.set("dfs.journalnode.edits.dir", str(tmp_path / "edits"))
    conf.set("dfs.journalnode.enable.sync", "false")
    node = JournalNode(conf)
    srv = JournalNodeHttpServer(node, "127.0.0.1", 0)
    srv.start()
    try:
        yield node, srv, tmp_path / "edits"
    finally:
        srv.stop()
        node.stop()


def test_real_journal_node_never_creates_a_journal_dir(real_node):
    _node, srv, edits = real_node
    for jid in ("unknown", "..", "a%2Fb"):
        assert get_journal(srv, jid=jid)[0] in (400, 404)
    assert not (edits / "unknown").exists() and not (edits / "a").exists()


def test_real_journal_node_serves_a_journal_dir_found_on_disk(real_node):
    node, srv, edits = real_node
    offline = Journal(node.conf, edits / JID, JID)
    offline.format(FAKE_NSINFO)
    write_segments(offline)
    offline.close()
    status, _, body = get_journal(srv)
    assert status == 200 and body == (edits / JID / "current" / FINALIZED).read_bytes()


# ---- /metrics, /jmx, / ------------------------------------------------------------------------
def test_metrics_is_prometheus_text(server):
    status, headers, body = get(server, "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    families = {f.name: f for f in text_string_to_metric_families(body.decode())}
    batches = families["journalnode_batches_written"]
    assert any(s.labels.get("journal_id") == JID and s.value == 2 for s in batches.samples)


def beans_of(server, query: str = "") -> list[dict]:
    status, headers, body = get(server, "/jmx" + query)
    assert status == 200 and headers["Content-Type"].startswith("application/json")
    return json.loads(body)["beans"]


def test_jmx_has_journal_node_info_journal_and_jvm_beans(server, jn, edits_dir):
    jn.add_journal("unformatted", formatted=False)
    (edits_dir / "not-loaded").mkdir()
    beans = {b["name"]: b for b in beans_of(server)}
    assert all("modelerType" in b for b in beans.values())
    info = beans["Hadoop:service=JournalNode,name=JournalNodeInfo"]
    assert isinstance(info["JournalsStatus"], str)
    assert json.loads(info["JournalsStatus"]) == {
        JID: {"Formatted": "true"},
        "unformatted": {"Formatted": "false"},
        "not-loaded": {"Formatted": "true"},
    }
    assert info["JournalsStatus"] == journals_status(jn)
    assert info["HostAndPort"] == "127.0.0.1:8485"
    assert info["ClusterIds"] == ["mycluster"]
    assert info["Version"] == "0.1.0, r0"
    assert info["JNStartedTimeInMillis"] == jn.start_time_ms
    assert info["StorageInfos"] == jn.storage_infos()
    journal = beans[f"Hadoop:service=JournalNode,name=Journal-{JID}"]
    assert journal["LastWrittenTxId"] == 5
    assert journal["BatchesWritten"] == 2 and journal["TxnsWritten"] == 5
    assert journal["LastPromisedEpoch"] == 1 and journal["LastWriterEpoch"] == 1
    assert journal["tag.JournalId"] == JID
    # What the status page shows beyond the metrics:
    assert journal["Formatted"] is True and journal["CommittedTxId"] == 0
    assert journal["OpenSegment"] == IN_PROGRESS and journal["SegmentCount"] == 2
    assert [(s["Name"], s["State"]) for s in journal["Segments"]] == [
        (FINALIZED, "finalized"),
        (IN_PROGRESS, "in progress"),
    ]
    assert (
        journal["Segments"][0]["Bytes"] == (edits_dir / JID / "current" / FINALIZED).stat().st_size
    )
    assert journal["Syncer"]["State"] == "running"
    jvm = beans["Hadoop:service=JournalNode,name=JvmMetrics"]
    assert jvm["modelerType"] == "JvmMetrics"
    assert jvm["MemHeapUsedM"] > 0 and jvm["ThreadsRunnable"] >= 1


def test_jmx_contains_jvm_metrics_like_test_http_server(server):
    assert b"Hadoop:service=JournalNode,name=JvmMetrics" in get(server, "/jmx")[2]


def test_jmx_query_filters(server, jn):
    jn.add_journal("second")
    names = [
        b["name"] for b in beans_of(server, "?qry=Hadoop:service=JournalNode,name=JournalNodeInfo")
    ]
    assert names == ["Hadoop:service=JournalNode,name=JournalNodeInfo"]
    names = [b["name"] for b in beans_of(server, "?qry=Hadoop:name=Journal-*,service=JournalNode")]
    assert names == [
        "Hadoop:service=JournalNode,name=Journal-second",
        f"Hadoop:service=JournalNode,name=Journal-{JID}",
    ]
    # JournalNodeInfo, RpcActivityForPort<port>, two Journal-<jid>, JvmMetrics.
    assert len(beans_of(server, "?qry=Hadoop:service=JournalNode,*")) == 5
    assert beans_of(server, "?qry=java.lang:*") == []
    assert beans_of(server, "?qry=Hadoop:service=JournalNode") == []  # name= missing: no match
    status, _, body = get(server, "/jmx?qry=no-colon")
    assert status == 400 and json.loads(body)["result"] == "ERROR"


@pytest.mark.parametrize("path", ["/", "/index.html", "/journalnode.html"])
def test_status_page_is_the_shipped_page_and_its_files_are_served(server, path):
    status, headers, body = get(server, path)
    assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
    page = body.decode()
    assert "<title>JournalNode information</title>" in page
    assert '<link rel="stylesheet" href="/static/hadoop-qjm.css">' in page
    assert "http://" not in page and "https://" not in page  # no CDN: works offline
    for asset, kind in [
        ("/static/hadoop-qjm.css", "text/css"),
        ("/static/qjm-status.js", "text/javascript"),
        ("/journalnode.js", "text/javascript"),
    ]:
        assert f'"{asset}"' in page
        status, headers, body = get(server, asset)
        assert status == 200 and headers["Content-Type"].startswith(kind) and body
        assert headers["Cache-Control"] == "no-cache"
    assert get(server, "/dfshealth.js")[0] == 404  # the NameNode's page is not served here


# ---- the server itself ------------------------------------------------------------------------
def test_other_methods_are_405_and_unknown_paths_404(server):
    for method in ("POST", "PUT", "DELETE"):
        status, headers, _ = get(server, "/getJournal?jid=x&segmentTxId=1", method, b"data")
        assert status == 405 and headers["Allow"] == "GET, HEAD"
    assert get(server, "/nosuchpage")[0] == 404
    assert get(server, "/confx")[0] == 404 and get(server, "/logsx")[0] == 404
    assert get(server, "/getJournal/../jmx")[0] == 404


def test_request_line_too_long_is_414(server):
    assert get(server, "/jmx?qry=" + "a" * 9000)[0] == 414


def test_garbage_request_line_is_400_and_not_echoed(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(b"<script>alert(1)</script>\r\n\r\n")
        reply = b""
        while chunk := sock.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400 ")
    assert b"script" not in reply


def test_too_many_headers_is_431(server):
    headers = "".join(f"X-{i}: y\r\n" for i in range(150)).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(b"GET /jmx HTTP/1.1\r\nHost: x\r\n" + headers + b"\r\n")
        assert sock.recv(4096).startswith(b"HTTP/1.1 431 ")


def test_keep_alive_connection_serves_several_requests(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    try:
        for _ in range(3):
            conn.request("GET", f"/getJournal?jid={JID}&segmentTxId=1")
            resp = conn.getresponse()
            assert resp.status == 200 and resp.read()
    finally:
        conn.close()


def test_idle_client_is_dropped_after_the_socket_timeout(jn):
    srv = JournalNodeHttpServer(jn, "127.0.0.1", 0, socket_timeout_s=0.2)
    srv.start()
    try:
        with socket.create_connection(("127.0.0.1", srv.port), timeout=30) as sock:
            sock.sendall(b"GET /jmx HTTP/1.1\r\n")  # and then nothing more
            assert sock.recv(1024) == b""  # the server hung up on us
    finally:
        srv.stop()


def test_connections_beyond_the_limit_get_503(jn):
    srv = JournalNodeHttpServer(jn, "127.0.0.1", 0, max_connections=1)
    srv.start()
    first = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    try:
        first.request("GET", "/metrics")
        assert first.getresponse().read()  # the connection stays open (keep-alive)
        assert get(srv, "/metrics")[0] == 503
    finally:
        first.close()
        srv.stop()


def server_threads(port: int) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(f"JournalNodeHttpServer-{port}")]


def test_stop_frees_the_port_and_leaves_no_threads(jn):
    srv = JournalNodeHttpServer(jn, "127.0.0.1", 0)
    srv.start()
    port = srv.port
    idle = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        idle.request("GET", "/jmx")
        assert idle.getresponse().read()
        assert server_threads(port)
    finally:
        srv.stop()
        idle.close()
    assert server_threads(port) == []
    srv.stop()  # idempotent
    with make_server_socket("127.0.0.1", port):
        pass


def test_stop_without_start_closes_the_socket(jn):
    srv = JournalNodeHttpServer(jn, "127.0.0.1", 0)
    srv.stop()
    with make_server_socket("127.0.0.1", srv.port):
        pass


def test_uri_and_injected_socket_factory(jn):
    made = []

    def factory(host: str, port: int) -> socket.socket:
        made.append((host, port))
        return make_server_socket("127.0.0.1", 0)  # tests bind loopback only

    srv = JournalNodeHttpServer(jn, "0.0.0.0", 0, socket_factory=factory)
    try:
        assert made == [("0.0.0.0", 0)]
        assert srv.connect_host != "0.0.0.0"
        assert srv.uri == f"http://{srv.connect_host}:{srv.port}"
    finally:
        srv.stop()
    srv = JournalNodeHttpServer(jn, "127.0.0.1", 0)
    try:
        assert srv.uri == f"http://127.0.0.1:{srv.port}"
    finally:
        srv.stop()


def test_throttler_paces_by_period_with_a_fake_clock():
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    throttler = DataTransferThrottler(1000, clock=lambda: now[0], sleep=sleep)
    assert throttler.bytes_per_period == 500
    for _ in range(20):
        throttler.throttle(100)
    assert 1.5 <= now[0] <= 2.0  # 2000 bytes at 1000 B/s, the first period's credit up front
    now[0] += 100.0  # a long pause earns one period of credit, not a burst
    start = now[0]
    for _ in range(10):
        throttler.throttle(100)
    assert now[0] - start >= 0.5
