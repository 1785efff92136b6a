"""The write path without thread hand-offs (docs/quorum-client.md, "The write path").

First :class:`PipelinedChannel` against a scripted peer on a real socket (order,
a peer that stops reading, failures, timeouts), then IPCLoggerChannel's direct
``journal`` sends against real JournalNodes: the calls to one node stay in order
with the executor's, the RequestInfo is stamped on each, and a failure puts the
node out of sync for the calls already in flight behind it.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
from collections.abc import Callable, Iterator

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import ConfigurationError, IllegalArgumentException, IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.ipc.frames import FrameDecoder
from hadoop_qjm.ipc.socket_channel import login_user_name
from hadoop_qjm.qjournal.client.executors import DirectExecutor
from hadoop_qjm.qjournal.client.ipc_logger_channel import IPCLoggerChannel
from hadoop_qjm.qjournal.client.pipelined_channel import (
    PipelinedChannel,
    ReadRepliesWhileWaiting,
    ReplyReactor,
    read_replies_while_waiting,
    select_with_busy_poll,
)
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import journal_body
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalOutOfSyncException,
    LoggerTooFarBehindException,
    SocketTimeoutException,
)
from hadoop_qjm.qjournal.protocol.sockets import FrameReader, write_frame
from hadoop_qjm.qjournal.protocol.wire import FRAME_HEADER
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, create_txn_data

pytestmark = pytest.mark.timeout(60)

JID = "test-pipelined"
MAX_FRAME = 64 * 1024 * 1024


class ScriptedPeer:
    """A one-connection server: echoes each frame back (``b"re:" + payload``; the connection
    context is kept apart, as a real server does) unless
    ``paused`` (then it neither reads nor answers) or ``silent`` (reads, never answers)."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.paused = threading.Event()
        self.resume = threading.Event()
        self.silent = False
        self.received: list[bytes] = []
        self.claimed_users: list[str] = []  # what the connection contexts said
        self.conn: socket.socket | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        conn, _ = self.listener.accept()
        self.conn = conn
        reader = FrameReader(conn, MAX_FRAME, on_context=self.claimed_users.append)
        try:
            while True:
                if self.paused.is_set():
                    self.resume.wait()
                payload = reader.read_frame()
                if payload is None:
                    return
                self.received.append(payload)
                if not self.silent:
                    write_frame(conn, b"re:" + payload)
        except OSError:
            return

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
        self.listener.close()


@pytest.fixture
def peer() -> Iterator[ScriptedPeer]:
    p = ScriptedPeer()
    yield p
    p.resume.set()
    p.close()


def collect() -> tuple[list, threading.Event, Callable]:
    answers: list = []
    done = threading.Event()

    def callback(reply, error):
        answers.append((reply, error))
        done.set()

    return answers, done, callback


def test_replies_are_matched_to_calls_in_order(peer: ScriptedPeer) -> None:
    channel = PipelinedChannel("127.0.0.1", peer.port, None, 5.0, MAX_FRAME)
    try:
        answers: list = []
        for i in range(50):
            channel.send_async(
                [b"call ", str(i).encode()], lambda r, e, i=i: answers.append((i, r, e))
            )
        wait_until(lambda: len(answers) == 50)
        assert answers == [(i, b"re:call " + str(i).encode(), None) for i in range(50)]
        assert channel.call(b"blocking") == b"re:blocking"
    finally:
        channel.close()


def test_the_connection_context_goes_once_before_the_first_call(
    peer: ScriptedPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simple authentication: the user (HADOOP_USER_NAME) once per connection, not per call."""
    monkeypatch.setenv("HADOOP_USER_NAME", "alice")
    channel = PipelinedChannel("127.0.0.1", peer.port, None, 5.0, MAX_FRAME)
    try:
        for i in range(3):
            assert channel.call(b"call %d" % i) == b"re:call %d" % i
        assert peer.claimed_users == ["alice"]
        assert peer.received == [b"call 0", b"call 1", b"call 2"]
    finally:
        channel.close()


def test_a_peer_that_stops_reading_blocks_no_sender(peer: ScriptedPeer) -> None:
    """Frozen node: the sends that do not fit in the socket wait on the channel; the
    caller returns at once; everything arrives, in order, once the peer reads again."""
    channel = PipelinedChannel("127.0.0.1", peer.port, None, 5.0, MAX_FRAME)
    try:
        channel.call(b"connect")
        peer.paused.set()
        answers: list = []
        chunk = bytes(1024 * 1024)
        for i in range(24):  # more than the socket buffers hold: the rest waits, unsent
            channel.send_async([str(i).encode(), chunk], lambda r, e: answers.append((r, e)))
        assert channel._out, "some bytes should be waiting for the socket"
        peer.resume.set()
        peer.paused.clear()
        wait_until(lambda: len(answers) == 24, 30.0)
        assert [r[3 : -len(chunk)] for r, _ in answers] == [str(i).encode() for i in range(24)]
        assert all(e is None for _, e in answers)
    finally:
        channel.close()


def test_a_lost_connection_fails_every_call_in_flight_then_reconnects() -> None:
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    channel = PipelinedChannel("127.0.0.1", port, None, 5.0, MAX_FRAME)
    try:
        answers: list = []
        for _ in range(3):
            channel.send_async([b"x"], lambda r, e: answers.append((r, e)))
        conn, _ = listener.accept()
        conn.close()
        wait_until(lambda: len(answers) == 3)
        assert all(r is None and isinstance(e, IOException) for r, e in answers)
        # The next call makes a new connection.
        replies: list = []
        channel.send_async([b"y"], lambda r, e: replies.append((r, e)))
        conn, _ = listener.accept()
        users: list[str] = []
        reader = FrameReader(conn, MAX_FRAME, on_context=users.append)
        assert reader.read_frame() == b"y"
        assert users == [login_user_name()]  # the new connection's context came first
        write_frame(conn, b"ok")
        wait_until(lambda: replies == [(b"ok", None)])
        conn.close()
    finally:
        channel.close()
        listener.close()


def test_a_reply_read_from_a_connection_dropped_meanwhile_answers_no_new_call() -> None:
    """The reader checked the connection, then read a reply from it; meanwhile another
    thread failed that connection (its call had its error) and connected anew, with a
    new call waiting. The old reply must not be taken as the new call's answer."""
    channel = PipelinedChannel("127.0.0.1", 1, None, 5.0, MAX_FRAME)
    old_answers: list = []
    new_answers: list = []
    new_sock, peer_end = socket.socketpair()

    class DroppedWhileRead(socket.socket):
        def recv_into(self, buffer, nbytes=0, flags=0):
            frame = FRAME_HEADER.pack(len(b"old reply")) + b"old reply"
            buffer[: len(frame)] = frame
            # What the other thread did while this one read: fail, reconnect, send.
            channel._fail(self, IOException("dropped"))
            with channel._lock:
                channel._sock = new_sock
            channel._pending.append(lambda r, e: new_answers.append((r, e)))
            return len(frame)

    old_sock = DroppedWhileRead(socket.AF_INET, socket.SOCK_STREAM)
    try:
        channel._sock = old_sock
        channel._pending.append(lambda r, e: old_answers.append((r, e)))
        channel._on_readable(old_sock, FrameDecoder(), memoryview(bytearray(64)), None)
        assert len(old_answers) == 1 and isinstance(old_answers[0][1], IOException)
        assert new_answers == []
        assert len(channel._pending) == 1  # the new call still waits for its own reply
    finally:
        with channel._lock:
            channel._sock = None
        for sock in (old_sock, new_sock, peer_end):
            sock.close()


def test_no_reply_within_the_timeout_fails_the_calls(peer: ScriptedPeer) -> None:
    peer.silent = True
    channel = PipelinedChannel("127.0.0.1", peer.port, 0.3, 5.0, MAX_FRAME)
    try:
        answers, done, callback = collect()
        channel.send_async([b"never answered"], callback)
        assert done.wait(10)
        assert isinstance(answers[0][1], SocketTimeoutException)
    finally:
        channel.close()


def test_a_shorter_timeout_on_a_later_connection_is_not_missed() -> None:
    # The reactor looks at the reply deadlines only when the earliest it found has
    # come: a connection made later, with a shorter timeout, must still be timed out
    # on time — not when the first connection's long deadline comes.
    slow_peer, quick_peer = ScriptedPeer(), ScriptedPeer()
    slow_peer.silent = quick_peer.silent = True
    slow = PipelinedChannel("127.0.0.1", slow_peer.port, 30.0, 5.0, MAX_FRAME)
    quick = PipelinedChannel("127.0.0.1", quick_peer.port, 0.3, 5.0, MAX_FRAME)
    try:
        slow_answers, slow_done, slow_callback = collect()
        slow.send_async([b"waits 30 s"], slow_callback)
        wait_until(lambda: slow_peer.received)
        answers, done, callback = collect()
        quick.send_async([b"waits 0.3 s"], callback)
        # Missed, it would wait for the slow connection's 30 s: far past this deadline.
        assert done.wait(10)
        assert isinstance(answers[0][1], SocketTimeoutException)
        assert not slow_done.is_set()
    finally:
        quick.close()
        slow.close()
        slow_peer.close()
        quick_peer.close()


def test_close_fails_the_calls_in_flight(peer: ScriptedPeer) -> None:
    peer.silent = True
    channel = PipelinedChannel("127.0.0.1", peer.port, None, 5.0, MAX_FRAME)
    answers, done, callback = collect()
    channel.send_async([b"pending"], callback)
    wait_until(lambda: peer.received)
    channel.close()
    assert done.wait(10)
    assert isinstance(answers[0][1], IOException)
    with pytest.raises(IOException):
        channel.call(b"after close")


# ---- IPCLoggerChannel over real JournalNodes -----------------------------------------------


@pytest.fixture
def cluster() -> Iterator[MiniJournalCluster]:
    with MiniJournalCluster(1) as c:
        yield c


@pytest.fixture
def channel(cluster: MiniJournalCluster) -> Iterator[IPCLoggerChannel]:
    ch = IPCLoggerChannel(Configuration(), FAKE_NSINFO, JID, cluster.rpc_address(0))
    ch.format(FAKE_NSINFO).result()
    ch.new_epoch(1).result()
    ch.set_epoch(1)
    yield ch
    ch.close()


def ops(first: int, count: int) -> bytes:
    return create_txn_data(first, count)


def start_segment(channel: IPCLoggerChannel, txid: int = 1) -> None:
    """startLogSegment; once its future is done, its executor call is counted done too,
    so the next journal may take the shortcut."""
    channel.start_log_segment(txid, CURRENT_LAYOUT_VERSION).result(10)
    assert channel._in_executor == 0


def test_journal_goes_out_directly_and_stays_behind_earlier_calls(
    channel: IPCLoggerChannel,
) -> None:
    # startLogSegment is still in the executor: the journal must not overtake it (the
    # JournalNode would refuse a journal without an open segment).
    start = channel.start_log_segment(1, CURRENT_LAYOUT_VERSION)
    first = channel.send_edits(1, 1, 3, ops(1, 3))
    first.result(10)
    start.result(10)
    # Nothing waits in the executor now: these go out from this thread.
    submitted: list[object] = []
    submit = channel._submit
    channel._submit = lambda fn: submitted.append(fn) or submit(fn)  # type: ignore[method-assign]
    futures = [channel.send_edits(1, 4 + 3 * i, 3, ops(4 + 3 * i, 3)) for i in range(20)]
    assert submitted == []
    for future in futures:
        future.result(10)
    assert channel.highest_acked_txid == 63
    assert channel.queued_edits_size == 0
    assert channel.next_ipc_serial == 22  # serials 0..21: the start and 21 journals
    channel.set_committed_txid(63)
    channel.finalize_log_segment(1, 63).result(10)


def test_a_batch_sent_directly_is_answered_through_its_callback(
    channel: IPCLoggerChannel,
) -> None:
    """The writer's fan-out (AsyncLoggerSet.send_edits) gets no future: the thread that
    reads the reply answers — here the background reply reader, as nobody waits."""
    start_segment(channel)
    answered = threading.Event()
    answers: list[tuple[object, BaseException | None]] = []

    def on_answer(result: object, error: BaseException | None) -> None:
        answers.append((result, error))
        answered.set()

    assert channel.send_edits_directly(1, 1, 3, ops(1, 3), on_answer)
    assert answered.wait(10)
    assert answers == [(None, None)]
    assert channel.highest_acked_txid == 3
    assert channel.queued_edits_size == 0


def test_waiting_for_pending_calls_waits_for_the_batches_sent_directly(
    channel: IPCLoggerChannel,
) -> None:
    start_segment(channel)
    errors: list[BaseException | None] = []
    for txid in range(1, 21):
        assert channel.send_edits_directly(
            1, txid, 1, ops(txid, 1), lambda _, error: errors.append(error)
        )
    channel.wait_for_all_pending_calls()
    assert errors == [None] * 20
    assert channel.highest_acked_txid == 20


def test_the_shortcut_declines_a_node_out_of_sync(channel: IPCLoggerChannel) -> None:
    """Out of sync, a batch must fail after a heartbeat (the executor path): the shortcut
    sends nothing and reserves nothing, and the caller falls back to send_edits."""
    channel.start_log_segment(1, CURRENT_LAYOUT_VERSION).result(10)
    with pytest.raises(JournalOutOfSyncException):
        channel.send_edits(1, 5, 1, ops(5, 1)).result(10)  # a gap: refused
    assert channel.is_out_of_sync
    answers: list[object] = []
    assert not channel.send_edits_directly(1, 1, 1, ops(1, 1), lambda *a: answers.append(a))
    assert answers == []
    assert channel.queued_edits_size == 0


def test_batches_sent_directly_that_fail_in_flight_release_all_they_held(
    cluster: MiniJournalCluster, channel: IPCLoggerChannel
) -> None:
    """Batches in flight when the connection goes (here: the channel closed while the
    JournalNode is held up) are each answered once, with the error; their queue space
    and in-flight count are released, so waiting for pending calls returns."""
    start_segment(channel)
    journal = cluster.journal_node(0).get_or_create_journal(JID)
    answers: list[tuple[int, BaseException | None]] = []
    with journal._lock:  # the node reads the first batch, then waits for its journal
        for txid in range(1, 6):
            assert channel.send_edits_directly(
                1, txid, 1, ops(txid, 1), lambda _, error, t=txid: answers.append((t, error))
            )
        assert channel.queued_edits_size > 0
        channel.close()
        assert [t for t, _ in answers] == [1, 2, 3, 4, 5]
        assert all(isinstance(error, IOException) for _, error in answers)
    assert channel.queued_edits_size == 0
    assert channel._direct_in_flight == 0  # what wait_for_all_pending_calls waits for


def test_a_batch_failing_while_it_is_sent_is_answered_in_the_writers_thread(
    channel: IPCLoggerChannel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The connection drops between the shortcut's check and the send: the channel fails
    the call at once, in the writer's own thread (send_async(connect=False)). The batch
    was still sent directly; its answer is the error, given once, and nothing stays held."""
    start_segment(channel)
    proxy = channel._proxy

    def dropped(request, body, callback, *, connect=False):
        callback(IOException("Call to the node failed: not connected"))

    monkeypatch.setattr(proxy, "journal_async", dropped)
    answers: list[tuple[int, BaseException | None]] = []
    assert channel.send_edits_directly(
        1, 1, 1, ops(1, 1), lambda _, e: answers.append((threading.get_ident(), e))
    )
    assert len(answers) == 1 and isinstance(answers[0][1], IOException)
    assert answers[0][0] == threading.get_ident()  # before send_edits_directly returned
    assert channel.queued_edits_size == 0
    assert channel._direct_in_flight == 0


def test_a_send_that_raises_after_answering_releases_once(
    channel: IPCLoggerChannel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A send that fails its call and then raises (a bug below the channel): the caller
    gets the exception, the answer is not given again, and the queue space and the
    in-flight count are released once, not twice."""
    start_segment(channel)
    proxy = channel._proxy

    def answers_then_raises(request, body, callback, *, connect=False):
        callback(IOException("reset"))
        raise RuntimeError("bug after the answer")

    monkeypatch.setattr(proxy, "journal_async", answers_then_raises)
    answers: list[object] = []
    with pytest.raises(RuntimeError, match="bug after the answer"):
        channel.send_edits_directly(1, 1, 1, ops(1, 1), lambda *a: answers.append(a))
    assert len(answers) == 1
    assert channel.queued_edits_size == 0
    assert channel._direct_in_flight == 0
    monkeypatch.undo()  # the real send again: the channel works on
    channel.wait_for_all_pending_calls()


def test_a_failing_answer_or_log_still_ends_the_call(
    channel: IPCLoggerChannel, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The reply reader must go on whatever the answer's receiver or the failure log do:
    a log that raises does not keep the answer back, an answer that raises is logged,
    and either way the call ends (its queue space and in-flight count released)."""
    start_segment(channel)
    proxy = channel._proxy
    monkeypatch.setattr(
        proxy, "journal_async", lambda request, body, callback, **_: callback(IOException("gone"))
    )

    def broken_log(*args: object) -> None:
        raise RuntimeError("the log is broken")

    monkeypatch.setattr(channel, "_log_journal_failure", broken_log)
    answers: list[BaseException | None] = []
    assert channel.send_edits_directly(1, 1, 1, ops(1, 1), lambda _, e: answers.append(e))
    assert len(answers) == 1 and isinstance(answers[0], IOException)  # given all the same

    def broken_answer(result: object, error: BaseException | None) -> None:
        raise RuntimeError("the receiver is broken")

    # Out of sync now: the shortcut declines, so let the node be in sync again.
    channel._progress.out_of_sync = False
    with caplog.at_level("ERROR"):
        assert channel.send_edits_directly(1, 1, 1, ops(1, 1), broken_answer)
    assert "Unexpected error giving the answer" in caplog.text
    assert "Unexpected error logging the failure" in caplog.text
    assert channel.queued_edits_size == 0
    assert channel._direct_in_flight == 0


@contextlib.contextmanager
def writing_channel(cluster: MiniJournalCluster, queue_limit_mb: int) -> Iterator[IPCLoggerChannel]:
    """A channel to node 0 with dfs.qjournal.queued-edits.limit.mb set, writing segment 1."""
    conf = Configuration()
    conf.set("dfs.qjournal.queued-edits.limit.mb", str(queue_limit_mb))
    ch = IPCLoggerChannel(conf, FAKE_NSINFO, JID, cluster.rpc_address(0))
    try:
        ch.format(FAKE_NSINFO).result(10)
        ch.new_epoch(1).result(10)
        ch.set_epoch(1)
        start_segment(ch)
        yield ch
    finally:
        ch.close()


def test_a_batch_over_the_limit_goes_directly_when_nothing_is_queued(
    cluster: MiniJournalCluster,
) -> None:
    """As in Hadoop, the limit never refuses a batch when nothing is queued (a batch
    bigger than the limit could otherwise never be written)."""
    with writing_channel(cluster, queue_limit_mb=1) as ch:
        big = ops(1, 1) + b"\0" * (1536 * 1024)
        answers: list[object] = []
        assert ch.send_edits_directly(1, 1, 1, big, lambda *a: answers.append(a))
        ch.wait_for_all_pending_calls()
        assert answers == [(None, None)]  # written
        assert ch.highest_acked_txid == 1
        assert ch.queued_edits_size == 0


def test_the_shortcut_declines_a_batch_over_the_queue_limit(cluster: MiniJournalCluster) -> None:
    """With batches queued (the node is held up), one more that would pass
    dfs.qjournal.queued-edits.limit.mb is not sent: send_edits then fails it with
    LoggerTooFarBehindException, and nothing more is reserved."""
    with writing_channel(cluster, queue_limit_mb=1) as ch:
        journal = cluster.journal_node(0).get_or_create_journal(JID)
        big = ops(1, 1) + b"\0" * (700 * 1024)
        answers: list[object] = []
        with journal._lock:
            assert ch.send_edits_directly(1, 1, 1, big, lambda *a: answers.append(a))
            queued = ch.queued_edits_size
            assert not ch.send_edits_directly(1, 2, 1, big, lambda *a: answers.append(a))
            assert ch.queued_edits_size == queued
            with pytest.raises(LoggerTooFarBehindException):
                ch.send_edits(1, 2, 1, big).result(10)
            assert ch.queued_edits_size == queued
        ch.wait_for_all_pending_calls()
        assert len(answers) == 1
        assert ch.queued_edits_size == 0


def test_a_flush_sends_every_batch_directly(cluster: MiniJournalCluster) -> None:
    """The writer's batches take the shortcut end to end: no node's executor runs one."""
    qjm = QuorumJournalManager(Configuration(), cluster.quorum_journal_uri(JID), FAKE_NSINFO)
    try:
        qjm.format(FAKE_NSINFO)
        qjm.recover_unfinalized_segments()
        stream = qjm.start_log_segment(1, CURRENT_LAYOUT_VERSION)
        submitted: list[object] = []
        for logger in qjm.loggers.loggers:
            submit = logger._submit
            logger._submit = lambda fn, submit=submit: submitted.append(fn) or submit(fn)
        for txid in range(1, 11):
            stream.write_raw(ops(txid, 1), 1, txid)
            stream.set_ready_to_flush()
            stream.flush()
        assert submitted == []
        acked = [lg.highest_acked_txid for lg in qjm.loggers.loggers]
        assert acked.count(10) >= qjm.loggers.majority_size
        stream.close()
    finally:
        qjm.close()


def test_calls_in_flight_behind_a_failed_one_fail_too(channel: IPCLoggerChannel) -> None:
    channel.start_log_segment(1, CURRENT_LAYOUT_VERSION).result(10)
    channel.send_edits(1, 1, 1, ops(1, 1)).result(10)
    # A gap: the JournalNode refuses txid 5 (it expects 2) ...
    bad = channel.send_edits(1, 5, 1, ops(5, 1))
    # ... and this one, sent before the refusal came back, would be refused as well; even
    # were it accepted it must count as failed, as Hadoop never sends it.
    behind = channel.send_edits(1, 6, 1, ops(6, 1))
    with pytest.raises(JournalOutOfSyncException):
        bad.result(10)
    with pytest.raises(JournalOutOfSyncException):
        behind.result(10)
    assert channel.is_out_of_sync
    # Out of sync: the executor path fails the next batch at once.
    with pytest.raises(JournalOutOfSyncException, match="disabled until next roll"):
        channel.send_edits(1, 2, 1, ops(2, 1)).result(10)
    assert channel.queued_edits_size == 0
    # The next segment brings the node back.
    channel.start_log_segment(10, CURRENT_LAYOUT_VERSION).result(10)
    assert not channel.is_out_of_sync
    channel.send_edits(10, 10, 2, ops(10, 2)).result(10)
    assert channel.highest_acked_txid == 11


def test_a_direct_executor_keeps_every_call_in_the_callers_thread(
    cluster: MiniJournalCluster,
) -> None:
    from hadoop_qjm.qjournal.client.executors import DirectExecutor

    ch = IPCLoggerChannel(
        Configuration(),
        FAKE_NSINFO,
        JID,
        cluster.rpc_address(0),
        executor=DirectExecutor(),
        parallel_executor=DirectExecutor(),
    )
    try:
        ch.format(FAKE_NSINFO).result()
        ch.new_epoch(1).result()
        ch.set_epoch(1)
        ch.start_log_segment(1, CURRENT_LAYOUT_VERSION).result()
        future = ch.send_edits(1, 1, 2, ops(1, 2))
        assert future.done()  # ran in this thread
        future.result()
        answers: list[object] = []
        assert not ch.send_edits_directly(1, 3, 1, ops(3, 1), lambda *a: answers.append(a))
        assert answers == []
        assert ch.queued_edits_size == 0
    finally:
        ch.close()


def test_a_journal_call_encoded_once_is_the_usual_message() -> None:
    """The shared body after each node's reqInfo gives exactly the bytes of the whole call."""
    from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
    from hadoop_qjm.qjournal.protocol.messages import RequestInfo, to_thrift
    from hadoop_qjm.qjournal.protocol.thrift_idl import qjournal_thrift
    from hadoop_qjm.qjournal.protocol.wire import TMessageType, encode_message

    sent: list[bytes] = []

    class Capture:
        connected = True

        def send_async(self, parts, callback, connect=True) -> None:
            sent.append(b"".join(parts))

    proxy = QJournalProtocolProxy("127.0.0.1", 1, pipelined=True)
    proxy._async = Capture()  # type: ignore[assignment]
    records = ops(7, 3)
    req = RequestInfo(JID, 3, 41, 6, "ns1")
    body = journal_body(7, 7, 3, records, "ns1")
    assert journal_body(7, 7, 3, records, "ns1") is body  # the other nodes reuse it
    proxy.journal_async(req, body, lambda error: None)
    args = qjournal_thrift.QJournalProtocol.journal_args(
        reqInfo=to_thrift(req),
        firstTxnId=7,
        numTxns=3,
        records=records,
        segmentTxnId=7,
        nameServiceId="ns1",
    )
    assert sent == [encode_message("journal", TMessageType.CALL, 1, args)]
    proxy.close()


def test_the_writer_never_connects_on_the_direct_path() -> None:
    """send_async(connect=False) on a closed connection fails the call at once instead of
    connecting (a connect can block for its timeout, and this is the writer's thread)."""
    channel = PipelinedChannel("127.0.0.1", 9, None, 30.0, MAX_FRAME)
    answers: list = []
    try:
        channel.send_async([b"x"], lambda r, e: answers.append((r, e)), connect=False)
        assert len(answers) == 1 and answers[0][0] is None
        assert "not connected" in str(answers[0][1])
        assert not channel.connected
    finally:
        channel.close()


# ---- busy polling (dfs.qjournal.busy-poll.us) ----------------------------------------------


class ScriptedSelect:
    """A ``select(timeout)`` that records each timeout and answers ``events`` on the
    ``ready_on``-th call (1-based; 0: never); each call moves ``clock`` on by ``step``."""

    def __init__(self, ready_on: int = 0, step: float = 0.001) -> None:
        self.timeouts: list[float | None] = []
        self.ready_on = ready_on
        self.step = step
        self.now = 100.0

    def clock(self) -> float:
        return self.now

    def __call__(self, timeout: float | None) -> list:
        self.timeouts.append(timeout)
        self.now += self.step
        return ["event"] if len(self.timeouts) == self.ready_on else []


def test_without_a_busy_poll_the_waiter_blocks_at_once() -> None:
    select = ScriptedSelect()
    assert select_with_busy_poll(select, 0.5, 0.0, select.clock) == []
    assert select.timeouts == [0.5]


def test_a_busy_poll_returns_what_comes_without_ever_blocking() -> None:
    select = ScriptedSelect(ready_on=3)
    assert select_with_busy_poll(select, 0.5, 0.01, select.clock) == ["event"]
    assert select.timeouts == [0, 0, 0]


def test_a_busy_poll_blocks_for_what_is_left_once_its_budget_is_spent() -> None:
    select = ScriptedSelect()
    assert select_with_busy_poll(select, 0.5, 0.0045, select.clock) == []
    # Five looks of 1 ms each pass the 4.5 ms budget; the blocking select gets the rest.
    assert select.timeouts[:5] == [0] * 5 and len(select.timeouts) == 6
    assert select.timeouts[5] == pytest.approx(0.495)


def test_what_comes_once_the_busy_poll_blocks_is_returned() -> None:
    select = ScriptedSelect(ready_on=6)
    assert select_with_busy_poll(select, 0.5, 0.0045, select.clock) == ["event"]
    assert len(select.timeouts) == 6 and select.timeouts[5] == pytest.approx(0.495)


def test_a_busy_poll_never_outlasts_the_timeout() -> None:
    select = ScriptedSelect()
    assert select_with_busy_poll(select, 0.003, 1.0, select.clock) == []
    assert select.timeouts == [0, 0, 0]  # the timeout is spent: no blocking select after
    now = ScriptedSelect()
    assert select_with_busy_poll(now, 0, 1.0, now.clock) == []
    assert now.timeouts == [0]  # one look, as select(0) alone would
    endless = ScriptedSelect()
    assert select_with_busy_poll(endless, None, 0.002, endless.clock) == []
    assert endless.timeouts == [0, 0, None]


def test_a_negative_busy_poll_is_refused() -> None:
    with pytest.raises(ValueError, match="busy_poll_s must not be negative: -1"):
        ReadRepliesWhileWaiting(-1)


@pytest.mark.parametrize(
    ("value", "expected_s"), [(None, 0.0), ("0", 0.0), ("1000", 0.001), ("2ms", 0.002)]
)
def test_the_busy_poll_comes_from_the_configuration(value, expected_s) -> None:
    conf = Configuration()
    if value is not None:
        conf.set("dfs.qjournal.busy-poll.us", value)
    ch = IPCLoggerChannel(conf, FAKE_NSINFO, JID, ("127.0.0.1", 1))
    try:
        assert ch.assist_wait is not None
        assert ch.assist_wait.busy_poll_s == pytest.approx(expected_s)
        if expected_s == 0:
            assert ch.assist_wait is read_replies_while_waiting  # Hadoop's way: block
    finally:
        ch.close()


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        ("-1", IllegalArgumentException, "must be between 0 and 49999 (microseconds): -1"),
        # As long as the background reader's lease: it would take the replies over.
        ("50ms", IllegalArgumentException, "must be between 0 and 49999 (microseconds): 50000"),
        (
            "soon",
            ConfigurationError,
            "'soon' is not a time duration (a number of microseconds, or with a unit",
        ),
    ],
)
@pytest.mark.parametrize("injected_executor", [False, True])
def test_a_bad_busy_poll_is_refused_with_its_key(value, error, message, injected_executor) -> None:
    """Refused whether or not the channel reads its own replies (an injected executor)."""
    conf = Configuration()
    conf.set("dfs.qjournal.busy-poll.us", value)
    extra = {"executor": DirectExecutor()} if injected_executor else {}
    with pytest.raises(error, match=re.escape(message)) as caught:
        IPCLoggerChannel(conf, FAKE_NSINFO, JID, ("127.0.0.1", 1), **extra)
    assert "dfs.qjournal.busy-poll.us" in str(caught.value)


class SelectRecorder:
    """Wraps a selector; records the timeout of every ``select`` the thread ``owner``
    makes."""

    def __init__(self, selector, owner: int) -> None:
        self._selector = selector
        self._owner = owner
        self.timeouts: list[float | None] = []

    def select(self, timeout=None):
        if threading.get_ident() == self._owner:
            self.timeouts.append(timeout)
        return self._selector.select(timeout)

    def __getattr__(self, name):
        return getattr(self._selector, name)


def take_the_reader_role(reactor: ReplyReactor) -> None:
    """Return once this thread has just held the reader role with nothing left to read:
    its lease then keeps the background reader parked while this thread reads again."""

    def held_it_twice() -> bool:
        reactor.wake()  # a background poll in progress returns (the lease parks it)
        # The second look reads the wake-up byte of the first, if it is still there.
        return reactor.read_while_waiting(0.01) and reactor.read_while_waiting(0.01)

    wait_until(held_it_twice, 20.0, "the reader role (the background reader kept it)")


def test_a_wake_cuts_a_busy_poll_short(monkeypatch: pytest.MonkeyPatch) -> None:
    reactor = ReplyReactor.shared()
    take_the_reader_role(reactor)
    recorder = SelectRecorder(reactor._selector, threading.get_ident())
    monkeypatch.setattr(reactor, "_selector", recorder)
    reactor.wake()
    assert reactor.read_while_waiting(5.0, None, busy_poll_s=5.0)
    assert recorder.timeouts == [0]  # the first look found the wake-up: no 5 s spin


def test_a_reply_deadline_passing_during_a_busy_poll_fails_the_call(
    peer: ScriptedPeer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A silent node: the call fails with SocketTimeoutException at its deadline. The
    waiter busy-polls and then blocks — never past the deadline, whatever its own
    timeout."""
    channel = PipelinedChannel("127.0.0.1", peer.port, 0.3, 5.0, MAX_FRAME)
    try:
        channel.call(b"connect")
        peer.silent = True
        reactor = channel._reactor
        assert reactor is ReplyReactor.shared()
        take_the_reader_role(reactor)
        recorder = SelectRecorder(reactor._selector, threading.get_ident())
        monkeypatch.setattr(reactor, "_selector", recorder)
        answers, done, callback = collect()
        channel.send_async([b"never answered"], callback)
        # This thread holds the role for its first read (the background reader is parked);
        # a read blocking past the 50 ms lease may let the background reader take a later
        # turn, so those need not be ours.
        assert reactor.read_while_waiting(5.0, None, busy_poll_s=0.04)

        def read_until_answered() -> bool:
            if not done.is_set():
                reactor.read_while_waiting(5.0, None, busy_poll_s=0.04)
            return done.is_set()

        wait_until(read_until_answered, 10.0, "the silent node's call to time out")
        ((reply, error),) = answers
        assert reply is None and isinstance(error, SocketTimeoutException)
        assert 0 in recorder.timeouts
        assert all(t is not None and t <= 0.3 + 0.01 for t in recorder.timeouts)
    finally:
        channel.close()


@pytest.mark.parametrize("busy_poll_us", [0, 1000])
def test_a_writer_that_busy_polls_commits_every_batch(
    busy_poll_us: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """End to end: the key reaches the writer's wait (its polls start with select(0));
    without it the writer never polls without blocking. Every batch is committed."""
    conf = Configuration()
    conf.set("dfs.qjournal.busy-poll.us", str(busy_poll_us))
    with MiniJournalCluster(3) as cluster:
        qjm = QuorumJournalManager(conf, cluster.quorum_journal_uri(JID), FAKE_NSINFO)
        try:
            qjm.format(FAKE_NSINFO)
            qjm.recover_unfinalized_segments()
            stream = qjm.start_log_segment(1, CURRENT_LAYOUT_VERSION)
            reactor = ReplyReactor.shared()
            recorder = SelectRecorder(reactor._selector, threading.get_ident())
            monkeypatch.setattr(reactor, "_selector", recorder)
            for txid in range(1, 51):
                stream.write_raw(ops(txid, 1), 1, txid)
                stream.set_ready_to_flush()
                stream.flush()
            monkeypatch.undo()
            qjm.finalize_log_segment(1, 50)
            committed = [
                cluster.journal_node(i).get_or_create_journal(JID).highest_written_txid
                for i in range(3)
            ]
            assert sorted(committed)[1] == 50  # a quorum has every batch
            assert recorder.timeouts, "the writer never read its own replies"
            assert (0 in recorder.timeouts) == (busy_poll_us > 0)
        finally:
            qjm.close()
