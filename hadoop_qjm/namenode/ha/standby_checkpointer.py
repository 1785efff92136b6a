"""StandbyCheckpointer: the standby saves images so that the active never has to.

Every ``dfs.namenode.checkpoint.check.period`` the checkpointer looks at how many txns the
standby has applied since its newest image and how long ago that image was saved; past
``dfs.namenode.checkpoint.txns`` or ``dfs.namenode.checkpoint.period`` it saves
``fsimage_<last applied txid>`` in its own image dirs (under the namesystem lock, so the
tailer pauses) and uploads it over ``PUT /imagetransfer`` to the other NameNodes the
HDFS-12979 rule picks (:mod:`~hadoop_qjm.namenode.ha.checkpoint_receivers`: the active
stores it and may then purge old edits, an observer stores it, a standby refuses), one
thread per receiver so that a slow one does not hold up the others. A failed upload is
logged and retried at the next checkpoint; the local image stays.

Mid rolling upgrade (docs/ha.md "Upgrades") every check also sends the standby's
``fsimage_rollback_R`` to the other NameNodes until one (the active) has it
(``-rollingUpgrade query`` then says "Proceed"), and once the tailed
OP_ROLLING_UPGRADE_FINALIZE ended the upgrade, renames the rollback image ``fsimage_R`` as
the active did.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from hadoop_qjm.common.exceptions import HadoopException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode.ha.checkpoint_receivers import CheckpointReceivers, TransferResult
from hadoop_qjm.namenode.rolling_upgrade import has_rollback_image, rename_rollback_images

__all__ = ["CheckpointConf", "StandbyCheckpointer"]

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class CheckpointConf:
    """Hadoop's CheckpointConf: when a checkpoint is due, read once (the NameNode reads it
    at start, so a bad value refuses the start rather than the first standby)."""

    txns: int
    period_s: int
    check_period_s: float
    #: dfs.namenode.checkpoint.check.quiet-multiplier (HDFS-12979).
    quiet_multiplier: float = keys.DFS_NAMENODE_CHECKPOINT_QUIET_MULTIPLIER_DEFAULT

    @property
    def quiet_period_s(self) -> float:
        """How long a receiver another standby serves is left alone (CheckpointConf.
        getQuietPeriod: the multiplier times the checkpoint period)."""
        return self.period_s * self.quiet_multiplier

    @classmethod
    def from_conf(cls, conf: Configuration) -> CheckpointConf:
        return cls(
            txns=conf.get_int(
                keys.DFS_NAMENODE_CHECKPOINT_TXNS_KEY, keys.DFS_NAMENODE_CHECKPOINT_TXNS_DEFAULT
            ),
            period_s=conf.get_time_duration(
                keys.DFS_NAMENODE_CHECKPOINT_PERIOD_KEY,
                keys.DFS_NAMENODE_CHECKPOINT_PERIOD_DEFAULT,
                "s",
            ),
            check_period_s=conf.get_time_duration(  # a bare number is seconds, as Hadoop's
                keys.DFS_NAMENODE_CHECKPOINT_CHECK_PERIOD_KEY,
                keys.DFS_NAMENODE_CHECKPOINT_CHECK_PERIOD_DEFAULT,
                "s",
                return_unit="ms",
            )
            / 1000.0,
            quiet_multiplier=conf.get_float(
                keys.DFS_NAMENODE_CHECKPOINT_QUIET_MULTIPLIER_KEY,
                keys.DFS_NAMENODE_CHECKPOINT_QUIET_MULTIPLIER_DEFAULT,
            ),
        )


#: ``upload(nnid, txid)``: send fsimage_<txid> to NameNode ``nnid``; its answer, or an
#: HadoopException / OSError when the upload could not be made.
Upload = Callable[..., TransferResult]  # (nnid, txid, rollback=False)


class StandbyCheckpointer:
    """Checkpoints ``core`` (a NameNodeCore in standby); ``upload`` sends the saved image to
    one of ``receivers`` (the other NameNodes' ids); ``clock`` is monotonic seconds."""

    def __init__(
        self,
        core,
        conf: Configuration,
        *,
        receivers: Sequence[str] = (),
        upload: Upload | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.core = core
        self._upload = upload
        self._clock = clock
        checkpoint = CheckpointConf.from_conf(conf)
        #: Each receiver's standing (HDFS-12979's CheckpointReceiverEntry).
        self.receivers = CheckpointReceivers(receivers, checkpoint.quiet_period_s)
        self.checkpoint_txns = checkpoint.txns
        self.checkpoint_period_s = checkpoint.period_s
        self.check_period_s = max(0.01, min(checkpoint.check_period_s, float(checkpoint.period_s)))
        self.last_checkpoint_time = clock()
        self.checkpoints = 0
        self.uploads = 0
        #: The txid of the rollback image the active has (0: none sent yet).
        self.rollback_uploaded_txid = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def needs_checkpoint(self) -> str | None:
        """Why a checkpoint is due now, or None."""
        image = self.core.fs_image
        behind = self.core.last_applied_txid - image.most_recent_checkpoint_txid
        if behind <= 0:
            return None
        if behind >= self.checkpoint_txns:
            return f"{behind} txns since the last checkpoint (>= {self.checkpoint_txns})"
        age = self._clock() - self.last_checkpoint_time
        if age >= self.checkpoint_period_s:
            return f"{age:.0f}s since the last checkpoint (>= {self.checkpoint_period_s}s)"
        return None

    def do_checkpoint(self) -> int:
        """Save an image at the last applied txid and upload it; returns its txid."""
        txid = self.core.save_namespace()
        self.checkpoints += 1
        self.last_checkpoint_time = self._clock()
        LOG.info("Saved a checkpoint at txid %d", txid)
        if self._upload is not None:
            self.upload_to_receivers(txid)
        return txid

    def upload_to_receivers(self, txid: int) -> dict[str, TransferResult | None]:
        """Send fsimage_<txid> to every receiver due (in parallel) and record each answer;
        the answers (None: the upload could not be made)."""
        due = self.receivers.due(self._clock())
        if not due or self._upload is None:
            return {}
        upload = self._upload

        def one(nnid: str) -> TransferResult | None:
            try:
                return upload(nnid, txid)
            except (HadoopException, OSError) as e:
                LOG.warning("Exception during image upload of fsimage_%d to %s: %s", txid, nnid, e)
                return None

        with ThreadPoolExecutor(len(due), thread_name_prefix="TransferFsImageUpload") as pool:
            answers = dict(zip(due, pool.map(one, due)))
        now = self._clock()
        for nnid, result in answers.items():
            self.receivers.record(nnid, result, now)
            if result is TransferResult.SUCCESS:
                self.uploads += 1
            elif result is not None:
                LOG.info("Image upload rejected by the other NameNode %s: %s", nnid, result.name)
        return answers

    def rolling_upgrade_check(self) -> None:
        """Send the rollback image to the other NameNodes until one (the active) has it, or
        rename it after finalize (above)."""
        core = self.core
        if not core.namesystem.dir.rolling_upgrade_start_time:
            if has_rollback_image(core.storage):
                with core.namesystem.lock:
                    rename_rollback_images(core.storage)
            return
        images = core.storage.inspect_images(regular=False, rollback=True)
        if not images or self._upload is None or images[0].txid == self.rollback_uploaded_txid:
            return
        txid, accepted = images[0].txid, False
        for nnid in self.receivers.entries:
            try:
                result = self._upload(nnid, txid, rollback=True)
            except (HadoopException, OSError) as e:
                LOG.info("Upload of fsimage_rollback_%d to %s not done: %s", txid, nnid, e)
                continue
            accepted |= result is TransferResult.SUCCESS
        if accepted:
            self.rollback_uploaded_txid = txid

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, name="Standby State Checkpointer", daemon=True
        )
        self._thread.start()

    def stop(self, timeout_s: float = 120.0) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout_s)

    def _run(self) -> None:
        while not self._stop.wait(self.check_period_s):
            try:
                self.rolling_upgrade_check()
                reason = self.needs_checkpoint()
                if reason is not None:
                    LOG.info("Triggering a checkpoint: %s", reason)
                    self.do_checkpoint()
            except Exception as e:  # noqa: BLE001 - a failed checkpoint is retried later
                LOG.error("Exception in doCheckpoint: %s", e, exc_info=True)
