"""Asking the peers (journal_formatter.each_peer / ask_peers): every peer at once, the
answers in the peers' order, a failing peer an answer, never an exception."""

from __future__ import annotations

import threading

import pytest

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.remote_edit_log import RemoteEditLog
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.qjournal.server.journal_formatter import ask_peers, each_peer

pytestmark = pytest.mark.timeout(60)

SI = StorageInfo(-66, 12345, "mycluster", 0)
PEERS = [("127.0.0.1", 1001), ("127.0.0.1", 1002), ("127.0.0.1", 1003)]


class _Manifest:
    def __init__(self, logs) -> None:
        self.manifest = type("M", (), {"logs": logs})()


class _State:
    membership = None


class RendezvousPeer:
    """A peer whose first call (getStorageInfo) waits until every peer has been asked it:
    asked one after another, the first one's wait times out."""

    def __init__(self, barrier: threading.Barrier, fail: bool = False) -> None:
        self.barrier = barrier
        self.fail = fail
        self.threads: set[str] = set()

    def get_storage_info(self, jid, nsid):
        self.threads.add(threading.current_thread().name)
        self.barrier.wait()
        if self.fail:
            raise IOException("connection refused")
        return SI

    def get_edit_log_manifest_from_journal(self, jid, since, in_progress_ok, nsid):
        self.threads.add(threading.current_thread().name)
        return _Manifest([RemoteEditLog(1, 10, False)])

    def get_journal_state(self, jid, nsid):
        self.threads.add(threading.current_thread().name)
        return _State()


def test_every_peer_is_asked_at_once_and_answers_keep_the_peers_order() -> None:
    barrier = threading.Barrier(len(PEERS), timeout=10)
    proxies = {peer: RendezvousPeer(barrier, fail=peer == PEERS[1]) for peer in PEERS}
    answers = ask_peers(PEERS, "j", None, proxies.__getitem__)
    assert [a.peer for a in answers] == ["127.0.0.1:1001", "127.0.0.1:1002", "127.0.0.1:1003"]
    assert answers[0].storage_info == SI and answers[0].holds_edits
    assert answers[1].storage_info is None and "connection refused" in answers[1].error
    assert answers[2].storage_info == SI
    # Each peer's calls came from one thread: its proxy was never used by two at once.
    assert all(len(p.threads) == 1 for p in proxies.values())


def test_each_peer_raises_the_first_peers_exception_after_all_answered() -> None:
    asked: list[int] = []

    def ask(peer):
        asked.append(peer[1])
        if peer[1] != 1001:
            raise IOException(f"no answer from {peer[1]}")
        return peer[1]

    with pytest.raises(IOException, match="no answer from 1002"):
        each_peer(PEERS, ask, "test")
    assert sorted(asked) == [1001, 1002, 1003]
    assert each_peer(PEERS[:1], lambda peer: peer[1], "test") == [1001]
