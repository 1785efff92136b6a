"""A wiped or new JournalNode formats itself from its peers and catches up (HDFS-16690, issue 22).

::

    JN0: VERSION, edits_1-10, edits_11-20, edits_inprogress_21   (streaming)
    JN1: VERSION, edits_1-10, edits_11-20, edits_inprogress_21   (streaming)
    JN2: (wiped)  -> formats from JN0+JN1 -> downloads 1-10, 11-20, ...
                  -> joins the writer's stream at the next roll
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.request

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.file_journal_manager import inprogress_edits_file_name, match_edit_logs
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.testing import ports
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    JID,
    create_txn_data,
    make_request,
    snapshot_files,
    write_txns,
)

pytestmark = pytest.mark.timeout(120)

OTHER_NSINFO = NamespaceInfo(99999, "other-cluster", "other-bp")


def wait_for(condition, timeout_s=30.0, what="condition", tick=None):
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        if tick is not None:
            tick()
        time.sleep(0.02)


def cluster_with_peers(
    tmp_path, n: int, *, sync_format: bool = True, **settings: str
) -> MiniJournalCluster:
    conf = Configuration()
    conf.set("dfs.journalnode.sync.interval", "100")
    conf.set("dfs.journalnode.enable.sync.format", str(sync_format).lower())
    for key, value in settings.items():
        conf.set(key, value)
    cluster = MiniJournalCluster(n, base_dir=tmp_path, conf=conf)
    cluster.share_edits(JID)
    return cluster


def finalized(cluster, i: int) -> dict[str, bytes]:
    return finalized_in(cluster.current_dir(i, JID))


def finalized_in(current) -> dict[str, bytes]:
    """The finalized segments in ``current`` by name (not their .md5 sidecars)."""
    logs = match_edit_logs(current)
    return {log.path.name: log.path.read_bytes() for log in logs if not log.is_in_progress}


def syncer_status(cluster, i: int) -> dict:
    return cluster.journal_node(i).syncer_status(JID)


def jmx_syncer(cluster, i: int) -> dict:
    url = (
        f"http://127.0.0.1:{cluster.http_ports[i]}"
        f"/jmx?qry=Hadoop:service=JournalNode,name=Journal-{JID}"
    )
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())["beans"][0]["Syncer"]


def metrics_text(cluster, i: int) -> str:
    with urllib.request.urlopen(
        f"http://127.0.0.1:{cluster.http_ports[i]}/metrics", timeout=30
    ) as r:
        return r.read().decode()


class Writer:
    """A QJM writer streaming one txn per batch; every batch must succeed."""

    def __init__(self, cluster) -> None:
        self.qjm = QuorumJournalManager(cluster.conf, cluster.quorum_journal_uri(JID), FAKE_NSINFO)
        self.qjm.format(FAKE_NSINFO, False)
        self.qjm.recover_unfinalized_segments()
        self.segment = 1
        self.txid = 1
        self.stm = self.qjm.start_log_segment(1, CURRENT_LAYOUT_VERSION)

    def batch(self) -> None:
        write_txns(self.stm, self.txid, 1)  # raises if the quorum fails it
        self.txid += 1

    def roll(self) -> None:
        self.stm.close()
        self.qjm.finalize_log_segment(self.segment, self.txid - 1)
        self.segment = self.txid
        self.stm = self.qjm.start_log_segment(self.segment, CURRENT_LAYOUT_VERSION)

    def close(self) -> None:
        self.stm.abort()
        self.qjm.close()


def test_wiped_journal_node_formats_itself_and_catches_up_while_the_writer_streams(tmp_path):
    with cluster_with_peers(tmp_path, 3) as cluster:
        writer = Writer(cluster)
        try:
            for _ in range(3):  # segments 1-10, 11-20, 21-30
                for _ in range(10):
                    writer.batch()
                writer.roll()
            writer.batch()
            # Wipe JN2: stop, rm -rf its journal dir, start. The writer keeps going.
            cluster.stop_journal_node(2)
            writer.batch()
            shutil.rmtree(cluster.journal_dir(2, JID))
            cluster.restart_journal_node(2)

            def formatted() -> bool:
                return (cluster.current_dir(2, JID) / "VERSION").exists()

            wait_for(formatted, what="JN2 to format itself", tick=writer.batch)
            version = (cluster.current_dir(2, JID) / "VERSION").read_text()
            assert "namespaceID=12345" in version and "clusterID=mycluster" in version
            others = finalized(cluster, 0)
            assert len(others) == 3
            # Within one segment roll: every finalized segment, byte for byte.
            wait_for(
                lambda: finalized(cluster, 2).keys() >= others.keys(),
                what="JN2 to download the finalized segments",
                tick=writer.batch,
            )
            writer.roll()
            wait_for(
                lambda: finalized(cluster, 2) == finalized(cluster, 0) == finalized(cluster, 1),
                what="JN2 to hold every finalized segment the others hold",
                tick=writer.batch,
            )
            # ... and it joined the writer's stream at that roll.
            open_segment = cluster.current_dir(2, JID) / inprogress_edits_file_name(writer.segment)
            wait_for(open_segment.exists, what="JN2 to join the stream", tick=writer.batch)
            wait_for(
                lambda: syncer_status(cluster, 2)["CatchUp"] == "in sync with 2 of 2 peers",
                what="JN2 to report in sync with both peers",
                tick=writer.batch,
            )
            status = jmx_syncer(cluster, 2)
            assert status["CatchUp"] == "in sync with 2 of 2 peers"
            assert status["SegmentsBehind"] == 0 and status["TxnsBehind"] == 0
            assert status["FormatRefusal"] is None
            text = metrics_text(cluster, 2)
            assert f'journalnode_sync_state{{journal_id="{JID}",state="in sync"}} 1.0' in text
            assert f'journalnode_sync_segments_behind{{journal_id="{JID}"}} 0.0' in text
        finally:
            writer.close()


def start_unformatted_journal(cluster, i: int) -> dict[str, bytes]:
    """Load journal JID on node ``i`` (its syncer starts); the files under its edits dir."""
    with QJournalProtocolProxy(*cluster.rpc_address(i), timeout_s=30) as p:
        assert not p.is_formatted(JID)
    wait_for(lambda: JID in cluster.journal_node(i)._syncers, what="the syncer to start")
    return snapshot_files(cluster.journal_node_dir(i))


def format_with_edits(cluster, i: int, ns_info, segments=((1, 3),)) -> None:
    """Format node ``i``'s journal and write the finalized ``segments`` (first, last txid)."""
    with QJournalProtocolProxy(*cluster.rpc_address(i), timeout_s=30) as p:
        p.format(JID, ns_info)
        p.new_epoch(JID, ns_info, 1)
        serial, done = 0, 0
        for first, last in segments:
            serial += 3
            n = last - first + 1
            p.start_log_segment(
                make_request(serial, committed_txid=done), first, CURRENT_LAYOUT_VERSION
            )
            p.journal(
                make_request(serial + 1, committed_txid=done),
                first,
                first,
                n,
                create_txn_data(first, n),
            )
            p.finalize_log_segment(make_request(serial + 2, committed_txid=last), first, last)
            done = last


def wait_for_refusal(cluster, i: int, words: str) -> str:
    wait_for(
        lambda: words in (syncer_status(cluster, i)["FormatRefusal"] or ""),
        what=f"a refusal saying {words!r}",
    )
    return syncer_status(cluster, i)["FormatRefusal"]


def test_peers_that_disagree_about_the_namespace_are_refused(tmp_path):
    with cluster_with_peers(tmp_path, 3) as cluster:
        format_with_edits(cluster, 0, FAKE_NSINFO)
        format_with_edits(cluster, 1, OTHER_NSINFO)  # planted with another namespace id
        before = start_unformatted_journal(cluster, 2)
        reason = wait_for_refusal(cluster, 2, "disagree")
        assert "namespaceID=12345" in reason and "namespaceID=99999" in reason
        assert jmx_syncer(cluster, 2)["CatchUp"] == "unformatted"
        time.sleep(0.3)  # several more rounds: still nothing
        assert snapshot_files(cluster.journal_node_dir(2)) == before
        assert not cluster.journal_node(2).get_or_create_journal(JID).is_formatted()


def test_a_minority_answering_is_refused(tmp_path):
    with cluster_with_peers(tmp_path, 3) as cluster:
        format_with_edits(cluster, 0, FAKE_NSINFO)
        cluster.stop_journal_node(1)
        before = start_unformatted_journal(cluster, 2)
        reason = wait_for_refusal(cluster, 2, "only 1 of the 3 configured JournalNodes")
        assert "a majority needs 2" in reason
        assert f"127.0.0.1:{cluster.rpc_ports[1]}: " in reason  # who did not answer, and why
        time.sleep(0.3)
        assert snapshot_files(cluster.journal_node_dir(2)) == before
        assert "unformatted" in metrics_text(cluster, 2)


def test_self_format_is_off_by_default_and_says_so(tmp_path):
    with cluster_with_peers(tmp_path, 3, sync_format=False) as cluster:
        format_with_edits(cluster, 0, FAKE_NSINFO)
        format_with_edits(cluster, 1, FAKE_NSINFO)
        before = start_unformatted_journal(cluster, 2)
        wait_for_refusal(cluster, 2, "dfs.journalnode.enable.sync.format is false")
        assert snapshot_files(cluster.journal_node_dir(2)) == before


def test_a_segment_only_one_peer_holds_is_fetched_before_in_sync_with_all_peers(tmp_path):
    """Issue 33 item 2: replacing JN1 while JN2 lacks segment 4-6 and JN0, the only one
    holding it, is down. A round against JN2 alone must not read "in sync" (the old
    round-robin round did): it reads "in sync with 1 of 2 peers", which the replacement
    procedure says is not enough to replace the next node. JN0 back, the next round
    fetches 4-6 from it: "in sync with 2 of 2 peers", and 4-6 is on two nodes again.

    ::

        JN0: 1-3  4-6  7-9      (down, then back)
        JN1: (wiped) -> formats from JN0+JN2 -> 1-3, 7-9 -> 1-3, 4-6, 7-9
        JN2: 1-3       7-9
    """
    four_six = "edits_0000000000000000004-0000000000000000006"
    conf = {"dfs.journalnode.sync.interval": "3600000"}  # rounds are driven by the test
    with cluster_with_peers(tmp_path, 3, **conf) as cluster:
        format_with_edits(cluster, 0, FAKE_NSINFO, ((1, 3), (4, 6), (7, 9)))
        format_with_edits(cluster, 2, FAKE_NSINFO, ((1, 3), (7, 9)))
        start_unformatted_journal(cluster, 1)
        syncer = cluster.journal_node(1)._syncers[JID]
        assert syncer.format_from_peers().ok
        with QJournalProtocolProxy(*cluster.rpc_address(1), timeout_s=30) as p:
            p.new_epoch(JID, FAKE_NSINFO, 1)
            p.heartbeat(make_request(1, committed_txid=9))  # what the writer tells it
        cluster.stop_journal_node(0)
        syncer.sync_once()
        assert set(finalized(cluster, 1)) == set(finalized(cluster, 2))  # 1-3, 7-9
        status = jmx_syncer(cluster, 1)
        assert status["CatchUp"] == "in sync with 1 of 2 peers"
        assert status["PeersAnswered"] == 1 and len(status["Peers"]) == 2
        assert status["Unreachable"] == [f"127.0.0.1:{cluster.rpc_ports[0]}"]
        assert "no manifest from" in status["LastError"]
        cluster.restart_journal_node(0)
        assert syncer.sync_once() == 1
        assert finalized(cluster, 1) == finalized(cluster, 0) and four_six in finalized(cluster, 1)
        status = jmx_syncer(cluster, 1)
        assert status["CatchUp"] == "in sync with 2 of 2 peers"
        assert (status["SegmentsBehind"], status["Unreachable"], status["LastError"]) == (
            0,
            [],
            None,
        )
        text = metrics_text(cluster, 1)
        assert f'journalnode_sync_state{{journal_id="{JID}",state="in sync"}} 1.0' in text
        assert f'journalnode_sync_peers_answered{{journal_id="{JID}"}} 2.0' in text


def test_a_journal_formatted_between_rounds_does_not_read_unformatted(tmp_path):
    """Issue 33 item 12: a NameNode formats the journal after its syncer started; until
    the next round (up to dfs.journalnode.sync.interval) the page said "unformatted"."""
    conf = {"dfs.journalnode.sync.interval": "3600000"}
    with cluster_with_peers(tmp_path, 3, sync_format=False, **conf) as cluster:
        start_unformatted_journal(cluster, 0)
        assert jmx_syncer(cluster, 0)["CatchUp"] == "unformatted"
        format_with_edits(cluster, 0, FAKE_NSINFO)
        assert jmx_syncer(cluster, 0)["CatchUp"] == "syncing"
        assert jmx_syncer(cluster, 0)["SegmentsBehind"] is None  # no round yet
        text = metrics_text(cluster, 0)
        assert f'journalnode_sync_state{{journal_id="{JID}",state="syncing"}} 1.0' in text


# ---- journalnode -bootstrap ----------------------------------------------------------------


def free_port() -> int:
    return ports.free_ports(1)[0]


def bootstrap_args(new_dir, port: int, uri: str | None) -> list[str]:
    args = [
        "-D", f"dfs.journalnode.edits.dir={new_dir}",
        "-D", f"dfs.journalnode.rpc-address=127.0.0.1:{port}",
        "-D", "dfs.journalnode.http-address=127.0.0.1:0",
    ]  # fmt: skip
    if uri is not None:
        args += ["-D", f"dfs.namenode.shared.edits.dir={uri}"]
    return args + ["journalnode", "-bootstrap", "-nonInteractive"]


def one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err, err
    return err


def test_bootstrap_brings_a_new_host_to_the_same_state(tmp_path, capsys):
    with cluster_with_peers(tmp_path / "c", 3) as cluster:
        writer = Writer(cluster)
        try:
            for _ in range(4):
                for _ in range(5):
                    writer.batch()
                writer.roll()
            writer.batch()
            port = free_port()
            uri = cluster.quorum_journal_uri(JID).replace(f"/{JID}", f";127.0.0.1:{port}/{JID}")
            new_dir = tmp_path / "new-jn"
            capsys.readouterr()
            assert main(bootstrap_args(new_dir, port, uri)) == 0
            out = capsys.readouterr().out
            assert "Formatted journal" in out
            assert "[4/4 segments] 20 txns" in out
            assert "it holds every finalized segment its peers hold" in out
            new_current = new_dir / JID / "current"
            copies = finalized_in(new_current)
            assert copies == finalized(cluster, 0) and len(copies) == 4
            assert (new_current / "VERSION").read_text().count("namespaceID=12345") == 1
            # Run again: nothing to fetch, nothing overwritten.
            assert main(bootstrap_args(new_dir, port, uri)) == 0
            assert "already formatted" in capsys.readouterr().out
        finally:
            writer.close()


def test_bootstrap_bad_input_is_one_line(tmp_path, capsys):
    with cluster_with_peers(tmp_path / "c", 3) as cluster:
        port = free_port()
        new_dir = tmp_path / "new-jn"
        assert main(bootstrap_args(new_dir, port, None)) == 1
        assert "No peers configured" in one_line(capsys)
        # An unformatted majority: nobody has formatted the journal yet.
        uri = cluster.quorum_journal_uri(JID).replace(f"/{JID}", f";127.0.0.1:{port}/{JID}")
        assert main(bootstrap_args(new_dir, port, uri)) == 1
        err = one_line(capsys)
        assert "only 0 of the 4 configured JournalNodes" in err
        assert "its journal is not formatted" in err
        assert not (new_dir / JID / "current").exists()
        # Not one of the configured JournalNodes.
        assert main(bootstrap_args(new_dir, port, cluster.quorum_journal_uri(JID))) == 1
        assert "is not one of the JournalNodes" in one_line(capsys)


def test_bootstrap_takes_the_membership_record_its_peers_agree_on(tmp_path, capsys):
    """The peers hold the record of a set change (STABLE, naming the new host); the new
    host takes it — and on a second run keeps its own newer one."""
    from hadoop_qjm.qjournal.protocol.membership import MembershipRecord
    from hadoop_qjm.qjournal.server.journal_membership import MEMBERSHIP_FILE

    with cluster_with_peers(tmp_path / "c", 3) as cluster:
        port = free_port()
        old = {f"127.0.0.1:{p}" for p in cluster.rpc_ports}
        record = MembershipRecord.stable(old | {f"127.0.0.1:{port}"}, 1, 2, previous=old)
        for i in range(3):
            format_with_edits(cluster, i, FAKE_NSINFO)
            (cluster.current_dir(i, JID) / MEMBERSHIP_FILE).write_text(record.to_text())
            cluster.restart_journal_node(i)  # reads the record
        uri = cluster.quorum_journal_uri(JID).replace(f"/{JID}", f";127.0.0.1:{port}/{JID}")
        new_dir = tmp_path / "new-jn"
        capsys.readouterr()
        assert main(bootstrap_args(new_dir, port, uri)) == 0
        assert "Took the membership record: state=STABLE" in capsys.readouterr().out
        mine = new_dir / JID / "current" / MEMBERSHIP_FILE
        assert MembershipRecord.parse(mine.read_text()) == record
        # A newer local record is never replaced by the peers' older one.
        newer = MembershipRecord.stable(old | {f"127.0.0.1:{port}"}, 2, 3, previous=old)
        mine.write_text(newer.to_text())
        assert main(bootstrap_args(new_dir, port, uri)) == 0
        assert "Kept this node's membership record" in capsys.readouterr().out
        assert MembershipRecord.parse(mine.read_text()) == newer
