"""``hdfs-py bench failover --auto``: how long automatic failover leaves the nameservice without a writer.

A real ZooKeeper server, 3 JournalNode processes, two NameNode processes and their two
``zkfc`` controllers on 127.0.0.1 (:class:`~hadoop_qjm.testing.mini_ha_cluster.MiniHACluster`
with ``zookeeper=``). A client thread keeps calling ``mkdirs`` through ``hdfs://mycluster``
(each call bounded, errors retried at once). Each round, one of:

* **kill -9**: SIGKILL of the active NameNode. Its controller sees it gone at its next
  health check (``ha.health-monitor.check-interval.ms``) and leaves the election; the other
  controller takes the lock, fences (graceful: refused at once, then ``shell(/bin/true)``),
  and makes its NameNode active. Floor: the check interval.
* **frozen host**: SIGSTOP of the active NameNode *and* its controller. Nothing notices
  until the controller's ZooKeeper session expires (``ha.zookeeper.session-timeout.ms``);
  then the other controller takes the lock, tries the graceful fence (the frozen NameNode
  never answers: ``ha.failover-controller.graceful-fence.rpc-timeout.ms``), runs
  ``shell(/bin/true)`` and makes its NameNode active. Floor: the session timeout plus the
  graceful-fence timeout. The frozen pair is then resumed (the old active is fenced by
  the JournalNodes' epoch: it ends as a standby or exits) and put back as a standby.

Measured: from the signal to the first ``mkdirs`` acknowledged afterwards, p50 and max
over ``--rounds``; printed beside the floor, so what the controller itself adds shows.
Goals (printed, never asserted): kill -9 p50 ≤ 3 s with a 1 s check interval; frozen host
≤ session timeout + 2 s.
"""

from __future__ import annotations

import shutil
import signal
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hadoop_qjm.common.exceptions import HadoopException

__all__ = ["run_auto"]

GOAL_KILL_P50_S = 3.0
GOAL_FROZEN_MARGIN_S = 2.0


@dataclass
class _Writer:
    """One client thread calling mkdirs until stopped; ``(sent, acknowledged)`` times of
    every acknowledged call."""

    cluster: Any
    call_timeout_s: float
    max_ops: int

    def __post_init__(self) -> None:
        self.acks: list[tuple[float, float]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-writer", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        fs = self.cluster.client(timeout_s=self.call_timeout_s)
        try:
            for i in range(self.max_ops):
                if self._stop.is_set():
                    return
                sent = time.monotonic()
                try:
                    if fs.mkdirs(f"/bench/{i}"):
                        with self._lock:
                            self.acks.append((sent, time.monotonic()))
                except (HadoopException, OSError):
                    self._stop.wait(0.01)
        finally:
            fs.close()

    def first_ack_after(self, since: float, timeout_s: float) -> float:
        """When the first call sent after ``since`` was acknowledged (waits, bounded): a call
        already in flight at ``since`` may have been executed before it."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                later = [acked for sent, acked in self.acks[-200:] if sent > since]
            if later:
                return min(later)
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise TimeoutError(f"no mkdirs acknowledged within {timeout_s:.0f}s")
            time.sleep(0.002)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)


def _round(cluster: Any, writer: _Writer, frozen: bool, timeout_s: float) -> float:
    """One failover; returns seconds from the signal to the first acknowledgement after it."""
    active = cluster.wait_roles(timeout_s=timeout_s)
    writer.first_ack_after(time.monotonic(), timeout_s)  # the writer is writing
    other = next(nnid for nnid in cluster.namenodes if nnid != active)
    namenode, zkfc = cluster.namenode(active), cluster.zkfc(active)
    signalled = time.monotonic()
    if frozen:
        zkfc.kill(signal.SIGSTOP)
        namenode.kill(signal.SIGSTOP)
    else:
        namenode.kill(signal.SIGKILL)
        cluster.namenodes[active] = None
    took = writer.first_ack_after(signalled, timeout_s) - signalled
    if frozen:
        # The old active: resumed, fenced by the epoch; a fresh pair of processes makes it a
        # standby again whatever it did (stopping by pid, never waiting on a frozen one).
        cluster.stop_namenode(active)
        cluster.stop_zkfc(active)
        cluster.start_zkfc(active)
    cluster.start_namenode(active)
    cluster.wait_roles(active=other, timeout_s=timeout_s)
    return took


def _summary(label: str, values: list[float], floor: str, goal_s: float) -> str:
    p50, worst = statistics.median(values), max(values)
    verdict = "met" if (p50 if label.startswith("kill") else worst) <= goal_s else "NOT met"
    return (
        f"  {label}: p50 {p50:.2f} s  max {worst:.2f} s over {len(values)} rounds "
        f"(floor: {floor}; goal {'p50' if label.startswith('kill') else 'max'} ≤ {goal_s:g} s: "
        f"{verdict})"
    )


def run_auto(args: Any) -> int:
    from hadoop_qjm.testing.mini_ha_cluster import MiniHACluster
    from hadoop_qjm.testing.mini_zk_cluster import MiniZooKeeperCluster

    properties = {
        "ha.health-monitor.check-interval.ms": args.check_interval_ms,
        "ha.zookeeper.session-timeout.ms": args.session_timeout_ms,
        "ha.failover-controller.graceful-fence.rpc-timeout.ms": args.graceful_fence_ms,
    }
    base = Path(tempfile.mkdtemp(prefix="bench-failover-auto-", dir=args.dir))
    kills: list[float] = []
    frozen: list[float] = []
    try:
        with MiniZooKeeperCluster(base / "zk", 1, tick_time_ms=200) as zk:
            cluster = MiniHACluster(base / "ha", zookeeper=zk.connect_string, properties=properties)
            writer = None
            try:
                cluster.start_auto_failover(timeout_s=args.timeout)
                print(
                    f"ZooKeeper pid {zk.pids[0]}; 3 JournalNodes, nn1 and nn2 with their zkfc "
                    "controllers, all processes on 127.0.0.1"
                )
                print(
                    "settings: "
                    + ", ".join(
                        f"{k}={v}"
                        for k, v in sorted(cluster.properties.items())
                        if k.startswith(("ha.", "dfs.ha.fencing", "dfs.client.failover"))
                        and k != "ha.zookeeper.quorum"
                    )
                )
                writer = _Writer(cluster, call_timeout_s=1.0, max_ops=1_000_000)
                for i in range(args.rounds):
                    kills.append(_round(cluster, writer, False, args.timeout))
                    print(f"  round {i + 1}: kill -9 -> first write {kills[-1]:.2f} s", flush=True)
                for i in range(args.rounds):
                    frozen.append(_round(cluster, writer, True, args.timeout))
                    print(
                        f"  round {i + 1}: frozen host -> first write {frozen[-1]:.2f} s",
                        flush=True,
                    )
            finally:
                if writer is not None:
                    writer.stop()
                cluster.shutdown()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    session_s = args.session_timeout_ms / 1000
    fence_s = args.graceful_fence_ms / 1000
    print("automatic failover, signal -> first acknowledged mkdirs on the new active:")
    print(
        _summary(
            "kill -9 of the active NameNode",
            kills,
            f"check interval {args.check_interval_ms / 1000:g} s",
            GOAL_KILL_P50_S,
        )
    )
    print(
        _summary(
            "frozen host (NameNode + zkfc SIGSTOPped)",
            frozen,
            f"session timeout {session_s:g} s + graceful fence {fence_s:g} s",
            session_s + GOAL_FROZEN_MARGIN_S,
        )
    )
    return 0
