"""NameNodeCore: a NameNode without RPC — storage, recovery, namespace and edit log, wired.

::

    format_namenode(conf)                         # local dirs + every JournalNode; fsimage_0
    with NameNodeCore(conf) as nn:                # lock dirs, recover, load, open for write
        nn.namesystem.mkdirs("/user/alice")
        nn.roll_edit_log(); nn.save_namespace()
    # close(): OP_END_LOG_SEGMENT, finalize, unlock

Start-up (FSNamesystem.loadFromDisk + startActiveServices, HDFS-1073 §4): lock and check
the name directories; delete half-written checkpoints; recover every journal's unfinished
segment — for a ``qjournal://`` journal that is the QJM's epoch fencing and Paxos recovery,
after which this NameNode is the journal's only writer; load the newest image and the edits
after it; start ``edits_inprogress_<last+1>``. The daemon wraps this object.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException
from hadoop_qjm.common.security.user_group_information import UserGroupInformation
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.file_journal_manager import FileJournalManager
from hadoop_qjm.editlog.journal_manager import JournalManager
from hadoop_qjm.namenode import layout_upgrade
from hadoop_qjm.namenode.fs_edit_log import (
    EditLogState,
    FSEditLog,
    TerminateCallback,
    terminate_process,
)
from hadoop_qjm.namenode.fs_image import FSImage, SaveNamespaceFaultInjector
from hadoop_qjm.namenode.fs_namesystem import FSNamesystem
from hadoop_qjm.namenode.journal_set import JournalSet
from hadoop_qjm.namenode.name_node_layout_version import rolling_upgrade_started
from hadoop_qjm.namenode.nn_storage import NameNodeDirs, NNStorage, uri_path
from hadoop_qjm.namenode.rolling_upgrade import (
    RollbackImagePoint,
    check_started_into_rolling_upgrade,
    effective_layout_of,
)
from hadoop_qjm.namenode.standby_edit_log import CutStream, StandbyEditLog

__all__ = [
    "NameNodeCore",
    "JournalFactory",
    "confirm_format",
    "create_journal_set",
    "format_namenode",
    "new_namespace_info",
]

LOG = logging.getLogger(__name__)

#: ``factory(conf, uri, ns_info)`` -> the JournalManager of a non-file edits URI.
JournalFactory = Callable[[Configuration, str, NamespaceInfo], JournalManager]


def _default_journal_factory(conf: Configuration, uri: str, ns_info: NamespaceInfo):
    scheme = uri.split(":", 1)[0]
    if scheme != "qjournal":
        raise IllegalArgumentException(f"No class configured for {scheme}")
    from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager

    return QuorumJournalManager(conf, uri, ns_info)


def create_journal_set(
    conf: Configuration,
    dirs: NameNodeDirs,
    storage: NNStorage,
    ns_info: NamespaceInfo,
    journal_factory: JournalFactory | None = None,
    *,
    shared_only: bool = False,
) -> JournalSet:
    """The JournalSet of ``dirs``' edits locations (FSEditLog.initJournals)."""
    factory = journal_factory or _default_journal_factory
    journal_set = JournalSet(
        conf.get_int(
            keys.DFS_NAMENODE_EDITS_DIR_MINIMUM_KEY, keys.DFS_NAMENODE_EDITS_DIR_MINIMUM_DEFAULT
        )
    )
    # Shared journals first (HDFS-2874): an edit reaches the local dirs only after the
    # quorum took it, so a local copy never holds a txn the JournalNodes may have lost.
    uris = sorted(dirs.edits_uris, key=lambda uri: uri not in dirs.shared_uris)
    try:
        for uri in uris:
            shared = uri in dirs.shared_uris
            if shared_only and not shared:
                continue
            required = uri in dirs.required_uris
            if uri.startswith("file:"):
                sd = storage.get_storage_directory(uri_path(uri))
                if sd is None:
                    LOG.warning("No storage directory for edits URI %s: skipping it", uri)
                    continue
                journal: JournalManager = FileJournalManager(conf, sd.sd)
            elif shared:
                journal = _shared_journal(conf, uri, storage, ns_info, factory)
            else:
                journal = factory(conf, uri, ns_info)
            journal_set.add(journal, required, shared)
    except BaseException:
        journal_set.close()
        raise
    return journal_set


def _shared_journal(
    conf: Configuration,
    uri: str,
    storage: NNStorage,
    ns_info: NamespaceInfo,
    factory: JournalFactory,
) -> JournalManager:
    """The shared journal: of ``uri``, or of the JournalNode set it moved to as recorded
    in the name directories (docs/ha.md, "Changing the JournalNode set"); a quorum journal
    records each set it settles on there."""
    from hadoop_qjm.namenode import shared_edits_switch as switch

    dirs = [d.current for d in storage.dirs]
    journal = factory(conf, switch.choose_shared_edits_uri(uri, dirs), ns_info)
    if hasattr(journal, "on_stable_set"):

        def record(qjm) -> None:  # noqa: ANN001
            rec = qjm.membership_record
            switch.record_stable_set(
                [d.current for d in storage.dirs],
                qjm.journal_id,
                uri,
                rec.new,
                rec.epoch,
                rec.version,
                rec.old,
                fsync=storage.fsync,
            )

        journal.on_stable_set = record
    return journal


def new_namespace_info(
    cluster_id: str | None = None, clock: Callable[[], float] = time.time
) -> NamespaceInfo:
    """A new namespace (NNStorage.newNamespaceInfo): a random 31-bit id, ``CID-<uuid>``,
    and ``BP-<random>-<ip>-<ms>`` as the block pool id; cTime 0."""
    namespace_id = 0
    while namespace_id == 0:
        namespace_id = secrets.randbelow(0x7FFFFFFF)
    block_pool_id = f"BP-{secrets.randbelow(0x7FFFFFFF)}-127.0.0.1-{int(clock() * 1000)}"
    return NamespaceInfo(namespace_id, cluster_id or f"CID-{uuid.uuid4()}", block_pool_id, 0)


def confirm_format(
    conf: Configuration,
    with_data: Sequence[str],
    *,
    force: bool = False,
    confirm: Callable[[Sequence[str]], bool] | None = None,
) -> None:
    """May the locations ``with_data`` (those holding data) be formatted? (FSImage.confirmFormat)

    Yes if none holds data or with ``force``; else IOException, unless ``confirm(locations)``
    says yes: no ``confirm`` is -nonInteractive ("Running in non-interactive mode, and data
    appears to exist in X. Not formatting."), a no is "Format aborted in X". With
    ``dfs.reformat.disabled`` any data aborts, even with ``force`` (NameNode.format).
    As in Hadoop, only ``force`` reaches the JournalNodes: a yes is not enough for one that
    holds data ("Can't format the storage directory because the current directory is not
    empty").
    """
    if not with_data:
        return
    if conf.get_bool(keys.DFS_REFORMAT_DISABLED_KEY, keys.DFS_REFORMAT_DISABLED_DEFAULT):
        raise IOException("NameNode format aborted as reformat is disabled for this cluster.")
    if force:
        return
    if confirm is None:
        raise IOException(
            f"Running in non-interactive mode, and data appears to exist in "
            f"{with_data[0]}. Not formatting."
        )
    for location in with_data:  # one question each; the abort names the one declined
        if not confirm([location]):
            raise IOException(f"Format aborted in {location}")


def format_namenode(
    conf: Configuration,
    cluster_id: str | None = None,
    *,
    force: bool = False,
    confirm: Callable[[Sequence[str]], bool] | None = None,
    journal_factory: JournalFactory | None = None,
    fs_owner: str | None = None,
    report: Callable[[str], None] | None = None,
) -> NamespaceInfo:
    """``namenode -format``: new namespace in every local dir and every JournalNode; fsimage_0.

    First every existing local directory is locked (a running NameNode's lock refuses the
    format before any question is asked). If any location already holds data, formatting
    goes ahead only with ``force`` or when ``confirm([location])`` says yes to each (the
    command line asks "Re-format filesystem in ..."); without ``confirm`` it is refused
    (-nonInteractive). ``force`` is also passed to the JournalNodes, which refuse to
    re-format a non-empty journal without it. Before anything is changed, every
    JournalNode is asked whether a writer uses the journal (``check_format``: then
    JournalInUseException and nothing changes anywhere); ``report`` gets the line saying
    what the format destroys there.
    """
    if not conf.get_bool(
        keys.DFS_NAMENODE_SUPPORT_ALLOW_FORMAT_KEY, keys.DFS_NAMENODE_SUPPORT_ALLOW_FORMAT_DEFAULT
    ):
        raise IOException(
            "The option dfs.namenode.support.allow.format is set to false for this "
            "filesystem, so it cannot be formatted. You will need to set "
            "dfs.namenode.support.allow.format parameter to true in order to format this "
            "filesystem"
        )
    dirs = NameNodeDirs.from_conf(conf)
    storage = NNStorage.from_conf(conf, dirs)
    ns_info = replace(
        new_namespace_info(cluster_id), layout_version=storage.software_layout_version
    )
    journals = create_journal_set(conf, dirs, storage, ns_info, journal_factory)
    try:
        storage.lock_existing_dirs()
        remote = [
            jas for jas in journals.journals if not isinstance(jas.manager, FileJournalManager)
        ]
        with_data = storage.has_some_data() + [
            str(getattr(jas.manager, "uri", jas.manager))
            for jas in remote
            if jas.manager.has_some_data()  # type: ignore[attr-defined]
        ]
        confirm_format(conf, with_data, force=force, confirm=confirm)
        for jas in remote:
            destroyed = jas.manager.check_format()
            if destroyed is not None and report is not None:
                report(f"{destroyed} of {getattr(jas.manager, 'uri', jas.manager)}")
        LOG.info("Allocated new BlockPoolId: %s", ns_info.block_pool_id)
        namesystem = FSNamesystem(conf, fs_owner=fs_owner)
        image = FSImage(conf, storage)
        storage.format(ns_info)
        for jas in remote:
            jas.manager.format(ns_info, force)  # type: ignore[attr-defined]
        image.save_image_in_all_dirs(namesystem, 0)
    finally:
        journals.close()
        storage.close()
    return ns_info


class NameNodeCore:
    """Storage, image, edit log and namespace of one running NameNode (see module doc).

    ``terminate`` is called if the journals fail (default: exit the process);
    ``journal_factory`` builds non-file journals (default: QuorumJournalManager);
    ``fault_injector`` has save_namespace's hooks; ``clock`` (ms) stamps the namespace;
    ``caller`` tells the namesystem who calls (FSNamesystem's; default its own user);
    ``upgrade`` is ``namenode -upgrade``: start() upgrades the layout, then writes.
    """

    def __init__(
        self,
        conf: Configuration,
        *,
        terminate: TerminateCallback = terminate_process,
        journal_factory: JournalFactory | None = None,
        fault_injector: SaveNamespaceFaultInjector | None = None,
        clock: Callable[[], int] | None = None,
        fs_owner: str | None = None,
        fsync=os.fsync,
        start: bool = True,
        ha_enabled: bool = False,
        caller: Callable[[], UserGroupInformation] | None = None,
        upgrade: bool = False,
    ) -> None:
        self.conf = conf
        self.upgrade = upgrade
        #: With HA the NameNode starts as a standby (start() loads but does not write);
        #: start_active_services() makes it the writer, start_standby_services() a reader.
        self.ha_enabled = ha_enabled
        self._dirs: NameNodeDirs | None = None
        self._terminate = terminate
        self._journal_factory = journal_factory
        self._fault_injector = fault_injector
        self._ns_kwargs: dict[str, Any] = {"clock": clock} if clock is not None else {}
        self._ns_kwargs["on_rolling_upgrade_finalized"] = self._rolling_upgrade_finalized
        if caller is not None:
            self._ns_kwargs["caller"] = caller
        self._fs_owner = fs_owner
        self._fsync = fsync
        self.storage: NNStorage | None = None
        self.fs_image: FSImage | None = None
        self.edit_log: FSEditLog | None = None
        self.namesystem: FSNamesystem | None = None
        #: Why the shared edits could not be read when the standby loaded (None: they could).
        self.shared_edits_error: str | None = None
        #: Notified after each tailing round: an observer's held calls wait on it.
        self.applied = threading.Condition()
        if start:
            self.start()

    @property
    def ns_info(self) -> NamespaceInfo | None:
        """The storage's (its layout moves at an upgrade or a rolling upgrade's finalize)."""
        return None if self.storage is None else self.storage.ns_info

    def start(self) -> None:
        """Recover, load and open the edit log for write (see the module docstring)."""
        dirs = self._dirs = NameNodeDirs.from_conf(self.conf)
        self.storage = NNStorage.from_conf(self.conf, dirs, fsync=self._fsync)
        try:
            self.storage.recover_storage_dirs(
                upgrading=self.upgrade,
                rolling_upgrade_started=rolling_upgrade_started(self.conf),
            )
            self.fs_image = FSImage(
                self.conf, self.storage, fault_injector=self._fault_injector, fsync=self._fsync
            )
            self.fs_image.recover_checkpoints()
            self.namesystem = FSNamesystem(self.conf, fs_owner=self._fs_owner, **self._ns_kwargs)
            if self.ha_enabled and not self.upgrade:
                self._load_as_standby()
                return
            self.edit_log = self._new_edit_log()
            self.edit_log.init_journals_for_write()
            if self.upgrade:
                layout_upgrade.check_shared_log_ctime(self.edit_log.journal_set, self.storage)
            self.edit_log.recover_unclosed_streams()
            last_txid = self.fs_image.load(self.namesystem, self.edit_log)
            if not self.upgrade:
                check_started_into_rolling_upgrade(self.storage, self.namesystem.dir)
            self.edit_log.layout_version = effective_layout_of(self.storage, self.namesystem.dir)
            self.edit_log.set_next_txid(last_txid + 1)
            if self.upgrade:
                layout_upgrade.do_upgrade(self.fs_image, self.namesystem)
            self.edit_log.open_for_write()
            self.namesystem.edit_log = self.edit_log
        except BaseException:
            self.abort()
            raise
        LOG.info(
            "NameNode started: namespace %d, %d inodes, writing from txid %d",
            self.ns_info.namespace_id,
            self.namesystem.files_total,
            self.edit_log.last_written_txid,
        )

    # ---- HA: the edit log as a writer or as a reader of the shared journals ----------------------
    def _new_edit_log(self, *, shared_only: bool = False) -> FSEditLog:
        journals = create_journal_set(
            self.conf,
            self._dirs,  # type: ignore[arg-type]
            self.storage,  # type: ignore[arg-type]
            self.ns_info,  # type: ignore[arg-type]
            self._journal_factory,
            shared_only=shared_only,
        )
        edit_log = FSEditLog(
            journals,
            terminate=self._terminate,
            pipeline_depth=self.conf.get_int(
                keys.DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_KEY,
                keys.DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_DEFAULT,
            ),
        )
        # Mid rolling upgrade the directory's older layout (effective_layout_of).
        edit_log.layout_version = effective_layout_of(self.storage, self.namesystem.dir)  # type: ignore[arg-type]
        self.fs_image.attach_edit_log(edit_log)  # type: ignore[union-attr]
        return edit_log

    def _rolling_upgrade_finalized(self) -> None:
        """OP_ROLLING_UPGRADE_FINALIZE applied (FSEditLogLoader: FSImage.updateStorageVersion)
        where it is read — a standby or an observer tailing it, a start-up replaying it; the
        active that logs it writes VERSION once the op is durable (finalize_rolling_upgrade)."""
        if self.edit_log is None or not self.edit_log.is_segment_open():
            self.storage.update_storage_version()  # type: ignore[union-attr]

    def _load_as_standby(self) -> None:
        """Load the image and every *finalized* edit of every journal, recovering nothing
        (a standby must not fence the active), then read the shared journals only."""
        reader = self._new_edit_log()
        reader.init_shared_journals_for_read()
        try:
            self.fs_image.load(self.namesystem, reader, to_at_least_txid=0)  # type: ignore[union-attr, arg-type]
        finally:
            reader.close()
        self.shared_edits_error = reader.shared_read_error
        check_started_into_rolling_upgrade(
            self.storage,  # type: ignore[arg-type]
            self.namesystem.dir,  # type: ignore[union-attr]
            self.shared_edits_error,
        )
        self.edit_log = self._new_edit_log(shared_only=True)
        self.edit_log.init_shared_journals_for_read()
        self._follow_applied_txid(self.edit_log)
        self.namesystem.edit_log = StandbyEditLog()  # type: ignore[union-attr]
        LOG.info(
            "NameNode started in standby: namespace %d, %d inodes, loaded up to txid %d",
            self.ns_info.namespace_id,  # type: ignore[union-attr]
            self.namesystem.files_total,  # type: ignore[union-attr]
            self.last_applied_txid,
        )

    @property
    def last_applied_txid(self) -> int:
        """The last txid in the namespace: written (active) or loaded (standby)."""
        edit_log = self.edit_log
        if edit_log is not None and edit_log.is_open_for_write():
            return edit_log.last_written_txid
        return self.fs_image.last_applied_txid  # type: ignore[union-attr]

    def _follow_applied_txid(self, edit_log: FSEditLog) -> None:
        """A standby's edit log writes nothing, but its last written txid is the last
        applied one, as after Hadoop's FSImage.loadFSImage (setNextTxId(lastAppliedTxId +
        1)); here it follows every tailer round too, so that /jmx's LastWrittenTransactionId
        and the status page show how far the standby has read (issue 28)."""
        applied = self.fs_image.last_applied_txid  # type: ignore[union-attr]
        if applied > edit_log.last_written_txid:
            edit_log.set_next_txid(applied + 1)

    def await_shared_edits(self, wait_s: float) -> bool | None:
        """Long-poll the shared journal for the txn after the last applied one (issue 25).

        True once a majority of JournalNodes has written it, False when ``wait_s`` passed
        first; None when no journal can be waited on (in-progress tailing off, or not a
        quorum journal): the tailer then polls. Raises IOException when the JournalNodes
        cannot be reached."""
        edit_log, image = self.edit_log, self.fs_image
        if edit_log is None or image is None:
            return None
        for jas in edit_log.journal_set.journals:
            wait = getattr(jas.manager, "await_journaled_edits", None)
            if wait is not None and getattr(jas.manager, "in_progress_tailing", False):
                return wait(image.last_applied_txid + 1, max(1, int(wait_s * 1000)))
        return None

    def tail_edits(
        self, in_progress_ok: bool, max_txns: int | None = None, *, catching_up: bool = False
    ) -> int:
        """Apply what the journals hold after the last applied txid (EditLogTailer.doTailEdits);
        returns how many txns were applied. Only durable (quorum-acknowledged) txns count.

        Only a standby tails; ``catching_up`` is the transition to active reading the
        finalized edits before it writes. A tailer round that outlived its tailer (a slow
        roll request) finds the edit log open for write and applies nothing: the active's
        own txns must never be applied twice."""
        image, namesystem, edit_log = self.fs_image, self.namesystem, self.edit_log
        if image is None or namesystem is None or edit_log is None:
            raise IOException("The NameNode is not running")
        # Only the tailer (or a transition, with the tailer stopped) calls this: the txid read
        # here cannot move before the lock is taken. Selecting talks to the JournalNodes, so
        # it runs without the namesystem lock.
        first = image.last_applied_txid + 1
        # require_shared: a shared journal that cannot be read (no quorum of JournalNodes
        # answered) is an error here, not "nothing new" — the standby reports it in
        # monitorHealth, and a transition to active does not write past edits it missed.
        streams = edit_log.select_input_streams(
            first, 0, in_progress_ok=in_progress_ok, only_durable_txns=True, require_shared=True
        )
        readers = streams
        if max_txns:
            readers = [CutStream(stream, first + max_txns - 1) for stream in streams]
        # Mid rolling upgrade, the rollback image ends where a segment does (rolling_upgrade).
        point = RollbackImagePoint(self.storage, namesystem.dir)  # type: ignore[arg-type]
        readers = readers if catching_up else point.wrap(readers)

        def applied(op) -> None:  # an error mid-stream keeps what was applied before it
            image.last_applied_txid = op.txid

        with namesystem.lock:
            if not catching_up and (self.edit_log is not edit_log or edit_log.is_open_for_write()):
                for stream in streams:
                    stream.close()
                return 0
            try:
                namesystem.loader.load_edits(readers, first, on_op=applied)
            finally:
                for stream in streams:
                    stream.close()
                self._follow_applied_txid(edit_log)
                with self.applied:
                    self.applied.notify_all()
            if point.reached:
                image.save_namespace(namesystem, rollback=True)
            return image.last_applied_txid - first + 1

    def start_active_services(self, in_progress_tailed: bool = False) -> int:
        """Become the writer (FSNamesystem.startActiveServices): fence the old writer and
        finish its segment (QJM recovery through a new epoch), catch up on every finalized
        edit, then start a segment at the next txid. Returns that txid.

        A failure of the recovery or of the catch-up is raised (the caller returns to
        standby): this NameNode has written nothing yet. Hadoop's NameNode exits there; a
        standby that stays up lets its failover controller retry once the JournalNodes are
        back. From the segment start on, a journal failure terminates, as in Hadoop."""
        namesystem = self.namesystem
        if namesystem is None or self.edit_log is None:
            raise IOException("The NameNode is not running")
        with namesystem.lock:
            if self.edit_log.is_open_for_write():
                return self.edit_log.last_written_txid
            self.edit_log.close()
            self.edit_log = self._new_edit_log()
            self.edit_log.init_journals_for_write()
            self.edit_log.recover_unclosed_streams(terminate_on_failure=False)
            # catchupDuringFailover: everything is finalized now; read until nothing is new.
            while self.tail_edits(in_progress_ok=False, catching_up=True) > 0:
                pass
            self.edit_log.set_next_txid(self.fs_image.last_applied_txid + 1)  # type: ignore[union-attr]
            self.edit_log.layout_version = effective_layout_of(self.storage, namesystem.dir)  # type: ignore[arg-type]
            self.edit_log.open_for_write()
            namesystem.edit_log = self.edit_log
            LOG.info("Active: writing from txid %d", self.edit_log.last_written_txid)
            return self.edit_log.last_written_txid

    def start_standby_services(self) -> None:
        """Stop writing (end the segment if the edit log is healthy) and read the shared
        journals (FSNamesystem.stopActiveServices + startStandbyServices)."""
        namesystem = self.namesystem
        if namesystem is None or self.edit_log is None:
            raise IOException("The NameNode is not running")
        with namesystem.lock:
            if self.edit_log.state is EditLogState.OPEN_FOR_READING:
                return
            was_writing = self.edit_log.is_open_for_write()
            last = self.edit_log.last_written_txid
            try:
                self.edit_log.close()
            except OSError as e:
                LOG.warning("Could not end the segment cleanly: %s", e)
            namesystem.edit_log = StandbyEditLog(self.edit_log)
            if was_writing:
                self.fs_image.last_applied_txid = max(  # type: ignore[union-attr]
                    self.fs_image.last_applied_txid,  # type: ignore[union-attr]
                    self.edit_log.last_written_txid,
                    last,
                )
            self.edit_log = self._new_edit_log(shared_only=True)
            self.edit_log.init_shared_journals_for_read()
            self._follow_applied_txid(self.edit_log)

    def save_namespace(self) -> int:
        """Checkpoint now (HDFS-1073 §5); returns the image's txid."""
        return self._image().save_namespace(self.namesystem)  # type: ignore[arg-type]

    def roll_edit_log(self) -> int:
        """Start a new segment (``dfsadmin -rollEdits``); returns its first txid."""
        return self._image().roll_edit_log(self.namesystem)  # type: ignore[arg-type]

    def reconfigure_shared_edits(self, uri: str) -> str:
        """Move the shared edits to ``uri``'s JournalNodes (``haadmin
        -reconfigureSharedEdits``); returns the set now written to."""
        return self._image().reconfigure_shared_edits(self.namesystem, uri)  # type: ignore[arg-type]

    def _image(self) -> FSImage:
        if self.fs_image is None or self.namesystem is None:
            raise IOException("The NameNode is not running")
        return self.fs_image

    def close(self) -> None:
        """End the segment cleanly, close the journals, unlock the directories."""
        try:
            if self.edit_log is not None:
                if self.namesystem is not None:
                    with self.namesystem.lock:
                        self.edit_log.close()
                else:
                    self.edit_log.close()
        finally:
            if self.storage is not None:
                self.storage.close()

    def abort(self) -> None:
        """Stop as a crash would: nothing finalized, the segment left in progress."""
        try:
            if self.edit_log is not None:
                self.edit_log.abort()
        finally:
            if self.storage is not None:
                self.storage.close()

    def __enter__(self) -> NameNodeCore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
