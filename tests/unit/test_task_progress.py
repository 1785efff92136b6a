"""Per-item progress datagrams from Spark tasks to the driver (no Spark needed)."""

from __future__ import annotations

import socket
import time

import pytest

from hadoop_qjm.spark.task_progress import ProgressAddress, ProgressReceiver, report_done

pytestmark = pytest.mark.timeout(30)


def _wait_for(condition, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.01)


def test_distinct_items_are_counted_and_strangers_ignored():
    with ProgressReceiver("127.0.0.1") as receiver:
        address = receiver.address
        report_done(address, "1")
        report_done(address, "2", failed=True)
        report_done(address, "1")  # a retried task: counted once
        # Another job's token, and garbage: ignored.
        report_done(ProgressAddress(address.host, address.port, "0" * 32), "3")
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.sendto(b"\xff\xfe nonsense", (address.host, address.port))
            s.sendto(f"{address.token} X 4".encode(), (address.host, address.port))
        report_done(address, "5")
        _wait_for(lambda: receiver.counts() == (3, 1))
    assert receiver.counts() == (3, 1)


def test_reporting_never_raises():
    report_done(None, "1")  # progress off
    # Nobody listens there, or the host cannot be resolved: the seed goes on.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    report_done(ProgressAddress("127.0.0.1", port, "t"), "1")
    report_done(ProgressAddress("no-such-host.invalid", port, "t"), "1")


def test_an_address_that_cannot_be_bound_is_an_oserror():
    with pytest.raises(OSError):
        ProgressReceiver("192.0.2.1")  # TEST-NET-1: not this machine's
