"""The Journal's side of "never format a journal a writer uses" (issue 33).

:class:`WriterWatch` remembers the last writer call the journal served (its epoch and
connection, from the RPC server's call context) and when the open segment was started;
:func:`check_format` applies :func:`~hadoop_qjm.qjournal.protocol.format_rules.live_writer_reason`
to that and counts what a format would destroy. Both run under the journal's lock: the
read-only ``canFormat`` RPC every node answers before the client formats any, and
``format`` itself (a writer that arrived between the two is still refused).
"""

from __future__ import annotations

from collections.abc import Callable

from hadoop_qjm.common.exceptions import HadoopException
from hadoop_qjm.ipc.call_context import remote_connection, remote_ip
from hadoop_qjm.qjournal.protocol.format_rules import FormatCheck, WriterSeen, live_writer_reason
from hadoop_qjm.qjournal.server.journal_node_settings import format_live_writer_window_ms

__all__ = ["WriterWatch", "check_format"]


class WriterWatch:
    """Who wrote last and when the open segment began; ``clock`` in seconds (the Journal's)."""

    def __init__(self, conf, clock: Callable[[], float]) -> None:  # noqa: ANN001
        self.window_ms = format_live_writer_window_ms(conf)
        self._clock = clock
        self._epoch = 0
        self._connection = None
        self._address: str | None = None
        self.segment_started_ms = 0

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    def saw_writer(self, epoch: int) -> None:
        """A call of ``epoch``'s writer passed the epoch check (journal lock held)."""
        connection = remote_connection()
        if connection is not None and connection is self._connection and epoch == self._epoch:
            return  # the common case: nothing new
        self._epoch, self._connection = epoch, connection
        self._address = connection.peer if connection is not None else remote_ip()

    def segment_started(self) -> None:
        self.segment_started_ms = self.now_ms()

    def forget(self) -> None:
        """After a format: no writer, no segment."""
        self._epoch, self._connection, self._address = 0, None, None
        self.segment_started_ms = 0

    def seen(self) -> WriterSeen | None:
        if self._epoch == 0:
            return None
        connected = self._connection is not None and self._connection.is_open()
        return WriterSeen(self._epoch, self._address, connected)


def check_format(journal) -> FormatCheck:  # noqa: ANN001
    """Whether ``journal`` (lock held) may be formatted now, and what that destroys."""
    watch: WriterWatch = journal.writer_watch
    formatted = journal.is_formatted()
    reason = None
    segments = txns = 0
    if formatted:
        reason = live_writer_reason(
            journal.journal_id,
            promised_epoch=journal.last_promised_epoch.get(),
            writer_epoch=journal.last_writer_epoch.get(),
            writer=watch.seen(),
            segment_open=journal.is_segment_open,
            last_write_ms=max(journal.last_journal_timestamp_ms, watch.segment_started_ms)
            if journal.is_segment_open
            else journal.last_journal_timestamp_ms,
            now_ms=watch.now_ms(),
            window_ms=watch.window_ms,
        )
        try:
            logs = journal.fjm.get_remote_edit_logs(0, True)
        except (OSError, HadoopException):  # e.g. overlapping segments: a format may fix that
            return FormatCheck(reason, -1, -1)
        for log in logs:
            segments += 1
            txns += max(log.end_txid - log.start_txid + 1, 0)
    return FormatCheck(reason, segments, txns)
