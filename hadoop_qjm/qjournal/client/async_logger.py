"""AsyncLogger: one remote JournalNode, every call asynchronous (design paper §5.1.1).

Each method sends one QJournalProtocol call and returns a
``concurrent.futures.Future`` for its result, so that :class:`AsyncLoggerSet`
can fan a call out to every node and :class:`QuorumCall` can wait for a
quorum of the answers. :class:`IPCLoggerChannel` is the real implementation;
tests and the fault harness pass their own (STYLE.md habit 5).

The epoch and the committed txid set here are stamped on every later
"writer" call (RequestInfo, digest §1).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from concurrent.futures import CancelledError, Future
from typing import Any

from hadoop_qjm.common.remote_edit_log import RemoteEditLogManifest
from hadoop_qjm.common.storage_info import NamespaceInfo, StorageInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.protocol.messages import (
    CanFormatResponse,
    GetJournaledEditsResponse,
    GetJournalStateResponse,
    NewEpochResponse,
    PrepareRecoveryResponse,
    SegmentState,
)

__all__ = ["AsyncLogger", "LoggerFactory"]


class AsyncLogger(ABC):
    """The client's view of one JournalNode's journal (Hadoop's ``AsyncLogger``)."""

    # ---- calls without an epoch -------------------------------------------------------------
    @abstractmethod
    def is_formatted(self) -> Future[bool]:
        """Whether the journal's storage is formatted."""

    @abstractmethod
    def get_journal_state(self) -> Future[GetJournalStateResponse]:
        """The journal's last promised epoch (and the node's HTTP endpoint)."""

    @abstractmethod
    def new_epoch(
        self, epoch: int, writer_config: str | None = None, writer_record: str | None = None
    ) -> Future[NewEpochResponse]:
        """Ask the node to promise ``epoch`` (design paper §2.5 step 3); not Hadoop's:
        ``writer_config``, the set the writer counts (``membership.Config.to_text()``), and
        ``writer_record``, the membership record that makes it the set."""

    def set_membership(self, record: str, check_namespace: bool = False) -> Future[None]:
        """Replace the node's membership record (a set change's step; not Hadoop's); with
        ``check_namespace``, the node must hold this writer's namespace."""
        raise NotImplementedError(f"{type(self).__name__} cannot change a JournalNode set")

    @abstractmethod
    def can_format(self) -> Future[CanFormatResponse]:
        """Whether the node may format the journal now (no writer uses it), and what
        formatting destroys there (not Hadoop's; issue 33)."""

    @abstractmethod
    def format(self, ns_info: NamespaceInfo, force: bool = False) -> Future[None]:
        """Format the journal for ``ns_info``."""

    @abstractmethod
    def get_edit_log_manifest(
        self, from_txid: int, in_progress_ok: bool = False
    ) -> Future[RemoteEditLogManifest]:
        """The segments holding ``from_txid`` and later."""

    @abstractmethod
    def get_journaled_edits(
        self, from_txid: int, max_txns: int, wait_ms: int | None = None
    ) -> Future[GetJournaledEditsResponse]:
        """Up to ``max_txns`` txns from the node's in-memory cache (header + ops); with
        ``wait_ms``, once the node has written ``from_txid`` or after that long."""

    @abstractmethod
    def discard_segments(self, start_txid: int) -> Future[None]:
        """Move aside every segment starting at or after ``start_txid``."""

    @abstractmethod
    def get_journal_ctime(self) -> Future[int]:
        """The cTime of the journal's VERSION file."""

    # ---- the HA upgrade of the layout (HDFS-5138): every node must answer ------------------
    def do_pre_upgrade(self) -> Future[None]:
        """Keep the journal's current storage aside as ``previous.tmp``."""
        raise NotImplementedError(f"{type(self).__name__} cannot upgrade a JournalNode")

    def do_upgrade(self, storage: StorageInfo) -> Future[None]:
        """Write the new VERSION (``storage``'s layout version and cTime); keep ``previous``."""
        raise NotImplementedError(f"{type(self).__name__} cannot upgrade a JournalNode")

    def do_finalize(self) -> Future[None]:
        """Remove ``previous``."""
        raise NotImplementedError(f"{type(self).__name__} cannot upgrade a JournalNode")

    def can_roll_back(
        self, storage: StorageInfo, prev_storage: StorageInfo, target_layout_version: int
    ) -> Future[bool]:
        """Whether ``previous`` exists and holds ``target_layout_version``."""
        raise NotImplementedError(f"{type(self).__name__} cannot upgrade a JournalNode")

    def do_rollback(self) -> Future[None]:
        """Put ``previous`` back as ``current``."""
        raise NotImplementedError(f"{type(self).__name__} cannot upgrade a JournalNode")

    # ---- writer calls (carry the epoch) --------------------------------------------------------
    @abstractmethod
    def send_edits(
        self, segment_txid: int, first_txid: int, num_txns: int, data: bytes
    ) -> Future[None]:
        """Append a batch of serialized ops (RPC ``journal``)."""

    @abstractmethod
    def heartbeat_if_necessary(self) -> Future[None]:
        """Send a ``heartbeat`` unless one went out less than a second ago."""

    @abstractmethod
    def start_log_segment(self, txid: int, layout_version: int) -> Future[None]:
        """Open segment ``txid``."""

    @abstractmethod
    def finalize_log_segment(self, start_txid: int, end_txid: int) -> Future[None]:
        """Finalize segment ``start_txid`` as ``[start_txid, end_txid]``."""

    def finalize_log_segment_after(
        self, accepted: Future[None], start_txid: int, end_txid: int
    ) -> Future[None]:
        """:meth:`finalize_log_segment`, sent once ``accepted`` (this node's acceptRecovery
        of the segment) has succeeded; failed with its error, unsent, if it failed.

        The default chains the call on ``accepted``; a logger whose calls run in order
        (IPCLoggerChannel) queues it at once, behind the accept, ahead of any later call.
        """
        result: Future[None] = Future()

        def relay(done: Future[Any]) -> None:
            error = done.exception() if not done.cancelled() else CancelledError()
            if error is not None:
                result.set_exception(error)
            else:
                result.set_result(None)

        def send(done: Future[None]) -> None:
            if done.cancelled() or done.exception() is not None:
                relay(done)
                return
            try:
                self.finalize_log_segment(start_txid, end_txid).add_done_callback(relay)
            except Exception as e:  # noqa: BLE001 - the chained call's answer
                result.set_exception(e)

        accepted.add_done_callback(send)  # runs at once if the accept is done
        return result

    @abstractmethod
    def purge_logs_older_than(self, min_txid_to_keep: int) -> Future[None]:
        """Delete segments (and paxos records) wholly below ``min_txid_to_keep``."""

    @abstractmethod
    def prepare_recovery(self, segment_txid: int) -> Future[PrepareRecoveryResponse]:
        """Paxos phase 1 for segment ``segment_txid`` (design paper §2.8 step 2)."""

    @abstractmethod
    def accept_recovery(self, segment_state: SegmentState, from_url: str) -> Future[None]:
        """Paxos phase 2: adopt ``segment_state``, fetched from ``from_url`` (§2.8 step 3)."""

    # ---- local state ---------------------------------------------------------------------------
    @abstractmethod
    def set_epoch(self, epoch: int) -> None:
        """The epoch stamped on every later writer call."""

    @abstractmethod
    def set_committed_txid(self, txid: int) -> None:
        """The highest quorum-acked txid, sent with the next writer call; never decreases."""

    @abstractmethod
    def build_url_to_fetch_logs(self, segment_txid: int) -> str:
        """The ``/getJournal`` URL of segment ``segment_txid`` on this node."""

    @abstractmethod
    def close(self) -> None:
        """Stop accepting calls and release the connection."""

    @abstractmethod
    def append_report(self) -> str:
        """A one-line plain-text status ("Written txid N …") for reports."""


#: ``(conf, ns_info, journal_id, name_service_id, (host, port)) -> AsyncLogger``.
LoggerFactory = Callable[
    [Configuration, NamespaceInfo, str, "str | None", "tuple[str, int]"], AsyncLogger
]
