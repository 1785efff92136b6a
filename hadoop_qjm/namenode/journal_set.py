"""JournalSet: every journal the NameNode writes its edits to (Hadoop's class of the name).

The journals are the local :class:`FileJournalManager` of each ``dfs.namenode.edits.dir``
and a :class:`QuorumJournalManager` for each ``qjournal://`` URI (in
``dfs.namenode.edits.dir`` for a non-HA NameNode — TestNNWithQJM — and in
``dfs.namenode.shared.edits.dir``). Each is wrapped in a :class:`JournalAndStream`
holding its open segment's stream and whether it is *required* (the shared edits and
``dfs.namenode.edits.dir.required``) or *disabled* (it failed; a roll retries it).

Every operation is applied to each journal in turn (Hadoop's mapJournalsAndReportErrors):

* a failing *required* journal aborts every stream and raises
  :class:`JournalSetFailure` with ``required=True`` — the NameNode must then terminate;
* a failing optional journal is aborted and disabled; if fewer than
  ``dfs.namenode.edits.dir.minimum`` optional journals remain (or, with none configured,
  no required one), :class:`JournalSetFailure` "<status> failed for too many journals".

:func:`are_resources_available` is that rule as a pure function (NameNodeResourcePolicy,
in :mod:`hadoop_qjm.namenode.name_node_resource_policy`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import (
    IOException,
    always_assert,
    one_line_message,
    trace_if_bug,
)
from hadoop_qjm.editlog.fs_edit_log_op import FSEditLogOp
from hadoop_qjm.editlog.journal_manager import JournalManager
from hadoop_qjm.editlog.redundant_edit_log_input_stream import (
    RedundantEditLogInputStream,
    chain_and_make_redundant_streams,
)
from hadoop_qjm.namenode.name_node_resource_policy import are_resources_available

__all__ = [
    "JournalSet",
    "JournalAndStream",
    "JournalSetOutputStream",
    "JournalSetFailure",
    "are_resources_available",
]

LOG = logging.getLogger(__name__)


class JournalSetFailure(IOException):
    """An operation failed on a required journal, or on too many journals."""

    java_name = "java.io.IOException"

    def __init__(self, message: str = "", required: bool = False) -> None:
        super().__init__(message)
        self.required = required


class JournalAndStream:
    """One journal, its current output stream (None between segments) and its state."""

    def __init__(self, manager: JournalManager, required: bool, shared: bool = False) -> None:
        self.manager = manager
        self.required = required
        self.shared = shared
        self.disabled = False
        self.stream: Any = None
        self.segment_start_txid = INVALID_TXID
        #: The last error this journal raised (for status pages and tests).
        self.last_error: BaseException | None = None

    @property
    def is_active(self) -> bool:
        return self.stream is not None

    def start_log_segment(self, txid: int, layout_version: int) -> None:
        always_assert(self.stream is None, f"{self} already has an open stream")
        self.disabled = False  # a new segment gives a failed journal another chance
        self.stream = self.manager.start_log_segment(txid, layout_version)
        self.segment_start_txid = txid

    def close_stream(self) -> None:
        stream, self.stream = self.stream, None
        if stream is not None:
            stream.close()

    def abort(self) -> None:
        stream, self.stream = self.stream, None
        if stream is None:
            return
        try:
            stream.abort()
        except Exception:  # noqa: BLE001 - aborting is best effort
            LOG.exception("Unable to abort stream %s", stream)

    def __str__(self) -> str:
        flags = "required" if self.required else "optional"
        if self.disabled:
            flags += ", disabled"
        return f"JournalAndStream(mgr={self.manager}, stream={self.stream}, {flags})"


class JournalSet:
    """The journals, and the fan-out of every JournalManager call over them."""

    def __init__(self, minimum_redundant_journals: int = 1) -> None:
        self.minimum_redundant_journals = minimum_redundant_journals
        self.journals: list[JournalAndStream] = []
        self._state_lock = threading.Lock()

    def add(self, manager: JournalManager, required: bool, shared: bool = False) -> None:
        self.journals.append(JournalAndStream(manager, required, shared))

    @property
    def journal_managers(self) -> list[JournalManager]:
        return [jas.manager for jas in self.journals]

    def is_empty(self) -> bool:
        """True when too few journals are usable to write (Hadoop's JournalSet.isEmpty)."""
        return not are_resources_available(
            ((jas.required, not jas.disabled) for jas in self.journals),
            self.minimum_redundant_journals,
        )

    # ---- the fan-out -----------------------------------------------------------------------------
    def map_journals_and_report_errors(
        self, closure: Callable[[JournalAndStream], None], status: str
    ) -> None:
        """Run ``closure`` on every journal; disable the ones that fail (see module doc)."""
        bad: list[JournalAndStream] = []
        for jas in list(self.journals):
            try:
                closure(jas)
            except Exception as e:  # noqa: BLE001 - any failure disables the journal
                self.journal_failed(jas, e, status)
                bad.append(jas)
        if bad:
            self.disable_failed(bad, status)

    def journal_failed(self, jas: JournalAndStream, error: Exception, status: str) -> None:
        """``jas`` failed ``status``: a required journal stops every journal and raises
        JournalSetFailure(required=True); an optional one is only logged here (then
        :meth:`disable_failed`)."""
        jas.last_error = error
        # An I/O failure (a JournalNode down, no quorum, a disk error) is its message.
        trace = trace_if_bug(error)
        if jas.required:
            message = f"Error: {status} failed for required journal ({jas})"
            LOG.error("%s: %s", message, one_line_message(error), exc_info=trace)
            # Stop every other journal too, so that no retry lets them go on alone.
            self.abort_all_journals()
            raise JournalSetFailure(f"{message}: {error}", required=True) from error
        LOG.error(
            "Error: %s failed for (journal %s): %s",
            status,
            jas,
            one_line_message(error),
            exc_info=trace,
        )

    def disable_failed(self, bad: list[JournalAndStream], status: str) -> None:
        """Abort and disable the optional journals that failed ``status``;
        JournalSetFailure if too few are left to write."""
        with self._state_lock:
            for jas in bad:
                jas.abort()
                jas.disabled = True
            usable = not self.is_empty()
        if not usable:
            message = f"{status} failed for too many journals"
            LOG.error("Error: %s", message)
            raise JournalSetFailure(message)

    def abort_all_journals(self) -> None:
        for jas in self.journals:
            jas.abort()

    # ---- segments --------------------------------------------------------------------------------
    def start_log_segment(self, txid: int, layout_version: int) -> JournalSetOutputStream:
        self.map_journals_and_report_errors(
            lambda jas: jas.start_log_segment(txid, layout_version),
            f"starting log segment {txid}",
        )
        return JournalSetOutputStream(self)

    def finalize_log_segment(self, first_txid: int, last_txid: int) -> None:
        def finalize(jas: JournalAndStream) -> None:
            if jas.is_active:
                jas.close_stream()
                jas.manager.finalize_log_segment(first_txid, last_txid)

        self.map_journals_and_report_errors(
            finalize, f"finalize log segment {first_txid}, {last_txid}"
        )

    def recover_unfinalized_segments(self) -> None:
        self.map_journals_and_report_errors(
            lambda jas: jas.manager.recover_unfinalized_segments(), "recoverUnfinalizedSegments"
        )

    def purge_logs_older_than(self, min_txid_to_keep: int) -> None:
        self.map_journals_and_report_errors(
            lambda jas: jas.manager.purge_logs_older_than(min_txid_to_keep),
            f"purgeLogsOlderThan {min_txid_to_keep}",
        )

    def set_output_buffer_capacity(self, size: int) -> None:
        for jas in self.journals:
            jas.manager.set_output_buffer_capacity(size)

    # ---- reading ---------------------------------------------------------------------------------
    def select_input_streams(
        self,
        from_txid: int,
        in_progress_ok: bool = False,
        only_durable_txns: bool = False,
        *,
        failures: list[tuple[JournalAndStream, Exception]] | None = None,
    ) -> list[RedundantEditLogInputStream]:
        """Every enabled journal's streams from ``from_txid``, one redundant stream per
        segment, in txid order (JournalSet.selectInputStreams). A journal that cannot
        list its streams is skipped with a warning (and added to ``failures``)."""
        streams: list = []
        for jas in self.journals:
            if jas.disabled:
                LOG.info("Skipping jas %s since it's disabled", jas)
                continue
            try:
                streams.extend(
                    jas.manager.select_input_streams(from_txid, in_progress_ok, only_durable_txns)
                )
            except Exception as e:  # noqa: BLE001 - the other journals may have the edits
                # An IOException (unreachable JournalNodes) in one line; a bug with its trace.
                LOG.warning(
                    "Unable to determine input streams from %s. Skipping: %s",
                    jas.manager,
                    one_line_message(e),
                    exc_info=None if isinstance(e, IOException) else e,
                )
                if failures is not None:
                    failures.append((jas, e))
        return chain_and_make_redundant_streams(streams, from_txid)

    def close(self) -> None:
        """Close every journal manager (streams must be closed or aborted first)."""
        for jas in self.journals:
            jas.abort()
            try:
                jas.manager.close()
            except Exception:  # noqa: BLE001 - close the others
                LOG.exception("Error closing %s", jas.manager)

    def __str__(self) -> str:
        return "[" + ", ".join(str(jas) for jas in self.journals) + "]"


#: send_ready's mark for a stream it flushed whole (one with no send_ready of its own).
_FLUSHED = object()


class JournalSetOutputStream:
    """The edit-log stream of a segment: each call goes to every active journal's stream."""

    def __init__(self, journal_set: JournalSet) -> None:
        self.journal_set = journal_set

    def _each_active(
        self, action: Callable[[Any], None], status: str, *, reach_required: bool = False
    ) -> None:
        def apply(jas: JournalAndStream) -> None:
            stream = jas.stream  # read once: a concurrent failure may abort it
            if stream is not None:
                action(stream)
            elif reach_required and jas.required:
                # Another thread's failure aborted every stream while this call went
                # round: what it carried never reached a journal it must reach.
                raise IOException(f"{jas} was aborted during the {status}: it got nothing")

        self.journal_set.map_journals_and_report_errors(apply, status)

    def write(self, op: FSEditLogOp) -> None:
        # map_journals_and_report_errors unrolled: this runs once per transaction, and
        # needs no closure, and no status text unless a journal fails.
        journal_set = self.journal_set
        bad: list[JournalAndStream] | None = None
        for jas in tuple(journal_set.journals):
            stream = jas.stream  # read once: a concurrent failure may abort it
            if stream is None:
                continue
            try:
                stream.write(op)
            except Exception as e:  # noqa: BLE001 - any failure disables the journal
                journal_set.journal_failed(jas, e, f"write op {op.txid}")
                bad = [*(bad or ()), jas]
        if bad:
            journal_set.disable_failed(bad, f"write op {op.txid}")

    def set_ready_to_flush(self) -> None:
        self._each_active(lambda s: s.set_ready_to_flush(), "setReadyToFlush")

    def flush(self, durable: bool = True) -> None:
        self._each_active(lambda s: s.flush(), "flush", reach_required=True)

    def set_pipeline_depth(self, depth: int) -> None:
        """Let the streams that buffer sealed batches hold up to ``depth`` of them."""
        for jas in self.journal_set.journals:
            stream = jas.stream
            if stream is not None and hasattr(stream, "set_pipeline_depth"):
                stream.set_pipeline_depth(depth)

    def send_ready(self) -> dict[JournalAndStream, tuple[Any, Any]]:
        """The first half of a pipelined :meth:`flush`: hand the ready batch to every
        active journal without waiting for it to be durable (a quorum gets the batch,
        unanswered; a file only numbers it: it is written once the quorum has it).
        Returns what :meth:`wait_sent` needs. A stream without ``send_ready`` is
        flushed here, whole.
        """
        sent: dict[JournalAndStream, tuple[Any, Any]] = {}

        def send(stream: Any) -> Any:
            send_ready = getattr(stream, "send_ready", None)
            if send_ready is None:
                stream.flush()
                return _FLUSHED
            return send_ready()

        def apply(jas: JournalAndStream) -> None:
            stream = jas.stream
            if stream is not None:
                sent[jas] = (stream, send(stream))
            elif jas.required:
                raise IOException(f"{jas} was aborted during the flush: it got nothing")

        self.journal_set.map_journals_and_report_errors(apply, "flush")
        return sent

    def wait_sent(self, sent: dict[JournalAndStream, tuple[Any, Any]]) -> None:
        """The second half: return once the batch :meth:`send_ready` sent is durable on
        every required journal and enough optional ones (the rule of :meth:`flush`).

        A journal whose stream was aborted since (another batch failed on it) had the
        batch taken away: a required one fails the wait; an optional one was disabled,
        and the set was still usable then, or that failure killed the log.
        """

        def apply(jas: JournalAndStream) -> None:
            stream, ticket = sent.get(jas, (None, None))
            if stream is not None and jas.stream is stream:
                if ticket is not _FLUSHED:
                    stream.wait_sent(ticket)
            elif jas.required:
                raise IOException(f"{jas} was aborted during the flush: it got nothing")

        self.journal_set.map_journals_and_report_errors(apply, "flush")

    @property
    def has_active(self) -> bool:
        """True while at least one journal has an open stream."""
        return any(jas.stream is not None for jas in self.journal_set.journals)

    def should_force_sync(self) -> bool:
        for jas in self.journal_set.journals:  # once per transaction: no generator
            stream = jas.stream
            if stream is not None and stream.should_force_sync():
                return True
        return False

    def close(self) -> None:
        self.journal_set.map_journals_and_report_errors(lambda jas: jas.close_stream(), "close")

    def abort(self) -> None:
        self.journal_set.abort_all_journals()

    def generate_report(self) -> str:
        lines = []
        for jas in self.journal_set.journals:
            stream = jas.stream
            report = getattr(stream, "generate_report", None)
            lines.append(f"{jas}: {report() if report else stream}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return f"JournalSetOutputStream({self.journal_set})"
