"""The NameNode's commands as real processes: ``namenode -format`` (with and without data,
-force, -nonInteractive, the y/N prompt), the daemon (start, SIGTERM, restart, the daemon
script), ``dfs`` and its ``-ls`` format, ``dfsadmin``, ``-initializeSharedEdits`` (3
finalized local segments and an in-progress one -> the same ops with the same txids in the
shared journal), ``-checkpointOffline``, and every command's one-line errors: bad
arguments, an unreachable daemon, a missing configuration."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from hadoop_qjm.common.java_properties import load_properties
from hadoop_qjm.common.storage import StorageDirectory
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.file_journal_manager import match_edit_logs
from hadoop_qjm.editlog.fs_edit_log_op import encode_op
from hadoop_qjm.editlog.redundant_edit_log_input_stream import chain_and_make_redundant_streams
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.testing import ports
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.name_node_process import NameNodeProcess, child_env, write_conf_dir
from tests.integration.namenode_support import read_ops

pytestmark = pytest.mark.timeout(120)

PROJECT = Path(__file__).resolve().parents[2]
HDFS_PY = [sys.executable, str(PROJECT / "bin" / "hdfs-py")]
JID = "nncmd"
LS_LINE = re.compile(
    r"^(?P<type>[d-])(?P<perm>[rwxtT-]{9}) +(?P<repl>-|\d+) (?P<owner>\S+) +(?P<group>\S+) +"
    r"(?P<len>\d+) (?P<date>\d{4}-\d\d-\d\d \d\d:\d\d) (?P<path>\S+)$"
)


def hdfs(conf_dir: Path | None, *args: str, stdin: str | None = None, **env: str):
    command = HDFS_PY + (["--config", str(conf_dir)] if conf_dir else []) + list(args)
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        input=stdin if stdin is not None else "",
        timeout=90,
        env={**child_env(), "HADOOP_ROOT_LOGGER": "WARN,console", **env},
    )


def one_line_error(result, code: int = 1) -> str:
    """The command failed with ``code`` and printed exactly one line, no traceback."""
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def free_port() -> int:
    return ports.free_ports(1)[0]


def nn_props(tmp_path: Path, shared: str | None) -> dict[str, object]:
    props: dict[str, object] = {
        "dfs.namenode.name.dir": str(tmp_path / "name"),
        "dfs.namenode.rpc-address": "127.0.0.1:0",
        "dfs.namenode.http-address": "127.0.0.1:0",
    }
    if shared:
        props["dfs.namenode.shared.edits.dir"] = shared
    return props


def namespace_id(name_dir: Path) -> int:
    info = StorageDirectory(name_dir, "NAME_NODE").read_storage_info()
    return info.namespace_id


# ---- -format -------------------------------------------------------------------------------------
def test_format_with_and_without_data(tmp_path, mjc) -> None:
    conf_dir = write_conf_dir(tmp_path / "conf", nn_props(tmp_path, mjc.quorum_journal_uri(JID)))
    first = hdfs(conf_dir, "namenode", "-format", "-nonInteractive", "-clusterid", "CID-test")
    assert first.returncode == 0, first.stderr
    assert "Formatted namespace" in first.stdout and "CID-test" in first.stdout
    ns1 = namespace_id(tmp_path / "name")
    assert (tmp_path / "name" / "current" / "fsimage_0000000000000000000").exists()
    for i in range(3):
        assert (mjc.current_dir(i, JID) / "VERSION").exists()

    again = hdfs(conf_dir, "namenode", "-format", "-nonInteractive")
    line = one_line_error(again)
    assert "Running in non-interactive mode, and data appears to exist in" in line
    assert line.endswith("Not formatting.")
    assert namespace_id(tmp_path / "name") == ns1

    declined = hdfs(conf_dir, "namenode", "-format", stdin="n\n")
    assert declined.returncode == 1
    assert "Re-format filesystem in" in declined.stderr and "(Y or N)" in declined.stderr
    assert "Format aborted in" in declined.stderr.strip().splitlines()[-1]
    eof = hdfs(conf_dir, "namenode", "-format", stdin="")
    assert eof.returncode == 1 and "Format aborted in" in eof.stderr
    assert namespace_id(tmp_path / "name") == ns1
    # A yes to the name dir, a no to the journal: the abort names the journal (issue 33).
    journal_no = hdfs(conf_dir, "namenode", "-format", stdin="y\nn\n")
    last = journal_no.stderr.strip().splitlines()[-1]
    assert last.endswith(f"Format aborted in {mjc.quorum_journal_uri(JID)}")
    assert namespace_id(tmp_path / "name") == ns1

    # Two locations hold data (the name dir and the journal): one answer each. As in
    # Hadoop, a yes is not enough for JournalNodes holding data: they want -force.
    confirmed = hdfs(conf_dir, "namenode", "-format", stdin="maybe\ny\nyes\n")
    assert "Invalid input: maybe" in confirmed.stderr
    last = confirmed.stderr.strip().splitlines()[-1]
    assert confirmed.returncode == 1 and "Traceback" not in confirmed.stderr
    assert last.rsplit("(Y or N) ", 1)[-1].startswith("hdfs-py: Could not format one or more")
    assert "Can't format the storage directory because the current directory is not empty" in last

    forced = hdfs(conf_dir, "namenode", "-format", "-force", "-nonInteractive")
    assert forced.returncode == 0, forced.stderr
    assert namespace_id(tmp_path / "name") != ns1

    # Without JournalNodes, a yes formats.
    local_dir = write_conf_dir(tmp_path / "conf-local", nn_props(tmp_path / "local", None))
    assert hdfs(local_dir, "namenode", "-format", "-nonInteractive").returncode == 0
    ns_local = namespace_id(tmp_path / "local" / "name")
    yes = hdfs(local_dir, "namenode", "-format", stdin="yes\n")
    assert yes.returncode == 0, yes.stderr
    assert namespace_id(tmp_path / "local" / "name") != ns_local


# ---- the daemon, dfs, dfsadmin -------------------------------------------------------------------
def test_daemon_dfs_dfsadmin_and_sigterm(tmp_path, mjc) -> None:
    conf_dir = write_conf_dir(tmp_path / "conf", nn_props(tmp_path, mjc.quorum_journal_uri(JID)))
    assert hdfs(conf_dir, "namenode", "-format", "-nonInteractive").returncode == 0
    with NameNodeProcess(conf_dir, tmp_path / "nn.log") as nn:
        fs = ["-D", f"fs.defaultFS=hdfs://127.0.0.1:{nn.rpc_port}"]

        def dfs(*args: str, **kw):
            return hdfs(conf_dir, *fs, "dfs", *args, **kw)

        assert dfs("-mkdir", "-p", "/user/alice/dir", "/data").returncode == 0
        assert dfs("-touchz", "/user/alice/empty").returncode == 0
        assert dfs("-mkdir", "/user/alice/dir2").returncode == 0
        listing = dfs("-ls", "/user/alice")
        assert listing.returncode == 0, listing.stderr
        lines = listing.stdout.splitlines()
        assert lines[0] == "Found 3 items"
        entries = [LS_LINE.match(line) for line in lines[1:]]
        assert all(entries), lines
        assert [e["path"] for e in entries] == [
            "/user/alice/dir",
            "/user/alice/dir2",
            "/user/alice/empty",
        ]
        d, _, f = entries
        assert (d["type"], d["perm"], d["repl"], d["len"]) == ("d", "rwxr-xr-x", "-", "0")
        assert (f["type"], f["perm"], f["repl"]) == ("-", "rw-r--r--", "3")
        assert d["group"] == "supergroup"
        # Hadoop's exact layout: "drwxr-xr-x   - user group          0 yyyy-MM-dd HH:mm /path"
        assert lines[1].startswith("drwxr-xr-x   - ")
        assert re.search(r" supergroup {10}0 \d{4}-\d\d-\d\d \d\d:\d\d /user/alice/dir$", lines[1])

        assert dfs("-chmod", "750", "/user/alice/dir").returncode == 0
        assert dfs("-chmod", "-R", "g+w,o-rx", "/data").returncode == 0
        assert dfs("-chown", "bob:staff", "/user/alice/empty").returncode == 0
        assert dfs("-mv", "/user/alice/empty", "/data").returncode == 0
        after = dfs("-ls", "/data", "/user/alice/dir").stdout.splitlines()
        assert after[0] == "Found 1 items"
        moved = LS_LINE.match(after[1])
        assert (moved["owner"], moved["group"], moved["path"]) == ("bob", "staff", "/data/empty")
        assert dfs("-ls", "-d", "/data").stdout.startswith("drwxrwx---")
        assert dfs("-ls", "-d", "/user/alice/dir").stdout.startswith("drwxr-x---")

        mkdir_again = dfs("-mkdir", "/data")
        assert one_line_error(mkdir_again) == "mkdir: `/data': File exists"
        no_parent = dfs("-mkdir", "/x/y")
        assert one_line_error(no_parent) == "mkdir: `/x/y': No such file or directory"
        assert one_line_error(dfs("-rm", "/data")) == "rm: `/data': Is a directory"
        assert one_line_error(dfs("-ls", "/nope")) == "ls: `/nope': No such file or directory"
        removed = dfs("-rm", "-r", "/data")
        assert removed.returncode == 0 and removed.stdout.strip() == "Deleted /data"

        # Issue 33: the running NameNode's lock refuses a format before any question...
        locked = one_line_error(hdfs(conf_dir, "namenode", "-format", stdin="y\ny\n"))
        assert "The directory is already locked" in locked and "(Y or N)" not in locked
        # ...and a -format -force on another host finds the journal in use: nothing changes.
        host3 = write_conf_dir(
            tmp_path / "host3-conf", nn_props(tmp_path / "host3", mjc.quorum_journal_uri(JID))
        )
        refused = one_line_error(hdfs(host3, "namenode", "-format", "-force"))
        assert "3 of 3 JournalNodes have a live writer" in refused
        assert refused.endswith("stop the NameNodes first")
        assert not (tmp_path / "host3" / "name" / "current").exists()
        assert dfs("-mkdir", "/after-the-refusal").returncode == 0

        rolled = hdfs(conf_dir, *fs, "dfsadmin", "-rollEdits")
        assert rolled.returncode == 0, rolled.stderr
        assert rolled.stdout.splitlines()[0] == "Successfully rolled edit logs."
        new_segment = int(rolled.stdout.split("New segment starts at txid ")[1])
        started = f"edits_inprogress_{new_segment:019d}"
        assert sum((mjc.current_dir(i, JID) / started).exists() for i in range(3)) >= 2
        saved = hdfs(conf_dir, *fs, "dfsadmin", "-saveNamespace")
        assert saved.returncode == 0 and saved.stdout.strip() == "Save namespace successful"
        images = sorted(p.name for p in (tmp_path / "name" / "current").glob("fsimage_*"))
        # The segment holds its OP_START_LOG_SEGMENT; the save ends it with one more op.
        assert images[-2:] == [f"fsimage_{new_segment + 1:019d}{s}" for s in ("", ".md5")]
        lock = tmp_path / "name" / "in_use.lock"
        assert lock.exists()

        assert nn.terminate() == 0
    log = (tmp_path / "nn.log").read_text()
    assert "NameNode stopped" in log
    assert not lock.exists()
    current = tmp_path / "name" / "current"
    assert not list(current.glob("edits_inprogress_*"))  # the segment was ended cleanly

    with NameNodeProcess(conf_dir, tmp_path / "nn2.log") as again:
        with NameNodeProxy("127.0.0.1", again.rpc_port) as proxy:
            assert [s.path for s in proxy.list_status("/user/alice")] == [
                "/user/alice/dir",
                "/user/alice/dir2",
            ]


def test_daemon_script_starts_and_stops_a_namenode(tmp_path, mjc) -> None:
    conf_dir = write_conf_dir(tmp_path / "conf", nn_props(tmp_path, mjc.quorum_journal_uri(JID)))
    assert hdfs(conf_dir, "namenode", "-format", "-nonInteractive").returncode == 0
    env = dict(
        child_env(),
        HADOOP_PID_DIR=str(tmp_path / "pids"),
        HADOOP_LOG_DIR=str(tmp_path / "logs"),
        HADOOP_IDENT_STRING="qjmtest",
        PYTHON=sys.executable,
    )
    script = str(PROJECT / "sbin" / "hadoop-daemon-py.sh")
    pid_file = tmp_path / "pids" / "hadoop-qjmtest-namenode.pid"
    try:
        # The command's own arguments reach it (after the command; -D before it): here
        # -nnid without HA, refused by the NameNode itself.
        refused = subprocess.run(
            [script, "--config", str(conf_dir), "start", "namenode", "-nnid", "nn1"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert refused.returncode == 1
        assert "-nnid nn1 given but HA is not configured" in refused.stderr, refused.stderr
        assert not pid_file.exists()
        # -D reaches hdfs-py (before the command): a bad value is refused, naming its source.
        refused = subprocess.run(
            [script, "--config", str(conf_dir), "start", "namenode"]
            + ["-D", "dfs.namenode.handler.count=abc"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert refused.returncode == 1
        assert "'abc' is not an integer (set from command line)" in refused.stderr
        assert not pid_file.exists()
        start = subprocess.run(
            [script, "--config", str(conf_dir), "start", "namenode"]
            + ["-D", "dfs.namenode.handler.count=3", "-Ddfs.ls.limit=50"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert start.returncode == 0, start.stderr
        assert "NameNode started pid=" in start.stdout
        pid = int(pid_file.read_text())
        # Its namespace calls are audited into hdfs-audit.log beside its log (RFAAUDIT).
        rpc = re.search(r" rpc=(\S+)", start.stdout).group(1)  # type: ignore[union-attr]
        assert (
            hdfs(conf_dir, "-D", f"fs.defaultFS=hdfs://{rpc}", "dfs", "-mkdir", "/a").returncode
            == 0
        )
        audit = (tmp_path / "logs" / "hdfs-audit.log").read_text().splitlines()
        mkdirs = [line for line in audit if "\tcmd=mkdirs\t" in line]
        assert len(mkdirs) == 1 and " INFO FSNamesystem.audit: allowed=true\tugi=" in mkdirs[0]
        assert "\tip=/127.0.0.1\tcmd=mkdirs\tsrc=/a\tdst=null\tperm=" in mkdirs[0]
        assert not [line for line in audit if "cmd=" not in line]
        stop = subprocess.run(
            [script, "stop", "namenode"], capture_output=True, text=True, env=env, timeout=120
        )
        assert stop.returncode == 0 and not pid_file.exists()
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
        assert list((tmp_path / "logs").glob("hadoop-qjmtest-namenode-*.log"))
    finally:
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass


# ---- -initializeSharedEdits ----------------------------------------------------------------------
def test_initialize_shared_edits_copies_every_local_op(tmp_path, mjc) -> None:
    local_props = nn_props(tmp_path, None)
    local_conf_dir = write_conf_dir(tmp_path / "conf-local", local_props)
    assert hdfs(local_conf_dir, "namenode", "-format", "-nonInteractive").returncode == 0
    nn = NameNodeProcess(local_conf_dir, tmp_path / "nn.log")
    try:
        with NameNodeProxy("127.0.0.1", nn.rpc_port) as proxy:
            for segment in range(3):
                for n in range(5):
                    proxy.mkdirs(f"/s{segment}/d{n}")
                proxy.create(f"/s{segment}/file")
                proxy.roll_edits()
            proxy.mkdirs("/in-progress/d")
            proxy.set_permission("/in-progress", 0o700)
    finally:
        assert nn.kill() == -signal.SIGKILL  # a crash: the last segment stays in progress
    current = tmp_path / "name" / "current"
    finalized = sorted(p.name for p in current.glob("edits_0*"))
    assert len(finalized) == 3 and len(list(current.glob("edits_inprogress_*"))) == 1

    shared = mjc.quorum_journal_uri(JID)
    conf_dir = write_conf_dir(tmp_path / "conf", nn_props(tmp_path, shared))
    result = hdfs(conf_dir, "namenode", "-initializeSharedEdits", "-nonInteractive")
    assert result.returncode == 0, result.stderr
    assert "copied" in result.stdout and "in 4 segments" in result.stdout

    local_ops = [(op.txid, encode_op(op)) for op in read_ops(current)]
    assert local_ops[0][0] == 1 and len(local_ops) == local_ops[-1][0]
    conf = Configuration()
    ns_info = StorageDirectory(tmp_path / "name", "NAME_NODE").read_storage_info()
    with QuorumJournalManager(conf, shared, ns_info) as qjm:
        streams = chain_and_make_redundant_streams(qjm.select_input_streams(1, False), 1)
        shared_ops = []
        for stream in streams:
            with stream:
                shared_ops.extend((op.txid, encode_op(op)) for op in stream)
    assert shared_ops == local_ops
    # The same segments, finalized on every JournalNode: the command waits for the one
    # outside the quorum too (else it kept the last segment in progress, and the -force
    # below was refused as a live writer's journal).
    local_segments = sorted(p.name for p in current.glob("edits_0*"))
    holders = 0
    for i in range(3):
        logs = match_edit_logs(mjc.current_dir(i, JID))
        names = sorted(log.path.name for log in logs if not log.is_in_progress)
        assert set(names) <= set(local_segments)
        holders += names == local_segments
    assert holders == 3

    # The shared edits now hold data: without -force it is refused, with it redone.
    refused = hdfs(conf_dir, "namenode", "-initializeSharedEdits", "-nonInteractive")
    assert "data appears to exist in qjournal://" in one_line_error(refused)
    forced = hdfs(conf_dir, "namenode", "-initializeSharedEdits", "-force")
    assert forced.returncode == 0, forced.stderr


def test_initialize_shared_edits_needs_shared_edits(tmp_path) -> None:
    conf_dir = write_conf_dir(tmp_path / "conf", nn_props(tmp_path, None))
    assert hdfs(conf_dir, "namenode", "-format", "-nonInteractive").returncode == 0
    line = one_line_error(hdfs(conf_dir, "namenode", "-initializeSharedEdits", "-force"))
    assert "No shared edits directory configured" in line


# ---- -checkpointOffline --------------------------------------------------------------------------
def test_checkpoint_offline(tmp_path) -> None:
    conf_dir = write_conf_dir(tmp_path / "conf", nn_props(tmp_path, None))
    assert hdfs(conf_dir, "namenode", "-format", "-nonInteractive").returncode == 0
    with NameNodeProcess(conf_dir, tmp_path / "nn.log") as nn:
        with NameNodeProxy("127.0.0.1", nn.rpc_port) as proxy:
            proxy.mkdirs("/a/b")
        busy = hdfs(conf_dir, "namenode", "-checkpointOffline", str(tmp_path / "name"))
        assert "The directory is already locked" in one_line_error(busy)
    done = hdfs(conf_dir, "namenode", "-checkpointOffline", str(tmp_path / "name"))
    assert done.returncode == 0, done.stderr
    txid = int(done.stdout.strip().rsplit("fsimage_", 1)[1])
    assert txid > 0 and (tmp_path / "name" / "current" / f"fsimage_{txid:019d}").exists()
    missing = hdfs(conf_dir, "namenode", "-checkpointOffline", str(tmp_path / "nope"))
    one_line_error(missing)


# ---- one-line errors -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "args",
    [
        ["dfs"],
        ["dfs", "-nope", "/a"],
        ["dfs", "-mkdir"],
        ["dfs", "-mkdir", "-x", "/a"],
        ["dfs", "-mv", "/a"],
        ["dfs", "-chmod", "9z9", "/a"],
        ["dfs", "-chown", ":::", "/a"],
        ["dfsadmin"],
        ["dfsadmin", "-nope"],
        ["dfsadmin", "-rollEdits", "extra"],
        ["dfsadmin", "-saveNamespace", "-now"],
        ["namenode", "-nope"],
        ["namenode", "-format", "-bogus"],
        ["namenode", "-format", "-clusterid"],
        ["namenode", "-initializeSharedEdits", "-x"],
        ["namenode", "-checkpointOffline"],
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(args) -> None:
    result = hdfs(None, "-D", "fs.defaultFS=hdfs://127.0.0.1:1", *args)
    assert result.returncode == 2, result
    lines = result.stderr.strip().splitlines()
    assert "Traceback" not in result.stderr
    assert len(lines) == 1 or args in (["dfs"], ["dfsadmin"])  # those print their usage


@pytest.mark.parametrize(
    "args",
    [
        ["dfs", "-mkdir", "/a"],
        ["dfs", "-ls", "/"],
        ["dfs", "-rm", "/a"],
        ["dfs", "-mv", "/a", "/b"],
        ["dfs", "-touchz", "/a"],
        ["dfs", "-chmod", "755", "/a"],
        ["dfs", "-chown", "a:b", "/a"],
        ["dfsadmin", "-rollEdits"],
        ["dfsadmin", "-saveNamespace"],
    ],
)
def test_an_unreachable_namenode_is_one_line_and_exit_1(args) -> None:
    port = free_port()
    result = hdfs(None, "-D", f"fs.defaultFS=hdfs://127.0.0.1:{port}", *args)
    line = one_line_error(result)
    assert f"Call to 127.0.0.1:{port} failed on connection exception" in line
    assert "Connection refused" in line


@pytest.mark.parametrize(
    "args",
    [
        ["namenode"],
        ["namenode", "-format", "-force"],
        ["namenode", "-checkpointOffline", "/tmp"],
        ["dfs", "-ls", "/"],
        ["dfsadmin", "-rollEdits"],
    ],
)
def test_a_missing_configuration_directory_is_one_line(tmp_path, args) -> None:
    result = hdfs(tmp_path / "missing-conf", *args)
    line = one_line_error(result, code=2)
    assert "missing-conf does not exist" in line


def test_namenode_without_a_formatted_directory_exits_1(tmp_path) -> None:
    conf_dir = write_conf_dir(tmp_path / "conf", nn_props(tmp_path, None))
    result = hdfs(conf_dir, "namenode")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("hdfs-py: ") and "storage directory does not exist" in last
    assert "Traceback" not in result.stderr


def test_namenode_with_a_bad_boolean_refuses_to_start_in_one_line(tmp_path) -> None:
    """Issue 33 item 5: it came up healthy, then failed every transitionToActive."""
    conf_dir = write_conf_dir(tmp_path / "conf", nn_props(tmp_path, None))
    result = hdfs(conf_dir, "-D", "dfs.ha.automatic-failover.enabled=ture", "namenode")
    assert one_line_error(result) == (
        "hdfs-py: Invalid value for dfs.ha.automatic-failover.enabled: 'ture' is not true or "
        "false (set from command line)"
    )
    assert not (tmp_path / "name").exists()


def test_namenode_with_garbage_in_hdfs_site_refuses_to_start_in_one_line(tmp_path) -> None:
    """Issue 38: a key read only at the first checkpoint (the images kept) stopped nothing
    at start; the schema (conf/hdfs-default.xml) checks every key a NameNode reads."""
    props = {**nn_props(tmp_path, None), "dfs.namenode.num.checkpoints.retained": "two"}
    conf_dir = write_conf_dir(tmp_path / "conf", props)
    line = next(
        number
        for number, text in enumerate((conf_dir / "hdfs-site.xml").read_text().splitlines(), 1)
        if "dfs.namenode.num.checkpoints.retained" in text
    )
    result = hdfs(conf_dir, "namenode")
    assert one_line_error(result) == (
        "hdfs-py: Invalid value for dfs.namenode.num.checkpoints.retained: 'two' is not an "
        f"integer (set at {conf_dir / 'hdfs-site.xml'}:{line - 1})"
    )
    assert not (tmp_path / "name").exists()


def test_losing_the_journal_quorum_exits_the_daemon_with_status_1(tmp_path, mjc) -> None:
    conf_dir = write_conf_dir(tmp_path / "conf", nn_props(tmp_path, mjc.quorum_journal_uri(JID)))
    assert hdfs(conf_dir, "namenode", "-format", "-nonInteractive").returncode == 0
    nn = NameNodeProcess(conf_dir, tmp_path / "nn.log")
    try:
        with NameNodeProxy("127.0.0.1", nn.rpc_port, timeout_s=60) as proxy:
            proxy.mkdirs("/before")
            mjc.stop_journal_node(0)
            mjc.stop_journal_node(1)
            with pytest.raises(OSError):
                proxy.mkdirs("/after")
        assert nn.popen.wait(60) == 1
    finally:
        nn.terminate()
    log = (tmp_path / "nn.log").read_text()
    assert "Terminating with status 1: Could not sync enough journals to persistent storage" in log


def test_namenode_with_unreachable_journal_nodes_exits_1(tmp_path) -> None:
    uri = f"qjournal://127.0.0.1:{free_port()};127.0.0.1:{free_port()};127.0.0.1:{free_port()}/j"
    conf_dir = write_conf_dir(tmp_path / "conf", nn_props(tmp_path, None))
    assert hdfs(conf_dir, "namenode", "-format", "-nonInteractive").returncode == 0
    result = hdfs(conf_dir, "-D", f"dfs.namenode.shared.edits.dir={uri}", "namenode")
    assert result.returncode == 1
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("hdfs-py: ") and "Got too many exceptions to achieve quorum" in last
    assert "failed on connection exception" in last


# ---- the layout upgrade (docs/ha.md, "Upgrades") ------------------------------------------------
@pytest.mark.slow
def test_upgrade_rollback_and_finalize_as_processes(tmp_path) -> None:
    """namenode -upgrade (the test-only layout -68), dfsadmin -upgrade query, the old
    NameNode's refusal, namenode -rollback (answered y), then -upgrade and -finalizeUpgrade;
    three in-process JournalNodes."""

    def layouts() -> dict[str, str]:
        dirs = [tmp_path / "name"] + [mjc.journal_dir(i, JID) for i in range(3)]
        return {
            f"{d.parent.name}/{sub}": load_properties((d / sub / "VERSION").read_bytes())[
                "layoutVersion"
            ]
            for d in dirs
            for sub in ("current", "previous")
            if (d / sub).exists()
        }

    with MiniJournalCluster(3, base_dir=tmp_path / "jn") as mjc:
        props = nn_props(tmp_path, mjc.quorum_journal_uri(JID))
        old = write_conf_dir(tmp_path / "conf", props)
        new = write_conf_dir(
            tmp_path / "conf-new", {**props, "dfs.namenode.testing.future-layout": "true"}
        )
        assert hdfs(old, "namenode", "-format", "-nonInteractive").returncode == 0
        with NameNodeProcess(old, tmp_path / "nn.log") as nn:
            fs = ["-D", f"fs.defaultFS=hdfs://127.0.0.1:{nn.rpc_port}"]
            assert hdfs(old, *fs, "dfs", "-mkdir", "/a").returncode == 0
            assert nn.terminate() == 0

        with NameNodeProcess(new, tmp_path / "up.log", namenode_args=["-upgrade"]) as nn:
            fs = ["-D", f"fs.defaultFS=hdfs://127.0.0.1:{nn.rpc_port}"]
            assert hdfs(new, *fs, "dfs", "-mkdir", "/after-upgrade").returncode == 0
            query = hdfs(new, *fs, "dfsadmin", "-upgrade", "query")
            assert (query.returncode, query.stdout) == (0, "Upgrade not finalized\n")
            assert nn.terminate() == 0
        assert set(layouts().values()) == {"-68", "-67"}
        assert all(v == "-67" for k, v in layouts().items() if k.endswith("previous"))

        refused = one_line_error(hdfs(old, "namenode"))
        assert "Unexpected version of storage directory" in refused
        assert refused.endswith("Reported: -68. Expecting = -67.")
        rolled = hdfs(old, "namenode", "-rollback", stdin="y\n")
        assert rolled.returncode == 0, rolled.stderr
        assert "Roll back file system state? (Y or N)" in rolled.stderr
        assert {k.split("/")[1] for k in layouts()} == {"current"}
        assert set(layouts().values()) == {"-67"}
        with NameNodeProcess(old, tmp_path / "nn2.log") as nn:
            with NameNodeProxy("127.0.0.1", nn.rpc_port) as proxy:
                assert proxy.get_file_info("/a") is not None
                assert proxy.get_file_info("/after-upgrade") is None
            assert nn.terminate() == 0

        with NameNodeProcess(new, tmp_path / "up2.log", namenode_args=["-upgrade"]) as nn:
            fs = ["-D", f"fs.defaultFS=hdfs://127.0.0.1:{nn.rpc_port}"]
            done = hdfs(new, *fs, "dfsadmin", "-finalizeUpgrade")
            assert (done.returncode, done.stdout) == (0, "Finalize upgrade successful\n")
            again = one_line_error(hdfs(new, *fs, "dfsadmin", "-finalizeUpgrade"))
            assert again.startswith("finalizeUpgrade: There is no upgrade in progress")
            assert nn.terminate() == 0
        assert set(layouts().values()) == {"-68"}
        assert not any(k.endswith("previous") for k in layouts())
