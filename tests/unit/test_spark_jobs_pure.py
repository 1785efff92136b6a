"""The Spark jobs' pure parts, without Spark: the log grep of the fault campaign, the
audit's collation, the command-line plumbing."""

from __future__ import annotations

import pytest

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.spark.campaign_tasks import (
    run_one_seed,
    trace_digest,
    unexpected_messages,
)
from hadoop_qjm.spark.fault_campaign import read_seed_file
from hadoop_qjm.spark.journal_audit import _divergences, _one_copy_each, coverage
from hadoop_qjm.spark.session import (
    check_out_dir,
    is_local_master,
    parse_conf_pairs,
    spark_error_line,
)
from hadoop_qjm.testing.randomized import replay_command

TRACEBACK = 'Traceback (most recent call last):\n  File "a.py", line 3, in f\n    g()\n'


@pytest.mark.parametrize(
    ("log", "expected"),
    [
        ("seed 1\nwriter 0: acked 1\npassed", []),
        ("jn0 journal(e1#1) -> Injected - faking being down", []),
        (f"WARNING x: y\n{TRACEBACK}IOException: Injected - the writer has crashed", []),
        (f"ERROR x: y\n{TRACEBACK}OSError: [Errno 28] No space left", ["traceback: OSError: [Errno 28] No space left"]),
        ("jn2 accept_recovery(...) -> HadoopAssertionError: bad", ["jn2 accept_recovery(...) -> HadoopAssertionError: bad"]),
        (f"{TRACEBACK}AttributeError: 'NoneType' object has no attribute 'x'", ["AttributeError: 'NoneType' object has no attribute 'x'"]),
        (
            "writer 2: bit flip in jn0 edits_0000000000000000005-0000000000000000009 at txid 7\n"
            f"{TRACEBACK}ChecksumException: http://jn0:8480/getJournal?segmentTxId=5 at position 8",
            [],
        ),
        (  # a checksum error on a copy the harness did not damage is a finding
            "writer 2: bit flip in jn0 edits_0000000000000000005-0000000000000000009 at txid 7\n"
            f"{TRACEBACK}ChecksumException: http://jn1:8480/getJournal?segmentTxId=5 at position 8",
            ["traceback: ChecksumException: http://jn1:8480/getJournal?segmentTxId=5 at position 8"],
        ),
        ("", []),
        (None, []),
    ],
)  # fmt: skip
def test_unexpected_messages(log, expected) -> None:
    assert unexpected_messages(log) == expected


def test_unexpected_messages_are_bounded() -> None:
    assert len(unexpected_messages("AssertionError\n" * 1000)) == 20


def test_a_seed_row_carries_its_log_and_replay_command() -> None:
    row = run_one_seed(7, 3)
    assert row["passed"] and row["writers"] == 3
    assert row["log"].startswith("seed 7, 3 writers")
    assert row["replay_command"] == replay_command(7, 3, "local", None)
    assert row["trace_digest"] and row["trace_digest"] == run_one_seed(7, 3)["trace_digest"]
    assert "/qjm-campaign-" not in row["log"]  # the scratch directory is named <dir>


def test_a_membership_seed_row_replays_with_set_changes() -> None:
    row = run_one_seed(3, 20, membership=True)
    assert row["passed"] and row["writers"] == 20
    assert row["log"].startswith("seed 3, 20 writers, transport local, membership changes")
    assert row["replay_command"] == (
        "python -m hadoop_qjm.testing.randomized --seed 3 --iterations 20 --membership"
    )


def test_trace_digest_ignores_where_the_package_is() -> None:
    here = ['jn0: x | File "/work/main/hadoop_qjm/q/journal.py", line 3, in f | boom']
    there = [
        'jn0: x | File "/tmp/spark-1/userFiles-2/hadoop_qjm.zip/hadoop_qjm/q/journal.py", line 3, in f | boom'
    ]
    elsewhere = ['jn0: x | File "/work/main/hadoop_qjm/q/journal.py", line 4, in f | boom']
    assert trace_digest(here) == trace_digest(there) != trace_digest(elsewhere)


def test_replay_command() -> None:
    assert replay_command(5, 10, "thrift", "ack-before-write") == (
        "python -m hadoop_qjm.testing.randomized --seed 5 --iterations 10 "
        "--transport thrift --planted-bug ack-before-write"
    )


def test_read_seed_file(tmp_path) -> None:
    path = tmp_path / "seeds"
    path.write_text("# seeds\n1\n\n  42  # the answer\n-3\n")
    assert read_seed_file(str(path)) == [1, 42, -3]
    path.write_text("1\nx\n")
    with pytest.raises(ValueError, match=":2: not a seed"):
        read_seed_file(str(path))


def _seg(node, name, first, last, md5="m", in_progress=False):
    return {"node": node, "jid": "j", "segment": name, "first_txid": first, "last_txid": last,
            "in_progress": in_progress, "md5": md5, "length": 10}  # fmt: skip


def test_coverage_gaps_overlaps_and_tail() -> None:
    segs = [
        _seg("a", "edits_1-3", 1, 3),
        _seg("a", "edits_7-9", 7, 9),
        _seg("a", "edits_9-10", 9, 10),
        _seg("a", "edits_inprogress_11", 11, 14, in_progress=True),
    ]
    row = coverage("j", "a", segs)
    assert row["gaps"] == ["4-6"]
    assert row["overlaps"] == ["edits_7-9 / edits_9-10"]
    assert (row["first_txid"], row["finalized_through"], row["last_txid"]) == (1, 10, 14)
    assert (row["in_progress_first_txid"], row["in_progress_last_txid"]) == (11, 14)
    unknown = coverage(
        "j", "a", [_seg("a", "edits_inprogress_1", 1, INVALID_TXID, in_progress=True)]
    )
    assert unknown["last_txid"] is None and unknown["in_progress_last_txid"] is None
    assert coverage("j", "a", [])["segments"] == 0


def test_divergences_by_bytes_and_by_end() -> None:
    segs = [
        _seg("a", "edits_1-3", 1, 3, "x"),
        _seg("b", "edits_1-3", 1, 3, "x"),
        _seg("a", "edits_4-6", 4, 6, "y"),
        _seg("b", "edits_4-6", 4, 6, "z"),
        _seg("a", "edits_7-8", 7, 8, "w"),
        _seg("b", "edits_7-9", 7, 9, "v"),
        _seg("c", "edits_inprogress_7", 7, 9, "u", in_progress=True),
    ]
    found = _divergences(segs)
    assert [(d["kind"], d["key"]) for d in found] == [
        ("bytes differ", "edits_4-6"),
        ("different ends", "txid 7"),
    ]
    assert found[1]["copies"] == ["a: edits_7-8", "b: edits_7-9"]


def test_ops_read_one_copy_of_every_segment() -> None:
    segs = [
        _seg("b", "edits_1-3", 1, 3),
        _seg("a", "edits_1-3", 1, 3),
        _seg("a", "edits_inprogress_4", 4, 6, in_progress=True),
        _seg("b", "edits_4-5", 4, 5),  # b finalized what a still has in progress
        _seg("a", "edits_inprogress_6", 6, 7, in_progress=True),
        _seg("c", "edits_inprogress_6", 6, 9, in_progress=True),
    ]
    for seg in segs:
        seg.update(error=None, location=f"{seg['node']}/{seg['segment']}")
    chosen = [(c["node"], c["segment"]) for c in _one_copy_each(segs)]
    assert chosen == [("a", "edits_1-3"), ("b", "edits_4-5"), ("c", "edits_inprogress_6")]


def test_command_line_plumbing(tmp_path) -> None:
    assert parse_conf_pairs(["spark.a=1", "b= x=y"]) == {"spark.a": "1", "b": " x=y"}
    with pytest.raises(ValueError):
        parse_conf_pairs(["novalue"])
    assert check_out_dir(str(tmp_path / "new"), False) is None
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("")
    assert "not empty" in check_out_dir(str(tmp_path / "full"), False)
    assert check_out_dir(str(tmp_path / "full"), True) is None
    assert check_out_dir("hdfs://nn/out", False) is None
    # Found before Spark starts, not after the job ran.
    assert check_out_dir(" ", False) == "--out is empty"
    a_file = tmp_path / "full" / "f"
    assert check_out_dir(str(a_file / "x" / "y"), False) == (
        f"{a_file / 'x' / 'y'} cannot be made: {a_file} is not a directory"
    )
    assert is_local_master("local[2]") and is_local_master("local")
    assert not is_local_master("spark://h:7077") and not is_local_master("yarn")


def test_spark_errors_become_one_line() -> None:
    task_failure = RuntimeError(
        "An exception was thrown from the Python worker. Please see the stack trace below.\n"
        "Traceback (most recent call last):\n"
        '  File "/x/segments.py", line 12, in op_rows\n'
        "    raise IOException(...)\n"
        "hadoop_qjm.common.exceptions.IOException: edits_1-3 on jn0: checksum mismatch\n"
        "\tat org.apache.spark.api.python.BasePythonRunner.handle(PythonRunner.scala:600)\n"
    )
    assert spark_error_line(task_failure) == (
        "hadoop_qjm.common.exceptions.IOException: edits_1-3 on jn0: checksum mismatch"
    )
    assert spark_error_line(ValueError("[PATH_ALREADY_EXISTS] Path x already exists.")) == (
        "[PATH_ALREADY_EXISTS] Path x already exists."
    )
