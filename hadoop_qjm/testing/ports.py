"""Ports for daemons whose addresses must be written down before they start.

Most tests bind port 0 and read back what the OS chose. Some cannot: JournalNodes named
in a shared-edits URI, ZooKeeper (which refuses ``clientPort=0``), a cluster started
from configuration files. Asking the OS for a port (bind to 0, close) and binding it
later leaves a window in which any other process's port-0 bind or outgoing connection
may be given the same port from the kernel's ephemeral range — three tests failed that
way ("Address already in use").

:func:`free_ports` therefore picks below the ephemeral range
(``/proc/sys/net/ipv4/ip_local_port_range``), where the OS never hands out a port by
itself, and each pytest-xdist worker in a slice of its own, so that two workers never
pick the same one (each from a random place in its slice onwards); each port chosen is
checked free (bound) on every host asked for, and all are held until the last is found,
so they are distinct.
"""

from __future__ import annotations

import itertools
import os
import random
import socket
from pathlib import Path

__all__ = ["free_ports", "port_slice"]

#: The lowest port used: above the registered ports a test machine may run services on.
LOWEST = 20000
#: Slices the range below the ephemeral ports is cut into (one per xdist worker, modulo).
SLICES = 8


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def port_slice(worker: str | None = None) -> range:
    """The ports this process picks from: its xdist worker's slice (``gw3``: the fourth)
    of ``LOWEST`` … below the ephemeral range; the whole of it outside xdist."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "") if worker is None else worker
    low, high = LOWEST, max(LOWEST + SLICES * 64, _ephemeral_low())
    digits = worker[2:] if worker.startswith("gw") else ""
    if not digits.isdigit():
        return range(low, high)
    width = (high - low) // SLICES
    start = low + (int(digits) % SLICES) * width
    return range(start, start + width)


def free_ports(count: int, hosts: tuple[str, ...] = ("127.0.0.1",)) -> list[int]:
    """``count`` distinct ports of :func:`port_slice`, each free on every one of
    ``hosts`` when chosen."""
    # From a random place in the slice onwards, wrapping: two processes sharing a slice
    # seldom start near each other. (Shuffling the whole slice with SystemRandom cost
    # 25 ms a call: one urandom read per element.)
    span = port_slice()
    first = random.SystemRandom().randrange(len(span))
    candidates = itertools.chain(span[first:], span[:first])
    held: list[socket.socket] = []
    ports: list[int] = []
    try:
        for port in candidates:
            if len(ports) == count:
                break
            socks = []
            try:
                for host in hosts:
                    s = socket.socket()
                    socks.append(s)
                    s.bind((host, port))
            except OSError:
                for s in socks:
                    s.close()
                continue
            held.extend(socks)
            ports.append(port)
    finally:
        for s in held:
            s.close()
    if len(ports) < count:
        raise OSError(f"only {len(ports)} of {count} free ports in {port_slice()}")
    return ports
