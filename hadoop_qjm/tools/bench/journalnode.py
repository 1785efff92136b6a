"""``hdfs-py bench journalnode``: journal() batches over loopback Thrift to one JournalNode process.

One client sends batches of ``--batch`` MKDIR ops of about 100 bytes to a JournalNode
process and waits for each acknowledgement (the JournalNode fsyncs before it answers).
In the same run, on the same disk, it measures the raw ``os.write + os.fdatasync`` rate
for the same batch size: the ratio shows what Python, Thrift and the Journal's
bookkeeping cost on top of the disk. Goal (printed, never asserted): ≥ 0.8.

Beside them, for context: a bare server in another process that receives the very same
frames over loopback TCP, writes each payload with one pwrite into a file preallocated
like a segment, fdatasyncs it and sends a fixed reply — no Thrift decoding, no Journal
(its ratio to raw is what preallocation saves on each fdatasync less what the loopback
round trip and its two extra wake-ups cost); and the JournalNode sent the same calls
encoded before each slice from a plain socket, with no client library in the timed loop
(its ratio to the bare server is what the JournalNode's Thrift decoding and bookkeeping
cost; the QJournalProtocolProxy client's ratio to it is what the client library costs).

The three are measured in alternating slices of ``--slice`` seconds (the order rotating
from one slice to the next), and each ratio printed is the median of the per-slice
ratios: on a shared machine the disk's and the CPUs' speed drift within seconds, and
measuring one phase after the other would put that drift into the ratio.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import shutil
import socket
import statistics
import struct
import tempfile
import time
import urllib.request
from pathlib import Path

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.protocol.journal_call import encode_journal_body, encode_journal_head
from hadoop_qjm.qjournal.protocol.wire import encode_void_reply, frame
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, make_request
from hadoop_qjm.tools.bench import mode_options
from hadoop_qjm.tools.bench.edits import make_batch

__all__ = ["run"]

JID = "bench-journal"
GOAL = 0.8
PHASES = ("raw", "jn", "frames", "bare")


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


_FRAME = struct.Struct(">i")
_PREALLOCATION = 1024 * 1024


def _bare_journal_server(listener: socket.socket, path: str, reply: bytes) -> None:
    """Serve one connection: each frame's payload is pwritten into a file preallocated with
    0xFF in 1 MiB steps (as a segment is), fdatasynced, and answered with ``reply``."""
    conn, _ = listener.accept()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    fill = b"\xff" * _PREALLOCATION
    buf = bytearray(1 << 20)
    view = memoryview(buf)
    pos = size = 0
    framed_reply = _FRAME.pack(len(reply)) + reply
    try:
        while True:
            got = 0
            while got < 4 or got < 4 + _FRAME.unpack_from(buf)[0]:
                n = conn.recv_into(view[got:])
                if not n:
                    return
                got += n
            payload = view[4:got]
            while pos + len(payload) > size:
                os.pwrite(fd, fill, size)
                size += _PREALLOCATION
            os.pwrite(fd, payload, pos)
            pos += len(payload)
            os.fdatasync(fd)
            conn.sendall(framed_reply)
    finally:
        os.close(fd)
        os.unlink(path)
        conn.close()


class BareServer:
    """The bare-transport baseline: the JournalNode's frames, a plain server (see above)."""

    def __init__(self, directory: Path, frames: list[bytes], reply: bytes) -> None:
        listener = socket.create_server(("127.0.0.1", 0))
        self.process = multiprocessing.get_context("fork").Process(
            target=_bare_journal_server,
            args=(listener, str(directory / "bare-server-segment"), reply),
            daemon=True,
        )
        self.process.start()
        self.sock = socket.create_connection(listener.getsockname(), timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        listener.close()
        self.frames = frames
        self.reply_size = _FRAME.size + len(reply)
        self.sent = 0

    def run(self, seconds: float, max_batches: int) -> tuple[int, float]:
        """(batches answered, seconds taken) in a slice of about ``seconds``."""
        sock, frames, reply_size = self.sock, self.frames, self.reply_size
        buf = bytearray(reply_size)
        count = 0
        start = time.perf_counter()
        deadline = start + seconds
        while count < max_batches and time.perf_counter() < deadline:
            sock.sendall(frames[self.sent % len(frames)])
            got = 0
            while got < reply_size:
                n = sock.recv_into(memoryview(buf)[got:])
                if not n:
                    raise ConnectionError("the bare server closed the connection")
                got += n
            self.sent += 1
            count += 1
        return count, time.perf_counter() - start

    def close(self) -> None:
        self.sock.close()
        self.process.join(30)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(10)


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


def _journal_frame(serial: int, first_txid: int, batch: int, data: bytes) -> bytes:
    """The framed journal call of epoch 1 with IPC serial (and seqid) ``serial``."""
    head = encode_journal_head(serial, JID, 1, serial, None, None)
    return frame(head + encode_journal_body(first_txid, batch, data, 1, None))


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

    def frames(self) -> list[bytes]:
        """The frames of journal calls for this writer's batches (for the bare server)."""
        return [
            _journal_frame(i + 1, 1 + i * self.batch, self.batch, data)
            for i, data in enumerate(self.batches)
        ]

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


class _PreEncodedWriter:
    """The same journal() calls as :class:`_JournalWriter`, continuing its serials and
    txids, but encoded before each slice and sent from a plain socket: no client library
    in the timed loop, so that the JournalNode's own cost shows."""

    def __init__(self, writer: _JournalWriter, address: tuple[str, int]) -> None:
        self.writer = writer
        self.sock = socket.create_connection(address, timeout=60)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.best_rate = 5000.0  # batches/s: how many calls to encode for a slice

    def _calls(self, count: int) -> list[tuple[bytes, bytes]]:
        w = self.writer
        calls = []
        for i in range(count):
            serial = w.serial + 1 + i
            data = w.batches[(w.sent + i) % len(w.batches)]
            request = _journal_frame(serial, w.txid + i * w.batch, w.batch, data)
            calls.append((request, frame(encode_void_reply("journal", serial))))
        return calls

    def run(self, seconds: float, max_batches: int) -> tuple[int, float]:
        """(batches acknowledged, seconds taken) in a slice of about ``seconds``."""
        calls = self._calls(min(max_batches, int(seconds * self.best_rate * 2) + 1))
        sock, w = self.sock, self.writer
        count = 0
        start = time.perf_counter()
        deadline = start + seconds
        for request, expected in calls:
            if time.perf_counter() >= deadline:
                break
            sock.sendall(request)
            reply = b""
            while len(reply) < len(expected):
                chunk = sock.recv(len(expected) - len(reply))
                if not chunk:
                    raise ConnectionError("the JournalNode closed the connection")
                reply += chunk
            if reply != expected:
                raise RuntimeError(f"journal call {w.serial + 1} failed: {reply!r}")
            w.serial += 1
            w.txid += w.batch
            w.sent += 1
            count += 1
        took = time.perf_counter() - start
        if took > 0:
            self.best_rate = max(self.best_rate, count / took)
        return count, took

    def close(self) -> None:
        self.sock.close()


def run(argv, conf) -> int:
    from hadoop_qjm.common.command_line import CommandParser, finite_float

    parser = CommandParser(prog="hdfs-py bench journalnode", description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=100, help="ops per journal() call (100)")
    parser.add_argument(
        "--seconds", type=finite_float, default=5.0, help="duration of each phase (5)"
    )
    parser.add_argument(
        "--slice", type=finite_float, default=0.5, help="length of each alternating slice (0.5)"
    )
    parser.add_argument("--max-batches", type=int, default=200000, help="cap per phase (200000)")
    parser.add_argument("--dir", default=None, help="where the JournalNode and baseline write")
    parser.add_argument(
        "--catch-up",
        action="store_true",
        help="instead: how fast a wiped JournalNode catches up from its peers, against a "
        "raw local copy of the same segments",
    )
    parser.add_argument("--segments", type=int, default=None, help="with --catch-up (20)")
    parser.add_argument(
        "--rounds", type=int, default=None, help="with --catch-up: raw copy + catch-up rounds (5)"
    )
    parser.add_argument(
        "--segment-mb", type=finite_float, default=None, help="with --catch-up: MB each (1)"
    )
    args = parser.parse_args(argv)
    mode_options(parser, args, "--catch-up", {"segments": 20, "rounds": 5, "segment_mb": 1.0})
    if args.catch_up:
        if args.segments <= 0 or args.segment_mb <= 0 or args.rounds <= 0:
            parser.error("--segments, --segment-mb and --rounds must be positive")
        from hadoop_qjm.tools.bench._catch_up import run_catch_up

        return run_catch_up(args.segments, args.segment_mb, args.dir, args.rounds)
    if args.batch <= 0 or args.seconds <= 0 or args.max_batches <= 0 or args.slice <= 0:
        parser.error("--batch, --seconds, --slice and --max-batches must be positive")
    slices = max(1, round(args.seconds / args.slice))
    slice_s = args.seconds / slices
    slice_cap = max(1, args.max_batches // slices)

    base = Path(tempfile.mkdtemp(prefix="bench-jn-", dir=args.dir))
    sample = make_batch(1, args.batch)
    print(f"batch: {args.batch} ops, {len(sample)} bytes ({len(sample) / args.batch:.0f} bytes/op)")
    raw = RawAppender(base, len(sample))
    bare: BareServer | None = None
    pre_encoded: _PreEncodedWriter | None = None
    totals = {name: [0, 0.0] for name in PHASES}
    ratios: dict[str, list[float]] = {
        key: [] for key in ("jn/raw", "bare/raw", "frames/raw", "frames/bare", "jn/frames")
    }
    try:
        with MiniJournalCluster(1, base_dir=base / "cluster", processes=True) as cluster:
            with QJournalProtocolProxy(*cluster.rpc_address(0), timeout_s=60) as proxy:
                writer = _JournalWriter(proxy, args.batch)
                writer.start()
                bare = BareServer(base, writer.frames(), encode_void_reply("journal", 1))
                pre_encoded = _PreEncodedWriter(writer, cluster.rpc_address(0))
                phases = {
                    "raw": raw.run,
                    "jn": writer.run,
                    "frames": pre_encoded.run,
                    "bare": bare.run,
                }
                fsync_before = _fsync_micros_sum(cluster.http_ports[0])
                for i in range(slices):
                    # Rotate the order, so that no phase always follows the same one.
                    rates = {}
                    for name in PHASES[i % len(PHASES) :] + PHASES[: i % len(PHASES)]:
                        count, took = phases[name](slice_s, slice_cap)
                        totals[name][0] += count
                        totals[name][1] += took
                        rates[name] = count / took if took else 0.0
                    for key in ratios:
                        top, bottom = key.split("/")
                        if rates[bottom]:
                            ratios[key].append(rates[top] / rates[bottom])
                fsync_micros = _fsync_micros_sum(cluster.http_ports[0]) - fsync_before
    finally:
        raw.close()
        if bare is not None:
            bare.close()
        if pre_encoded is not None:
            pre_encoded.close()
        shutil.rmtree(base, ignore_errors=True)  # also when a phase failed
    rate = {name: count / took if took else 0.0 for name, (count, took) in totals.items()}
    # Both JournalNode phases fsync on the JournalNode: the share is of their time together.
    jn_seconds = totals["jn"][1] + totals["frames"][1]
    fsync_share = fsync_micros / 1e6 / jn_seconds if jn_seconds else 0.0

    def median(key: str) -> str:
        values = ratios[key]
        if not values:
            return "n/a"
        return (
            f"{statistics.median(values):.2f} (median of {len(values)} slices, "
            f"{min(values):.2f}-{max(values):.2f})"
        )

    print(
        f"raw write+fdatasync, same disk, same batch size: {rate['raw']:,.0f} batches/s "
        f"({slices} slices of {slice_s:.2f} s, alternating with the JournalNode's)"
    )
    print(
        f"journalnode: {rate['jn']:,.0f} batches/s, {rate['jn'] * args.batch:,.0f} txns/s, "
        f"{rate['jn'] * len(sample) / 1e6:.2f} MB/s, fsync share of the time {fsync_share:.0%}"
    )
    jn_raw = statistics.median(ratios["jn/raw"]) if ratios["jn/raw"] else 0.0
    spread = (
        f"; median of {len(ratios['jn/raw'])} slices, "
        f"{min(ratios['jn/raw']):.2f}-{max(ratios['jn/raw']):.2f}"
        if ratios["jn/raw"]
        else ""
    )
    print(f"ratio to raw fdatasync: {jn_raw:.2f} (goal >= {GOAL}){spread}")
    print("for context, in the same slices:")
    print(
        f"  a bare server (the same frames over loopback; pwrite into a preallocated file, "
        f"fdatasync, fixed reply; no Thrift, no Journal): {rate['bare']:,.0f} batches/s; "
        f"bare server / raw {median('bare/raw')}"
    )
    print(
        f"  the JournalNode sent the same calls pre-encoded from a plain socket (no client "
        f"library in the loop): {rate['frames']:,.0f} batches/s; / raw {median('frames/raw')}; "
        f"/ bare server {median('frames/bare')}"
    )
    print(
        f"  journalnode (QJournalProtocolProxy) / pre-encoded calls: {median('jn/frames')} "
        "- what the client library costs"
    )
    return 0
