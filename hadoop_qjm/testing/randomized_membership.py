"""The randomized fault test with JournalNode set changes (``run_seed(..., membership=True)``).

Five JournalNodes, all formatted for the namespace at the start (new nodes hold
no segment, as after ``journalnode -bootstrap`` with nothing to fetch); the
journal starts on nodes 0–2. The faults are :mod:`randomized`'s, drawn over all
five nodes, so they hit nodes of the old set, of the new set and of both,
before, during and after each switch (a node down, a node cut off from a
writer, the writer crashing between two calls, nodes restarting).

Each writer is configured with the operator's set, or — like the NameNode whose
configuration was not edited yet — with the set before the last finished
switch; it follows the membership records (adopt O+N, follow to the new set).
After recovering, a writer on a stable set begins a switch with probability
:data:`SWITCH_PROBABILITY` (replace one of three, grow 3 → 5, shrink 5 → 3)
before its segments, and any writer on a joint set tries to finish it after
writing both of its segments. The invariants are :mod:`randomized`'s,
unchanged: no acknowledged txn lost, no divergent finalized segment, no txid
with two values.

The planted bug ``joint-quorum-new-set-only`` (:func:`new_set_alone_decides`)
makes a joint call done once a majority of the new set has it.
"""

from __future__ import annotations

import contextlib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hadoop_qjm.editlog.file_journal_manager import match_edit_logs
from hadoop_qjm.qjournal.client.membership_change import (
    begin_reconfiguration,
    finish_reconfiguration,
)
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.qjournal.protocol import membership
from hadoop_qjm.qjournal.protocol.exceptions import JournalMembershipException
from hadoop_qjm.testing.faults import is_injected
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID
from hadoop_qjm.testing.randomized_run import SeedRun

__all__ = [
    "MEMBERSHIP_NODES",
    "SWITCH_PROBABILITY",
    "MembershipRun",
    "new_set_alone_decides",
]

MEMBERSHIP_NODES = 5
_SEGMENT_START = re.compile(r"edits_(?:inprogress_)?(\d+)")
SWITCH_PROBABILITY = 0.2
#: The probability that the syncers caught up before a writer tries to finish a switch.
SYNC_PROBABILITY = 0.7
#: The probability that a writer uses the set from before the last switch.
STALE_CONFIG_PROBABILITY = 0.5


class MembershipRun(SeedRun):
    """One seed's run over five nodes, with set changes."""

    def __init__(
        self, *args: Any, switch_probability: float = SWITCH_PROBABILITY, **kwargs: Any
    ) -> None:
        super().__init__(*args, num_nodes=MEMBERSHIP_NODES, **kwargs)
        self.switch_probability = switch_probability
        self.members: tuple[int, ...] = (0, 1, 2)
        self.previous: tuple[int, ...] | None = None
        self._index = {node.address_string.lower(): node.index for node in self.cluster.nodes}
        self.uri = self._uri(self.members)
        self.begun = 0
        self.finished = 0

    @property
    def switches(self) -> tuple[int, int]:
        return (self.begun, self.finished)

    def _uri(self, nodes: tuple[int, ...]) -> str:
        hosts = ";".join(self.cluster.nodes[n].address_string for n in nodes)
        return f"qjournal://{hosts}/{JID}"

    def _nodes(self, members: frozenset[str]) -> tuple[int, ...]:
        return tuple(sorted(self._index[m] for m in members))

    def run(self, iterations: int) -> None:
        with QuorumJournalManager(
            self.conf,
            self._uri(tuple(range(MEMBERSHIP_NODES))),
            FAKE_NSINFO,
            logger_factory=self.plain_factory,
            http_opener=self.http_opener,
        ) as everyone:
            everyone.format(FAKE_NSINFO)
        self.trace_line("formatted jn0-jn4; the journal starts on jn0 jn1 jn2")
        for i in range(iterations):
            self.writer(i)

    def writer(self, i: int) -> None:
        configured = self.members
        if self.previous is not None and self.rng.random() < STALE_CONFIG_PROBABILITY:
            configured = self.previous
        self.uri = self._uri(configured)
        self.trace_line(f"writer {i} is configured with {_names(configured)}")
        super().writer(i)

    def _target(self) -> tuple[int, ...]:
        rng, members = self.rng, self.members
        others = [n for n in range(MEMBERSHIP_NODES) if n not in members]
        if len(members) == MEMBERSHIP_NODES:
            return tuple(sorted(rng.sample(members, 3)))  # shrink 5 -> 3
        if rng.random() < 0.5:
            return tuple(range(MEMBERSHIP_NODES))  # grow 3 -> 5
        kept = list(members)
        kept.remove(rng.choice(kept))
        return tuple(sorted([*kept, rng.choice(others)]))  # replace one

    def before_segments(self, i: int, qjm: QuorumJournalManager) -> None:
        if qjm.config.is_joint:
            # It adopted O+N: it finishes the switch at its first segment boundary.
            self._finish(i, qjm, self.read_through)  # what its recovery read back
            return
        if self.rng.random() >= self.switch_probability:
            return
        current = self._nodes(qjm.config.old)
        if current != self.members:
            return  # this writer followed the records to another set: not its switch to make
        target = self._target()
        self.trace_line(f"writer {i}: switch {_names(current)} -> {_names(target)}")
        # The operator edited both NameNodes' configuration after the last switch, before
        # this one (docs/journalnode.md): no writer is configured with older sets now.
        self.previous = None
        self.begun += 1
        try:
            begin_reconfiguration(qjm, self._uri(target))
        except Exception as e:  # noqa: BLE001 - judged by the invariant
            self.check_failure(i, "beginning the switch", e)

    def sync_history(self, new: tuple[int, ...]) -> None:
        """What the JournalNodeSyncers do meanwhile: each node of the new set gets the
        finalized segments (from the purge horizon on) that another node holds and it
        has no file of. Copied bytes are a finalized copy's, so invariant 3 still sees
        any divergence."""
        held: dict[str, Path] = {}
        for n in range(MEMBERSHIP_NODES):
            for log in match_edit_logs(self.cluster.current_dir(n, JID)):
                if not log.is_in_progress and log.last_txid >= self.purge_horizon:
                    held.setdefault(log.path.name, log.path)
        for n in new:
            current = self.cluster.current_dir(n, JID)
            # Any file of the segment (in progress, or acceptRecovery's .epoch= download)
            # keeps the copy away, as the syncer leaves a segment the node has alone.
            starts = {
                int(m.group(1))
                for f in current.glob("edits_*")
                if (m := _SEGMENT_START.match(f.name)) is not None
            }
            for name, source in sorted(held.items()):
                if int(name.split("_")[1].split("-")[0]) not in starts:
                    tmp = current / (name + ".sync-tmp")
                    shutil.copyfile(source, tmp)
                    tmp.rename(current / name)
                    self.trace_line(f"jn{n} syncs {name}")

    def after_segments(self, i: int, qjm: QuorumJournalManager) -> None:
        self._finish(i, qjm, self.last_acked)  # its last segment ends there

    def _finish(self, i: int, qjm: QuorumJournalManager, last_txid: int) -> None:
        if not qjm.config.is_joint or qjm.config.new is None:
            return
        if self.rng.random() < SYNC_PROBABILITY:
            self.sync_history(self._nodes(qjm.config.new))
        try:
            finish_reconfiguration(qjm, max(1, self.purge_horizon), last_txid)
        except JournalMembershipException as e:
            if "stays on" in str(e) and not is_injected(e):
                self.trace_line(f"writer {i}: not finishing the switch: {e}")
                return
            self.check_failure(i, "finishing the switch", e)
            return
        except Exception as e:  # noqa: BLE001 - judged by the invariant
            self.check_failure(i, "finishing the switch", e)
            return
        done = self._nodes(qjm.config.old)
        self.previous, self.members = self.members, done
        self.finished += 1
        self.trace_line(f"writer {i}: the journal is now on {_names(done)}")


def _names(nodes: tuple[int, ...]) -> str:
    return " ".join(f"jn{n}" for n in nodes)


@contextlib.contextmanager
def new_set_alone_decides() -> Iterator[None]:
    """PLANTED BUG "joint-quorum-new-set-only": a joint call is done once a majority
    of the new set has it (and fails only when the new set can no longer get one)."""
    config_class = membership.Config
    reached, impossible = config_class.quorum_reached, config_class.quorum_impossible

    def new_half(config: membership.Config) -> membership.Config:
        return config_class(config.new) if config.new is not None else config

    config_class.quorum_reached = lambda self, ok: reached(new_half(self), ok)  # type: ignore[method-assign]
    config_class.quorum_impossible = lambda self, bad: impossible(new_half(self), bad)  # type: ignore[method-assign]
    try:
        yield
    finally:
        config_class.quorum_reached = reached  # type: ignore[method-assign]
        config_class.quorum_impossible = impossible  # type: ignore[method-assign]
