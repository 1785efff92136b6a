"""Helpers of the automatic-failover process tests (not a test module).

* :func:`start_auto_failover` — a MiniHACluster on a ZooKeeper, ``zkfc -formatZK`` run,
  both controllers started, one NameNode elected;
* :class:`HistoryLoad` — client threads streaming ``mkdirs`` through the failover client,
  recording what each tried, what was acknowledged (and when), and whether the client's
  next listing of the parent showed each acknowledged directory;
* :func:`history_violations` (pure) and :func:`check_history` — the client-side history
  check at the end, on whichever NameNode is active;
* :class:`StateWatcher` — a thread asking both NameNodes their HA state, alternately,
  throughout a test; :meth:`StateWatcher.double_actives` finds the moments both were
  provably active;
* :class:`PinnedWriter` — a client of *one* NameNode (no failover): a deposed active
  must never acknowledge its writes;
* :func:`explained` — on failure, the tails of the controllers', NameNodes' (and
  JournalNodes') logs are appended to the error.

Every wait polls a condition with a deadline; every load is bounded in count and time.
"""

from __future__ import annotations

import contextlib
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from hadoop_qjm.namenode.protocol.exceptions import StandbyException
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_ha_cluster import NNIDS, MiniHACluster

__all__ = [
    "CALL_TIMEOUT_S",
    "HistoryLoad",
    "HistoryReport",
    "PinnedWriter",
    "StateWatcher",
    "check_history",
    "double_actives",
    "explained",
    "history_violations",
    "journal_log_path",
    "log_offset",
    "log_since",
    "other",
    "quick_states",
    "start_auto_failover",
    "wait_log",
    "wait_one_active",
    "watch_states",
]

#: The failover client's per-call bound: a call to a frozen NameNode fails over after it.
CALL_TIMEOUT_S = 2.0
#: Directories per bucket of a load client: its listings stay short however long it runs.
BUCKET = 100


# ---- cluster ------------------------------------------------------------------------------------
def start_auto_failover(
    base_dir: Path, zookeeper: str, *, num_namenodes: int = len(NNIDS), **properties: object
) -> MiniHACluster:
    """A MiniHACluster with automatic failover on ``zookeeper``: ``-formatZK``, every
    controller started, exactly one NameNode active and the others standby."""
    cluster = MiniHACluster(
        base_dir, zookeeper=zookeeper, properties=properties, num_namenodes=num_namenodes
    )
    try:
        result = cluster.format_zk()
        if result.returncode != 0:
            raise RuntimeError(f"zkfc -formatZK failed ({result.returncode}): {result.stderr}")
        for nnid in cluster.nnids:
            cluster.start_zkfc(nnid)
        wait_one_active(cluster, 60)
    except BaseException:
        cluster.shutdown()
        raise
    return cluster


def other(nnid: str) -> str:
    return next(n for n in NNIDS if n != nnid)


def quick_states(cluster: MiniHACluster, timeout_s: float = 1.0) -> dict[str, str]:
    """Each NameNode's HA state, every call bounded by ``timeout_s`` (``unreachable`` if it
    does not answer: dead or frozen). MiniHACluster.states() waits 10 s on a frozen one."""
    states = {}
    for nnid in cluster.nnids:
        try:
            with cluster.proxy(nnid, timeout_s=timeout_s) as proxy:
                states[nnid] = proxy.get_service_status().state.name.lower()
        except Exception:  # noqa: BLE001 - dead, frozen, or mid-start
            states[nnid] = "unreachable"
    return states


def wait_one_active(cluster: MiniHACluster, timeout_s: float = 30.0) -> tuple[str, str]:
    """Wait until one NameNode is active and the others standby; ``(active, standby)``
    (of three or more, the first standby)."""
    seen: dict[str, str] = {}
    wanted = ["active"] + ["standby"] * (len(cluster.nnids) - 1)

    def settled() -> bool:
        seen.update(quick_states(cluster))
        return sorted(seen.values()) == wanted

    wait_until(settled, timeout_s, f"one active and the other NameNodes standby (last seen {seen})")
    active = next(n for n, s in seen.items() if s == "active")
    return active, next(n for n in cluster.nnids if n != active)


def watch_states(
    cluster: MiniHACluster,
    seconds: float,
    check: Callable[[dict[str, str]], str | None],
    pause_s: float = 0.1,
) -> int:
    """Poll the states for ``seconds`` (a bounded watch, not a wait); fail at the first
    ``check`` objects to (it returns the objection, else None). Returns the polls made."""
    polls = 0
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        states = quick_states(cluster)
        polls += 1
        problem = check(states)
        assert problem is None, f"{problem}: {states}"
        time.sleep(pause_s)
    return polls


# ---- logs ---------------------------------------------------------------------------------------
def journal_log_path(cluster: MiniHACluster, i: int) -> Path:
    return cluster.journal_nodes.base_dir / f"journalnode-{i}.log"


def log_offset(path: Path) -> int:
    """The size of ``path`` now: :func:`log_since` reads what is written after it."""
    try:
        return path.stat().st_size
    except FileNotFoundError:
        return 0


def log_since(path: Path, offset: int = 0) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return ""


def wait_log(path: Path, pattern: str, offset: int, timeout_s: float, what: str) -> re.Match:
    """Wait until ``pattern`` (a regex) appears in ``path`` after ``offset``."""
    found: list[re.Match] = []

    def appeared() -> bool:
        match = re.search(pattern, log_since(path, offset))
        if match:
            found.append(match)
        return match is not None

    wait_until(appeared, timeout_s, what)
    return found[0]


def _tail(path: Path, lines: int) -> str:
    text = log_since(path)
    if not text:
        return f"---- {path.parent.name}/{path.name}: (empty or missing)"
    kept = [line[:300] for line in text.splitlines()[-lines:]]
    return f"---- {path.parent.name}/{path.name} (last {len(kept)} lines) ----\n" + "\n".join(kept)


def log_tails(
    cluster: MiniHACluster, extra: Iterable[Path] = (), lines: int = 25, extra_lines: int = 25
) -> str:
    paths = [cluster.zkfc_log_path(n) for n in NNIDS] + [cluster.log_path(n) for n in NNIDS]
    tails = [_tail(path, lines) for path in paths] + [_tail(path, extra_lines) for path in extra]
    return "\n".join(tails)


@contextlib.contextmanager
def explained(
    cluster: MiniHACluster, extra: Iterable[Path] = (), extra_lines: int = 25
) -> Iterator[None]:
    """On any failure inside, append the tails of the controllers' and NameNodes' logs
    (and of ``extra`` logs, ``extra_lines`` each) to the error."""
    try:
        yield
    except BaseException as e:
        e.add_note(log_tails(cluster, extra, extra_lines=extra_lines))
        raise


# ---- the load and its history -------------------------------------------------------------------
@dataclass
class ClientHistory:
    """What one load client did: every path it tried, in order; every acknowledgement
    (monotonic time, path); acknowledged paths its next listing of the parent lacked."""

    tried: list[str] = field(default_factory=list)
    acked: list[tuple[float, str]] = field(default_factory=list)
    listing_misses: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


class HistoryLoad:
    """``threads`` clients, each with its own failover client (hdfs://mycluster), each
    streaming ``mkdirs <root>/c<n>/b<i // 100>/d<i>``, at most ``max_ops`` each and for at
    most ``seconds``. After an acknowledged mkdirs the client lists the parent (through
    the failover client, on whichever NameNode is active; retried on errors) and records
    a miss if the new directory is not in that listing."""

    def __init__(
        self,
        cluster: MiniHACluster,
        root: str = "/load",
        *,
        threads: int = 2,
        max_ops: int = 5000,
        seconds: float = 60.0,
        check_listing: bool = True,
    ) -> None:
        self.root = root
        self.histories = [ClientHistory() for _ in range(threads)]
        self._clients = [cluster.client(timeout_s=CALL_TIMEOUT_S) for _ in range(threads)]
        self._check_listing = check_listing
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._deadline = time.monotonic() + seconds
        self._threads = [
            threading.Thread(target=self._run, args=(n, max_ops), daemon=True, name=f"load-{n}")
            for n in range(threads)
        ]
        for thread in self._threads:
            thread.start()

    def _running(self) -> bool:
        return not self._stop.is_set() and time.monotonic() < self._deadline

    def _run(self, n: int, max_ops: int) -> None:
        fs, history = self._clients[n], self.histories[n]
        for i in range(max_ops):
            if not self._running():
                return
            path = f"{self.root}/c{n}/b{i // BUCKET}/d{i}"
            with self._lock:
                history.tried.append(path)
            try:
                ok = fs.mkdirs(path)
            except Exception as e:  # noqa: BLE001 - recorded; the test decides
                with self._lock:
                    history.errors.append(f"mkdirs {path}: {type(e).__name__}: {e}")
                continue
            if not ok:
                with self._lock:
                    history.errors.append(f"mkdirs {path} returned {ok!r}")
                continue
            with self._lock:
                history.acked.append((time.monotonic(), path))
            if self._check_listing:
                self._check_listed(fs, path, history)

    def _check_listed(self, fs, path: str, history: ClientHistory) -> None:
        parent, name = path.rsplit("/", 1)
        while self._running():
            try:
                names = {status.name for status in fs.list_status(parent)}
            except Exception as e:  # noqa: BLE001 - no active right now: list again
                with self._lock:
                    history.errors.append(f"list {parent}: {type(e).__name__}: {e}")
                self._stop.wait(0.05)
                continue
            if name not in names:
                with self._lock:
                    history.listing_misses.append(f"{path} (listed on {fs.current.nnid})")
            return
        with self._lock:
            history.unlisted.append(path)

    # ---- progress ------------------------------------------------------------------------------
    def count(self) -> int:
        with self._lock:
            return sum(len(h.acked) for h in self.histories)

    def acks_after(self, since: float) -> int:
        with self._lock:
            return sum(1 for h in self.histories for t, _ in h.acked if t > since)

    def acks_between(self, start: float, end: float) -> int:
        with self._lock:
            return sum(1 for h in self.histories for t, _ in h.acked if start < t <= end)

    def wait_acks(self, n: int, timeout_s: float, since: float = 0.0, what: str = "") -> None:
        """Wait until ``n`` acknowledgements came after ``since`` (monotonic time)."""
        wait_until(
            lambda: self.acks_after(since) >= n,
            timeout_s,
            f"{n} acknowledged mkdirs {what} (have {self.acks_after(since)}; last errors "
            f"{self.last_errors()})",
        )

    def last_errors(self, k: int = 3) -> list[str]:
        with self._lock:
            return [e for h in self.histories for e in h.errors[-k:]]

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)
        for fs in self._clients:
            fs.close()
        alive = [t.name for t in self._threads if t.is_alive()]
        assert not alive, f"load clients did not stop: {alive}"

    # ---- the record ----------------------------------------------------------------------------
    @property
    def tried(self) -> set[str]:
        with self._lock:
            return {p for h in self.histories for p in h.tried}

    @property
    def acked(self) -> set[str]:
        with self._lock:
            return {p for h in self.histories for _, p in h.acked}

    @property
    def listing_misses(self) -> list[str]:
        with self._lock:
            return [m for h in self.histories for m in h.listing_misses]


@dataclass(frozen=True)
class HistoryReport:
    """What the history check found: acknowledged directories missing at the end
    (``lost``), directories nobody tried to create (``phantom``), acknowledged ones a
    client's next listing lacked (``listing_misses``)."""

    lost: tuple[str, ...]
    phantom: tuple[str, ...]
    listing_misses: tuple[str, ...]
    acked: int
    tried: int

    @property
    def ok(self) -> bool:
        return not (self.lost or self.phantom or self.listing_misses)

    def __str__(self) -> str:
        return (
            f"{self.acked} acknowledged of {self.tried} tried; {len(self.lost)} lost "
            f"{list(self.lost[:5])}; {len(self.phantom)} phantom {list(self.phantom[:5])}; "
            f"{len(self.listing_misses)} missing from the next listing "
            f"{list(self.listing_misses[:5])}"
        )


def history_violations(
    root: str,
    tried: Iterable[str],
    acked: Iterable[str],
    present: Iterable[str],
    listing_misses: Iterable[str] = (),
) -> HistoryReport:
    """The client-side history check, a pure function: every acknowledged path is
    ``present``; every present directory under ``root`` is one a client tried to create,
    or a parent of one (``mkdirs`` creates the parents); no listing missed an
    acknowledged path."""
    tried, acked, present = set(tried), set(acked), set(present)
    allowed = set(tried)
    for path in tried:
        parent = path.rsplit("/", 1)[0]
        while parent.startswith(root + "/") and parent not in allowed:
            allowed.add(parent)
            parent = parent.rsplit("/", 1)[0]
    return HistoryReport(
        lost=tuple(sorted(acked - present)),
        phantom=tuple(sorted(p for p in present - allowed if p.startswith(root + "/"))),
        listing_misses=tuple(listing_misses),
        acked=len(acked),
        tried=len(tried),
    )


def walk_dirs(fs, root: str) -> set[str]:
    """Every directory under ``root`` (not ``root`` itself); empty if it does not exist."""
    if fs.get_file_info(root) is None:
        return set()
    found: set[str] = set()
    pending = [root]
    while pending:
        directory = pending.pop()
        for status in fs.list_status(directory):
            if status.is_dir:
                path = f"{directory}/{status.name}"
                found.add(path)
                if status.children_num != 0:  # -1: not reported, look
                    pending.append(path)
    return found


def check_history(cluster: MiniHACluster, load: HistoryLoad) -> HistoryReport:
    """The history check on whichever NameNode is active now (a fresh failover client).
    It may run while the load does: what was acknowledged is taken before the walk (all
    of it must be found), what was tried after it (everything found must be in it)."""
    acked, listing_misses = load.acked, load.listing_misses
    with cluster.client(timeout_s=10) as fs:
        present = walk_dirs(fs, load.root)
    return history_violations(load.root, load.tried, acked, present, listing_misses)


# ---- watching the HA states ---------------------------------------------------------------------
@dataclass(frozen=True)
class Sample:
    nnid: str
    sent: float
    received: float
    state: str


def double_actives(samples: list[Sample]) -> list[str]:
    """Moments both NameNodes were provably active, in sequential ``samples``: an *active*
    answer of one between two *active* answers of the other (it was active before and
    after the first was). A handover, where one steps down just before the other steps
    up, is no overlap — one sweep may still see both active — and is not reported."""
    found = []
    for before, middle, after in zip(samples, samples[1:], samples[2:]):
        if (
            before.nnid == after.nnid != middle.nnid
            and before.state == middle.state == after.state == "active"
        ):
            found.append(
                f"{middle.nnid} active at {middle.sent:.3f}-{middle.received:.3f} while "
                f"{before.nnid} was active at {before.received:.3f} and {after.sent:.3f}"
            )
    return found


class StateWatcher:
    """A thread asking nn1, nn2, nn1, nn2, … for their HA state (each call bounded by
    ``timeout_s``) until :meth:`stop`."""

    def __init__(self, cluster: MiniHACluster, timeout_s: float = 1.0, pause_s: float = 0.02):
        self.samples: list[Sample] = []
        self._cluster = cluster
        self._timeout_s = timeout_s
        self._pause_s = pause_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="state-watcher")
        self._thread.start()

    def _run(self) -> None:
        proxies: dict[str, object] = {}
        try:
            while not self._stop.is_set():
                for nnid in NNIDS:
                    sent = time.monotonic()
                    try:
                        proxy = proxies.get(nnid)
                        if proxy is None:
                            proxy = proxies[nnid] = self._cluster.proxy(
                                nnid, timeout_s=self._timeout_s
                            )
                        state = proxy.get_service_status().state.name.lower()
                    except Exception:  # noqa: BLE001 - dead or frozen: reconnect next time
                        state = "unreachable"
                        dropped = proxies.pop(nnid, None)
                        if dropped is not None:
                            dropped.close()
                    self.samples.append(Sample(nnid, sent, time.monotonic(), state))
                self._stop.wait(self._pause_s)
        finally:
            for proxy in proxies.values():
                proxy.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)

    def double_actives(self) -> list[str]:
        return double_actives(list(self.samples))

    def states_between(self, start: float, end: float) -> list[dict[str, str]]:
        """The sweeps (one sample of each NameNode) taken between ``start`` and ``end``."""
        sweeps, current = [], {}
        for sample in list(self.samples):
            if start <= sample.sent and sample.received <= end:
                current[sample.nnid] = sample.state
                if len(current) == len(NNIDS):
                    sweeps.append(current)
                    current = {}
        return sweeps


# ---- a client of one NameNode -------------------------------------------------------------------
class PinnedWriter:
    """``mkdirs <root>/p<i>`` sent to NameNode ``nnid`` only (a NameNodeProxy to its port,
    no failover), one at a time, until it answers StandbyException, its process exits,
    ``max_ops`` or ``seconds``. ``results`` holds (path, True/False or the error's type
    name); :attr:`started` is set once the first call is about to go out."""

    def __init__(
        self,
        cluster: MiniHACluster,
        nnid: str,
        root: str = "/pinned",
        *,
        max_ops: int = 30,
        seconds: float = 60.0,
        call_timeout_s: float = 30.0,
    ) -> None:
        self.nnid = nnid
        self.root = root
        self.results: list[tuple[str, object]] = []
        self.started = threading.Event()
        self._cluster = cluster
        self._process = cluster.namenode(nnid).popen
        self._max_ops = max_ops
        self._deadline = time.monotonic() + seconds
        self._call_timeout_s = call_timeout_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"pinned-{nnid}")
        self._thread.start()

    def _run(self) -> None:
        proxy = None
        try:
            for i in range(self._max_ops):
                if self._stop.is_set() or time.monotonic() > self._deadline:
                    return
                if proxy is None:
                    proxy = self._cluster.proxy(self.nnid, timeout_s=self._call_timeout_s)
                path = f"{self.root}/p{i}"
                self.started.set()
                try:
                    self.results.append((path, proxy.mkdirs(path)))
                except Exception as e:  # noqa: BLE001 - what the deposed active answers
                    self.results.append((path, type(e).__name__))
                    proxy.close()
                    proxy = None
                    if isinstance(e, StandbyException):
                        return
                if self._process.poll() is not None:
                    return
                self._stop.wait(0.1)
        finally:
            self.started.set()
            if proxy is not None:
                proxy.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(self._call_timeout_s + 10)

    @property
    def acked(self) -> list[str]:
        return [path for path, result in self.results if result is True]
