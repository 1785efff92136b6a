"""``hdfs-py quickstart``: the main job — an HA NameNode pair over 3 JournalNodes, a failover under load.

1. Three JournalNode processes start on 127.0.0.1 (ports chosen by the OS).
2. ``namenode -format`` as nn1 (its name dir and every JournalNode), nn1 starts,
   ``namenode -bootstrapStandby`` as nn2 copies nn1's image, nn2 starts (with
   ``--namenodes 3``: nn3 too). All start in standby; ``haadmin -transitionToActive nn1``
   makes nn1 the writer.
3. Client threads stream mkdirs through the nameservice (``hdfs://mycluster``: a client
   that fails over between the NameNodes). Half-way, ``haadmin -failover nn1 nn2`` (to
   the last NameNode: nn3 of three): nn1 ends its segment and becomes a standby, the
   target fences the journal with a new epoch, recovers, catches up and writes on. The
   clients get StandbyException from nn1 and move on by themselves.
4. Checks: every mkdirs acknowledged to a client exists on the new active; every standby
   catches up to the active's last txid and holds as many inodes; each finalized
   segment is byte-identical on every JournalNode that has it.
5. Prints the status-page and metrics URLs, stops everything with SIGTERM and removes the
   temporary directory — also on Ctrl-C.

``--auto-failover`` runs the job with automatic failover instead (ZooKeeper, two ``zkfc``
controllers, kill -9 of the active NameNode): :mod:`hadoop_qjm.tools.quickstart_auto`.
``--journal-only`` runs the JournalNode-level job instead (two writers and a reader over
the quorum client, no NameNode): :mod:`hadoop_qjm.tools.journal_quickstart`.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.tools.quickstart_support import (
    Load,
    Web,
    check_finalized_identical,
    hdfs,
    say,
    show_pages,
    start_pair,
    wait_for,
)

__all__ = ["run"]


def _run_ha(args, conf) -> int:
    from hadoop_qjm.testing.mini_ha_cluster import MiniHACluster

    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="hdfs-py-quickstart-"))
    started = time.monotonic()
    properties: dict[str, str] = {}
    cluster = None
    load = None
    try:
        cluster = MiniHACluster(
            base / "cluster",
            properties=properties,
            start=False,
            secure=args.secure,
            num_namenodes=args.namenodes,
        )
        target = cluster.nnids[-1]
        web = Web(cluster)
        jns = cluster.journal_nodes
        if args.secure:
            say(
                f"Secured: a test CA and certificates in {cluster.base_dir / 'pki'}; every "
                "RPC and HTTP channel is mutual TLS (HTTPS only)"
            )
        say(f"Started 3 JournalNode processes: {jns.quorum_journal_uri('mycluster')}")
        for i in range(jns.num_journal_nodes):
            say(f"  JournalNode {i}: pid {jns.nodes[i].pid}, {web.journal_node(i)}/")
        say(f"Configuration: {cluster.conf_dir / 'hdfs-site.xml'} (nameservice mycluster)")
        start_pair(cluster)
        hdfs(cluster, "haadmin", "-transitionToActive", "nn1")
        hdfs(cluster, "haadmin", "-getAllServiceState")

        load = Load(cluster, args.clients, args.ops)
        load.start()
        say(f"Streaming {args.ops} mkdirs from {args.clients} clients through hdfs://mycluster")
        load.wait_acked(args.ops // 2)
        say(f"  {len(load.acked)} acknowledged; failing over while they run:")
        failover_started = time.monotonic()
        hdfs(cluster, "haadmin", "-failover", "nn1", target)
        say(f"  failover took {time.monotonic() - failover_started:.2f}s")
        load.join()
        say(
            f"Clients: {len(load.acked)} mkdirs acknowledged, {len(load.errors)} failed "
            "(a failed call is not acknowledged)"
        )
        for error in load.errors[:3]:
            say(f"  e.g. {error[:200]}")
        hdfs(cluster, "haadmin", "-getAllServiceState")

        with cluster.proxy(target) as active:
            missing = [p for p in load.acked if active.get_file_info(p) is None]
            if missing:
                raise IOException(
                    f"{len(missing)} acknowledged mkdirs missing on the new active: {missing[:5]}"
                )
            active_txid = active.get_transaction_id()
        say(
            f"{target} (active) holds all {len(load.acked)} acknowledged dirs; "
            f"last txid {active_txid}"
        )
        inodes = web.jmx(target, "FSNamesystem")["FilesTotal"]
        for standby_id in cluster.nnids[:-1]:
            with cluster.proxy(standby_id) as standby:
                wait_for(
                    lambda: standby.get_transaction_id() >= active_txid,
                    f"{standby_id} (standby) to reach txid {active_txid}",
                )
            wait_for(
                lambda nnid=standby_id: web.jmx(nnid, "FSNamesystem")["FilesTotal"] == inodes,
                f"{standby_id}'s namespace to match the active's",
            )
            say(f"{standby_id} (standby) caught up to txid {active_txid}: {inodes} inodes")
        segments = check_finalized_identical(cluster)
        say(f"{segments} finalized segments byte-identical on every JournalNode that has them")
        show_pages(web, args.keep_running)
        say("Stopping the NameNodes and JournalNodes (SIGTERM)")
    finally:
        if load is not None:
            load.stop()
        if cluster is not None:
            cluster.shutdown()
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    say(f"quickstart: OK in {time.monotonic() - started:.1f}s")
    return 0


def run(argv, conf) -> int:
    from hadoop_qjm.common.command_line import CommandParser

    if "--journal-only" in argv:
        from hadoop_qjm.tools import journal_quickstart

        return journal_quickstart.run([a for a in argv if a != "--journal-only"], conf)
    parser = CommandParser(
        prog="hdfs-py quickstart",
        description=__doc__.split("\n\n")[0].split(": ", 1)[1].rstrip(".")
        + ". Starts 3 JournalNodes and 2 NameNodes (--namenodes) as processes on 127.0.0.1, fails over "
        "under load, checks that no acknowledged operation was lost, and stops everything.",
    )
    parser.add_argument("--ops", type=int, default=2000, help="mkdirs in all (2000)")
    parser.add_argument("--clients", type=int, default=4, help="client threads (4)")
    parser.add_argument(
        "--namenodes",
        type=int,
        default=2,
        help="NameNodes of the nameservice, 2 to 5 (2); the failover goes from nn1 to the last",
    )
    parser.add_argument(
        "--dir", default=None, help="keep the cluster's data and logs here (default: a temp dir)"
    )
    parser.add_argument(
        "--secure",
        action="store_true",
        help="run every RPC and HTTP channel over mutual TLS with a generated test CA",
    )
    parser.add_argument(
        "--auto-failover",
        action="store_true",
        help="automatic failover on ZooKeeper: two zkfc controllers, and kill -9 of the active "
        "NameNode instead of haadmin -failover (needs ZooKeeper: apt-get install zookeeper, or "
        "ha.zookeeper.quorum naming an ensemble)",
    )
    parser.add_argument(
        "--keep-running",
        action="store_true",
        help="after the checks, keep the cluster up until Ctrl-C",
    )
    parser.add_argument(
        "--journal-only",
        action="store_true",
        help="run the JournalNode-level job instead (see 'quickstart --journal-only --help')",
    )
    args = parser.parse_args(argv)
    if args.ops <= 1 or args.clients <= 0:
        parser.error("--ops must be at least 2 and --clients positive")
    if not 2 <= args.namenodes <= 5:
        parser.error("--namenodes must be 2 to 5")
    if args.namenodes != 2 and args.auto_failover:
        parser.error("--auto-failover runs two NameNodes: leave out --namenodes")
    import logging
    import os

    if not os.environ.get("HADOOP_ROOT_LOGGER"):
        # The job narrates itself; the clients' expected failover warnings would repeat it.
        logging.getLogger().setLevel(logging.ERROR)
    if args.auto_failover:
        from hadoop_qjm.tools.quickstart_auto import run_auto_failover

        return run_auto_failover(args, conf)
    return _run_ha(args, conf)
