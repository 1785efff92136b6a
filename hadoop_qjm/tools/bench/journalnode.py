"""``hdfs-py bench journalnode``: journal() batches over loopback Thrift to one JournalNode process.

One client sends batches of ``--batch`` MKDIR ops of about 100 bytes to a JournalNode
process and waits for each acknowledgement (the JournalNode fsyncs before it answers).
In the same run, on the same disk, it measures the raw ``os.write + os.fdatasync`` rate
for the same batch size: the ratio shows what Python, Thrift and the Journal's
bookkeeping cost on top of the disk. Goal (printed, never asserted): ≥ 0.8.
"""

from __future__ import annotations

import os
import re
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


def raw_fsync_rate(directory: Path, batch_bytes: int, seconds: float, max_batches: int) -> float:
    """Batches/s of plain append + fdatasync of ``batch_bytes`` on the same disk."""
    path = directory / "raw-fsync-baseline"
    data = os.urandom(batch_bytes)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    try:
        count = 0
        start = time.perf_counter()
        deadline = start + seconds
        while count < max_batches and time.perf_counter() < deadline:
            os.write(fd, data)
            os.fdatasync(fd)
            count += 1
        return count / (time.perf_counter() - start)
    finally:
        os.close(fd)
        path.unlink()


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


def run(argv, conf) -> int:
    from hadoop_qjm.cli import CommandParser

    parser = CommandParser(prog="hdfs-py bench journalnode", description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=100, help="ops per journal() call (100)")
    parser.add_argument("--seconds", type=float, default=5.0, help="duration of each phase (5)")
    parser.add_argument("--max-batches", type=int, default=200000, help="cap per phase (200000)")
    parser.add_argument("--dir", default=None, help="where the JournalNode and baseline write")
    args = parser.parse_args(argv)
    if args.batch <= 0 or args.seconds <= 0 or args.max_batches <= 0:
        parser.error("--batch, --seconds and --max-batches must be positive")

    base = Path(tempfile.mkdtemp(prefix="bench-jn-", dir=args.dir))
    sample = make_batch(1, args.batch)
    print(f"batch: {args.batch} ops, {len(sample)} bytes ({len(sample) / args.batch:.0f} bytes/op)")
    baseline = raw_fsync_rate(base, len(sample), args.seconds, args.max_batches)
    print(f"raw write+fdatasync, same disk, same batch size: {baseline:,.0f} batches/s")

    with MiniJournalCluster(1, base_dir=base / "cluster", processes=True) as cluster:
        with QJournalProtocolProxy(*cluster.rpc_address(0), timeout_s=60) as proxy:
            proxy.format(JID, FAKE_NSINFO)
            proxy.new_epoch(JID, FAKE_NSINFO, 1)
            serial = 0
            proxy.start_log_segment(make_request(serial, journal_id=JID), 1, CURRENT_LAYOUT_VERSION)
            # Pre-encode batches outside the timed loop: the benchmark measures the journal.
            batches = [make_batch(1 + i * args.batch, args.batch) for i in range(64)]
            fsync_before = _fsync_micros_sum(cluster.http_ports[0])
            txid = 1
            count = 0
            start = time.perf_counter()
            deadline = start + args.seconds
            while count < args.max_batches and time.perf_counter() < deadline:
                serial += 1
                data = batches[count % len(batches)]
                proxy.journal(make_request(serial, journal_id=JID), 1, txid, args.batch, data)
                txid += args.batch
                count += 1
            elapsed = time.perf_counter() - start
            fsync_share = (_fsync_micros_sum(cluster.http_ports[0]) - fsync_before) / 1e6 / elapsed
    rate = count / elapsed
    ratio = rate / baseline if baseline else 0.0
    print(
        f"journalnode: {rate:,.0f} batches/s, {rate * args.batch:,.0f} txns/s, "
        f"{rate * len(sample) / 1e6:.2f} MB/s, fsync share of the time {fsync_share:.0%}"
    )
    print(f"ratio to raw fdatasync: {ratio:.2f} (goal >= {GOAL})")
    import shutil

    shutil.rmtree(base, ignore_errors=True)
    return 0
