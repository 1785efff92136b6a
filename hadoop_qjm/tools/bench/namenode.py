"""``hdfs-py bench namenode``: mkdirs over ClientProtocol against a NameNode process.

A NameNode process writes its edits to a local name directory and to three JournalNode
processes on 127.0.0.1 (a ``MiniJournalCluster(processes=True)``). For each client count
(``--clients``, default 1, 8, 64, 256) that many client threads, spread over up to
``--client-processes`` processes of their own (so their CPU is not the NameNode's), each
with its own connection, call ``mkdirs`` on distinct paths for ``--seconds``; every call
returns once its edit is durable on the local directory and on a quorum of JournalNodes.
Printed per phase: mkdirs/s, the p50 and p99 latency of one call, the transactions per
sync and the syncs in flight the NameNode reports on ``/metrics`` (the group-commit
factor), and the NameNode process's CPU per mkdir (psutil: its user + system time over the
phase / the calls). Then the same client load against the RPC floor — a process serving
ClientProtocol with the NameNode's own RPC server and dispatcher, whose ``mkdirs`` answers
at once — and its calls/s and CPU per call.

Goals (printed as same-run ratios, never asserted): at 64 clients (or the count nearest
it) the NameNode spends ≤ 60 µs of CPU per mkdir, does ≥ 0.5x the floor's calls/s, and
≥ 12x the 1-client mkdirs/s (issue 39). Last, the cost of permission checks and the audit log: the
phase nearest 64 clients on a NameNode process of its own with ``dfs.permissions.enabled``
off and no audit log, then on another with the checks on, the clients calling as a tenant
(``HADOOP_USER_NAME=alice``), and every call in ``hdfs-audit.log`` (goal ≥ 0.85x the
mkdirs/s), and where its CPU goes, from an in-process namesystem
(:mod:`~hadoop_qjm.tools.bench._nn_permissions`). Every phase is bounded in time and in calls (``--max-ops``);
every process is stopped by its pid, also on errors.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hadoop_qjm.common.daemon_logging import AUDIT_LOG_FILE
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.testing.daemon_process import child_env
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.name_node_process import NameNodeProcess, write_conf_dir
from hadoop_qjm.tools.bench._nn_load import CLIENT_COMMAND as _CLIENT
from hadoop_qjm.tools.bench._nn_load import BenchClients
from hadoop_qjm.tools.bench._nn_load import cpu_seconds as _cpu_seconds
from hadoop_qjm.tools.bench._nn_load import percentile as _percentile
from hadoop_qjm.tools.bench._nn_load import split as _split
from hadoop_qjm.tools.bench._nn_permissions import PERMISSIONS_GOAL_RATIO, permissions_lines

__all__ = [
    "CPU_GOAL_US",
    "FLOOR_GOAL_RATIO",
    "GOAL_RATIO",
    "PhaseResult",
    "run",
    "run_phase",
]

JID = "bench-namenode"
#: mkdirs/s with 64 clients over mkdirs/s with one client.
GOAL_RATIO = 12.0
#: mkdirs/s with 64 clients over the RPC floor's calls/s with as many.
FLOOR_GOAL_RATIO = 0.5
#: NameNode CPU per mkdir with 64 clients, in µs.
CPU_GOAL_US = 60.0


@dataclass(frozen=True)
class PhaseResult:
    clients: int
    ops: int
    errors: int
    seconds: float
    p50_ms: float
    p99_ms: float
    txns: int
    syncs: int
    cpu_s: float
    syncs_in_flight: float = 1.0

    @property
    def ops_per_s(self) -> float:
        return self.ops / self.seconds if self.seconds else 0.0

    @property
    def txns_per_sync(self) -> float:
        return self.txns / self.syncs if self.syncs else 0.0

    @property
    def cpu_us_per_op(self) -> float:
        return self.cpu_s / self.ops * 1e6 if self.ops else 0.0


def _edit_log_counters(http_port: int) -> tuple[int, int, float]:
    """(transactions, syncs, the most syncs ever in flight at once) from the NameNode's
    /metrics; 1 when the NameNode reports none (one sync at a time)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=30).read()
    values = {}
    names = ("namenode_transactions_total", "namenode_syncs_total", "namenode_max_syncs_in_flight")
    for name in names:
        match = re.search(rf"^{name} (\S+)$", text.decode(), re.MULTILINE)
        values[name] = float(match.group(1)) if match else None
    return (
        int(values["namenode_transactions_total"] or 0),
        int(values["namenode_syncs_total"] or 0),
        values["namenode_max_syncs_in_flight"] or 1.0,
    )


def run_phase(
    rpc_port: int,
    server_pid: int,
    clients: int,
    seconds: float,
    max_ops: int,
    tag: str,
    *,
    processes: int = 2,
    counters: Callable[[], tuple[int, int, float]] | None = None,
    client_env: Mapping[str, str] | None = None,
) -> PhaseResult:
    """``clients`` threads in up to ``processes`` client processes doing mkdirs until
    ``seconds`` pass or ``max_ops`` calls are made; ``server_pid``'s CPU is measured and
    ``counters()`` read before and after (txns, syncs, syncs in flight). ``client_env``
    is added to the client processes' environment (``HADOOP_USER_NAME``, say)."""
    threads = [n for n in _split(clients, max(1, min(processes, clients))) if n > 0]
    ops = _split(max_ops, len(threads))
    commands = [
        [
            *_CLIENT,
            "client",
            "127.0.0.1",
            str(rpc_port),
            str(n),
            str(seconds),
            str(cap),
            f"{tag}p{i}",
        ]
        for i, (n, cap) in enumerate(zip(threads, ops, strict=True))
    ]
    with BenchClients(commands, client_env) as group:
        txns0, syncs0, _ = counters() if counters else (0, 0, 1.0)
        cpu0 = _cpu_seconds(server_pid)
        start = time.perf_counter()
        group.go()
        reports = group.reports(seconds + 180)
        elapsed = time.perf_counter() - start
        cpu1 = _cpu_seconds(server_pid)
        txns1, syncs1, in_flight = counters() if counters else (0, 0, 1.0)
    latencies = sorted(x / 1e6 for report in reports for x in report["lat_us"])
    return PhaseResult(
        clients=clients,
        ops=len(latencies),
        errors=sum(report["errors"] for report in reports),
        seconds=elapsed,
        p50_ms=_percentile(latencies, 0.50) * 1000,
        p99_ms=_percentile(latencies, 0.99) * 1000,
        txns=txns1 - txns0,
        syncs=syncs1 - syncs0,
        cpu_s=cpu1 - cpu0,
        syncs_in_flight=in_flight,
    )


def _format_namenode(conf_dir: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hadoop_qjm.cli", "--config", str(conf_dir)]
        + ["namenode", "-format", "-nonInteractive"],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=120,
    )
    if result.returncode != 0:
        raise RuntimeError(f"namenode -format failed: {result.stderr.strip()[-2000:]}")


def _formatted_namenode_conf(
    conf_dir: Path,
    name_dir: Path,
    shared_edits: str,
    handlers: int,
    pipeline_depth: int | None,
    extra: Mapping[str, object] | None = None,
) -> Path:
    """A NameNode's configuration directory on 127.0.0.1 with OS-chosen ports, and its
    namespace formatted (``extra``: more properties)."""
    props: dict[str, object] = {
        "dfs.namenode.name.dir": str(name_dir),
        "dfs.namenode.shared.edits.dir": shared_edits,
        "dfs.namenode.rpc-address": "127.0.0.1:0",
        "dfs.namenode.http-address": "127.0.0.1:0",
        "dfs.namenode.handler.count": handlers,
        **(extra or {}),
    }
    if pipeline_depth is not None:
        props["dfs.namenode.edits.sync.pipeline.depth"] = pipeline_depth
    written = write_conf_dir(conf_dir, props)
    _format_namenode(written)
    return written


class _FloorServer:
    """The RPC-floor process (``_nn_load floor``), stopped by its pid."""

    def __init__(self, handlers: int) -> None:
        self.popen = subprocess.Popen(
            [*_CLIENT, "floor", str(handlers)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=child_env(),
        )
        line = self.popen.stdout.readline()  # type: ignore[union-attr]
        if not line.startswith("PORT "):
            self.stop()
            raise RuntimeError(f"RPC floor server did not start: {line.strip()!r}")
        self.port = int(line.split()[1])
        self.pid = self.popen.pid

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.stdin.close()  # type: ignore[union-attr]
            try:
                self.popen.wait(15)
            except subprocess.TimeoutExpired:
                self.popen.kill()
        self.popen.wait()

    def __enter__(self) -> _FloorServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _phases(
    port: int,
    pid: int,
    counts: Sequence[int],
    args: argparse.Namespace,
    tag: str,
    what: str,
    counters: Callable[[], tuple[int, int, float]] | None = None,
) -> list[PhaseResult]:
    """One :func:`run_phase` against the server at ``port`` per client count (tagged
    ``tag0``, ``tag1``, …), each printed as it ends (``what`` it counts per second), with
    the command's ``--seconds``, ``--max-ops`` and ``--client-processes``."""
    results = []
    for i, clients in enumerate(counts):
        result = run_phase(
            port,
            pid,
            clients,
            args.seconds,
            args.max_ops,
            f"{tag}{i}",
            processes=args.client_processes,
            counters=counters,
        )
        results.append(result)
        print(_line(result, what), flush=True)
    return results


def _line(result: PhaseResult, what: str) -> str:
    line = (
        f"{result.clients:>4} clients: {result.ops_per_s:>9,.0f} {what}/s  "
        f"p50 {result.p50_ms:7.2f} ms  p99 {result.p99_ms:7.2f} ms  "
    )
    if what == "mkdirs":
        line += f"txns/sync {result.txns_per_sync:6.2f}  max in flight {result.syncs_in_flight:g}  "
    line += f"CPU {result.cpu_us_per_op:6.0f} µs/call  ({result.ops} ops"
    return line + (f", {result.errors} errors)" if result.errors else ")")


def _goals(results: list[PhaseResult], floor: list[PhaseResult]) -> None:
    """Print the goals as ratios of this run's figures."""
    if not results:
        return
    at = min(results, key=lambda r: abs(r.clients - 64))
    same = next((f for f in floor if f.clients == at.clients), None)
    met = "met" if 0 < at.cpu_us_per_op <= CPU_GOAL_US else "NOT met"
    floor_cpu = f", the RPC floor's {same.cpu_us_per_op:.0f} µs per call" if same else ""
    print(
        f"NameNode CPU per mkdir at {at.clients} clients: {at.cpu_us_per_op:.0f} µs "
        f"(goal <= {CPU_GOAL_US:g} µs: {met}{floor_cpu})"
    )
    if same is not None and same.ops_per_s > 0:
        ratio = at.ops_per_s / same.ops_per_s
        met = "met" if ratio >= FLOOR_GOAL_RATIO else "NOT met"
        print(
            f"{at.clients} clients, NameNode / RPC floor: {ratio:.2f}x calls/s "
            f"(goal >= {FLOOR_GOAL_RATIO:g}x: {met})"
        )
    one = next((r for r in results if r.clients == 1), None)
    if one is not None and at.clients > 1 and one.ops_per_s > 0:
        ratio = at.ops_per_s / one.ops_per_s
        met = "met" if ratio >= GOAL_RATIO else "NOT met"
        print(
            f"{at.clients} clients / 1 client: {ratio:.1f}x mkdirs/s "
            f"(goal >= {GOAL_RATIO:g}x: {met})"
        )


#: The sides of the permissions comparison: (label, checks and audit on, audit async).
_PERMISSION_SIDES = (("off", False, False), ("on", True, False), ("on-async", True, True))


def _permission_runs(
    cluster: MiniJournalCluster,
    base: Path,
    counts: Sequence[int],
    args: argparse.Namespace,
    handlers: int,
) -> dict[str, PhaseResult]:
    """The cost of permission checks and the audit log on NameNode processes: three
    NameNodes, each freshly formatted on a journal of its own
    (``bench-namenode-perm-<side>``), all running: ``off`` with
    ``dfs.permissions.enabled=false`` and the audit log nowhere
    (``HDFS_AUDIT_LOGGER=INFO,NullAppender``); ``on`` with the checks on and every call
    in ``hdfs-audit.log`` (``INFO,RFAAUDIT``, whose lines are counted), written by the
    calls' own threads (the default); ``on-async`` the same with
    ``dfs.namenode.audit.log.async=true``. The clients call as ``alice``
    (``HADOOP_USER_NAME``), a tenant whose ``/bench`` the NameNode's user gave her. The
    phase of the count nearest 64 clients runs six times, off, on, on-async, on-async,
    on, off, so that a machine slowing down or speeding up during the runs weighs on every
    side alike; each side's figures are its two phases together."""
    clients = min(counts, key=lambda c: abs(c - 64))
    log_dir = base / "perm-logs"
    phases: dict[str, list[PhaseResult]] = {label: [] for label, _, _ in _PERMISSION_SIDES}
    with contextlib.ExitStack() as stack:
        nodes = {}
        for label, checked, asynchronous in _PERMISSION_SIDES:
            conf_dir = _formatted_namenode_conf(
                base / f"conf-perm-{label}",
                base / f"name-perm-{label}",
                cluster.quorum_journal_uri(f"{JID}-perm-{label}"),
                handlers,
                args.pipeline_depth,
                {
                    "dfs.permissions.enabled": "true" if checked else "false",
                    "dfs.namenode.audit.log.async": "true" if asynchronous else "false",
                },
            )
            env = {
                "HADOOP_LOG_DIR": str(log_dir / label),
                "HDFS_AUDIT_LOGGER": "INFO,RFAAUDIT" if checked else "INFO,NullAppender",
            }
            log = base / f"namenode-perm-{label}.log"
            nodes[label] = nn = stack.enter_context(NameNodeProcess(conf_dir, log, env=env))
            with NameNodeProxy("127.0.0.1", nn.rpc_port) as proxy:
                proxy.mkdirs("/bench")
                proxy.set_owner("/bench", "alice", None)
        order = [label for label, _, _ in _PERMISSION_SIDES]
        for i, label in enumerate(order + order[::-1]):
            nn = nodes[label]
            phases[label].append(
                run_phase(
                    nn.rpc_port,
                    nn.pid,
                    clients,
                    args.seconds,
                    args.max_ops,
                    f"perm-{label}{i}",
                    processes=args.client_processes,
                    counters=lambda nn=nn: _edit_log_counters(nn.http_port),
                    client_env={"HADOOP_USER_NAME": "alice"},
                )
            )
    sides = {label: _combined(runs) for label, runs in phases.items()}
    what = {
        "off": "dfs.permissions.enabled=false, no audit log",
        "on": "checks on as alice, every call in hdfs-audit.log",
        "on-async": "the same, dfs.namenode.audit.log.async=true",
    }
    for label, result in sides.items():
        print(f"permissions {label} ({what[label]}), 2 phases:")
        print("  " + _line(result, "mkdirs"))
    for label in ("on", "on-async"):
        audit = log_dir / label / AUDIT_LOG_FILE
        lines = sum(1 for _ in audit.open(encoding="utf-8")) if audit.exists() else 0
        print(f"  hdfs-audit.log of the '{label}' NameNode: {lines:,} lines", flush=True)
    return sides


def _combined(phases: list[PhaseResult]) -> PhaseResult:
    """Phases of one client count as one: their calls, time and CPU summed (latency
    percentiles: the worse of theirs; the group-commit figures: summed, the most)."""
    return PhaseResult(
        clients=phases[0].clients,
        ops=sum(p.ops for p in phases),
        errors=sum(p.errors for p in phases),
        seconds=sum(p.seconds for p in phases),
        p50_ms=max(p.p50_ms for p in phases),
        p99_ms=max(p.p99_ms for p in phases),
        txns=sum(p.txns for p in phases),
        syncs=sum(p.syncs for p in phases),
        cpu_s=sum(p.cpu_s for p in phases),
        syncs_in_flight=max(p.syncs_in_flight for p in phases),
    )


def _permissions_goal(sides: dict[str, PhaseResult] | None) -> None:
    if not sides:
        return
    off = sides["off"]
    for label in ("on", "on-async"):
        on = sides[label]
        ratio = on.ops_per_s / off.ops_per_s if off.ops_per_s else 0.0
        met = "met" if ratio >= PERMISSIONS_GOAL_RATIO else "NOT met"
        print(
            f"{on.clients} clients, permissions and audit {label} / off: {ratio:.2f}x "
            f"mkdirs/s, NameNode CPU {on.cpu_us_per_op:.0f} vs {off.cpu_us_per_op:.0f} µs "
            f"per mkdir (goal >= {PERMISSIONS_GOAL_RATIO:g}x: {met})"
        )


def run(argv: Sequence[str], conf) -> int:
    from hadoop_qjm.common.command_line import CommandParser, finite_float

    if any(a == "--observers" or a.startswith("--observers=") for a in argv):
        from hadoop_qjm.tools.bench._nn_observers import run as run_observers

        return run_observers(argv, conf)

    parser = CommandParser(prog="hdfs-py bench namenode", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--clients", default="1,8,64,256", help="comma-separated client thread counts (1,8,64,256)"
    )
    parser.add_argument(
        "--client-processes",
        type=int,
        default=2,
        help="processes the client threads of a phase are spread over (2)",
    )
    parser.add_argument(
        "--seconds", type=finite_float, default=5.0, help="duration of each phase (5)"
    )
    parser.add_argument("--max-ops", type=int, default=1_000_000, help="cap per phase (1000000)")
    parser.add_argument("--handlers", type=int, default=None, help="dfs.namenode.handler.count")
    parser.add_argument(
        "--pipeline-depth",
        type=int,
        default=None,
        help="dfs.namenode.edits.sync.pipeline.depth: syncs that may be in flight (the default)",
    )
    parser.add_argument("--no-floor", action="store_true", help="skip the RPC floor phases")
    parser.add_argument("--dir", default=None, help="where the NameNode and JournalNodes write")
    parser.add_argument(  # for --help only: run() hands --observers off before parsing
        "--observers",
        help="reads over observers instead (0,1,2; its flags: --observers 0 --help; docs/ha.md)",
    )
    args = parser.parse_args(argv)
    try:
        counts = [int(c) for c in args.clients.split(",") if c.strip()]
    except ValueError:
        parser.error(f"--clients must be comma-separated integers, not {args.clients!r}")
    if not counts or min(counts) <= 0 or max(counts) > 1024:
        parser.error("--clients must be between 1 and 1024")
    if args.seconds <= 0 or args.max_ops <= 0:
        parser.error("--seconds and --max-ops must be positive")
    if not 1 <= args.client_processes <= 16:
        parser.error("--client-processes must be between 1 and 16")
    if args.pipeline_depth is not None and not 1 <= args.pipeline_depth <= 64:
        parser.error("--pipeline-depth must be between 1 and 64")

    base = Path(tempfile.mkdtemp(prefix="bench-nn-", dir=args.dir))
    results: list[PhaseResult] = []
    floor: list[PhaseResult] = []
    permissions: dict[str, PhaseResult] | None = None
    handlers = args.handlers or 10
    try:
        with MiniJournalCluster(3, base_dir=base / "jn", processes=True) as cluster:
            conf_dir = _formatted_namenode_conf(
                base / "conf",
                base / "name",
                cluster.quorum_journal_uri(JID),
                handlers,
                args.pipeline_depth,
            )
            with NameNodeProcess(conf_dir, base / "namenode.log") as nn:
                print(
                    f"NameNode pid {nn.pid} on 127.0.0.1:{nn.rpc_port}, 3 JournalNode processes, "
                    f"{handlers} handlers, {args.seconds:g} s per phase, clients in up to "
                    f"{args.client_processes} processes",
                    flush=True,
                )
                with NameNodeProxy("127.0.0.1", nn.rpc_port) as proxy:
                    proxy.mkdirs("/bench")
                results = _phases(
                    nn.rpc_port,
                    nn.pid,
                    counts,
                    args,
                    "n",
                    "mkdirs",
                    counters=lambda: _edit_log_counters(nn.http_port),
                )
            permissions = _permission_runs(cluster, base, counts, args, handlers)
        if not args.no_floor:
            with _FloorServer(handlers) as server:
                print(f"RPC floor: pid {server.pid} on 127.0.0.1:{server.port}", flush=True)
                floor = _phases(server.port, server.pid, counts, args, "f", "calls")
        for line in permissions_lines(args.seconds, min(args.max_ops, 200_000), base):
            print(line, flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    _goals(results, floor)
    _permissions_goal(permissions)
    return 0
