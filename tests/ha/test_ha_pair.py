"""Two NameNodes over one shared journal: standby tailing, transitions, StandbyException,
and what /jmx and the status page say of them (issue 28): a standby reports the last txid
it applied, where operators watch its lag, and both report their last HA transition.

::

    nn1 (active)    writes ... txid L          | ends its segment (L+1), tails again
    nn2 (standby)   tails  ... applied L       | catches up to L+1, writes from L+2
                    /jmx LastAppliedOrWrittenTxId = LastWrittenTransactionId = L
"""

from __future__ import annotations

import http.client
import json
import logging
import re
import time

import pytest

from hadoop_qjm.namenode.ha.ha_util import resolve_ha_conf
from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.name_node_core import NameNodeCore, format_namenode
from hadoop_qjm.namenode.protocol.exceptions import StandbyException
from hadoop_qjm.namenode.protocol.messages import HAServiceState
from hadoop_qjm.testing.in_process_ha import NS, HAPair, ha_conf, wait_until

pytestmark = pytest.mark.timeout(90)


def test_a_standby_start_logs_how_a_namenode_becomes_active(mjc, tmp_path, caplog):
    """Neither NameNode makes itself active: each says so at start, in one INFO line."""
    caplog.set_level(logging.INFO, logger="hadoop_qjm.namenode.name_node")
    p = HAPair(ha_conf(tmp_path, mjc, "ha"), tmp_path)
    p.stop()
    lines = [r.getMessage() for r in caplog.records if "started in standby" in r.getMessage()]
    assert len(lines) == 2, lines
    for nnid, line in zip(("nn1", "nn2"), lines):
        assert f"NameNode {nnid} of nameservice mycluster started in standby" in line
        assert "hdfs-py haadmin -transitionToActive" in line and "zkfc" in line
        assert "\n" not in line


def test_a_standby_whose_shared_edits_are_http_ports_says_so_in_one_line(mjc, tmp_path, caplog):
    """Issue 33 item 13: dfs.namenode.shared.edits.dir naming the JournalNodes' HTTP ports
    (8480 for 8485). The NameNode stalled 20 s on getJournalState (the HTTP server waited
    for a line end), logged "Invalid reply frame length 1213486160" and started as standby
    with no word of it; now each node fails at once with what is wrong, and the NameNode
    says in one line that it cannot read its shared edits."""
    caplog.set_level(logging.INFO)
    conf = ha_conf(tmp_path, mjc, "ha")
    conf1, _, _ = resolve_ha_conf(conf, "nn1")
    format_namenode(conf1, fs_owner="hdfs")
    http_ports = [f"127.0.0.1:{mjc.http_address(i)[1]}" for i in range(3)]
    conf1.set("dfs.namenode.shared.edits.dir", f"qjournal://{';'.join(http_ports)}/ha")
    node = NameNode(conf1, terminate=lambda status, message: None, fs_owner="hdfs")
    try:
        node.start()
        assert node.state is HAServiceState.STANDBY
    finally:
        node.stop()
    lines = [
        r.getMessage() for r in caplog.records if "cannot read its shared edits" in r.getMessage()
    ]
    assert len(lines) == 1, lines
    line = lines[0]
    assert line.startswith(
        "NameNode nn1 cannot read its shared edits (dfs.namenode.shared.edits.dir)"
    )
    assert "\n" not in line
    assert re.search(r"127\.0\.0\.1:\d+ is an HTTP port, not a JournalNode RPC port", line)
    # No stall: a quorum call waiting longer than 30% of its timeout logs "Waited …".
    assert not any(r.getMessage().startswith("Waited") for r in caplog.records)
    assert not any(r.exc_info for r in caplog.records if "input streams" in r.getMessage())


def test_both_start_in_standby_and_refuse_clients(pair):
    for nnid in ("nn1", "nn2"):
        assert pair[nnid].state is HAServiceState.STANDBY
        with pair.proxy(nnid) as proxy:
            assert proxy.get_service_status().state is HAServiceState.STANDBY
            with pytest.raises(StandbyException, match="WRITE is not supported in state standby"):
                proxy.mkdirs("/a")
            with pytest.raises(StandbyException, match="READ"):
                proxy.get_file_info("/")


def test_standby_tails_in_progress_edits_and_takes_over(pair):
    with pair.proxy("nn1") as p1:
        p1.transition_to_active()
        for i in range(20):
            assert p1.mkdirs(f"/d{i}")
    ns2 = pair["nn2"].core.namesystem
    wait_until(lambda: ns2.dir.get_inode("/d19") is not None, what="nn2 to tail /d19")
    # Failover: nn1 steps down, nn2 takes over and continues at the next txid.
    with pair.proxy("nn1") as p1, pair.proxy("nn2") as p2:
        p1.transition_to_standby()
        p2.transition_to_active()
        assert p2.get_service_status().state is HAServiceState.ACTIVE
        assert p2.get_file_info("/d0") is not None
        assert p2.mkdirs("/after")
        with pytest.raises(StandbyException):
            p1.mkdirs("/refused")
    ns1 = pair["nn1"].core.namesystem
    wait_until(lambda: ns1.dir.get_inode("/after") is not None, what="nn1 to tail /after")
    assert ns1.dir.snapshot() == ns2.dir.snapshot()


def test_a_fenced_active_terminates_on_its_next_sync(pair):
    """nn2 becomes active while nn1 still believes it is: nn1's next edit fails (the epoch
    fences it) and nn1 terminates instead of diverging."""
    pair["nn1"].transition_to_active()
    with pair.proxy("nn1") as p1:
        assert p1.mkdirs("/before")
    pair["nn2"].transition_to_active()
    with pair.proxy("nn1") as p1:
        with pytest.raises(Exception):  # noqa: B017 - the call fails either way
            p1.mkdirs("/fenced")
    assert pair.terminations["nn1"], "nn1 went on writing after it was fenced"
    status, message = pair.terminations["nn1"][0]
    assert status == 1 and "epoch" in message, message
    with pair.proxy("nn2") as p2:
        assert p2.get_file_info("/before") is not None
        assert p2.get_file_info("/fenced") is None


def test_a_tailer_round_that_outlives_its_tailer_applies_nothing_on_the_active(pair):
    """A tailer round stuck (e.g. in a roll request) past the transition to active must not
    apply the active's own txns a second time."""
    pair["nn2"].transition_to_active()
    core = pair["nn2"].core
    with pair.proxy("nn2") as p2:
        assert p2.mkdirs("/once")
    before = core.last_applied_txid
    assert core.tail_edits(in_progress_ok=True) == 0
    assert core.last_applied_txid == before
    with pair.proxy("nn2") as p2:
        assert p2.mkdirs("/twice") and p2.get_file_info("/once") is not None


def test_a_write_caught_by_the_transition_to_standby_is_refused(pair):
    """A write that passed the RPC check just before the transition to standby is refused
    by the standby edit log before it changes anything; a sync of a txid the closed edit
    log made durable still returns."""
    pair["nn1"].transition_to_active()
    core = pair["nn1"].core
    namesystem = core.namesystem
    with pair.proxy("nn1") as p1:
        assert p1.mkdirs("/durable")
    synced = core.edit_log.synced_txid
    pair["nn1"].transition_to_standby()
    with pytest.raises(StandbyException):
        namesystem.mkdirs("/late", 0o755)
    assert namesystem.dir.get_inode("/late") is None
    namesystem.edit_log.log_sync(synced)  # durable before the segment ended: returns
    with pytest.raises(StandbyException):
        namesystem.edit_log.log_sync(core.last_applied_txid + 10)


# ---- /jmx and the status page ----------------------------------------------------------------
def http_get(nn: NameNode, path: str) -> str:
    conn = http.client.HTTPConnection("127.0.0.1", nn.http_address[1], timeout=30)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read().decode()
        assert response.status == 200, body
        return body
    finally:
        conn.close()


def jmx(nn: NameNode) -> dict[str, dict]:
    """The NameNode's /jmx beans by their short name (``FSNamesystem``, ...)."""
    beans = json.loads(http_get(nn, "/jmx"))["beans"]
    return {b["name"].split("name=", 1)[1]: b for b in beans}


def txids(nn: NameNode) -> tuple[int, int, int]:
    """(LastAppliedOrWrittenTxId, LastWrittenTransactionId — the status page's "Last
    written txid" —, the txid the Prometheus gauge says)."""
    beans = jmx(nn)
    info = json.loads(beans["NameNodeInfo"]["JournalTransactionInfo"])
    gauge = re.search(r"^namenode_last_written_txid (\S+)$", http_get(nn, "/metrics"), re.M)
    assert gauge is not None, "no namenode_last_written_txid in /metrics"
    return (
        int(info["LastAppliedOrWrittenTxId"]),
        beans["FSNamesystem"]["LastWrittenTransactionId"],
        int(float(gauge.group(1))),
    )


def ha_peers(nn: NameNode) -> dict[str, str]:
    """What ``nn``'s /jmx (and status page) says of the other NameNodes' states."""
    return {p["NamenodeId"]: p["State"] for p in jmx(nn)["NameNodeStatus"]["HAPeers"]}


def wait_tailed(standby: NameNode, active: NameNode) -> int:
    """Wait until ``standby`` applied every txid ``active`` wrote; returns that txid."""
    last = active.core.edit_log.last_written_txid
    wait_until(
        lambda: standby.core.last_applied_txid >= last,
        what=f"{standby.nnid} to apply txid {last}",
    )
    return last


def test_a_standby_reports_its_last_applied_txid_and_continues_from_it_when_active(pair):
    nn1, nn2 = pair["nn1"], pair["nn2"]
    assert jmx(nn1)["NameNodeStatus"]["LastHATransitionTime"] == 0  # none yet, as Hadoop
    nn1.transition_to_active()
    with pair.proxy("nn1") as p1:
        for i in range(5):
            assert p1.mkdirs(f"/d{i}")
    last = wait_tailed(nn2, nn1)
    assert last > 5
    assert txids(nn2) == (last, last, last)
    fsn = jmx(nn2)["FSNamesystem"]
    assert fsn["FilesTotal"] == jmx(nn1)["FSNamesystem"]["FilesTotal"] == 6
    checkpoint = fsn["MostRecentCheckpointTxId"]
    assert fsn["TransactionsSinceLastCheckpoint"] == last - checkpoint
    assert jmx(nn2)["NameNodeStatus"]["LastHATransitionTime"] == 0  # started standby
    assert f"namenode_last_written_txid {float(last)}" in http_get(nn2, "/metrics")
    status = jmx(nn2)["NameNodeStatus"]
    assert (status["Nameservice"], status["NamenodeId"]) == ("mycluster", "nn2")
    # Each page shows the other NameNode's state, as that one's /jmx says (fetched in the
    # background: the first answers may still be "unknown").
    wait_until(lambda: ha_peers(nn2) == {"nn1": "active"}, what="nn2 to see nn1 active")
    wait_until(lambda: ha_peers(nn1) == {"nn2": "standby"}, what="nn1 to see nn2 standby")

    # Failover: nn1 ends its segment at last + 1; nn2 catches up and writes from last + 2.
    nn1.transition_to_standby()
    nn2.transition_to_active()
    with pair.proxy("nn2") as p2:
        assert p2.mkdirs("/after")
    written = nn2.core.edit_log.last_written_txid
    assert written == last + 3  # END_LOG_SEGMENT, START_LOG_SEGMENT, MKDIR
    assert txids(nn2) == (written, written, written)
    assert wait_tailed(nn1, nn2) == written
    assert txids(nn1) == (written, written, written)
    wait_until(lambda: ha_peers(nn1) == {"nn2": "active"}, what="nn1 to see nn2 active")
    pair["nn2"].stop()
    wait_until(lambda: ha_peers(nn1) == {"nn2": "unreachable"}, what="nn1 to see nn2 gone")


def test_a_standby_reports_the_txid_it_loaded_at_start(pair):
    """Before its tailer's first round (no tailer here: a bare core), a standby's edit log
    reports what the start-up load applied (FSImage.loadFSImage's setNextTxId)."""
    pair["nn1"].transition_to_active()
    with pair.proxy("nn1") as p1:
        assert p1.mkdirs("/loaded")
        first = p1.roll_edits()  # the standby loads finalized segments only
    pair["nn2"].stop()
    conf, _, _ = resolve_ha_conf(pair.conf, "nn2")
    with NameNodeCore(conf, fs_owner="hdfs", ha_enabled=True) as core:
        assert core.namesystem.dir.get_inode("/loaded") is not None
        assert core.last_applied_txid == first - 1
        assert core.edit_log.last_written_txid == first - 1
        assert core.fs_image.last_applied_or_written_txid == first - 1


def test_last_ha_transition_time_is_the_wall_clock_of_the_last_transition(pair):
    nn1 = pair["nn1"]
    before = int(time.time() * 1000)
    nn1.transition_to_active()
    after = int(time.time() * 1000)
    became_active = jmx(nn1)["NameNodeStatus"]["LastHATransitionTime"]
    assert before <= became_active <= after
    nn1.transition_to_active()  # already active: no transition, no new time
    assert jmx(nn1)["NameNodeStatus"]["LastHATransitionTime"] == became_active
    wait_until(lambda: int(time.time() * 1000) > after, what="the wall clock to move")
    nn1.transition_to_standby()
    became_standby = jmx(nn1)["NameNodeStatus"]["LastHATransitionTime"]
    assert after < became_standby <= int(time.time() * 1000)


def test_journal_nodes_configured_per_nameservice_sync_the_namenodes_journal(mjc, tmp_path):
    """Issue 38 item 3 end to end: the JournalNodes know the shared edits only as
    dfs.namenode.shared.edits.dir.<nsId>; the NameNodes' calls name their nameservice (as
    Hadoop's FSEditLog.createJournal), so each JournalNode starts the journal's syncer with
    the other two as its peers."""
    uri = mjc.quorum_journal_uri("fed")
    for i in range(3):
        mjc.journal_node(i).conf.set(f"dfs.namenode.shared.edits.dir.{NS}", uri)
    p = HAPair(ha_conf(tmp_path, mjc, "fed"), tmp_path)
    try:
        for i in range(3):
            node = mjc.journal_node(i)
            assert node.journal_syncer_started("fed")
            assert node.tried_journal_syncer_with_ns_id("fed")
            assert len(node.syncer_status("fed")["Peers"]) == 2
    finally:
        p.stop()
