"""The JournalNode's HTTP server (Hadoop's JournalNodeHttpServer; HADOOP-QJM-DIGEST.md §7).

``GET /getJournal?jid=&segmentTxId=&storageInfo=&inProgressOk=`` streams one segment file
(GetJournalEditServlet; used by acceptRecovery, the syncer and readers); ``/metrics``
(Prometheus text; also at ``/prom``), ``/jmx[?qry=]`` (JMXJsonServlet's layout; each
``Journal-<jid>`` bean also carries what the status page shows: committed txid, open
segment, the newest segments, the syncer's state), ``/`` and ``/journalnode.html`` (the
status page of :mod:`hadoop_qjm.webapps`, which reads ``/jmx`` again every few seconds),
and HttpServer2's ``/conf``, ``/stacks``, ``/logLevel`` and ``/logs/``
(:mod:`~hadoop_qjm.common.http_servlets`).
Safer than Hadoop: malformed parameters are 400 (Hadoop: 500) and an unknown journal is
404 (Hadoop creates it).

The server itself (connections, limits, timeouts, TLS, ``/metrics``, ``/jmx``) is the
shared :class:`~hadoop_qjm.common.http_server.HttpServer2`, which
:func:`JournalNodeHttpServer` configures with the JournalNode's pages and content. Secured, ``/getJournal`` is served only over HTTPS to a
verified certificate of ``dfs.journalnode.allowed.principals`` (else 403, logged and
counted in ``journalnode_http_authorization_failures_total``); so are the refusals of the
administrators' pages (``dfs.cluster.administrators``); the other pages stay open.
"""

from __future__ import annotations

import json
import logging
import re
import socket
from collections.abc import Callable
from typing import Any

from hadoop_qjm import webapps
from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.common.http_server import (
    DataTransferThrottler,
    HttpError,
    HttpRequestHandler,
    HttpServer2,
    Page,
    jvm_metrics_bean,
    make_server_socket,
)
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.editlog.file_journal_manager import match_edit_logs
from hadoop_qjm.ipc.rpc_metrics import RpcMetrics, rpc_activity_bean
from hadoop_qjm.qjournal.protocol.rules import validate_journal_id
from hadoop_qjm.qjournal.server.segment_md5 import MD5_HEADER

__all__ = [
    "DataTransferThrottler",
    "GetJournalEditServlet",
    "journal_node_beans",
    "JournalNodeHttpServer",
    "journal_page_attributes",
    "journals_status",
    "make_server_socket",
]

LOG = logging.getLogger(__name__)

#: The status page (``/jmx``'s ``Segments``) lists at most this many segments per journal,
#: the newest ones.
STATUS_PAGE_MAX_SEGMENTS = 100
_TXID = re.compile(r"[+-]?[0-9]{1,19}")
_SERVICE = "Hadoop:service=JournalNode"


def journals_status(journal_node) -> str:
    """JournalNodeInfo's ``JournalsStatus``, a JSON string ``{"<jid>":{"Formatted":"true"}}``;
    as in Hadoop, a journal directory on disk that is not loaded yet counts as formatted."""
    status: dict[str, dict[str, str]] = {}
    for jid, journal in journal_node.journals().items():
        status[jid] = {"Formatted": "true" if journal.is_formatted() else "false"}
    for jid in journal_node.journal_dirs_on_disk():
        status.setdefault(jid, {"Formatted": "true"})
    return json.dumps(status, separators=(",", ":"))


def journal_page_attributes(journal, syncer: dict[str, object]) -> dict[str, object]:
    """What the status page shows of ``journal`` beyond its metrics, as ``Journal-<jid>``
    bean attributes: Formatted, CommittedTxId, OpenSegment, SegmentCount, Segments (the
    newest :data:`STATUS_PAGE_MAX_SEGMENTS`: Name, State, Bytes) and ``syncer``."""
    logs = sorted(match_edit_logs(journal.storage.current_dir), key=lambda f: f.first_txid)
    segments = []
    for log in logs[-STATUS_PAGE_MAX_SEGMENTS:]:
        try:
            size = log.path.stat().st_size
        except OSError:
            continue  # renamed by finalize or purged while we listed
        state = "in progress" if log.is_in_progress else "finalized"
        segments.append({"Name": log.name, "State": state, "Bytes": size})
    cur = journal.cur_segment_txid
    return {
        "Formatted": journal.is_formatted(),
        "CommittedTxId": journal.get_committed_txid(),
        "OpenSegment": f"edits_inprogress_{cur:019d}" if journal.is_segment_open else None,
        "SegmentCount": len(logs),
        "Segments": segments,
        "Syncer": syncer,
    }


def JournalNodeHttpServer(
    journal_node: Any,
    bind_host: str,
    port: int,
    socket_factory: Callable[[str, int], socket.socket] | None = None,
    **options: Any,
) -> HttpServer2:
    """The JournalNode's HTTP server: an HttpServer2 configured with ``/getJournal``
    (:class:`GetJournalEditServlet`), the status page's files, ``/jmx``'s beans
    (:func:`journal_node_beans`) and the security counters of ``journal_node.metrics``.

    ``journal_node`` provides ``get_journal_if_exists(jid)``, ``journals()``,
    ``journal_dirs_on_disk()``, ``metrics``, ``conf``, ``start_time_ms``, ``version``,
    ``rpc_address``, ``cluster_ids()``, ``storage_infos()`` and ``syncer_status(jid)``.
    ``socket_factory(host, port)`` returns a bound, listening socket (default
    :func:`make_server_socket`); the socket is made here, so ``port`` is known before
    ``start()``. ``options`` are HttpServer2's (``ssl_context`` makes it the HTTPS
    listener; ``transfer_authorizer`` guards ``/getJournal``; ``socket_timeout_s``,
    ``max_connections``, ``handshake_timeout_s``, ``admin_authorizer``).

    Hadoop's class name on a factory: callers construct one as in Hadoop, and get the generic
    server configured, not a subclass.
    """
    return HttpServer2(
        getattr(journal_node, "conf", None),
        bind_host,
        port,
        socket_factory,
        name="JournalNodeHttpServer",
        daemon_name="JournalNode",
        pages={
            "/getJournal": Page(GetJournalEditServlet(journal_node), "getedit failed. "),
            **webapps.pages("journal"),
        },
        transfer_paths={"/getJournal"},
        metrics_registry=lambda: journal_node.metrics.registry,
        jmx_beans=lambda: journal_node_beans(journal_node),
        status_page=lambda: webapps.read_asset("journal/journalnode.html").decode("utf-8"),
        on_handshake_failure=lambda reason: (
            journal_node.metrics.http_authentication_failures.labels(reason).inc()
        ),
        on_authorization_failure=lambda path, _identity: (
            journal_node.metrics.http_authorization_failures.labels(path).inc()
        ),
        **options,
    )


class GetJournalEditServlet:
    """``/getJournal``: one segment file of a journal of ``journal_node`` (Hadoop's
    GetJournalEditServlet; the module docstring says how it answers)."""

    def __init__(self, journal_node: Any) -> None:
        self.journal_node = journal_node

    def __call__(
        self, request: HttpRequestHandler, params: dict[str, str], send_body: bool
    ) -> None:
        txid_text = params.get("segmentTxId")
        if txid_text is None:
            raise HttpError(400, "Invalid request has no segmentTxId parameter")
        if not _TXID.fullmatch(txid_text) or not -(2**63) <= int(txid_text) < 2**63:
            raise HttpError(400, f"Invalid segmentTxId parameter: '{txid_text}' is not a long")
        segment_txid = int(txid_text)
        try:
            jid = validate_journal_id(params.get("jid"))
            theirs = params.get("storageInfo")
            if theirs is not None:
                theirs = StorageInfo.from_colon_separated_string(theirs)
            journal = self.journal_node.get_journal_if_exists(jid)
        except IllegalArgumentException as e:
            raise HttpError(400, str(e)) from None
        if journal is None:
            raise HttpError(404, f"Journal {jid} not found on this JournalNode")
        if theirs is not None:
            mine = journal.storage.storage_info
            my_ns, my_cid = (mine.namespace_id, mine.cluster_id) if mine else (0, "")
            if theirs.namespace_id != my_ns or theirs.cluster_id != my_cid:
                msg = (
                    f"This node has namespaceId '{my_ns}' and clusterId '{my_cid}' but the "
                    f"requesting node expected '{theirs.namespace_id}' and '{theirs.cluster_id}'"
                )
                LOG.warning("Invalid transfer request from %s: %s", request.client_address[0], msg)
                raise HttpError(403, msg)
        # Only the literal "false" turns in-progress segments off (Hadoop's inProgressOk).
        opened = journal.open_segment_for_read(segment_txid, params.get("inProgressOk") != "false")
        if opened is None:
            raise HttpError(404, f"No edit log found starting at txid {segment_txid}")
        f, name, length = opened
        # A finalized segment's kept md5 (segment_md5) as Hadoop's servlet sends a
        # "<file>.md5" (ImageServlet.setVerificationHeadersForGet): the receiver hashes what
        # it gets and refuses a copy that differs from the bytes this node verified.
        md5 = getattr(f, "stored_md5", None)
        headers = {MD5_HEADER: md5} if md5 else None
        with f:
            request.send_file(f, length, name, send_body, headers)


def _rpc_metrics(jn: Any) -> RpcMetrics:
    server = getattr(jn, "rpc_server", None)
    metrics = getattr(server, "rpc_metrics", None)
    return metrics if metrics is not None else RpcMetrics()  # not bound: nothing counted


def journal_node_beans(jn: Any) -> list[dict[str, object]]:
    """Every bean ``/jmx`` can show: JournalNodeInfo, one Journal-<jid> each, JvmMetrics."""
    rpc_host, rpc_port = jn.rpc_address
    beans: list[dict[str, object]] = [
        {
            "name": f"{_SERVICE},name=JournalNodeInfo",
            "modelerType": "org.apache.hadoop.hdfs.qjournal.server.JournalNode",
            "JournalsStatus": journals_status(jn),
            "HostAndPort": f"{rpc_host}:{rpc_port}",
            "ClusterIds": list(jn.cluster_ids()),
            "Version": jn.version,
            "JNStartedTimeInMillis": jn.start_time_ms,
            "StorageInfos": list(jn.storage_infos()),
        },
        {
            # Hadoop's RpcActivity bean: the RPC server's RpcMetrics, the security counters
            # (the same failed handshakes, counted by reason for /prom).
            **rpc_activity_bean("JournalNode", rpc_port, _rpc_metrics(jn)),
            **jn.metrics.security_bean_attributes(),
        },
    ]
    hostname = socket.gethostname()
    for metrics in sorted(jn.metrics.journals(), key=lambda m: m.journal_id):
        try:
            attributes = metrics.as_hadoop_bean()
            syncer = jn.syncer_status(metrics.journal_id)
            attributes.update(journal_page_attributes(metrics.journal, syncer))
        except Exception:
            LOG.exception("Unable to read the metrics of journal %s", metrics.journal_id)
            continue
        beans.append(
            {
                "name": f"{_SERVICE},name=Journal-{metrics.journal_id}",
                "modelerType": f"Journal-{metrics.journal_id}",
                "tag.Context": "dfs",
                "tag.Hostname": hostname,
                **attributes,
            }
        )
    for jid, scrubber in sorted(getattr(jn, "scrubbers", {}).items()):
        beans.append(
            {
                "name": f"{_SERVICE},name=JournalNodeScrubber-{jid}",
                "modelerType": f"JournalNodeScrubber-{jid}",
                **scrubber.bean(),
            }
        )
    beans.append(jvm_metrics_bean("JournalNode", hostname))
    return beans
