"""hadoop_qjm.testing.ports: ports for daemons named in configuration files, chosen
where neither the OS's port-0 binds nor another xdist worker's picks can land."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from hadoop_qjm.testing import ports

pytestmark = pytest.mark.timeout(60)


def ephemeral_low() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_the_ports_are_distinct_free_and_below_the_ephemeral_range() -> None:
    chosen = ports.free_ports(20, hosts=("127.0.0.1", "127.0.0.2"))
    assert len(set(chosen)) == 20
    assert all(ports.LOWEST <= p < ephemeral_low() for p in chosen)
    for port in chosen:  # free on both hosts now
        for host in ("127.0.0.1", "127.0.0.2"):
            with socket.socket() as s:
                s.bind((host, port))


def test_workers_pick_from_disjoint_slices() -> None:
    slices = [ports.port_slice(f"gw{i}") for i in range(ports.SLICES)]
    for i, a in enumerate(slices):
        assert len(a) >= 64
        for b in slices[i + 1 :]:
            assert not set(a) & set(b)
    assert ports.port_slice(f"gw{ports.SLICES}") == slices[0]
    assert ports.port_slice("") == range(ports.LOWEST, max(ephemeral_low(), ports.LOWEST + 512))


def test_a_port_in_use_is_never_chosen(monkeypatch) -> None:
    three = ports.free_ports(3)
    busy = socket.socket()
    busy.bind(("127.0.0.1", three[1]))
    try:
        # A "slice" of those three ports, the middle one in use: the other two are chosen.
        monkeypatch.setattr(ports, "port_slice", lambda: list(three))
        assert sorted(ports.free_ports(2)) == sorted([three[0], three[2]])
        with pytest.raises(OSError, match="only 2 of 3 free ports"):
            ports.free_ports(3)
    finally:
        busy.close()


def test_the_whole_slice_is_tried_from_wherever_the_pick_starts(monkeypatch) -> None:
    three = ports.free_ports(3)
    monkeypatch.setattr(ports, "port_slice", lambda: list(three))
    for start in range(3):

        class Start:
            def randrange(self, n: int, start: int = start) -> int:
                assert n == 3
                return start

        monkeypatch.setattr(ports.random, "SystemRandom", Start)
        chosen = ports.free_ports(3)
        assert chosen == three[start:] + three[:start]
