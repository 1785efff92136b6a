"""A JournalNode never formats a journal a writer uses (issue 33): the pure rule
(format_rules) and the Journal's check (journal_format_guard), with a clock that moves only
when told (no waiting for the window)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION as LV
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.protocol.exceptions import JournalInUseException
from hadoop_qjm.qjournal.protocol.format_rules import (
    FormatCheck,
    WriterSeen,
    describe_destroyed,
    format_refusal,
    live_writer_reason,
)
from hadoop_qjm.qjournal.server import journal_format_guard
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    create_txn_data,
    make_request,
    snapshot_files,
)

pytestmark = pytest.mark.timeout(60)

WINDOW_MS = 60_000
NOW_MS = 1_764_627_199_000  # 2025-12-01 22:13:19 UTC


def reason(**kw):
    args = dict(
        promised_epoch=3,
        writer_epoch=3,
        writer=None,
        segment_open=False,
        last_write_ms=0,
        now_ms=NOW_MS,
        window_ms=WINDOW_MS,
    )
    args.update(kw)
    return live_writer_reason("mycluster", **args)


# ---- the pure rule ----------------------------------------------------------------------------
def test_a_connected_writer_of_the_promised_epoch_is_live() -> None:
    text = reason(writer=WriterSeen(3, "10.0.0.1:50321", True), last_write_ms=NOW_MS - 1500)
    assert text == (
        "journal mycluster is in use by the writer of epoch 3 at 10.0.0.1:50321 "
        "(still connected, last write 2025-12-01 22:13:17 UTC (1.5s ago))"
    )
    # Connected, but fenced by a newer promise: not that writer's journal any more.
    assert reason(promised_epoch=4, writer=WriterSeen(3, "10.0.0.1:1", True)) is None


def test_an_open_segment_written_within_the_window_is_live() -> None:
    gone = WriterSeen(3, "10.0.0.1:50321", False)
    recent = reason(writer=gone, segment_open=True, last_write_ms=NOW_MS - WINDOW_MS + 1)
    assert recent is not None and "epoch 3 at 10.0.0.1:50321 (disconnected, last write" in recent
    assert reason(writer=gone, segment_open=True, last_write_ms=NOW_MS - WINDOW_MS) is None
    assert reason(writer=gone, segment_open=False, last_write_ms=NOW_MS) is None
    assert reason(writer=None, segment_open=False) is None


def test_the_client_names_every_node_with_a_live_writer_and_what_a_format_destroys() -> None:
    checks = {
        "h1:8485": FormatCheck("journal j is in use by the writer of epoch 3 at a:1 (x)", 2, 10),
        "h2:8485": FormatCheck(None, 2, 10),
        "h3:8485": FormatCheck("journal j is in use by the writer of epoch 3 at a:1 (y)", 1, 4),
    }
    text = format_refusal(checks)
    assert text is not None and "\n" not in text
    assert text.startswith("Not formatting: 2 of 3 JournalNodes have a live writer (h1:8485: ")
    assert "h3:8485: journal j" in text and "h2:8485" not in text
    assert text.endswith("; stop the NameNodes first")
    assert format_refusal({"h2": FormatCheck(None, 0, 0)}) is None
    assert describe_destroyed(checks) == (
        "Formatting destroys 5 segments (24 txns) on 3 JournalNodes (h1:8485: 2 segments, "
        "10 txns, h2:8485: 2 segments, 10 txns, h3:8485: 1 segments, 4 txns)"
    )
    assert describe_destroyed({"h1": FormatCheck(None, 0, 0)}) is None


# ---- the Journal ------------------------------------------------------------------------------
class Clock:
    def __init__(self) -> None:
        self.now = NOW_MS / 1000

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def journal(tmp_path, clock):
    j = Journal(Configuration(), tmp_path / JID, JID, clock=clock)
    j.format(FAKE_NSINFO)
    yield j
    j.close()


def write_segment(journal: Journal, epoch: int = 1, finalize: bool = False) -> None:
    journal.new_epoch(FAKE_NSINFO, epoch)
    journal.start_log_segment(make_request(1, epoch=epoch), 1, LV)
    journal.journal(make_request(2, epoch=epoch), 1, 1, 3, create_txn_data(1, 3))
    if finalize:
        journal.finalize_log_segment(make_request(3, epoch=epoch), 1, 3)


def test_format_is_refused_while_the_open_segment_is_being_written(journal, clock) -> None:
    write_segment(journal)
    before = snapshot_files(journal.storage.log_dir)
    other = NamespaceInfo(6789, "other", "bp")
    with pytest.raises(JournalInUseException) as info:
        journal.format(other, force=True)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("Not formatting: journal test-journal is in use by the writer of")
    assert "epoch 1" in message and "last write" in message
    assert message.endswith("stop the NameNodes first")
    assert snapshot_files(journal.storage.log_dir) == before
    assert journal.get_last_promised_epoch() == 1
    check = journal.can_format()
    assert check.live_writer is not None and (check.segment_count, check.txn_count) == (1, 3)

    clock.now += WINDOW_MS / 1000  # the writer went quiet for the whole window
    assert journal.can_format().live_writer is None
    journal.format(other, force=True)
    assert journal.storage.storage_info.namespace_id == 6789
    assert journal.can_format() == FormatCheck(None, 0, 0)


def test_a_quiet_journal_of_finalized_segments_still_needs_force(journal) -> None:
    write_segment(journal, finalize=True)
    assert journal.can_format() == FormatCheck(None, 1, 3)
    with pytest.raises(IOException, match="current directory is not empty"):
        journal.format(FAKE_NSINFO)
    journal.format(FAKE_NSINFO, force=True)


def test_a_writer_that_holds_its_connection_is_live_however_quiet(
    journal, clock, monkeypatch
) -> None:
    state = {"open": True}
    connection = SimpleNamespace(peer="10.0.0.9:41000", is_open=lambda: state["open"])
    monkeypatch.setattr(journal_format_guard, "remote_connection", lambda: connection)
    write_segment(journal, finalize=True)  # nothing open: only the connection counts
    clock.now += 3600
    check = journal.can_format()
    assert check.live_writer is not None
    assert "epoch 1 at 10.0.0.9:41000 (still connected" in check.live_writer
    with pytest.raises(JournalInUseException):
        journal.format(FAKE_NSINFO, force=True)
    state["open"] = False  # the NameNode stopped
    assert journal.can_format().live_writer is None
    journal.format(FAKE_NSINFO, force=True)


def test_the_window_is_configurable(tmp_path, clock) -> None:
    conf = Configuration()
    conf.set("dfs.journalnode.format.live-writer.window.ms", "5000")
    journal = Journal(conf, tmp_path / JID, JID, clock=clock)
    try:
        journal.format(FAKE_NSINFO)
        write_segment(journal)
        assert journal.can_format().live_writer is not None
        clock.now += 5
        assert journal.can_format().live_writer is None
    finally:
        journal.close()
