"""QJournalProtocolHandler: one method per RPC of QJournalProtocol and InterQJournalProtocol.

Each method converts the RPC's Thrift arguments with ``messages`` and delegates to
``journal_node.get_or_create_journal(jid, name_service_id)``. No branching, no I/O
(STYLE.md habit 2): the dispatcher in ``journal_node_rpc_server`` decodes the calls
and encodes the results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.qjournal.protocol.journal_call import JournalCall
from hadoop_qjm.qjournal.protocol.messages import (
    GetEditLogManifestResponse,
    GetJournalStateResponse,
    from_thrift,
    layout_version_from_thrift,
    to_thrift,
)

__all__ = ["RPC_METHODS", "QJournalProtocolHandler"]


class QJournalProtocolHandler:
    """Converts each RPC's Thrift arguments and delegates to the JournalNode's Journal.

    Method parameters are the RPC's Thrift arguments in IDL order. Results
    that only the JournalNode knows (its HTTP port and URI) come from
    ``journal_node.http_port`` and ``journal_node.http_server_uri``.
    """

    def __init__(self, journal_node: Any) -> None:
        self.journal_node = journal_node

    def _journal(self, jid: str, name_service_id: str | None = None) -> Any:
        # The JournalNode validates the id (IllegalArgumentException).
        return self.journal_node.get_or_create_journal(jid, name_service_id)

    def _request_journal(self, req_info: Any) -> tuple[Any, Any]:
        req = from_thrift(req_info)
        return req, self._journal(req.journal_id, req.name_service_id)

    # --- QJournalProtocol

    def is_formatted(self, jid: str, name_service_id: str | None) -> bool:
        return self._journal(jid, name_service_id).is_formatted()

    def get_journal_ctime(self, jid: str, name_service_id: str | None) -> int:
        return self._journal(jid, name_service_id).get_journal_ctime()

    def do_pre_upgrade(self, jid: str) -> None:
        self._journal(jid).do_pre_upgrade()

    def do_upgrade(self, jid: str, s_info: Any) -> None:
        self._journal(jid).do_upgrade(from_thrift(s_info))

    def do_finalize(self, jid: str, name_service_id: str | None) -> None:
        self._journal(jid, name_service_id).do_finalize()

    def can_roll_back(
        self,
        jid: str,
        storage: Any,
        prev_storage: Any,
        target_layout_version: int,
        name_service_id: str | None,
    ) -> bool:
        return self._journal(jid, name_service_id).can_roll_back(
            from_thrift(storage), from_thrift(prev_storage), target_layout_version
        )

    def do_rollback(self, jid: str, name_service_id: str | None) -> None:
        self._journal(jid, name_service_id).do_rollback()

    def discard_segments(self, jid: str, start_txid: int, name_service_id: str | None) -> None:
        self._journal(jid, name_service_id).discard_segments(start_txid)

    def get_journal_state(self, jid: str, name_service_id: str | None) -> Any:
        journal = self._journal(jid, name_service_id)
        epoch, membership = journal.get_last_promised_epoch(), journal.get_membership_text()
        return to_thrift(
            GetJournalStateResponse(
                epoch, self.journal_node.http_port, self.journal_node.http_server_uri, membership
            )
        )

    def new_epoch(
        self,
        jid: str,
        ns_info: Any,
        epoch: int,
        name_service_id: str | None,
        writer_config: str | None = None,
        writer_record: str | None = None,
    ) -> Any:
        journal = self._journal(jid, name_service_id)
        return to_thrift(
            journal.new_epoch(from_thrift(ns_info), epoch, writer_config, writer_record)
        )

    def set_membership(self, req_info: Any, record: str, ns_info: Any = None) -> None:
        req, journal = self._request_journal(req_info)
        journal.set_membership(req, record, from_thrift(ns_info))

    def can_format(self, jid: str, name_service_id: str | None) -> Any:
        return to_thrift(self._journal(jid, name_service_id).can_format())

    def format(self, jid: str, ns_info: Any, name_service_id: str | None, force: bool) -> None:
        self._journal(jid, name_service_id).format(from_thrift(ns_info), bool(force))

    def journal(
        self,
        req_info: Any,
        first_txn_id: int,
        num_txns: int,
        records: bytes,
        segment_txn_id: int,
        name_service_id: str | None,
    ) -> None:
        # As in Hadoop, the journal is looked up by reqInfo's name service id.
        req, journal = self._request_journal(req_info)
        journal.journal(req, segment_txn_id, first_txn_id, num_txns, records)

    def journal_in_order(
        self, call: JournalCall, acknowledge: Callable[[], None] | None = None
    ) -> bool:
        """Write ``call`` if it is the open segment's writer's next batch (see
        ``Journal.journal_in_order``, also for ``acknowledge``); False, having changed
        nothing, otherwise (also when the journal is not loaded or the node is stopping)."""
        journal = self.journal_node.open_journal(call.journal_id)
        committed = call.committed_txid
        return journal is not None and journal.journal_in_order(
            call.epoch,
            call.ipc_serial_number,
            INVALID_TXID if committed is None else committed,
            call.segment_txid,
            call.first_txid,
            call.num_txns,
            call.records,
            acknowledge,
        )

    def journal_in_order_group(
        self, calls: Sequence[JournalCall], acknowledge: Callable[[int], None] | None = None
    ) -> list[Exception | None]:
        """Write the longest prefix of ``calls`` (all for one journal id) that are the
        writer's next batches, with one fsync (``Journal.journal_in_order_group``: its
        outcomes, one per call handled); an empty list, having done nothing, if the
        journal is not loaded."""
        journal = self.journal_node.open_journal(calls[0].journal_id)
        if journal is None:
            return []
        return journal.journal_in_order_group(calls, acknowledge)

    def heartbeat(self, req_info: Any) -> None:
        req, journal = self._request_journal(req_info)
        journal.heartbeat(req)

    def start_log_segment(self, req_info: Any, txid: int, layout_version: int | None) -> None:
        req, journal = self._request_journal(req_info)
        journal.start_log_segment(req, txid, layout_version_from_thrift(layout_version))

    def finalize_log_segment(self, req_info: Any, start_txid: int, end_txid: int) -> None:
        req, journal = self._request_journal(req_info)
        journal.finalize_log_segment(req, start_txid, end_txid)

    def purge_logs(self, req_info: Any, min_txid_to_keep: int) -> None:
        req, journal = self._request_journal(req_info)
        journal.purge_logs_older_than(req, min_txid_to_keep)

    def get_edit_log_manifest(
        self, jid: str, since_txid: int, in_progress_ok: bool, name_service_id: str | None
    ) -> Any:
        manifest = self._journal(jid, name_service_id).get_edit_log_manifest(
            since_txid, bool(in_progress_ok)
        )
        return to_thrift(
            GetEditLogManifestResponse(
                manifest, self.journal_node.http_port, self.journal_node.http_server_uri
            )
        )

    def get_journaled_edits(
        self,
        jid: str,
        since_txid: int,
        max_txns: int,
        name_service_id: str | None,
        wait_ms: int | None = None,
    ) -> Any:
        journal = self._journal(jid, name_service_id)
        return to_thrift(journal.get_journaled_edits(since_txid, max_txns))

    def await_get_journaled_edits(
        self,
        jid: str,
        since_txid: int,
        max_txns: int,
        name_service_id: str | None,
        wait_ms: int | None = None,
    ) -> None:
        """The long poll before getJournaledEdits (run holding no handler slot)."""
        if wait_ms:
            self._journal(jid, name_service_id).await_journaled_edits(since_txid, wait_ms / 1000)

    def prepare_recovery(self, req_info: Any, segment_txid: int) -> Any:
        req, journal = self._request_journal(req_info)
        return to_thrift(journal.prepare_recovery(req, segment_txid))

    def accept_recovery(self, req_info: Any, state_to_accept: Any, from_url: str) -> None:
        req, journal = self._request_journal(req_info)
        journal.accept_recovery(req, from_thrift(state_to_accept), from_url)

    # --- InterQJournalProtocol

    def get_edit_log_manifest_from_journal(
        self, jid: str, since_txid: int, in_progress_ok: bool, name_service_id: str | None
    ) -> Any:
        return self.get_edit_log_manifest(jid, since_txid, in_progress_ok, name_service_id)

    def get_storage_info(self, jid: str, name_service_id: str | None) -> Any:
        return to_thrift(self._journal(jid, name_service_id).get_storage_info())


#: Thrift method name -> handler method name.
RPC_METHODS: dict[str, str] = {
    "isFormatted": "is_formatted",
    "getJournalCTime": "get_journal_ctime",
    "doPreUpgrade": "do_pre_upgrade",
    "doUpgrade": "do_upgrade",
    "doFinalize": "do_finalize",
    "canRollBack": "can_roll_back",
    "doRollback": "do_rollback",
    "discardSegments": "discard_segments",
    "getJournalState": "get_journal_state",
    "newEpoch": "new_epoch",
    "setMembership": "set_membership",
    "canFormat": "can_format",
    "format": "format",
    "journal": "journal",
    "heartbeat": "heartbeat",
    "startLogSegment": "start_log_segment",
    "finalizeLogSegment": "finalize_log_segment",
    "purgeLogs": "purge_logs",
    "getEditLogManifest": "get_edit_log_manifest",
    "getJournaledEdits": "get_journaled_edits",
    "prepareRecovery": "prepare_recovery",
    "acceptRecovery": "accept_recovery",
    "getEditLogManifestFromJournal": "get_edit_log_manifest_from_journal",
    "getStorageInfo": "get_storage_info",
}
