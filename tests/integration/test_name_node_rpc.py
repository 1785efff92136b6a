"""The NameNode daemon in this process, over real Thrift and HTTP on loopback, writing to a
MiniJournalCluster: every ClientProtocol, NamenodeProtocol and HAServiceProtocol call, the
errors' types on the client, /metrics, /jmx, the status page and /imagetransfer."""

from __future__ import annotations

import getpass
import hashlib
import http.client
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hadoop_qjm.common.exceptions import (
    AccessControlException,
    ExitException,
    FileAlreadyExistsException,
    FileNotFoundException,
    HadoopException,
    InvalidPathException,
    ParentNotDirectoryException,
    PathIsNotEmptyDirectoryException,
)
from hadoop_qjm.common.security.user_group_information import UserGroupInformation
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp
from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.name_node_core import format_namenode
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.namenode.protocol.exceptions import ServiceFailedException
from hadoop_qjm.namenode.protocol.messages import HAServiceState
from hadoop_qjm.qjournal.protocol.exceptions import BindException, ConnectException
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from tests.integration.namenode_support import (
    Terminations,
    nn_conf,
    read_ops,
    wait_for_journal_nodes,
)

pytestmark = pytest.mark.timeout(60)

JID = "nnrpc"


def daemon_conf(base: Path, mjc: MiniJournalCluster, **extra: object):
    return nn_conf(
        base,
        shared=mjc.quorum_journal_uri(JID),
        **{
            "dfs.namenode.rpc-address": "127.0.0.1:0",
            "dfs.namenode.http-address": "127.0.0.1:0",
            **extra,
        },
    )


class Daemon:
    """A started NameNode, its termination record and a proxy to it."""

    def __init__(self, conf, **name_node_kwargs) -> None:
        self.conf = conf
        self.terminations = Terminations()
        self.nn = NameNode(conf, terminate=self.terminations, fs_owner="hdfs", **name_node_kwargs)
        self.nn.start()
        self.proxy = NameNodeProxy(*self.nn.rpc_address, timeout_s=30)

    def http_get(self, path: str) -> tuple[int, dict[str, str], bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", self.nn.http_address[1], timeout=30)
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            return response.status, dict(response.getheaders()), response.read()
        finally:
            conn.close()

    def stop(self) -> None:
        self.proxy.close()
        self.nn.stop()


@pytest.fixture
def daemon(mjc, tmp_path) -> Iterator[Daemon]:
    conf = daemon_conf(tmp_path, mjc, **{"dfs.ls.limit": 3})
    format_namenode(conf, fs_owner="hdfs")
    d = Daemon(conf)
    try:
        yield d
    finally:
        d.stop()


def test_mkdirs_and_file_info(daemon: Daemon) -> None:
    p = daemon.proxy
    assert p.mkdirs("/user/alice/dir", 0o750)
    assert p.mkdirs("/user/alice/dir")  # an existing directory is success
    status = p.get_file_info("/user/alice/dir")
    assert status is not None and status.is_dir
    assert (status.path, status.permission, status.owner, status.group) == (
        "/user/alice/dir",
        0o750,
        getpass.getuser(),  # the caller (the client claims its OS user), not /'s owner
        "supergroup",
    )
    assert p.get_file_info("/user/alice").permission == 0o750 | 0o300  # implicit u+wx
    assert p.get_file_info("/nope") is None
    with pytest.raises(FileNotFoundException, match="Parent directory doesn't exist"):
        p.mkdirs("/x/y", create_parent=False)
    with pytest.raises(InvalidPathException, match="Invalid path name relative"):
        p.mkdirs("relative")


def test_create_delete_and_their_refusals(daemon: Daemon) -> None:
    p = daemon.proxy
    created = p.create("/d/f", 0o640, replication=2, block_size=1 << 20)
    assert (created.path, created.is_dir, created.permission) == ("/d/f", False, 0o640)
    assert (created.replication, created.block_size, created.length) == (2, 1 << 20, 0)
    with pytest.raises(FileAlreadyExistsException, match="already exists"):
        p.create("/d/f")
    assert p.create("/d/f", overwrite=True).file_id != created.file_id
    with pytest.raises(FileAlreadyExistsException, match="Path is not a directory"):
        p.mkdirs("/d/f")
    with pytest.raises(ParentNotDirectoryException):
        p.mkdirs("/d/f/g")
    with pytest.raises(PathIsNotEmptyDirectoryException, match="/d is non empty"):
        p.delete("/d")
    assert p.delete("/d", recursive=True)
    assert not p.delete("/d", recursive=True)  # missing: False, no error
    assert p.get_file_info("/d") is None


def test_renames(daemon: Daemon) -> None:
    p = daemon.proxy
    p.mkdirs("/a")
    p.mkdirs("/b")
    p.create("/a/f")
    assert p.rename("/a/f", "/b")  # into the directory
    assert p.get_file_info("/b/f") is not None
    assert not p.rename("/missing", "/c")
    p.rename2("/b/f", "/a/g")
    with pytest.raises(FileNotFoundException, match="rename source /b/f is not found"):
        p.rename2("/b/f", "/a/h")
    p.create("/a/h")
    with pytest.raises(FileAlreadyExistsException):
        p.rename2("/a/g", "/a/h")
    p.rename2("/a/g", "/a/h", overwrite=True)
    assert sorted(s.name for s in p.list_status("/a")) == ["h"]


def test_set_permission_owner_times(daemon: Daemon) -> None:
    p = daemon.proxy
    p.create("/f")
    p.set_permission("/f", 0o1600)
    p.set_owner("/f", "alice", None)
    p.set_owner("/f", None, "staff")
    p.set_times("/f", 1_700_000_000_000, -1)
    status = p.get_file_info("/f")
    assert (status.permission, status.owner, status.group) == (0o1600, "alice", "staff")
    assert status.modification_time == 1_700_000_000_000
    for call in (
        lambda: p.set_permission("/nope", 0o700),
        lambda: p.set_owner("/nope", "a", "b"),
        lambda: p.set_times("/nope", 1, 1),
    ):
        with pytest.raises(FileNotFoundException):
            call()


def test_listing_in_batches_with_local_names(daemon: Daemon) -> None:
    p = daemon.proxy  # dfs.ls.limit is 3
    for name in ("e", "a", "d", "c", "b"):
        p.mkdirs(f"/dir/{name}")
    p.create("/dir/file")
    first = p.get_listing("/dir")
    assert [s.name for s in first.partial_listing] == ["a", "b", "c"]
    assert first.remaining_entries == 3 and first.has_more
    assert [s.path for s in p.list_status("/dir/")] == [
        "/dir/a",
        "/dir/b",
        "/dir/c",
        "/dir/d",
        "/dir/e",
        "/dir/file",
    ]
    (itself,) = p.list_status("/dir/file")  # a file lists as itself
    assert itself.path == "/dir/file" and not itself.is_dir
    with pytest.raises(FileNotFoundException, match="File /nope does not exist."):
        p.get_listing("/nope")


def test_a_tenant_cannot_roll_the_edit_log(daemon: Daemon, monkeypatch) -> None:
    """NamenodeProtocol.rollEditLog (a standby's tailer asks the active for it) is for a
    superuser only, as Hadoop's NameNodeRpcServer.rollEditLog: a tenant's call changes
    nothing; the NameNode's own user (the standby's) may."""
    txid = daemon.proxy.get_transaction_id()
    monkeypatch.setenv("HADOOP_USER_NAME", "alice")
    with NameNodeProxy(*daemon.nn.rpc_address, timeout_s=30) as alice:
        with pytest.raises(AccessControlException) as refused:
            alice.roll_edit_log()
    assert str(refused.value) == "Access denied for user alice. Superuser privilege is required"
    assert daemon.proxy.get_transaction_id() == txid
    monkeypatch.delenv("HADOOP_USER_NAME")
    assert daemon.proxy.roll_edit_log().cur_segment_txid == txid + 2


def test_namenode_protocol(daemon: Daemon, mjc: MiniJournalCluster) -> None:
    p = daemon.proxy
    ns = p.version_request()
    assert ns == daemon.nn.core.ns_info
    p.mkdirs("/x")
    txid = p.get_transaction_id()
    signature = p.roll_edit_log()
    # The old segment ends with OP_END_LOG_SEGMENT at txid+1; the new one starts after it.
    assert signature.cur_segment_txid == txid + 2
    assert signature.block_pool_id == ns.block_pool_id
    assert signature.storage_info == ns.storage_info()
    assert p.get_transaction_id() == txid + 2  # the new segment's OP_START_LOG_SEGMENT
    assert p.roll_edits() == txid + 4
    assert p.get_most_recent_checkpoint_txid() == 0
    assert p.save_namespace()
    saved = p.get_most_recent_checkpoint_txid()
    assert saved == txid + 5  # the segment ended at the save
    assert not p.save_namespace(time_window_s=3600, tx_gap=10)  # fresh: nothing to do
    assert (daemon.nn.core.storage.dirs[0].current / f"fsimage_{saved:019d}").exists()
    # The edits are on the JournalNodes, in segments finalized by the rolls.
    wait_for_journal_nodes(daemon.nn.core)
    ops = read_ops(mjc.current_dir(0, JID))
    assert [op.path for op in ops if isinstance(op, MkdirOp)] == ["/x"]


def test_ha_service_protocol_without_ha(daemon: Daemon) -> None:
    p = daemon.proxy
    p.monitor_health()
    assert daemon.nn.state is HAServiceState.ACTIVE
    for call in (p.transition_to_active, p.transition_to_standby, p.get_service_status):
        with pytest.raises(ServiceFailedException, match="HA for namenode is not enabled"):
            call()


def test_concurrent_clients_share_syncs_and_leave_no_gap(daemon: Daemon) -> None:
    threads, per_thread = 16, 40
    before = daemon.nn.core.edit_log.stats()
    failures: list[BaseException] = []

    def client(i: int) -> None:
        with NameNodeProxy(*daemon.nn.rpc_address, timeout_s=30) as proxy:
            try:
                for n in range(per_thread):
                    proxy.mkdirs(f"/c/{i}/{n}")
            except BaseException as e:  # noqa: BLE001 - reported below
                failures.append(e)

    workers = [threading.Thread(target=client, args=(i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(50)
    assert not failures and not any(w.is_alive() for w in workers)
    after = daemon.nn.core.edit_log.stats()
    # One MKDIR per new directory (plus /c and /c/<i>): every one logged, no gap.
    assert after.txns - before.txns == threads * per_thread + threads + 1
    assert after.synced_txid == after.last_written_txid
    assert sum(1 for _ in daemon.proxy.list_status("/c")) == threads
    print(f"txns per sync: {(after.txns - before.txns) / (after.syncs - before.syncs):.1f}")


@pytest.mark.parametrize("async_logging", ["true", "false"])
def test_one_handler_serves_many_clients(mjc, tmp_path, async_logging) -> None:
    conf = daemon_conf(
        tmp_path,
        mjc,
        **{"dfs.namenode.handler.count": 1, "dfs.namenode.edits.asynclogging": async_logging},
    )
    format_namenode(conf)
    d = Daemon(conf)
    try:
        failures: list[BaseException] = []

        def client(i: int) -> None:
            with NameNodeProxy(*d.nn.rpc_address, timeout_s=30) as proxy:
                try:
                    for n in range(10):
                        proxy.mkdirs(f"/h/{i}/{n}")
                except BaseException as e:  # noqa: BLE001 - reported below
                    failures.append(e)

        workers = [threading.Thread(target=client, args=(i,)) for i in range(8)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(50)
        assert not failures and not any(w.is_alive() for w in workers)
        assert sum(1 for _ in d.proxy.list_status("/h")) == 8
    finally:
        d.stop()


def test_the_namespace_survives_a_restart(mjc, tmp_path) -> None:
    conf = daemon_conf(tmp_path, mjc)
    format_namenode(conf, fs_owner="hdfs")
    first = Daemon(conf)
    try:
        first.proxy.mkdirs("/kept/dir")
        first.proxy.create("/kept/file")
    finally:
        first.stop()
    second = Daemon(conf)
    try:
        assert [s.path for s in second.proxy.list_status("/kept")] == ["/kept/dir", "/kept/file"]
    finally:
        second.stop()


def test_losing_the_journal_quorum_terminates(mjc, tmp_path) -> None:
    conf = daemon_conf(tmp_path, mjc, **{"dfs.qjournal.write-txns.timeout.ms": 5000})
    format_namenode(conf)
    d = Daemon(conf)
    try:
        d.proxy.mkdirs("/before")
        mjc.stop_journal_node(0)
        mjc.stop_journal_node(1)
        with pytest.raises(HadoopException) as raised:
            d.proxy.mkdirs("/after")
        assert isinstance(raised.value, ExitException)
        assert any(
            "Could not sync enough journals to persistent storage" in m
            for m in d.terminations.messages
        )
        assert d.terminations.calls[0][0] == 1
    finally:
        d.stop()


def test_a_port_in_use_fails_before_touching_storage(daemon: Daemon, mjc, tmp_path) -> None:
    other = tmp_path / "other"
    conf = daemon_conf(other, mjc)
    conf.set("dfs.namenode.rpc-address", f"127.0.0.1:{daemon.nn.rpc_address[1]}")
    with pytest.raises(BindException):
        NameNode(conf).start()
    assert not (other / "name").exists()
    assert daemon.proxy.mkdirs("/still/serving")


def test_a_stopped_namenode_refuses_connections(mjc, tmp_path) -> None:
    conf = daemon_conf(tmp_path, mjc)
    format_namenode(conf)
    d = Daemon(conf)
    address = d.nn.rpc_address
    d.stop()
    with NameNodeProxy(*address, timeout_s=5) as proxy:
        with pytest.raises(ConnectException, match="failed on connection exception"):
            proxy.mkdirs("/x")


# ---- HTTP ----------------------------------------------------------------------------------------
def test_metrics_count_calls_transactions_and_journal_nodes(daemon: Daemon) -> None:
    daemon.proxy.mkdirs("/m/a")
    daemon.proxy.get_file_info("/m")
    status, headers, body = daemon.http_get("/metrics")
    text = body.decode()
    assert status == 200 and headers["Content-Type"].startswith("text/plain")
    assert 'namenode_rpc_calls_total{method="mkdirs"} 1.0' in text
    assert 'namenode_rpc_calls_total{method="getFileInfo"} 1.0' in text
    assert "namenode_transactions_total" in text and "namenode_syncs_total" in text
    assert "namenode_transactions_per_sync" in text
    # one sync at a time by default: none in flight between calls, at most one ever
    assert "namenode_syncs_in_flight 0.0" in text
    assert "namenode_max_syncs_in_flight 1.0" in text
    assert text.count("qjm_logger_out_of_sync{") == 3
    assert text.count("qjm_logger_current_lag_txns{") == 3
    assert 'namenode_journal_disabled{journal="QJM to' in text


def test_jmx_beans(daemon: Daemon) -> None:
    daemon.proxy.mkdirs("/j")
    status, _, body = daemon.http_get("/jmx")
    beans = {b["name"]: b for b in json.loads(body)["beans"]}
    assert status == 200
    info = beans["Hadoop:service=NameNode,name=NameNodeInfo"]
    assert info["ClusterId"] == daemon.nn.core.ns_info.cluster_id
    journals = json.loads(info["NameJournalStatus"])
    qjm = next(j for j in journals if j["manager"].startswith("QJM to"))
    assert qjm["required"] == "true" and qjm["disabled"] == "false"
    assert "Writing segment beginning at txid" in qjm["stream"]
    assert beans["Hadoop:service=NameNode,name=NameNodeStatus"]["State"] == "active"
    activity = beans["Hadoop:service=NameNode,name=NameNodeActivity"]
    assert activity["MkdirsOps"] == 1 and activity["TransactionsNumOps"] >= 2
    channels = [n for n in beans if "name=IPCLoggerChannel-127.0.0.1-" in n]
    assert len(channels) == 3
    assert beans[channels[0]]["IsOutOfSync"] == "false"
    status, _, body = daemon.http_get("/jmx?qry=Hadoop:service=NameNode,name=FSNamesystem")
    (fsn,) = json.loads(body)["beans"]
    assert fsn["FilesTotal"] == 2 and fsn["tag.HAState"] == "active"


def test_status_page_and_the_jmx_it_reads(daemon: Daemon, mjc: MiniJournalCluster) -> None:
    daemon.proxy.mkdirs("/s")
    for path in ("/", "/dfshealth.html"):
        status, headers, body = daemon.http_get(path)
        assert status == 200 and headers["Content-Type"] == "text/html; charset=utf-8"
        assert b"<title>NameNode information</title>" in body and b"/dfshealth.js" in body
    assert daemon.http_get("/dfshealth.js")[0] == 200
    assert daemon.http_get("/journalnode.js")[0] == 404

    def read_beans() -> dict[str, dict]:
        _, _, body = daemon.http_get("/jmx?qry=Hadoop:service=NameNode,*")
        return {b["name"]: b for b in json.loads(body)["beans"]}

    def all_acked(beans: dict[str, dict]) -> bool:
        # A quorum's acks return the call; the last JournalNode's may come a moment later.
        last = beans["Hadoop:service=NameNode,name=FSNamesystem"]["LastWrittenTransactionId"]
        return all(
            b["HighestAckedTxId"] == last
            for b in beans.values()
            if b["modelerType"] == "IPCLoggerChannel"
        )

    deadline = time.monotonic() + 10
    beans = read_beans()
    while not all_acked(beans) and time.monotonic() < deadline:
        time.sleep(0.05)
        beans = read_beans()
    info = beans["Hadoop:service=NameNode,name=NameNodeInfo"]
    assert info["NamespaceId"] == daemon.nn.core.ns_info.namespace_id
    fsn = beans["Hadoop:service=NameNode,name=FSNamesystem"]
    assert fsn["LastSyncedTransactionId"] == fsn["LastWrittenTransactionId"] > 0
    status_bean = beans["Hadoop:service=NameNode,name=NameNodeStatus"]
    assert status_bean["HAPeers"] == [] and status_bean["NamenodeId"] is None
    channels = [b for b in beans.values() if b["modelerType"] == "IPCLoggerChannel"]
    assert sorted(c["RemoteAddress"] for c in channels) == sorted(
        f"127.0.0.1:{mjc.rpc_address(i)[1]}" for i in range(3)
    )
    for channel in channels:
        assert channel["SyncState"] == "in sync"
        assert channel["HighestAckedTxId"] == fsn["LastWrittenTransactionId"]
        i = mjc.rpc_ports.index(int(channel["RemoteAddress"].rsplit(":", 1)[1]))
        assert channel["HttpServerURI"] == f"http://127.0.0.1:{mjc.http_address(i)[1]}"


def test_imagetransfer_serves_images_with_md5(daemon: Daemon) -> None:
    daemon.proxy.mkdirs("/i")
    daemon.proxy.save_namespace()
    txid = daemon.proxy.get_most_recent_checkpoint_txid()
    image = daemon.nn.core.storage.dirs[0].current / f"fsimage_{txid:019d}"
    status, headers, body = daemon.http_get(f"/imagetransfer?getimage=1&txid={txid}")
    assert status == 200 and body == image.read_bytes()
    assert headers["X-MD5-Digest"] == hashlib.md5(body).hexdigest()
    assert headers["X-Image-Edits-Name"] == image.name
    assert headers["Content-Disposition"] == f"attachment; filename={image.name}"
    status, headers, latest = daemon.http_get("/imagetransfer?getimage=1&txid=latest")
    assert status == 200 and latest == body
    ns = daemon.nn.core.ns_info
    good = f"-67:{ns.namespace_id}:0:{ns.cluster_id}"
    assert daemon.http_get(f"/imagetransfer?getimage=1&txid={txid}&storageInfo={good}")[0] == 200
    bad = f"-67:{ns.namespace_id + 1}:0:{ns.cluster_id}"
    assert daemon.http_get(f"/imagetransfer?getimage=1&txid={txid}&storageInfo={bad}")[0] == 403
    status, _, body = daemon.http_get("/imagetransfer?getimage=1&txid=12345")
    assert status == 410 and b"Could not find image with txid 12345" in body
    assert daemon.http_get("/imagetransfer?txid=1")[0] == 400
    assert daemon.http_get("/imagetransfer?getimage=1&txid=abc")[0] == 400


def test_a_refusal_reaches_the_client_as_hadoops_exception_and_is_audited(
    mjc, tmp_path, audit
) -> None:
    conf = daemon_conf(tmp_path, mjc)
    format_namenode(conf, fs_owner="hdfs")
    who = [UserGroupInformation("hdfs")]
    daemon = Daemon(conf, caller=lambda: who[0])
    try:
        p = daemon.proxy
        p.mkdirs("/home/bob", 0o755)
        p.set_owner("/home/bob", "bob", "staff")
        who[0] = UserGroupInformation("alice", ("staff",))
        with pytest.raises(AccessControlException) as info:
            p.mkdirs("/home/bob/x", 0o755)
        assert str(info.value) == (
            'Permission denied: user=alice, access=WRITE, inode="/home/bob":bob:staff:drwxr-xr-x'
        )
        assert p.get_file_info("/home/bob/x") is None
        denied = [row for row in audit.parsed() if row["allowed"] == "false"]
        assert denied == [
            {
                "allowed": "false",
                "ugi": "alice (auth:SIMPLE)",
                "ip": "/127.0.0.1",
                "cmd": "mkdirs",
                "src": "/home/bob/x",
                "dst": "null",
                "perm": "null",
                "proto": "rpc",
            }
        ]
        _, _, body = daemon.http_get("/prom")
        assert 'namenode_permission_denied_total{operation="mkdirs"} 1.0' in body.decode()
    finally:
        daemon.stop()


def test_async_audit_lines_are_written_by_one_thread_and_all_written_at_stop(
    mjc, tmp_path, audit
) -> None:
    """dfs.namenode.audit.log.async: calls return while the audit's handler is stuck, and
    the NameNode's stop writes every queued line before it returns."""
    from logging.handlers import QueueHandler

    from hadoop_qjm.namenode.fs_namesystem_audit_logger import AUDIT_LOG

    gate, stuck = threading.Event(), threading.Event()
    emit = audit.emit

    def gated_emit(record) -> None:
        stuck.set()
        gate.wait(30)  # the handler is slow; with synchronous lines every call would wait
        emit(record)

    audit.emit = gated_emit
    conf = daemon_conf(tmp_path, mjc, **{"dfs.namenode.audit.log.async": "true"})
    format_namenode(conf, fs_owner="hdfs")
    daemon = Daemon(conf)
    try:
        assert any(isinstance(h, QueueHandler) for h in AUDIT_LOG.handlers)
        for i in range(20):
            daemon.proxy.mkdirs(f"/async/d{i}")
        assert stuck.is_set() and audit.lines == []  # all 20 acknowledged, none written yet
    finally:
        gate.set()
        daemon.stop()
    assert [row["src"] for row in audit.parsed()] == [f"/async/d{i}" for i in range(20)]
    assert audit in AUDIT_LOG.handlers
    assert not any(isinstance(h, QueueHandler) for h in AUDIT_LOG.handlers)


def test_a_rolling_upgrade_without_ha_saves_its_own_rollback_image(daemon: Daemon, mjc) -> None:
    """Hadoop's non-HA prepare: the NameNode saves fsimage_rollback_N at once (the segment
    ends at N), then logs OP_ROLLING_UPGRADE_START at N+2; query says Proceed at once, and
    a restart mid upgrade still knows it (the START is in the edits)."""
    daemon.proxy.mkdirs("/a")
    info = daemon.proxy.rolling_upgrade("PREPARE")
    assert info.is_started and info.created_rollback_images
    current = Path(daemon.conf.get("dfs.namenode.name.dir")) / "current"
    (image,) = [p for p in current.glob("fsimage_rollback_*") if p.suffix != ".md5"]
    n = int(image.name.rsplit("_", 1)[1])
    # A quorum acknowledged the START: the JournalNode that has it (the third may lag).
    copies = [read_ops(mjc.current_dir(i, JID), n + 1, in_progress_ok=True) for i in range(3)]
    ops = max(copies, key=len)
    assert sum(len(c) >= 2 for c in copies) >= 2
    assert type(ops[1]).__name__ == "RollingUpgradeStartOp" and ops[1].txid == n + 2
    daemon.stop()
    restarted = Daemon(daemon.conf)
    try:
        assert restarted.proxy.rolling_upgrade("QUERY") == info
        done = restarted.proxy.rolling_upgrade("FINALIZE")
        assert done.is_finalized and (current / f"fsimage_{n:019d}").is_file()
        assert not list(current.glob("fsimage_rollback_*"))
    finally:
        restarted.stop()
