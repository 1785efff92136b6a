"""The syncer's catch-up through the md5 a peer kept (issue 39 item 3): a copy is installed
without its ops checked again only when its md5 is the one the peer computed from bytes
that verified; damaged in flight or at the source, it is refused and never installed."""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import logging
import os
import re
import socket
import threading

import pytest

from hadoop_qjm.editlog.fs_edit_log_op import HEADER_LENGTH
from hadoop_qjm.qjournal.server import journal_node_syncer
from hadoop_qjm.qjournal.server.journal_scrubber import JournalNodeScrubber
from tests.integration.syncer_support import peer_holding_segments

pytestmark = pytest.mark.timeout(120)

JID = "test-journal"
LV = -67
SEGMENT = "edits_0000000000000000001-0000000000000000020"
#: The body byte the relay flips: inside the second op, after the header (its CRC breaks).
FLIPPED_AT = HEADER_LENGTH + 40


class ByteFlippingRelay:
    """A TCP relay in front of an HTTP server that flips the byte ``FLIPPED_AT`` of the
    body of the first answer on each connection (after the server computed its md5):
    damage on the way, which neither end's disk holds."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.flips = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._threads: list[threading.Thread] = []
        self._sockets: list[socket.socket] = []
        self._closed = False
        self._start(self._accept)

    def _start(self, target, *args) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        self._threads.append(t)
        t.start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target_port))
            self._sockets += [client, server]
            self._start(self._pump, client, server, False)
            self._start(self._pump, server, client, True)

    def _pump(self, src: socket.socket, dst: socket.socket, flip: bool) -> None:
        seen = bytearray()  # the answer's bytes up to the flipped one
        body_at = -1
        with contextlib.suppress(OSError):
            while data := src.recv(65536):
                data = bytearray(data)
                if flip and body_at < 0:
                    seen += data
                    end = seen.find(b"\r\n\r\n")
                    if end >= 0:
                        body_at = end + 4 - (len(seen) - len(data))  # in this chunk
                if flip and 0 <= body_at and body_at + FLIPPED_AT < len(data):
                    data[body_at + FLIPPED_AT] ^= 0x01
                    self.flips += 1
                    flip = False
                elif flip and body_at >= 0:
                    body_at -= len(data)
                dst.sendall(data)
        with contextlib.suppress(OSError):
            dst.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self._closed = True
        # shutdown, not close alone: it wakes a thread blocked in accept or recv (Linux).
        for s in [self._listener, *self._sockets]:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
            s.close()
        for t in self._threads:
            t.join(timeout=10)


class RelayedManifests:
    """Node 1's RPC proxy as node 0's syncer holds it, with the ``fromURL`` of its
    manifests pointing at ``relay``: the syncer downloads through the relay."""

    def __init__(self, proxy, relay: ByteFlippingRelay) -> None:
        self._proxy = proxy
        self._from_url = f"http://127.0.0.1:{relay.port}"

    def get_edit_log_manifest_from_journal(self, *args):
        response = self._proxy.get_edit_log_manifest_from_journal(*args)
        return dataclasses.replace(response, from_url=self._from_url)

    def close(self) -> None:
        self._proxy.close()


@contextlib.contextmanager
def peer_holding_a_segment(tmp_path, committed: int = 20):
    """Node 1 holds the finalized segments 1-20 and 21-25 (each with the md5 its finalize
    kept); node 0, committed to ``committed`` (20: only the first may be installed),
    nothing. Syncer rounds and scrubber passes run only when a test says
    so. Yields (cluster, node 0's syncer)."""
    no_scrub = {"dfs.journalnode.scrub.enabled": "false"}
    with peer_holding_segments(tmp_path, committed, ((1, 20), (21, 25)), **no_scrub) as (
        cluster,
        syncer,
        _,
    ):
        yield cluster, syncer


@contextlib.contextmanager
def through(relay_target_port: int, syncer):
    """Node 0's syncer downloads from node 1 through a ByteFlippingRelay."""
    relay = ByteFlippingRelay(relay_target_port)
    (peer,) = syncer.peers
    real = syncer._proxy(peer)
    syncer._proxies[peer] = RelayedManifests(real, relay)
    try:
        yield relay
    finally:
        syncer._proxies[peer] = real
        relay.close()


def _a_round_through_a_flipping_relay_installs_nothing(cluster, syncer, caplog) -> None:
    """One sync round of node 0 from node 1 through a ByteFlippingRelay that flipped one
    byte on the way: the copy refused, nothing installed."""
    with (
        through(cluster.http_ports[1], syncer) as relay,
        caplog.at_level(logging.WARNING, logger="hadoop_qjm.qjournal.server"),
    ):
        assert syncer.sync_once() == 0
        assert relay.flips == 1
    _not_installed(cluster, caplog)


def _open_in(directory) -> list[str]:
    """What this process's open file descriptors name under ``directory`` (deleted or not)."""
    names = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(str(directory)):
                names.append(target)
    return names


def _not_installed(cluster, caplog) -> None:
    current = cluster.current_dir(0, JID)
    assert not (current / SEGMENT).exists()
    assert not (current / (SEGMENT + ".md5")).exists()
    journal = cluster.journal_node(0).get_or_create_journal(JID)
    assert list(journal.storage.edits_sync_dir.iterdir()) == []
    assert _open_in(journal.storage.edits_sync_dir) == []
    refusals = [r.getMessage() for r in caplog.records if "Not installing" in r.getMessage()]
    assert refusals and refusals[0].startswith(f"Not installing {SEGMENT} from"), refusals


def test_a_byte_flipped_in_flight_after_the_md5_is_refused_then_a_clean_copy_installed(
    tmp_path, caplog
):
    with peer_holding_a_segment(tmp_path) as (cluster, syncer):
        source = cluster.current_dir(1, JID) / SEGMENT
        intact = source.read_bytes()
        kept = (cluster.current_dir(1, JID) / (SEGMENT + ".md5")).read_text()
        # What finalize kept is the md5 of the segment's bytes, in Hadoop's MD5FileUtils form.
        assert kept == f"{hashlib.md5(intact).hexdigest()} *{SEGMENT}\n"
        _a_round_through_a_flipping_relay_installs_nothing(cluster, syncer, caplog)
        assert "does not match advertised digest" in caplog.text
        assert source.read_bytes() == intact  # the damage was on the way only

        assert syncer.sync_once() == 1
        current = cluster.current_dir(0, JID)
        assert (current / SEGMENT).read_bytes() == intact
        # The copy's md5 is the peer's, kept here too: this node can vouch for it in turn.
        assert (current / (SEGMENT + ".md5")).read_text() == kept


def test_without_a_kept_md5_a_byte_flipped_in_flight_fails_the_op_check(tmp_path, caplog):
    """A peer that sends no md5 (Hadoop's JournalNodes never keep one, nor ours for a
    segment not checked as it was written): every op is checked as it arrives."""
    with peer_holding_a_segment(tmp_path) as (cluster, syncer):
        (cluster.current_dir(1, JID) / (SEGMENT + ".md5")).unlink()
        _a_round_through_a_flipping_relay_installs_nothing(cluster, syncer, caplog)
        # The op check's finding: the txid and position of the op the flip spoiled.
        assert re.search(r"Not installing \S+ from \S+: txid \d+ at position \d+", caplog.text)

        assert syncer.sync_once() == 1
        current = cluster.current_dir(0, JID)
        assert (current / SEGMENT).read_bytes() == (
            cluster.current_dir(1, JID) / SEGMENT
        ).read_bytes()
        assert not (current / (SEGMENT + ".md5")).exists()  # its scrubber keeps one later


def test_a_rotted_md5_refuses_the_copy_until_the_scrubber_rewrites_it(tmp_path, caplog):
    """The peer's .md5 itself is damaged (its segment intact): receivers refuse the copy
    rather than trust either; the peer's scrubber verifies the segment and rewrites it."""
    with peer_holding_a_segment(tmp_path) as (cluster, syncer):
        md5_file = cluster.current_dir(1, JID) / (SEGMENT + ".md5")
        good = md5_file.read_text()
        md5_file.write_text(("0" if good[0] != "0" else "1") + good[1:])
        with caplog.at_level(logging.WARNING, logger="hadoop_qjm.qjournal.server"):
            assert syncer.sync_once() == 0
        _not_installed(cluster, caplog)

        journal1 = cluster.journal_node(1).get_or_create_journal(JID)
        scrubber = JournalNodeScrubber(journal1, cluster.journal_node(1).scrub_settings, _metrics())
        with caplog.at_level(logging.WARNING, logger="hadoop_qjm.qjournal.server"):
            assert scrubber.scrub_once() == []
        assert md5_file.read_text() == good
        assert f"the md5 kept for {SEGMENT} was" in caplog.text
        assert syncer.sync_once() == 1


def _metrics():
    from prometheus_client import CollectorRegistry

    from hadoop_qjm.qjournal.server.journal_scrubber import ScrubMetrics

    return ScrubMetrics(CollectorRegistry())


def test_a_failed_fdatasync_installs_nothing_and_stops_the_round(tmp_path, monkeypatch, caplog):
    """The installer's fdatasync (one segment behind the downloads) fails: that segment is
    not installed, nor the one received meanwhile; nothing is left in the sync dir."""
    from hadoop_qjm.qjournal.server import segment_installer

    with peer_holding_a_segment(tmp_path, committed=25) as (cluster, syncer):
        journal = cluster.journal_node(0).get_or_create_journal(JID)
        synced: list[str] = []

        def failing(fd: int) -> None:
            # The descriptor the download wrote through (an os.dup of it), not one opened
            # afterwards: a write-back error since the write is reported to it.
            synced.append(os.readlink(f"/proc/self/fd/{fd}"))
            assert fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY  # "wb"'s
            raise OSError(5, "Input/output error")

        monkeypatch.setattr(segment_installer, "_fdatasync", failing)
        with caplog.at_level(logging.WARNING, logger="hadoop_qjm.qjournal.server"):
            assert syncer.sync_once() == 0
        assert synced and synced[0].startswith(str(journal.storage.edits_sync_dir))
        current = cluster.current_dir(0, JID)
        assert not any(p.name.startswith("edits_0") for p in current.iterdir())
        assert list(journal.storage.edits_sync_dir.iterdir()) == []
        assert _open_in(journal.storage.edits_sync_dir) == []
        assert f"Failed to sync {SEGMENT}" in caplog.text and "fdatasync" in caplog.text
        monkeypatch.undo()
        assert syncer.sync_once() == 2


class ManifestThenGone:
    """Node 1's RPC proxy as node 0's syncer holds it: each manifest it returns still
    lists ``segment``, which is moved away on node 1 right after (its download fails)."""

    def __init__(self, proxy, segment) -> None:
        self._proxy = proxy
        self.segment = segment
        self.aside = segment.with_name(segment.name + ".aside")

    def get_edit_log_manifest_from_journal(self, *args):
        response = self._proxy.get_edit_log_manifest_from_journal(*args)
        self.segment.rename(self.aside)
        return response

    def close(self) -> None:
        self._proxy.close()


def test_a_failed_download_stops_the_round_and_the_one_beside_it_is_not_installed(
    tmp_path, caplog, monkeypatch
):
    """Two segments are received at once: the first one's download fails (its peer no
    longer has it) while the second arrives whole. Neither is installed — nothing after
    the first failure, as Hadoop's round stops there — and nothing is left behind; the
    next round installs both."""
    later = "edits_0000000000000000021-0000000000000000025"
    with peer_holding_a_segment(tmp_path, committed=25) as (cluster, syncer):
        received = {}
        receive = syncer._receive

        def noting(peer, from_url, log):
            received[log.start_txid] = result = receive(peer, from_url, log)
            return result

        monkeypatch.setattr(syncer, "_receive", noting)
        _a_round_whose_first_download_fails_installs_nothing(cluster, syncer, caplog, SEGMENT)
        assert received[1] is None and received[21].final.name == later  # it was received
        assert syncer.sync_once() == 2
        current = cluster.current_dir(0, JID)
        assert (current / later).read_bytes() == (cluster.current_dir(1, JID) / later).read_bytes()


def _a_round_whose_first_download_fails_installs_nothing(cluster, syncer, caplog, name) -> None:
    """One sync round of node 0 from node 1 in which segment ``name``, the first to fetch,
    is moved away on node 1 once listed: nothing installed, nothing left in the sync dir."""
    (peer,) = syncer.peers
    real = syncer._proxy(peer)
    gone = ManifestThenGone(real, cluster.current_dir(1, JID) / name)
    syncer._proxies[peer] = gone
    try:
        with caplog.at_level(logging.WARNING, logger="hadoop_qjm.qjournal.server"):
            assert syncer.sync_once() == 0
    finally:
        syncer._proxies[peer] = real
        gone.aside.rename(gone.segment)
    assert f"Failed to sync {name}" in caplog.text
    current = cluster.current_dir(0, JID)
    assert not any(p.name.startswith("edits_0") for p in current.iterdir())
    journal = cluster.journal_node(0).get_or_create_journal(JID)
    assert list(journal.storage.edits_sync_dir.iterdir()) == []
    assert _open_in(journal.storage.edits_sync_dir) == []  # every received copy's fd closed


def test_downloads_queued_behind_a_failed_one_are_neither_installed_nor_left_behind(
    tmp_path, caplog, monkeypatch
):
    """Six segments: more than the downloads a round runs and keeps queued at once. The
    first one's download fails while those behind it run or wait: none is installed,
    the queued ones are dropped, nothing is left in the sync dir; the next round
    installs all six, byte for byte."""
    assert journal_node_syncer.DOWNLOADS_AT_ONCE + journal_node_syncer.DOWNLOADS_QUEUED < 6
    segments = tuple((first, first + 4) for first in range(1, 31, 5))
    first = "edits_0000000000000000001-0000000000000000005"
    with peer_holding_segments(
        tmp_path, 30, segments, **{"dfs.journalnode.scrub.enabled": "false"}
    ) as (cluster, syncer, _):
        # Downloads handed to the round's fetchers, counted as they are; the first one
        # is held until the round's first hand-over (it waits for that download), so the
        # count then is every download the round took on while the first was running.
        submitted = [0]
        at_first_hand_over: list[int] = []
        handing_over = threading.Event()

        class CountingPool(journal_node_syncer.ThreadPoolExecutor):
            def submit(self, fn, /, *args, **kwargs):
                submitted[0] += 1
                return super().submit(fn, *args, **kwargs)

        hand_over = journal_node_syncer._hand_over

        def first_noted(fetch, installer):
            if not handing_over.is_set():
                at_first_hand_over.append(submitted[0])
                handing_over.set()
            return hand_over(fetch, installer)

        receive = syncer._receive

        def held(peer, from_url, log):
            if log.start_txid == 1:
                assert handing_over.wait(30), "the round never handed its first download over"
            return receive(peer, from_url, log)

        monkeypatch.setattr(journal_node_syncer, "ThreadPoolExecutor", CountingPool)
        monkeypatch.setattr(journal_node_syncer, "_hand_over", first_noted)
        monkeypatch.setattr(syncer, "_receive", held)
        _a_round_whose_first_download_fails_installs_nothing(cluster, syncer, caplog, first)
        monkeypatch.undo()
        queue = journal_node_syncer.DOWNLOADS_AT_ONCE + journal_node_syncer.DOWNLOADS_QUEUED
        assert at_first_hand_over == [queue]  # the rest were never taken on
        assert syncer.sync_once() == 6
        current = cluster.current_dir(0, JID)
        assert (
            _open_in(cluster.journal_node(0).get_or_create_journal(JID).storage.edits_sync_dir)
            == []
        )
        for f in cluster.current_dir(1, JID).glob("edits_0*"):
            assert (current / f.name).read_bytes() == f.read_bytes()


def test_a_stop_during_a_round_installs_nothing_queued_and_leaves_nothing_behind(
    tmp_path, monkeypatch
):
    """The syncer is told to stop while the round's first download runs and others wait
    queued behind it: at most that first one is installed, the queued ones never start,
    nothing is left in the sync dir and no descriptor stays open; a later round (the
    daemon started again) installs the rest."""
    segments = tuple((first, first + 4) for first in range(1, 31, 5))
    with peer_holding_segments(
        tmp_path, 30, segments, **{"dfs.journalnode.scrub.enabled": "false"}
    ) as (cluster, syncer, _):
        started: list[int] = []
        receive = syncer._receive

        def stopping(peer, from_url, log):
            started.append(log.start_txid)
            if log.start_txid == 1:
                syncer._stop.set()  # what stop() does first
            return receive(peer, from_url, log)

        monkeypatch.setattr(syncer, "_receive", stopping)
        installed = syncer.sync_once()
        monkeypatch.undo()
        assert installed <= 1
        queue = journal_node_syncer.DOWNLOADS_AT_ONCE + journal_node_syncer.DOWNLOADS_QUEUED
        assert len(started) <= queue, started
        journal = cluster.journal_node(0).get_or_create_journal(JID)
        assert list(journal.storage.edits_sync_dir.iterdir()) == []
        assert _open_in(journal.storage.edits_sync_dir) == []
        current = cluster.current_dir(0, JID)
        assert len(list(current.glob("edits_0*"))) == installed
        syncer._stop.clear()
        assert syncer.sync_once() == 6 - installed
        for f in cluster.current_dir(1, JID).glob("edits_0*"):
            assert (current / f.name).read_bytes() == f.read_bytes()
