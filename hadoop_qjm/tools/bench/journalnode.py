"""``hdfs-py bench journalnode``: journal() batches over loopback Thrift to one JournalNode process.

One client sends batches of ``--batch`` MKDIR ops of about 100 bytes to a JournalNode
process and waits for each acknowledgement (the JournalNode fsyncs before it answers).
In the same run, on the same disk, it measures the raw ``os.write + os.fdatasync`` rate
for the same batch size: the ratio shows what Python, Thrift and the Journal's
bookkeeping cost on top of the disk. Goal (printed, never asserted): ≥ 0.8.

The two are measured in alternating slices of ``--slice`` seconds (raw, JournalNode,
JournalNode, raw, ...), and the ratio printed is the median of the per-pair ratios: on a
shared machine the disk's and the CPUs' speed drift within seconds, and measuring one
phase after the other would put that drift into the ratio.
"""

from __future__ import annotations

import os
import re
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.namenode.fs_edit_log_op import MkdirOp, encode_op
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, make_request

__all__ = ["run"]

JID = "bench-journal"
GOAL = 0.8


def make_batch(first_txid: int, count: int) -> bytes:
    """``count`` MKDIR ops of about 100 bytes each."""
    return b"".join(
        encode_op(MkdirOp.create(txid, f"/bench/dir-{txid:012d}-padding"))
        for txid in range(first_txid, first_txid + count)
    )


class RawAppender:
    """Plain append + fdatasync of ``batch_bytes`` on the same disk: the baseline."""

    def __init__(self, directory: Path, batch_bytes: int) -> None:
        self.path = directory / "raw-fsync-baseline"
        self.data = os.urandom(batch_bytes)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND
        self.fd = os.open(self.path, flags, 0o644)

    def run(self, seconds: float, max_batches: int) -> tuple[int, float]:
        """(batches appended, seconds taken) in a slice of about ``seconds``."""
        fd, data = self.fd, self.data
        count = 0
        start = time.perf_counter()
        deadline = start + seconds
        while count < max_batches and time.perf_counter() < deadline:
            os.write(fd, data)
            os.fdatasync(fd)
            count += 1
        return count, time.perf_counter() - start

    def close(self) -> None:
        os.close(self.fd)
        self.path.unlink()


def _fsync_micros_sum(http_port: int) -> float:
    text = (
        urllib.request.urlopen(f"http://127.0.0.1:{http_port}/metrics", timeout=30).read().decode()
    )
    match = re.search(
        r'^journalnode_fsync_latency_microseconds_sum\{journal_id="' + JID + r'"\} (\S+)$',
        text,
        re.MULTILINE,
    )
    return float(match.group(1)) if match else 0.0


class _JournalWriter:
    """Sends journal() batches to the JournalNode, one segment for the whole run."""

    def __init__(self, proxy: QJournalProtocolProxy, batch: int) -> None:
        self.proxy = proxy
        self.batch = batch
        # Pre-encoded outside the timed loop: the benchmark measures the journal.
        self.batches = [make_batch(1 + i * batch, batch) for i in range(64)]
        self.serial = 0
        self.txid = 1
        self.sent = 0

    def start(self) -> None:
        self.proxy.format(JID, FAKE_NSINFO)
        self.proxy.new_epoch(JID, FAKE_NSINFO, 1)
        self.proxy.start_log_segment(make_request(0, journal_id=JID), 1, CURRENT_LAYOUT_VERSION)

    def run(self, seconds: float, max_batches: int) -> tuple[int, float]:
        """(batches acknowledged, seconds taken) in a slice of about ``seconds``."""
        proxy, batches, batch = self.proxy, self.batches, self.batch
        count = 0
        start = time.perf_counter()
        deadline = start + seconds
        while count < max_batches and time.perf_counter() < deadline:
            self.serial += 1
            data = batches[self.sent % len(batches)]
            proxy.journal(make_request(self.serial, journal_id=JID), 1, self.txid, batch, data)
            self.txid += batch
            self.sent += 1
            count += 1
        return count, time.perf_counter() - start


def run(argv, conf) -> int:
    from hadoop_qjm.cli import CommandParser

    parser = CommandParser(prog="hdfs-py bench journalnode", description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=100, help="ops per journal() call (100)")
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of each phase (5)")
    parser.add_argument(
        "--slice", type=float, default=0.5, help="length of each alternating slice (0.5)"
    )
    parser.add_argument("--max-batches", type=int, default=200000, help="cap per phase (200000)")
    parser.add_argument("--dir", default=None, help="where the JournalNode and baseline write")
    args = parser.parse_args(argv)
    if args.batch <= 0 or args.seconds <= 0 or args.max_batches <= 0 or args.slice <= 0:
        parser.error("--batch, --seconds, --slice and --max-batches must be positive")
    slices = max(1, round(args.seconds / args.slice))
    slice_s = args.seconds / slices
    slice_cap = max(1, args.max_batches // slices)

    base = Path(tempfile.mkdtemp(prefix="bench-jn-", dir=args.dir))
    sample = make_batch(1, args.batch)
    print(f"batch: {args.batch} ops, {len(sample)} bytes ({len(sample) / args.batch:.0f} bytes/op)")
    raw = RawAppender(base, len(sample))
    raw_total = jn_total = (0, 0.0)
    ratios = []
    try:
        with MiniJournalCluster(1, base_dir=base / "cluster", processes=True) as cluster:
            with QJournalProtocolProxy(*cluster.rpc_address(0), timeout_s=60) as proxy:
                writer = _JournalWriter(proxy, args.batch)
                writer.start()
                fsync_before = _fsync_micros_sum(cluster.http_ports[0])
                for i in range(slices):
                    # Alternate which goes first, so neither always follows the other.
                    if i % 2 == 0:
                        raw_slice = raw.run(slice_s, slice_cap)
                        jn_slice = writer.run(slice_s, slice_cap)
                    else:
                        jn_slice = writer.run(slice_s, slice_cap)
                        raw_slice = raw.run(slice_s, slice_cap)
                    raw_total = (raw_total[0] + raw_slice[0], raw_total[1] + raw_slice[1])
                    jn_total = (jn_total[0] + jn_slice[0], jn_total[1] + jn_slice[1])
                    if raw_slice[0]:
                        ratios.append((jn_slice[0] / jn_slice[1]) / (raw_slice[0] / raw_slice[1]))
                fsync_micros = _fsync_micros_sum(cluster.http_ports[0]) - fsync_before
    finally:
        raw.close()
    baseline = raw_total[0] / raw_total[1]
    rate = jn_total[0] / jn_total[1]
    fsync_share = fsync_micros / 1e6 / jn_total[1]
    ratio = statistics.median(ratios) if ratios else 0.0
    print(
        f"raw write+fdatasync, same disk, same batch size: {baseline:,.0f} batches/s "
        f"({slices} slices of {slice_s:.2f} s, alternating with the JournalNode's)"
    )
    print(
        f"journalnode: {rate:,.0f} batches/s, {rate * args.batch:,.0f} txns/s, "
        f"{rate * len(sample) / 1e6:.2f} MB/s, fsync share of the time {fsync_share:.0%}"
    )
    spread = (
        f"; median of {len(ratios)} slices, {min(ratios):.2f}-{max(ratios):.2f}" if ratios else ""
    )
    print(f"ratio to raw fdatasync: {ratio:.2f} (goal >= {GOAL}){spread}")
    import shutil

    shutil.rmtree(base, ignore_errors=True)
    return 0
