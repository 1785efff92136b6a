"""Bad input on the command line: one sentence on stderr naming what was wrong, exit 2 for a
malformed command line and 1 otherwise, and nothing started (from a sweep of every command)."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hadoop_qjm.cli import main

pytestmark = pytest.mark.timeout(60)

PROJECT = Path(__file__).resolve().parents[2]
HA = [
    "-D", "dfs.nameservices=mycluster", "-D", "dfs.ha.namenodes.mycluster=nn1,nn2",
    "-D", "dfs.namenode.rpc-address.mycluster.nn1=127.0.0.1:1",
    "-D", "dfs.namenode.rpc-address.mycluster.nn2=127.0.0.1:2",
    "-D", "fs.defaultFS=hdfs://mycluster",
]  # fmt: skip


def one_line(capsys: pytest.CaptureFixture) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    return err


@pytest.mark.parametrize(
    "args,expected",
    [
        (["getconf", "-bogus"], "unrecognized arguments: -bogus"),
        (["security", "-bogus"], "unrecognized arguments: -bogus"),
        (["logtester", "--bogus"], "unrecognized arguments: --bogus"),
        (["logtester-verify", "--bogus"], "unrecognized arguments: --bogus"),
        (
            ["logtester", "--shared-edits", "qjournal://127.0.0.1:1/j", "--local-dir", ""],
            "argument --local-dir: the path is empty",
        ),
        (
            ["logtester-verify", "--local-dirs", "", "--journal-dirs", "j"],
            "argument --local-dirs: the path is empty",
        ),
        (
            ["logtester-verify", "--local-dirs", "l", "--journal-dirs", "j", " "],
            "argument --journal-dirs: the path is empty",
        ),
        (["bench", "journalnode", "--seconds", "nan"], "'nan' is not a finite number"),
        (["bench", "qjm", "--seconds", "inf"], "'inf' is not a finite number"),
        (["bench", "qjm", "--slice", "x"], "'x' is not a number"),
        (
            ["bench", "campaign", "--partitions", "0"],
            "--partitions must be between 1 and 100000, not 0",
        ),
        (
            ["bench", "campaign", "--seeds", "99999999999999999999"],
            "--seeds must be between 1 and 1000000, not 99999999999999999999",
        ),
        (
            ["logtester", "--shared-edits", "qjournal://127.0.0.1:1/j", "--local-dir", "d"]
            + ["--duration", "nan"],
            "'nan' is not a finite number",
        ),
        (
            ["security", "-generateCerts", "pki", "--days", "99999999"],
            "--days must be between 1 and 36500",
        ),
        (["--config", "", "getconf", "-journalNodes"], "--config needs a directory"),
        (["--config=", "getconf", "-journalNodes"], "--config needs a directory"),
        (["--daemon", "bogus", "journalnode"], "--daemon takes start, stop or status"),
        (["--daemon", "start", "dfs"], "--daemon runs journalnode, namenode, zkfc, not 'dfs'"),
        (["--daemon", "stop", "zkfc", "x"], "--daemon stop zkfc takes -nnid NNID only, got x"),
        (
            ["--daemon", "status", "journalnode", "-nnid", "nn1"],
            "--daemon status journalnode takes no arguments, got -nnid nn1",
        ),
        (["--config", "nope", "--daemon", "status", "namenode"], "directory nope does not exist"),
        (
            ["namenode", "-observer", "-format"],
            "-observer starts the NameNode daemon and takes no other command",
        ),
    ],
)
def test_a_malformed_command_line_is_one_line_and_exit_2(
    args: list[str], expected: str, capsys: pytest.CaptureFixture, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HADOOP_PID_DIR", str(tmp_path / "pids"))
    monkeypatch.setenv("HADOOP_LOG_DIR", str(tmp_path / "logs"))
    assert main(args) == 2
    assert expected in one_line(capsys)
    assert list(tmp_path.iterdir()) == []  # nothing made


def test_bench_without_a_benchmark_is_a_usage_error(capsys: pytest.CaptureFixture) -> None:
    assert main(["bench"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.startswith("usage: hdfs-py bench {")
    assert main(["bench", "--help"]) == 0  # asked for: on stdout, exit 0


def test_spark_jobs_check_their_numbers_before_starting_spark(
    capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    out = str(tmp_path / "out")
    campaign = ["fault-campaign", "--seeds", "1", "--out", out, "--progress-interval", "-1"]
    assert main(campaign) == 2
    assert "--progress-interval must be 0 (none) or positive" in one_line(capsys)
    for extra, expected in [
        (["--switch-probability", "0.5"], "--switch-probability needs --membership"),
        (["--membership", "--switch-probability", "2"], "must lie between 0 and 1"),
        (["--pipeline-depth", "0"], "--pipeline-depth must be at least 1"),
    ]:
        assert main(["fault-campaign", "--seeds", "1", "--out", out, *extra]) == 2
        assert expected in one_line(capsys)
    audit = ["journal-audit", "--journal-dirs", str(tmp_path), "--out", out, "--timeout", "-1"]
    assert main(audit) == 2
    assert "--timeout must be positive" in one_line(capsys)
    assert not Path(out).exists()


def _no_spark(monkeypatch) -> None:
    """Make starting a Spark session fail the test: these checks come before it (run_job's
    own checks of --master and --out included)."""
    import hadoop_qjm.spark.session as session

    @contextlib.contextmanager
    def spark_session(*args, **kwargs):
        pytest.fail("a Spark session was started")
        yield

    monkeypatch.setattr(session, "spark_session", spark_session)


HUGE = "99999999999999999999"


@pytest.mark.parametrize(
    "extra,expected",
    [
        (["--seeds", HUGE], f"--seeds must be between 1 and 1000000, not {HUGE}"),
        (["--seeds", "0"], "--seeds must be between 1 and 1000000, not 0"),
        (["--seeds", "1", "--iterations", HUGE], "--iterations must be between 1 and 100000"),
        (["--seeds", "1", "--partitions", HUGE], "--partitions must be between 1 and 100000"),
        (["--seeds", "2", "--first-seed", "-1"], "--first-seed must be between 0 and"),
        (["--seeds", "2", "--first-seed", str(2**63 - 1)], "--first-seed must be between 0 and"),
    ],
    ids=["huge-seeds", "zero-seeds", "huge-iterations", "huge-partitions", "negative", "bigint"],
)
def test_fault_campaign_bounds_its_counts_before_starting_spark(
    extra: list[str], expected: str, capsys: pytest.CaptureFixture, tmp_path: Path, monkeypatch
) -> None:
    _no_spark(monkeypatch)
    out = tmp_path / "out"
    assert main(["fault-campaign", "--out", str(out), *extra]) == 2
    line = one_line(capsys)
    assert line.startswith("hdfs-py fault-campaign: ") and expected in line, line
    assert not out.exists()


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--journal-dirs", "/tmp", " "], "--journal-dirs: an empty directory name"),
        (["--journal-dirs", "/tmp", "--jid", "a/b"], "--jid: bad journal id: a/b"),
        (["--shared-edits", "qjournal://[::1/j"], "Bad IPv6 address '[::1'"),
        (["--journal-dirs", "/tmp", "--master", "bogus://x"], "'bogus://x' is not a Spark master"),
    ],
    ids=["empty-dir", "bad-jid", "bad-uri", "bad-master"],
)
def test_journal_audit_checks_its_sources_before_starting_spark(
    extra: list[str], expected: str, capsys: pytest.CaptureFixture, tmp_path: Path, monkeypatch
) -> None:
    # Each ran the whole Spark job (and wrote --out), or printed a JVM stack trace. (A
    # directory that cannot be read is the audit's to report: "AUDIT INCOMPLETE".)
    _no_spark(monkeypatch)
    out = tmp_path / "out"
    assert main(["journal-audit", "--out", str(out), *extra]) == 2
    assert expected in one_line(capsys)
    assert not out.exists()


def test_a_spark_jobs_out_under_a_file_is_refused_before_it_starts(
    capsys: pytest.CaptureFixture, tmp_path: Path, monkeypatch
) -> None:
    _no_spark(monkeypatch)
    a_file = tmp_path / "f"
    a_file.write_text("")
    out = a_file / "out"
    assert main(["journal-audit", "--journal-dirs", str(tmp_path), "--out", str(out)]) == 1
    assert one_line(capsys) == f"journal-audit: {out} cannot be made: {a_file} is not a directory"


def test_fault_campaign_refuses_a_negative_seed_in_its_seed_file(
    capsys: pytest.CaptureFixture, tmp_path: Path, monkeypatch
) -> None:
    _no_spark(monkeypatch)
    seed_file = tmp_path / "seeds.txt"
    seed_file.write_text("1\n-5\n2\n")
    out = tmp_path / "out"
    assert main(["fault-campaign", "--out", str(out), "--seed-file", str(seed_file)]) == 2
    assert one_line(capsys) == (
        f"hdfs-py fault-campaign: {seed_file}: seed -5 is out of range (0 to 2**63-1)"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    "args,expected",
    [
        (
            ["-D", "fs.defaultFS=hdfs://[::1", "dfs", "-ls", "/"],
            "Invalid URI hdfs://[::1: Invalid IPv6 URL",
        ),
        (
            [*HA, "-D", "dfs.client.failover.sleep.base.millis=-100", "dfs", "-ls", "/"],
            "Invalid value for dfs.client.failover.sleep.base.millis: '-100' is not a time"
            " duration of 0 or more (a number of milliseconds, or with a unit: ns us ms s m h d)"
            " (set from command line)",
        ),
    ],
)
def test_a_bad_address_or_setting_is_one_line_and_exit_1(
    args: list[str], expected: str, capsys: pytest.CaptureFixture
) -> None:
    assert main(args) == 1
    assert expected in one_line(capsys)


def test_oev_names_a_directory_given_as_its_input(
    capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    assert main(["oev", "-i", str(tmp_path), "-o", "-"]) == 1
    assert f"Cannot read {tmp_path}: it is a directory, not an edits file" in one_line(capsys)


def test_daemon_options_that_are_not_settings_change_nothing(
    capsys: pytest.CaptureFixture, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.setenv("HADOOP_PID_DIR", str(tmp_path / "pids"))
    monkeypatch.setenv("HADOOP_LOG_DIR", str(tmp_path / "logs"))
    monkeypatch.setenv("HDFS_NAMENODE_OPTS", "-Xmx1g")
    assert main(["--daemon", "start", "namenode"]) == 2
    assert "HDFS_NAMENODE_OPTS takes -Dkey=value settings only, not '-Xmx1g'" in one_line(capsys)
    assert list(tmp_path.iterdir()) == []  # no pid file, no .out rotated


@pytest.mark.parametrize(
    "script,args,expected",
    [
        ("journalnodes-py.sh", [], "Usage: journalnodes-py.sh (start|stop|status) [--config DIR]"),
        ("start-journalnodes.sh", ["--bogus"], "start-journalnodes.sh: unknown argument --bogus"),
        ("stop-journalnodes.sh", ["--config"], "Usage: stop-journalnodes.sh [--config DIR]"),
        ("start-dfs-py.sh", ["--bogus"], "start-dfs-py.sh: unknown argument --bogus"),
        ("stop-dfs-py.sh", ["--config"], "Usage: stop-dfs-py.sh [--config DIR]"),
        ("hadoop-daemon-py.sh", ["start", "dfs"], "Usage: hadoop-daemon-py.sh [--config DIR]"),
    ],
)
def test_journalnode_scripts_refuse_bad_arguments(script, args, expected) -> None:
    result = subprocess.run(
        [str(PROJECT / "sbin" / script), *args], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [result.stderr.strip()]
    assert expected in result.stderr


def _closed_ports(count: int) -> list[int]:
    """Ports the OS chose and nothing listens on any more (connections are refused)."""
    socks = [socket.create_server(("127.0.0.1", 0)) for _ in range(count)]
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def test_a_quorum_error_is_one_line_naming_each_node(
    capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    """A QuorumException lists each node on a line of its own; the user sees one line."""
    uri = "qjournal://" + ";".join(f"127.0.0.1:{p}" for p in _closed_ports(3)) + "/lt"
    args = ["logtester", "--shared-edits", uri, "--local-dir", str(tmp_path / "lt")]
    assert main([*args, "--max-txns", "5", "--format"]) == 1
    line = one_line(capsys)
    assert "Unable to check if JNs are ready for formatting" in line
    assert "exceptions thrown: 127.0.0.1:" in line and "Connection refused" in line
    assert main([*args, "--max-txns", "5"]) == 3  # LogTester's "fenced or out of quorum"
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("logtester: lost the quorum: Got too many exceptions")
    assert line.count("Connection refused") >= 2


@pytest.mark.parametrize(
    "command,prog",
    [
        (["oev", "-i", "edits", "-o"], "hdfs-py oev"),
        (["quickstart", "--bogus"], "hdfs-py quickstart"),
        (["bench", "failover", "--bogus"], "hdfs-py bench failover"),
        (["getconf", "-bogus"], "hdfs-py getconf"),
    ],
)
def test_a_sub_commands_argparse_error_names_the_command_once(
    command: list[str], prog: str, capsys: pytest.CaptureFixture, tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(command) == 2
    line = one_line(capsys)
    assert line.startswith(f"{prog}: "), line
    assert line.count("hdfs-py") == 1, line


EDITS_STORED = PROJECT.parent / "shared" / "testdata" / "hadoop" / "editsStored"


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["bench", "--help"],
        pytest.param(
            ["oev", "-i", str(EDITS_STORED), "-o", "-", "-p", "xml"],
            marks=pytest.mark.skipif(not EDITS_STORED.exists(), reason="no editsStored"),
        ),
    ],
    ids=["help", "bench-help", "oev"],
)
def test_a_closed_pipe_on_stdout_exits_quietly(args: list[str]) -> None:
    """``hdfs-py ... | head -1``: the reader is gone (here before the first write, so every
    write fails); like Unix tools, no message; exit 1 as Python's docs recommend."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "hadoop_qjm.cli", *args],
            stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=30, cwd=PROJECT,
        )  # fmt: skip
    finally:
        os.close(write_end)
    assert result.stderr == ""
    assert result.returncode == 1


@pytest.mark.parametrize("daemon", ["journalnode", "namenode"])
@pytest.mark.parametrize(
    "setting,expected",
    [
        (
            r"hadoop.security.auth_to_local=RULE:[$CN](.*\.example\.com",
            r"Invalid rule in hadoop.security.auth_to_local: RULE:[$CN](.*\.example\.com "
            "(unbalanced parentheses)",
        ),
        (
            "hadoop.security.group.mapping=org.apache.hadoop.security.LdapGroupsMapping",
            "Invalid value for hadoop.security.group.mapping: unknown group mapping class "
            "org.apache.hadoop.security.LdapGroupsMapping",
        ),
    ],
)
def test_a_bad_identity_setting_refuses_to_start_the_daemon(
    daemon: str, setting: str, expected: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Issue 35: who the callers are is read before anything binds or is written."""
    dirs = ["-D", f"dfs.journalnode.edits.dir={tmp_path / 'jn'}"]
    dirs += ["-D", f"dfs.namenode.name.dir={tmp_path / 'nn'}"]
    assert main(["-D", setting, *dirs, daemon]) == 1
    assert expected in one_line(capsys)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("daemon", ["journalnode", "namenode"])
def test_a_policy_file_that_is_not_well_formed_refuses_to_start_the_daemon(
    daemon: str, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "hadoop-policy.xml").write_text("<configuration><property>")
    args = ["--config", str(conf_dir), "-D", "hadoop.security.authorization=true"]
    args += ["-D", f"dfs.journalnode.edits.dir={tmp_path / 'jn'}"]
    args += ["-D", f"dfs.namenode.name.dir={tmp_path / 'nn'}"]
    assert main([*args, daemon]) == 1
    assert f"Malformed configuration file {conf_dir / 'hadoop-policy.xml'}, line" in one_line(
        capsys
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["conf"]


def test_an_observer_without_in_progress_tailing_refuses_to_start(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Issue 37: an observer serves reads from the open segment it tails."""
    args = [*HA, "-D", f"dfs.namenode.name.dir={tmp_path / 'nn'}"]
    assert main([*args, "namenode", "-nnid", "nn1", "-observer"]) == 1
    assert one_line(capsys).endswith(
        "An observer NameNode requires dfs.ha.tail-edits.in-progress=true (it serves reads "
        "from the open segment it tails); set it on this NameNode and the JournalNodes"
    )
    assert list(tmp_path.iterdir()) == []
