"""read_edits: Hadoop's editsStored as a DataFrame, against ``oev -p stats``."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("pyspark")

from hadoop_qjm.spark.edits import read_edits  # noqa: E402
from hadoop_qjm.tools import oev  # noqa: E402
from tests.spark.journal_dirs import JID, make_journal_node_dir  # noqa: E402

_STATS_LINE = re.compile(r"^\s+(OP_\w+)\s+\(\s*(-?\d+)\):\s+(\d+)$")


def _oev_stats(path, tmp_path) -> dict[int, int]:
    out = tmp_path / "stats.txt"
    assert oev.run(["-i", str(path), "-o", str(out), "-p", "stats"], None) == 0
    counts = {}
    for line in out.read_text().splitlines():
        m = _STATS_LINE.match(line)
        if m and int(m.group(3)):
            counts[int(m.group(2))] = int(m.group(3))
    return counts


def test_edits_stored_gives_121_rows_matching_oev_stats(spark, hadoop_testdata, tmp_path):
    path = hadoop_testdata / "editsStored"
    df = read_edits(spark, str(path))
    rows = df.collect()
    assert len(rows) == 121
    counts = {r["opcode"]: r["count"] for r in df.groupBy("opcode").count().collect()}
    assert counts == _oev_stats(path, tmp_path)
    txids = [r["txid"] for r in sorted(rows, key=lambda r: r["txid"])]
    assert txids == list(range(txids[0], txids[0] + 121))
    assert {r["segment"] for r in rows} == {"editsStored"}
    assert {r["node"] for r in rows} == {str(path)}
    mkdirs = [r for r in rows if r["op_name"] == "OP_MKDIR"]
    assert mkdirs and all(r["path"] and r["timestamp"] for r in mkdirs)
    assert all(r["path"] is None for r in rows if r["op_name"] == "OP_START_LOG_SEGMENT")


def test_directories_and_node_names(spark, tmp_path):
    a = make_journal_node_dir(tmp_path, "jn0", diverge=False, tail_end=9)
    b = make_journal_node_dir(tmp_path, "jn1", diverge=False, tail_end=8)
    df = read_edits(spark, {"a": str(a), "b": str(b / JID / "current")})
    per_node = {r["node"]: r["count"] for r in df.groupBy("node").count().collect()}
    assert per_node == {"a": 9, "b": 8}  # the in-progress tail ends at its padding
    assert df.where("segment LIKE 'edits_inprogress_%'").count() == 3 + 2
