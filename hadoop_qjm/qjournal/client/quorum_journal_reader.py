"""QuorumJournalManager's reading (design paper §3): edits over RPC from the JournalNodes'
caches (in-progress tailing), whole segments streamed from their HTTP servers, and the
long poll that tells a tailer a new edit is durable.

Functions of the manager (:class:`QuorumReader`, what they read of it), which keeps the
choice between them and the fallback (:meth:`QuorumJournalManager.select_input_streams`).
Only the newest writer's answers count (``rules.rpc_readable_txn_count``); a segment
whose every copy failed is asked of the nodes that did not list it (issue 27).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from hadoop_qjm.common.exceptions import IOException, always_assert
from hadoop_qjm.common.remote_edit_log import RemoteEditLog, RemoteEditLogManifest
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.editlog.redundant_edit_log_input_stream import (
    EditLogHttpInputStream,
    RedundantEditLogInputStream,
    chain_and_make_redundant_streams,
)
from hadoop_qjm.qjournal.client.quorum_call import map_to_string
from hadoop_qjm.qjournal.protocol import rules

if TYPE_CHECKING:
    from hadoop_qjm.qjournal.client.async_logger import AsyncLogger
    from hadoop_qjm.qjournal.client.async_logger_set import AsyncLoggerSet

__all__ = [
    "QuorumReader",
    "await_journaled_edits",
    "select_rpc_input_streams",
    "select_streaming_input_streams",
]

# The manager's logger: operators' logging configurations name it.
LOG = logging.getLogger("hadoop_qjm.qjournal.client.quorum_journal_manager")


class QuorumReader(Protocol):
    """What reading uses of its QuorumJournalManager (read at each call: the set of
    loggers changes with the membership records)."""

    loggers: AsyncLoggerSet
    timeouts: Any  # QuorumJournalTimeouts (select_input_streams_ms, http_*_ms)
    max_txns_per_rpc: int
    max_op_size: int
    http_opener: Callable[[str, float], Any]


def await_journaled_edits(qjm: QuorumReader, from_txid: int, wait_ms: int) -> bool:
    """Wait until a majority has written ``from_txid`` (True) or ``wait_ms`` passes.

    The push half of in-progress tailing (issue 25): every node holds the call until
    it writes ``from_txid`` (getJournaledEdits' long poll), so the answer comes the
    moment the edit is durable on a majority — no polling. Only the newest writer's
    answers count, as for :meth:`select_input_streams`. Raises IOException when no
    majority answers (the caller then falls back to its tailing period).
    """
    call = qjm.loggers.call("get_journaled_edits", from_txid, 1, wait_ms)
    try:
        responses = qjm.loggers.wait_for_write_quorum(
            call, qjm.timeouts.select_input_streams_ms + wait_ms, "awaitJournaledEdits"
        )
    finally:
        call.cancel_calls()
    decision = rules.rpc_readable_txn_count(
        [(r.txn_count, r.writer_epoch) for r in responses.values()],
        qjm.loggers.majority_size,
        True,
    )
    return decision is not None and decision[0] > 0


def select_rpc_input_streams(
    qjm: QuorumReader, from_txid: int, only_durable_txns: bool
) -> list[RedundantEditLogInputStream]:
    call = qjm.loggers.call("get_journaled_edits", from_txid, qjm.max_txns_per_rpc)
    try:
        responses = qjm.loggers.wait_for_write_quorum(
            call, qjm.timeouts.select_input_streams_ms, "selectRpcInputStreams"
        )
    finally:
        call.cancel_calls()  # a slow node's answer is no longer needed
    always_assert(
        len(responses) >= qjm.loggers.majority_size,
        "Quorum call returned without a majority",
    )
    decision = rules.rpc_readable_txn_count(
        [(r.txn_count, r.writer_epoch) for r in responses.values()],
        qjm.loggers.majority_size,
        only_durable_txns,
    )
    if decision is None:
        raise IOException(
            "Fewer than a majority of the JournaledEdits answers come from the newest "
            f"writer: {map_to_string(responses)}"
        )
    allowed, writer_epoch = decision
    if allowed < 0:
        raise IOException(
            f"Did not get any valid JournaledEdits responses: {map_to_string(responses)}"
        )
    if allowed == 0:
        LOG.debug("No new edits available in logs; requested starting from ID %d", from_txid)
        return []
    LOG.debug("Selected loggers with >= %d transactions starting from %d", allowed, from_txid)
    streams = [
        EditLogFileInputStream.from_bytes(
            r.edit_log,
            from_txid,
            from_txid - 1 + min(allowed, r.txn_count),
            is_in_progress=True,
            max_op_size=qjm.max_op_size,
            name=f"{logger}: journaled edits [{from_txid}, {from_txid - 1 + r.txn_count}]",
        )
        for logger, r in responses.items()
        # An empty answer holds not even the header; another writer's is not read.
        if r.txn_count > 0 and (writer_epoch == 0 or r.writer_epoch == writer_epoch)
    ]
    return chain_and_make_redundant_streams(streams, from_txid)


def select_streaming_input_streams(
    qjm: QuorumReader, from_txid: int, in_progress_ok: bool, only_durable_txns: bool
) -> list[RedundantEditLogInputStream]:
    manifests = qjm.loggers.wait_for_write_quorum(
        qjm.loggers.call("get_edit_log_manifest", from_txid, in_progress_ok),
        qjm.timeouts.select_input_streams_ms,
        "selectStreamingInputStreams",
    )
    LOG.debug("selectStreamingInputStream manifests:\n%s", map_to_string(manifests))
    listed: dict[int, set[AsyncLogger]] = {}
    streams = []
    for logger, manifest in manifests.items():
        for log in manifest.logs:
            listed.setdefault(log.start_txid, set()).add(logger)
            streams.append(_http_stream(qjm, logger, log, manifest, only_durable_txns))

    def more_copies(segment_txid: int, txid: int) -> list[EditLogHttpInputStream]:
        return _late_copies(
            qjm,
            segment_txid,
            listed.setdefault(segment_txid, set()),
            in_progress_ok,
            only_durable_txns,
        )

    return chain_and_make_redundant_streams(streams, from_txid, more_copies)


def _http_stream(
    qjm: QuorumReader,
    logger: AsyncLogger,
    log: RemoteEditLog,
    manifest: RemoteEditLogManifest,
    only_durable_txns: bool,
) -> EditLogHttpInputStream:
    end_txid = log.end_txid
    # An in-progress log is only read up to what is known committed; finalized ones
    # hold only committed txns.
    if only_durable_txns and log.is_in_progress:
        end_txid = min(end_txid, manifest.committed_txn_id)
        if end_txid < log.start_txid:
            LOG.warning(
                "Found endTxId (%d) that is less than the startTxId (%d) - "
                "setting it to startTxId.",
                end_txid,
                log.start_txid,
            )
            end_txid = log.start_txid
    return EditLogHttpInputStream(
        logger.build_url_to_fetch_logs(log.start_txid),
        log.start_txid,
        end_txid,
        log.is_in_progress,
        timeout_s=max(qjm.timeouts.http_open_ms, qjm.timeouts.http_read_ms) / 1000.0,
        max_op_size=qjm.max_op_size,
        opener=qjm.http_opener,
    )


def _late_copies(
    qjm: QuorumReader,
    segment_txid: int,
    listed: set[AsyncLogger],
    in_progress_ok: bool,
    only_durable_txns: bool,
) -> list[EditLogHttpInputStream]:
    """Copies of segment ``segment_txid`` from the JournalNodes whose manifest did not
    list it (they answered late, or not at all, or lacked it then): asked when every
    copy held has failed (issue 27), waiting up to the HTTP read timeout."""
    others = [lg for lg in qjm.loggers.loggers if lg not in listed]
    if not others:
        return []
    LOG.info(
        "Every copy of the segment at txid %d failed; asking %s for theirs",
        segment_txid,
        ", ".join(str(lg) for lg in others),
    )
    call = qjm.loggers.call("get_edit_log_manifest", segment_txid, in_progress_ok, only=others)
    try:
        call.wait_for(len(others), 0, -1, qjm.timeouts.http_read_ms, "getEditLogManifest")
    except (TimeoutError, OSError) as e:
        LOG.info("Not every JournalNode answered for segment %d: %s", segment_txid, e)
    finally:
        call.cancel_calls()
    found = []
    for logger, manifest in call.successes.items():
        for log in manifest.logs:
            if log.start_txid == segment_txid:
                listed.add(logger)
                found.append(_http_stream(qjm, logger, log, manifest, only_durable_txns))
    return found
