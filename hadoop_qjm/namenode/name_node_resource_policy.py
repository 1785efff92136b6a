"""NameNodeResourcePolicy: has the NameNode what it needs to keep logging edits?

Pure rules (STYLE.md habit 1): no file system, socket or thread code here; the
``statvfs`` calls are in :mod:`hadoop_qjm.namenode.name_node_resource_checker`.

* :func:`are_resources_available` — Hadoop's NameNodeResourcePolicy.areResourcesAvailable:
  every *required* resource must be available; of the *redundant* ones, at least
  ``minimum_redundant``. The JournalSet applies it to its journals, the resource checker
  to the volumes of the local name and edits directories.
* :func:`group_by_volume` — NameNodeResourceChecker.addDirToCheck: directories on one
  volume are checked once, and the volume is required if any of them is.
* :func:`check_volumes` — NameNodeResourceChecker.hasAvailableDiskSpace: a volume is
  available while it keeps ``dfs.namenode.resource.du.reserved`` bytes free.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "CheckedVolume",
    "ResourceVerdict",
    "are_resources_available",
    "check_volumes",
    "group_by_volume",
]

_RESERVED_KEY = "dfs.namenode.resource.du.reserved"
_MINIMUM_KEY = "dfs.namenode.resource.checked.volumes.minimum"


def are_resources_available(resources: Iterable[tuple[bool, bool]], minimum_redundant: int) -> bool:
    """NameNodeResourcePolicy.areResourcesAvailable over ``(required, available)`` pairs.

    Every required resource must be available. With optional resources, at least
    ``minimum_redundant`` of them must be available; with none, at least one required
    resource must exist.
    """
    required_count = redundant_count = redundant_unavailable = 0
    for required, available in resources:
        if required:
            required_count += 1
            if not available:
                return False
        else:
            redundant_count += 1
            if not available:
                redundant_unavailable += 1
    if redundant_count == 0:
        return required_count > 0
    return redundant_count - redundant_unavailable >= minimum_redundant


@dataclass(frozen=True)
class CheckedVolume:
    """One volume holding name or edits directories, and the bytes still free on it for
    the NameNode (``statvfs``: available blocks × fragment size)."""

    directories: tuple[str, ...]
    available_bytes: int
    required: bool

    @property
    def name(self) -> str:
        return ", ".join(self.directories)


@dataclass(frozen=True)
class ResourceVerdict:
    """Whether the NameNode has resources; if not, ``reason`` says why on one line.
    ``short`` are the volumes below the reserve (available or not overall)."""

    available: bool
    short: tuple[CheckedVolume, ...]
    reason: str | None = None


def group_by_volume(
    directories: Iterable[tuple[str, Hashable, bool]],
) -> list[tuple[tuple[str, ...], bool]]:
    """``(directory, volume id, required)`` -> one ``(directories, required)`` per volume,
    in first-seen order; a volume is required if any of its directories is."""
    volumes: dict[Hashable, tuple[list[str], bool]] = {}
    for directory, volume, required in directories:
        names, was_required = volumes.get(volume, ([], False))
        if directory not in names:
            names.append(directory)
        volumes[volume] = (names, was_required or required)
    return [(tuple(names), required) for names, required in volumes.values()]


def check_volumes(
    volumes: Sequence[CheckedVolume], reserved_bytes: int, minimum_redundant: int
) -> ResourceVerdict:
    """Do the volumes leave the NameNode room to work? (see the module docstring)

    No volume at all is available, as in Hadoop (a NameNode without local directories
    has nothing to check)."""
    short = tuple(v for v in volumes if v.available_bytes < reserved_bytes)
    if not volumes:
        return ResourceVerdict(True, short)
    ok = are_resources_available(
        ((v.required, v.available_bytes >= reserved_bytes) for v in volumes), minimum_redundant
    )
    if ok:
        return ResourceVerdict(True, short)
    if short:
        reason = "; ".join(
            f"{v.name} has {v.available_bytes} bytes available, less than "
            f"{_RESERVED_KEY} = {reserved_bytes}"
            for v in short
        )
    else:  # every volume has room, but fewer redundant ones than the minimum exist
        redundant = sum(1 for v in volumes if not v.required)
        reason = f"{redundant} redundant volumes, fewer than {_MINIMUM_KEY} = {minimum_redundant}"
    return ResourceVerdict(False, short, reason)
