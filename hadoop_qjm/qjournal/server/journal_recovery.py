"""Recovery half of a Journal: Paxos phases 1 and 2 of segment recovery (design paper §2.8-2.9).

``prepareRecovery`` reports what this node has (or has accepted) for a segment;
``acceptRecovery`` downloads the chosen copy and makes it this node's. The paxos
record is the commit point (STYLE.md habit 4): a crash after it but before the
rename is rolled forward by the next prepareRecovery (HDFS-3955).
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from pathlib import Path

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.durable import fsync_dir
from hadoop_qjm.common.exceptions import (
    HadoopException,
    IllegalArgumentException,
    IllegalStateException,
    IOException,
    always_assert,
)
from hadoop_qjm.editlog.edit_log_file_input_stream import scan_edit_log
from hadoop_qjm.editlog.file_journal_manager import EditLogFile
from hadoop_qjm.qjournal.protocol import recovery_rules, rules
from hadoop_qjm.qjournal.protocol.messages import (
    PersistedRecoveryPaxosData,
    PrepareRecoveryResponse,
    RequestInfo,
    SegmentState,
)
from hadoop_qjm.qjournal.server.jn_storage import JNStorage
from hadoop_qjm.qjournal.server.journal_checks import JournalCore
from hadoop_qjm.qjournal.server.journal_faults import JournalFaultInjector
from hadoop_qjm.qjournal.server.journal_state import JournalState
from hadoop_qjm.qjournal.server.kept_segment_state import KeptSegmentState
from hadoop_qjm.qjournal.server.paxos_record import read_paxos_record, write_paxos_record
from hadoop_qjm.qjournal.server.segment_md5 import write_md5_before_rename

__all__ = [
    "JournalRecovery",
    "SegmentScanner",
    "persisted_paxos_data",
    "purge_paxos_decision",
    "scan_segment_state",
    "segment_md5",
]

#: Writes a paxos record durably: ``(path, data)`` (``paxos_record.write_paxos_record``).
PaxosRecordWriter = Callable[[Path, PersistedRecoveryPaxosData], None]


def segment_md5(path: Path, length: int | None = None) -> str:
    """Hex MD5 of a segment's first ``length`` bytes (all of it when None): the content
    proxy of recovery (design paper §2.8: "the highest txid and md5sum")."""
    return _md5_of(path, length).hexdigest()


def _md5_of(path: Path, length: int | None = None):
    digest = hashlib.md5(usedforsecurity=False)
    remaining = length if length is not None else -1
    with open(path, "rb") as f:
        while remaining != 0:
            chunk = f.read(1 << 20 if remaining < 0 else min(1 << 20, remaining))
            if not chunk:
                break
            digest.update(chunk)
            if remaining > 0:
                remaining -= len(chunk)
    return digest


def scan_segment_state(path: Path, start_txid: int) -> KeptSegmentState | None:
    """A fresh scan of an in-progress segment, hashed: what the kept state must equal.
    None when the file has no usable header (nothing to keep)."""
    validation = scan_edit_log(path)
    if validation.has_corrupt_header or validation.unscannable_layout:
        return None
    return KeptSegmentState(
        start_txid,
        validation.last_txid,
        validation.valid_length,
        _md5_of(path, validation.valid_length),
        _file_id(path),
    )


def _file_id(path: Path) -> int:
    try:
        return os.stat(path).st_ino
    except OSError:
        return -1


def _still_describes(kept: KeptSegmentState, path: Path) -> bool:
    """The file is the one the state was kept for, and not cut below its valid length."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return st.st_ino == kept.file_id and st.st_size >= kept.valid_length


def persisted_paxos_data(
    storage: JNStorage, segment_txid: int
) -> PersistedRecoveryPaxosData | None:
    """The paxos record of ``segment_txid`` (Hadoop's getPersistedPaxosData), None if none."""
    data = read_paxos_record(storage.paxos_file(segment_txid))
    if data is not None and data.segment_state.start_txid != segment_txid:
        raise IllegalStateException(f"Bad persisted data for segment {segment_txid}: {data}")
    return data


def purge_paxos_decision(storage: JNStorage, segment_txid: int) -> None:
    """Delete the paxos record of ``segment_txid`` durably (a new segment or a finalize
    supersedes any recovery decided for it)."""
    path = storage.paxos_file(segment_txid)
    try:
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as e:
        raise IOException(f"Unable to delete paxos file {path}: {e}") from e
    fsync_dir(path.parent)


class SegmentScanner:
    """Scans of in-progress segments, answered from the kept state when it describes the
    file (issue 25): ``state.kept``, a :class:`KeptSegmentState` or None.

    ``enabled``: ``dfs.journalnode.kept-segment-state.enabled`` (else every use scans);
    ``verify``: compare the kept state with a fresh scan at every use (tests, fault runs).
    """

    def __init__(
        self, state: JournalState, log: logging.LoggerAdapter, *, enabled: bool, verify: bool
    ) -> None:
        self._state = state
        self._log = log
        self.enabled = enabled
        self.verify = verify and enabled

    def scan_in_progress(self, elf: EditLogFile) -> KeptSegmentState | None:
        """Scan the in-progress ``elf`` (sets its ``last_txid``, ``valid_length``, …).

        From the kept state when it describes this very file (same inode, not shorter
        than its valid length); otherwise the file is scanned and hashed, and that is
        kept. None when the kept state is off or the header is unusable: the caller
        then hashes the file itself if it needs the md5.
        """
        kept = self._state.kept
        if kept is not None and kept.start_txid == elf.first_txid:
            if _still_describes(kept, elf.path):
                if self.verify:
                    self._verify(kept, elf.path)
                elf.last_txid = kept.last_txid
                elf.valid_length = kept.valid_length
                elf.has_corrupt_header = elf.unscannable_layout = False
                return kept
            self._log.warning("%s changed behind the journal's back: scanning it", elf.path)
            self._state.kept = None
        if not self.enabled:
            elf.scan_log()
            return None
        state = scan_segment_state(elf.path, elf.first_txid)
        if state is None:
            elf.scan_log()  # a bad header: sets the fields (cheaply) as before
            return None
        elf.last_txid = state.last_txid
        elf.valid_length = state.valid_length
        elf.has_corrupt_header = elf.unscannable_layout = False
        self._state.kept = state
        return state

    def _verify(self, kept: KeptSegmentState, path: Path) -> None:
        """``dfs.journalnode.kept-segment-state.verify``: the kept state is the scan's."""
        fresh = scan_segment_state(path, kept.start_txid)
        always_assert(
            fresh is not None and fresh.facts() == kept.facts(),
            f"kept state of {path} {kept.facts()} != a fresh scan "
            f"{fresh.facts() if fresh is not None else None}",
        )


class JournalRecovery:
    """prepareRecovery and acceptRecovery of one journal, and the syncer's install.

    Built with the journal's ``core`` (lock, storage, state, checks), ``conf`` (the
    transfer timeout), the ``scanner`` of in-progress segments, the ``fault`` hooks on
    both sides of the commit point, ``fetch`` (downloads the accepted copy; None: over
    HTTP) and ``write_record`` (persists the paxos record).
    """

    def __init__(
        self,
        core: JournalCore,
        conf,  # noqa: ANN001 - a Configuration or None
        scanner: SegmentScanner,
        fault: JournalFaultInjector,
        *,
        fetch: Callable[[str, Path, float], object] | None = None,
        write_record: PaxosRecordWriter = write_paxos_record,
    ) -> None:
        self._conf = conf
        self._fault = fault
        self._scanner = scanner
        self._fetch = fetch
        self._write_record = write_record
        self._lock, self._state, self._checks = core.lock, core.state, core.checks
        self._storage, self._fjm, self._log = core.storage, core.storage.fjm, core.log
        self._journal_id = core.journal_id

    def prepare_recovery(self, req: RequestInfo, segment_txid: int) -> PrepareRecoveryResponse:
        """Paxos phase 1: what this node has, or has accepted, for ``segment_txid``."""
        with self._lock:
            self._checks.check_formatted()
            self._checks.check_request(req)
            self._checks.abort_cur_segment()
            previously_accepted = persisted_paxos_data(self._storage, segment_txid)
            self._complete_half_done_accept_recovery(previously_accepted)
            seg_info = self._get_segment_info(segment_txid)
            has_finalized = seg_info is not None and not seg_info.is_in_progress
            committed = self._state.committed_txn_id.get()
            last_committed = committed if committed != INVALID_TXID else None
            if previously_accepted is not None and not has_finalized:
                accepted = previously_accepted.segment_state
                always_assert(
                    seg_info is not None
                    and accepted.end_txid == seg_info.end_txid
                    and (accepted.md5 is None or accepted.md5 == seg_info.md5),
                    f"prev accepted: {accepted}\non disk:       {seg_info}",
                )
                response = PrepareRecoveryResponse(
                    rules.accepted_state_to_report(accepted, seg_info),
                    previously_accepted.accepted_in_epoch,
                    self._state.last_writer_epoch.get(),
                    last_committed,
                )
            else:
                response = PrepareRecoveryResponse(
                    seg_info, None, self._state.last_writer_epoch.get(), last_committed
                )
            self._log.info("Prepared recovery for segment %d: %s", segment_txid, response)
            return response

    def accept_recovery(self, req: RequestInfo, segment: SegmentState, from_url: str) -> None:
        """Paxos phase 2: make ``segment`` (fetched from ``from_url``) this node's copy.

        Commit point: the paxos record. A crash after it but before the rename is rolled
        forward by the next prepareRecovery (HDFS-3955).
        """
        with self._lock:
            self._checks.check_formatted()
            self._checks.check_writable()
            self._checks.check_request(req)
            self._checks.abort_cur_segment()
            seg_txid = segment.start_txid
            if not (segment.end_txid > 0 and segment.end_txid >= seg_txid):
                raise IllegalArgumentException(
                    f"bad recovery state for segment {seg_txid}: {segment} ; journal id: {self._journal_id}"
                )
            old = persisted_paxos_data(self._storage, seg_txid)
            new = PersistedRecoveryPaxosData(segment, req.epoch)
            always_assert(
                old is None or old.accepted_in_epoch <= req.epoch,
                f"Bad paxos transition, out-of-order epochs.\nOld: {old}\nNew: {new}\n",
            )
            synced_file: Path | None = None
            synced_state: KeptSegmentState | None = None
            current = self._get_segment_info(seg_txid)
            # Same length and digest (recovery_rules.is_same_content): no download.
            same_content = recovery_rules.is_same_content(current, segment)
            if not same_content:
                if current is None:
                    self._log.info("Synchronizing log %s: no current segment in place", segment)
                    self._checks.update_highest_written_txid(
                        max(segment.end_txid, self._state.highest_written_txid)
                    )
                else:
                    self._log.info(
                        "Synchronizing log %s: old segment %s is not the right length or content",
                        segment,
                        current,
                    )
                    committed = self._state.committed_txn_id.get()
                    if recovery_rules.discards_committed(current, segment, committed):
                        always_assert(
                            False,
                            f"Cannot replace segment {current} with new segment {segment}: would "
                            f"discard already-committed txn {committed}",
                        )
                    always_assert(
                        current.is_in_progress,
                        "Should never be asked to synchronize a different log on top of an "
                        "already-finalized segment",
                    )
                    if recovery_rules.txn_range_contains(current, self._state.highest_written_txid):
                        self._checks.update_highest_written_txid(segment.end_txid)
                synced_file, synced_state = self._sync_log(req, segment, from_url)
            else:
                self._log.info("Skipping download of log %s: already have up-to-date logs", segment)
            # The commit point (design paper §2.8): once the record is durable this node has
            # accepted the value, even if it crashes before the rename below.
            self._fault.before_persist_paxos_data()
            self._persist_paxos_data(seg_txid, new)
            self._fault.after_persist_paxos_data()
            if synced_file is not None:
                # The cache may hold this segment as another writer wrote it (the promise
                # before this accept emptied it already; the install does not rely on that).
                self._checks.drop_edits_cache()
                self._state.drop_kept(seg_txid)
                dst = self._storage.in_progress_edit_log(seg_txid)
                self._install(synced_file, dst)
                if self._scanner.enabled and synced_state is not None:
                    # The download was scanned and hashed to check it: that scan is the
                    # installed file's (it was fsynced before the rename).
                    synced_state.file_id = _file_id(dst)
                    self._state.kept = synced_state
            self._log.info("Accepted recovery for segment %d: %s", seg_txid, new)

    def move_tmp_segment_to_current(
        self,
        tmp: Path,
        final: Path,
        start_txid: int,
        end_txid: int,
        committed_bound: int | None = None,
        md5: str | None = None,
    ) -> bool:
        """Install a segment the syncer downloaded, but only if it is committed here.

        ``tmp`` must already be verified by the caller (``verify_segment_file``: its header,
        every op's length and CRC, txids ``start_txid`` … ``end_txid`` one by one), outside
        this journal's lock, so a catch-up never holds the writer's calls up with a scan.
        Returns False (and installs nothing) when ``end_txid`` is past this node's
        committed txid: a sync must never bring back a txn that was not committed.
        ``committed_bound``: a txid known committed elsewhere (``journalnode -bootstrap``
        passes the highest committed txid its agreeing peers report, having no writer to
        learn one from); it raises the bound for this call only, never the stored txid.
        ``md5``: the md5 its peer vouched for and the download matched, kept beside it
        (``segment_md5``; none: any stale one is removed), durable with the segment.
        """
        with self._lock:
            self._checks.check_formatted()
            self._checks.check_writable()
            bound = self._state.committed_txn_id.get()
            if committed_bound is not None:
                bound = max(bound, committed_bound)
            if end_txid > bound or not self._storage.current_dir.is_dir():
                return False
            if start_txid == self._state.cur_segment_txid:
                return False
            stale = self._fjm.get_log_file(start_txid)
            if stale is not None and stale.is_in_progress:
                # A committed, finalized copy supersedes this node's leftover in-progress one
                # (it missed the finalize); keep the old bytes aside, never two segments at S.
                stale.move_aside_stale_inprogress_file()
                self._state.drop_kept(start_txid)
            write_md5_before_rename(final, md5)  # made durable by _install's directory fsync
            self._install(tmp, final)
            return True

    def _persist_paxos_data(self, segment_txid: int, data: PersistedRecoveryPaxosData) -> None:
        """Hadoop's persistPaxosData: the record in Hadoop's format, written durably."""
        self._write_record(self._storage.paxos_file(segment_txid), data)

    def _complete_half_done_accept_recovery(self, paxos: PersistedRecoveryPaxosData | None) -> None:
        """Roll forward an accept that crashed after its commit point (HDFS-3955)."""
        if paxos is None:
            return
        seg_txid = paxos.segment_state.start_txid
        tmp = self._storage.temporary_edits_file(seg_txid, paxos.accepted_in_epoch)
        if tmp.exists():
            dst = self._storage.in_progress_edit_log(seg_txid)
            self._log.info(
                "Rolling forward previously half-completed synchronization: %s -> %s", tmp, dst
            )
            self._checks.drop_edits_cache()
            self._state.drop_kept(seg_txid)
            self._install(tmp, dst)

    def _install(self, tmp: Path, dst: Path) -> None:
        try:
            os.replace(tmp, dst)
            fsync_dir(dst.parent)
        except OSError as e:
            raise IOException(f"Unable to rename synced edit log {tmp} to {dst}: {e}") from e

    def _get_segment_info(self, segment_txid: int) -> SegmentState | None:
        elf = self._fjm.get_log_file(segment_txid)
        if elf is None:
            return None
        kept = self._scanner.scan_in_progress(elf) if elf.is_in_progress else None
        if elf.last_txid == INVALID_TXID:
            self._log.info("Edit log file %s appears to be empty. Moving it aside...", elf)
            self._state.drop_kept(segment_txid)
            elf.move_aside_empty_file()
            return None
        if kept is not None:
            md5 = kept.md5_hex
        else:
            md5 = segment_md5(elf.path, elf.valid_length if elf.is_in_progress else None)
        return SegmentState(segment_txid, elf.last_txid, elf.is_in_progress, md5)

    def _sync_log(
        self, req: RequestInfo, segment: SegmentState, url: str
    ) -> tuple[Path, KeptSegmentState | None]:
        """Download the accepted segment into ``edits_inprogress_<start>.epoch=<E>`` (fsynced)."""
        tmp = self._storage.temporary_edits_file(segment.start_txid, req.epoch)
        self._log.info("Synchronizing log %s from %s", segment, url)
        timeout_ms = (
            self._conf.get_time_duration("dfs.image.transfer.timeout", 60000, "ms")
            if self._conf
            else 60000
        )
        fetch = self._fetch
        if fetch is None:
            from hadoop_qjm.common.http_transfer import download_to_file as fetch
        try:
            fetch(url, tmp, timeout_ms / 1000.0)
            fsync_dir(tmp.parent)
            state = self._check_download(tmp, segment)
        except BaseException as e:
            try:
                tmp.unlink()
            except OSError:
                pass
            if isinstance(e, (OSError, HadoopException)):
                raise IOException(f"Unable to download {url} for segment {segment}: {e}") from e
            raise
        return tmp, state

    def _check_download(self, tmp: Path, segment: SegmentState) -> KeptSegmentState | None:
        """What was downloaded must be exactly the accepted segment: its last txid, and its
        digest when the coordinator sent one (so a wrong or stale copy is never installed).
        Returns the download's scan (hashed) when the kept state is on."""
        validation = scan_edit_log(tmp)
        if validation.has_corrupt_header or validation.last_txid != segment.end_txid:
            raise IOException(
                f"downloaded copy ends at txid {validation.last_txid}, expected {segment}"
            )
        if segment.md5 is None and not self._scanner.enabled:
            return None
        digest = _md5_of(tmp, validation.valid_length)
        if segment.md5 is not None and digest.hexdigest() != segment.md5:
            raise IOException(f"downloaded copy has md5 {digest.hexdigest()}, expected {segment}")
        if validation.unscannable_layout:
            return None
        return KeptSegmentState(
            segment.start_txid, validation.last_txid, validation.valid_length, digest
        )
