"""JournalNodeSyncer: fetch finalized segments this node is missing from its peers (HDFS-4025).

With ``dfs.journalnode.enable.sync`` on (the default), each journal whose
shared-edits URI names other JournalNodes gets a daemon thread that, every
``dfs.journalnode.sync.interval`` ms, asks **every** peer for its manifest of
finalized segments (Hadoop asks one, round robin: a segment only one peer still held
then read as "in sync" after a round against another, issue 33), downloads each
segment missing here — from the round-robin peer if it holds it, else from another
that does — into ``<journal>/edits.sync/`` and moves it into ``current/``, but only
when its last txid is at or below this node's committed txid, so a segment that was
never committed can never be resurrected by a sync (digest §2). Each segment synced is
logged with its size and the download's rate; a download longer than
:data:`PROGRESS_INTERVAL_S` also logs its progress.

No damaged copy is ever installed (issue 27): a peer that sends the md5 it kept for the
segment (``X-MD5-Digest``, from bytes that verified: :mod:`.segment_md5`) has the bytes
hashed as they arrive and the copy installed only if they match; without one every op is
checked as it arrives. Two segments are received at once (:data:`DOWNLOADS_AT_ONCE`),
and the install (fdatasync, rename, directory fsync) runs behind them, in txid order, in
:class:`~.segment_installer.SegmentInstaller`'s thread (issue 39 item 3).

Secured, both the manifest RPC and the download use the JournalNode's SSLFactory: this
node's client certificate must be one its peers allow (docs/security.md).

With ``dfs.journalnode.enable.sync.format`` on (HDFS-16690; off by default), a journal
that is unformatted here formats itself from its peers first, when a majority of the
configured JournalNodes agree on its storage info (:mod:`.journal_formatter`). Each
round records how far this copy is behind all the peers that answered, and how many
did (:func:`~hadoop_qjm.qjournal.protocol.peer_format.catch_up_state`; :meth:`status`'s
``CatchUp`` — "in sync with N of M peers" —, ``SegmentsBehind``, ``TxnsBehind``,
``PeersAnswered``, ``Unreachable``; the ``journalnode_sync_*`` gauges).
"""

from __future__ import annotations

import collections
import logging
import os
import shutil
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from hadoop_qjm.common.exceptions import HadoopException
from hadoop_qjm.common.http_server import DataTransferThrottler
from hadoop_qjm.common.http_transfer import MD5_HEADER, DigestMismatchException, TransferSession
from hadoop_qjm.common.progress import TransferProgress, transfer_summary
from hadoop_qjm.common.remote_edit_log import RemoteEditLog
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.fs_edit_log_op import DEFAULT_MAX_OP_SIZE
from hadoop_qjm.qjournal.client.qjournal_uri import QJournalURI, parse_qjournal_uri
from hadoop_qjm.qjournal.protocol.journal_url import get_journal_url, http_server_url
from hadoop_qjm.qjournal.protocol.peer_format import (
    FORMATTING,
    SYNCING,
    UNFORMATTED,
    CatchUp,
    FormatDecision,
    PeerManifest,
    catch_up_state,
    missing_log_segments,
    reported_catch_up,
)
from hadoop_qjm.qjournal.protocol.sync_rules import segments_to_fetch
from hadoop_qjm.qjournal.server.journal_formatter import each_peer, peer_name
from hadoop_qjm.qjournal.server.journal_peers import journal_addr_list, shared_edits_uri
from hadoop_qjm.qjournal.server.scrub_rules import SegmentVerifier, vouched_md5
from hadoop_qjm.qjournal.server.segment_installer import ReceivedSegment, SegmentInstaller

__all__ = ["JournalNodeSyncer", "SyncRound", "missing_log_segments"]

LOG = logging.getLogger(__name__)

#: Hadoop's file-transfer header naming the file sent (TransferFsImage).
EDITS_NAME_HEADER = "X-Image-Edits-Name"
#: Seconds between the log lines of one segment's download (none if it is quicker).
PROGRESS_INTERVAL_S = 10.0
#: Segments a round receives at once (one at a time with
#: ``dfs.edit.log.transfer.bandwidthPerSec`` set, as Hadoop's, so that the limit holds).
DOWNLOADS_AT_ONCE = 2
#: Downloads a round keeps queued behind those running, so that a fetcher finishing before
#: the one ahead of it in txid order starts the next at once instead of waiting for the
#: hand-over (a failure still stops the round: what was received after it is discarded).
DOWNLOADS_QUEUED = 2


def _hand_over(fetch: Future, installer: SegmentInstaller) -> bool:
    """Give the installer what ``fetch`` (a ``_fetch``) received: False if it got nothing."""
    log, received = fetch.result()
    if received is None:
        return False
    if isinstance(received, int):
        installer.add_existing(log, received)
    else:
        installer.submit(received)
    return True


def _discard(received: ReceivedSegment | int | None) -> None:
    if isinstance(received, ReceivedSegment):
        received.discard()


@dataclass(frozen=True)
class SyncRound:
    """One round against some peers: what they held that was missing here, what was
    installed (and its bytes), how far behind them this copy still is."""

    missing: list[RemoteEditLog]
    installed: list[RemoteEditLog]
    installed_bytes: int
    catch_up: CatchUp


class JournalNodeSyncer:
    """The sync thread of one journal."""

    def __init__(self, journal_node, journal, uri: QJournalURI, peers, name_service_id) -> None:
        self.jn = journal_node
        self.journal = journal
        self.uri = uri
        self.peers = list(peers)
        self.name_service_id = name_service_id
        settings = journal_node.settings  # read and checked when the JournalNode was made
        self.interval_s = settings.sync_interval_ms / 1000.0
        self.transfer_timeout_s = settings.edit_log_transfer_timeout_ms / 1000.0
        self.bandwidth_per_sec = settings.edit_log_transfer_bandwidth
        self._next_peer = 0
        self._stop = threading.Event()
        # For the status page: when the last round ended (wall-clock ms) and how.
        self._last_round_ms = 0
        self._last_error: str | None = None
        # The catch-up state (peer_format.CATCH_UP_STATES), as of the last round.
        self._catch_up_state = UNFORMATTED
        self._catch_up: CatchUp | None = None
        self._format_refusal: str | None = None
        self._set_catch_up(SYNCING if journal.is_formatted() else UNFORMATTED)
        self._thread: threading.Thread | None = None
        self._proxies: dict[tuple[str, int], object] = {}
        self._rpc_lock = threading.Lock()
        ssl_factory = getattr(journal_node, "ssl_factory", None)
        # One kept-alive connection per peer for a round's segments (closed at its end).
        self._transfers = TransferSession(
            ssl_factory.http_client_context() if ssl_factory is not None else None
        )
        self._socket_factory = (
            ssl_factory.rpc_client_socket_factory() if ssl_factory is not None else None
        )

    @classmethod
    def create(cls, journal_node, journal, name_service_id: str | None):
        """A syncer, or None when there is no shared-edits URI or no peer (digest §2 start-up)."""
        jid = journal.journal_id
        conf = journal_node.conf
        # Without a nameservice id only the plain key counts (Hadoop's
        # getOtherJournalNodeAddrs): a later call naming one tries again (issue 38).
        if name_service_id is None:
            text = conf.get_trimmed(keys.DFS_NAMENODE_SHARED_EDITS_DIR_KEY)
        else:
            text = shared_edits_uri(conf, name_service_id)
        if not text:
            LOG.info("Not starting the JournalNodeSyncer of %s: no shared edits dir", jid)
            return None
        resolver = getattr(journal_node, "resolver", None)
        try:
            uri = parse_qjournal_uri(text)
            peers = journal_addr_list(text, journal_node.rpc_address, conf, resolver)
        except HadoopException as e:
            LOG.warning(
                "Not starting the JournalNodeSyncer of %s: could not parse JournalNode "
                "addresses of %s: %s: %s",
                jid,
                text,
                type(e).__name__,
                e,
            )
            return None
        if not peers:
            LOG.info("Not starting the JournalNodeSyncer of %s: no peers", jid)
            return None
        return cls(journal_node, journal, uri, peers, name_service_id)

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"JournalNodeSyncer-{self.journal.journal_id}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)
        for proxy in self._proxies.values():
            try:
                proxy.close()
            except Exception:  # noqa: BLE001
                pass
        self._transfers.close()
        shutil.rmtree(self.journal.storage.edits_sync_dir, ignore_errors=True)

    def _run(self) -> None:
        LOG.info(
            "Starting SyncJournal daemon for journal %s, peers %s",
            self.journal.journal_id,
            self.peers,
        )
        while not self._stop.wait(self.interval_s):
            if not self.journal.is_formatted() and not self.format_from_peers().ok:
                continue
            try:
                self.sync_once()
            except Exception as e:  # noqa: BLE001 - the loop must survive a bad round
                LOG.warning("Journal sync round for %s failed: %s", self.journal.journal_id, e)
                self._last_error = f"{type(e).__name__}: {e}"
            self._last_round_ms = int(time.time() * 1000)

    def status(self) -> dict[str, object]:
        """The syncer's state for the JournalNode's status page (``/jmx``'s ``Syncer``)."""
        running = self._thread is not None and self._thread.is_alive()
        catch_up = self._catch_up
        state = reported_catch_up(self._catch_up_state, self.journal.is_formatted())
        return {
            "State": "running" if running else "stopped",
            "Peers": [f"{host}:{port}" for host, port in self.peers],
            "IntervalMs": int(self.interval_s * 1000),
            "LastRoundTime": self._last_round_ms,
            "LastError": self._last_error,
            "CatchUp": catch_up.text if catch_up is not None else state,
            "SegmentsBehind": catch_up.segments_behind if catch_up else None,
            "TxnsBehind": catch_up.txns_behind if catch_up else None,
            "PeersAnswered": catch_up.peers_answered if catch_up else None,
            "Unreachable": list(catch_up.unreachable) if catch_up else [],
            "FormatRefusal": self._format_refusal,
        }

    def _set_catch_up(self, state: str, catch_up: CatchUp | None = None) -> None:
        self._catch_up_state = state
        self._catch_up = catch_up
        self.journal.metrics.catch_up(state, catch_up)

    def format_from_peers(self) -> FormatDecision:
        """Format this unformatted journal from its peers if they agree (HDFS-16690), and
        only with ``dfs.journalnode.enable.sync.format`` on; a refusal is logged (once
        per distinct reason) and shown on the status page."""
        from hadoop_qjm.qjournal.server.journal_formatter import ask_peers, format_from_peers

        if not self.jn.settings.enable_sync_format:
            decision = FormatDecision(
                None, "dfs.journalnode.enable.sync.format is false: format it by hand"
            )
        else:
            self._set_catch_up(FORMATTING)
            with self._rpc_lock:  # the scrubber's thread shares the proxies
                answers = ask_peers(
                    self.peers, self.journal.journal_id, self.name_service_id, self._proxy
                )
            decision = format_from_peers(
                self.journal, answers, len(self.uri.addresses), require_edits=True
            )
        if decision.ok:
            self._format_refusal = None
            self._set_catch_up(FORMATTING)
            return decision
        if decision.reason != self._format_refusal:
            LOG.warning(
                "Journal %s stays unformatted: %s", self.journal.journal_id, decision.reason
            )
        self._format_refusal = decision.reason
        self._set_catch_up(UNFORMATTED)
        return decision

    def sync_once(self) -> int:
        """One round against every peer, the next one (round robin) tried first for each
        segment; records the catch-up state; returns how many segments were installed."""
        first = self._next_peer % len(self.peers)
        self._next_peer += 1
        done = self._sync(self.peers[first:] + self.peers[:first])
        self._set_catch_up(done.catch_up.state, done.catch_up)
        unreachable = done.catch_up.unreachable
        self._last_error = f"no manifest from {', '.join(unreachable)}" if unreachable else None
        return len(done.installed)

    def sync_with(self, peer, *, committed_bound: int | None = None, on_segment=None) -> SyncRound:
        """Download every finalized segment ``peer`` holds that is missing here, in txid
        order, stopping at the first that fails or is beyond the committed txid (raised
        to ``committed_bound`` for this round, see ``move_tmp_segment_to_current``);
        raises if ``peer`` cannot be asked (``journalnode -bootstrap``'s rounds).
        ``on_segment(log, nbytes)`` is called after each one is installed."""
        return self._sync([peer], committed_bound, on_segment, strict=True)

    def manifests_of(self, peers) -> list:
        """Each of ``peers``' getEditLogManifestFromJournal answer (finalized segments
        only), asked at once; an exception is an answer (not raised)."""
        jid = self.journal.journal_id

        def ask(peer):
            try:
                return self._proxy(peer).get_edit_log_manifest_from_journal(
                    jid, 0, False, self.name_service_id
                )
            except (OSError, HadoopException) as e:
                return e

        with self._rpc_lock:  # the scrubber's thread shares the proxies
            return each_peer(peers, ask, f"JournalNodeSyncer-manifests-{jid}")

    def _sync(
        self, peers, committed_bound: int | None = None, on_segment=None, *, strict: bool = False
    ) -> SyncRound:
        """Ask each of ``peers`` for its manifest (all at once), install what any of them
        holds and is missing here (each segment from the first of ``peers`` listing it, the
        others listing the same txids if that fails), and read the catch-up against all of
        them. A peer that cannot be asked is an unreachable one (raised with ``strict``)."""
        jid = self.journal.journal_id
        self.journal.storage.edits_sync_dir.mkdir(exist_ok=True)
        answers: list[PeerManifest] = []
        responses = {}
        for peer, response in zip(peers, self.manifests_of(peers), strict=True):
            if isinstance(response, Exception):
                if strict:
                    raise response
                e = response
                LOG.warning("Unable to get the manifest of %s from %s: %s", jid, peer_name(peer), e)
                answers.append(PeerManifest(peer_name(peer), error=f"{type(e).__name__}: {e}"))
                continue
            responses[peer] = response
            manifest = response.manifest
            answers.append(PeerManifest(peer_name(peer), manifest.logs, manifest.committed_txn_id))
        local = self.journal.get_edit_log_manifest(0, False).logs
        missing = segments_to_fetch(local, [r.manifest.logs for r in responses.values()])
        # Each segment is made durable in the installer's thread (segment_installer) while
        # the ones after it are received: the disk's waits overlap the downloads.
        installer = SegmentInstaller(self.journal, committed_bound, on_segment)
        # Two segments are received at once, each on its own connection and hashed by its
        # own fetcher as its bytes arrive: one's waits (its peer preparing the answer, the
        # file's creation) overlap the other's bytes, and the two md5s use both cores. They
        # are handed to the installer in txid order, and none after the first that failed.
        at_once = 1 if self.bandwidth_per_sec > 0 else DOWNLOADS_AT_ONCE
        fetchers = ThreadPoolExecutor(at_once, thread_name_prefix=f"JournalNodeSyncer-fetch-{jid}")
        queued = DOWNLOADS_QUEUED if at_once > 1 else 0
        fetches: collections.deque[Future] = collections.deque()
        halted = False  # nothing more is handed over: queued downloads are dropped
        try:
            for log in missing:
                if self._stop.is_set() or installer.failed.is_set():
                    halted = True
                    break
                if log.end_txid > self._committed(committed_bound):
                    # Not installable yet (move_tmp_segment_to_current checks again): no
                    # download from each peer holding it, every round, to be refused.
                    LOG.info("Not fetching %s yet: beyond the committed txid", log)
                    break
                fetches.append(fetchers.submit(self._fetch, log, responses))
                if len(fetches) >= at_once + queued and not _hand_over(
                    fetches.popleft(), installer
                ):
                    halted = True  # Hadoop stops the round at the first failure
                    break
            while fetches and not halted:
                halted = self._stop.is_set() or not _hand_over(fetches.popleft(), installer)
        finally:
            fetchers.shutdown(wait=True, cancel_futures=True)  # none queued starts now
            for fetch in fetches:  # received after a failure (or an error): not installed
                if not fetch.cancelled() and fetch.exception() is None:
                    _discard(fetch.result()[1])
            done = installer.close()
            self._transfers.close()  # no connection idles on a peer between rounds
        installed = [log for log, _ in done]
        nbytes = sum(size for _, size in done)
        local = self.journal.get_edit_log_manifest(0, False).logs
        catch_up = catch_up_state(local, answers, self._committed(committed_bound))
        return SyncRound(missing, installed, nbytes, catch_up)

    def _committed(self, committed_bound: int | None) -> int:
        committed = self.journal.committed_txn_id.get()
        return committed if committed_bound is None else max(committed, committed_bound)

    def _fetch(self, log: RemoteEditLog, responses):
        """``log`` and what :meth:`_receive` made of it from the first peer holding it that
        sent a good copy (None: none did)."""
        for peer, response in responses.items():
            if log in response.manifest.logs:
                received = self._receive(peer, response.from_url, log)
                if received is not None:
                    return log, received
        return log, None

    def _receive(self, peer, from_url: str | None, log: RemoteEditLog):
        """Download ``log`` from ``peer`` into the sync dir and check it: a
        :class:`ReceivedSegment` to install, the size of a copy already installed here,
        or None (nothing left behind) when it could not be had or must not be installed."""
        storage = self.journal.storage
        final = storage.finalized_edit_log(log.start_txid, log.end_txid)
        if final.exists():
            return final.stat().st_size
        tmp = storage.synced_edits_tmp(log.start_txid, log.end_txid)
        # A long download logs its progress (bytes, rate, ETA) every few seconds; every
        # download ends with one line of its size and rate.
        progress = TransferProgress(
            f"Downloading {final.name} from {peer[0]}:{peer[1]}",
            write=LOG.info,
            interval_s=PROGRESS_INTERVAL_S,
        )
        # A peer that sends the md5 it kept for this segment (computed from bytes that
        # verified, segment_md5) vouches for it: the bytes are hashed as they arrive and
        # the copy is installed only if they match (the transfer checks). Otherwise every
        # op's frame, CRC and txid are checked as the bytes arrive (the scrubber's check),
        # not in a second pass over the file.
        verifier = SegmentVerifier(log.start_txid, log.end_txid, DEFAULT_MAX_OP_SIZE)
        throttler = (  # dfs.edit.log.transfer.bandwidthPerSec
            DataTransferThrottler(self.bandwidth_per_sec) if self.bandwidth_per_sec > 0 else None
        )
        vouched: list[str] = []

        def on_response(headers):
            md5 = vouched_md5(headers.get(MD5_HEADER), headers.get(EDITS_NAME_HEADER), final.name)
            check = None if md5 is not None else verifier.feed
            if md5 is not None:
                vouched.append(md5)
            if throttler is None:
                return check

            def on_chunk(chunk) -> None:
                if check is not None:
                    check(chunk)
                throttler.throttle(len(chunk))

            return on_chunk

        started = time.monotonic()
        keep = False
        written: list[int] = []  # the installer fdatasyncs the written file's own descriptor
        try:
            size = self._transfers.download_to_file(
                self._url(peer, from_url, log.start_txid),
                tmp,
                self.transfer_timeout_s,
                progress=progress,
                on_response=on_response,
                sync=False,  # by the installer, before the rename
                on_written=lambda fd: written.append(os.dup(fd)),
            )
            took = transfer_summary(size, time.monotonic() - started)
            finding = None if vouched else verifier.finish()
            if finding is not None:
                # Never install a damaged copy (issue 27): another peer may have a good one.
                LOG.warning("Not installing %s from %s:%d: %s", final.name, *peer, finding)
                return None
            keep = True
            return ReceivedSegment(
                log,
                peer,
                tmp,
                final,
                size,
                vouched[0] if vouched else None,
                took,
                written[0],  # (set: the whole body was written)
            )
        except DigestMismatchException as e:
            LOG.warning("Not installing %s from %s:%d: %s", final.name, *peer, e)
            return None
        except (OSError, HadoopException) as e:
            LOG.warning("Failed to sync %s from %s:%d: %s", final.name, peer[0], peer[1], e)
            return None
        finally:
            if not keep:
                for fd in written:
                    os.close(fd)
                try:
                    tmp.unlink()
                except OSError:
                    pass

    def fetch(
        self, peer, from_url: str | None, log: RemoteEditLog, tmp, progress=None, on_response=None
    ) -> int:
        """Download finalized segment ``log`` from ``peer`` into ``tmp`` (fdatasynced): the
        one download path of the syncer and the scrubber. Its size in bytes. An
        ``X-MD5-Digest`` the peer sends is checked (DigestMismatchException);
        ``on_response(headers)`` returns what sees each chunk as it arrives (or None)."""
        url = self._url(peer, from_url, log.start_txid)
        return self._transfers.download_to_file(
            url, tmp, self.transfer_timeout_s, progress=progress, on_response=on_response
        )

    def peers_holding(self, log: RemoteEditLog) -> list[tuple[tuple[str, int], str | None]]:
        """(peer, its fromURL) of every peer whose manifest lists finalized segment ``log``
        with the same txids; a peer that cannot be asked is skipped."""
        holding = []
        for peer in self.peers:
            try:
                with self._rpc_lock:  # the scrubber's thread shares the proxies
                    response = self._proxy(peer).get_edit_log_manifest_from_journal(
                        self.journal.journal_id, log.start_txid, False, self.name_service_id
                    )
            except (OSError, HadoopException) as e:
                LOG.warning("Unable to get the manifest of %s:%d: %s", peer[0], peer[1], e)
                continue
            if any(
                (m.start_txid, m.end_txid, m.is_in_progress)
                == (log.start_txid, log.end_txid, False)
                for m in response.manifest.logs
            ):
                holding.append((peer, response.from_url))
        return holding

    def _url(self, peer, from_url: str | None, segment_txid: int) -> str:
        si = self.journal.storage.storage_info
        return get_journal_url(
            http_server_url(peer[0], from_url, None),
            self.journal.journal_id,
            segment_txid,
            si.to_colon_separated_string() if si else "",
            in_progress_ok=False,
        )

    def _proxy(self, peer):
        proxy = self._proxies.get(peer)
        if proxy is None:
            from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy

            proxy = QJournalProtocolProxy(
                peer[0],
                peer[1],
                timeout_s=self.transfer_timeout_s,
                socket_factory=self._socket_factory,
            )
            self._proxies[peer] = proxy
        return proxy
