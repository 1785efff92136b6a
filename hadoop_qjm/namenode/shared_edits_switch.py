"""``current/shared_edits_switch``: where a NameNode keeps a JournalNode set change.

After ``haadmin -reconfigureSharedEdits`` the shared edits live on another JournalNode
set than the one ``dfs.namenode.shared.edits.dir`` names until the operator edits the
configuration of both NameNodes. Each NameNode that moved to the new set (the active
that made the switch, the standby whose reader followed it, a NameNode that followed
the records when it became active) records it in every name directory's ``current/``:

    # The JournalNode set of the shared edits after a set change (docs/ha.md, ...)
    uri=qjournal://a:8485;b:8485;d:8485/mycluster
    epoch=3
    version=2
    left=a:8485;b:8485;c:8485

A restart reads it (:func:`choose_shared_edits_uri`): when the configured URI names a
set the journal *left* (one of ``left``), the NameNode uses the recorded URI and logs a
WARN asking for the config edit; a configuration naming the recorded set, or a set this
NameNode never saw the journal leave, is used as it is (the JournalNodes' own membership
records still redirect a writer or reader that uses an older set). Each write replaces
the file durably (write temp → fsync → rename → fsync dir); a directory that cannot be
written is logged and skipped: the JournalNodes' records remain the authority, this
file only lets a NameNode find them when the configured nodes are gone.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hadoop_qjm.common.durable import FsyncFunction, atomic_replace
from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.qjournal.protocol.membership import parse_members

__all__ = ["SHARED_EDITS_SWITCH_FILE", "SharedEditsSwitch", "choose_shared_edits_uri"]

LOG = logging.getLogger(__name__)

SHARED_EDITS_SWITCH_FILE = "shared_edits_switch"

_HEADER = (
    "# The JournalNode set of the shared edits after a set change (docs/ha.md, "
    '"Changing the JournalNode set"). Written by the NameNode; it is read at start-up\n'
    "# when dfs.namenode.shared.edits.dir names a set listed in left=.\n"
)


def _members_text(members: frozenset[str]) -> str:
    return ";".join(sorted(members))


def _uri_members(uri: str) -> tuple[str, frozenset[str]]:
    from hadoop_qjm.qjournal.client.membership_change import members_of_uri

    return members_of_uri(uri)


@dataclass(frozen=True)
class SharedEditsSwitch:
    """The set a NameNode moved its shared edits to, and the sets it saw them leave."""

    journal_id: str
    members: frozenset[str]
    epoch: int
    version: int
    left: frozenset[frozenset[str]] = frozenset()

    @property
    def key(self) -> tuple[int, int]:
        """The membership record's order (epoch, then version): the newer switch wins."""
        return (self.epoch, self.version)

    @property
    def uri(self) -> str:
        return f"qjournal://{_members_text(self.members)}/{self.journal_id}"

    def to_text(self) -> str:
        lines = [f"uri={self.uri}", f"epoch={self.epoch}", f"version={self.version}"]
        lines += [f"left={_members_text(s)}" for s in sorted(self.left, key=sorted)]
        return _HEADER + "\n".join(lines) + "\n"

    @classmethod
    def parse(cls, text: str) -> SharedEditsSwitch:
        """The record of :meth:`to_text`'s form; anything else raises one sentence."""
        fields: dict[str, str] = {}
        left: list[frozenset[str]] = []
        for line in text.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            name, sep, value = line.partition("=")
            if not sep:
                raise IllegalArgumentException(f"bad line {line!r}")
            if name.strip() == "left":
                left.append(parse_members(value))
            else:
                fields[name.strip()] = value.strip()
        try:
            journal_id, members = _uri_members(fields["uri"])
            epoch, version = int(fields["epoch"]), int(fields["version"])
        except (KeyError, ValueError) as e:
            raise IllegalArgumentException(f"missing or bad field {e}") from None
        return cls(journal_id, members, epoch, version, frozenset(s for s in left if s))

    def after(
        self, members: frozenset[str], epoch: int, version: int, left: Iterable[frozenset[str]]
    ) -> SharedEditsSwitch:
        """The next switch: to ``members``, having left ``left`` and this one's sets."""
        gone = set(self.left) | {self.members} | set(left)
        gone.discard(members)
        return SharedEditsSwitch(self.journal_id, members, epoch, version, frozenset(gone))


def read_switch(dirs: Iterable[Path], journal_id: str) -> tuple[SharedEditsSwitch, Path] | None:
    """The newest switch of ``journal_id`` recorded in any of ``dirs`` (``current/``
    directories), with its file; a damaged file is logged and skipped."""
    found: list[tuple[SharedEditsSwitch, Path]] = []
    for current in dirs:
        path = Path(current) / SHARED_EDITS_SWITCH_FILE
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            continue
        except OSError as e:
            LOG.warning("Cannot read %s: %s", path, e)
            continue
        try:
            switch = SharedEditsSwitch.parse(text)
        except IllegalArgumentException as e:
            LOG.warning("Ignoring the damaged %s: %s", path, e)
            continue
        if switch.journal_id == journal_id:
            found.append((switch, path))
    return max(found, key=lambda f: f[0].key) if found else None


def write_switch(
    dirs: Iterable[Path], switch: SharedEditsSwitch, *, fsync: FsyncFunction = os.fsync
) -> None:
    """Record ``switch`` in each of ``dirs`` unless it holds it or a newer one already."""
    for current in dirs:
        existing = read_switch([current], switch.journal_id)
        if existing is not None and (existing[0] == switch or existing[0].key > switch.key):
            continue  # never replace a newer switch by an older one
        path = Path(current) / SHARED_EDITS_SWITCH_FILE
        try:
            atomic_replace(path, switch.to_text().encode("utf-8"), fsync=fsync)
        except OSError as e:
            LOG.warning("Could not record the JournalNode set change in %s: %s", path, e)


def choose_shared_edits_uri(configured: str, dirs: Iterable[Path]) -> str:
    """The shared edits URI to use: ``configured``, unless it names a set the journal
    left (as recorded in ``dirs``), then the recorded one, with a WARN for the operator."""
    if not configured.startswith("qjournal:"):
        return configured
    journal_id, members = _uri_members(configured)
    found = read_switch(dirs, journal_id)
    if found is None:
        return configured
    switch, path = found
    if members == switch.members or members not in switch.left:
        return configured
    LOG.warning(
        "%s names the JournalNodes %s, which journal %s left; using %s (recorded in %s). "
        "Set %s to it on every NameNode.",
        keys.DFS_NAMENODE_SHARED_EDITS_DIR_KEY,
        _members_text(members),
        journal_id,
        switch.uri,
        path,
        keys.DFS_NAMENODE_SHARED_EDITS_DIR_KEY,
    )
    return switch.uri


def record_stable_set(
    dirs: Iterable[Path],
    journal_id: str,
    configured: str,
    members: frozenset[str],
    epoch: int,
    version: int,
    previous: frozenset[str],
    *,
    fsync: FsyncFunction = os.fsync,
) -> None:
    """A NameNode now uses ``members`` (a STABLE membership record of ``epoch`` /
    ``version``, switched from ``previous``): record it, with the sets left so far."""
    dirs = list(dirs)
    found = read_switch(dirs, journal_id)
    base = found[0] if found else SharedEditsSwitch(journal_id, members, epoch, version)
    left = [previous] if previous else []
    _, configured_members = _uri_members(configured)
    left.append(configured_members)
    write_switch(dirs, base.after(members, epoch, version, left), fsync=fsync)
