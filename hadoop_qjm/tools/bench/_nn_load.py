"""The processes of ``bench namenode``: a client process and the RPC-floor server (and
the helpers the benches that start them share).

``python -m hadoop_qjm.tools.bench._nn_load client HOST PORT THREADS SECONDS MAX_OPS TAG``
connects THREADS proxies, makes each one's parent directory, prints ``READY``, waits for a
line on stdin, then calls ``mkdirs`` for SECONDS (or MAX_OPS calls in all) and prints one
JSON line: ``{"ops", "errors", "lat_us": [...]}``.

``python -m hadoop_qjm.tools.bench._nn_load floor HANDLERS`` serves ClientProtocol on
127.0.0.1 with the NameNode's RPC server (:class:`~hadoop_qjm.ipc.selector_server.IpcServer`
and the same dispatcher) whose ``mkdirs`` answers at once; prints ``PORT <n>`` and serves
until stdin closes. What it sustains is the RPC floor on this machine.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

__all__ = [
    "CLIENT_COMMAND",
    "BenchClients",
    "client_main",
    "cpu_seconds",
    "floor_main",
    "percentile",
    "split",
    "timed_calls",
]

#: This module as a child process (``client …`` or ``floor …`` after it).
CLIENT_COMMAND = [sys.executable, "-m", "hadoop_qjm.tools.bench._nn_load"]


def percentile(sorted_values: list[float], fraction: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, int(fraction * len(sorted_values)))
    return sorted_values[index]


def cpu_seconds(pid: int) -> float:
    """A process's user + system CPU time so far (psutil)."""
    import psutil  # the bench's, not the client processes' import

    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


def split(total: int, parts: int) -> list[int]:
    """``total`` in ``parts`` shares differing by one at most."""
    return [total // parts + (1 if i < total % parts else 0) for i in range(parts)]


def timed_calls(
    threads: int,
    prepare: Callable[[int], object],
    call: Callable[[int, int], object],
    seconds: float,
    max_ops: int,
    errors: tuple[type[BaseException], ...] = (OSError,),
) -> dict[str, Any]:
    """The load loop of a client process: ``threads`` threads each run ``prepare(i)``
    (outside the timing); once all have, ``READY`` is printed and a line awaited on stdin;
    then each thread calls ``call(i, n)`` (``n``: its calls that returned so far) until
    ``seconds`` pass or ``max_ops`` calls are made in all. A call raising one of ``errors``
    is counted (a thread stops after 100: a broken server ends the phase, the figures say
    so). Returns ``{"ops", "errors", "lat_us": [...], "cpu_s"}`` (this process's CPU time
    over the calls)."""
    latencies: list[list[float]] = [[] for _ in range(threads)]
    failed = [0] * threads
    ops_left = [max_ops]
    lock = threading.Lock()
    go = threading.Event()
    deadline = [0.0]
    ready = threading.Barrier(threads + 1)

    def worker(i: int) -> None:
        mine = latencies[i]
        try:
            prepare(i)
        except errors:
            failed[i] += 1
        try:
            ready.wait(timeout=120)
        except threading.BrokenBarrierError:
            return
        go.wait()
        n = 0
        perf = time.perf_counter
        while perf() < deadline[0]:
            with lock:
                if ops_left[0] <= 0:
                    return
                ops_left[0] -= 1
            t0 = perf()
            try:
                call(i, n)
            except errors:
                failed[i] += 1
                if failed[i] > 100:
                    return
                continue
            mine.append(perf() - t0)
            n += 1

    workers = [threading.Thread(target=worker, args=(i,), daemon=True) for i in range(threads)]
    for thread in workers:
        thread.start()
    ready.wait(timeout=180)
    print("READY", flush=True)
    sys.stdin.readline()
    cpu0 = time.process_time()
    deadline[0] = time.perf_counter() + seconds
    go.set()
    for thread in workers:
        thread.join(seconds + 120)
    lat_us = [round(x * 1e6) for mine in latencies for x in mine]
    return {
        "ops": len(lat_us),
        "errors": sum(failed),
        "lat_us": lat_us,
        "cpu_s": time.process_time() - cpu0,
    }


class BenchClients:
    """Client processes started together: each prints READY, starts on a line on stdin
    and ends with one JSON line; stopped by their pids (also when one fails to start).
    ``env`` is added to their environment (``HADOOP_USER_NAME``, say)."""

    def __init__(
        self, commands: Sequence[Sequence[str]], env: Mapping[str, str] | None = None
    ) -> None:
        from hadoop_qjm.testing.daemon_process import child_env  # not in the client's start-up

        self.procs: list[subprocess.Popen] = []
        try:
            for command in commands:
                self.procs.append(
                    subprocess.Popen(
                        list(command),
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        text=True,
                        env={**child_env(), **(env or {})},
                    )
                )
            for proc in self.procs:
                line = proc.stdout.readline()  # type: ignore[union-attr]
                if line.strip() != "READY":
                    raise RuntimeError(f"bench client {proc.pid} did not start: {line.strip()!r}")
        except BaseException:
            self.stop()
            raise

    def go(self) -> None:
        for proc in self.procs:
            proc.stdin.write("go\n")  # type: ignore[union-attr]
            proc.stdin.flush()  # type: ignore[union-attr]

    def reports(self, timeout_s: float) -> list[dict[str, Any]]:
        reports = []
        for proc in self.procs:
            out, _ = proc.communicate(timeout=timeout_s)
            reports.append(json.loads(out.strip().splitlines()[-1]))
        return reports

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
            proc.wait()

    def __enter__(self) -> BenchClients:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def client_main(host: str, port: int, threads: int, seconds: float, max_ops: int, tag: str) -> int:
    from hadoop_qjm.namenode.protocol.client import NameNodeProxy

    proxies = [NameNodeProxy(host, port, timeout_s=60) for _ in range(threads)]
    parents = [f"/bench/{tag}/c{i}" for i in range(threads)]
    try:
        report = timed_calls(
            threads,
            lambda i: proxies[i].mkdirs(parents[i]),  # connect, make the parent
            lambda i, n: proxies[i].mkdirs(f"{parents[i]}/d{n}", create_parent=False),
            seconds,
            max_ops,
        )
    finally:
        for proxy in proxies:
            proxy.close()
    print(json.dumps(report), flush=True)
    return 0


def floor_main(handlers: int) -> int:
    from hadoop_qjm.ipc.selector_server import IpcServer
    from hadoop_qjm.namenode.protocol.rpc import ThriftServiceDispatcher
    from hadoop_qjm.namenode.protocol.thrift_idl import SERVICES
    from hadoop_qjm.namenode.protocol.thrift_idl import namenode_thrift as _t
    from hadoop_qjm.qjournal.protocol.sockets import PlainSocketFactory
    from hadoop_qjm.qjournal.protocol.wire import DEFAULT_MAX_FRAME_SIZE

    def unsupported(*_: Any) -> Any:
        raise NotImplementedError("the RPC floor answers mkdirs only")

    table: dict[str, Any] = {name: unsupported for s in SERVICES for name in s.thrift_services}
    table["mkdirs"] = lambda src, masked, create_parent: True
    dispatcher = ThriftServiceDispatcher(SERVICES, table, _t.RemoteException)
    server = IpcServer(
        dispatcher.process,
        dispatcher.error_reply,
        PlainSocketFactory(),
        "127.0.0.1",
        0,
        handlers,
        DEFAULT_MAX_FRAME_SIZE,
    )
    server.start()
    try:
        print(f"PORT {server.address[1]}", flush=True)
        sys.stdin.read()  # until the bench closes it (or dies)
    finally:
        server.stop(10)
    return 0


def _main(argv: list[str]) -> int:
    if argv[:1] == ["client"] and len(argv) == 7:
        host, port, threads, seconds, max_ops, tag = argv[1:]
        return client_main(host, int(port), int(threads), float(seconds), int(max_ops), tag)
    if argv[:1] == ["floor"] and len(argv) == 2:
        return floor_main(int(argv[1]))
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
