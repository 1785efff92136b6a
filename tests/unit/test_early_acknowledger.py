"""EarlyAcknowledger: the RPC server's acknowledgement of a durable batch, sent from inside
the Journal's lock without ever blocking there (the rest waits for ``finish``)."""

from __future__ import annotations

import logging
import socket

import pytest

from hadoop_qjm.qjournal.protocol.wire import encode_void_reply, frame
from hadoop_qjm.qjournal.server.early_acknowledger import EarlyAcknowledger

ACK = encode_void_reply("journal", 7)


class FakeSocket:
    """Takes ``accept`` bytes per non-blocking send (None: would block; an exception: raised)."""

    def __init__(self, accept: int | None | BaseException = None) -> None:
        self.accept = accept
        self.sends: list[tuple[bytes, int]] = []
        self.sent_all: list[bytes] = []

    def send(self, data: bytes, flags: int = 0) -> int:
        self.sends.append((bytes(data), flags))
        if isinstance(self.accept, BaseException):
            raise self.accept
        if self.accept is None:
            raise BlockingIOError(11, "Resource temporarily unavailable")
        return min(self.accept, len(data))

    def sendall(self, data: bytes) -> None:
        self.sent_all.append(bytes(data))


def test_an_acknowledgement_that_fits_goes_out_at_once_and_the_reply_is_dropped():
    sock = FakeSocket(accept=1 << 20)
    early = EarlyAcknowledger(sock)  # type: ignore[arg-type]
    early.prepare(ACK)()
    assert sock.sends == [(frame(ACK), socket.MSG_DONTWAIT)]
    early.finish(ACK)  # the dispatcher's reply: the same acknowledgement
    assert sock.sent_all == []


@pytest.mark.parametrize("accepted", [0, 3, len(frame(ACK)) - 1])
def test_what_did_not_fit_is_sent_by_finish(accepted):
    sock = FakeSocket(accept=accepted)
    early = EarlyAcknowledger(sock)  # type: ignore[arg-type]
    early.prepare(ACK)()
    assert sock.sent_all == []  # never blocking inside the lock
    early.finish(ACK)
    assert sock.sent_all == [frame(ACK)[accepted:]]


def test_a_send_that_would_block_is_left_whole_to_finish():
    sock = FakeSocket(accept=None)
    early = EarlyAcknowledger(sock)  # type: ignore[arg-type]
    early.prepare(ACK)()
    early.finish(ACK)
    assert sock.sent_all == [frame(ACK)]


def test_a_failed_send_is_raised_by_finish_not_inside_the_lock():
    sock = FakeSocket(accept=ConnectionResetError(104, "Connection reset by peer"))
    early = EarlyAcknowledger(sock)  # type: ignore[arg-type]
    early.prepare(ACK)()  # does not raise: the journal goes on recording the batch
    with pytest.raises(ConnectionResetError):
        early.finish(ACK)
    assert sock.sent_all == []


def test_a_call_not_acknowledged_early_gets_its_reply_from_finish():
    sock = FakeSocket(accept=1 << 20)
    early = EarlyAcknowledger(sock)  # type: ignore[arg-type]
    early.prepare(ACK)  # e.g. the write failed, or the call was not in order
    error_reply = encode_void_reply("heartbeat", 8)
    early.finish(error_reply)
    assert sock.sends == [] and sock.sent_all == [frame(error_reply)]
    # The next call starts afresh.
    early.prepare(ACK)()
    early.finish(ACK)
    assert sock.sends == [(frame(ACK), socket.MSG_DONTWAIT)]
    assert sock.sent_all == [frame(error_reply)]


def test_an_error_after_the_acknowledgement_is_logged_not_sent(caplog):
    sock = FakeSocket(accept=2)
    early = EarlyAcknowledger(sock)  # type: ignore[arg-type]
    early.prepare(ACK)()
    with caplog.at_level(logging.ERROR):
        early.finish(b"an error reply for the same call")
    assert sock.sent_all == [frame(ACK)[2:]]  # the acknowledgement, whole; nothing else
    assert "after its acknowledgement" in caplog.text


def test_an_unexpected_error_in_the_early_send_still_leaves_the_acknowledgement_to_finish():
    sock = FakeSocket(accept=RuntimeError("not a socket error"))
    early = EarlyAcknowledger(sock)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError):
        early.prepare(ACK)()
    sock.accept = 1 << 20
    early.finish(b"the error reply of the failed call")  # logged, not sent
    assert sock.sent_all == [frame(ACK)]  # the batch is durable: the writer hears so
