"""A standby NameNode's services: the :class:`EditLogTailer` and, with
``dfs.ha.standby.checkpoints``, the :class:`StandbyCheckpointer`, with what they ask of the
other NameNodes of the nameservice (``rollEditLog`` on the active, the new fsimage uploaded
to it). The NameNode starts them when it becomes standby and stops them before it becomes
active (Hadoop's NameNode.StandbyState and FSNamesystem.startStandbyServices).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from hadoop_qjm.common.exceptions import HadoopException, IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.ha.edit_log_tailer import EditLogTailer
from hadoop_qjm.namenode.ha.ha_util import NameNodeAddress, ha_namenodes, image_transfer_base
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

    def start(self) -> None:
        """Start tailing (and checkpointing) the running core's namespace."""
        core = self._running_core()
        self.tailer = EditLogTailer(
            core, self.conf, roll_active=self.roll_active, terminate=self._terminate
        )
        self.tailer.start()
        if self.settings.standby_checkpoints:
            self.checkpointer = StandbyCheckpointer(core, self.conf, upload=self.upload_image)
            self.checkpointer.start()

    def stop(self) -> None:
        checkpointer, self.checkpointer = self.checkpointer, None
        if checkpointer is not None:
            checkpointer.stop()
        tailer, self.tailer = self.tailer, None
        if tailer is not None:
            tailer.stop()

    def _other_namenodes(self) -> list[NameNodeAddress]:
        return [nn for nn in ha_namenodes(self.conf, self.nameservice) if nn.nnid != self.nnid]

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

    def upload_image(self, txid: int, rollback: bool = False) -> bool:
        """Send fsimage_<txid> (``rollback``: fsimage_rollback_<txid>) to every other
        NameNode (only the active accepts it); whether one has it now."""
        from hadoop_qjm.namenode.transfer_fs_image import (
            HttpPutFailedException,
            upload_image_to_active,
        )

        core = self._running_core()
        found = core.storage.inspect_images(regular=not rollback, rollback=rollback)
        images = [i for i in found if i.txid == txid]
        if not images:
            raise IOException(f"No {images_name(rollback)}_{txid} to upload")
        accepted = False
        timeout_s = self.settings.image_transfer_timeout_s
        for nn in self._other_namenodes():
            transfer = image_transfer_base(self.conf, nn)
            if transfer is None:
                continue
            base_url, ssl_context = transfer
            try:
                upload_image_to_active(
                    base_url,
                    core.ns_info.storage_info(),
                    txid,
                    images[0].path,
                    timeout_s,
                    ssl_context=ssl_context,
                    image_file="IMAGE_ROLLBACK" if rollback else "IMAGE",
                )
                LOG.info("Uploaded %s_%d to %s", images_name(rollback), txid, nn.nnid)
                accepted = True
            except HttpPutFailedException as e:
                accepted |= e.status == 409  # it has one already
                LOG.info("Image upload to %s not done: %s", nn.nnid, e)
            except (HadoopException, OSError) as e:
                LOG.info("Image upload to %s not done: %s", nn.nnid, e)
        return accepted


def images_name(rollback: bool) -> str:
    return "fsimage_rollback" if rollback else "fsimage"
