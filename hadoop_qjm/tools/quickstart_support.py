"""What the quickstart jobs share: the client load, the waits, the commands they run, the
checks of the JournalNodes' segments and the status-page URLs they print
(:mod:`hadoop_qjm.tools.quickstart` and :mod:`hadoop_qjm.tools.quickstart_auto`)."""

from __future__ import annotations

import json
import threading
import time
import urllib.request

from hadoop_qjm.common.exceptions import HadoopException, IOException

__all__ = [
    "DEADLINE_S",
    "Load",
    "Web",
    "check_finalized_identical",
    "hdfs",
    "say",
    "show_pages",
    "start_pair",
    "wait_for",
]

#: How long the job waits for anything (a transition, the standby catching up).
DEADLINE_S = 120.0


def say(message: str) -> None:
    print(message, flush=True)


class Load:
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


def wait_for(predicate, what: str, timeout_s: float = DEADLINE_S) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise IOException(f"timed out after {timeout_s:.0f}s waiting for {what}")
        time.sleep(0.02)


class Web:
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


def hdfs(cluster, *args: str) -> str:
    """Run ``hdfs-py ARGS`` against the cluster's configuration, narrating it."""
    say(f"$ hdfs-py {' '.join(args)}")
    result = cluster.run_hdfs(*args)
    if result.returncode != 0:
        raise IOException(
            f"'hdfs-py {' '.join(args)}' failed (status {result.returncode}): "
            f"{(result.stderr or result.stdout).strip().splitlines()[-1:]}"
        )
    lines = [line for line in result.stdout.splitlines() if line.strip(" =")]
    for line in lines[-3:]:
        say(f"  {line}")
    return result.stdout


def check_finalized_identical(cluster) -> int:
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


def start_pair(cluster) -> None:
    """``namenode -format`` as nn1, nn1, ``-bootstrapStandby`` as nn2 (and nn3, … with
    more), each started after its bootstrap (all standby)."""
    hdfs(cluster, "namenode", "-nnid", "nn1", "-format", "-nonInteractive")
    nn1 = cluster.start_namenode("nn1")
    say(f"Started NameNode nn1: pid {nn1.pid}, rpc 127.0.0.1:{nn1.rpc_port} (standby)")
    for nnid in cluster.nnids[1:]:
        hdfs(cluster, "namenode", "-nnid", nnid, "-bootstrapStandby", "-nonInteractive")
        node = cluster.start_namenode(nnid)
        say(f"Started NameNode {nnid}: pid {node.pid}, rpc 127.0.0.1:{node.rpc_port} (standby)")


def show_pages(web: Web, keep_running: bool) -> None:
    """Print every daemon's status page and metrics URLs; with ``--keep-running`` wait for
    Ctrl-C."""
    say("Status pages and metrics (while the cluster runs):")
    for nnid in web.cluster.nnids:
        url = web.namenode(nnid)
        say(f"  {nnid}: {url}/  {url}/metrics  {url}/jmx")
    for i in range(web.cluster.journal_nodes.num_journal_nodes):
        url = web.journal_node(i)
        say(f"  JournalNode {i}: {url}/  {url}/metrics  {url}/jmx")
    if keep_running:
        say("Running until Ctrl-C (--keep-running)")
        threading.Event().wait()
