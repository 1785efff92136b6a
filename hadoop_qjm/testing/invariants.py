"""Invariants the fault tests check on the JournalNodes' disks (design paper §7.4).

:class:`FinalizedSegmentChecker`: finalized segments with the same first txid
are byte-identical on every node. A finalized segment holds exactly its
transactions (DESIGN.md §3: finalizing truncates the padding, also after a
recovery), so two nodes that finalized segment S must have the same file
name and the same bytes. Checked with ``always_assert`` (STYLE.md habit 7).
Bytes the harness itself flipped (bit rot, ``known_flips``) are flipped back
before comparing: the invariant is about what was written.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from hadoop_qjm.common.exceptions import always_assert

__all__ = ["FinalizedSegmentChecker"]

_FINALIZED = re.compile(r"edits_(\d{19})-(\d{19})")

_StatKey = tuple[int, int, int]


class FinalizedSegmentChecker:
    """Compares the finalized segments of every node's ``current/`` directory.

    ``current_dirs`` returns the directories to compare (one per node, in node
    order); each file is hashed once and re-hashed only if its inode, size or
    mtime changed.
    """

    def __init__(
        self,
        current_dirs: Callable[[], Sequence[Path]],
        known_flips: Callable[[int, str], Iterable[int]] | None = None,
    ) -> None:
        self._current_dirs = current_dirs
        self._known_flips = known_flips or (lambda node, name: ())
        self._digests: dict[tuple[int, str], tuple[_StatKey, bytes]] = {}

    def check(self, context: str = "") -> int:
        """Raise HadoopAssertionError if two nodes disagree; returns the files compared."""
        seen: dict[int, tuple[str, bytes, int]] = {}
        digests: dict[tuple[int, str], tuple[_StatKey, bytes]] = {}
        for node, directory in enumerate(self._current_dirs()):
            try:
                entries = list(os.scandir(directory))
            except FileNotFoundError:
                continue
            for entry in entries:
                m = _FINALIZED.fullmatch(entry.name)
                if m is None:
                    continue
                key = (node, entry.name)
                try:
                    st = entry.stat()
                    stat_key = (st.st_ino, st.st_size, st.st_mtime_ns)
                    cached = self._digests.get(key)
                    if cached is None or cached[0] != stat_key:
                        data = bytearray(Path(entry.path).read_bytes())
                        for offset in self._known_flips(node, entry.name):
                            data[offset] ^= 0x01
                        cached = (stat_key, hashlib.sha256(data).digest())
                except FileNotFoundError:  # purged meanwhile (a JournalNode with its own threads)
                    continue
                digests[key] = cached
                start = int(m.group(1))
                other = seen.setdefault(start, (entry.name, cached[1], node))
                always_assert(
                    other[:2] == (entry.name, cached[1]),
                    f"{context}finalized segments starting at txid {start} differ: "
                    f"jn{other[2]} has {other[0]}, jn{node} has {entry.name}"
                    + (" (same name, different bytes)" if other[0] == entry.name else ""),
                )
        self._digests = digests
        return len(digests)
