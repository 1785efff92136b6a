"""The JournalNode's one-pass path for in-order journal() calls, over its real RPC port."""

from __future__ import annotations

import contextlib
import errno
import socket
import sys
import threading

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.editlog import edit_log_file_output_stream as output_module
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.protocol.exceptions import JournalOutOfSyncException
from hadoop_qjm.qjournal.protocol.journal_call import encode_journal_body, encode_journal_head
from hadoop_qjm.qjournal.protocol.sockets import FrameReader, PlainSocketFactory
from hadoop_qjm.qjournal.protocol.wire import encode_void_reply, frame
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.qjournal.server.journal_node_rpc_server import JournalNodeRpcServer
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, create_txn_data, make_request


@pytest.fixture
def cluster(tmp_path):
    with MiniJournalCluster(1, base_dir=tmp_path) as c:
        yield c


@pytest.fixture
def proxy(cluster):
    with QJournalProtocolProxy(*cluster.rpc_address(0), timeout_s=30) as p:
        p.format(JID, FAKE_NSINFO)
        p.new_epoch(JID, FAKE_NSINFO, 1)
        p.start_log_segment(make_request(1), 1, CURRENT_LAYOUT_VERSION)
        yield p


@pytest.fixture
def one_pass_calls(monkeypatch):
    """Each call the one-pass path saw: taken (True), declined (False) or "raised"."""
    taken: list[bool | str] = []
    real = Journal.journal_in_order  # what the dispatcher's one-pass path calls

    def spy(self, *args):
        try:
            taken.append(real(self, *args))
        except Exception:
            taken.append("raised")
            raise
        return taken[-1]

    monkeypatch.setattr(Journal, "journal_in_order", spy)
    return taken


def test_in_order_batches_take_the_one_pass_path(cluster, proxy, one_pass_calls):
    for i in range(3):
        proxy.journal(
            make_request(2 + i, committed_txid=i * 2),
            1,
            1 + i * 2,
            2,
            create_txn_data(1 + i * 2, 2),
        )
    # The spy hears of the last call only after the writer had its acknowledgement.
    wait_until(lambda: len(one_pass_calls) == 3, 10, "the last call to return")
    assert one_pass_calls == [True, True, True]
    journal = cluster.journal_node(0).get_or_create_journal(JID)
    assert journal.highest_written_txid == 6
    assert journal.committed_txn_id.get() == 4
    assert journal.current_epoch_ipc_serial == 4


def test_an_out_of_order_batch_is_declined_and_rejected_as_before(cluster, proxy, one_pass_calls):
    proxy.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
    with pytest.raises(JournalOutOfSyncException, match="Can't write txid 5 expecting nextTxId=3"):
        proxy.journal(make_request(3), 1, 5, 1, create_txn_data(5, 1))
    assert one_pass_calls == [True, False]


def test_a_failed_fsync_on_the_one_pass_path_stops_the_journal(
    cluster, proxy, one_pass_calls, monkeypatch
):
    def failing_sync(fd):
        raise OSError(errno.EIO, "Input/output error")

    with monkeypatch.context() as m:
        m.setattr(output_module.os, "fdatasync", failing_sync)
        with pytest.raises(IOException, match="Failed to write txns 1-2"):
            proxy.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
    # The disk is back, but the journal must still refuse (no retrying a failed fsync).
    with pytest.raises(IOException, match="stopped accepting writes"):
        proxy.journal(make_request(3), 1, 3, 1, create_txn_data(3, 1))
    assert one_pass_calls == ["raised", False]
    journal = cluster.journal_node(0).get_or_create_journal(JID)
    assert journal.highest_written_txid == 0


def test_a_pipelined_proxys_journal_connects_like_every_other_call(cluster):
    """journal() on a pipelined proxy with no connection yet (or a dropped one) connects:
    only the writer's direct path must never connect."""
    with QJournalProtocolProxy(*cluster.rpc_address(0), timeout_s=30, pipelined=True) as p:
        assert not p.connected
        p.format(JID, FAKE_NSINFO)
        p.new_epoch(JID, FAKE_NSINFO, 1)
        p.start_log_segment(make_request(1), 1, CURRENT_LAYOUT_VERSION)
        p._channel.reset()  # the connection drops between two calls
        assert not p.connected
        p.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
        assert p.connected
    assert cluster.journal_node(0).get_or_create_journal(JID).highest_written_txid == 2


# ---- early acknowledgements ---------------------------------------------------------------------
@pytest.fixture
def acknowledgements(monkeypatch):
    """What the RPC server passed as each one-pass call's ``acknowledge`` (None: none)."""
    given: list[object] = []
    real = Journal.journal_in_order

    def spy(self, *args):
        given.append(args[-1])
        return real(self, *args)

    monkeypatch.setattr(Journal, "journal_in_order", spy)
    return given


def test_in_order_batches_are_acknowledged_as_soon_as_they_are_durable(
    cluster, proxy, acknowledgements
):
    """Over plain TCP the RPC server hands the journal an acknowledgement to send the
    moment the batch is durable; the reply the writer then gets is that one, once."""
    for i in range(3):
        proxy.journal(make_request(2 + i), 1, 1 + i, 1, create_txn_data(1 + i, 1))
    assert len(acknowledgements) == 3 and all(callable(a) for a in acknowledgements)
    # One reply per call: the next call's reply is its own (the proxy checks the seqid).
    assert proxy.get_journal_state(JID).last_promised_epoch == 1
    assert cluster.journal_node(0).get_or_create_journal(JID).highest_written_txid == 3


class _SmallSendBuffers(PlainSocketFactory):
    """Accepted sockets with a small, fixed send buffer: a client that stops reading
    fills it after a few hundred replies."""

    def wrap_accepted(self, conn: socket.socket) -> socket.socket:
        conn = super().wrap_accepted(conn)
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
        return conn


def _blocked_in_finish() -> bool:
    """Whether some thread is sending what did not fit of an early acknowledgement (in
    ``EarlyAcknowledger.finish``, outside every lock)."""
    return any(
        frame_.f_code.co_name == "finish"
        and frame_.f_code.co_filename.endswith("early_acknowledger.py")
        and frame_.f_locals.get("unsent")
        for top in sys._current_frames().values()
        for frame_ in _stack(top)
    )


def _stack(top):
    while top is not None:
        yield top
        top = top.f_back


def test_a_writer_that_does_not_read_its_acknowledgements_holds_up_only_itself(cluster, proxy):
    """The acknowledgement is sent under the Journal's lock, so it must never block there:
    a writer that stops reading fills its socket, and then only its own connection waits
    (outside the lock) while every other call on that journal is served."""
    node = cluster.journal_node(0)
    batches = 20_000
    with JournalNodeRpcServer(node, "127.0.0.1", 0, socket_factory=_SmallSendBuffers()) as srv:
        srv.start()
        with socket.socket() as client:
            # Small before connecting, so that the window offered is small from the start.
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.settimeout(30)
            client.connect(srv.address)
            stop = threading.Event()

            def send_batches() -> None:
                # Committed up to the last txid: written without an fsync, so this is fast.
                with contextlib.suppress(OSError):
                    for i in range(batches):
                        if stop.is_set():
                            return
                        head = encode_journal_head(i + 1, JID, 1, i + 2, batches, None)
                        body = encode_journal_body(1 + i, 1, create_txn_data(1 + i, 1), 1, None)
                        client.sendall(frame(head + body))

            sender = threading.Thread(target=send_batches, daemon=True)
            sender.start()
            try:
                wait_until(_blocked_in_finish, 30, "a connection to wait to send a reply")
                # The journal's lock is free: another writer's call is answered at once.
                assert proxy.get_journal_state(JID).last_promised_epoch == 1
                proxy.heartbeat(make_request(batches + 10, committed_txid=batches))
                written = node.get_or_create_journal(JID).highest_written_txid
                assert 0 < written < batches
            finally:
                stop.set()
            # The writer reads again: every acknowledgement comes, once and in order.
            reader = FrameReader(client, 1 << 20)
            for i in range(written):
                assert reader.read_frame() == encode_void_reply("journal", i + 1)
            client.shutdown(socket.SHUT_RDWR)  # ends a sender still stuck in sendall
            sender.join(30)
            assert not sender.is_alive()


class _TimeoutSockets(PlainSocketFactory):
    """Accepted sockets with a timeout: Python waits for one to be writable before a send."""

    def wrap_accepted(self, conn: socket.socket) -> socket.socket:
        conn = super().wrap_accepted(conn)
        conn.settimeout(60)
        return conn


def test_a_socket_with_a_timeout_is_acknowledged_after_the_call(cluster, proxy, acknowledgements):
    """No early acknowledgement where a send could wait (for the socket's timeout) inside
    the Journal's lock: the reply goes out after the call, as over TLS."""
    node = cluster.journal_node(0)
    with JournalNodeRpcServer(node, "127.0.0.1", 0, socket_factory=_TimeoutSockets()) as srv:
        srv.start()
        with QJournalProtocolProxy(*srv.address, timeout_s=30) as p:
            p.journal(make_request(2), 1, 1, 2, create_txn_data(1, 2))
    assert acknowledgements == [None]
    assert node.get_or_create_journal(JID).highest_written_txid == 2
