"""A JournalNode's edits directories: Hadoop's checks of ``dfs.journalnode.edits.dir``
and their durable creation (used by the daemon and by ``journalnode -bootstrap``)."""

from __future__ import annotations

import os
from pathlib import Path

from hadoop_qjm.common.durable import FsyncFunction, make_dirs_durable
from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException

__all__ = ["check_journal_dir", "create_journal_dir"]


def check_journal_dir(directory: str) -> Path:
    """The edits dir must be absolute and, if it exists, a directory (Hadoop's checks and
    messages); nothing is created."""
    path = Path(directory.strip())
    if not path.is_absolute():
        raise IllegalArgumentException(f"Journal dir '{directory}' should be an absolute path")
    if path.exists() and not path.is_dir():
        raise IOException(f"Not a directory: {path}")
    return path


def create_journal_dir(path: Path, *, fsync: FsyncFunction = os.fsync) -> None:
    """Create a checked edits dir (and its parents, each made durable); it must end up
    usable."""
    try:
        # Durable before any journal in it is formatted or acknowledges anything.
        make_dirs_durable(path, fsync=fsync)
    except OSError as e:
        raise IOException(f"Cannot create directory: {path}: {e.strerror or e}") from None
    if not path.is_dir():
        raise IOException(f"Cannot create directory: {path}")
    if not os.access(path, os.R_OK | os.W_OK | os.X_OK):
        raise IOException(f"Directory is not readable, writable and executable: {path}")
