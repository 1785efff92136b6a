"""``hdfs-py quickstart``: the main job — an HA NameNode pair over 3 JournalNodes, a failover under load.

1. Three JournalNode processes start on 127.0.0.1 (ports chosen by the OS).
2. ``namenode -format`` as nn1 (its name dir and every JournalNode), nn1 starts,
   ``namenode -bootstrapStandby`` as nn2 copies nn1's image, nn2 starts. Both start in
   standby; ``haadmin -transitionToActive nn1`` makes nn1 the writer.
3. Client threads stream mkdirs through the nameservice (``hdfs://mycluster``: a client
   that fails over between the NameNodes). Half-way, ``haadmin -failover nn1 nn2``: nn1
   ends its segment and becomes a standby, nn2 fences the journal with a new epoch,
   recovers, catches up and writes on. The clients get StandbyException from nn1 and
   move to nn2 by themselves.
4. Checks: every mkdirs acknowledged to a client exists on the new active; the standby
   (nn1) catches up to the active's last txid and holds as many inodes; each finalized
   segment is byte-identical on every JournalNode that has it.
5. Prints the status-page and metrics URLs, stops everything with SIGTERM and removes the
   temporary directory — also on Ctrl-C.

``--auto-failover`` runs the job with automatic failover instead (ZooKeeper, two ``zkfc``
controllers, kill -9 of the active NameNode): :mod:`hadoop_qjm.tools.quickstart_auto`.
``--journal-only`` runs the JournalNode-level job instead (two writers and a reader over
the quorum client, no NameNode): :mod:`hadoop_qjm.tools.journal_quickstart`.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

from hadoop_qjm.common.exceptions import HadoopException, IOException

__all__ = ["run"]

#: How long the job waits for anything (a transition, the standby catching up).
DEADLINE_S = 120.0


def _say(message: str) -> None:
    print(message, flush=True)


class _Load:
    """``clients`` threads, each doing mkdirs through the nameservice until ``ops`` in all
    were acknowledged (or ``deadline``); records every acknowledged path."""

    def __init__(self, cluster, clients: int, ops: int) -> None:
        self.cluster = cluster
        self.ops = ops
        self.acked: list[str] = []
        #: ``(sent, acknowledged)`` times of every acknowledged call.
        self.ack_times: list[tuple[float, float]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._next = 0
        self._stop = threading.Event()
        self.deadline = time.monotonic() + DEADLINE_S
        self._threads = [
            threading.Thread(target=self._client, args=(k,), name=f"client-{k}", daemon=True)
            for k in range(clients)
        ]

    def start(self) -> None:
        for t in self._threads:
            t.start()

    def _take(self) -> int | None:
        with self._lock:
            if self._next >= self.ops or self._stop.is_set():
                return None
            self._next += 1
            return self._next

    def _client(self, k: int) -> None:
        with self.cluster.client() as fs:
            while (i := self._take()) is not None and time.monotonic() < self.deadline:
                path = f"/quickstart/client-{k}/dir-{i:06d}"
                sent = time.monotonic()
                try:
                    if fs.mkdirs(path):
                        with self._lock:
                            self.acked.append(path)
                            self.ack_times.append((sent, time.monotonic()))
                except (HadoopException, OSError) as e:
                    # Not acknowledged: it may or may not exist; nothing is claimed for it.
                    with self._lock:
                        self.errors.append(f"{path}: {e}")

    def wait_acked(self, count: int) -> None:
        deadline = time.monotonic() + DEADLINE_S
        while len(self.acked) < count and any(t.is_alive() for t in self._threads):
            if time.monotonic() > deadline:
                raise IOException(f"clients acknowledged only {len(self.acked)} of {count} ops")
            time.sleep(0.01)

    def first_ack_after(self, since: float, timeout_s: float) -> float:
        """When the first call *sent* after ``since`` was acknowledged (waits, bounded): a
        call already in flight at ``since`` may have been executed before it."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                later = [acked for sent, acked in self.ack_times if sent > since]
            if later:
                return min(later)
            if time.monotonic() > deadline or not any(t.is_alive() for t in self._threads):
                raise IOException(f"no mkdir was acknowledged within {timeout_s:.0f}s of the kill")
            time.sleep(0.005)

    def join(self) -> None:
        for t in self._threads:
            t.join(DEADLINE_S)
            if t.is_alive():
                self._stop.set()
                raise IOException(f"{t.name} did not finish within {DEADLINE_S}s")

    def stop(self) -> None:
        self._stop.set()


def _wait(predicate, what: str, timeout_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise IOException(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(0.02)


class _Web:
    """The daemons' web addresses: HTTPS (verified against the test CA) when secured."""

    def __init__(self, cluster) -> None:
        self.cluster = cluster
        self.context = None
        if cluster.secure:
            from hadoop_qjm.common.security import SSLFactory

            self.context = SSLFactory(cluster.client_conf()).http_client_context()

    def namenode(self, nnid: str) -> str:
        c = self.cluster
        if c.secure:
            return f"https://localhost:{c.https_ports[nnid]}"
        return f"http://127.0.0.1:{c.http_ports[nnid]}"

    def journal_node(self, i: int) -> str:
        jns = self.cluster.journal_nodes
        if self.cluster.secure:
            return f"https://localhost:{jns.https_ports[i]}"
        return f"http://127.0.0.1:{jns.http_ports[i]}"

    def jmx(self, nnid: str, bean: str) -> dict:
        url = f"{self.namenode(nnid)}/jmx?qry=Hadoop:service=NameNode,name={bean}"
        with urllib.request.urlopen(url, timeout=10, context=self.context) as response:
            return json.loads(response.read())["beans"][0]


def _hdfs(cluster, *args: str) -> str:
    """Run ``hdfs-py ARGS`` against the cluster's configuration, narrating it."""
    _say(f"$ hdfs-py {' '.join(args)}")
    result = cluster.run_hdfs(*args)
    if result.returncode != 0:
        raise IOException(
            f"'hdfs-py {' '.join(args)}' failed (status {result.returncode}): "
            f"{(result.stderr or result.stdout).strip().splitlines()[-1:]}"
        )
    lines = [line for line in result.stdout.splitlines() if line.strip(" =")]
    for line in lines[-3:]:
        _say(f"  {line}")
    return result.stdout


def _check_finalized_identical(cluster) -> int:
    from hadoop_qjm.testing.mini_ha_cluster import JOURNAL_ID

    jns = cluster.journal_nodes
    by_name: dict[str, set[bytes]] = {}
    for i in range(jns.num_journal_nodes):
        for path in jns.current_dir(i, JOURNAL_ID).glob("edits_*-*"):
            if "." not in path.name:
                by_name.setdefault(path.name, set()).add(path.read_bytes())
    differing = [name for name, copies in by_name.items() if len(copies) != 1]
    if differing:
        raise IOException(f"finalized segments differ between JournalNodes: {differing[:3]}")
    return len(by_name)


def _start_pair(cluster) -> None:
    """``namenode -format`` as nn1, nn1, ``-bootstrapStandby`` as nn2, nn2 (both standby)."""
    _hdfs(cluster, "namenode", "-nnid", "nn1", "-format", "-nonInteractive")
    nn1 = cluster.start_namenode("nn1")
    _say(f"Started NameNode nn1: pid {nn1.pid}, rpc 127.0.0.1:{nn1.rpc_port} (standby)")
    _hdfs(cluster, "namenode", "-nnid", "nn2", "-bootstrapStandby", "-nonInteractive")
    nn2 = cluster.start_namenode("nn2")
    _say(f"Started NameNode nn2: pid {nn2.pid}, rpc 127.0.0.1:{nn2.rpc_port} (standby)")


def _show_pages(web: _Web, keep_running: bool) -> None:
    """Print every daemon's status page and metrics URLs; with ``--keep-running`` wait for
    Ctrl-C."""
    from hadoop_qjm.testing.mini_ha_cluster import NNIDS

    _say("Status pages and metrics (while the cluster runs):")
    for nnid in NNIDS:
        url = web.namenode(nnid)
        _say(f"  {nnid}: {url}/  {url}/metrics  {url}/jmx")
    for i in range(web.cluster.journal_nodes.num_journal_nodes):
        url = web.journal_node(i)
        _say(f"  JournalNode {i}: {url}/  {url}/metrics  {url}/jmx")
    if keep_running:
        _say("Running until Ctrl-C (--keep-running)")
        threading.Event().wait()


def _run_ha(args, conf) -> int:
    from hadoop_qjm.testing.mini_ha_cluster import MiniHACluster

    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="hdfs-py-quickstart-"))
    started = time.monotonic()
    properties: dict[str, str] = {}
    cluster = None
    load = None
    try:
        cluster = MiniHACluster(
            base / "cluster", properties=properties, start=False, secure=args.secure
        )
        web = _Web(cluster)
        jns = cluster.journal_nodes
        if args.secure:
            _say(
                f"Secured: a test CA and certificates in {cluster.base_dir / 'pki'}; every "
                "RPC and HTTP channel is mutual TLS (HTTPS only)"
            )
        _say(f"Started 3 JournalNode processes: {jns.quorum_journal_uri('mycluster')}")
        for i in range(jns.num_journal_nodes):
            _say(f"  JournalNode {i}: pid {jns.nodes[i].pid}, {web.journal_node(i)}/")
        _say(f"Configuration: {cluster.conf_dir / 'hdfs-site.xml'} (nameservice mycluster)")
        _start_pair(cluster)
        _hdfs(cluster, "haadmin", "-transitionToActive", "nn1")
        _hdfs(cluster, "haadmin", "-getAllServiceState")

        load = _Load(cluster, args.clients, args.ops)
        load.start()
        _say(f"Streaming {args.ops} mkdirs from {args.clients} clients through hdfs://mycluster")
        load.wait_acked(args.ops // 2)
        _say(f"  {len(load.acked)} acknowledged; failing over while they run:")
        failover_started = time.monotonic()
        _hdfs(cluster, "haadmin", "-failover", "nn1", "nn2")
        _say(f"  failover took {time.monotonic() - failover_started:.2f}s")
        load.join()
        _say(
            f"Clients: {len(load.acked)} mkdirs acknowledged, {len(load.errors)} failed "
            "(a failed call is not acknowledged)"
        )
        for error in load.errors[:3]:
            _say(f"  e.g. {error[:200]}")
        _hdfs(cluster, "haadmin", "-getAllServiceState")

        with cluster.proxy("nn2") as active:
            missing = [p for p in load.acked if active.get_file_info(p) is None]
            if missing:
                raise IOException(
                    f"{len(missing)} acknowledged mkdirs missing on the new active: {missing[:5]}"
                )
            active_txid = active.get_transaction_id()
        _say(f"nn2 (active) holds all {len(load.acked)} acknowledged dirs; last txid {active_txid}")
        with cluster.proxy("nn1") as standby:
            _wait(
                lambda: standby.get_transaction_id() >= active_txid,
                f"the standby to reach txid {active_txid}",
            )
        _wait(
            lambda: (
                web.jmx("nn1", "FSNamesystem")["FilesTotal"]
                == web.jmx("nn2", "FSNamesystem")["FilesTotal"]
            ),
            "the standby's namespace to match the active's",
        )
        inodes = web.jmx("nn2", "FSNamesystem")["FilesTotal"]
        _say(f"nn1 (standby) caught up to txid {active_txid}: {inodes} inodes on both")
        segments = _check_finalized_identical(cluster)
        _say(f"{segments} finalized segments byte-identical on every JournalNode that has them")
        _show_pages(web, args.keep_running)
        _say("Stopping the NameNodes and JournalNodes (SIGTERM)")
    finally:
        if load is not None:
            load.stop()
        if cluster is not None:
            cluster.shutdown()
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
    _say(f"quickstart: OK in {time.monotonic() - started:.1f}s")
    return 0


def run(argv, conf) -> int:
    from hadoop_qjm.cli import CommandParser

    if "--journal-only" in argv:
        from hadoop_qjm.tools import journal_quickstart

        return journal_quickstart.run([a for a in argv if a != "--journal-only"], conf)
    parser = CommandParser(
        prog="hdfs-py quickstart",
        description=__doc__.split("\n\n")[0].split(": ", 1)[1]
        + ". Starts 3 JournalNodes and 2 NameNodes as processes on 127.0.0.1, fails over "
        "under load, checks that no acknowledged operation was lost, and stops everything.",
    )
    parser.add_argument("--ops", type=int, default=2000, help="mkdirs in all (2000)")
    parser.add_argument("--clients", type=int, default=4, help="client threads (4)")
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
    import logging
    import os

    if not os.environ.get("HADOOP_ROOT_LOGGER"):
        # The job narrates itself; the clients' expected failover warnings would repeat it.
        logging.getLogger().setLevel(logging.ERROR)
    if args.auto_failover:
        from hadoop_qjm.tools.quickstart_auto import run_auto_failover

        return run_auto_failover(args, conf)
    return _run_ha(args, conf)
