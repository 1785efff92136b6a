"""The NameNode's HTTP server (Hadoop's NameNodeHttpServer): an HttpServer2 that
:func:`NameNodeHttpServer` configures with these pages and content.

* ``GET /imagetransfer?getimage=1&txid=N|latest[&storageInfo=LV:nsId:cTime:clusterId]``
  streams ``fsimage_N`` (Hadoop's ImageServlet, used by bootstrapStandby): headers
  ``Content-Length``, ``X-MD5-Digest`` (from ``fsimage_N.md5``), ``Content-Disposition``
  and ``X-Image-Edits-Name``; throttled by ``dfs.image.transfer.bandwidthPerSec``. A
  missing image is 410 "GetImage failed. Could not find image with txid N" (Hadoop's
  status); a storageInfo of another namespace 403; malformed parameters 400.
* ``PUT /imagetransfer?txid=N&storageInfo=LV:nsId:cTime:clusterId[&imageFile=IMAGE|IMAGE_ROLLBACK]``
  receives ``fsimage_N`` from the standby's checkpointer (ImageServlet.doPut; the client
  is :func:`~hadoop_qjm.namenode.transfer_fs_image.upload_image_to_active`): body the
  image (``Content-Length`` bytes), ``X-MD5-Digest`` its MD5. 403 unless this NameNode is
  active or if the storage info differs; 409 if it has an image at least as new or is
  receiving one; 400 for malformed parameters, a short body or an MD5 mismatch; else the
  image lands in every image directory (:mod:`~hadoop_qjm.namenode.transfer_fs_image`),
  becomes the most recent checkpoint, old images are purged, and the answer is 200.
* ``/isActive`` — 200 ``I am Active!`` on the active NameNode, 405 ``I am not Active!`` on
  a standby (IsActiveServlet, for load balancers).
* ``/conf``, ``/stacks``, ``/logLevel``, ``/logs/``, ``/prom`` — every daemon's pages
  (:mod:`~hadoop_qjm.common.http_servlets`).
* ``/metrics`` — Prometheus text: RPC calls by method, transactions, syncs, txns per sync,
  checkpoint, each journal's state, and each JournalNode's channel (``qjm_logger_*``).
* ``/jmx[?qry=]`` — Hadoop-style beans: NameNodeInfo (with ``NameJournalStatus``),
  NameNodeStatus (with the HA peers' states), FSNamesystem, NameNodeActivity, one
  ``IPCLoggerChannel-<ip>-<port>`` per JournalNode, JvmMetrics.
* ``/``, ``/dfshealth.html`` — the status page (:mod:`hadoop_qjm.webapps`): overview,
  journal status with each JournalNode's lag and sync state, storage, HA peers; it reads
  ``/jmx`` again every few seconds.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
import socket
import threading
from collections.abc import Callable
from typing import Any

from hadoop_qjm import webapps
from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.common.http_server import (
    HttpError,
    HttpRequestHandler,
    HttpServer2,
    Page,
    jvm_metrics_bean,
)
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.ipc.rpc_metrics import rpc_activity_bean
from hadoop_qjm.namenode.fs_image_format import read_stored_md5
from hadoop_qjm.namenode.ha.checkpoint_receivers import CHECKPOINT_RECEIVING_STATES
from hadoop_qjm.namenode.ha.ha_util import ha_namenodes
from hadoop_qjm.namenode.ha_peer_status import HAPeerStatus
from hadoop_qjm.namenode.name_node_metrics import journal_states
from hadoop_qjm.namenode.nn_storage import checkpoint_file_name, rollback_image_file_name
from hadoop_qjm.namenode.observer_metrics import observer_status_bean
from hadoop_qjm.namenode.protocol.messages import HAServiceState
from hadoop_qjm.namenode.transfer_fs_image import (
    MD5_HEADER,
    ImageTransferDataException,
    commit_checkpoint,
    discard_checkpoint,
    receive_checkpoint,
)

__all__ = ["ImageServlet", "is_active_page", "name_node_beans", "NameNodeHttpServer"]

LOG = logging.getLogger(__name__)

_SERVICE = "Hadoop:service=NameNode"
_TXID = re.compile(r"[0-9]{1,19}")
_MD5 = re.compile(r"[0-9a-fA-F]{32}")
#: A refused upload's body is read and dropped up to this size, so that the client can read
#: the refusal instead of a reset connection; beyond it the connection is just closed.
_MAX_DISCARD = 16 * 1024 * 1024


def NameNodeHttpServer(
    name_node: Any,
    bind_host: str,
    port: int,
    socket_factory: Callable[[str, int], socket.socket] | None = None,
    **options: Any,
) -> HttpServer2:
    """The NameNode's HTTP server over ``name_node`` (a :class:`~hadoop_qjm.namenode.
    name_node.NameNode`: its ``core``, ``metrics``, ``conf``, addresses and version): an
    HttpServer2 configured with ``/imagetransfer`` (:class:`ImageServlet`, GET and PUT;
    secured: HTTPS and a verified certificate), ``/isActive`` (:func:`is_active_page`),
    the status page's files and ``/jmx``'s beans (:func:`name_node_beans`). ``options``
    are HttpServer2's (``ssl_context``, ``transfer_authorizer``, ``admin_authorizer``, ...).

    Hadoop's class name on a factory: callers construct one as in Hadoop, and get the generic
    server configured, not a subclass.
    """
    #: The other NameNodes of the nameservice, for NameNodeStatus's HAPeers (None: no HA).
    ha_peers: HAPeerStatus | None = None
    if getattr(name_node, "ha_enabled", False):

        def peers() -> list:
            configured = ha_namenodes(name_node.conf, name_node.nameservice)
            return [nn for nn in configured if nn.nnid != name_node.nnid]

        ha_peers = HAPeerStatus(name_node.conf, peers)
    images = ImageServlet(name_node)
    return HttpServer2(
        name_node.conf,
        bind_host,
        port,
        socket_factory,
        name="NameNodeHttpServer",
        daemon_name="NameNode",
        pages={
            "/imagetransfer": Page(images.get, "GetImage failed. "),
            "/isActive": functools.partial(is_active_page, name_node),
            **webapps.pages("namenode"),
        },
        put_pages={"/imagetransfer": Page(images.put, "PutImage failed. ")},
        transfer_paths={"/imagetransfer"},
        metrics_registry=lambda: name_node.metrics.registry,
        jmx_beans=lambda: name_node_beans(name_node, ha_peers),
        status_page=lambda: webapps.read_asset("namenode/dfshealth.html").decode("utf-8"),
        **options,
    )


def is_active_page(
    name_node: Any, request: HttpRequestHandler, params: dict[str, str], send_body: bool
) -> None:
    """IsActiveServlet, for load balancers: 200 on the active, 405 elsewhere; the
    connection is closed either way (no long-lived health-check connections)."""
    if name_node.state is not HAServiceState.ACTIVE:
        raise HttpError(405, "I am not Active!")
    headers = {"Connection": "close"}
    request.close_connection = True
    request.send_bytes(200, "text/plain; charset=utf-8", b"I am Active!", send_body, headers)


class ImageServlet:
    """``/imagetransfer`` of ``name_node`` (Hadoop's ImageServlet): GET hands out an image,
    PUT receives one from a checkpointer; two uploads never race."""

    def __init__(self, name_node: Any) -> None:
        self.name_node = name_node
        #: Guards :attr:`_uploads` and each upload's commit: two uploads never race.
        self._upload_lock = threading.Lock()
        self._uploads: set[int] = set()  # txids of the images being received

    def get(self, request: HttpRequestHandler, params: dict[str, str], send_body: bool) -> None:
        """GET: stream an image (see the module docstring)."""
        if params.get("getimage") != "1":
            raise HttpError(400, "Invalid request: only getimage=1 is served here")
        txid_text = params.get("txid")
        if txid_text is None:
            raise HttpError(400, "Invalid request has no txid parameter")
        if txid_text != "latest" and not _TXID.fullmatch(txid_text):
            raise HttpError(400, f"Invalid txid parameter: '{txid_text}'")
        core = self.name_node.core
        if core is None or core.storage is None or core.ns_info is None:
            raise HttpError(503, "The NameNode is not running")
        theirs_text = params.get("storageInfo")
        if theirs_text is not None:
            try:
                theirs = StorageInfo.from_colon_separated_string(theirs_text)
            except IllegalArgumentException as e:
                raise HttpError(400, str(e)) from None
            mine = core.ns_info
            if theirs.namespace_id != mine.namespace_id or theirs.cluster_id != mine.cluster_id:
                msg = (
                    f"This namenode has namespace id '{mine.namespace_id}' and cluster id "
                    f"'{mine.cluster_id}' but the requesting node expected "
                    f"'{theirs.namespace_id}' and '{theirs.cluster_id}'"
                )
                LOG.warning("Invalid image request from %s: %s", request.client_address[0], msg)
                raise HttpError(403, msg)
        image_file = params.get("imageFile", "IMAGE")
        if image_file not in ("IMAGE", "IMAGE_ROLLBACK"):
            raise HttpError(400, f"Unsupported imageFile '{image_file}'")
        rollback = image_file == "IMAGE_ROLLBACK"
        images = core.storage.inspect_images(regular=not rollback, rollback=rollback)
        if txid_text != "latest":
            images = [image for image in images if image.txid == int(txid_text)]
        if not images:
            suffix = "" if txid_text == "latest" else f" with txid {txid_text}"
            raise HttpError(410, f"GetImage failed. Could not find image{suffix}")
        image = images[0]
        headers = {}
        md5 = read_stored_md5(image.path)
        if md5 is not None:
            headers["X-MD5-Digest"] = md5
        # Opened before its size is read: a purge that unlinks it now cannot shorten it.
        with open(image.path, "rb") as f:
            request.send_file(f, os.fstat(f.fileno()).st_size, image.path.name, send_body, headers)

    def put(self, request: HttpRequestHandler, params: dict[str, str], send_body: bool) -> None:
        """Receive an image from a checkpointer (see the module docstring)."""
        try:
            core, txid, length, md5 = self._check_upload(request, params)
        except HttpError:
            _discard_body(request)
            raise
        dirs = [d.current for d in core.storage.image_dirs()]
        # A standby's fsimage_rollback_<txid> (mid rolling upgrade) is kept as it is: no
        # checkpoint for retention (ImageServlet with NameNodeFile.IMAGE_ROLLBACK).
        rollback = params.get("imageFile") == "IMAGE_ROLLBACK"
        name = rollback_image_file_name(txid) if rollback else f"fsimage_{txid}"
        with self._upload_lock:
            conflict = self._upload_conflict(core, txid, dirs, rollback)
            if conflict is not None:
                _discard_body(request)
                raise HttpError(409, conflict)
            self._uploads.add(txid)
        try:
            try:
                md5 = receive_checkpoint(request.rfile, length, md5, dirs, txid, exclusive=True)
            except ImageTransferDataException as e:
                raise HttpError(400, str(e)) from None
            # The commit: under the namesystem lock too, so that the NameNode's own
            # saveNamespace and this rename and purge never interleave.
            with self._upload_lock, core.namesystem.lock:
                if rollback:
                    commit_checkpoint(dirs, txid, md5, name=name)
                else:
                    self._commit_image(core, dirs, txid, md5)
            peer = request.client_address[0]
            LOG.info("Received %s (%d bytes, MD5 %s) from %s", name, length, md5, peer)
        finally:
            with self._upload_lock:
                self._uploads.discard(txid)
        body = f"Received {name}\n".encode()
        request.send_bytes(200, "text/plain; charset=utf-8", body, send_body)

    @staticmethod
    def _commit_image(core: Any, dirs: list, txid: int, md5: str) -> None:
        newest = _newest_image_txid(core)
        if newest >= txid:
            discard_checkpoint(dirs, txid)
            raise HttpError(409, _already_have(newest, txid))
        commit_checkpoint(dirs, txid, md5)
        core.fs_image.most_recent_checkpoint_txid = max(
            core.fs_image.most_recent_checkpoint_txid, txid
        )
        try:
            # Now that there is a new checkpoint, old ones (and the edits only they
            # needed) may go (ImageServlet: nnImage.purgeOldStorage).
            core.fs_image.retention.purge_old_storage(core.edit_log)
        except Exception as e:  # noqa: BLE001 - the image is in place regardless
            LOG.warning("Purging old storage after receiving fsimage_%d: %s", txid, e)

    def _check_upload(
        self, request: HttpRequestHandler, params: dict[str, str]
    ) -> tuple[Any, int, int, str | None]:
        """``(core, txid, length, advertised md5)`` of an acceptable upload, else HttpError."""
        txid_text = params.get("txid", "")
        if not _TXID.fullmatch(txid_text):
            raise HttpError(400, f"Invalid txid parameter: '{txid_text}'")
        theirs_text = params.get("storageInfo")
        if not theirs_text:
            raise HttpError(400, "Illegal parameters to TransferFsImage: no storageInfo")
        try:
            StorageInfo.from_colon_separated_string(theirs_text)
        except IllegalArgumentException as e:
            raise HttpError(400, str(e)) from None
        image_file = params.get("imageFile", "IMAGE")
        if image_file not in ("IMAGE", "IMAGE_ROLLBACK"):
            raise HttpError(
                400, f"Unsupported imageFile '{image_file}': only IMAGE and IMAGE_ROLLBACK are"
            )
        if "Transfer-Encoding" in request.headers:
            raise HttpError(400, "An image upload must have a Content-Length, not chunks")
        length_text = (request.headers.get("Content-Length") or "").strip()
        if not length_text.isdigit() or int(length_text) == 0:
            raise HttpError(400, f"Invalid Content-Length for an image upload: '{length_text}'")
        md5 = request.headers.get(MD5_HEADER)
        if md5 is not None and not _MD5.fullmatch(md5.strip()):
            raise HttpError(400, f"Invalid {MD5_HEADER} header: '{md5}'")
        core = self.name_node.core
        if core is None or core.storage is None or core.ns_info is None or core.fs_image is None:
            raise HttpError(503, "The NameNode is not running")
        mine = core.ns_info.storage_info().to_colon_separated_string()
        if theirs_text != mine:
            msg = f"This namenode has storage info {mine} but the secondary expected {theirs_text}"
            LOG.warning("Refused an image upload from %s: %s", request.client_address[0], msg)
            raise HttpError(403, msg)
        state = self.name_node.state
        if state not in CHECKPOINT_RECEIVING_STATES:
            # 417 as Hadoop's ImageServlet: the checkpointer tells it from a refusal
            # (TransferResult.NOT_ACTIVE_NAMENODE_FAILURE).
            raise HttpError(
                417,
                "NameNode is currently not in a state which can accept uploads of new "
                f"fsimages. State: {state}",
            )
        return core, int(txid_text), int(length_text), md5

    def _upload_conflict(self, core: Any, txid: int, dirs: list, rollback: bool) -> str | None:
        """Why an upload of ``fsimage_<txid>`` (``rollback``: ``fsimage_rollback_<txid>``)
        must wait or is not needed (409), or None. Called under the upload lock."""
        if rollback:
            name = rollback_image_file_name(txid)
            if txid in self._uploads or any((d / name).exists() for d in dirs):
                return f"{name} is already here or being uploaded"
            return None
        if txid in self._uploads or any((d / checkpoint_file_name(txid)).exists() for d in dirs):
            return (
                "Another checkpointer is already in the process of uploading a checkpoint "
                f"made at transaction ID {txid}"
            )
        larger = [t for t in self._uploads if t > txid]
        if larger:
            return (
                "Another checkpointer is already in the process of uploading a checkpoint "
                f"made up to transaction ID {max(larger)}"
            )
        newest = _newest_image_txid(core)
        if newest >= txid:
            return _already_have(newest, txid)
        return None


def name_node_beans(name_node: Any, ha_peers: HAPeerStatus | None) -> list[dict[str, object]]:
    """NameNodeInfo, NameNodeStatus, FSNamesystem, NameNodeActivity, one bean per
    JournalNode channel, JvmMetrics; NameNodeStatus's HAPeers from ``ha_peers``."""
    nn = name_node
    core = nn.core
    hostname = socket.gethostname()
    rpc_host, rpc_port = nn.rpc_address
    ns = core.ns_info if core is not None else None
    stats = nn.metrics.edit_log_stats()
    # On a standby both follow the tailer: its edit log's last written txid is the last
    # applied one (NameNodeCore._follow_applied_txid).
    last_written = stats.last_written_txid if stats else 0
    image = core.fs_image if core is not None else None
    last_txid = image.last_applied_or_written_txid if image is not None else 0
    checkpoint = image.most_recent_checkpoint_txid if image is not None else 0
    journals = journal_states(core, nn.state.name.lower())
    beans: list[dict[str, object]] = [
        {
            "name": f"{_SERVICE},name=NameNodeInfo",
            "modelerType": "org.apache.hadoop.hdfs.server.namenode.FSNamesystem",
            "Version": nn.version,
            "SoftwareVersion": nn.version.split(",", 1)[0],
            "ClusterId": ns.cluster_id if ns else "",
            "NamespaceId": ns.namespace_id if ns else 0,
            "BlockPoolId": ns.block_pool_id if ns else "",
            "NNStartedTimeInMillis": nn.start_time_ms,
            "NameDirStatuses": json.dumps(_name_dir_statuses(core), separators=(",", ":")),
            "NameJournalStatus": json.dumps(
                [
                    {
                        "manager": j["manager"],
                        "stream": j["stream"],
                        "disabled": str(j["disabled"]).lower(),
                        "required": str(j["required"]).lower(),
                    }
                    for j in journals
                ],
                separators=(",", ":"),
            ),
            "JournalTransactionInfo": json.dumps(
                {
                    "LastAppliedOrWrittenTxId": str(last_txid),
                    "MostRecentCheckpointTxId": str(checkpoint),
                },
                separators=(",", ":"),
            ),
            "Threads": threading.active_count(),
            # RollingUpgradeInfo.Bean, null when none is in progress (NameNodeMXBean).
            "RollingUpgradeStatus": _rolling_upgrade_status(core),
        },
        {
            "name": f"{_SERVICE},name=NameNodeStatus",
            "modelerType": "org.apache.hadoop.hdfs.server.namenode.NameNode",
            "State": str(nn.state),
            "HostAndPort": f"{rpc_host}:{rpc_port}",
            "NNRole": "NameNode",
            "SecurityEnabled": False,
            "LastHATransitionTime": nn.last_ha_transition_time_ms,
            "Nameservice": getattr(nn, "nameservice", None) if ha_peers else None,
            "NamenodeId": getattr(nn, "nnid", None) if ha_peers else None,
            "HAPeers": ha_peers.snapshot() if ha_peers else [],
        },
        {
            "name": f"{_SERVICE},name=FSNamesystem",
            "modelerType": "FSNamesystem",
            "tag.Context": "dfs",
            "tag.HAState": str(nn.state),
            "tag.Hostname": hostname,
            "FilesTotal": core.namesystem.files_total if core and core.namesystem else 0,
            "LastWrittenTransactionId": last_written,
            "LastSyncedTransactionId": stats.synced_txid if stats else 0,
            "TransactionsSinceLastCheckpoint": max(last_txid - checkpoint, 0),
            "MostRecentCheckpointTxId": checkpoint,
        },
        {
            "name": f"{_SERVICE},name=NameNodeActivity",
            "modelerType": "NameNodeActivity",
            "tag.ProcessName": "NameNode",
            "tag.Context": "dfs",
            "tag.Hostname": hostname,
            **nn.metrics.activity_bean(),
        },
    ]
    for journal in journals:
        for node in journal["journal_nodes"]:
            beans.append(
                {
                    "name": f"{_SERVICE},name=IPCLoggerChannel-"
                    + node["node"].replace(":", "-").replace("[", "").replace("]", ""),
                    "modelerType": "IPCLoggerChannel",
                    "tag.Context": "dfs",
                    "tag.Hostname": hostname,
                    "IsOutOfSync": str(node["out_of_sync"]).lower(),
                    "CurrentLagTxns": node["lag_txns"],
                    "LagTimeMillis": node["lag_time_ms"],
                    "QueuedEditsSize": node["queued_bytes"],
                    "RemoteAddress": node["node"],
                    "HighestAckedTxId": node["highest_acked_txid"],
                    "HttpServerURI": node["http_server_url"],
                    "SyncState": node["sync_state"],
                }
            )
    rpc_server = getattr(nn, "rpc_server", None)
    if rpc_server is not None:
        beans.append(rpc_activity_bean("NameNode", rpc_port, rpc_server.rpc_metrics))
    beans.append(observer_status_bean(nn))
    beans.append(jvm_metrics_bean("NameNode", hostname))
    return beans


def _name_dir_statuses(core: Any) -> dict[str, dict[str, str]]:
    """NameNodeInfo's NameDirStatuses: ``{"active": {dir: type}, "failed": {dir: type}}``."""
    storage = getattr(core, "storage", None)
    if storage is None:
        return {"active": {}, "failed": {}}
    return {
        "active": {str(d.root): d.dir_type.value for d in storage.dirs},
        "failed": {str(d.root): d.dir_type.value for d in storage.removed},
    }


def _rolling_upgrade_status(core: Any) -> dict[str, object] | None:
    if core is None or core.namesystem is None or core.storage is None:
        return None
    from hadoop_qjm.namenode.rolling_upgrade import query_rolling_upgrade

    info = query_rolling_upgrade(core)
    return None if info is None else info.bean()


def _newest_image_txid(core: Any) -> int:
    """The txid of the newest image in this NameNode's image directories (-1 if none)."""
    return max((image.txid for image in core.storage.inspect_images()), default=-1)


def _already_have(newest: int, txid: int) -> str:
    return (
        "Either current namenode has checkpointed or another checkpointer already uploaded "
        f"a checkpoint for txid {newest}, not older than {txid}"
    )


def _discard_body(request: HttpRequestHandler) -> None:
    """Read and drop a refused request's body (up to ``_MAX_DISCARD`` bytes), so that the
    client, still sending, reads the refusal rather than a reset connection."""
    try:
        remaining = min(int(request.headers.get("Content-Length") or 0), _MAX_DISCARD)
        while remaining > 0:
            chunk = request.rfile.read(min(64 * 1024, remaining))
            if not chunk:
                return
            remaining -= len(chunk)
    except (ValueError, OSError):
        return
