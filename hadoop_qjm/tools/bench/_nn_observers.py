"""``hdfs-py bench namenode --observers 0,1,2``: reads spread over observer NameNodes under
a write load (issue 37, docs/ha.md "Observer NameNodes").

A :class:`~hadoop_qjm.testing.mini_ha_cluster.MiniHACluster` of NameNode processes on three
JournalNode processes: nn1 active, nn2 a standby, and as many more as the largest count of
``--observers`` (three to five NameNodes). Per count, that many of them are made observers
(``haadmin -transitionToObserver``'s call; the rest are standbys), then for ``--seconds``:
``--writers`` client threads (the ``_nn_load`` client of ``bench namenode``, one process)
call ``mkdirs`` on the active, while ``--readers`` client threads (in
``--client-processes`` processes of their own) alternate ``getFileInfo`` and ``getListing``
through the observer read proxy (``dfs.client.failover.proxy.provider.<ns>`` =
ObserverReadProxyProvider, one client each): with 0 observers every read goes to the
active. A phase of the writers alone (no readers at all) runs before the first count and
after the last; its two runs together are the write-rate baseline.

Printed per phase: getFileInfo/s, getListing/s, the reads' p50/p99; mkdirs/s and their
p50/p99; the reads each NameNode served and the calls its observers held for state
alignment (count and time; their ``/jmx`` beans NameNodeActivity and ObserverStatus,
before and after); each NameNode process's CPU (psutil: user + system time over the phase)
and the reader processes'. Goals, as ratios of the same run (never asserted): with 2
observers (or the largest count), the active's mkdirs/s under the read load ≥ 0.9x the
baseline's, and reads/s ≥ 1.5x the reads/s of 0 observers. Every phase is bounded by
``--seconds`` and ``--max-ops`` (per side); every process is stopped by its pid.

``python -m hadoop_qjm.tools.bench._nn_observers reader CONF_DIR THREADS SECONDS MAX_OPS``
is one reader process: THREADS observer-read clients of CONF_DIR's nameservice, each reads
once (it probes the NameNodes' states and msyncs), ``READY``, a line on stdin, then reads
until SECONDS pass or MAX_OPS reads are made in all; one JSON line.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hadoop_qjm.testing.mini_ha_cluster import NAMESERVICE, MiniHACluster
from hadoop_qjm.tools.bench._nn_load import (
    CLIENT_COMMAND,
    BenchClients,
    cpu_seconds,
    percentile,
    split,
    timed_calls,
)

__all__ = [
    "OBSERVER_PROVIDER",
    "READ_GOAL_RATIO",
    "WRITE_GOAL_RATIO",
    "ObserverPhase",
    "namenode_bean",
    "run",
]

OBSERVER_PROVIDER = "org.apache.hadoop.hdfs.server.namenode.ha.ObserverReadProxyProvider"
#: The active's mkdirs/s under the read load (2 observers) over its mkdirs/s with no readers.
WRITE_GOAL_RATIO = 0.9
#: reads/s spread over 2 observers over reads/s on the active alone.
READ_GOAL_RATIO = 1.5
#: The most observers a phase may ask for: five NameNodes, Hadoop's recommended limit.
MAX_OBSERVERS = 3
READ_DIR = "/bench-read"
#: Entries of READ_DIR: each getListing returns this many, getFileInfo asks for one.
READ_ENTRIES = 10
_READER = [sys.executable, "-m", "hadoop_qjm.tools.bench._nn_observers", "reader"]


@dataclass(frozen=True)
class ObserverPhase:
    """One phase: ``observers`` observers (None: the writers alone), what each side did."""

    observers: int | None
    seconds: float
    mkdirs: int
    write_lat_ms: tuple[float, float]
    file_infos: int = 0
    listings: int = 0
    read_lat_ms: tuple[float, float] = (0.0, 0.0)
    errors: int = 0
    held_calls: int = 0
    held_ms: int = 0
    served: dict[str, int] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)
    states: dict[str, str] = field(default_factory=dict)
    reader_cpu_s: float = 0.0
    journal_cpu_s: float = 0.0

    @property
    def mkdirs_per_s(self) -> float:
        return self.mkdirs / self.seconds if self.seconds else 0.0

    @property
    def reads_per_s(self) -> float:
        return (self.file_infos + self.listings) / self.seconds if self.seconds else 0.0


# ---- the reader process ----------------------------------------------------------------------
def reader_main(conf_dir: str, threads: int, seconds: float, max_ops: int) -> int:
    from hadoop_qjm.conf import Configuration
    from hadoop_qjm.namenode.ha.failover_proxy import namenode_proxy_from_conf

    conf = Configuration()
    conf.add_conf_dir(conf_dir)
    clients = [namenode_proxy_from_conf(conf, timeout_s=60) for _ in range(threads)]
    listings = [0] * threads

    def read(i: int, n: int) -> None:
        if (i + n) % 2:
            clients[i].get_listing(READ_DIR)
            listings[i] += 1
        else:
            clients[i].get_file_info(f"{READ_DIR}/e{(i + n) // 2 % READ_ENTRIES}")

    try:
        report = timed_calls(
            threads,
            lambda i: clients[i].get_file_info(READ_DIR),  # probe the states and msync
            read,
            seconds,
            max_ops,
            errors=(Exception,),  # whatever a read raises is counted, not a dead thread
        )
    finally:
        for fs in clients:
            fs.close()
    report["listings"] = sum(listings)
    report["file_infos"] = report["ops"] - report["listings"]
    report["observer_reads"] = sum(fs.observer_reads for fs in clients)
    report["active_reads"] = sum(fs.active_reads for fs in clients)
    print(json.dumps(report), flush=True)
    return 0


# ---- the bench -------------------------------------------------------------------------------
def namenode_bean(http_port: int, name: str) -> dict[str, Any]:
    """The ``/jmx`` bean ``Hadoop:service=NameNode,name=<name>`` of a NameNode on 127.0.0.1."""
    url = f"http://127.0.0.1:{http_port}/jmx?qry=Hadoop:service=NameNode,name={name}"
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())["beans"][0]


def _set_observers(cluster: MiniHACluster, candidates: Sequence[str], count: int) -> None:
    """The first ``count`` of ``candidates`` observers, the others standbys."""
    for i, nnid in enumerate(candidates):
        want = "observer" if i < count else "standby"
        if cluster.service_state(nnid) == want:
            continue
        with cluster.proxy(nnid) as proxy:
            if want == "observer":
                proxy.transition_to_observer()
            else:
                proxy.transition_to_standby()


def _activity(cluster: MiniHACluster) -> dict[str, tuple[int, int, int]]:
    """Per NameNode: (reads served, calls held for alignment, ms they were held)."""
    figures = {}
    for nnid, port in cluster.http_ports.items():
        activity = namenode_bean(port, "NameNodeActivity")
        status = namenode_bean(port, "ObserverStatus")
        figures[nnid] = (
            activity["FileInfoOps"] + activity["GetListingOps"],
            status["AlignmentHeldCallsNumOps"],
            status["AlignmentHeldCallsTotalTimeMillis"],
        )
    return figures


def _phase(
    cluster: MiniHACluster,
    observers: int | None,
    args: Any,
    tag: str,
) -> ObserverPhase:
    writers = [
        [*CLIENT_COMMAND, "client", "127.0.0.1", str(cluster.rpc_ports["nn1"]), str(args.writers)]
        + [str(args.seconds), str(args.max_ops), tag]
    ]
    readers = []
    if observers is not None:
        threads = [n for n in split(args.readers, args.client_processes) if n > 0]
        caps = split(args.max_ops, len(threads))
        readers = [
            [*_READER, str(cluster.conf_dir), str(n), str(args.seconds), str(cap)]
            for n, cap in zip(threads, caps, strict=True)
        ]
    pids = {nnid: cluster.namenode(nnid).pid for nnid in cluster.nnids}
    journal_pids: list[int] = [
        node.pid  # type: ignore[attr-defined]  # JournalNode processes
        for node in cluster.journal_nodes.nodes
        if node is not None
    ]
    states = cluster.states()
    with BenchClients(writers + readers) as group:
        before = _activity(cluster)
        cpu0 = {nnid: cpu_seconds(pid) for nnid, pid in pids.items()}
        journal0 = sum(cpu_seconds(pid) for pid in journal_pids)
        start = time.perf_counter()
        group.go()
        reports = group.reports(args.seconds + 180)
        elapsed = time.perf_counter() - start
        cpu1 = {nnid: cpu_seconds(pid) for nnid, pid in pids.items()}
        journal1 = sum(cpu_seconds(pid) for pid in journal_pids)
        after = _activity(cluster)
    written, read = reports[0], reports[1:]
    write_lat = sorted(x / 1e3 for x in written["lat_us"])
    read_lat = sorted(x / 1e3 for report in read for x in report["lat_us"])
    observing = [n for n, s in states.items() if s == "observer"]
    return ObserverPhase(
        observers=observers,
        seconds=elapsed,
        mkdirs=len(write_lat),
        write_lat_ms=(percentile(write_lat, 0.5), percentile(write_lat, 0.99)),
        file_infos=sum(r["file_infos"] for r in read),
        listings=sum(r["listings"] for r in read),
        read_lat_ms=(percentile(read_lat, 0.5), percentile(read_lat, 0.99)),
        errors=written["errors"] + sum(r["errors"] for r in read),
        held_calls=sum(after[n][1] - before[n][1] for n in observing),
        held_ms=sum(after[n][2] - before[n][2] for n in observing),
        served={n: after[n][0] - before[n][0] for n in cluster.nnids},
        cpu_s={n: cpu1[n] - cpu0[n] for n in cluster.nnids},
        states=states,
        reader_cpu_s=sum(r["cpu_s"] for r in read),
        journal_cpu_s=journal1 - journal0,
    )


def _combined(runs: Sequence[ObserverPhase]) -> ObserverPhase:
    """The baseline's runs as one: calls, time and CPU summed, the worse latencies."""
    return ObserverPhase(
        observers=None,
        seconds=sum(r.seconds for r in runs),
        mkdirs=sum(r.mkdirs for r in runs),
        write_lat_ms=tuple(max(r.write_lat_ms[i] for r in runs) for i in (0, 1)),  # type: ignore[arg-type]
        errors=sum(r.errors for r in runs),
        cpu_s={n: sum(r.cpu_s[n] for r in runs) for n in runs[0].cpu_s},
        states=runs[-1].states,
        journal_cpu_s=sum(r.journal_cpu_s for r in runs),
    )


def _writes_line(phase: ObserverPhase, writers: int) -> str:
    p50, p99 = phase.write_lat_ms
    return (
        f"  {writers:>3} writers: {phase.mkdirs_per_s:>9,.0f} mkdirs/s       on the active  "
        f"p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  ({phase.mkdirs} ops)"
    )


def phase_lines(phase: ObserverPhase, args: Any) -> list[str]:
    """The printed lines of one phase."""
    if phase.observers is None:
        lines = [f"no readers, the writers alone ({len(phase.cpu_s)} NameNodes):"]
    else:
        where = "on the active alone" if phase.observers == 0 else "through the observer proxy"
        lines = [f"{phase.observers} observers, reads {where}:"]
        p50, p99 = phase.read_lat_ms
        lines.append(
            f"  {args.readers:>3} readers: {phase.file_infos / phase.seconds:>9,.0f} "
            f"getFileInfo/s  {phase.listings / phase.seconds:>9,.0f} getListing/s  "
            f"({phase.reads_per_s:,.0f} reads/s)  p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  "
            f"({phase.file_infos + phase.listings} ops)"
        )
    lines.append(_writes_line(phase, args.writers))
    if phase.observers is not None:
        served = "  ".join(f"{n} ({phase.states[n]}) {c:,}" for n, c in phase.served.items())
        lines.append(f"  reads served: {served}")
        lines.append(
            f"  held for alignment (the observers' ObserverStatus): {phase.held_calls:,} "
            f"calls, {phase.held_ms:,} ms"
        )
    cpu = "  ".join(
        f"{n} {phase.states[n]} {s:.2f} s ({s / phase.seconds:.2f} cores)"
        for n, s in phase.cpu_s.items()
    )
    lines.append(f"  CPU: {cpu}")
    others = f"  CPU of the 3 JournalNodes: {phase.journal_cpu_s:.2f} s"
    if phase.observers is not None:
        others += f", of the reader processes: {phase.reader_cpu_s:.2f} s"
    lines.append(others)
    if phase.errors:
        lines.append(f"  {phase.errors} errors")
    return lines


def goal_lines(phases: Sequence[ObserverPhase], baseline: ObserverPhase) -> list[str]:
    """The two goals, as ratios of this run: with 2 observers (or the most measured)."""
    by_count = {p.observers: p for p in phases}
    counts = [c for c in by_count if c]
    if not counts:
        return ["no phase with observers: the goals need --observers with 0 and 2"]
    at = 2 if 2 in by_count else max(counts)  # type: ignore[type-var]
    phase = by_count[at]
    lines = []
    ratio = phase.mkdirs_per_s / baseline.mkdirs_per_s if baseline.mkdirs_per_s else 0.0
    met = "met" if ratio >= WRITE_GOAL_RATIO else "NOT met"
    lines.append(
        f"{at} observers, the active's mkdirs/s under the read load / with no readers: "
        f"{ratio:.2f}x ({phase.mkdirs_per_s:,.0f} vs {baseline.mkdirs_per_s:,.0f}; "
        f"goal >= {WRITE_GOAL_RATIO:g}x: {met})"
    )
    alone = by_count.get(0)
    if alone is not None and baseline.mkdirs_per_s:
        lines.append(
            f"  (reads on the active alone: {alone.mkdirs_per_s / baseline.mkdirs_per_s:.2f}x "
            "the mkdirs/s with no readers)"
        )
    if alone is None:
        lines.append("no phase of 0 observers: the reads goal needs --observers with 0")
        return lines
    ratio = phase.reads_per_s / alone.reads_per_s if alone.reads_per_s else 0.0
    met = "met" if ratio >= READ_GOAL_RATIO else "NOT met"
    lines.append(
        f"{at} observers / reads on the active alone: {ratio:.2f}x reads/s "
        f"({phase.reads_per_s:,.0f} vs {alone.reads_per_s:,.0f}; "
        f"goal >= {READ_GOAL_RATIO:g}x: {met})"
    )
    return lines


def _parse(argv: Sequence[str]) -> Any:
    from hadoop_qjm.common.command_line import CommandParser, finite_float

    parser = CommandParser(prog="hdfs-py bench namenode", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--observers", required=True, help="comma-separated observer counts, 0 to 3 (0,1,2)"
    )
    parser.add_argument("--readers", type=int, default=64, help="reader client threads (64)")
    parser.add_argument("--writers", type=int, default=8, help="mkdir client threads (8)")
    parser.add_argument(
        "--client-processes", type=int, default=2, help="processes the readers run in (2)"
    )
    parser.add_argument("--seconds", type=finite_float, default=5.0, help="per phase (5)")
    parser.add_argument(
        "--max-ops", type=int, default=1_000_000, help="cap per phase and side (1000000)"
    )
    parser.add_argument("--handlers", type=int, default=10, help="dfs.namenode.handler.count (10)")
    parser.add_argument("--dir", default=None, help="where the NameNodes and JournalNodes write")
    args = parser.parse_args(list(argv))
    try:
        args.counts = [int(c) for c in args.observers.split(",") if c.strip()]
    except ValueError:
        parser.error(f"--observers must be comma-separated integers, not {args.observers!r}")
    if not args.counts or min(args.counts) < 0 or max(args.counts) > MAX_OBSERVERS:
        parser.error(f"--observers must be counts between 0 and {MAX_OBSERVERS}")
    if not 1 <= args.readers <= 1024 or not 1 <= args.writers <= 256:
        parser.error("--readers must be between 1 and 1024 and --writers between 1 and 256")
    if not 1 <= args.client_processes <= 16:
        parser.error("--client-processes must be between 1 and 16")
    if args.seconds <= 0 or args.max_ops <= 0 or args.handlers <= 0:
        parser.error("--seconds, --max-ops and --handlers must be positive")
    args.client_processes = min(args.client_processes, args.readers)
    return args


def run(argv: Sequence[str], conf: Any = None) -> int:
    args = _parse(argv)
    base = Path(tempfile.mkdtemp(prefix="bench-nn-observers-", dir=args.dir))
    properties = {
        "dfs.namenode.state.context.enabled": "true",
        f"dfs.client.failover.proxy.provider.{NAMESERVICE}": OBSERVER_PROVIDER,
        "dfs.namenode.handler.count": args.handlers,
    }
    num_namenodes = 2 + max(args.counts)
    phases: list[ObserverPhase] = []
    baselines: list[ObserverPhase] = []
    try:
        with MiniHACluster(base, properties=properties, num_namenodes=num_namenodes) as cluster:
            cluster.transition_to_active("nn1")
            with cluster.proxy("nn1") as active:
                for i in range(READ_ENTRIES):
                    active.mkdirs(f"{READ_DIR}/e{i}")
            pids = ", ".join(f"{n} pid {cluster.namenode(n).pid}" for n in cluster.nnids)
            print(
                f"{num_namenodes} NameNode processes ({pids}; nn1 active) on 3 JournalNode "
                f"processes, {args.handlers} handlers, {args.seconds:g} s per phase, "
                f"{args.writers} writers in 1 process, {args.readers} readers in "
                f"{args.client_processes} processes",
                flush=True,
            )
            candidates = cluster.nnids[2:]
            _set_observers(cluster, candidates, args.counts[0])
            runs = [None, *args.counts, None]
            for i, count in enumerate(runs):
                if count is not None:
                    _set_observers(cluster, candidates, count)
                phase = _phase(cluster, count, args, f"o{i}")
                (phases if count is not None else baselines).append(phase)
                for line in phase_lines(phase, args):
                    print(line, flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    baseline = _combined(baselines)
    print(
        f"no-reader baseline (before and after): {baseline.mkdirs_per_s:,.0f} mkdirs/s "
        f"({baseline.mkdirs} ops)"
    )
    for line in goal_lines(phases, baseline):
        print(line, flush=True)
    return 0


def _main(argv: list[str]) -> int:
    if argv[:1] == ["reader"] and len(argv) == 5:
        conf_dir, threads, seconds, max_ops = argv[1:]
        return reader_main(conf_dir, int(threads), float(seconds), int(max_ops))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
