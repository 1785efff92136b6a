"""NNStorageRetentionManager: which images and edits to keep (HDFS-1073 §8, Hadoop's class).

The policy (``dfs.namenode.num.checkpoints.retained`` = 2,
``dfs.namenode.num.extra.edits.retained`` = 1,000,000,
``dfs.namenode.max.extra.edits.segments.retained`` = 10,000):

* keep the newest K images; the oldest kept one, ``fsimage_N``, needs every txid > N;
* keep, in addition, a cushion of up to E older txids (a standby or a checkpointer may be
  behind), but never more than S whole older segments;
* delete older images (with their .md5) and ask every journal to purge the segments that
  end before the purge point (the JournalNodes purge too).

:func:`image_txid_to_retain` and :func:`edits_purge_point` are the rule as pure functions.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from hadoop_qjm.common.exceptions import IllegalArgumentException, always_assert
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode.nn_storage import NNStorage

__all__ = ["NNStorageRetentionManager", "image_txid_to_retain", "edits_purge_point"]

LOG = logging.getLogger(__name__)


def image_txid_to_retain(image_txids: Sequence[int], num_to_retain: int) -> int:
    """The txid of the oldest image to keep (0 when there is none)."""
    distinct = sorted(set(image_txids), reverse=True)
    if not distinct:
        return 0
    return distinct[min(num_to_retain, len(distinct)) - 1]


def edits_purge_point(
    min_image_txid: int,
    segments: Sequence[tuple[int, int]],
    num_extra_edits: int,
    max_extra_segments: int,
) -> int:
    """The txid below which edits may go, given the finalized ``(first, last)`` segments.

    The image ``fsimage_<min_image_txid>`` needs every txid above it; ``num_extra_edits``
    more are kept, unless that means keeping more than ``max_extra_segments`` older
    segments (NNStorageRetentionManager.purgeOldStorage).
    """
    minimum_required = min_image_txid + 1
    purge_from = max(0, minimum_required - num_extra_edits)
    older = sorted(s for s in segments if s[1] >= purge_from and s[0] < minimum_required)
    while len(older) > max_extra_segments:
        purge_from = older[0][1] + 1
        older.pop(0)
    always_assert(
        purge_from <= minimum_required,
        f"Should not purge more edits than required to restore: {purge_from} should be "
        f"<= {minimum_required}",
    )
    return purge_from


class NNStorageRetentionManager:
    """Applies the policy to ``storage`` and, through ``edit_log``, to every journal."""

    def __init__(self, conf: Configuration, storage: NNStorage) -> None:
        self.storage = storage
        self.num_checkpoints_to_retain = conf.get_int(
            keys.DFS_NAMENODE_NUM_CHECKPOINTS_RETAINED_KEY,
            keys.DFS_NAMENODE_NUM_CHECKPOINTS_RETAINED_DEFAULT,
        )
        self.num_extra_edits_to_retain = conf.get_int(
            keys.DFS_NAMENODE_NUM_EXTRA_EDITS_RETAINED_KEY,
            keys.DFS_NAMENODE_NUM_EXTRA_EDITS_RETAINED_DEFAULT,
        )
        self.max_extra_edits_segments_to_retain = conf.get_int(
            keys.DFS_NAMENODE_MAX_EXTRA_EDITS_SEGMENTS_RETAINED_KEY,
            keys.DFS_NAMENODE_MAX_EXTRA_EDITS_SEGMENTS_RETAINED_DEFAULT,
        )
        if self.num_checkpoints_to_retain <= 0:
            raise IllegalArgumentException(
                f"Must retain at least one checkpoint: {keys.DFS_NAMENODE_NUM_CHECKPOINTS_RETAINED_KEY}"
                f"={self.num_checkpoints_to_retain}"
            )
        if self.num_extra_edits_to_retain < 0:
            raise IllegalArgumentException(
                f"{keys.DFS_NAMENODE_NUM_EXTRA_EDITS_RETAINED_KEY} must not be negative"
            )

    def purge_old_storage(self, edit_log=None) -> int:
        """Delete old images, then old edits (if ``edit_log`` is given); returns the
        txid below which edits were purged (0: nothing)."""
        images = self.storage.inspect_images()
        min_image_txid = image_txid_to_retain(
            [image.txid for image in images], self.num_checkpoints_to_retain
        )
        LOG.info("Going to retain images with txid >= %d", min_image_txid)
        for image in images:
            if image.txid < min_image_txid:
                self.storage.purge_image(image)
        if edit_log is None:
            return 0
        purge_from = max(0, min_image_txid + 1 - self.num_extra_edits_to_retain)
        streams = edit_log.journal_set.select_input_streams(purge_from, in_progress_ok=False)
        try:
            segments = [(s.first_txid, s.last_txid) for s in streams]
        finally:
            for s in streams:
                s.close()
        purge_from = edits_purge_point(
            min_image_txid,
            segments,
            self.num_extra_edits_to_retain,
            self.max_extra_edits_segments_to_retain,
        )
        edit_log.purge_logs_older_than(purge_from)
        return purge_from
