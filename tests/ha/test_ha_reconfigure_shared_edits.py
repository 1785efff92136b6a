"""``haadmin -reconfigureSharedEdits``: the HA pair moves its shared edits to another
JournalNode set while a client streams mkdirs (docs/journalnode.md, "Online, by joint
consensus"): replacing one of three, growing 3 -> 5, shrinking 5 -> 3.

::

    client   mkdirs /s0 /s1 ...  (acknowledged ones recorded)
    nn1      active on O | roll: JOINT O+N | roll: STABLE N (once N holds the history)
    nn2      standby, configured with O: fails over, follows the records to N
    both     restarted, configured with O: come up on N
"""

from __future__ import annotations

import io
import threading

import pytest

from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.file_journal_manager import match_edit_logs
from hadoop_qjm.namenode.protocol.messages import HAServiceState
from hadoop_qjm.namenode.shared_edits_switch import SharedEditsSwitch
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.protocol.membership import Config
from hadoop_qjm.testing.in_process_ha import HAPair, ha_conf, journal_node_conf, wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.tools.ha_admin import HAAdmin

pytestmark = pytest.mark.timeout(120)

JID = "ha"


def _uri(mjc: MiniJournalCluster, nodes: list[int]) -> str:
    return "qjournal://" + ";".join(f"127.0.0.1:{mjc.rpc_ports[i]}" for i in nodes) + f"/{JID}"


def _finalized(mjc: MiniJournalCluster, i: int) -> dict[str, bytes]:
    """The node's finalized segments by name: not their .md5 sidecars, and not the
    .md5.tmp of a finalize that a node still running is writing (a close() returns on a
    majority, so the third node's finalize may arrive after the pair stopped)."""
    logs = match_edit_logs(mjc.current_dir(i, JID))
    return {log.path.name: log.path.read_bytes() for log in logs if not log.is_in_progress}


def _shared_qjm(nn) -> QuorumJournalManager:  # noqa: ANN001
    (qjm,) = [
        jas.manager
        for jas in nn.core.edit_log.journal_set.journals
        if isinstance(jas.manager, QuorumJournalManager)
    ]
    return qjm


CHANGES = {
    "replace one of three": ([0, 1, 2], [0, 1, 3]),
    "grow 3 to 5": ([0, 1, 2], [0, 1, 2, 3, 4]),
    "shrink 5 to 3": ([0, 1, 2, 3, 4], [1, 3, 4]),
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_change_the_set_under_load_then_fail_over_and_restart(tmp_path, change: str) -> None:  # noqa: ANN001
    old, new = CHANGES[change]
    with MiniJournalCluster(5, conf=journal_node_conf()) as mjc:
        conf = ha_conf(tmp_path, mjc, JID)
        conf.set("dfs.namenode.shared.edits.dir", _uri(mjc, old))
        pair = HAPair(conf, tmp_path)
        try:
            # The new hosts, formatted for the namespace (as journalnode -bootstrap would).
            added = sorted(set(new) - set(old))
            if added:
                ns_info = pair["nn1"].core.ns_info
                with QuorumJournalManager(Configuration(), _uri(mjc, added), ns_info) as q:
                    q.format(ns_info)
            with pair.proxy("nn1") as p1:
                p1.transition_to_active()
            acked: list[str] = []
            stop = threading.Event()

            def stream() -> None:
                with pair.proxy("nn1") as p:
                    i = 0
                    while not stop.is_set():
                        if p.mkdirs(f"/s{i}"):
                            acked.append(f"/s{i}")
                        i += 1

            client = threading.Thread(target=stream)
            client.start()
            try:
                wait_until(lambda: len(acked) >= 20, what="the client to stream")
                out, err = io.StringIO(), io.StringIO()
                admin = HAAdmin(pair.client_conf(), out=out, err=err)
                assert admin.run(["-reconfigureSharedEdits", _uri(mjc, new)]) == 0, err.getvalue()
                count = len(acked)
                wait_until(lambda: len(acked) >= count + 20, what="more mkdirs on the new set")
            finally:
                stop.set()
                client.join(30)
            assert "set dfs.namenode.shared.edits.dir to" in out.getvalue()
            members = frozenset(f"127.0.0.1:{mjc.rpc_ports[i]}" for i in new)
            assert _shared_qjm(pair["nn1"]).config == Config(members)
            # The nodes that left are stopped; nn2, still configured with the old set (whose
            # majority is still up: the nodes that stayed), fails over and follows the records.
            for i in sorted(set(old) - set(new)):
                mjc.stop_journal_node(i)
            with pair.proxy("nn1") as p1, pair.proxy("nn2") as p2:
                p1.transition_to_standby()
                p2.transition_to_active()
                assert p2.get_service_status().state is HAServiceState.ACTIVE
                for path in acked:
                    assert p2.get_file_info(path) is not None, path
                assert p2.mkdirs("/after-failover")
            assert _shared_qjm(pair["nn2"]).config == Config(members)
            # Restart both (configuration still naming the old set): they come up on the new.
            pair.stop()
            pair.start("nn1")
            pair.start("nn2")
            with pair.proxy("nn2") as p2:
                p2.transition_to_active()
                assert p2.get_file_info("/after-failover") is not None
                assert p2.mkdirs("/after-restart")
            assert _shared_qjm(pair["nn2"]).config == Config(members)
            nn1 = pair["nn1"].core.namesystem
            wait_until(lambda: nn1.dir.get_inode("/after-restart") is not None, what="nn1 tails")
        finally:
            pair.stop()
        # Every finalized segment the new set holds is the same on each of its nodes.
        copies = [_finalized(mjc, i) for i in new]
        for name in set().union(*copies):
            held = [c[name] for c in copies if name in c]
            assert all(h == held[0] for h in held), name


def test_a_switch_cut_short_by_a_failover_is_finished_by_the_new_active(tmp_path) -> None:  # noqa: ANN001
    """nn1 records the joint configuration and fails over before finishing; nn2 adopts
    O+N from the records and finishes the switch at its next roll (dfsadmin -rollEdits,
    or the standby's periodic roll request)."""
    from hadoop_qjm.qjournal.client.membership_change import begin_reconfiguration

    old, new = [0, 1, 2], [0, 1, 3]
    with MiniJournalCluster(4, conf=journal_node_conf()) as mjc:
        conf = ha_conf(tmp_path, mjc, JID)
        conf.set("dfs.namenode.shared.edits.dir", _uri(mjc, old))
        pair = HAPair(conf, tmp_path)
        try:
            ns_info = pair["nn1"].core.ns_info
            with QuorumJournalManager(Configuration(), _uri(mjc, [3]), ns_info) as q:
                q.format(ns_info)
            with pair.proxy("nn1") as p1:
                p1.transition_to_active()
                assert p1.mkdirs("/before")
            core = pair["nn1"].core
            qjm = _shared_qjm(pair["nn1"])
            with core.namesystem.lock:
                core.edit_log.roll_edit_log(
                    between=lambda: begin_reconfiguration(qjm, _uri(mjc, new))
                )
            assert qjm.config.is_joint
            members = frozenset(f"127.0.0.1:{mjc.rpc_ports[i]}" for i in new)
            with pair.proxy("nn1") as p1, pair.proxy("nn2") as p2:
                assert p1.mkdirs("/joint")
                p1.transition_to_standby()
                p2.transition_to_active()
                assert _shared_qjm(pair["nn2"]).config.is_joint  # adopted from the records
                assert p2.get_file_info("/joint") is not None
                p2.roll_edits()
                assert _shared_qjm(pair["nn2"]).config == Config(members)
                assert p2.mkdirs("/after")
        finally:
            pair.stop()


def _journal_nodes_with_syncers(n: int) -> MiniJournalCluster:
    """``n`` JournalNodes that know each other as peers and sync every 100 ms (so that
    the nodes of a new set catch up on the history the switch's finish checks)."""
    conf = journal_node_conf()
    conf.set("dfs.journalnode.sync.interval", "100")
    mjc = MiniJournalCluster(n, conf=conf)
    try:
        mjc.conf.set("dfs.namenode.shared.edits.dir", mjc.quorum_journal_uri(JID))
        for i in range(n):
            mjc.restart_journal_node(i)  # now they know their peers
    except BaseException:
        mjc.shutdown()
        raise
    return mjc


def _switch(pair: HAPair, uri: str) -> str:
    """``haadmin -reconfigureSharedEdits uri``, run once: it waits (asking every 100 ms
    here) while the new nodes' syncers copy the history; its output."""
    conf = pair.client_conf()
    conf.set("dfs.ha.reconfigure-shared-edits.retry.interval.ms", "100")
    conf.set("dfs.ha.reconfigure-shared-edits.catch-up.timeout.ms", "30000")
    out, err = io.StringIO(), io.StringIO()
    assert HAAdmin(conf, out=out, err=err).run(["-reconfigureSharedEdits", uri]) == 0, (
        err.getvalue()
    )
    return out.getvalue()


def test_the_standby_follows_the_switch_then_both_restart_on_the_new_set(tmp_path) -> None:  # noqa: ANN001
    """nn2 stays standby through a switch from {0,1,2} to {0,3,4}; once the nodes that
    left (1 and 2, a majority of the old set) are stopped, it keeps applying the mkdirs
    made after the switch: it reads the new set. It records the switch in its name
    directories, becomes active on the new set, and both NameNodes restart on it, with
    the configuration unchanged (naming nodes that are gone) and then edited.

    ::

        nodes   0   1   2   3   4
        before  O   O   O   .   .      nn1 active, nn2 tails O
        switch  ON  O   O   N   N      nn2 sees STABLE(N) on O's majority: reads N
        after   N   x   x   N   N      1, 2 stopped: nn2 still tails, then takes over
        restart N   x   x   N   N      both read current/shared_edits_switch
    """
    old, new = [0, 1, 2], [0, 3, 4]
    with _journal_nodes_with_syncers(5) as mjc:
        conf = ha_conf(tmp_path, mjc, JID)
        conf.set("dfs.namenode.shared.edits.dir", _uri(mjc, old))
        pair = HAPair(conf, tmp_path)
        try:
            ns_info = pair["nn1"].core.ns_info
            with QuorumJournalManager(Configuration(), _uri(mjc, [3, 4]), ns_info) as q:
                q.format(ns_info)
            with pair.proxy("nn1") as p1:
                p1.transition_to_active()
                for i in range(5):
                    assert p1.mkdirs(f"/before{i}")
            assert "set dfs.namenode.shared.edits.dir to" in _switch(pair, _uri(mjc, new))
            members = frozenset(f"127.0.0.1:{mjc.rpc_ports[i]}" for i in new)
            nn2 = pair["nn2"].core
            wait_until(
                lambda: _shared_qjm(pair["nn2"]).config == Config(members),
                what="the standby to read the new set",
            )
            for i in sorted(set(old) - set(new)):
                mjc.stop_journal_node(i)
            with pair.proxy("nn1") as p1:
                for i in range(5):
                    assert p1.mkdirs(f"/after{i}")
            wait_until(
                lambda: nn2.namesystem.dir.get_inode("/after4") is not None,
                what="the standby to apply the mkdirs made after the switch",
            )
            # Both recorded the switch in their name directories; nn2 becomes active on
            # the new set (its configuration still names the old one, whose majority is
            # gone).
            for nnid in ("nn1", "nn2"):
                (recorded,) = (tmp_path / nnid / "name" / "current").glob("shared_edits_switch")
                assert SharedEditsSwitch.parse(recorded.read_text()).members == members
            with pair.proxy("nn1") as p1, pair.proxy("nn2") as p2:
                p1.transition_to_standby()
                p2.transition_to_active()
                for i in range(5):
                    assert p2.get_file_info(f"/after{i}") is not None
                assert p2.mkdirs("/on-the-new-set")
            assert _shared_qjm(pair["nn2"]).config == Config(members)
            # Restart both, the configuration unchanged, then edited: on the new set.
            for step, shared in (("unchanged", _uri(mjc, old)), ("edited", _uri(mjc, new))):
                pair.stop()
                pair.conf.set("dfs.namenode.shared.edits.dir", shared)
                pair.start("nn1")
                pair.start("nn2")
                with pair.proxy("nn1") as p1:
                    p1.transition_to_active()
                    assert p1.get_file_info("/on-the-new-set") is not None
                    assert p1.mkdirs(f"/restarted-{step}")
                assert _shared_qjm(pair["nn1"]).config == Config(members)
                nn2 = pair["nn2"].core
                wait_until(
                    lambda: nn2.namesystem.dir.get_inode(f"/restarted-{step}") is not None,  # noqa: B023
                    what=f"nn2 to tail after the restart ({step} configuration)",
                )
                with pair.proxy("nn1") as p1:
                    p1.transition_to_standby()
        finally:
            pair.stop()
