"""The JournalNode's group fsync (docs/journalnode.md, "Group fsync").

A pipelining writer sends its next batches back to back on one connection. The
JournalNode reads every complete ``journal`` call that has arrived, writes each one that
is the writer's next batch in order, fdatasyncs ONCE, and only then acknowledges them
all, in order. A call that is not the next batch is served alone, as ever; a failed
fsync fails the whole group and stops the journal.

The calls are real frames on a real socket to a JournalNode RPC server (:func:`JournalNodeRpcServer`) over a
real :class:`Journal` on disk. To make several calls wait together, the first one is
held in the journal's write hook (``before_write_edits``) while the rest are sent; the
fsyncs are counted by wrapping ``os.fdatasync`` for the segment's file only.
"""

from __future__ import annotations

import os
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog import edit_log_file_output_stream
from hadoop_qjm.ipc.server import Server
from hadoop_qjm.qjournal.protocol import wire
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalOutOfSyncException,
    from_wire,
)
from hadoop_qjm.qjournal.protocol.journal_call import encode_journal_body, encode_journal_head
from hadoop_qjm.qjournal.protocol.sockets import FrameReader
from hadoop_qjm.qjournal.protocol.thrift_idl import qjournal_thrift
from hadoop_qjm.qjournal.server.journal import Journal, JournalFaultInjector
from hadoop_qjm.qjournal.server.journal_node_rpc_server import JournalNodeRpcServer
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, create_txn_data, make_request

pytestmark = pytest.mark.timeout(60)

DEADLINE_S = 10.0
EPOCH = 2


class HeldWrites(JournalFaultInjector):
    """Holds the next batch's write until :meth:`release` (``held`` says it is held)."""

    def __init__(self) -> None:
        self.held = threading.Event()
        self._gate: threading.Event | None = None

    def hold_next(self) -> None:
        self.held.clear()
        self._gate = threading.Event()

    def release(self) -> None:
        gate, self._gate = self._gate, None
        if gate is not None:
            gate.set()

    def before_write_edits(self) -> None:
        gate = self._gate
        if gate is not None:
            self.held.set()
            assert gate.wait(DEADLINE_S), "the test never released the write"


@dataclass
class Node:
    """The JournalNode surface the RPC handler uses: one journal."""

    journal: Journal
    stopped: bool = field(default=False)

    def open_journal(self, journal_id: str) -> Journal | None:
        return self.journal if journal_id == self.journal.journal_id else None

    def get_or_create_journal(self, journal_id: str, name_service_id: str | None = None):
        return self.journal


@dataclass
class Setup:
    journal: Journal
    hook: HeldWrites
    server: Server
    fsyncs: list[int]


def journal_with_counted_fsyncs(tmp_path, monkeypatch) -> tuple[Journal, HeldWrites, list[int]]:
    """A Journal in its epoch with segment 1 open, its writes held by the returned hook, and
    the list each fdatasync of that segment appends to."""
    hook = HeldWrites()
    journal = Journal(Configuration(), tmp_path / JID, JID, fault_injector=hook)
    journal.format(FAKE_NSINFO)
    journal.new_epoch(FAKE_NSINFO, EPOCH)
    journal.start_log_segment(make_request(1, epoch=EPOCH), 1, CURRENT_LAYOUT_VERSION)
    segment_fd = journal._cur_segment._fd
    fsyncs: list[int] = []
    real = os.fdatasync

    def counting(fd: int) -> None:
        real(fd)
        if fd == segment_fd:
            fsyncs.append(fd)

    monkeypatch.setattr(edit_log_file_output_stream.os, "fdatasync", counting)
    return journal, hook, fsyncs


@pytest.fixture
def setup(tmp_path, monkeypatch) -> Iterator[Setup]:
    journal, hook, fsyncs = journal_with_counted_fsyncs(tmp_path, monkeypatch)
    server = JournalNodeRpcServer(Node(journal), bind_host="127.0.0.1", port=0)
    server.start()
    try:
        yield Setup(journal, hook, server, fsyncs)
    finally:
        hook.release()
        server.stop(DEADLINE_S)
        journal.close()


def journal_frame(seqid: int, first_txid: int, num_txns: int = 1) -> bytes:
    """A writer's ``journal`` call for txns ``first_txid``.., framed: IPC serial
    ``seqid + 1`` (startLogSegment had 1), committed txid 0."""
    head = encode_journal_head(seqid, JID, EPOCH, seqid + 1, 0, None)
    body = encode_journal_body(first_txid, num_txns, create_txn_data(first_txid, num_txns), 1, None)
    return wire.frame(head + body)


def read_replies(sock: socket.socket, count: int) -> list[tuple[int, Exception | None]]:
    """The next ``count`` replies: (seqid, None for success or the typed error)."""
    reader = FrameReader(sock, wire.DEFAULT_MAX_FRAME_SIZE)
    replies = []
    for _ in range(count):
        payload = reader.read_frame()
        assert payload is not None, "the server closed the connection"
        _, _, seqid, _ = wire.read_message_header(payload)
        result = wire.decode_reply(
            payload, "journal", seqid, qjournal_thrift.QJournalProtocol.journal_result
        )
        replies.append((seqid, None if result.e is None else from_wire(result.e)))
    return replies


def send_held_then_queued(
    setup: Setup, queued: list[bytes], sock: socket.socket | None = None
) -> socket.socket:
    """Send call 1 (txn 1) and hold its write; send ``queued`` back to back meanwhile
    (loopback: in the server's socket buffer when sendall returns); then let it go. Over
    ``sock`` if given (a TLS one), else a new plain connection; returns the socket."""
    if sock is None:
        sock = socket.create_connection(setup.server.address, timeout=DEADLINE_S)
    setup.hook.hold_next()
    sock.sendall(journal_frame(1, 1))
    assert setup.hook.held.wait(DEADLINE_S), "the first batch never reached the journal"
    sock.sendall(b"".join(queued))
    setup.hook.release()
    return sock


def test_calls_that_arrived_together_share_one_fsync_and_are_acknowledged_in_order(setup):
    # call 1: txn 1, alone (its own fsync) | calls 2-5: txns 2-5, waiting together
    queued = [journal_frame(seqid, seqid) for seqid in range(2, 6)]
    with send_held_then_queued(setup, queued) as sock:
        replies = read_replies(sock, 5)
    assert replies == [(seqid, None) for seqid in range(1, 6)]
    assert len(setup.fsyncs) == 2
    assert setup.journal.highest_written_txid == 5
    bean = setup.journal.metrics.as_hadoop_bean()
    assert (bean["BatchesWritten"], bean["TxnsWritten"], bean["BatchFsyncs"]) == (5, 5, 2)


def test_a_batch_out_of_order_in_the_middle_fails_alone_after_the_ones_before(setup):
    # waiting together: txn 2 | txn 3 | txn 5 (a gap: txn 4 not sent yet) | txn 6 | txn 4
    queued = [
        journal_frame(2, 2),
        journal_frame(3, 3),
        journal_frame(4, 5),
        journal_frame(5, 6),
        journal_frame(6, 4),
    ]
    with send_held_then_queued(setup, queued) as sock:
        replies = read_replies(sock, 6)
    assert [seqid for seqid, _ in replies] == [1, 2, 3, 4, 5, 6]
    errors = [error for _, error in replies]
    assert errors[:3] == [None, None, None]
    # Refused as the single-batch path refuses them, nothing of them written.
    assert isinstance(errors[3], JournalOutOfSyncException)
    assert isinstance(errors[4], JournalOutOfSyncException)
    assert errors[5] is None  # the journal goes on from where it is
    # txn 1 alone, txns 2-3 together, txn 4 alone.
    assert len(setup.fsyncs) == 3
    assert setup.journal.highest_written_txid == 4
    assert setup.journal.next_txid == 5


def test_a_failed_group_fsync_fails_every_batch_of_it_and_stops_the_journal(setup, monkeypatch):
    """Call 1 syncs alone; calls 2-4, read together, share the fsync that fails."""
    counting = edit_log_file_output_stream.os.fdatasync
    calls = []

    def second_fails(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        counting(fd)

    monkeypatch.setattr(edit_log_file_output_stream.os, "fdatasync", second_fails)
    queued = [journal_frame(seqid, seqid) for seqid in range(2, 5)]
    with send_held_then_queued(setup, queued) as sock:
        replies = read_replies(sock, 4)
    assert replies[0] == (1, None)
    assert [seqid for seqid, _ in replies[1:]] == [2, 3, 4]
    assert all(isinstance(error, OSError) for _, error in replies[1:]), replies
    assert len(calls) == 2  # one fsync for call 1, one for the group
    for _, error in replies[1:]:  # each fails by the group's fsync, not by a refusal
        assert "Failed to write txns 2-4" in str(error), error
    assert setup.journal.highest_written_txid == 1
    with socket.create_connection(setup.server.address, timeout=DEADLINE_S) as sock:
        sock.sendall(journal_frame(5, 2))
        ((_, error),) = read_replies(sock, 1)
    assert isinstance(error, OSError) and "stopped accepting writes" in str(error)
