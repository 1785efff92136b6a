"""Hand-written fakes of the JournalNode and its Journals, for RPC-layer tests.

The fake Journal records every call with its (already converted) arguments
and the caller's address, answers with canned responses, and can be told to
raise or to block, so the RPC server and the proxy can be tested without any
storage.
"""

from __future__ import annotations

import threading
from typing import Any

from hadoop_qjm.common.remote_edit_log import RemoteEditLog, RemoteEditLogManifest
from hadoop_qjm.qjournal.protocol.messages import (
    GetJournaledEditsResponse,
    NewEpochResponse,
    PrepareRecoveryResponse,
    SegmentState,
)
from hadoop_qjm.qjournal.protocol.rules import validate_journal_id
from hadoop_qjm.qjournal.server.journal_node_rpc_server import remote_ip

MANIFEST = RemoteEditLogManifest(
    (RemoteEditLog(1, 3), RemoteEditLog(4, 6), RemoteEditLog(7, 9, True)), committed_txn_id=-12345
)
PREPARE_RESPONSE = PrepareRecoveryResponse(
    segment_state=SegmentState(7, 9, True),
    accepted_in_epoch=2,
    last_writer_epoch=3,
    last_committed_txid=8,
)
EDITS = GetJournaledEditsResponse(2, b"\xff\xff\xff\xbd\x00\x00\x00\x00" + b"ops")


class FakeJournal:
    """Records calls; ``errors[method] = exc`` makes ``method`` raise ``exc``.

    ``block[method] = threading.Event()`` makes ``method`` wait for the event
    (while counted in ``running``; ``max_running`` keeps the peak).
    """

    def __init__(self, jid: str) -> None:
        self.jid = jid
        self.calls: list[tuple[str, tuple[Any, ...], str | None]] = []
        self.errors: dict[str, BaseException] = {}
        self.block: dict[str, threading.Event] = {}
        self.results: dict[str, Any] = {}
        self.cond = threading.Condition()
        self.running = 0
        self.max_running = 0

    def _call(self, name: str, *args: Any, default: Any = None) -> Any:
        with self.cond:
            self.calls.append((name, args, remote_ip()))
            self.running += 1
            self.max_running = max(self.max_running, self.running)
            self.cond.notify_all()
        try:
            event = self.block.get(name)
            if event is not None:
                event.wait(60)
            if name in self.errors:
                raise self.errors[name]
            return self.results.get(name, default)
        finally:
            with self.cond:
                self.running -= 1
                self.cond.notify_all()

    def wait_running(self, n: int, timeout_s: float = 30) -> bool:
        with self.cond:
            return self.cond.wait_for(lambda: self.running >= n, timeout_s)

    def is_formatted(self) -> bool:
        return self._call("is_formatted", default=True)

    def get_last_promised_epoch(self) -> int:
        return self._call("get_last_promised_epoch", default=7)

    def format(self, ns_info: Any, force: bool) -> None:
        self._call("format", ns_info, force)

    def new_epoch(
        self,
        ns_info: Any,
        epoch: int,
        writer_config: str | None = None,
        writer_record: str | None = None,
    ) -> NewEpochResponse:
        extra = () if writer_config is None else (writer_config,)
        return self._call("new_epoch", ns_info, epoch, *extra, default=NewEpochResponse(42))

    def get_membership_text(self) -> str | None:
        return self._call("get_membership_text")

    def set_membership(self, req: Any, record: str, ns_info: Any = None) -> None:
        self._call("set_membership", req, record)

    def journal(
        self, req: Any, segment_txid: int, first_txid: int, num_txns: int, records: bytes
    ) -> None:
        self._call("journal", req, segment_txid, first_txid, num_txns, records)

    def heartbeat(self, req: Any) -> None:
        self._call("heartbeat", req)

    def start_log_segment(self, req: Any, txid: int, layout_version: int) -> None:
        self._call("start_log_segment", req, txid, layout_version)

    def finalize_log_segment(self, req: Any, start_txid: int, end_txid: int) -> None:
        self._call("finalize_log_segment", req, start_txid, end_txid)

    def purge_logs_older_than(self, req: Any, min_txid_to_keep: int) -> None:
        self._call("purge_logs_older_than", req, min_txid_to_keep)

    def get_edit_log_manifest(self, since_txid: int, in_progress_ok: bool) -> Any:
        return self._call("get_edit_log_manifest", since_txid, in_progress_ok, default=MANIFEST)

    def get_journaled_edits(self, since_txid: int, max_txns: int) -> Any:
        return self._call("get_journaled_edits", since_txid, max_txns, default=EDITS)

    def prepare_recovery(self, req: Any, segment_txid: int) -> Any:
        return self._call("prepare_recovery", req, segment_txid, default=PREPARE_RESPONSE)

    def accept_recovery(self, req: Any, segment_state: Any, from_url: str) -> None:
        self._call("accept_recovery", req, segment_state, from_url)

    def discard_segments(self, start_txid: int) -> None:
        self._call("discard_segments", start_txid)

    def get_journal_ctime(self) -> int:
        return self._call("get_journal_ctime", default=1234567890123)

    def do_pre_upgrade(self) -> None:
        self._call("do_pre_upgrade")

    def do_upgrade(self, storage_info: Any) -> None:
        self._call("do_upgrade", storage_info)

    def do_finalize(self) -> None:
        self._call("do_finalize")

    def can_roll_back(self, storage: Any, prev_storage: Any, target_layout_version: int) -> bool:
        return self._call(
            "can_roll_back", storage, prev_storage, target_layout_version, default=True
        )

    def do_rollback(self) -> None:
        self._call("do_rollback")


class FakeJournalNode:
    """``get_or_create_journal`` validates the id like the real JournalNode."""

    http_port = 8480
    http_server_uri = "http://127.0.0.1:8480"

    def __init__(self) -> None:
        self.journals: dict[str, FakeJournal] = {}
        self.lookups: list[tuple[str, str | None]] = []
        self._lock = threading.Lock()

    def get_or_create_journal(self, jid: str, name_service_id: str | None = None) -> FakeJournal:
        validate_journal_id(jid)
        with self._lock:
            self.lookups.append((jid, name_service_id))
            return self.journals.setdefault(jid, FakeJournal(jid))

    def open_journal(self, jid: str) -> None:
        """None: every call takes the general path, so the fake journal sees it."""
        return None

    def journal(self, jid: str) -> FakeJournal:
        """The fake journal for ``jid``, created if needed, without recording a lookup."""
        with self._lock:
            return self.journals.setdefault(jid, FakeJournal(jid))
