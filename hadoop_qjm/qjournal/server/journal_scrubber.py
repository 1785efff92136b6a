"""JournalNodeScrubber: re-verify finalized segments and repair the damaged ones (issue 27).

Hadoop's JournalNodes never re-read what they hold: a flipped bit in a finalized segment
waits for the day a NameNode needs that segment. Here a daemon thread per journal
(``dfs.journalnode.scrub.enabled``, on by default) reads every finalized segment, oldest
first, at most ``dfs.journalnode.scrub.bytes-per-second`` (so it never competes with the
journal's fsyncs), and starts a full pass at most every ``dfs.journalnode.scrub.interval``
ms. Every op's frame and CRC and the txid sequence are checked
(:class:`~hadoop_qjm.qjournal.server.scrub_rules.SegmentVerifier`).

A damaged segment is repaired with a copy from the peers, fetched through the
JournalNodeSyncer's download path (fsynced on arrival): the copy must verify by itself
and a second peer must hold the same bytes (equal md5, :func:`is_copy_confirmed`). Then,
under the journal's lock, the damaged file is renamed ``<name>.corrupt`` (Hadoop's name
for moved-aside files) and the copy renamed to the segment's name, the directory fsynced
(the commit point). With no confirmed copy the damaged file is still moved aside and the
node reports it (log, metrics, status page): an operator decides (docs/journalnode.md).
A segment a reader has open (``/getJournal``) is left alone until the reader is done.

Counters and gauges (Prometheus ``journalnode_scrub_*``, labelled ``journal_id``, and the
``JournalNodeScrubber-<jid>`` bean on ``/jmx``): segments and bytes scrubbed, corrupt
segments found, repaired, unrepairable, the end of the last full pass.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from prometheus_client import CollectorRegistry, Counter, Gauge

from hadoop_qjm.common.exceptions import HadoopException
from hadoop_qjm.common.remote_edit_log import RemoteEditLog
from hadoop_qjm.conf import config_schema
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.fs_edit_log_op import DEFAULT_MAX_OP_SIZE
from hadoop_qjm.qjournal.server.scrub_rules import (
    RepairOutcome,
    ScrubFinding,
    SegmentVerifier,
    confirmed_copy,
    throttle_delay,
)
from hadoop_qjm.qjournal.server.segment_md5 import read_stored_md5

__all__ = [
    "JournalNodeScrubber",
    "ScrubMetrics",
    "ScrubSettings",
    "SegmentReaders",
    "verify_segment_file",
]

LOG = logging.getLogger(__name__)

#: The most read at once; smaller when the rate is lower, so a pause follows each read.
_MAX_CHUNK = 256 * 1024


@dataclass(frozen=True)
class ScrubSettings:
    enabled: bool = keys.DFS_JOURNALNODE_SCRUB_ENABLED_DEFAULT
    interval_ms: int = keys.DFS_JOURNALNODE_SCRUB_INTERVAL_DEFAULT
    bytes_per_second: int = keys.DFS_JOURNALNODE_SCRUB_BYTES_PER_SECOND_DEFAULT

    @classmethod
    def from_conf(cls, conf) -> ScrubSettings:
        """Read and check the ``dfs.journalnode.scrub.*`` keys (ConfigurationError names a bad one)."""
        enabled = config_schema.read(conf, keys.DFS_JOURNALNODE_SCRUB_ENABLED_KEY)
        interval_ms = config_schema.read(conf, keys.DFS_JOURNALNODE_SCRUB_INTERVAL_KEY)
        bytes_per_second = config_schema.read(conf, keys.DFS_JOURNALNODE_SCRUB_BYTES_PER_SECOND_KEY)
        return cls(enabled=enabled, interval_ms=interval_ms, bytes_per_second=bytes_per_second)


class ScrubMetrics:
    """The scrubber's families in a JournalNode's registry (one set per node)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        labels = ["journal_id"]

        def counter(name: str, doc: str) -> Counter:
            return Counter(f"journalnode_scrub_{name}", doc, labels, registry=registry)

        self.segments = counter("segments", "Finalized segments the scrubber has read")
        self.bytes = counter("bytes", "Bytes of finalized segments the scrubber has read")
        self.corrupt = counter("corrupt_segments", "Damaged finalized segments found")
        self.repaired = counter("repaired_segments", "Damaged segments replaced by a peer's copy")
        self.unrepairable = counter(
            "unrepairable_segments", "Damaged segments moved aside with no confirmed copy"
        )
        self.passes = counter("passes", "Full passes over a journal's finalized segments")
        self.last_pass = Gauge(
            "journalnode_scrub_last_full_pass_timestamp_seconds",
            "When the last full pass ended (0: none yet)",
            labels,
            registry=registry,
        )


def _value(child) -> float:
    return child._value.get()  # noqa: SLF001 - prometheus_client has no public getter


class SegmentReaders:
    """Which segment files are open for a reader (``/getJournal``), so the scrubber never
    moves one from under it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, int] = {}

    def track(self, f: BinaryIO, path: Path, stored_md5: str | None = None) -> BinaryIO:
        """``f`` (open on ``path``), counted as a reader until it is closed; its
        ``stored_md5`` attribute is ``stored_md5`` (the segment's kept md5, if any)."""
        key = str(path)
        with self._lock:
            self._open[key] = self._open.get(key, 0) + 1
        return _TrackedFile(f, lambda: self._release(key), stored_md5)

    def _release(self, key: str) -> None:
        with self._lock:
            left = self._open.get(key, 0) - 1
            if left > 0:
                self._open[key] = left
            else:
                self._open.pop(key, None)

    def in_use(self, path: Path) -> bool:
        with self._lock:
            return str(path) in self._open


class _TrackedFile:
    """A file object whose close also releases its :class:`SegmentReaders` entry."""

    def __init__(
        self, f: BinaryIO, release: Callable[[], None], stored_md5: str | None = None
    ) -> None:
        self._f = f
        self._release: Callable[[], None] | None = release
        self.stored_md5 = stored_md5

    def __getattr__(self, name: str):
        return getattr(self._f, name)

    def close(self) -> None:
        try:
            self._f.close()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()

    def __enter__(self) -> _TrackedFile:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def verify_segment_file(
    path: Path,
    first_txid: int,
    last_txid: int,
    max_op_size: int = DEFAULT_MAX_OP_SIZE,
    *,
    chunk: int = _MAX_CHUNK,
    after_read: Callable[[int], bool] | None = None,
) -> tuple[ScrubFinding | None, str, int]:
    """Verify a finalized segment file: (the finding or None, the md5 of its bytes up to
    the end of its last txid's op, where that end is: -1 if not reached).
    ``after_read(n)`` is called after each read (the scrubber's throttle); returning False
    stops early with no finding."""
    verifier = SegmentVerifier(first_txid, last_txid, max_op_size)
    digest = hashlib.md5(usedforsecurity=False)
    read = 0
    with open(path, "rb") as f:
        while not verifier.done:
            data = f.read(chunk)
            if not data:
                break
            read += len(data)
            before = verifier.valid_length
            verifier.feed(data)
            if verifier.valid_length >= 0 and before < 0:
                data = data[: len(data) - (read - verifier.valid_length)]
            digest.update(data)
            if after_read is not None and not after_read(len(data)):
                return None, "", -1
    return verifier.finish(), digest.hexdigest(), verifier.valid_length


class JournalNodeScrubber:
    """The scrubber thread of one journal.

    ``syncer`` (a JournalNodeSyncer, or None when the journal has no peers) provides the
    peers' manifests and the download; ``clock`` and ``wait`` (an Event's wait) are
    passed in so tests can drive a pass directly (:meth:`scrub_once`).
    """

    def __init__(
        self,
        journal,
        settings: ScrubSettings,
        metrics: ScrubMetrics,
        syncer=None,
        *,
        clock: Callable[[], float] = time.monotonic,
        max_op_size: int = DEFAULT_MAX_OP_SIZE,
    ) -> None:
        self.journal = journal
        self.settings = settings
        self.syncer = syncer
        self.max_op_size = max_op_size
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        jid = journal.journal_id
        self.log = logging.LoggerAdapter(LOG, {"journal_id": jid})
        self._segments = metrics.segments.labels(jid)
        self._bytes = metrics.bytes.labels(jid)
        self._corrupt = metrics.corrupt.labels(jid)
        self._repaired = metrics.repaired.labels(jid)
        self._unrepairable = metrics.unrepairable.labels(jid)
        self._passes = metrics.passes.labels(jid)
        self._last_pass = metrics.last_pass.labels(jid)
        #: What the status page shows.
        self.state = "idle"
        self.current: str | None = None
        self.findings: list[str] = []  # the latest ones, newest last
        self._pass_start = 0.0
        self._pass_bytes = 0

    # ---- life cycle ----------------------------------------------------------------------------
    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._run, name=f"JournalNodeScrubber-{self.journal.journal_id}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def _run(self) -> None:
        interval_s = self.settings.interval_ms / 1000.0
        self.log.info(
            "Starting the scrubber of journal %s: a pass at most every %d ms, %d bytes/s",
            self.journal.journal_id,
            self.settings.interval_ms,
            self.settings.bytes_per_second,
        )
        while not self._stop.is_set():
            started = self._clock()
            if self.journal.is_formatted():
                try:
                    self.scrub_once()
                except Exception as e:  # noqa: BLE001 - the thread must survive a bad pass
                    self.log.warning("Scrub pass of %s failed: %s", self.journal.journal_id, e)
            self.state = "waiting for the next pass"
            self._stop.wait(max(0.0, started + interval_s - self._clock()))
        self.state = "stopped"

    # ---- one pass ------------------------------------------------------------------------------
    def scrub_once(self) -> list[ScrubFinding]:
        """Verify every finalized segment once, oldest first; handle each finding."""
        self._pass_start = self._clock()
        self._pass_bytes = 0
        findings = []
        logs = [
            log
            for log in self.journal.fjm.get_log_files(0)
            if not log.is_in_progress and not log.has_corrupt_header
        ]
        for log in sorted(logs, key=lambda f: f.first_txid):
            if self._stop.is_set():
                return findings
            self.state = "scrubbing"
            self.current = log.name
            try:
                st = os.stat(log.path)
                finding, md5, valid_length = verify_segment_file(
                    log.path,
                    log.first_txid,
                    log.last_txid,
                    self.max_op_size,
                    chunk=min(_MAX_CHUNK, self.settings.bytes_per_second),
                    after_read=self._throttle,
                )
            except FileNotFoundError:
                continue  # purged meanwhile
            except OSError as e:
                finding = ScrubFinding(log.first_txid, 0, f"unreadable: {e}")
            if self._stop.is_set():
                return findings
            self._segments.inc()
            if finding is not None:
                findings.append(finding)
                self._handle(log, finding)
            elif valid_length == st.st_size:
                self._check_kept_md5(log.path, st, md5)
        self.current = None
        self._passes.inc()
        self._last_pass.set(time.time())
        return findings

    def _throttle(self, n: int) -> bool:
        self._bytes.inc(n)
        self._pass_bytes += n
        delay = throttle_delay(
            self._pass_bytes, self._clock() - self._pass_start, self.settings.bytes_per_second
        )
        if delay > 0:
            self._stop.wait(delay)
        return not self._stop.is_set()

    def _check_kept_md5(self, path: Path, st: os.stat_result, md5: str) -> None:
        """A segment that just verified (all of its bytes: no padding after its last op)
        has its md5 kept beside it (``segment_md5``): written when missing, rewritten when
        it differs (the ``.md5`` rotted: receivers would refuse this node's copy)."""
        stored = read_stored_md5(path)
        if stored == md5:
            return
        try:
            kept = self.journal.keep_verified_md5(path, st.st_ino, st.st_size, md5)
        except OSError as e:
            self.log.warning("Scrubber: could not keep the md5 of %s: %s", path.name, e)
            return
        if kept and stored is not None:
            self.log.warning(
                "Scrubber: the md5 kept for %s was %s but its verified bytes hash to %s; rewritten",
                path.name,
                stored,
                md5,
            )

    # ---- findings ------------------------------------------------------------------------------
    def _note(self, text: str) -> None:
        self.findings = [*self.findings[-9:], text]

    def _handle(self, log, finding: ScrubFinding) -> None:
        self._corrupt.inc()
        self.log.error("Scrubber: %s is corrupt at %s", log.path, finding)
        replacement, replacement_md5 = self._fetch_confirmed_copy(log)
        try:
            outcome = self.journal.replace_damaged_segment(
                log.path, replacement, self.journal.segment_readers, replacement_md5
            )
        finally:
            if replacement is not None:
                try:
                    replacement.unlink()
                except OSError:
                    pass
        if outcome is RepairOutcome.IN_USE:
            self.log.warning(
                "Scrubber: %s is being read; leaving it until the next pass", log.path.name
            )
            self._note(f"{log.name}: corrupt at {finding}; in use, retried next pass")
        elif outcome is RepairOutcome.GONE:
            self.log.info("Scrubber: %s was purged meanwhile", log.path.name)
        elif replacement is not None:
            # The finding first, then the count: a reader of the bean that sees the count
            # sees the finding with it.
            self._note(f"{log.name}: corrupt at {finding}; repaired")
            self._repaired.inc()
            self.log.warning(
                "Scrubber: repaired %s with a copy confirmed by two peers; the damaged file "
                "is kept as %s.corrupt",
                log.path.name,
                log.path.name,
            )
        else:
            self._note(f"{log.name}: corrupt at {finding}; UNREPAIRABLE, moved aside")
            self._unrepairable.inc()
            self.log.error(
                "Scrubber: no peer has a confirmed good copy of %s; moved it aside as "
                "%s.corrupt. It is UNREPAIRABLE here: see docs/journalnode.md",
                log.path.name,
                log.path.name,
            )

    def _fetch_confirmed_copy(self, log) -> tuple[Path | None, str | None]:
        """A verified peer copy whose bytes a second peer confirms, and its md5 when it
        covers the whole copy; (None, None) if there is none."""
        if self.syncer is None:
            return None, None
        wanted = RemoteEditLog(log.first_txid, log.last_txid, False)
        sync_dir = self.journal.storage.edits_sync_dir
        sync_dir.mkdir(exist_ok=True)
        copies: list[tuple[Path, bool, str]] = []
        try:
            for i, (peer, from_url) in enumerate(self.syncer.peers_holding(wanted)):
                tmp = sync_dir / f"{log.name}.scrub.{i}"
                try:
                    size = self.syncer.fetch(peer, from_url, wanted, tmp)
                    finding, md5, valid_length = verify_segment_file(
                        tmp, log.first_txid, log.last_txid, self.max_op_size
                    )
                    whole = valid_length == size
                except (OSError, HadoopException) as e:
                    self.log.warning("Scrubber: no copy of %s from %s: %s", log.name, peer, e)
                    continue
                if finding is not None:
                    self.log.warning(
                        "Scrubber: the copy of %s from %s:%d is damaged too, at %s",
                        log.name,
                        peer[0],
                        peer[1],
                        finding,
                    )
                copies.append((tmp, finding is None, md5, whole))
            chosen = confirmed_copy([(verified, md5) for _, verified, md5, _ in copies])
            if chosen is None:
                return None, None
            tmp, _, md5, whole = copies[chosen]
            final_tmp = tmp.with_name(f"{log.name}.scrub")
            os.replace(tmp, final_tmp)
            return final_tmp, md5 if whole else None
        finally:
            for tmp, _, _, _ in copies:
                try:
                    tmp.unlink()
                except OSError:
                    pass

    # ---- reporting -----------------------------------------------------------------------------
    def bean(self) -> dict[str, object]:
        """The ``/jmx`` bean attributes."""
        return {
            "State": self.state,
            "SegmentsScrubbed": int(_value(self._segments)),
            "BytesScrubbed": int(_value(self._bytes)),
            "CorruptSegments": int(_value(self._corrupt)),
            "RepairedSegments": int(_value(self._repaired)),
            "UnrepairableSegments": int(_value(self._unrepairable)),
            "FullPasses": int(_value(self._passes)),
            "LastFullPassTime": int(_value(self._last_pass) * 1000),
            "BytesPerSecondLimit": self.settings.bytes_per_second,
            # For the status page: the segment being read, the latest findings, and the
            # damaged files moved aside here.
            "Current": self.current or "",
            "Findings": list(self.findings),
            "MovedAside": sorted(
                p.name for p in self.journal.storage.current_dir.glob("edits_*.corrupt")
            ),
        }
