"""The md5 kept beside a finalized segment (issue 39 item 3): written by finalize only
when every byte of the segment was checked as it was written, and in Hadoop's
MD5FileUtils form; read strictly (anything else is no md5)."""

from __future__ import annotations

import hashlib

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.qjournal.server.scrub_rules import vouched_md5
from hadoop_qjm.qjournal.server.segment_md5 import (
    md5_file_for,
    read_stored_md5,
    write_md5_before_rename,
)
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, create_txn_data, make_request

pytestmark = pytest.mark.timeout(60)

LV = CURRENT_LAYOUT_VERSION


@pytest.fixture
def journal(tmp_path):
    j = Journal(Configuration(), tmp_path / JID, JID)
    j.format(FAKE_NSINFO)
    j.new_epoch(FAKE_NSINFO, 1)
    yield j
    j.close()


def _finalized(journal: Journal, start: int, end: int):
    return journal.storage.finalized_edit_log(start, end)


def test_finalize_keeps_the_md5_of_a_segment_checked_as_it_was_written(journal):
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
    journal.journal(make_request(3), 1, 4, 2, create_txn_data(4, 2))
    journal.finalize_log_segment(make_request(4), 1, 5)
    segment = _finalized(journal, 1, 5)
    md5 = hashlib.md5(segment.read_bytes()).hexdigest()
    assert md5_file_for(segment).read_text() == f"{md5} *{segment.name}\n"
    assert read_stored_md5(segment) == md5


def test_no_md5_for_a_batch_whose_txids_do_not_run_one_by_one(journal):
    """Frames and CRCs are good, but the ops say 2, 1: what the SegmentVerifier refuses,
    so finalize vouches for nothing (a receiver checks every op)."""
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 2, create_txn_data(2, 1) + create_txn_data(1, 1))
    journal.finalize_log_segment(make_request(3), 1, 2)
    assert not md5_file_for(_finalized(journal, 1, 2)).exists()


def test_no_md5_for_a_segment_kept_from_a_scan_after_a_restart(journal, tmp_path):
    """After a restart the open segment's state comes from a scan of bytes written
    before: not checked as they were written, so no md5 — and a stale one is removed."""
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
    journal.close()
    restarted = Journal(Configuration(), tmp_path / JID, JID)
    try:
        segment = _finalized(restarted, 1, 3)
        write_md5_before_rename(segment, "0" * 32)  # a crash left one behind
        restarted.new_epoch(FAKE_NSINFO, 2)
        restarted.finalize_log_segment(make_request(1, epoch=2), 1, 3)
        assert segment.exists()
        assert not md5_file_for(segment).exists()
    finally:
        restarted.close()


@pytest.mark.parametrize(
    "text",
    [
        "",
        "0123456789abcdef0123456789abcdef",  # no name
        "0123456789abcdef0123456789abcdef *another-file\n",
        "0123456789ABCDEF0123456789ABCDEF *edits_1-2\n",  # Hadoop writes lowercase
        "0123456789abcdef0123456789abcde *edits_1-2\n",  # 31 digits
        "\xff",
    ],
)
def test_anything_but_an_md5_line_naming_the_segment_is_no_md5(tmp_path, text):
    segment = tmp_path / "edits_1-2"
    md5_file_for(segment).write_bytes(text.encode("latin-1"))
    assert read_stored_md5(segment) is None


def test_an_md5_line_as_hadoop_writes_it_is_read(tmp_path):
    segment = tmp_path / "edits_1-2"
    md5_file_for(segment).write_text("0123456789abcdef0123456789abcdef *edits_1-2\n")
    assert read_stored_md5(segment) == "0123456789abcdef0123456789abcdef"


@pytest.mark.parametrize(
    ("header", "served", "vouched"),
    [
        ("0123456789abcdef0123456789abcdef", "edits_1-2", "0123456789abcdef0123456789abcdef"),
        (" 0123456789ABCDEF0123456789ABCDEF ", "edits_1-2", "0123456789abcdef0123456789abcdef"),
        (None, "edits_1-2", None),  # Hadoop's JournalNodes: check every op
        ("0123456789abcdef0123456789abcdef", "edits_1-3", None),  # another segment
        ("0123456789abcdef0123456789abcdef", None, None),
        ("not-an-md5", "edits_1-2", None),
    ],
)
def test_only_an_md5_sent_for_the_very_segment_asked_stands_in_for_the_op_check(
    header, served, vouched
):
    assert vouched_md5(header, served, "edits_1-2") == vouched
