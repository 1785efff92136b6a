"""May a JournalNode format a journal now? A pure rule (issue 33; docs/journalnode.md).

Hadoop's ``format`` with ``force`` wipes a journal whatever uses it: a ``namenode -format
-force`` run by mistake on another host destroys the edits of a running NameNode, which
then dies on its next write ("IPC's epoch 3 is not the current writer epoch 0") while its
standby finds nothing to take over. The JournalNode knows better: it refuses, even with
``force``, while a writer uses the journal, which :func:`live_writer_reason` decides:

* an in-progress segment is open here and was written to (or started) within the last
  ``dfs.journalnode.format.live-writer.window.ms``, or
* the writer of the promised epoch still holds the connection it called from.

A writer that stopped (its connection closed) and whose segment went quiet for the
window is no longer live: ``-force`` formats then, and :class:`FormatCheck` says how many
segments and txns it destroys.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

__all__ = [
    "STOP_THE_NAMENODES",
    "FormatCheck",
    "WriterSeen",
    "describe_destroyed",
    "format_refusal",
    "live_writer_reason",
]

#: How every refusal ends: what the operator should do.
STOP_THE_NAMENODES = "stop the NameNodes first"


@dataclass(frozen=True)
class WriterSeen:
    """The last writer call this journal served: its epoch, the caller's address (None:
    unknown, e.g. in-process) and whether that caller's connection is still open."""

    epoch: int
    address: str | None
    connected: bool


@dataclass(frozen=True)
class FormatCheck:
    """``canFormat``'s answer: why not (a writer uses the journal), else None; and what a
    format would destroy here."""

    live_writer: str | None
    segment_count: int
    txn_count: int


def _when(ms: int, now_ms: int) -> str:
    if ms <= 0:
        return "no write since the JournalNode started"
    stamp = datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")
    return f"last write {stamp} UTC ({max(now_ms - ms, 0) / 1000:.1f}s ago)"


def live_writer_reason(
    journal_id: str,
    *,
    promised_epoch: int,
    writer_epoch: int,
    writer: WriterSeen | None,
    segment_open: bool,
    last_write_ms: int,
    now_ms: int,
    window_ms: int,
) -> str | None:
    """One line saying which writer uses journal ``journal_id`` (see the module doc), or
    None if none does. ``last_write_ms``: the last batch written to (or the start of) the
    open segment, 0 if none; ``writer_epoch``: the journal's last-writer-epoch."""
    connected = writer is not None and writer.connected and writer.epoch == promised_epoch
    recent = segment_open and last_write_ms > 0 and now_ms - last_write_ms < window_ms
    if not (connected or recent):
        return None
    epoch = writer.epoch if connected and writer is not None else writer_epoch
    address = writer.address if writer is not None and writer.address else "an unknown address"
    state = "still connected" if connected else "disconnected"
    return (
        f"journal {journal_id} is in use by the writer of epoch {epoch} at {address} "
        f"({state}, {_when(last_write_ms, now_ms)})"
    )


def format_refusal(checks: dict[str, FormatCheck]) -> str | None:
    """The client's one line when any node (``checks`` by node name) has a live writer:
    each such node and its reason; None if none has."""
    in_use = {name: c.live_writer for name, c in checks.items() if c.live_writer}
    if not in_use:
        return None
    each = "; ".join(f"{name}: {reason}" for name, reason in in_use.items())
    return (
        f"Not formatting: {len(in_use)} of {len(checks)} JournalNodes have a live writer "
        f"({each}); nothing was changed on any JournalNode; {STOP_THE_NAMENODES}"
    )


def describe_destroyed(checks: dict[str, FormatCheck]) -> str | None:
    """What formatting destroys, node by node (``checks`` by node name), in one line; None
    when no node holds a segment."""
    held = {name: c for name, c in checks.items() if c.segment_count}
    if not held:
        return None
    segments = sum(c.segment_count for c in held.values())
    txns = sum(c.txn_count for c in held.values())
    if any(c.segment_count < 0 for c in held.values()):
        each = ", ".join(
            f"{name}: segments it could not list"
            if c.segment_count < 0
            else f"{name}: {c.segment_count} segments, {c.txn_count} txns"
            for name, c in held.items()
        )
        return f"Formatting destroys every segment on {len(held)} JournalNodes ({each})"
    each = ", ".join(
        f"{name}: {c.segment_count} segments, {c.txn_count} txns" for name, c in held.items()
    )
    return (
        f"Formatting destroys {segments} segments ({txns} txns) on {len(held)} JournalNodes "
        f"({each})"
    )
