"""Rolling upgrade: prepare, query, finalize and rollback (Hadoop's
FSNamesystem.startRollingUpgrade / queryRollingUpgrade / finalizeRollingUpgrade,
FSImage.rollingRollback, RollingUpgradeInfo; docs/ha.md "Upgrades").

The state is the namespace's: ``FSDirectory.rolling_upgrade_start_time`` (0: none), set by
OP_ROLLING_UPGRADE_START and cleared by OP_ROLLING_UPGRADE_FINALIZE wherever the edits are
applied (the active that logs them, a standby that tails them, a restart that replays
them) and kept by every image saved meanwhile. The rollback image is
``fsimage_rollback_<R>`` (+ ``.md5``; NameNodeFile.IMAGE_ROLLBACK)::

    prepare, HA      START (txid S), roll: the segment ends at R = S+1. The standby's
                     tailing stops after that segment end (:class:`RollbackImagePoint`),
                     saves fsimage_rollback_R, and its checkpointer uploads it to the
                     active (PUT /imagetransfer?imageFile=IMAGE_ROLLBACK).
    prepare, no HA   save fsimage_rollback_R first (end the segment at R, start R+1),
                     then log START (Hadoop's non-HA path).
    query            "Proceed with rolling upgrade" once this NameNode has the image.
    finalize         FINALIZE, roll (HA); every fsimage_rollback_N becomes fsimage_N
                     (FSImage.renameCheckpoint(IMAGE_ROLLBACK, IMAGE)). Software of a
                     newer layout, started into the upgrade (``-rollingUpgrade started``),
                     kept writing the directory's older layout until here (the effective
                     layout, HDFS-8432); now VERSION gets its own, and so does every segment
                     from the roll on — on a standby or an observer when it reads FINALIZE.
    rollback         (cluster stopped) load fsimage_rollback_R, discard every segment
                     from R+1 on in every journal (the JournalNodes' discardSegments:
                     ``.trash``), rename it fsimage_R, purge the images after R
                     (:mod:`~hadoop_qjm.namenode.rolling_rollback`).

Nothing between the image and R+1 is lost to a rollback that the image does not hold:
prepare logs START and rolls under the namesystem lock, so the segment that ends at R
holds nothing after START, and the image holds every txid up to R.
"""

from __future__ import annotations

import enum
import logging
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from hadoop_qjm.common.durable import fsync_dir
from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException
from hadoop_qjm.editlog.fs_edit_log_op import (
    EndLogSegmentOp,
    RollingUpgradeFinalizeOp,
    RollingUpgradeStartOp,
)
from hadoop_qjm.namenode.fs_image_format import read_stored_md5, save_md5_file
from hadoop_qjm.namenode.name_node_layout_version import (
    MINIMUM_COMPATIBLE_LAYOUT_VERSION,
    effective_layout_version,
    no_rolling_upgrade_message,
)
from hadoop_qjm.namenode.nn_storage import (
    NNStorage,
    image_file_name,
    md5_file_for,
)
from hadoop_qjm.namenode.protocol.exceptions import RollingUpgradeException

__all__ = [
    "NO_ROLLING_UPGRADE",
    "RollbackImagePoint",
    "RollingUpgradeAction",
    "RollingUpgradeException",
    "RollingUpgradeInfo",
    "check_started_into_rolling_upgrade",
    "effective_layout_of",
    "finalize_rolling_upgrade",
    "has_rollback_image",
    "query_rolling_upgrade",
    "rename_rollback_images",
    "rolling_upgrade_call",
    "rolling_upgrade_message",
    "start_rolling_upgrade",
]

LOG = logging.getLogger(__name__)

#: DFSAdmin's line when there is nothing to report.
NO_ROLLING_UPGRADE = (
    "There is no rolling upgrade in progress or rolling upgrade has already been finalized."
)


class RollingUpgradeAction(enum.Enum):
    """HdfsConstants.RollingUpgradeAction; ``-rollingUpgrade`` alone is QUERY."""

    QUERY = "QUERY"
    PREPARE = "PREPARE"
    FINALIZE = "FINALIZE"

    @classmethod
    def from_string(cls, text: str) -> RollingUpgradeAction:
        if text == "":
            return cls.QUERY
        try:
            return cls(text.upper())
        except ValueError:
            raise IllegalArgumentException(
                f'Failed to covert "{text}" to RollingUpgradeAction'
            ) from None


def _timestamp(ms: int) -> str:
    """Java's ``new Date(ms) + " (=" + ms + ")"`` (RollingUpgradeInfo.timestamp2String)."""
    text = time.strftime("%a %b %d %H:%M:%S %Z %Y", time.localtime(ms / 1000))
    return f"{text} (={ms})"


@dataclass(frozen=True)
class RollingUpgradeInfo:
    """Hadoop's RollingUpgradeInfo (times in ms; 0: not started / not finalized)."""

    block_pool_id: str
    start_time: int
    finalize_time: int = 0
    created_rollback_images: bool = False

    @property
    def is_started(self) -> bool:
        return self.start_time != 0

    @property
    def is_finalized(self) -> bool:
        return self.finalize_time != 0

    def __str__(self) -> str:
        start = _timestamp(self.start_time) if self.start_time else "<NOT STARTED>"
        final = _timestamp(self.finalize_time) if self.finalize_time else "<NOT FINALIZED>"
        return (
            f"  Block Pool ID: {self.block_pool_id}\n"
            f"     Start Time: {start}\n"
            f"  Finalize Time: {final}"
        )

    def bean(self) -> dict[str, object]:
        """RollingUpgradeInfo.Bean: NameNodeInfo's ``RollingUpgradeStatus`` in /jmx."""
        return {
            "blockPoolId": self.block_pool_id,
            "createdRollbackImages": self.created_rollback_images,
            "finalizeTime": self.finalize_time,
            "startTime": self.start_time,
        }


def rolling_upgrade_message(info: RollingUpgradeInfo | None) -> str:
    """What ``dfsadmin -rollingUpgrade`` prints for ``info`` (DFSAdmin.printMessage)."""
    if info is None or not info.is_started:
        return NO_ROLLING_UPGRADE
    if not info.created_rollback_images and not info.is_finalized:
        return (
            "Preparing for upgrade. Data is being saved for rollback.\n"
            'Run "dfsadmin -rollingUpgrade query" to check the status\n'
            f"for proceeding with rolling upgrade\n{info}"
        )
    if not info.is_finalized:
        return f"Proceed with rolling upgrade:\n{info}"
    return f"Rolling upgrade is finalized.\n{info}"


def has_rollback_image(storage: NNStorage) -> bool:
    """FSImage.hasRollbackFSImage: some image directory holds a ``fsimage_rollback_N``."""
    return bool(storage.inspect_images(regular=False, rollback=True))


# ---- the active's three calls ----------------------------------------------------------------
def query_rolling_upgrade(core: Any) -> RollingUpgradeInfo | None:
    """FSNamesystem.queryRollingUpgrade: the upgrade in progress, or None."""
    namesystem = core.namesystem
    with namesystem.lock:
        start = namesystem.dir.rolling_upgrade_start_time
        if not start:
            return None
        return RollingUpgradeInfo(
            core.ns_info.block_pool_id, start, 0, has_rollback_image(core.storage)
        )


def start_rolling_upgrade(
    core: Any, ha_enabled: bool, now_ms: Callable[[], int]
) -> RollingUpgradeInfo:
    """FSNamesystem.startRollingUpgrade (``-rollingUpgrade prepare``). An upgrade already
    in progress is returned as it is, nothing logged (Hadoop's, HDFS-7340)."""
    namesystem, image = core.namesystem, core.fs_image
    with namesystem.lock:
        existing = query_rolling_upgrade(core)
        if existing is not None:
            return existing
        start = now_ms()
        if not ha_enabled:
            # The rollback image first, at the end of the current segment (Hadoop's
            # startRollingUpgradeInternalForNonHA: saveNamespace(IMAGE_ROLLBACK)).
            image.save_namespace(namesystem, rollback=True)
            LOG.info("Successfully saved namespace for preparing rolling upgrade.")
        txid = namesystem.log_admin_op(RollingUpgradeStartOp(0, time=start))
        if ha_enabled:
            # Roll so that the standby can tail the START (and take its rollback image at
            # the end of this very segment).
            image.roll_edit_log(namesystem)
        LOG.info("Rolling upgrade started at txid %d", txid)
        return RollingUpgradeInfo(
            core.ns_info.block_pool_id, start, 0, has_rollback_image(core.storage)
        )


def finalize_rolling_upgrade(
    core: Any, ha_enabled: bool, now_ms: Callable[[], int]
) -> RollingUpgradeInfo | None:
    """FSNamesystem.finalizeRollingUpgrade; None (nothing logged) when there is none."""
    namesystem, image = core.namesystem, core.fs_image
    with namesystem.lock:
        existing = query_rolling_upgrade(core)
        if existing is None:
            return None
        finalized = now_ms()
        namesystem.log_admin_op(RollingUpgradeFinalizeOp(0, time=finalized))
        # FSImage.updateStorageVersion once FINALIZE is durable (a crash before it: the
        # restart replays FINALIZE and does it then); the roll's segment and every later
        # one are of the software's layout, no longer the effective older one.
        core.storage.update_storage_version()
        image.edit_log.layout_version = effective_layout_of(core.storage, namesystem.dir)
        if ha_enabled:
            image.roll_edit_log(namesystem)
        rename_rollback_images(core.storage)
        return replace(existing, finalize_time=finalized, created_rollback_images=False)


def effective_layout_of(storage: NNStorage, fs_dir: Any) -> int:
    """FSNamesystem.getEffectiveLayoutVersion of this NameNode: the layout of the segments
    it starts and of the images it saves."""
    return effective_layout_version(
        bool(fs_dir.rolling_upgrade_start_time),
        storage.ns_info.layout_version,  # type: ignore[union-attr]
        MINIMUM_COMPATIBLE_LAYOUT_VERSION,
        storage.software_layout_version,
    )


def check_started_into_rolling_upgrade(
    storage: NNStorage, fs_dir: Any, unread: str | None = None
) -> None:
    """Once the namespace is loaded: a directory of an older layout than the software's
    (let through by ``-rollingUpgrade started``) needs a rolling upgrade in progress —
    without one the software would write its own layout into an old directory. A FINALIZE
    replayed while loading has written the software's layout already (and that passes).
    ``unread``: why a standby could not read the shared edits (their START may be there)."""
    storage_lv = storage.ns_info.layout_version  # type: ignore[union-attr]
    if storage_lv != storage.software_layout_version and not fs_dir.rolling_upgrade_start_time:
        message = no_rolling_upgrade_message(storage_lv, storage.software_layout_version)
        if unread is not None:
            message += f" The shared edits could not be read: {unread}"
        raise IOException(message)


def rename_rollback_images(storage: NNStorage) -> int:
    """Every ``fsimage_rollback_N`` becomes ``fsimage_N`` (dropped if that exists);
    returns how many were renamed (FSImage.renameCheckpoint(IMAGE_ROLLBACK, IMAGE))."""
    renamed = 0
    for found in storage.inspect_images(regular=False, rollback=True):
        final = found.path.with_name(image_file_name(found.txid))
        old_md5 = md5_file_for(found.path)
        if final.exists():
            found.path.unlink()
        else:
            md5 = read_stored_md5(found.path)
            if md5 is not None:
                save_md5_file(final, md5, fsync=storage.fsync)
            os.replace(found.path, final)  # the commit point of this directory
            renamed += 1
        old_md5.unlink(missing_ok=True)
        fsync_dir(found.path.parent, fsync=storage.fsync)
        LOG.info("Renamed %s to %s", found.path.name, final.name)
    return renamed


# ---- the standby: where its tailing stops for the rollback image -----------------------------
class RollbackImagePoint:
    """Wraps a standby's tailing streams: while a rolling upgrade is in progress and this
    NameNode has no rollback image, reading stops after the next OP_END_LOG_SEGMENT, so
    that the image saved then (``reached``) ends exactly where a segment does — the point
    rollback discards from (R+1)."""

    def __init__(self, storage: NNStorage, fs_dir: Any) -> None:
        self._storage = storage
        self._fs_dir = fs_dir
        self._armed: bool | None = None
        self.reached = False

    def wrap(self, streams: Iterable[Any]) -> list[Any]:
        return [_StopAt(stream, self) for stream in streams]

    def next_op(self, stream: Any) -> Any:
        if self.reached:
            return None
        op = stream.read_op()
        if op is None:
            return None
        if isinstance(op, RollingUpgradeStartOp) or (
            self._armed is None and self._fs_dir.rolling_upgrade_start_time
        ):
            self._armed = not has_rollback_image(self._storage)
        if self._armed and isinstance(op, EndLogSegmentOp):
            self.reached = True
        return op


class _StopAt:
    def __init__(self, stream: Any, point: RollbackImagePoint) -> None:
        self._stream = stream
        self._point = point
        self.name = getattr(stream, "name", str(stream))

    def read_op(self) -> Any:
        return self._point.next_op(self._stream)

    def __str__(self) -> str:
        return str(self._stream)


def rolling_upgrade_call(name_node: Any, action: str) -> RollingUpgradeInfo | None:
    """``name_node``'s ClientProtocol.rollingUpgrade: QUERY (a read), PREPARE or FINALIZE
    (writes, on the active only: ``check_operation``)."""
    chosen = RollingUpgradeAction.from_string(action)
    LOG.info("rollingUpgrade %s", chosen.value)
    name_node.check_operation("READ" if chosen is RollingUpgradeAction.QUERY else "WRITE")
    core, now = name_node._running(), lambda: int(time.time() * 1000)
    if chosen is RollingUpgradeAction.PREPARE:
        return start_rolling_upgrade(core, name_node.ha_enabled, now)
    if chosen is RollingUpgradeAction.FINALIZE:
        return finalize_rolling_upgrade(core, name_node.ha_enabled, now)
    return query_rolling_upgrade(core)
