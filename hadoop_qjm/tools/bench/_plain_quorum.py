"""A plain-socket quorum with any number of servers: context for ``bench qjm``'s 5-node goal.

``python -m hadoop_qjm.tools.bench._plain_quorum --servers N --batch B --seconds S --dir D``
prints one JSON line: ``records_per_s``, ``lat_ms_p50``, ``lat_ms_p99``, ``batches``.

The same design as the ideal quorum baseline (``../shared/bench/ideal_quorum.py``), with
``--servers`` servers instead of three: one writer sends each batch, length-prefixed,
over loopback TCP to every server; each server appends it to its own file,
``fdatasync``s and acknowledges; the batch is committed once a majority has. Records are
encoded once; no Thrift, no Journal. ``bench qjm`` runs it with 3 and with 5 servers in
alternating slices: the ratio of the two p50s is what a majority of 5 instead of 3 costs
on this machine with no Python of ours in the loop — the floor under the 5-node goal.

A subprocess of its own (the servers are forked from it): ``bench qjm`` has threads, and
forking a process with threads is unsafe.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import multiprocessing
import os
import selectors
import socket
import struct
import sys
import time
from collections.abc import Sequence

__all__ = ["main", "run"]

_HEADER = struct.Struct("!QI")  # batch sequence number, payload length
_ACK = struct.Struct("!Q")  # the highest durable sequence number


def _serve(listener: socket.socket, path: str) -> None:
    """One server: append each complete frame, fdatasync, acknowledge; until EOF."""
    conn, _ = listener.accept()
    listener.close()
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
    buf = bytearray()
    try:
        while True:
            chunk = conn.recv(1 << 20)
            if not chunk:
                return
            buf += chunk
            start = 0
            last = None
            while len(buf) - start >= _HEADER.size:
                seq, size = _HEADER.unpack_from(buf, start)
                if len(buf) - start - _HEADER.size < size:
                    break
                last = seq
                start += _HEADER.size + size
            if last is None:
                continue
            os.write(fd, bytes(buf[:start]))
            del buf[:start]
            os.fdatasync(fd)
            conn.sendall(_ACK.pack(last))
    finally:
        os.close(fd)
        os.unlink(path)
        conn.close()


def run(servers: int, batch: int, record_size: int, seconds: float, directory: str) -> dict:
    """Batches of ``batch`` records for ``seconds``; the figures as a dict."""
    context = multiprocessing.get_context("fork")  # this process has no other thread
    socks: list[socket.socket] = []
    procs = []
    try:
        for i in range(servers):
            listener = socket.create_server(("127.0.0.1", 0))
            path = os.path.join(directory, f"plain-quorum-{os.getpid()}-{i}")
            proc = context.Process(target=_serve, args=(listener, path), daemon=True)
            proc.start()
            procs.append(proc)
            sock = socket.create_connection(listener.getsockname(), timeout=30)
            listener.close()
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.settimeout(None)  # blocking: the selector says when a recv will not wait
            socks.append(sock)
        record = os.urandom(record_size)
        payload = b"".join(struct.pack("!I", len(record)) + record for _ in range(batch))
        majority = servers // 2 + 1
        selector = selectors.DefaultSelector()
        for i, sock in enumerate(socks):
            selector.register(sock, selectors.EVENT_READ, i)
        acked = [0] * servers
        pending = [b""] * servers
        latencies: list[float] = []
        seq = 0
        started = time.perf_counter()
        deadline = started + seconds
        while time.perf_counter() < deadline:
            seq += 1
            frame = _HEADER.pack(seq, len(payload)) + payload
            sent_at = time.perf_counter()
            for sock in socks:
                sock.sendall(frame)
            while sum(1 for a in acked if a >= seq) < majority:
                ready = selector.select(timeout=30)
                if not ready:
                    raise TimeoutError(f"no majority for batch {seq} within 30 s")
                for key, _ in ready:
                    i = key.data
                    received = key.fileobj.recv(65536)
                    if not received:
                        raise ConnectionError(f"server {i} closed its connection")
                    data = pending[i] + received
                    whole = len(data) // _ACK.size
                    if whole:
                        acked[i] = _ACK.unpack_from(data, (whole - 1) * _ACK.size)[0]
                    pending[i] = data[whole * _ACK.size :]
            latencies.append(time.perf_counter() - sent_at)
        elapsed = time.perf_counter() - started
    finally:
        for sock in socks:  # EOF: each server removes its file and closes, after its acks
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.settimeout(10)
                while sock.recv(65536):
                    pass
            sock.close()
        for proc in procs:
            proc.join(10)
            if proc.is_alive():
                proc.kill()
                proc.join(10)
    latencies.sort()

    def percentile_ms(q: float) -> float:
        return latencies[min(len(latencies) - 1, int(q * (len(latencies) - 1)))] * 1000

    return {
        "servers": servers,
        "batch": batch,
        "batches": seq,
        "records_per_s": seq * batch / elapsed,
        "lat_ms_p50": percentile_ms(0.5),
        "lat_ms_p99": percentile_ms(0.99),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hadoop_qjm.tools.bench._plain_quorum")
    parser.add_argument("--servers", type=int, default=3)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--rec", type=int, default=100, help="bytes per record (100)")
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--dir", default=".")
    args = parser.parse_args(argv)
    if min(args.servers, args.batch, args.rec) <= 0 or args.seconds <= 0:
        parser.error("--servers, --batch, --rec and --seconds must be positive")
    print(json.dumps(run(args.servers, args.batch, args.rec, args.seconds, args.dir)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
