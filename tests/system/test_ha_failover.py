"""HA failover with real processes: a MiniHACluster (3 JournalNode processes, NameNode
processes nn1 and nn2, both started in standby).

* failover under load: a client streams mkdirs through the failover proxy; the active is
  frozen (SIGSTOP), the standby made active; resumed (SIGCONT), the old active's next sync
  is refused by the JournalNodes (the new epoch fences it) and it exits with status 1 —
  and every acknowledged mkdirs is on the new active::

      nn1  active ──SIGSTOP── (frozen) ──SIGCONT── sync refused: epoch 1 < 2 ── exit 1
      nn2  standby ──────── transitionToActive (epoch 2) ── serves the client ──────▶

* a majority of JournalNodes SIGKILLed: the active's next sync fails and it exits with
  status 1; the standby retries its tailing and stays up;
* ``haadmin -failover`` nn1 → nn2 → nn1 with writes in between; the standby catches up;
* the standby's checkpoints reach both name directories.

Each test has a short default version and a longer ``slow`` one. Every process is
stopped by its pid (MiniHACluster.shutdown in a fixture); waits poll with deadlines.
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_ha_cluster import MiniHACluster

pytestmark = pytest.mark.timeout(120)

#: The failover client's per-call bound: a call to a frozen NameNode fails over after it.
CALL_TIMEOUT_S = 2.0
FENCED = "Could not sync enough journals to persistent storage"
CHECKPOINT = "Saved a checkpoint at txid"
TAIL_ERRORS = re.compile(r"Unable to determine input streams from|Error while reading edits")


@pytest.fixture
def make_cluster(tmp_path: Path) -> Iterator[Callable[..., MiniHACluster]]:
    clusters: list[MiniHACluster] = []

    def make(**properties: object) -> MiniHACluster:
        cluster = MiniHACluster(tmp_path / f"cluster{len(clusters)}", properties=properties)
        clusters.append(cluster)
        return cluster

    try:
        yield make
    finally:
        for cluster in clusters:
            cluster.shutdown()


def wait_exit(cluster: MiniHACluster, nnid: str, timeout_s: float = 60.0) -> tuple[int, str]:
    """Wait (bounded) for NameNode ``nnid`` to exit; its status and its log."""
    node = cluster.namenode(nnid)
    status = node.popen.wait(timeout_s)
    return status, node.log_path.read_text(errors="replace")


def images(cluster: MiniHACluster, nnid: str) -> list[int]:
    """The txids of the fsimage files in ``nnid``'s name directory."""
    current = cluster.name_dir(nnid) / "current"
    return sorted(
        int(m.group(1))
        for p in current.iterdir()
        if (m := re.fullmatch(r"fsimage_(\d{19})", p.name))
    )


class LoadClient:
    """Threads streaming ``mkdirs /load/<thread>/<i>`` through the failover proxy, bounded in
    count and time; ``acked`` holds every call that returned True, in order."""

    def __init__(self, cluster: MiniHACluster, threads: int, max_ops: int, seconds: float):
        self.acked: list[str] = []
        self.errors: list[BaseException] = []
        self.clients = [cluster.client(timeout_s=CALL_TIMEOUT_S) for _ in range(threads)]
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._deadline = time.monotonic() + seconds
        self._threads = [
            threading.Thread(target=self._run, args=(i, max_ops), daemon=True)
            for i in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def _run(self, n: int, max_ops: int) -> None:
        fs = self.clients[n]
        for i in range(max_ops):
            if self._stop.is_set() or time.monotonic() > self._deadline:
                return
            path = f"/load/{n}/{i}"
            try:
                ok = fs.mkdirs(path)
            except Exception as e:  # noqa: BLE001 - recorded; the test decides
                with self._lock:
                    self.errors.append(e)
                continue
            if ok:
                with self._lock:
                    self.acked.append(path)

    def count(self) -> int:
        with self._lock:
            return len(self.acked)

    def stop(self) -> list[str]:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)
            assert not thread.is_alive(), "a load client did not stop"
        for fs in self.clients:
            fs.close()
        return list(self.acked)


def fail_over_under_load(cluster: MiniHACluster, threads: int, before: int, after: int) -> None:
    cluster.transition_to_active("nn1")
    load = LoadClient(cluster, threads, max_ops=before + after + 500, seconds=60)
    try:
        wait_until(lambda: load.count() >= before, 30, f"{before} mkdirs on nn1")
        nn1 = cluster.namenode("nn1")
        nn1.kill(signal.SIGSTOP)
        try:
            frozen_at = load.count()
            cluster.transition_to_active("nn2")
            wait_until(lambda: load.count() >= frozen_at + after, 60, f"{after} mkdirs on nn2")
        finally:
            nn1.kill(signal.SIGCONT)
        # Resumed, nn1 still believes it is active; its next sync meets epoch 2.
        try:
            with cluster.proxy("nn1", timeout_s=30) as p1:
                p1.mkdirs("/fenced")
        except Exception:  # noqa: BLE001, S110 - it dies answering (or already died)
            pass
        status, log = wait_exit(cluster, "nn1")
        assert status == 1, log[-2000:]
        assert FENCED in log and "epoch" in log, log[-2000:]
        served_by_nn2 = load.count() - frozen_at
    finally:
        acked = load.stop()
    assert served_by_nn2 >= after
    assert all(fs.current.nnid == "nn2" for fs in load.clients)
    assert cluster.service_state("nn2") == "active"
    with cluster.proxy("nn2") as p2:
        missing = [path for path in acked if p2.get_file_info(path) is None]
        assert missing == [], f"{len(missing)} acknowledged mkdirs lost, e.g. {missing[:5]}"
        assert p2.get_file_info("/fenced") is None


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_failover_under_load_long(make_cluster) -> None:
    fail_over_under_load(make_cluster(), threads=4, before=400, after=400)


def lose_journal_majority(cluster: MiniHACluster, under_load: bool) -> None:
    cluster.transition_to_active("nn1")
    with cluster.proxy("nn1", timeout_s=30) as p1:
        assert p1.mkdirs("/before")
    load = LoadClient(cluster, 2, max_ops=5000, seconds=60) if under_load else None
    try:
        if load is not None:
            wait_until(lambda: load.count() >= 50, 30, "load on nn1")
        cluster.journal_nodes.kill_journal_node(0)
        cluster.journal_nodes.kill_journal_node(1)
        with cluster.proxy("nn1", timeout_s=60) as p1:
            with pytest.raises(Exception):  # noqa: B017 - the call fails either way
                p1.mkdirs("/after")
        status, log = wait_exit(cluster, "nn1")
    finally:
        acked = load.stop() if load is not None else []
    assert status == 1, log[-2000:]
    assert FENCED in log, log[-2000:]
    # The standby keeps going: its tailing rounds fail (the journal is skipped, or the read
    # fails) and are retried.
    standby_log = cluster.namenode("nn2").log_path
    wait_until(
        lambda: TAIL_ERRORS.search(standby_log.read_text(errors="replace")),
        30,
        "the standby to meet the lost quorum",
    )
    assert cluster.namenode("nn2").popen.poll() is None
    assert cluster.service_state("nn2") == "standby"
    if under_load:
        # With the JournalNodes back, the standby takes over with every acknowledged edit.
        cluster.journal_nodes.restart_journal_node(0)
        cluster.journal_nodes.restart_journal_node(1)
        cluster.transition_to_active("nn2")
        with cluster.proxy("nn2") as p2:
            assert p2.get_file_info("/before") is not None
            # "/after" was never acknowledged: if its txn reached the surviving JournalNode,
            # recovery may keep it (the longest copy wins), else not. Either is allowed.
            missing = [path for path in acked if p2.get_file_info(path) is None]
            assert missing == [], f"{len(missing)} acknowledged mkdirs lost"


def test_majority_of_journal_nodes_killed(make_cluster) -> None:
    lose_journal_majority(make_cluster(), under_load=False)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_majority_of_journal_nodes_killed_under_load(make_cluster) -> None:
    lose_journal_majority(make_cluster(), under_load=True)


def failover_and_back(cluster: MiniHACluster, rounds: int, per_round: int) -> None:
    cluster.transition_to_active("nn1")
    acked: list[str] = []
    active, standby = "nn1", "nn2"
    with cluster.client(timeout_s=30) as fs:
        for r in range(rounds):
            for i in range(per_round):
                path = f"/r{r}/d{i}"
                assert fs.mkdirs(path)
                acked.append(path)
            # The standby tails up to the active's last txid.
            with cluster.proxy(active) as pa, cluster.proxy(standby) as ps:
                last = pa.get_transaction_id()
                wait_until(
                    lambda last=last: ps.get_transaction_id() >= last, 30, f"{standby} to catch up"
                )
            result = cluster.run_hdfs("haadmin", "-failover", active, standby)
            assert result.returncode == 0, result.stderr
            assert f"Failover from {active} to {standby} successful" in result.stdout
            active, standby = standby, active
            assert cluster.service_state(active) == "active"
            assert cluster.service_state(standby) == "standby"
            with cluster.proxy(active) as pa:
                missing = [path for path in acked if pa.get_file_info(path) is None]
                assert missing == [], f"{active} lacks {missing[:5]}"
    listing = cluster.run_hdfs("dfs", "-ls", "/")
    assert listing.returncode == 0, listing.stderr
    assert {f"/r{r}" for r in range(rounds)} <= {
        line.split()[-1] for line in listing.stdout.splitlines() if line.startswith("d")
    }


# Slow (~24 s): failover of daemons under load runs in the default run through quickstart
# (tests/system/test_quickstart.py), and under a changing journal set in tests/ha.
@pytest.mark.slow
def test_failover_and_back_then_under_load(make_cluster) -> None:
    """One cluster for two checks (building it is most of either one's time): nn1 -> nn2 ->
    nn1 by ``haadmin -failover``, every acknowledged mkdirs kept; then nn1, active again, is
    frozen under load while nn2 takes over, and fenced when it resumes."""
    cluster = make_cluster()
    failover_and_back(cluster, rounds=2, per_round=10)
    fail_over_under_load(cluster, threads=1, before=20, after=20)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_failover_and_back_many_times(make_cluster) -> None:
    failover_and_back(make_cluster(), rounds=10, per_round=100)


def standby_checkpoints(cluster: MiniHACluster, txns: int, checkpoints: int) -> None:
    assert images(cluster, "nn1") == [0] and images(cluster, "nn2") == [0]
    cluster.transition_to_active("nn1")
    # The standby saves fsimage_N in its own name dir and uploads it to the active (each
    # keeps dfs.namenode.num.checkpoints.retained images: count the checkpoints in the log).
    # The txns go in rounds, each one more than dfs.namenode.checkpoint.txns, and each
    # round waits for its checkpoint: however fast the writes, every round makes one.
    standby_log = cluster.namenode("nn2").log_path
    per_round = txns // checkpoints
    with cluster.client(timeout_s=30) as fs:
        for round_ in range(checkpoints):
            for i in range(
                round_ * per_round, txns if round_ == checkpoints - 1 else (round_ + 1) * per_round
            ):
                assert fs.mkdirs(f"/c{i}")
            wait_until(
                lambda n=round_ + 1: standby_log.read_text(errors="replace").count(CHECKPOINT) >= n,
                60,
                f"{round_ + 1} standby checkpoint(s)",
            )
    wait_until(
        lambda: set(images(cluster, "nn2")[1:]) & set(images(cluster, "nn1")),
        60,
        "an uploaded image on the active",
    )
    uploaded = max(set(images(cluster, "nn2")) & set(images(cluster, "nn1")))
    assert uploaded > 0
    if checkpoints > 1:
        # nn1 restarted loads its newest image (the uploaded one) and the edits after it.
        cluster.stop_namenode("nn1")
        cluster.start_namenode("nn1")
        cluster.transition_to_standby("nn2")
        cluster.transition_to_active("nn1")
        with cluster.proxy("nn1") as p1:
            assert all(p1.get_file_info(f"/c{i}") is not None for i in range(txns))
        log = cluster.namenode("nn1").log_path.read_text(errors="replace")
        loaded = re.findall(r"Loaded image \S*fsimage_\d+ \(txid (\d+)\)", log)
        assert loaded and int(loaded[-1]) >= uploaded, loaded


def test_standby_checkpoints(make_cluster) -> None:
    cluster = make_cluster(
        **{"dfs.namenode.checkpoint.txns": 50, "dfs.namenode.checkpoint.check.period": "200ms"}
    )
    standby_checkpoints(cluster, txns=60, checkpoints=1)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_standby_checkpoints_many(make_cluster) -> None:
    cluster = make_cluster(
        **{"dfs.namenode.checkpoint.txns": 50, "dfs.namenode.checkpoint.check.period": "200ms"}
    )
    standby_checkpoints(cluster, txns=400, checkpoints=3)
