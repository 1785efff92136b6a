"""Hand-made JournalNode directories for the audit and read_edits tests (see
test_journal_audit.py for the picture)."""

from __future__ import annotations

from pathlib import Path

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp, edit_log_header, encode_op

JID = "test-journal"
FIRST = "edits_0000000000000000001-0000000000000000003"
SECOND = "edits_0000000000000000004-0000000000000000006"
TAIL = "edits_inprogress_0000000000000000007"


def _segment(txids, rename: dict[int, str] | None = None, padding: int = 0) -> bytes:
    rename = rename or {}
    ops = b"".join(
        encode_op(MkdirOp.create(t, rename.get(t, f"/dir/{t % 2}/tx{t}"), timestamp=1000 + t))
        for t in txids
    )
    return edit_log_header(CURRENT_LAYOUT_VERSION) + ops + b"\xff" * padding


def make_journal_node_dir(base: Path, name: str, *, diverge: bool, tail_end: int) -> Path:
    current = base / name / JID / "current"
    current.mkdir(parents=True)
    (current / "VERSION").write_text("layoutVersion=-67\n")
    (current / "last-promised-epoch").write_text("3\n")
    (current / "last-writer-epoch").write_text("3\n")
    (current / "committed-txid").write_bytes((7).to_bytes(8, "big"))
    (current / FIRST).write_bytes(_segment(range(1, 4)))
    (current / SECOND).write_bytes(_segment(range(4, 7), {5: "/other"} if diverge else None))
    (current / TAIL).write_bytes(_segment(range(7, tail_end + 1), padding=1024))
    return base / name
