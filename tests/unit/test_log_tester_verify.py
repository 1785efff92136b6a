"""logtester-verify (design paper §7.4.1) over JournalNode directories."""

from __future__ import annotations

from pathlib import Path

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.editlog.file_journal_manager import (
    finalized_edits_file_name,
    inprogress_edits_file_name,
)
from hadoop_qjm.editlog.fs_edit_log_op import edit_log_header
from hadoop_qjm.testing.qjm_test_util import create_txn_data
from hadoop_qjm.tools.log_tester import verify

pytestmark = pytest.mark.timeout(30)


def _segment(directory: Path, name: str, content: bytes) -> None:
    (directory / "current").mkdir(parents=True, exist_ok=True)
    (directory / "current" / name).write_bytes(content)


def test_an_in_progress_file_whose_header_never_landed_holds_no_txns(tmp_path) -> None:
    """A JournalNode killed while creating segment 3 leaves its preallocated file (layout
    -1); the check reads it as holding nothing, as Hadoop sidelines it, not as an error."""
    segment = edit_log_header(CURRENT_LAYOUT_VERSION) + create_txn_data(1, 2)
    local = tmp_path / "lt-0"
    _segment(local, finalized_edits_file_name(1, 2), segment)
    journals = [tmp_path / f"jn{i}" for i in range(3)]
    for directory in journals:
        _segment(directory, finalized_edits_file_name(1, 2), segment)
    _segment(journals[1], inprogress_edits_file_name(3), b"\xff" * 1024)
    assert verify([local], journals) == []
    # And the check still sees what is wrong: a txid the journal does not have.
    _segment(
        local,
        finalized_edits_file_name(3, 3),
        edit_log_header(CURRENT_LAYOUT_VERSION) + create_txn_data(3, 1),
    )
    assert verify([local], journals) == [f"txid 3 of {local} is not in the journal"]
