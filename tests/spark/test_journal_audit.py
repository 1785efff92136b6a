"""journal-audit (design paper §7.4.1): per finalized segment, the MD5 on every node.

Three hand-made JournalNode directories::

    jn0, jn1, jn2: <dir>/test-journal/current/
        edits_0000000000000000001-0000000000000000003   (txids 1-3, identical)
        edits_0000000000000000004-0000000000000000006   (txids 4-6; on jn2 in the bad case
                                                          a different path in txid 5)
        edits_inprogress_0000000000000000007            (txids 7.., padded; jn1 behind)

and three live in-process JournalNodes (MiniJournalCluster) written through the quorum.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

pytest.importorskip("pyspark")

from hadoop_qjm.spark.journal_audit import run  # noqa: E402
from tests.spark.journal_dirs import FIRST, JID, SECOND, make_journal_node_dir  # noqa: E402


def _dirs(base: Path, diverging: str | None = None) -> list[str]:
    ends = {"jn0": 9, "jn1": 8, "jn2": 9}
    return [
        str(make_journal_node_dir(base, name, diverge=name == diverging, tail_end=end))
        for name, end in ends.items()
    ]


def test_one_differing_finalized_segment_is_reported_and_exits_1(spark, tmp_path, capsys):
    dirs = _dirs(tmp_path / "jns", diverging="jn2")
    out = tmp_path / "audit"
    assert run(["--journal-dirs", *dirs, "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "NODES DISAGREE" in printed
    divergences = spark.read.parquet(str(out / "divergences")).collect()
    assert [(d["jid"], d["kind"], d["key"]) for d in divergences] == [(JID, "bytes differ", SECOND)]
    assert len(divergences[0]["copies"]) == 3
    assert FIRST not in printed.split("DIVERGENCES")[1].split("coverage")[0]
    assert (out / "summary.txt").read_text() == printed


def test_a_used_out_dir_is_refused_before_anything_runs(tmp_path, capsys):
    out = tmp_path / "audit"
    out.mkdir()
    (out / "summary.txt").write_text("an earlier audit\n")
    dirs = _dirs(tmp_path / "jns")
    assert run(["--journal-dirs", *dirs, "--out", str(out)]) == 1
    captured = capsys.readouterr()
    refused = f"journal-audit: {out} exists and is not empty (use --overwrite)"
    assert captured.err.splitlines() == [refused] and captured.out == ""
    assert [p.name for p in out.iterdir()] == ["summary.txt"]


def test_three_healthy_nodes_exit_0_with_coverage_and_lag(spark, tmp_path, capsys):
    dirs = _dirs(tmp_path / "jns")
    out = tmp_path / "audit"
    assert run(["--journal-dirs", *dirs, "--out", str(out), "--ops"]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    # The progress line on stderr (not a terminal: plain lines), per segment copy.
    assert re.search(
        r"^journal-audit: 9/9 segments \(100%\), .*, in \d+s, 0 unreadable$", captured.err, re.M
    ), captured.err
    assert "all finalized copies agree" in printed
    assert spark.read.parquet(str(out / "divergences")).count() == 0
    coverage = {r["node"]: r for r in spark.read.parquet(str(out / "coverage")).collect()}
    assert set(coverage) == set(dirs)
    jn1 = coverage[dirs[1]]
    assert (jn1["first_txid"], jn1["finalized_through"], jn1["last_txid"]) == (1, 6, 8)
    assert (jn1["in_progress_first_txid"], jn1["in_progress_last_txid"], jn1["lag"]) == (7, 8, 1)
    assert (jn1["promised_epoch"], jn1["writer_epoch"], jn1["committed_txid"]) == (3, 3, 7)
    assert jn1["gaps"] == [] and jn1["overlaps"] == []
    assert coverage[dirs[0]]["lag"] == 0
    segments = spark.read.parquet(str(out / "segments"))
    assert segments.count() == 9
    # --ops: one copy of every segment, the in-progress one from a node with txids 7-9.
    assert "OP_MKDIR" in printed and "9" in printed.split("OP_MKDIR")[1].splitlines()[0]
    assert "/dir/1/tx1" in printed


def test_a_gap_is_reported_per_node(spark, tmp_path, capsys):
    dirs = _dirs(tmp_path / "jns")
    (Path(dirs[2]) / JID / "current" / SECOND).unlink()
    out = tmp_path / "audit"
    assert run(["--journal-dirs", *dirs, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "gaps: 4-6" in printed
    coverage = {r["node"]: r for r in spark.read.parquet(str(out / "coverage")).collect()}
    assert coverage[dirs[2]]["gaps"] == ["4-6"]
    assert coverage[dirs[0]]["gaps"] == []


def test_an_unreadable_directory_makes_the_audit_incomplete(spark, tmp_path, capsys):
    dirs = _dirs(tmp_path / "jns")
    out = tmp_path / "audit"
    missing = str(tmp_path / "nowhere")
    assert run(["--journal-dirs", *dirs, missing, "--out", str(out)]) == 1
    printed = capsys.readouterr().out
    assert "AUDIT INCOMPLETE" in printed and missing in printed


def test_refuses_a_non_empty_out_without_overwrite(spark, tmp_path, capsys):
    dirs = _dirs(tmp_path / "jns")
    out = tmp_path / "audit"
    out.mkdir()
    (out / "keep").write_text("x")
    assert run(["--journal-dirs", *dirs, "--out", str(out)]) == 1
    assert "not empty" in capsys.readouterr().err
    assert (out / "keep").exists()


@pytest.mark.timeout(120)
def test_live_journal_nodes_over_rpc_and_http(spark, tmp_path, capsys):
    from hadoop_qjm.conf import Configuration
    from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
    from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
    from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, write_segment, write_txns

    conf = Configuration()
    with MiniJournalCluster(3, tmp_path / "cluster", conf) as cluster:
        uri = cluster.quorum_journal_uri(JID)
        qjm = QuorumJournalManager(conf, uri, FAKE_NSINFO)
        try:
            qjm.format(FAKE_NSINFO)
            qjm.recover_unfinalized_segments()
            write_segment(qjm, 1, 5, True)
            write_segment(qjm, 6, 5, True)
            stm = write_segment(qjm, 11, 3, False)
            write_txns(stm, 14, 2)
            # flush() returns once a quorum acked; wait (with a deadline) for the third node.
            deadline = time.monotonic() + 30
            while any(
                cluster.journal_node(i).get_or_create_journal(JID).highest_written_txid < 15
                for i in range(3)
            ):
                assert time.monotonic() < deadline, "a JournalNode never caught up to txid 15"
                time.sleep(0.01)
        finally:
            qjm.close()

        out = tmp_path / "audit"
        assert run(["--shared-edits", uri, "--out", str(out), "--ops"]) == 0
        printed = capsys.readouterr().out
        assert "all finalized copies agree" in printed
        coverage = spark.read.parquet(str(out / "coverage")).collect()
        assert len(coverage) == 3
        for row in coverage:
            assert (row["first_txid"], row["finalized_through"]) == (1, 10)
            assert (row["in_progress_first_txid"], row["last_txid"]) == (11, 15)
        assert "OP_MKDIR" in printed and "15" in printed.split("OP_MKDIR")[1].splitlines()[0]

        # Change one node's copy of a finalized segment on disk: the HTTP audit sees it.
        name = "edits_0000000000000000006-0000000000000000010"
        victim = cluster.current_dir(1, JID) / name
        data = bytearray(victim.read_bytes())
        data[-6] ^= 0x01  # inside the last op's body
        victim.write_bytes(bytes(data))
        out2 = tmp_path / "audit2"
        assert run(["--shared-edits", uri, "--out", str(out2)]) == 1
        divergences = spark.read.parquet(str(out2 / "divergences")).collect()
        assert [(d["kind"], d["key"]) for d in divergences] == [("bytes differ", name)]


def test_live_audit_of_a_secured_cluster(spark, tmp_path, capsys):
    """With the cluster's security settings (mutual TLS, HTTPS only) the executors list the
    nodes over TLS RPC and fetch segments over HTTPS; without them they get nothing."""
    from hadoop_qjm.common.security.certs import secure_conf_properties
    from hadoop_qjm.conf import Configuration
    from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
    from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
    from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, write_segment

    conf = Configuration()
    for key, value in secure_conf_properties(tmp_path / "pki").items():
        conf.set(key, value)
    with MiniJournalCluster(3, tmp_path / "cluster", conf) as cluster:
        uri = cluster.quorum_journal_uri(JID)
        qjm = QuorumJournalManager(conf, uri, FAKE_NSINFO)
        try:
            qjm.format(FAKE_NSINFO)
            qjm.recover_unfinalized_segments()
            write_segment(qjm, 1, 5, True)
            # finalize returns with a majority; close() would drop a call still queued
            # for the third node.
            qjm.loggers.wait_for_all_pending_calls()
        finally:
            qjm.close()
        assert all(
            (cluster.current_dir(i, JID) / f"edits_{1:019d}-{5:019d}").exists() for i in range(3)
        )

        out = tmp_path / "audit"
        assert run(["--shared-edits", uri, "--out", str(out)], conf) == 0
        printed = capsys.readouterr().out
        assert "all finalized copies agree" in printed
        rows = spark.read.parquet(str(out / "coverage")).collect()
        assert [row["finalized_through"] for row in rows] == [5, 5, 5]

        plain = tmp_path / "audit-plain"
        assert run(["--shared-edits", uri, "--out", str(plain)], Configuration()) == 1
