"""Automatic failover with real processes: ZooKeeper JVMs, three JournalNodes, NameNodes
nn1 and nn2, and a ``hdfs-py zkfc`` beside each NameNode, all on 127.0.0.1.

Nobody types a command (except in the ``haadmin`` test): the controllers elect, fence and
promote. Clients stream ``mkdirs`` through ``hdfs://mycluster`` (the failover client) and
the history check (:func:`zkfc_support.check_history`) ends every load test: every
acknowledged directory is on the active NameNode, none appears that no client tried,
and each client's next listing showed its acknowledged directory.

::

    kill -9 active NN    nn1 active ──✗                        (its ZKFC: not responding,
                         nn2 standby ──lock──fence──active──▶   quits, the lock goes)
    kill -9 active ZKFC  zkfc1 ✗ ·· session expires (3 s) ·· lock goes
                         zkfc2 ──lock── transitionToStandby(nn1) ── nn2 active
    kill -9 beside an    nn3 observer: its ZKFC out of the election; nn2 takes over,
    observer             nn3 serves reads before and after (issue 37 item 6)
    SIGSTOP active NN    nn1 frozen ·· health RPC times out (3 s) ·· zkfc1 quits
    (and its ZKFC)       nn2 active, new epoch; SIGCONT: nn1's writes refused by the JNs
    2 of 3 JNs killed    active aborts; no quorum, no active; JNs back → standby takes over
    ZooKeeper servers    1 of 3 lost: nothing changes; 3 of 3 lost: the active serves on,
                         no second active; back: exactly one active

Every process is stopped by its pid (MiniHACluster.shutdown, the ZooKeeper fixtures);
waits poll conditions with deadlines; loads are bounded in count and time. On failure
the tails of the controllers' and NameNodes' logs are appended (``explained``).
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hadoop_qjm.namenode.ha.failover_proxy import namenode_proxy_from_conf
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_ha_cluster import NAMESERVICE, NNIDS, MiniHACluster
from tests.system.zkfc_support import (
    CALL_TIMEOUT_S,
    HistoryLoad,
    PinnedWriter,
    Sample,
    StateWatcher,
    check_history,
    double_actives,
    explained,
    history_violations,
    journal_log_path,
    log_offset,
    log_since,
    quick_states,
    start_auto_failover,
    wait_log,
    wait_one_active,
    watch_states,
)

pytestmark = pytest.mark.timeout(180)

#: Restarts of the active NameNode in the restart loop.
RESTART_ROUNDS = 10
#: How long the tests watch for a second active where none may appear (bounded polls).
NO_ACTIVE_WATCH_S = 10.0
EPOCH_REFUSED = re.compile(r"IPC's epoch (\d+) is less than the last promised epoch (\d+)")
ZK_DISCONNECTED = re.compile(r"Session disconnected|Session expired")


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Callable[..., MiniHACluster]]:
    """``make(zookeeper)``: a started automatic-failover MiniHACluster (one NameNode
    elected); every one is shut down (by pid) after the test. Request the ZooKeeper
    fixture *before* this one, so that ZooKeeper outlives the controllers."""
    clusters: list[MiniHACluster] = []

    def make(zookeeper: str, **properties: object) -> MiniHACluster:
        cluster = start_auto_failover(tmp_path / f"cluster{len(clusters)}", zookeeper, **properties)
        clusters.append(cluster)
        return cluster

    try:
        yield make
    finally:
        for cluster in clusters:
            cluster.shutdown()


def becomes_active(cluster: MiniHACluster, nnid: str) -> Callable[[], bool]:
    return lambda: quick_states(cluster)[nnid] == "active"


def assert_history(cluster: MiniHACluster, load: HistoryLoad) -> None:
    report = check_history(cluster, load)
    assert report.ok, f"client history violated: {report}"
    assert report.acked > 0, f"no mkdirs acknowledged at all: {load.last_errors()}"
    print(f"history: {report}")


def journal_logs(cluster: MiniHACluster) -> list[Path]:
    return [journal_log_path(cluster, i) for i in range(cluster.journal_nodes.num_journal_nodes)]


# ---- 9. the history check itself (pure) -----------------------------------------------------------
# Expected duration: < 0.1 s.
def test_history_check_finds_lost_phantom_and_unlisted_directories() -> None:
    tried = ["/load/c0/b0/d0", "/load/c0/b0/d1", "/load/c0/b0/d2"]
    acked = ["/load/c0/b0/d0", "/load/c0/b0/d1"]
    parents = ["/load/c0", "/load/c0/b0"]
    # d2 was tried but not acknowledged: present or not, both are fine.
    assert history_violations("/load", tried, acked, [*parents, *tried]).ok
    assert history_violations("/load", tried, acked, [*parents, *acked]).ok
    report = history_violations(
        "/load", tried, acked, [*parents, "/load/c0/b0/d0", "/load/c0/b0/d7", "/load/c1"]
    )
    assert report.lost == ("/load/c0/b0/d1",)
    assert report.phantom == ("/load/c0/b0/d7", "/load/c1")
    missed = history_violations(
        "/load", tried, acked, [*parents, *acked], ["/load/c0/b0/d1 (listed on nn2)"]
    )
    assert not missed.ok and missed.listing_misses == ("/load/c0/b0/d1 (listed on nn2)",)


# Expected duration: < 0.1 s.
def test_state_watcher_reports_only_provable_overlaps() -> None:
    def samples(*states: tuple[str, str]) -> list[Sample]:
        return [Sample(nnid, 2 * i, 2 * i + 1, state) for i, (nnid, state) in enumerate(states)]

    # A handover: nn1 steps down, then nn2 steps up — one sweep may see both active.
    handover = samples(
        ("nn1", "active"), ("nn2", "standby"), ("nn1", "active"), ("nn2", "active"),
        ("nn1", "standby"), ("nn2", "active"),
    )  # fmt: skip
    assert double_actives(handover) == []
    # nn2 answered active between two active answers of nn1: both were active at once.
    overlap = samples(("nn1", "active"), ("nn2", "active"), ("nn1", "active"))
    assert len(double_actives(overlap)) == 1


# ---- 1. kill -9 the active NameNode under load (default run) --------------------------------------
# Expected duration: ~10 s (ZooKeeper ~1 s, cluster and controllers ~6 s, failover < 1 s).
# With pipelined syncs on (issue 23: up to 4 syncs in flight, 4 clients), the kill falls
# in the middle of batches in flight: no acknowledged mkdirs may be lost.
def test_kill_active_namenode_fails_over_without_a_command(zk_server, make_cluster) -> None:
    cluster = make_cluster(
        zk_server.connect_string, **{"dfs.namenode.edits.sync.pipeline.depth": 4}
    )
    with explained(cluster):
        active, standby = wait_one_active(cluster)
        watcher = StateWatcher(cluster)
        load = HistoryLoad(cluster, threads=4, max_ops=3000, seconds=90)
        try:
            load.wait_acks(30, 30, what=f"on {active}")
            killed_at = time.monotonic()
            cluster.namenode(active).kill(signal.SIGKILL)
            wait_until(becomes_active(cluster, standby), 30, f"{standby} to become active")
            failover_s = time.monotonic() - killed_at
            load.wait_acks(30, 30, since=time.monotonic(), what=f"on {standby} after failover")
        finally:
            load.stop()
            watcher.stop()
        assert re.search(
            rf"Successfully transitioned NameNode {standby} at \S+ to active state",
            log_since(cluster.zkfc_log_path(standby)),
        )
        print(f"failover after {failover_s:.2f}s")
        assert "Edit log syncs pipelined: up to 4 in flight" in log_since(cluster.log_path(active))
        assert_history(cluster, load)
        assert watcher.double_actives() == []


# ---- 8. haadmin with automatic failover on (default run) ------------------------------------------
# Expected duration: ~10 s (cluster ~7 s, two haadmin runs ~2 s).
def test_haadmin_goes_through_the_controllers(zk_server, make_cluster) -> None:
    cluster = make_cluster(zk_server.connect_string)
    with explained(cluster):
        active, standby = wait_one_active(cluster)
        before = {active: "active", standby: "standby"}
        problems = []
        # The controllers own the HA state: a plain manual transition is refused.
        manual = cluster.run_hdfs("haadmin", "-transitionToActive", standby)
        lines = manual.stderr.strip().splitlines()
        if manual.returncode != 1 or len(lines) != 1 or "--forcemanual" not in manual.stderr:
            problems.append(
                f"-transitionToActive {standby} without --forcemanual: expected exit 1 and one "
                f"line naming --forcemanual, got exit {manual.returncode}, stderr "
                f"{manual.stderr.strip()!r}"
            )
        if (states := quick_states(cluster)) != before:
            problems.append(f"-transitionToActive changed the states: {states}")
        # -failover asks the target's controller (gracefulFailover), which has the
        # active's controller cede, wins the lock and promotes its NameNode.
        failover = cluster.run_hdfs("haadmin", "-failover", active, standby)
        if failover.returncode != 0 or not re.search(r"Failover to .+ successful", failover.stdout):
            problems.append(
                f"-failover {active} {standby}: expected exit 0 and 'Failover to ... "
                f"successful', got exit {failover.returncode}, stdout "
                f"{failover.stdout.strip()!r}, stderr {failover.stderr.strip()!r}"
            )
        else:
            after = quick_states(cluster)
            if after != {active: "standby", standby: "active"}:
                problems.append(f"after -failover {active} {standby}: states {after}")
            with cluster.client(timeout_s=10) as fs:
                if not fs.mkdirs("/after-failover"):
                    problems.append("mkdirs after the failover was not acknowledged")
        assert not problems, "\n".join(problems)
        # Each controller stops on SIGTERM, saying so (what quickstart --auto-failover checks).
        for nnid in (active, standby):
            cluster.stop_zkfc(nnid)
            assert "Received signal 15" in cluster.zkfc_log_path(nnid).read_text(), nnid


@pytest.mark.slow
def test_three_namenodes_each_with_a_controller(zk_server, make_cluster) -> None:
    """Issue 37 item 1: nn1, nn2, nn3 and three controllers. haadmin -failover to the last
    standby (every other controller cedes first), then kill -9 of that active: one of the
    two others takes over (after fencing), the third stays standby, nothing acknowledged
    is lost."""
    cluster = make_cluster(zk_server.connect_string, num_namenodes=3)
    with explained(cluster):
        active, _ = wait_one_active(cluster, 60)
        target = [n for n in cluster.nnids if n != active][-1]
        with cluster.client(timeout_s=10) as fs:
            assert fs.mkdirs("/before-failover")
        failover = cluster.run_hdfs("haadmin", "-failover", active, target)
        assert failover.returncode == 0, failover.stderr
        assert re.search(r"Failover to .+ successful", failover.stdout), failover.stdout
        assert wait_one_active(cluster, 60)[0] == target
        with cluster.client(timeout_s=10) as fs:
            assert fs.mkdirs("/on-target")
        cluster.namenode(target).kill(signal.SIGKILL)
        rest = [n for n in cluster.nnids if n != target]

        def one_of_the_rest_active() -> bool:
            states = quick_states(cluster)
            return sorted(states[n] for n in rest) == ["active", "standby"]

        wait_until(one_of_the_rest_active, 60, f"one of {rest} active after kill -9 of {target}")
        assert quick_states(cluster)[target] == "unreachable"
        with cluster.client(timeout_s=10) as fs:
            for path in ("/before-failover", "/on-target"):
                assert fs.get_file_info(path) is not None, path
            assert fs.mkdirs("/after-kill")


# ---- 1c. kill -9 of the active beside an observer (issue 37 item 6) -------------------------------
# Expected duration: ~25 s (three NameNodes and controllers ~10 s, the observer watched 5 s).
#: An observer with automatic failover (docs/ha.md "Observers and automatic failover").
OBSERVER_PROPERTIES = {
    "dfs.ha.tail-edits.in-progress": "true",
    "dfs.namenode.state.context.enabled": "true",
    "ipc.client.connection.maxidletime": "500",
}
#: How long the observer's state is watched after its controller left the election.
OBSERVER_WATCH_S = 5.0
OBSERVER_PROVIDER = "org.apache.hadoop.hdfs.server.namenode.ha.ObserverReadProxyProvider"


class ObserverReader:
    """One client of the observer read proxy: mkdirs (to the active) then getFileInfo of it
    (to an observer), in a loop until stopped; records each acknowledged path and each read
    that did not see the client's own write."""

    def __init__(self, cluster: MiniHACluster) -> None:
        conf = cluster.client_conf()
        conf.set(f"dfs.client.failover.proxy.provider.{NAMESERVICE}", OBSERVER_PROVIDER)
        self.proxy = namenode_proxy_from_conf(conf, timeout_s=CALL_TIMEOUT_S)
        self.acked: list[str] = []
        self.stale: list[str] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="observer-reader")
        self._thread.start()

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            path = f"/observed/d{i}"
            try:
                if self.proxy.mkdirs(path):
                    self.acked.append(path)
                    if self.proxy.get_file_info(path) is None:
                        self.stale.append(path)
            except Exception as e:  # noqa: BLE001 - through a failover: tried again
                self.errors.append(f"{path}: {e}")
            i += 1

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.proxy.close()


@pytest.mark.slow
def test_kill_active_beside_an_observer_promotes_the_standby(zk_server, make_cluster) -> None:
    """nn1..nn3 with their controllers, one standby made an observer: its controller leaves
    the election. kill -9 of the active: the standby becomes active, the observer never
    does and serves the reads of the observer read proxy before and after (its reads see
    the client's own writes, the new active's included); every acknowledged mkdir is on
    the new active."""
    cluster = make_cluster(zk_server.connect_string, num_namenodes=3, **OBSERVER_PROPERTIES)
    with explained(cluster):
        active, _ = wait_one_active(cluster, 60)
        standby, observer = [n for n in cluster.nnids if n != active]
        zkfc_off = log_offset(cluster.zkfc_log_path(observer))
        with cluster.proxy(observer, timeout_s=10) as proxy:
            proxy.transition_to_observer(forced=True)
        wait_log(
            cluster.zkfc_log_path(observer),
            r"is in observer state: it does not participate in active master election",
            zkfc_off,
            30,
            f"{observer}'s controller to leave the election",
        )
        # Long enough for a controller that took it for a standby gone astray to quit, wait
        # out its bad-state bar, rejoin and make it a standby (three health polls and 1 s).
        watch_states(
            cluster,
            OBSERVER_WATCH_S,
            lambda states: None if states[observer] == "observer" else "no longer an observer",
        )
        watcher = StateWatcher(cluster)
        load = HistoryLoad(cluster, threads=2, max_ops=3000, seconds=90)
        reader = ObserverReader(cluster)
        try:
            load.wait_acks(30, 30, what=f"on {active}")
            wait_until(lambda: reader.proxy.observer_reads >= 20, 30, "reads from the observer")
            cluster.namenode(active).kill(signal.SIGKILL)
            wait_until(becomes_active(cluster, standby), 30, f"{standby} to become active")
            assert quick_states(cluster)[observer] == "observer"
            after = reader.proxy.observer_reads
            acked_after = len(reader.acked)
            load.wait_acks(30, 30, since=time.monotonic(), what=f"on {standby} after failover")
            wait_until(
                lambda: (
                    reader.proxy.observer_reads >= after + 20
                    and len(reader.acked) >= acked_after + 20
                ),
                30,
                "reads from the observer after the failover",
            )
        finally:
            reader.stop()
            load.stop()
            watcher.stop()
        assert quick_states(cluster)[observer] == "observer"
        assert reader.stale == [], f"reads older than the client's own write: {reader.stale}"
        assert_history(cluster, load)
        assert watcher.double_actives() == []
        with cluster.proxy(standby, timeout_s=10) as fs:
            missing = [p for p in reader.acked if fs.get_file_info(p) is None]
        assert missing == [], f"acknowledged mkdirs lost: {missing}"
        assert not re.search(
            rf"Successfully transitioned NameNode {observer} at \S+ to active state",
            log_since(cluster.zkfc_log_path(observer)),
        )
        print(
            f"observer reads {reader.proxy.observer_reads}, active reads "
            f"{reader.proxy.active_reads}, acked {len(reader.acked)}"
        )


# ---- 2. kill -9 the active's controller -----------------------------------------------------------
# Expected duration: ~15 s (the failover waits ~3 s for the session to expire).
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_kill_active_controller_session_expires_graceful_fence(zk_server, make_cluster) -> None:
    cluster = make_cluster(zk_server.connect_string)
    with explained(cluster):
        active, standby = wait_one_active(cluster)
        zkfc_off = log_offset(cluster.zkfc_log_path(standby))
        nn_off = log_offset(cluster.log_path(active))
        watcher = StateWatcher(cluster)
        load = HistoryLoad(cluster, threads=2, max_ops=3000, seconds=120)
        try:
            load.wait_acks(30, 30, what=f"on {active}")
            killed_at = time.monotonic()
            cluster.zkfc(active).kill(signal.SIGKILL)
            wait_until(becomes_active(cluster, standby), 30, f"{standby} to become active")
            failover_s = time.monotonic() - killed_at
            load.wait_acks(30, 30, since=time.monotonic(), what=f"on {standby} after failover")
        finally:
            load.stop()
            watcher.stop()
        print(f"failover after {failover_s:.2f}s")
        fence_log = log_since(cluster.zkfc_log_path(standby), zkfc_off)
        # The standby took the lock only once it was gone (the dead controller's session
        # expired), and then fenced the old active gracefully: asked, and it stood down.
        assert re.search(r"The lock \S+ was deleted: trying to take it", fence_log), fence_log
        assert f"Should fence: NameNode {active} " in fence_log
        assert re.search(
            rf"Successfully transitioned NameNode {active} at \S+ to standby state without "
            "fencing",
            fence_log,
        )
        assert "Transitioning to standby" in log_since(cluster.log_path(active), nn_off)
        assert cluster.namenode(active).popen.poll() is None, f"{active} exited"
        assert quick_states(cluster) == {active: "standby", standby: "active"}
        assert watcher.double_actives() == []
        assert_history(cluster, load)
        # Its controller restarted joins as a standby candidate; nothing changes.
        restart_off = log_offset(cluster.zkfc_log_path(active))
        cluster.start_zkfc(active)
        wait_log(
            cluster.zkfc_log_path(active),
            rf"NameNode {active} at \S+ should become standby",
            restart_off,
            30,
            f"the restarted controller of {active} to join as standby",
        )
        assert quick_states(cluster) == {active: "standby", standby: "active"}


# ---- 3 and 4. a frozen active (and a frozen host) -------------------------------------------------
def deposed_active_cannot_write(cluster: MiniHACluster, freeze_controller: bool) -> None:
    """Freeze the active NameNode (and its controller) past the timeouts under load; the
    standby takes over; resumed, the old active acknowledges nothing, the JournalNodes
    refuse its old epoch, and it ends standby or exits."""
    active, standby = wait_one_active(cluster)
    zkfc_off = log_offset(cluster.zkfc_log_path(standby))
    jn_logs = journal_logs(cluster)
    jn_offsets = [log_offset(path) for path in jn_logs]
    frozen = [cluster.namenode(active)]
    if freeze_controller:
        frozen.append(cluster.zkfc(active))
    load = HistoryLoad(cluster, threads=2, max_ops=3000, seconds=150)
    pinned: PinnedWriter | None = None
    try:
        load.wait_acks(30, 30, what=f"on {active}")
        frozen_at = time.monotonic()
        for process in frozen:
            process.kill(signal.SIGSTOP)
        try:
            wait_until(becomes_active(cluster, standby), 45, f"{standby} to become active")
            failover_s = time.monotonic() - frozen_at
            load.wait_acks(20, 30, since=time.monotonic(), what=f"on {standby} after failover")
            # A client of the frozen NameNode alone: its first mkdirs waits in the socket
            # and is the first thing the old active reads when it resumes.
            pinned = PinnedWriter(cluster, active)
            wait_until(pinned.started.is_set, 10, "the pinned client's first call")
        finally:
            for process in frozen:
                process.kill(signal.SIGCONT)
        resumed_at = time.monotonic()
        ending: list[str] = []

        def stood_down() -> bool:
            node = cluster.namenode(active)
            if node.popen.poll() is not None:
                ending.append(f"exited with status {node.popen.returncode}")
            elif quick_states(cluster)[active] == "standby":
                ending.append("standby")
            return bool(ending)

        wait_until(stood_down, 60, f"the resumed {active} to become standby or exit")
        pinned.stop()
        load.wait_acks(10, 30, since=resumed_at, what=f"on {standby} after the resume")
    finally:
        if pinned is not None:
            pinned.stop()
        load.stop()
    print(f"failover after {failover_s:.2f}s; {active} ended {ending}; pinned {pinned.results}")
    # The takeover went through fencing: the lock went (health timeout or session expiry),
    # the frozen old active never answered the graceful request, a fencing method ran.
    fence_log = log_since(cluster.zkfc_log_path(standby), zkfc_off)
    assert re.search(r"The lock \S+ was deleted: trying to take it", fence_log), fence_log
    assert re.search(rf"Unable to gracefully make NameNode {active} at \S+ standby", fence_log)
    assert "====== Fencing successful by method" in fence_log, fence_log
    assert pinned.results, "the pinned client made no call"
    assert pinned.acked == [], f"the deposed {active} acknowledged writes: {pinned.results}"
    refused = [
        path.name
        for path, offset in zip(jn_logs, jn_offsets)
        if EPOCH_REFUSED.search(log_since(path, offset))
    ]
    assert len(refused) >= 2, (
        f"a majority of JournalNodes should have refused {active}'s old epoch; refused in "
        f"{refused}; {active} ended {ending}; pinned results {pinned.results}"
    )
    assert quick_states(cluster)[standby] == "active"
    with cluster.proxy(standby, timeout_s=10) as proxy:
        landed = [path for path, _ in pinned.results if proxy.get_file_info(path) is not None]
    assert landed == [], f"writes sent to the deposed {active} reached {standby}: {landed}"
    assert_history(cluster, load)


# Expected duration: ~18 s each (the NameNode alone: health RPC timeout 3 s; a frozen host:
# session timeout 3 s; then the graceful fence timeout 2 s).
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("freeze_controller", [False, True], ids=["namenode", "host"])
def test_frozen_active_is_fenced(zk_server, make_cluster, freeze_controller: bool) -> None:
    cluster = make_cluster(zk_server.connect_string)
    with explained(cluster, journal_logs(cluster)):
        deposed_active_cannot_write(cluster, freeze_controller=freeze_controller)


# ---- 5. the active loses its journal quorum ------------------------------------------------------
# Expected duration: ~27 s (10 s watched without a quorum).
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_journal_quorum_loss_then_standby_takes_over(zk_server, make_cluster) -> None:
    cluster = make_cluster(zk_server.connect_string)
    with explained(cluster, journal_logs(cluster)):
        active, standby = wait_one_active(cluster)
        load = HistoryLoad(cluster, threads=2, max_ops=3000, seconds=180)
        try:
            load.wait_acks(30, 30, what=f"on {active}")
            cluster.journal_nodes.kill_journal_node(0)
            cluster.journal_nodes.kill_journal_node(1)
            node = cluster.namenode(active)
            wait_until(lambda: node.popen.poll() is not None, 60, f"{active} to abort")
            # No quorum, no active: watch for a while (bounded).
            watch_states(
                cluster,
                NO_ACTIVE_WATCH_S,
                lambda s: (
                    "an active without a quorum"
                    if "active" in s.values()
                    else f"{standby} exited"
                    if cluster.namenode(standby).popen.poll() is not None
                    else None
                ),
            )
            assert cluster.namenode(standby).popen.poll() is None, f"{standby} exited"
            restored_at = time.monotonic()
            cluster.journal_nodes.restart_journal_node(0)
            cluster.journal_nodes.restart_journal_node(1)
            wait_until(becomes_active(cluster, standby), 60, f"{standby} to become active")
            load.wait_acks(20, 60, since=time.monotonic(), what=f"on {standby}")
        finally:
            load.stop()
        assert node.popen.returncode == 1
        assert "Could not sync enough journals" in log_since(cluster.log_path(active))
        # Nothing was acknowledged while no quorum existed.
        assert load.acks_between(restored_at - NO_ACTIVE_WATCH_S, restored_at) == 0
        assert_history(cluster, load)


# ---- 6. ZooKeeper servers lost ---------------------------------------------------------------------
def zkfc_settled(cluster: MiniHACluster, nnid: str, offset: int) -> bool:
    """Has ``nnid``'s controller acted on the lock (made its NameNode active or standby)
    since its last loss of ZooKeeper after ``offset`` — or lost nothing? A controller
    back in touch re-asserts its role; a test that cuts ZooKeeper again in the middle of
    that tests something else (see ActiveStandbyElector._become_active)."""
    text = log_since(cluster.zkfc_log_path(nnid), offset)
    lost = [m.end() for m in ZK_DISCONNECTED.finditer(text)]
    acted = [
        m.end()
        for m in re.finditer(
            rf"Successfully transitioned NameNode {nnid} at \S+ to (active|standby) state", text
        )
    ]
    return not lost or (bool(acted) and acted[-1] > lost[-1])


def wait_settled(cluster: MiniHACluster, offsets: dict[str, int], what: str) -> None:
    for nnid in NNIDS:
        wait_until(
            lambda nnid=nnid: zkfc_settled(cluster, nnid, offsets[nnid]),
            60,
            f"{nnid}'s controller to act on the lock again {what}",
        )


# Expected duration: ~35 s (an ensemble of 3 JVMs, 10 s watched without ZooKeeper).
@pytest.mark.slow
@pytest.mark.timeout(400)
def test_zookeeper_servers_lost(zk_ensemble, make_cluster) -> None:
    cluster = make_cluster(zk_ensemble.connect_string)
    zk_logs = [zk_ensemble.log_path(i) for i in range(zk_ensemble.num_servers)]
    with explained(cluster, zk_logs, extra_lines=8):
        active, standby = wait_one_active(cluster)
        unchanged = {active: "active", standby: "standby"}
        offsets = {nnid: log_offset(cluster.zkfc_log_path(nnid)) for nnid in NNIDS}
        watcher = StateWatcher(cluster)
        load = HistoryLoad(cluster, threads=2, max_ops=6000, seconds=240)
        try:
            load.wait_acks(30, 30, what=f"on {active}")
            # 1. One server of three — the leader — is lost: nothing changes.
            leader = zk_ensemble.leader()
            assert leader is not None
            one_lost_at = time.monotonic()
            zk_ensemble.kill_server(leader)
            wait_until(lambda: zk_ensemble.leader() is not None, 30, "a new ZooKeeper leader")
            for i in range(zk_ensemble.num_servers):
                if i != leader:
                    zk_ensemble.wait_serving(i, timeout_s=30)
            wait_settled(cluster, offsets, "after the leader's loss")
            load.wait_acks(30, 30, since=one_lost_at, what="with one ZooKeeper server lost")
            assert quick_states(cluster) == unchanged
            # The active's controller may re-assert its own lock after a reconnection; the
            # standby's fences nobody and promotes nothing.
            standby_log = log_since(cluster.zkfc_log_path(standby), offsets[standby])
            assert "Should fence" not in standby_log
            assert "should become active" not in standby_log
            # 2. The whole ensemble is lost: the active serves on, nobody else steps up.
            all_lost_at = time.monotonic()
            for i in range(zk_ensemble.num_servers):
                zk_ensemble.kill_server(i)
            watch_states(
                cluster,
                NO_ACTIVE_WATCH_S,
                lambda s: None if s == unchanged else "the states changed without ZooKeeper",
            )
            served = load.acks_between(all_lost_at, time.monotonic())
            assert served >= 10, f"only {served} mkdirs acknowledged without ZooKeeper"
            # 3. The ensemble is back: still exactly one active.
            back_offsets = {nnid: log_offset(cluster.zkfc_log_path(nnid)) for nnid in NNIDS}
            back_at = time.monotonic()
            for i in range(zk_ensemble.num_servers):
                zk_ensemble.start_server(i, wait=False)
            zk_ensemble.wait_serving(timeout_s=60)
            wait_settled(cluster, back_offsets, "with the ensemble back")
            wait_one_active(cluster, 30)
            # A session the restarted ensemble expires late (a slow machine: seen in a
            # whole -m slow run) sends its controller back to standby, and the lock of the
            # session it lost stays until ZooKeeper deletes it: nobody is active for that
            # moment, as in Hadoop. Never two (the watcher checks throughout), and one again.
            watch_states(
                cluster,
                5.0,
                lambda s: (
                    None
                    if list(s.values()).count("active") <= 1
                    else "two actives after the ensemble came back"
                ),
            )
            wait_one_active(cluster, 30)
            load.wait_acks(20, 30, since=back_at, what="with the ensemble back")
        finally:
            load.stop()
            watcher.stop()
        assert watcher.double_actives() == []
        assert_history(cluster, load)


# ---- 7. the active restarted again and again ----------------------------------------------------
# Expected duration: ~2.5 s per round, ~37 s for 10 rounds.
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_active_restarted_in_a_loop(zk_server, make_cluster) -> None:
    # The standby checkpoints every 1000 txns: a restarted NameNode loads a recent image
    # rather than every edit since the format (rounds would grow with the load).
    cluster = make_cluster(zk_server.connect_string, **{"dfs.namenode.checkpoint.txns": 1000})
    with explained(cluster):
        watcher = StateWatcher(cluster)
        load = HistoryLoad(cluster, threads=2, max_ops=20000, seconds=800)
        loop_deadline = time.monotonic() + 700
        round_times = []
        try:
            load.wait_acks(20, 30, what="before the first restart")
            for r in range(RESTART_ROUNDS):
                assert time.monotonic() < loop_deadline, f"only {r} rounds in time: {round_times}"
                started = time.monotonic()
                active, standby = wait_one_active(cluster)
                zkfc_off = log_offset(cluster.zkfc_log_path(active))
                cluster.namenode(active).kill(signal.SIGKILL)
                wait_until(becomes_active(cluster, standby), 30, f"round {r}: {standby} active")
                failed_over_at = time.monotonic()
                cluster.start_namenode(active)
                restarted_at = time.monotonic()
                wait_log(
                    cluster.zkfc_log_path(active),
                    rf"NameNode {active} at \S+ should become standby",
                    zkfc_off,
                    30,
                    f"round {r}: the restarted {active} back in the election as standby",
                )
                rejoined_at = time.monotonic()
                assert quick_states(cluster) == {active: "standby", standby: "active"}, r
                load.wait_acks(10, 30, since=failed_over_at, what=f"round {r}: on {standby}")
                checked_at = time.monotonic()
                report = check_history(cluster, load)
                assert not report.lost, f"round {r}: {report}"
                now = time.monotonic()
                # (failover, NameNode restart, controller rejoin, history check, round) in s
                round_times.append(
                    tuple(
                        round(t, 1)
                        for t in (
                            failed_over_at - started,
                            restarted_at - failed_over_at,
                            rejoined_at - restarted_at,
                            now - checked_at,
                            now - started,
                        )
                    )
                )
        finally:
            load.stop()
            watcher.stop()
        assert watcher.double_actives() == []
        assert_history(cluster, load)
        print(f"restart rounds (s): {round_times}")


# ---- wrong ZooKeeper credentials ---------------------------------------------------------------
# Expected duration: ~10 s.
@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_zkfc_with_wrong_credentials_cannot_take_the_lock(zk_server, tmp_path: Path) -> None:
    from kazoo.client import KazooClient

    from hadoop_qjm.ha.election_rules import digest_acl_id

    acl = f"digest:{digest_acl_id('hdfs-zkfcs:secret')}:rwcda"
    cluster = MiniHACluster(
        tmp_path / "cluster",
        zookeeper=zk_server.connect_string,
        properties={"ha.zookeeper.acl": acl, "ha.zookeeper.auth": "digest:hdfs-zkfcs:secret"},
    )
    try:
        assert cluster.format_zk().returncode == 0
        # nn1 is healthy, so its controller joins the election, and ZooKeeper refuses it.
        result = cluster.run_hdfs(
            "-D",
            "ha.zookeeper.auth=digest:hdfs-zkfcs:wrong",
            "zkfc",
            "-nnid",
            "nn1",
            timeout_s=120,
        )
        assert result.returncode == 1, result.stdout + result.stderr
        last = result.stderr.strip().splitlines()[-1]
        assert last.startswith("zkfc: ZK Failover Controller failed:") and "NOAUTH" in last, last
        assert "Traceback" not in result.stderr
        client = KazooClient(
            hosts=zk_server.connect_string, auth_data=[("digest", "hdfs-zkfcs:secret")]
        )
        client.start(10)
        try:
            assert client.get_children("/hadoop-ha/mycluster") == []  # no lock, no breadcrumb
        finally:
            client.stop()
            client.close()
        assert cluster.states() == {"nn1": "standby", "nn2": "standby"}
    finally:
        cluster.shutdown()
