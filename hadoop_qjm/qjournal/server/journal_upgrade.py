"""JournalUpgrade: one journal's part in the HA upgrade of the layout (HDFS-5138).

Hadoop's ``Journal.doPreUpgrade/doUpgrade/doFinalize/canRollBack/doRollback``: the
directory steps are ``nn_upgrade_util``'s (NNUpgradeUtil), on the journal's
StorageDirectory; this class keeps the journal's state right around them::

    doPreUpgrade  current/ -> previous.tmp/, a new current/ with the edits files; the
                  journal then takes no call but doUpgrade (until a restart undoes it)
    doUpgrade     the promises, committed-txid and membership record copied into the new
                  current/, an empty paxos/, then VERSION (new layout version and cTime:
                  the commit point), previous.tmp/ -> previous/
    doFinalize    previous/ removed
    canRollBack   previous/ holds the target layout version
    doRollback    previous/ back as current/; the promise never goes down

Two steps beyond Hadoop, both for the power-cut model: doUpgrade writes the copied
files *before* VERSION (Hadoop copies them after renaming ``previous.tmp``, so a crash
in between leaves an upgraded journal with no promise, one an old writer could write
to); and between doPreUpgrade and doUpgrade the journal refuses every other call (a
write there would go to a ``current/`` that a restart's recovery deletes). A rollback
keeps the higher of the promise it rolls back to and the one it had, so no epoch is
ever accepted twice. Every call runs under the journal's lock (STYLE.md habit 3).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from hadoop_qjm.common import nn_upgrade_util
from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.durable import (
    BestEffortLongFile,
    FsyncFunction,
    PersistentLongFile,
    atomic_replace,
    fsync_dir,
)
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.qjournal.server.journal_checks import JournalCore
from hadoop_qjm.qjournal.server.journal_membership import MEMBERSHIP_FILE
from hadoop_qjm.qjournal.server.journal_state import (
    COMMITTED_TXID_FILENAME,
    LAST_PROMISED_FILENAME,
    LAST_WRITER_EPOCH,
)

__all__ = ["JournalUpgrade"]


class JournalUpgrade:
    """The upgrade calls of one Journal (see the module doc); built with its core."""

    def __init__(self, core: JournalCore, *, fsync: FsyncFunction = os.fsync) -> None:
        self._core = core
        self._fsync = fsync

    @property
    def _sd(self):  # noqa: ANN202 - the journal's StorageDirectory
        return self._core.storage.sd

    def do_pre_upgrade(self) -> None:
        """Keep ``current/`` as ``previous.tmp/``; a new ``current/`` holds its edits files."""
        core = self._core
        with core.lock:
            core.checks.check_formatted()
            state = core.state
            if state.cur_segment is not None:
                raise IOException(
                    f"Not upgrading journal {core.journal_id}: segment {state.cur_segment_txid} "
                    "is open (a writer is writing); the NameNode upgrades after it won a new "
                    "epoch, with no segment open"
                )
            state.drop_kept()
            # Not left open: its directory is renamed (it reopens lazily, as in Hadoop).
            state.committed_txn_id.close()
            core.storage.fjm.do_pre_upgrade()
            state.pre_upgraded = True
            core.checks.drop_edits_cache()

    def do_upgrade(self, storage_info: StorageInfo) -> None:
        """Take ``storage_info``'s layout version and cTime (this journal keeps its own
        namespace and cluster ids, which ``storage_info`` must not contradict)."""
        core = self._core
        storage, sd, state = core.storage, self._sd, core.state
        with core.lock:
            if not storage.is_formatted():
                core.checks.check_formatted()
            nn_upgrade_util.check_upgrade(sd)
            storage.check_consistent_namespace(storage_info)
            old = storage.storage_info
            new = dataclasses.replace(
                old, layout_version=storage_info.layout_version, ctime=storage_info.ctime
            )
            core.log.info(
                "Starting upgrade of edits directory: .\n   old LV = %d; old CTime = %d.\n"
                "   new LV = %d; new CTime = %d",
                old.layout_version,
                old.ctime,
                new.layout_version,
                new.ctime,
            )
            state.committed_txn_id.close(flush=False)  # rewritten from previous.tmp/ below
            self._carry_over(sd.previous_tmp, sd.current)
            core.storage.fjm.do_upgrade(
                new
            )  # VERSION (the commit point), previous.tmp/ -> previous/
            storage.analyze_storage()
            state.reload(sd.current, core.journal_id)
            state.pre_upgraded = False
            core.checks.drop_edits_cache()

    def _carry_over(self, source: Path, target: Path) -> None:
        """Journal.doUpgrade's copies, durable before the VERSION that commits them."""
        fsync = self._fsync
        for name in (LAST_PROMISED_FILENAME, LAST_WRITER_EPOCH):
            value = PersistentLongFile.read_file(source / name, 0)
            PersistentLongFile.write_file(target / name, value, fsync=fsync)
        committed = BestEffortLongFile(source / COMMITTED_TXID_FILENAME, INVALID_TXID)
        try:
            value = committed.get()
        finally:
            committed.close(flush=False)
        committed = BestEffortLongFile(target / COMMITTED_TXID_FILENAME, INVALID_TXID)
        try:
            committed.set_durably(value, fsync=fsync)
        finally:
            committed.close()
        membership = source / MEMBERSHIP_FILE
        if membership.exists():
            atomic_replace(target / MEMBERSHIP_FILE, membership.read_bytes(), fsync=fsync)
        self._core.storage.paxos_dir.mkdir(exist_ok=True)
        fsync_dir(target, fsync=fsync)

    def do_finalize(self) -> None:
        """Remove ``previous/`` (nothing to do without one)."""
        core = self._core
        with core.lock:
            core.checks.check_formatted()
            info = core.storage.storage_info
            core.log.info(
                "Finalizing upgrade for journal %s.\n   cur LV = %d; cur CTime = %d",
                core.storage.log_dir,
                info.layout_version,
                info.ctime,
            )
            core.storage.fjm.do_finalize()

    def can_roll_back(
        self, storage: StorageInfo, prev_storage: StorageInfo, target_layout_version: int
    ) -> bool:
        """Whether ``previous/`` exists and holds ``target_layout_version`` (changes nothing)."""
        core = self._core
        with core.lock:
            core.checks.check_formatted()
            return core.storage.fjm.can_roll_back(storage, prev_storage, target_layout_version)

    def do_rollback(self) -> None:
        """Put ``previous/`` back as ``current/`` and read it again (nothing to do without
        ``previous/``, as in Hadoop)."""
        core = self._core
        storage, sd, state = core.storage, self._sd, core.state
        with core.lock:
            core.checks.check_formatted()
            if not sd.previous.exists():
                core.log.info("Journal %s has no previous state: no rollback", sd.root)
                return
            promised = state.last_promised_epoch.get()
            core.checks.abort_cur_segment()
            state.drop_kept()
            state.committed_txn_id.close(flush=False)  # its directory is removed
            storage.fjm.do_rollback()
            restored = sd.current / LAST_PROMISED_FILENAME
            if PersistentLongFile.read_file(restored, 0) < promised:
                PersistentLongFile.write_file(restored, promised, fsync=self._fsync)
            storage.analyze_storage()
            state.reload(sd.current, core.journal_id)
            state.current_epoch_ipc_serial = -1
            core.checks.drop_edits_cache()
