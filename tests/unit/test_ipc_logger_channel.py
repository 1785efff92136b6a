"""TestIPCLoggerChannel (HADOOP-QJM-DIGEST.md §8) with a hand-written proxy, plus the
channel's other rules from digest §5: RequestInfo, heartbeats, lag, URLs, metrics."""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future

import pytest
from prometheus_client import CollectorRegistry

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION, INVALID_TXID
from hadoop_qjm.common.exceptions import (
    IllegalArgumentException,
    IllegalStateException,
    IOException,
)
from hadoop_qjm.common.remote_edit_log import RemoteEditLog, RemoteEditLogManifest
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.client.executors import DirectExecutor
from hadoop_qjm.qjournal.client.ipc_logger_channel import (
    IPCLoggerChannel,
    UnknownHostException,
    ipc_logger_channel_factory,
)
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalOutOfSyncException,
    LoggerTooFarBehindException,
)
from hadoop_qjm.qjournal.protocol.messages import GetEditLogManifestResponse, SegmentState
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO
from tests.unit.qjm_client_fakes import FakeClock, FakeProxy

JID = "test-journalid"
FAKE_DATA = bytes(4096)
LIMIT_QUEUE_SIZE_MB = 1
LIMIT_QUEUE_SIZE_BYTES = LIMIT_QUEUE_SIZE_MB * 1024 * 1024


@pytest.fixture
def proxy() -> FakeProxy:
    return FakeProxy()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


def make_channel(proxy: FakeProxy, registry: CollectorRegistry, *, direct=False, clock=None, **kw):
    conf = Configuration()
    conf.set("dfs.qjournal.queued-edits.limit.mb", LIMIT_QUEUE_SIZE_MB)
    extra = {"executor": DirectExecutor(), "parallel_executor": DirectExecutor()} if direct else {}
    if clock is not None:
        extra["clock"] = clock
    ch = IPCLoggerChannel(
        conf,
        FAKE_NSINFO,
        JID,
        ("127.0.0.1", 8485),
        proxy_factory=lambda host, port: proxy,
        metrics_registry=registry,
        **extra,
        **kw,
    )
    return ch


@pytest.fixture
def ch(proxy, registry):
    channel = make_channel(proxy, registry)
    channel.set_epoch(1)
    yield channel
    channel.close()


def test_simple_call(ch: IPCLoggerChannel, proxy: FakeProxy) -> None:
    ch.send_edits(1, 1, 3, FAKE_DATA).result(timeout=60)
    [(req, segment, first, n, records)] = proxy.calls_to("journal")
    assert (segment, first, n) == (1, 1, 3)
    assert records is FAKE_DATA  # sent as given, no copy
    assert (req.journal_id, req.epoch, req.ipc_serial_number) == (JID, 1, 0)
    assert req.committed_txid == INVALID_TXID


def test_queue_limiting(ch: IPCLoggerChannel, proxy: FakeProxy) -> None:
    """Once the queue holds the limit, more edits fail at once; it drains after."""
    release = threading.Event()
    proxy.gate["journal"] = release  # the node does not answer until released
    num_to_queue = LIMIT_QUEUE_SIZE_BYTES // len(FAKE_DATA)
    futures = [ch.send_edits(1, i, 1, FAKE_DATA) for i in range(1, num_to_queue + 1)]
    assert num_to_queue == 256
    assert ch.queued_edits_size == LIMIT_QUEUE_SIZE_BYTES
    assert ch.queued_edits_txns == 256

    over = ch.send_edits(1, num_to_queue + 1, 1, FAKE_DATA)
    assert over.done()
    assert isinstance(over.exception(), LoggerTooFarBehindException)
    assert ch.queued_edits_size == LIMIT_QUEUE_SIZE_BYTES  # the refused batch is not counted

    release.set()
    for future in futures:
        future.result(timeout=60)
    ch.wait_for_all_pending_calls()  # the last release callback has run
    assert ch.queued_edits_size == 0
    assert ch.queued_edits_txns == 0


def test_a_batch_larger_than_the_limit_goes_through_an_empty_queue(proxy, registry) -> None:
    ch = make_channel(proxy, registry, direct=True)
    ch.set_epoch(1)
    ch.send_edits(1, 1, 1, bytes(LIMIT_QUEUE_SIZE_BYTES + 1)).result()
    assert ch.queued_edits_size == 0


def test_stop_sending_edits_when_out_of_sync(ch: IPCLoggerChannel, proxy: FakeProxy) -> None:
    proxy.fail["journal"] = lambda req, seg, first, n, data: (
        IOException("injected error") if first == 1 else None
    )
    with pytest.raises(IOException, match="injected"):
        ch.send_edits(1, 1, 1, FAKE_DATA).result(timeout=60)
    assert [args[2] for args in proxy.calls_to("journal")] == [1]
    assert ch.is_out_of_sync

    with pytest.raises(JournalOutOfSyncException, match="disabled until next roll"):
        ch.send_edits(1, 2, 1, FAKE_DATA).result(timeout=60)
    # Not sent: the node is out of sync. A heartbeat went instead.
    assert [args[2] for args in proxy.calls_to("journal")] == [1]
    assert len(proxy.calls_to("heartbeat")) == 1
    assert "(will try to re-sync on next segment)" in ch.append_report()

    # After a roll, edits are sent again.
    ch.start_log_segment(3, CURRENT_LAYOUT_VERSION).result(timeout=60)
    assert not ch.is_out_of_sync
    ch.send_edits(3, 3, 1, FAKE_DATA).result(timeout=60)
    assert [args[2] for args in proxy.calls_to("journal")] == [1, 3]


def test_finalize_fails_while_out_of_sync(proxy, registry) -> None:
    ch = make_channel(proxy, registry, direct=True)
    ch.set_epoch(1)
    proxy.fail["journal"] = lambda *args: IOException("injected")
    assert ch.send_edits(1, 1, 1, FAKE_DATA).exception() is not None
    error = ch.finalize_log_segment(1, 1).exception()
    assert isinstance(error, JournalOutOfSyncException)
    assert proxy.calls_to("finalize_log_segment") == []


def test_heartbeat_at_most_once_per_second(proxy, registry) -> None:
    clock = FakeClock()
    ch = make_channel(proxy, registry, direct=True, clock=clock)
    ch.set_epoch(1)
    proxy.fail["journal"] = lambda *args: IOException("injected")
    ch.send_edits(1, 1, 1, FAKE_DATA)
    for txid in (2, 3, 4):
        ch.send_edits(1, txid, 1, FAKE_DATA)
        clock.advance(0.3)
    assert len(proxy.calls_to("heartbeat")) == 1
    clock.advance(0.2)  # 1.1 s since the heartbeat
    ch.send_edits(1, 5, 1, FAKE_DATA)
    assert len(proxy.calls_to("heartbeat")) == 2
    # A failing heartbeat still waits its turn.
    proxy.fail["heartbeat"] = lambda *args: IOException("down")
    clock.advance(2)
    assert isinstance(ch.send_edits(1, 6, 1, FAKE_DATA).exception(), IOException)
    assert len(proxy.calls_to("heartbeat")) == 3
    ch.send_edits(1, 7, 1, FAKE_DATA)
    assert len(proxy.calls_to("heartbeat")) == 3
    assert ch.heartbeat_if_necessary().exception() is None  # not due: nothing sent
    assert len(proxy.calls_to("heartbeat")) == 3


def test_request_info_serial_epoch_and_committed_txid(proxy, registry) -> None:
    ch = make_channel(proxy, registry, direct=True)
    error = ch.send_edits(1, 1, 1, FAKE_DATA).exception()
    assert isinstance(error, IllegalStateException) and "bad epoch: -1" in str(error)
    ch.set_epoch(2)
    ch.start_log_segment(1, CURRENT_LAYOUT_VERSION).result()
    ch.send_edits(1, 1, 2, FAKE_DATA).result()
    ch.set_committed_txid(2)
    ch.send_edits(1, 3, 1, FAKE_DATA).result()
    ch.set_epoch(3)  # a new epoch does not reset the serial
    ch.finalize_log_segment(1, 3).result()
    requests = proxy.requests()
    assert [r.ipc_serial_number for r in requests] == [0, 1, 2, 3]
    assert [r.epoch for r in requests] == [2, 2, 2, 3]
    assert [r.committed_txid for r in requests] == [INVALID_TXID, INVALID_TXID, 2, 2]
    assert ch.next_ipc_serial == 4
    with pytest.raises(IllegalArgumentException, match="backwards"):
        ch.set_committed_txid(1)


def test_lag_and_report(proxy, registry) -> None:
    clock = FakeClock()
    ch = make_channel(proxy, registry, direct=True, clock=clock)
    ch.set_epoch(1)
    assert ch.append_report() == "Written txid 0"
    ch.set_committed_txid(3)
    assert ch.append_report() == "Written txid 0 (never written)"
    ch.send_edits(1, 1, 3, FAKE_DATA).result()
    assert ch.highest_acked_txid == 3
    clock.advance(0.25)
    ch.set_committed_txid(10)
    assert ch.lag_txns == 7
    assert ch.lag_time_ms == 250
    assert ch.append_report() == "Written txid 3 (7 txns/250ms behind)"


def test_url_to_fetch_logs(proxy, registry) -> None:
    ch = make_channel(proxy, registry, direct=True)
    with pytest.raises(IllegalStateException, match="No HTTP/HTTPS endpoint"):
        ch.build_url_to_fetch_logs(1)
    ch.get_journal_state().result()
    # The node reported a wildcard address; the RPC host name is used.
    assert ch.build_url_to_fetch_logs(5) == (
        "http://127.0.0.1:8480/getJournal?jid=test-journalid&segmentTxId=5"
        "&storageInfo=-67%3A12345%3A0%3Amycluster&inProgressOk=true"
    )
    with pytest.raises(IllegalArgumentException, match="Invalid segment: 0"):
        ch.build_url_to_fetch_logs(0)


def test_url_from_http_port_and_https_scheme(registry) -> None:
    no_url = FakeProxy(from_url=None, http_port=9999)
    ch = make_channel(no_url, registry, direct=True)
    ch.get_journal_state().result()
    assert ch.build_url_to_fetch_logs(1).startswith("http://127.0.0.1:9999/getJournal?")
    https = FakeProxy()
    manifest = RemoteEditLogManifest((RemoteEditLog(1, 3),), 3)
    https.results["get_edit_log_manifest"] = GetEditLogManifestResponse(
        manifest, 0, "https://jn1.example.com:8481"
    )
    ch2 = make_channel(https, registry, direct=True)
    assert ch2.get_edit_log_manifest(1, True).result() == manifest
    assert ch2.build_url_to_fetch_logs(1).startswith("https://127.0.0.1:8481/getJournal?")


def test_one_builder_of_the_get_journal_url() -> None:
    """The writer's recovery and the JournalNodeSyncer build /getJournal URLs with one
    function (Hadoop's GetJournalEditServlet.buildPath); for an ordinary journal id it
    gives what the syncer's own urlencode gave before."""
    from urllib.parse import urlencode

    from hadoop_qjm.qjournal.protocol.journal_url import get_journal_url, http_server_url

    base = http_server_url("::1", "https://0.0.0.0:8481", None)
    assert base == "https://[::1]:8481"
    query = {"jid": "my journal", "segmentTxId": 7, "storageInfo": "-67:1:0:CID-x"}
    assert get_journal_url(base, "my journal", 7, "-67:1:0:CID-x", False) == (
        f"{base}/getJournal?{urlencode({**query, 'inProgressOk': 'false'})}"
    )
    assert get_journal_url(base, "a*b~c", 1, "", True).endswith(
        "?jid=a*b%7Ec&segmentTxId=1&storageInfo=&inProgressOk=true"
    )


def test_prepare_recovery_learns_the_http_endpoint_first(proxy, registry) -> None:
    ch = make_channel(proxy, registry, direct=True)
    ch.set_epoch(1)
    ch.prepare_recovery(1).result()
    ch.prepare_recovery(1).result()
    assert [name for name, _ in proxy.calls] == [
        "get_journal_state",
        "prepare_recovery",
        "prepare_recovery",
    ]
    assert ch.build_url_to_fetch_logs(1).startswith("http://127.0.0.1:8480/")


def test_calls_reach_the_proxy_with_their_arguments(proxy, registry) -> None:
    ch = make_channel(proxy, registry, direct=True)
    ch.set_epoch(1)
    state = SegmentState(1, 3, False)
    ch.accept_recovery(state, "http://x/getJournal").result()
    ch.purge_logs_older_than(5).result()
    ch.discard_segments(7).result()
    ch.format(FAKE_NSINFO, True).result()
    assert ch.new_epoch(4).result() is not None
    assert ch.is_formatted().result() is True
    assert ch.get_journal_ctime().result() == 0
    ch.get_journaled_edits(1, 5000).result()
    assert proxy.calls_to("accept_recovery")[0][1:] == (state, "http://x/getJournal")
    assert proxy.calls_to("purge_logs_older_than")[0][1] == 5
    assert proxy.calls_to("discard_segments") == [(JID, 7)]
    assert proxy.calls_to("format") == [(JID, FAKE_NSINFO, True)]
    assert proxy.calls_to("new_epoch") == [(JID, FAKE_NSINFO, 4)]
    assert proxy.calls_to("get_journaled_edits") == [(JID, 1, 5000)]


def test_metrics_and_close(proxy, registry) -> None:
    clock = FakeClock()
    ch = make_channel(proxy, registry, direct=True, clock=clock)
    ch.set_epoch(1)
    labels = {"journal_id": JID, "journal_node": "127.0.0.1:8485"}
    ch.send_edits(1, 1, 2, FAKE_DATA).result()
    ch.set_committed_txid(5)
    assert registry.get_sample_value("qjm_logger_current_lag_txns", labels) == 3
    assert registry.get_sample_value("qjm_logger_out_of_sync", labels) == 0
    assert registry.get_sample_value("qjm_logger_queued_edits_bytes", labels) == 0
    assert registry.get_sample_value("qjm_logger_write_rpc_latency_seconds_count", labels) == 1
    assert (
        registry.get_sample_value("qjm_logger_write_end_to_end_latency_seconds_count", labels) == 1
    )
    proxy.fail["journal"] = lambda *args: IOException("injected")
    ch.send_edits(1, 3, 1, FAKE_DATA)
    assert registry.get_sample_value("qjm_logger_out_of_sync", labels) == 1

    ch.close()
    assert proxy.closed
    assert registry.get_sample_value("qjm_logger_out_of_sync", labels) is None
    assert registry.get_sample_value("qjm_logger_write_rpc_latency_seconds_count", labels) is None
    with pytest.raises(RuntimeError):
        ch.send_edits(1, 4, 1, FAKE_DATA)
    ch.close()  # twice is fine


def test_close_interrupts_nothing_but_fails_queued_calls(
    registry, caplog: pytest.LogCaptureFixture
) -> None:
    """And the batch it fails is an INFO line, not the WARNING of a node that failed: the
    writer got its quorum and closed the journal while this node was behind (e.g. at the
    end of initializeSharedEdits)."""
    proxy = FakeProxy()
    release = threading.Event()
    proxy.gate["journal"] = release
    ch = make_channel(proxy, registry)
    ch.set_epoch(1)
    first = ch.send_edits(1, 1, 1, FAKE_DATA)
    queued = ch.send_edits(1, 2, 1, FAKE_DATA)
    caplog.set_level(logging.INFO, logger="hadoop_qjm")
    ch.close()  # closes the proxy, which (as a real one would) lets the call in flight end
    first.result(timeout=60)
    with pytest.raises(IOException, match="closed"):
        queued.result(timeout=60)
    records = [r for r in caplog.records if "2-2" in r.getMessage()]
    assert [r.levelno for r in records] == [logging.INFO], caplog.text
    assert "the journal was closed first" in records[0].getMessage()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text


def test_default_factory_needs_a_resolvable_host() -> None:
    with pytest.raises(UnknownHostException):
        ipc_logger_channel_factory(
            Configuration(), FAKE_NSINFO, JID, None, ("no-such-host.invalid", 8485)
        )


def test_direct_executor_runs_in_the_callers_thread() -> None:
    executor = DirectExecutor()
    caller = threading.get_ident()
    assert executor.submit(threading.get_ident).result() == caller
    assert isinstance(executor.submit(lambda: 1 / 0).exception(), ZeroDivisionError)
    executor.shutdown()
    with pytest.raises(RuntimeError):
        executor.submit(lambda: None)


def test_an_executor_call_is_counted_done_by_the_time_its_answer_is(
    proxy, registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shortcut of send_edits waits for nothing in the executor: a call is counted done
    before its future is, so whoever its answer wakes finds the channel free (a journal
    sent then cannot overtake it: the node has answered it). Failures count the same."""
    ch = make_channel(proxy, registry)
    ch.set_epoch(1)
    proxy.fail["new_epoch"] = lambda *args: IOException("injected")
    counted_when_answered: list[int] = []

    def answer(set_answer):
        def record(future, value):
            counted_when_answered.append(ch._in_executor)
            set_answer(future, value)

        return record

    monkeypatch.setattr(Future, "set_result", answer(Future.set_result))
    monkeypatch.setattr(Future, "set_exception", answer(Future.set_exception))
    try:
        ch.get_journal_state().result(timeout=60)
        assert isinstance(ch.new_epoch(2).exception(timeout=60), IOException)
    finally:
        ch.close()
    assert counted_when_answered == [0, 0]


def test_a_cancelled_executor_call_is_counted_done(proxy, registry) -> None:
    ch = make_channel(proxy, registry)
    ch.set_epoch(1)
    release = threading.Event()
    proxy.gate["get_journal_state"] = release
    try:
        running = ch.get_journal_state()
        waiting = ch.is_formatted()
        assert ch._in_executor == 2
        assert waiting.cancel()  # not started: the running call holds the executor
        assert ch._in_executor == 1
        release.set()
        running.result(timeout=60)
        assert ch._in_executor == 0
        assert proxy.calls_to("is_formatted") == []
    finally:
        release.set()
        ch.close()
