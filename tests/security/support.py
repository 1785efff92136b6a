"""Helpers shared by the security tests (not a test module)."""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["counter", "wait_until"]


def counter(node, name: str, **labels: str) -> float:
    """A JournalNode counter's value (0 when never incremented)."""
    return node.metrics.registry.get_sample_value(f"{name}_total", labels) or 0.0


def wait_until(predicate: Callable[[], object], timeout_s: float = 10.0, what: str = "") -> None:
    """Poll ``predicate`` until it is true; fail after ``timeout_s`` (a deadline, no fixed
    sleep: a server counts a refused handshake just after the client saw it fail)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.005)
