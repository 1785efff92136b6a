"""A standby NameNode's services: the :class:`EditLogTailer` and, with
``dfs.ha.standby.checkpoints``, the :class:`StandbyCheckpointer`, with what they ask of the
other NameNodes of the nameservice (``rollEditLog`` on the active, the new fsimage uploaded
to the others: HDFS-12979). The NameNode starts them when it becomes standby and stops them before it becomes
active (Hadoop's NameNode.StandbyState and FSNamesystem.startStandbyServices).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hadoop_qjm.common.exceptions import HadoopException, IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.ha.checkpoint_receivers import TransferResult, transfer_result
from hadoop_qjm.namenode.ha.edit_log_tailer import EditLogTailer
from hadoop_qjm.namenode.ha.ha_util import NameNodeAddress, image_transfer_base, other_namenodes
from hadoop_qjm.namenode.ha.standby_checkpointer import StandbyCheckpointer
from hadoop_qjm.namenode.name_node_settings import NameNodeSettings

__all__ = ["StandbyServices"]

LOG = logging.getLogger("hadoop_qjm.namenode.name_node")  # the NameNode's log, as before


class StandbyServices:
    """The tailer and the checkpointer of one standby NameNode (``nnid`` of ``nameservice``);
    ``running_core()`` is the NameNode's running core (it raises once the NameNode stopped);
    ``terminate(status, message)`` is the NameNode's, for a tailer that cannot go on."""

    def __init__(
        self,
        conf: Configuration,
        settings: NameNodeSettings,
        *,
        nameservice: str | None,
        nnid: str | None,
        ssl_factory: Any,
        running_core: Callable[[], Any],
        terminate: Callable[[int, str], None],
    ) -> None:
        self.conf = conf
        self.settings = settings
        self.nameservice = nameservice
        self.nnid = nnid
        self.ssl_factory = ssl_factory
        self._running_core = running_core
        self._terminate = terminate
        self.tailer: EditLogTailer | None = None
        self.checkpointer: StandbyCheckpointer | None = None

    def start(self, *, checkpoints: bool = True) -> None:
        """Start tailing (and, unless an observer's: not ``checkpoints``, checkpointing)
        the running core's namespace."""
        core = self._running_core()
        self.tailer = EditLogTailer(
            core, self.conf, roll_active=self.roll_active, terminate=self._terminate
        )
        self.tailer.start()
        if checkpoints and self.settings.standby_checkpoints:
            self.checkpointer = StandbyCheckpointer(
                core,
                self.conf,
                receivers=[nn.nnid for nn in self._other_namenodes()],
                upload=self.upload_image,
            )
            self.checkpointer.start()

    def stop(self) -> None:
        checkpointer, self.checkpointer = self.checkpointer, None
        if checkpointer is not None:
            checkpointer.stop()
        tailer, self.tailer = self.tailer, None
        if tailer is not None:
            tailer.stop()

    def _other_namenodes(self) -> list[NameNodeAddress]:
        return other_namenodes(self.conf, self.nameservice, self.nnid)

    def roll_active(self) -> None:
        """rollEditLog on the other NameNodes in turn, until one (the active) does it."""
        from hadoop_qjm.namenode.protocol.client import NameNodeProxy

        timeout_s = self.settings.roll_edits_timeout_s
        errors = []
        for nn in self._other_namenodes():
            try:
                with NameNodeProxy(
                    *nn.client_rpc,
                    timeout_s=timeout_s,
                    socket_factory=self.ssl_factory.rpc_client_socket_factory(),
                ) as proxy:
                    proxy.roll_edit_log()
                return
            except (HadoopException, OSError) as e:
                errors.append(f"{nn.nnid}: {e}")
        raise IOException("No NameNode rolled its edit log: " + "; ".join(errors))

    def upload_image(self, nnid: str, txid: int, rollback: bool = False) -> TransferResult:
        """Send fsimage_<txid> (``rollback``: fsimage_rollback_<txid>) to NameNode ``nnid``;
        what it answered (Hadoop's TransferResult; an active or an observer takes it, a
        standby refuses). Raises IOException when the upload could not be made."""
        from hadoop_qjm.namenode.transfer_fs_image import (
            HttpPutFailedException,
            upload_image_to_active,
        )

        core = self._running_core()
        found = core.storage.inspect_images(regular=not rollback, rollback=rollback)
        images = [i for i in found if i.txid == txid]
        if not images:
            raise IOException(f"No {images_name(rollback)}_{txid} to upload")
        nn = next((nn for nn in self._other_namenodes() if nn.nnid == nnid), None)
        transfer = image_transfer_base(self.conf, nn) if nn is not None else None
        if transfer is None:
            raise IOException(
                f"No HTTP address of NameNode {nnid} to upload {images_name(rollback)}_{txid} to"
            )
        base_url, ssl_context = transfer
        try:
            upload_image_to_active(
                base_url,
                core.ns_info.storage_info(),
                txid,
                images[0].path,
                self.settings.image_transfer_timeout_s,
                ssl_context=ssl_context,
                image_file="IMAGE_ROLLBACK" if rollback else "IMAGE",
            )
        except HttpPutFailedException as e:
            LOG.info("Image upload to %s not done: %s", nnid, e)
            return transfer_result(e.status)
        LOG.info("Uploaded %s_%d to %s", images_name(rollback), txid, nnid)
        return TransferResult.SUCCESS


def images_name(rollback: bool) -> str:
    return "fsimage_rollback" if rollback else "fsimage"
