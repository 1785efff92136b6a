"""Helpers shared by the security tests (not a test module)."""

from __future__ import annotations

from hadoop_qjm.testing.in_process_ha import wait_until

__all__ = ["counter", "wait_until"]


def counter(node, name: str, **labels: str) -> float:
    """A JournalNode counter's value (0 when never incremented)."""
    return node.metrics.registry.get_sample_value(f"{name}_total", labels) or 0.0
