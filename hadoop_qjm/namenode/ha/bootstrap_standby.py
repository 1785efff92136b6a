"""``namenode -bootstrapStandby``: give a new standby the namespace of the other NameNode.

Hadoop's BootstrapStandby, HADOOP-QJM-DIGEST.md §9, step by step:

1. Ask each *other* NameNode of the nameservice (``dfs.ha.namenodes.<ns>`` without this
   one) for ``versionRequest`` and its HA state: the active one is the source, else the
   first that answers (three to five NameNodes, HDFS-6440). None answers →
   exit 2 (ERR_CODE_FAILED_CONNECT). Its layout version differs from ours → exit 3
   (ERR_CODE_INVALID_VERSION). From it also ``getMostRecentCheckpointTxId`` (imageTxId)
   and ``getTransactionID`` (curTxId).
2. Format this NameNode's local name and edits directories (not the shared edits) with
   the source's namespace: where data exists, only with ``-force`` or a yes to the
   prompt; refused or ``-nonInteractive`` → exit 5 (ERR_CODE_ALREADY_FORMATTED).
3. Unless ``-skipSharedEditsCheck`` or imageTxId == curTxId, the shared edits must hold
   every txid imageTxId+1 .. curTxId (``selectInputStreams(…, inProgressOk=true)`` and
   FSEditLog.checkForGaps), else exit 6 (ERR_CODE_LOGS_UNAVAILABLE): "Unable to read
   transaction ids a-b from the configured shared edits storage …". This is what lets
   the new standby start: it loads the image, then tails those edits.
4. Download ``fsimage_<imageTxId>`` with its MD5 from the source's ``/imagetransfer``
   into every image directory (:func:`~hadoop_qjm.namenode.transfer_fs_image.
   download_image`), its progress (bytes, rate, ETA) on stderr, then write
   ``seen_txid`` = imageTxId.

Nothing is written to the JournalNodes; the source NameNode is only read. Exit 4 is
unused, as in Hadoop (it was the "already formatted" code of older versions). Other
failures (a bad configuration, a directory in use, a failed download) are exit 1.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from hadoop_qjm.common import nn_upgrade_util
from hadoop_qjm.common.durable import fsync_dir
from hadoop_qjm.common.exceptions import (
    HadoopException,
    IllegalArgumentException,
    IOException,
    one_line_message,
)
from hadoop_qjm.common.progress import TransferProgress, transfer_summary
from hadoop_qjm.common.storage import StorageState
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.redundant_edit_log_input_stream import chain_and_make_redundant_streams
from hadoop_qjm.ha.ha_service_protocol import HAServiceState
from hadoop_qjm.namenode.fs_edit_log import check_for_gaps
from hadoop_qjm.namenode.ha.ha_util import (
    NameNodeAddress,
    image_transfer_base,
    other_namenodes,
    suffixed,
)
from hadoop_qjm.namenode.name_node_core import JournalFactory, create_journal_set
from hadoop_qjm.namenode.name_node_layout_version import (
    check_no_previous,
    software_layout_version,
)
from hadoop_qjm.namenode.nn_storage import NameNodeDirs, NNStorage, image_file_name
from hadoop_qjm.namenode.protocol.client import NameNodeProxy, client_socket_factory
from hadoop_qjm.namenode.transfer_fs_image import download_image, download_rollback_image

__all__ = [
    "ERR_CODE_ALREADY_FORMATTED",
    "ERR_CODE_FAILED_CONNECT",
    "ERR_CODE_INVALID_VERSION",
    "ERR_CODE_LOGS_UNAVAILABLE",
    "BootstrapResult",
    "BootstrapStandbyException",
    "bootstrap_standby",
]

LOG = logging.getLogger(__name__)

ERR_CODE_FAILED_CONNECT = 2
ERR_CODE_INVALID_VERSION = 3
ERR_CODE_ALREADY_FORMATTED = 5
ERR_CODE_LOGS_UNAVAILABLE = 6

#: How long each RPC to the other NameNode may take.
RPC_TIMEOUT_S = 60.0


class BootstrapStandbyException(IOException):
    """bootstrapStandby stopped with ``exit_code`` (2, 3, 5 or 6; see the module doc)."""

    def __init__(self, exit_code: int, message: str) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@dataclass(frozen=True)
class BootstrapResult:
    """What :func:`bootstrap_standby` did."""

    nameservice: str
    nnid: str
    source_nnid: str
    ns_info: NamespaceInfo
    image_txid: int
    cur_txid: int
    #: The MD5 of the downloaded image.
    md5: str
    #: The image directories that received it.
    image_dirs: tuple[str, ...]


#: ``factory(address)`` -> a NamenodeProtocol client of that NameNode (tests' fakes).
ProxyFactory = Callable[[NameNodeAddress], Any]


def _default_proxy_factory(conf: Configuration) -> ProxyFactory:
    """NameNodeProxies with the RPC transport ``conf`` asks for (TCP or mutual TLS)."""
    socket_factory = client_socket_factory(conf)
    return lambda nn: NameNodeProxy(
        *nn.client_rpc, RPC_TIMEOUT_S, connect_timeout_s=20.0, socket_factory=socket_factory
    )


def bootstrap_standby(
    conf: Configuration,
    nameservice: str | None,
    nnid: str | None,
    *,
    force: bool = False,
    confirm: Callable[[Sequence[str]], bool] | None = None,
    skip_shared_edits_check: bool = False,
    proxy_factory: ProxyFactory | None = None,
    journal_factory: JournalFactory | None = None,
    out: Callable[[str], None] = print,
    progress_stream: TextIO | None = None,
) -> BootstrapResult:
    """Bootstrap this NameNode (``nnid`` of ``nameservice``; ``conf`` already resolved for
    it, see :func:`~hadoop_qjm.namenode.ha.ha_util.resolve_ha_conf`) from another one.

    ``confirm(locations)`` asks before formatting directories that hold data (None:
    -nonInteractive, refuse); ``force`` formats without asking. Raises
    :class:`BootstrapStandbyException` for the exit codes 2, 3, 5 and 6, another
    IOException or HadoopException for other failures. ``out`` receives the report lines;
    ``progress_stream`` (stderr) the download's progress: bytes, rate and ETA.
    """
    if not nameservice or not nnid:
        raise IllegalArgumentException("HA is not enabled for this namenode.")
    others = other_namenodes(conf, nameservice, nnid)
    if not others:
        raise IllegalArgumentException(
            f"No other NameNode in {suffixed(keys.DFS_HA_NAMENODES_KEY_PREFIX, nameservice)} "
            f"to bootstrap {nnid} from"
        )
    source, ns_info, image_txid, cur_txid, upgrade_finalized = _ask_other_namenodes(
        others, proxy_factory or _default_proxy_factory(conf)
    )
    software_layout = software_layout_version(conf)  # -67, or -68 for tests
    if ns_info.layout_version != software_layout:
        raise BootstrapStandbyException(
            ERR_CODE_INVALID_VERSION,
            f"Layout version on remote node ({ns_info.layout_version}) does not match this "
            f"node's layout version ({software_layout})",
        )
    transfer = image_transfer_base(conf, source)
    if transfer is None:
        http_key = suffixed(keys.DFS_NAMENODE_HTTP_ADDRESS_KEY, nameservice, source.nnid)
        raise IOException(
            f"{http_key} (or its https-address with HTTPS on) is not set: cannot download "
            f"the image from {source.nnid}"
        )
    http_url, ssl_context = transfer
    for line in (
        "=====================================================",
        f"About to bootstrap Standby ID {nnid} from:",
        f"           Nameservice ID: {nameservice}",
        f"        Other Namenode ID: {source.nnid}",
        f"  Other NN's HTTP address: {http_url}",
        f"  Other NN's IPC  address: {source.rpc_text}",
        f"             Namespace ID: {ns_info.namespace_id}",
        f"            Block pool ID: {ns_info.block_pool_id}",
        f"               Cluster ID: {ns_info.cluster_id}",
        f"           Layout version: {ns_info.layout_version}",
        f"   Image txid / last txid: {image_txid} / {cur_txid}",
        "=====================================================",
    ):
        out(line)

    dirs = NameNodeDirs.from_conf(conf)
    everything = NNStorage.from_conf(conf, dirs)
    # Only this NameNode's own directories: the shared edits belong to the nameservice.
    storage = NNStorage([d for d in everything.dirs if not d.shared])
    with_data = storage.has_some_data()
    if with_data and not force:
        if confirm is None:
            raise BootstrapStandbyException(
                ERR_CODE_ALREADY_FORMATTED,
                f"Running in non-interactive mode, and data appears to exist in "
                f"{with_data[0]}. Not formatting.",
            )
        if not confirm(with_data):
            raise BootstrapStandbyException(
                ERR_CODE_ALREADY_FORMATTED, f"Format aborted in {with_data[0]}"
            )
    try:
        if upgrade_finalized:
            storage.format(ns_info)
            formatted = ", ".join(str(d.root) for d in storage.dirs)
            out(f"Formatted {formatted} with namespace {ns_info.namespace_id}")
        else:
            # BootstrapStandby.doPreUpgrade: keep this NameNode's state as previous/ too.
            out("The active NameNode is in Upgrade. Prepare the upgrade for the standby as well.")
            _pre_upgrade(storage, ns_info)
        if not skip_shared_edits_check and image_txid != cur_txid:
            _check_logs_available_for_read(
                conf, dirs, everything, ns_info, image_txid + 1, cur_txid, journal_factory
            )
            out(f"The shared edits hold transactions {image_txid + 1}-{cur_txid}")
        image_dirs = [d.current for d in storage.image_dirs()]
        timeout_s = (
            conf.get_time_duration(
                keys.DFS_IMAGE_TRANSFER_TIMEOUT_KEY, keys.DFS_IMAGE_TRANSFER_TIMEOUT_DEFAULT, "ms"
            )
            / 1000.0
        )
        image_name = image_file_name(image_txid)
        progress = (
            TransferProgress(f"Downloading {image_name}", stream=progress_stream)
            if progress_stream is not None
            else None
        )
        started = time.monotonic()
        try:
            md5 = download_image(
                http_url,
                image_txid,
                ns_info.storage_info(),
                image_dirs,
                timeout_s or None,
                ssl_context=ssl_context,
                progress=progress,
            )
        finally:
            if progress is not None:
                progress.close()
        took = transfer_summary(
            (image_dirs[0] / image_name).stat().st_size, time.monotonic() - started
        )
        # Mid rolling upgrade the other NameNode's rollback image too (HDFS-17178): a
        # standby without one would forget the upgrade, or save one at the wrong txid.
        rollback_txid = download_rollback_image(
            http_url, ns_info.storage_info(), image_dirs, timeout_s or None, ssl_context
        )
        if rollback_txid is not None:
            out(
                f"Downloaded fsimage_rollback_{rollback_txid:019d}: a rolling upgrade is in progress"
            )
        storage.write_transaction_id_file(image_txid)
        if not upgrade_finalized:  # BootstrapStandby.doUpgrade: previous.tmp -> previous
            for d in storage.dirs:
                nn_upgrade_util.do_upgrade(d.sd, ns_info, fsync=storage.fsync)
    finally:
        storage.close()
    where = ", ".join(str(d) for d in image_dirs)
    out(f"Downloaded {image_name}: {took}, MD5 {md5}, into {where}; seen_txid {image_txid}")
    return BootstrapResult(
        nameservice,
        nnid,
        source.nnid,
        ns_info,
        image_txid,
        cur_txid,
        md5,
        tuple(str(d) for d in image_dirs),
    )


def _pre_upgrade(storage: NNStorage, ns_info: NamespaceInfo) -> None:
    """BootstrapStandby.doPreUpgrade: each directory's current/ becomes previous.tmp/
    (NNUpgradeUtil.renameCurToTmp) beside an empty current/ (doUpgrade later writes its
    VERSION); if one is not formatted, all are formatted first. Refused where previous/ or
    previous.tmp/ exists."""
    if any(d.sd.analyze_storage() is not StorageState.NORMAL for d in storage.dirs):
        storage.format(ns_info)
    for d in storage.dirs:
        check_no_previous(d.sd)
        if d.sd.previous_tmp.exists():
            raise IOException(f"{d.sd.previous_tmp} exists: restart the NameNode to recover it")
    for d in storage.dirs:
        os.rename(d.current, d.sd.previous_tmp)
        d.current.mkdir()
        os.chmod(d.current, d.sd.dir_perm)
        fsync_dir(d.root, fsync=storage.fsync)
    storage.ns_info = ns_info


def _ask_other_namenodes(
    others: list[NameNodeAddress], proxy_factory: ProxyFactory
) -> tuple[NameNodeAddress, NamespaceInfo, int, int, bool]:
    """The source: the active NameNode among ``others`` if one answers, else the first
    that answers; with its NamespaceInfo, imageTxId, curTxId and whether its upgrade is
    finalized (upgradeStatus; a fake without ``upgrade_status``: it is).

    Hadoop's BootstrapStandby means to "get the namespace from any active NN" and takes the
    first of the other NameNodes that answers; with three to five NameNodes (HDFS-6440) the
    first may be another standby or a NameNode not yet bootstrapped itself, so each one is
    also asked its HA state (getServiceStatus) and an active one is preferred: its image is
    the one every standby's checkpoint is uploaded to."""
    errors = []
    answers: list[tuple[NameNodeAddress, NamespaceInfo, int, int, bool]] = []
    for nn in others:
        try:
            proxy = proxy_factory(nn)
        except (HadoopException, OSError) as e:
            errors.append(f"{nn.nnid} ({nn.rpc_text}): {one_line_message(e)}")
            continue
        try:
            ns_info = proxy.version_request()
            image_txid = proxy.get_most_recent_checkpoint_txid()
            cur_txid = proxy.get_transaction_id()
            active = _is_active(nn, proxy)
            finalized = getattr(proxy, "upgrade_status", lambda: True)()
        except (HadoopException, OSError) as e:
            LOG.info("Unable to fetch namespace information from %s: %s", nn.rpc_text, e)
            errors.append(f"{nn.nnid} ({nn.rpc_text}): {one_line_message(e)}")
            continue
        finally:
            proxy.close()
        if active:
            return nn, ns_info, image_txid, cur_txid, finalized
        answers.append((nn, ns_info, image_txid, cur_txid, finalized))
    if answers:
        return answers[0]
    raise BootstrapStandbyException(
        ERR_CODE_FAILED_CONNECT,
        "Unable to fetch namespace information from any remote NN. Possible NameNodes: "
        + ", ".join(errors),
    )


def _is_active(nn: NameNodeAddress, proxy: Any) -> bool:
    """Whether ``nn`` says it is active; False when it cannot say (not a superuser's call,
    an older NameNode): it may still be the source."""
    try:
        return proxy.get_service_status().state is HAServiceState.ACTIVE
    except (HadoopException, OSError) as e:
        LOG.info("Unable to ask %s (%s) for its HA state: %s", nn.nnid, nn.rpc_text, e)
        return False


def _check_logs_available_for_read(
    conf: Configuration,
    dirs: NameNodeDirs,
    storage: NNStorage,
    ns_info: NamespaceInfo,
    first_txid: int,
    last_txid: int,
    journal_factory: JournalFactory | None,
) -> None:
    """The shared edits hold ``first_txid .. last_txid`` (BootstrapStandby.
    checkLogsAvailableForRead), else BootstrapStandbyException(6). Only reads."""
    shared = sorted(dirs.shared_uris)

    def unavailable(reason: str) -> BootstrapStandbyException:
        return BootstrapStandbyException(
            ERR_CODE_LOGS_UNAVAILABLE,
            f"Unable to read transaction ids {first_txid}-{last_txid} from the configured "
            f"shared edits storage {','.join(shared) or '(none)'}. Please copy these logs "
            f"into the shared edits storage or call saveNamespace on the active node. "
            f"Error: {reason}",
        )

    if not shared:
        raise unavailable(f"{keys.DFS_NAMENODE_SHARED_EDITS_DIR_KEY} is not set")
    journals = create_journal_set(conf, dirs, storage, ns_info, journal_factory, shared_only=True)
    streams: list = []
    errors: list[str] = []
    try:
        for jas in journals.journals:
            try:
                streams.extend(jas.manager.select_input_streams(first_txid, True, False))
            except (HadoopException, OSError) as e:
                errors.append(f"{jas.manager}: {one_line_message(e)}")
        # Closing the members (below) is closing these: they hold nothing else.
        chained = chain_and_make_redundant_streams(streams, first_txid)
        try:
            check_for_gaps(chained, first_txid, last_txid)
        except IOException as e:
            raise unavailable("; ".join([one_line_message(e), *errors])) from e
    finally:
        for stream in streams:
            try:
                stream.close()
            except OSError as e:
                LOG.debug("Closing %s: %s", stream, e)
        journals.close()
