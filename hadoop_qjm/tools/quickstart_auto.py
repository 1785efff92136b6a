"""``hdfs-py quickstart --auto-failover``: the main job with automatic failover on ZooKeeper.

1. ZooKeeper: the ensemble ``ha.zookeeper.quorum`` names (``--config`` / ``-D``), else a
   standalone server of the installed ZooKeeper started on 127.0.0.1 (a port chosen by the
   OS). Without either it says in one line what to install.
2. Three JournalNode processes, ``namenode -format`` / ``-bootstrapStandby`` and two NameNode
   processes as in the default job — then ``zkfc -formatZK`` and one ``zkfc`` process per
   NameNode. Nobody types ``haadmin``: the controllers elect an active by themselves.
3. Clients stream mkdirs through ``hdfs://mycluster``; half-way the active NameNode is
   killed with SIGKILL. Its controller sees it gone at its next health check and leaves the
   election; the other controller wins the lock, fences the dead one (``shell(/bin/true)``:
   the new epoch on the JournalNodes is the fence) and makes its NameNode active. The job
   prints how long no NameNode acknowledged a write.
4. Checks: every acknowledged mkdir is on the new active; the killed NameNode, restarted,
   comes back as a standby and catches up; every finalized segment is byte-identical on
   the JournalNodes. Then everything is stopped by pid.
"""

from __future__ import annotations

import shutil
import signal
import tempfile
import time
from pathlib import Path

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.conf import dfs_config_keys as keys

__all__ = ["run_auto_failover"]


def _zookeeper(conf, base: Path, say):
    """``(quorum, server or None)``: the configured ensemble, else a local server."""
    from hadoop_qjm.ha.election_rules import parse_zk_quorum
    from hadoop_qjm.testing.mini_zk_cluster import MiniZooKeeperCluster, find_zookeeper

    configured = conf.get_trimmed(keys.HA_ZK_QUORUM_KEY) if conf is not None else None
    if configured:
        quorum = parse_zk_quorum(configured)
        say(f"ZooKeeper: the ensemble of {keys.HA_ZK_QUORUM_KEY}, {quorum}")
        return quorum, None
    find_zookeeper()  # one line saying what to install, before anything starts
    server = MiniZooKeeperCluster(base / "zookeeper", 1, tick_time_ms=500)
    say(
        f"Started a ZooKeeper server: pid {server.pids[0]}, {server.connect_string} "
        f"(set {keys.HA_ZK_QUORUM_KEY} to use an existing ensemble)"
    )
    return server.connect_string, server


def run_auto_failover(args, conf) -> int:
    from hadoop_qjm.testing.mini_ha_cluster import NNIDS, MiniHACluster
    from hadoop_qjm.tools.quickstart_support import (
        DEADLINE_S,
        Load,
        Web,
        check_finalized_identical,
        hdfs,
        say,
        show_pages,
        start_pair,
        wait_for,
    )

    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="hdfs-py-quickstart-"))
    started = time.monotonic()
    zk_server = cluster = load = None
    try:
        quorum, zk_server = _zookeeper(conf, base, say)
        cluster = MiniHACluster(base / "cluster", start=False, zookeeper=quorum, secure=args.secure)
        web = Web(cluster)
        jns = cluster.journal_nodes
        say(f"Started 3 JournalNode processes: {jns.quorum_journal_uri('mycluster')}")
        say(
            f"Configuration: {cluster.conf_dir / 'hdfs-site.xml'} (nameservice mycluster, "
            "dfs.ha.automatic-failover.enabled=true, dfs.ha.fencing.methods=shell(/bin/true))"
        )
        start_pair(cluster)
        hdfs(cluster, "zkfc", "-nnid", "nn1", "-formatZK", "-nonInteractive")
        for nnid in NNIDS:
            zkfc = cluster.start_zkfc(nnid)
            say(
                f"Started ZKFailoverController for {nnid}: pid {zkfc.pid}, rpc 127.0.0.1:{zkfc.rpc_port}"
            )
        active = cluster.wait_roles(timeout_s=DEADLINE_S)
        standby = next(nnid for nnid in NNIDS if nnid != active)
        say(f"The controllers made {active} active by themselves ({standby} is standby)")
        hdfs(cluster, "haadmin", "-getAllServiceState")

        load = Load(cluster, args.clients, args.ops)
        load.start()
        say(f"Streaming {args.ops} mkdirs from {args.clients} clients through hdfs://mycluster")
        load.wait_acked(args.ops // 2)
        acked_before = len(load.acked)
        victim = cluster.namenode(active)
        say(
            f"  {acked_before} acknowledged; kill -9 of the active NameNode {active} (pid {victim.pid})"
        )
        killed_at = time.monotonic()
        victim.kill(signal.SIGKILL)
        cluster.namenodes[active] = None
        cluster.wait_roles(active=standby, timeout_s=DEADLINE_S)
        took_over = time.monotonic() - killed_at
        first_ack = load.first_ack_after(killed_at, DEADLINE_S)
        say(
            f"  {standby} became active {took_over:.2f}s after the kill; the first mkdir was "
            f"acknowledged {first_ack - killed_at:.2f}s after it: no NameNode wrote for that long"
        )
        load.join()
        say(
            f"Clients: {len(load.acked)} mkdirs acknowledged, {len(load.errors)} failed "
            "(a failed call is not acknowledged)"
        )
        with cluster.proxy(standby) as new_active:
            missing = [p for p in load.acked if new_active.get_file_info(p) is None]
            if missing:
                raise IOException(
                    f"{len(missing)} acknowledged mkdirs missing on the new active: {missing[:5]}"
                )
            active_txid = new_active.get_transaction_id()
        say(
            f"{standby} (active) holds all {len(load.acked)} acknowledged dirs; last txid {active_txid}"
        )
        restarted = cluster.start_namenode(active)
        say(f"Restarted NameNode {active}: pid {restarted.pid}; its controller makes it a standby")
        cluster.wait_roles(active=standby, timeout_s=DEADLINE_S)
        with cluster.proxy(active) as old:
            wait_for(
                lambda: old.get_transaction_id() >= active_txid,
                f"{active} to reach txid {active_txid}",
            )
        say(f"{active} (standby) caught up to txid {active_txid}")
        hdfs(cluster, "haadmin", "-getAllServiceState")
        segments = check_finalized_identical(cluster)
        say(f"{segments} finalized segments byte-identical on every JournalNode that has them")
        show_pages(web, args.keep_running)
        say("Stopping the controllers, NameNodes, JournalNodes and ZooKeeper (SIGTERM)")
    finally:
        if load is not None:
            load.stop()
        if cluster is not None:
            cluster.shutdown()
        if zk_server is not None:
            zk_server.shutdown()
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    say(f"quickstart --auto-failover: OK in {time.monotonic() - started:.1f}s")
    return 0
