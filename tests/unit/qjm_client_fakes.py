"""Hand-written fakes for the QJM client tests: a logger, a QJournalProtocol proxy, a clock."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from hadoop_qjm.qjournal.client.async_logger import AsyncLogger
from hadoop_qjm.qjournal.protocol.messages import (
    CanFormatResponse,
    GetJournalStateResponse,
    NewEpochResponse,
    RequestInfo,
)

__all__ = ["FakeLogger", "FakeProxy", "FakeClock", "done", "failed", "pending"]


def done(value: Any = None) -> Future:
    future: Future = Future()
    future.set_result(value)
    return future


def failed(error: BaseException) -> Future:
    future: Future = Future()
    future.set_exception(error)
    return future


def pending() -> Future:
    """A call that never answers (a slow or hung JournalNode)."""
    return Future()


_DEFAULTS: dict[str, Callable[[], Any]] = {
    "get_journal_state": lambda: GetJournalStateResponse(0, -1),
    "new_epoch": lambda: NewEpochResponse(),
    "is_formatted": lambda: False,
    "get_journal_ctime": lambda: 0,
    "can_format": lambda: CanFormatResponse(None, 0, 0),
}


class FakeLogger(AsyncLogger):
    """Records every call; answers with futures chosen by :meth:`when` (latest rule wins).

    Unprogrammed calls succeed at once with a neutral value.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self._rules: dict[str, list[tuple[Callable[..., bool] | None, Callable[[], Future]]]] = {}
        self.epoch: int | None = None
        self.committed: list[int] = []
        self.closed = False
        self.url_base = f"http://{name}"

    def when(
        self,
        method: str,
        *,
        match: Callable[..., bool] | None = None,
        result: Any = None,
        error: BaseException | None = None,
        future: Callable[[], Future] | None = None,
    ) -> FakeLogger:
        if future is None:
            future = (lambda: failed(error)) if error is not None else (lambda: done(result))
        self._rules.setdefault(method, []).append((match, future))
        return self

    def calls_to(self, method: str) -> list[tuple[Any, ...]]:
        return [args for name, args in self.calls if name == method]

    def _call(self, method: str, *args: Any) -> Future:
        self.calls.append((method, args))
        for match, make in reversed(self._rules.get(method, [])):
            if match is None or match(*args):
                return make()
        default = _DEFAULTS.get(method)
        return done(default() if default else None)

    def is_formatted(self):
        return self._call("is_formatted")

    def get_journal_state(self):
        return self._call("get_journal_state")

    def new_epoch(self, epoch, writer_config=None, writer_record=None):
        if writer_config is None:
            return self._call("new_epoch", epoch)
        return self._call("new_epoch", epoch, writer_config)

    def set_membership(self, record, check_namespace=False):
        return self._call("set_membership", record)

    def can_format(self):
        return self._call("can_format")

    def format(self, ns_info, force=False):
        return self._call("format", ns_info, force)

    def get_edit_log_manifest(self, from_txid, in_progress_ok=False):
        return self._call("get_edit_log_manifest", from_txid, in_progress_ok)

    def get_journaled_edits(self, from_txid, max_txns):
        return self._call("get_journaled_edits", from_txid, max_txns)

    def discard_segments(self, start_txid):
        return self._call("discard_segments", start_txid)

    def get_journal_ctime(self):
        return self._call("get_journal_ctime")

    def do_pre_upgrade(self):
        return self._call("do_pre_upgrade")

    def do_upgrade(self, storage):
        return self._call("do_upgrade", storage)

    def do_finalize(self):
        return self._call("do_finalize")

    def can_roll_back(self, storage, prev_storage, target_layout_version):
        return self._call("can_roll_back", storage, prev_storage, target_layout_version)

    def do_rollback(self):
        return self._call("do_rollback")

    def send_edits(self, segment_txid, first_txid, num_txns, data):
        return self._call("send_edits", segment_txid, first_txid, num_txns, data)

    def heartbeat_if_necessary(self):
        return self._call("heartbeat_if_necessary")

    def start_log_segment(self, txid, layout_version):
        return self._call("start_log_segment", txid, layout_version)

    def finalize_log_segment(self, start_txid, end_txid):
        return self._call("finalize_log_segment", start_txid, end_txid)

    def purge_logs_older_than(self, min_txid_to_keep):
        return self._call("purge_logs_older_than", min_txid_to_keep)

    def prepare_recovery(self, segment_txid):
        return self._call("prepare_recovery", segment_txid)

    def accept_recovery(self, segment_state, from_url):
        return self._call("accept_recovery", segment_state, from_url)

    def set_epoch(self, epoch):
        self.epoch = epoch

    def set_committed_txid(self, txid):
        self.committed.append(txid)

    def build_url_to_fetch_logs(self, segment_txid):
        return f"{self.url_base}/getJournal?segmentTxId={segment_txid}"

    def close(self):
        self.closed = True

    def append_report(self):
        return "Written txid 0"

    def __str__(self) -> str:
        return self.name


class FakeProxy:
    """A QJournalProtocolProxy stand-in: records calls; ``fail[rpc]`` decides errors.

    ``fail[rpc](*args)`` returns an exception to raise, or None. ``gate[rpc]``,
    an Event, makes that rpc wait until it is set.
    """

    def __init__(self, from_url: str | None = "http://0.0.0.0:8480", http_port: int = 8480) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []
        self.fail: dict[str, Callable[..., BaseException | None]] = {}
        self.gate: dict[str, threading.Event] = {}
        self.results: dict[str, Any] = {}
        self.journal_state = GetJournalStateResponse(0, http_port, from_url)
        self.closed = False
        self._lock = threading.Lock()

    def _call(self, rpc: str, *args: Any, default: Any = None) -> Any:
        with self._lock:
            self.calls.append((rpc, args))
        gate = self.gate.get(rpc)
        if gate is not None:
            gate.wait()
        decide = self.fail.get(rpc)
        if decide is not None:
            error = decide(*args)
            if error is not None:
                raise error
        return self.results.get(rpc, default)

    def calls_to(self, rpc: str) -> list[tuple[Any, ...]]:
        with self._lock:
            return [args for name, args in self.calls if name == rpc]

    def requests(self) -> list[RequestInfo]:
        """The RequestInfo of every writer call, in order."""
        with self._lock:
            return [args[0] for _, args in self.calls if args and isinstance(args[0], RequestInfo)]

    def is_formatted(self, jid, ns_id=None):
        return self._call("is_formatted", jid, default=True)

    def get_journal_state(self, jid, ns_id=None):
        return self._call("get_journal_state", jid, default=self.journal_state)

    def new_epoch(self, jid, ns_info, epoch, ns_id=None, writer_config=None, writer_record=None):
        return self._call("new_epoch", jid, ns_info, epoch, default=NewEpochResponse())

    def set_membership(self, req, record, ns_info=None):
        return self._call("set_membership", req, record)

    def format(self, jid, ns_info, force=False, ns_id=None):
        return self._call("format", jid, ns_info, force)

    def journal(self, req, segment_txid, first_txid, num_txns, records):
        return self._call("journal", req, segment_txid, first_txid, num_txns, records)

    def heartbeat(self, req):
        return self._call("heartbeat", req)

    def start_log_segment(self, req, txid, layout_version=None):
        return self._call("start_log_segment", req, txid, layout_version)

    def finalize_log_segment(self, req, start_txid, end_txid):
        return self._call("finalize_log_segment", req, start_txid, end_txid)

    def purge_logs_older_than(self, req, min_txid_to_keep):
        return self._call("purge_logs_older_than", req, min_txid_to_keep)

    def prepare_recovery(self, req, segment_txid):
        return self._call("prepare_recovery", req, segment_txid)

    def accept_recovery(self, req, segment_state, from_url):
        return self._call("accept_recovery", req, segment_state, from_url)

    def get_edit_log_manifest(self, jid, since_txid, in_progress_ok=False, ns_id=None):
        return self._call("get_edit_log_manifest", jid, since_txid, in_progress_ok)

    def get_journaled_edits(self, jid, since_txid, max_txns, ns_id=None, wait_ms=None):
        return self._call("get_journaled_edits", jid, since_txid, max_txns)

    def discard_segments(self, jid, start_txid, ns_id=None):
        return self._call("discard_segments", jid, start_txid)

    def get_journal_ctime(self, jid, ns_id=None):
        return self._call("get_journal_ctime", jid, default=0)

    def close(self):
        self.closed = True
        for gate in self.gate.values():
            gate.set()


class FakeClock:
    """A monotonic clock in seconds that moves only when told to."""

    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
