"""`hdfs-py oev` and `hdfs-py bench` from the command line: exit codes and one-line errors."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp, PermissionStatus, edit_log_header, encode_op
from hadoop_qjm.namenode.name_node_core import format_namenode
from tests.integration.namenode_support import nn_conf, start_nn

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


def _corrupt_last_op(tmp_path: Path) -> Path:
    source = _segment(tmp_path)
    data = bytearray(source.read_bytes())
    data[-1] ^= 0xFF  # the last op's checksum
    source.write_bytes(bytes(data))
    return source


def test_corruption_midway_fails_and_writes_no_file(
    tmp_path: Path, capsysbinary: pytest.CaptureFixture
) -> None:
    source = _corrupt_last_op(tmp_path)
    out = tmp_path / "out.xml"
    assert main(["oev", "-i", str(source), "-o", str(out)]) == 1
    err = capsysbinary.readouterr().err.decode()
    assert err.count("\n") == 1 and "Transaction is corrupt" in err
    assert not out.exists()
    # On standard output the ops read until then are there, the XML closed cleanly.
    assert main(["oev", "-i", str(source), "-o", "-"]) == 1
    text = capsysbinary.readouterr().out.decode()
    assert text.count("<RECORD>") == 2 and text.endswith("</EDITS>\n")
    # Recovery mode skips the broken op, and a run that completed writes the file.
    assert main(["oev", "-r", "-i", str(source), "-o", str(out)]) == 0
    assert out.read_text().count("<RECORD>") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == [source.name, "out.xml"]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("processor", ["xml", "stats"])
def test_a_corrupt_input_leaves_an_existing_output_alone(
    tmp_path: Path, capsys: pytest.CaptureFixture, processor: str
) -> None:
    # It was overwritten with the ops read before the corruption (for xml, at worst a
    # stub <EDITS><EDITS_VERSION>-67</EDITS_VERSION></EDITS>).
    source = _corrupt_last_op(tmp_path)
    out = tmp_path / "existing"
    out.write_bytes(b"before\x00\xff\n")
    assert main(["oev", "-p", processor, "-i", str(source), "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Transaction is corrupt" in err
    assert out.read_bytes() == b"before\x00\xff\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([source.name, "existing"])
    # A run that succeeds replaces it, and leaves no temporary file either.
    assert main(["oev", "-p", processor, "-i", str(_segment(tmp_path)), "-o", str(out)]) == 0
    assert b"OP_MKDIR" in out.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([source.name, "existing"])


@pytest.mark.timeout(60)
@pytest.mark.parametrize("processor", ["xml", "stats"])
def test_a_truncated_input_creates_no_output(
    tmp_path: Path, capsys: pytest.CaptureFixture, processor: str
) -> None:
    source = _segment(tmp_path)
    source.write_bytes(source.read_bytes()[:-5])  # the last op cut short
    out = tmp_path / "out" / "x0.xml"
    out.parent.mkdir()
    assert main(["oev", "-p", processor, "-i", str(source), "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("hdfs-py: ")
    assert "is truncated" in captured.err, captured.err
    assert list(out.parent.iterdir()) == []  # neither the output nor a temporary file


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("empty", "option"), [("-i", "-i/--inputFile"), ("-o", "-o/--outputFile")])
def test_an_empty_file_name_is_a_usage_error(
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
    empty: str,
    option: str,
) -> None:
    # -i '' read the current directory: "hdfs-py: [Errno 21] Is a directory", no path named.
    source = _segment(tmp_path)
    monkeypatch.chdir(tmp_path)
    files = {"-i": str(source), "-o": "-"} | {empty: ""}
    assert main(["oev", "-i", files["-i"], "-o", files["-o"]]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    assert f"argument {option}: the file name is empty" in captured.err
    assert list(tmp_path.iterdir()) == [source]


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["oev", "-i", str(_segment(tmp_path))]) == 2
    assert main(["oev", "-i", "x", "-o", "y", "-p", "json"]) == 2
    assert main(["bench", "no-such-benchmark"]) == 2
    err = capsys.readouterr().err
    assert "unknown benchmark" in err


def test_every_benchmark_listed_is_one_that_runs(capsys: pytest.CaptureFixture) -> None:
    # The usage names what may be run: a helper module listed there answered with an
    # internal error (no run()); each listed one answers --help with its own usage.
    import importlib

    from hadoop_qjm.tools import bench

    names = bench.subcommands()
    assert "journalnode" in names and "qjm" in names
    for name in names:
        assert callable(importlib.import_module(f"hadoop_qjm.tools.bench.{name}").run)
    for helper in ("catch_up", "_catch_up", "qjm_measure"):
        assert main(["bench", helper]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"unknown benchmark '{helper}'" in err
    assert main(["bench", "journalnode", "--help"]) == 0
    assert "--catch-up" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (["journalnode", "--rounds", "3"], "--rounds only applies with --catch-up"),
        (
            ["journalnode", "--segments", "3", "--segment-mb", "2", "--rounds", "1"],
            "--segments, --rounds and --segment-mb only apply with --catch-up",
        ),
        (["qjm", "--rounds", "2"], "--rounds only applies with --secure"),
        (["qjm", "--writers", "2", "--depths", "2"], "--depths and --writers only apply"),
        (["qjm", "--secure", "--pipeline"], "--secure and --pipeline are two different runs"),
        (["failover", "--quick", "--rounds", "3"], "--rounds only applies with --auto"),
    ],
)
def test_an_option_of_another_mode_is_refused_not_ignored(
    args: list[str], complaint: str, capsys: pytest.CaptureFixture
) -> None:
    # Each ran the other benchmark (minutes of it), silently without what was asked.
    assert main(["bench", *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and complaint in err


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


# ---- -p binary: XML back into a segment ------------------------------------------------------


def test_round_trip_of_a_segment_our_namenode_wrote(tmp_path: Path) -> None:
    conf = nn_conf(tmp_path)
    format_namenode(conf)
    nn = start_nn(conf)
    try:
        ns = nn.namesystem
        ns.mkdirs("/a/b")
        ns.create("/a/f é\\\x01")  # non-ASCII, a backslash and a control character
        ns.rename("/a/f é\\\x01", "/a/g")
        ns.rename2("/a/g", "/a/h", overwrite=True)
        ns.set_permission("/a/h", 0o1644)
        ns.set_owner("/a/h", "bob", None)
        ns.set_times("/a/h", 5, 6)
        ns.delete("/a/b", True)
    finally:
        nn.close()  # finalizes the segment
    (segment,) = (tmp_path / "name" / "current").glob("edits_0*-0*")
    xml, back = tmp_path / "segment.xml", tmp_path / "segment"
    assert main(["oev", "-i", str(segment), "-o", str(xml)]) == 0
    assert "<PATH>/a/f é\\005c;\\0001;</PATH>" in xml.read_text("utf-8")
    assert main(["oev", "-p", "binary", "-i", str(xml), "-o", str(back)]) == 0
    assert back.read_bytes() == segment.read_bytes()


_HEAD = "<EDITS><EDITS_VERSION>-67</EDITS_VERSION>"
_MKDIR = (
    "<RECORD><OPCODE>OP_MKDIR</OPCODE><DATA><TXID>1</TXID><LENGTH>0</LENGTH>"
    "<INODEID>16386</INODEID><PATH>/d</PATH><TIMESTAMP>1</TIMESTAMP><PERMISSION_STATUS>"
    "<USERNAME>u</USERNAME><GROUPNAME>g</GROUPNAME><MODE>493</MODE></PERMISSION_STATUS>"
    "</DATA></RECORD>"
)


@pytest.mark.parametrize(
    "xml,message",
    [
        (_HEAD + _MKDIR, "XML parsing error"),  # no </EDITS>
        ("<EDITS><RECORD/></EDITS>", "<EDITS_VERSION> must come first"),
        ("<FSIMAGE/>", "you must put <EDITS> at the top"),
        (
            _HEAD + _MKDIR.replace("OP_MKDIR", "OP_NOPE") + "</EDITS>",
            "unknown or unwritable opcode",
        ),
        (_HEAD + _MKDIR.replace("<PATH>/d</PATH>", "") + "</EDITS>", "no entry found for <PATH>"),
        (_HEAD + _MKDIR.replace("493", "rwx") + "</EDITS>", "<MODE> is not a number"),
        (_HEAD + _MKDIR.replace("16386", "1" * 20) + "</EDITS>", "does not fit in a 64-bit"),
        (_HEAD + _MKDIR.replace("/d", "/d\\zz") + "</EDITS>", "invalid escape"),
        ("<EDITS><EDITS_VERSION>-60</EDITS_VERSION></EDITS>", "Cannot write layout version -60"),
        ("", "XML parsing error"),
    ],
    ids=[
        "truncated",
        "no-version",
        "not-edits",
        "opcode",
        "missing-field",
        "not-a-number",
        "too-big",
        "bad-escape",
        "old-layout",
        "empty",
    ],
)
def test_bad_xml_is_one_line_exit_1_and_no_output(
    tmp_path: Path, capsys: pytest.CaptureFixture, xml: str, message: str
) -> None:
    source = tmp_path / "edits.xml"
    source.write_text(xml)
    out = tmp_path / "out" / "edits"
    out.parent.mkdir()
    assert main(["oev", "-p", "binary", "-i", str(source), "-o", str(out)]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1 and captured.err.startswith("hdfs-py: ")
    assert message in captured.err, captured.err
    assert list(out.parent.iterdir()) == []  # neither the output nor a temporary file


def test_a_failed_conversion_leaves_an_existing_output_alone(tmp_path: Path) -> None:
    source = tmp_path / "edits.xml"
    source.write_text(_HEAD + _MKDIR + _MKDIR.replace("<TXID>1", "<TXID>x") + "</EDITS>")
    out = tmp_path / "edits"
    out.write_bytes(b"before")
    assert main(["oev", "-p", "binary", "-i", str(source), "-o", str(out)]) == 1
    assert out.read_bytes() == b"before"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["edits", "edits.xml"]


@pytest.mark.timeout(60)
def test_binary_from_the_real_entry_point(tmp_path: Path) -> None:
    source = tmp_path / "edits.xml"
    source.write_text(_HEAD + _MKDIR)  # truncated: no </EDITS>
    out = tmp_path / "edits"
    command = [sys.executable, str(PROJECT / "bin" / "hdfs-py"), "oev", "-p", "binary"]
    result = subprocess.run(
        [*command, "-i", str(source), "-o", str(out)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    assert len(result.stderr.splitlines()) == 1 and "XML parsing error" in result.stderr
    assert not out.exists()
    source.write_text(_HEAD + _MKDIR + "</EDITS>")
    result = subprocess.run(
        [*command, "-i", str(source), "-o", "-"], capture_output=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == edit_log_header() + encode_op(
        MkdirOp(
            1,
            inode_id=16386,
            path="/d",
            timestamp=1,
            permissions=PermissionStatus("u", "g", 0o755),
        )
    )
