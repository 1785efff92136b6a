"""`hdfs-py oev` and `hdfs-py bench` from the command line: exit codes and one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.namenode.fs_edit_log_op import MkdirOp, edit_log_header, encode_op

PROJECT = Path(__file__).resolve().parents[2]


def _segment(tmp_path: Path) -> Path:
    path = tmp_path / "edits_0000000000000000001-0000000000000000003"
    ops = [MkdirOp.create(txid, f"tx {txid}") for txid in (1, 2, 3)]
    path.write_bytes(edit_log_header() + b"".join(encode_op(op) for op in ops))
    return path


@pytest.mark.parametrize(
    "content,message",
    [
        (None, "No such file or directory"),
        (b"", "Reached EOF when reading log header"),
        (b"this is not an edit log at all\n", "Unexpected version"),
    ],
    ids=["missing", "empty", "garbage"],
)
def test_bad_input_is_one_line_on_stderr_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture, content: bytes | None, message: str
) -> None:
    source = tmp_path / "edits"
    if content is not None:
        source.write_bytes(content)
    out = tmp_path / "out.xml"
    assert main(["oev", "-i", str(source), "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and message in captured.err
    assert captured.err.startswith("hdfs-py: ")
    assert not out.exists()  # nothing is created for an unreadable input


@pytest.mark.timeout(60)
def test_the_real_entry_point(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage"
    garbage.write_bytes(os.urandom(64) + b"\x00")
    garbage.write_bytes(b"\x12\x34\x56\x78" + garbage.read_bytes())  # a positive layout version
    result = subprocess.run(
        [sys.executable, str(PROJECT / "bin" / "hdfs-py"), "oev", "-i", str(garbage), "-o", "-"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "Unexpected version of the file system log file" in result.stderr


def test_xml_to_stdout(tmp_path: Path, capsysbinary: pytest.CaptureFixture) -> None:
    assert main(["oev", "-i", str(_segment(tmp_path)), "-o", "-"]) == 0
    out = capsysbinary.readouterr().out.decode()
    assert out.startswith('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<EDITS>\n')
    assert out.count("<OPCODE>OP_MKDIR</OPCODE>") == 3
    assert "<PATH>tx 2</PATH>" in out


def test_stats_to_a_file(tmp_path: Path) -> None:
    out = tmp_path / "stats"
    assert main(["oev", "-p", "STATS", "-i", str(_segment(tmp_path)), "-o", str(out)]) == 0
    assert "    OP_MKDIR                       (  3): 3\n" in out.read_text()


def test_corruption_midway_fails_after_writing_what_was_read(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    source = _segment(tmp_path)
    data = bytearray(source.read_bytes())
    data[-1] ^= 0xFF  # the last op's checksum
    source.write_bytes(bytes(data))
    out = tmp_path / "out.xml"
    assert main(["oev", "-i", str(source), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Transaction is corrupt" in err
    text = out.read_text()
    assert text.count("<RECORD>") == 2 and text.endswith("</EDITS>\n")
    # Recovery mode skips the broken op.
    assert main(["oev", "-r", "-i", str(source), "-o", str(out)]) == 0
    assert out.read_text().count("<RECORD>") == 2


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["oev", "-i", str(_segment(tmp_path))]) == 2
    assert main(["oev", "-i", "x", "-o", "y", "-p", "binary"]) == 2
    assert main(["bench", "no-such-benchmark"]) == 2
    err = capsys.readouterr().err
    assert "unknown benchmark" in err


def test_bench_edits_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    args = ["bench", "edits", "--ops", "3000", "--flush-every", "500", "--dir", str(tmp_path)]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "serialize (EditLogFileOutputStream)" in out
    assert "scan (scan_edit_log" in out and "goal >= 300,000" in out
    assert "raw os.write+fdatasync" in out
    assert list(tmp_path.iterdir()) == []  # the work directory is removed


@pytest.mark.timeout(60)
def test_bench_as_a_module(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hadoop_qjm.tools.bench", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=PROJECT,
    )
    assert result.returncode == 0, result.stderr
    assert "edits" in result.stdout
