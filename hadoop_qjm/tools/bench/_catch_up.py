"""``hdfs-py bench journalnode --catch-up``: how fast a wiped JournalNode catches up.

Two JournalNodes (processes, as real peers are) hold ``--segments`` finalized segments of about
``--segment-mb`` MB each (each with the md5 its finalize kept); a third, empty, is brought in
with ``journalnode -bootstrap``'s code (format from the peers, then the JournalNodeSyncer's
downloads: two segments at once over HTTP, the md5 hashed as received, then fdatasync,
rename and fsync dir in the installer's thread). Its MB/s and segments/s are printed next
to a raw local copy of the same files on the same disk (read, write, fsync, rename, fsync
dir), in ``--rounds`` rounds; the median ratio is printed with its goal, at least 0.5,
and the CPU a catch-up cost this process and the peers. Printed, not asserted.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.durable import fsync_dir
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.server.segment_md5 import md5_file_for
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.ports import free_ports
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, make_request
from hadoop_qjm.tools.bench._qjm_measure import _cpu_seconds

__all__ = ["GOAL", "run_catch_up"]

JID = "bench-catch-up"
GOAL = 0.5
_MB = 1024 * 1024


def _fill(cluster: MiniJournalCluster, segments: int, segment_bytes: int) -> None:
    """Write ``segments`` finalized segments of about ``segment_bytes`` to nodes 0 and 1."""
    from hadoop_qjm.tools.bench.edits import make_batch

    per_op = len(make_batch(1, 100)) / 100
    ops = max(1, int(segment_bytes / per_op))
    batch_ops = min(ops, 2000)
    for i in range(2):
        with QJournalProtocolProxy(*cluster.rpc_address(i), timeout_s=120) as p:
            p.format(JID, FAKE_NSINFO)
            p.new_epoch(JID, FAKE_NSINFO, 1)
            serial, txid = 0, 1
            for _ in range(segments):
                start = txid
                committed = start - 1

                def req(committed_txid: int = committed):
                    nonlocal serial
                    serial += 1
                    return make_request(serial, committed_txid=committed_txid, journal_id=JID)

                p.start_log_segment(req(), start, CURRENT_LAYOUT_VERSION)
                while txid < start + ops:
                    n = min(batch_ops, start + ops - txid)
                    p.journal(req(), start, txid, n, make_batch(txid, n))
                    txid += n
                p.finalize_log_segment(req(txid - 1), start, txid - 1)


def _segments(current: Path) -> list[Path]:
    """The finalized segments in ``current`` in txid order (FileJournalManager's match)."""
    from hadoop_qjm.editlog.file_journal_manager import match_edit_logs

    logs = sorted(match_edit_logs(current), key=lambda log: log.first_txid)
    return [Path(log.path) for log in logs if not log.is_in_progress]


def _raw_copy(files: list[Path], dest: Path) -> float:
    """Copy ``files`` into ``dest`` as the syncer installs a segment; the seconds taken."""
    dest.mkdir()
    start = time.perf_counter()
    for f in files:
        tmp = dest / (f.name + ".tmp")
        with open(f, "rb") as src, open(tmp, "wb") as out:
            shutil.copyfileobj(src, out, 1024 * 1024)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, dest / f.name)
        fsync_dir(dest)
    return time.perf_counter() - start


def _verify_alone(directory: Path) -> float:
    """Run the syncer's check of every op (frame, CRC32, txid: ``SegmentVerifier``, fed
    1 MiB at a time as a download feeds it) over the finalized segments in ``directory``
    (their txids from their names, as the syncer has them from the manifest); the
    seconds it took."""
    from hadoop_qjm.editlog.file_journal_manager import match_edit_logs
    from hadoop_qjm.editlog.fs_edit_log_op import DEFAULT_MAX_OP_SIZE
    from hadoop_qjm.qjournal.server.scrub_rules import SegmentVerifier

    logs = [log for log in match_edit_logs(directory) if not log.is_in_progress]
    start = time.perf_counter()
    for log in logs:
        verifier = SegmentVerifier(log.first_txid, log.last_txid, DEFAULT_MAX_OP_SIZE)
        with open(log.path, "rb") as src:
            while chunk := src.read(_MB):
                verifier.feed(chunk)
        if verifier.finish() is not None:
            raise RuntimeError(f"the bench's own segment {log.name} does not verify")
    return time.perf_counter() - start


def _import_catch_up_modules() -> float:
    """Import what ``bootstrap`` imports on its first call (the JournalNode, its servers,
    the formatter); the seconds it took. A command pays this once at start-up and a
    running daemon's syncer never: it is printed apart, not timed as catch-up."""
    start = time.perf_counter()
    import hadoop_qjm.qjournal.server.journal_formatter  # noqa: F401
    import hadoop_qjm.qjournal.server.journal_node  # noqa: F401

    return time.perf_counter() - start


def _md5_alone(files: list[Path]) -> float:
    """The md5 of ``files`` fed 1 MiB at a time, as a download hashes what it receives
    when its peer sent the md5 it kept; the seconds it took."""
    start = time.perf_counter()
    for f in files:
        digest = hashlib.md5(usedforsecurity=False)
        with open(f, "rb") as src:
            while chunk := src.read(_MB):
                digest.update(chunk)
    return time.perf_counter() - start


def _tick_ms() -> float:
    """How finely another process's CPU time is counted (its clock tick), in ms."""
    try:
        return 1000 / os.sysconf("SC_CLK_TCK")
    except (ValueError, OSError, AttributeError):
        return 10.0


@dataclass(frozen=True)
class CatchUpTime:
    """One catch-up: its seconds, and the CPU seconds this process and the peers used."""

    seconds: float
    own_cpu_s: float
    peers_cpu_s: float


def _catch_up(cluster: MiniJournalCluster, target: Path) -> CatchUpTime:
    """Bring a wiped JournalNode in at ``target`` (``journalnode -bootstrap``'s code); the
    time it took."""
    from hadoop_qjm.qjournal.server.journal_node import JournalNode
    from hadoop_qjm.qjournal.server.journal_node_bootstrap import bootstrap

    port = free_ports(1)[0]
    hosts = ";".join(f"127.0.0.1:{p}" for p in [*cluster.rpc_ports, port])
    new = Configuration()
    new.set("dfs.journalnode.edits.dir", str(target))
    new.set("dfs.journalnode.rpc-address", f"127.0.0.1:{port}")
    new.set("dfs.journalnode.http-address", "127.0.0.1:0")
    new.set("dfs.namenode.shared.edits.dir", f"qjournal://{hosts}/{JID}")
    peers = [node.pid for node in cluster.nodes]
    own, peers_cpu = time.process_time(), _cpu_seconds(peers)
    start = time.perf_counter()
    bootstrap(new, JournalNode, non_interactive=True, out=io.StringIO())
    seconds = time.perf_counter() - start
    return CatchUpTime(seconds, time.process_time() - own, _cpu_seconds(peers) - peers_cpu)


def run_catch_up(segments: int, segment_mb: float, directory: str | None, rounds: int = 5) -> int:
    """``rounds`` rounds, each a raw copy and a catch-up of a wiped node into fresh
    directories (in turn first, so neither always meets the disk's state the other left);
    the ratio printed is the median of the rounds' ratios: this machine's disk swings
    several-fold from one second to the next, and a ratio within a round sees both sides
    under the same load."""
    import_s = _import_catch_up_modules()
    base = Path(tempfile.mkdtemp(prefix="bench-catch-up-", dir=directory))
    try:
        conf = Configuration()
        with MiniJournalCluster(2, base_dir=base / "cluster", conf=conf, processes=True) as cluster:
            _fill(cluster, segments, int(segment_mb * _MB))
            files = _segments(cluster.current_dir(0, JID))
            total = sum(f.stat().st_size for f in files)
            mb = total / _MB
            print(
                f"{len(files)} finalized segments, {mb:.1f} MB "
                f"({mb / max(len(files), 1):.2f} MB each), on 2 JournalNodes; {rounds} rounds"
            )
            raw_times, sync_times, ratios = [], [], []
            catch_ups: list[CatchUpTime] = []
            vouched = 0
            for r in range(rounds):
                target = base / f"new-jn-{r}"
                if r % 2 == 0:
                    raw_s = _raw_copy(files, base / f"raw-copy-{r}")
                    took = _catch_up(cluster, target)
                else:
                    took = _catch_up(cluster, target)
                    raw_s = _raw_copy(files, base / f"raw-copy-{r}")
                catch_ups.append(took)
                sync_s = took.seconds
                current = target / JID / "current"
                if [f.name for f in _segments(current)] != [f.name for f in files]:
                    print("catch-up: the new JournalNode did not get every segment")
                    return 1
                # Only a copy installed with its peer's md5 has one kept beside it.
                vouched = sum(1 for f in files if md5_file_for(current / f.name).exists())
                raw_times.append(raw_s)
                sync_times.append(sync_s)
                ratios.append(raw_s / sync_s if sync_s else 0.0)
                print(
                    f"  round {r + 1}: raw copy {mb / raw_s:,.1f} MB/s, catch-up "
                    f"{mb / sync_s:,.1f} MB/s: {ratios[-1]:.2f}"
                )
                shutil.rmtree(target, ignore_errors=True)
                shutil.rmtree(base / f"raw-copy-{r}", ignore_errors=True)
            verify_s = _verify_alone(cluster.current_dir(0, JID))
            md5_s = _md5_alone(files)
        raw_s, sync_s = statistics.median(raw_times), statistics.median(sync_times)
        print(
            f"raw local copy (read, write, fsync, rename, fsync dir): {mb / raw_s:,.1f} MB/s, "
            f"{len(files) / raw_s:,.1f} segments/s (median)"
        )
        print(
            f"catch-up of a wiped JournalNode (format from peers + JournalNodeSyncer "
            f"downloads): {mb / sync_s:,.1f} MB/s, {len(files) / sync_s:,.1f} segments/s "
            f"in {sync_s:.2f} s (median)"
        )
        print(f"ratio to the raw copy: {statistics.median(ratios):.2f} (goal >= {GOAL})")
        own = statistics.median(t.own_cpu_s for t in catch_ups)
        peers = statistics.median(t.peers_cpu_s for t in catch_ups)
        busy = statistics.median((t.own_cpu_s + t.peers_cpu_s) / t.seconds for t in catch_ups)
        print(
            f"CPU per catch-up (median): this process (the new JournalNode) {own * 1e3:,.0f} "
            f"ms, the two peers {peers * 1e3:,.0f} ms (counted in {_tick_ms():g} ms clock "
            f"ticks, their background threads included); {busy:.1f} of this machine's "
            f"{os.cpu_count()} CPUs busy over a catch-up"
        )
        print(
            f"installed with the md5 their peer kept (hashed as received, ops not checked "
            f"again): {vouched} of {len(files)} segments; the rest checked op by op"
        )
        print(
            f"for comparison, alone on the same files: md5 {md5_s:.2f} s "
            f"({mb / md5_s if md5_s else 0.0:,.1f} MB/s); checking every op (frame, CRC32, "
            f"txid: SegmentVerifier, what a copy without its peer's md5 costs) {verify_s:.2f} s "
            f"({mb / verify_s if verify_s else 0.0:,.1f} MB/s)"
        )
        # A copy installed on its peer's md5 has every byte hashed, and MD5 is one stream:
        # the md5 alone over the raw copy is the most such a catch-up can reach.
        print(
            f"the ceiling an md5 of every byte sets: md5 alone / raw copy "
            f"{raw_s / md5_s if md5_s else 0.0:.2f}; catch-up / md5 alone "
            f"{md5_s / sync_s if sync_s else 0.0:.2f}"
        )
        print(f"(module imports before the catch-up, not timed: {import_s:.2f} s)")
        return 0
    finally:
        shutil.rmtree(base, ignore_errors=True)
