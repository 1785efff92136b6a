"""Durable-file helpers: atomic replace with fsync, and the two single-number files.

Hadoop keeps small pieces of JournalNode state in files of their own
(HADOOP-QJM-DIGEST.md §3):

* ``last-promised-epoch`` and ``last-writer-epoch`` are :class:`PersistentLongFile`
  instances: decimal text plus ``"\\n"``, replaced atomically and fsynced on
  every change, because the epoch promise is what fences an old writer
  (design paper §2.3). Losing one would let two writers both think they lead.
* ``committed-txid`` is a :class:`BestEffortLongFile`: eight big-endian bytes
  overwritten in place *without* fsync, because it is only a hint for readers
  (a lower bound) and changes on almost every ``journal()`` call — which is also
  why the JournalNode writes it at most every 100 ms (:meth:`BestEffortLongFile.set_lazily`).

The atomic replace (Hadoop's ``AtomicFileOutputStream``) has one commit point,
the rename::

    write <name>.tmp -> flush -> fsync(tmp) -> [before-rename] -> rename over <name>
                                            -> [after-rename]  -> fsync(directory)

Hadoop does not fsync the directory; we do, so that the rename itself survives
a power cut. The two bracketed points are fault hooks (STYLE.md habit 4): a
test passes ``hook`` and raises there to simulate a crash on either side of
the commit point. Every fsync goes through an injectable ``fsync`` callable so
a test can make it fail; a failed fsync always raises, never is swallowed
(an ignored fsync error can silently lose an acknowledged write).
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import struct
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException

__all__ = [
    "blocking_file",
    "AFTER_RENAME",
    "BEFORE_RENAME",
    "AtomicFileWriter",
    "BestEffortLongFile",
    "CommitHook",
    "FsyncFunction",
    "PersistentLongFile",
    "atomic_replace",
    "fsync_dir",
    "make_dirs_durable",
    "unlink_durable",
]

#: ``fsync(fd)``: ``os.fsync`` or a test's replacement that may raise.
FsyncFunction = Callable[[int], None]

#: ``hook(point, target_path)``: called at :data:`BEFORE_RENAME` and :data:`AFTER_RENAME`.
CommitHook = Callable[[str, Path], None]

#: Fault point: the temp file is complete and fsynced; the target is still the old one.
BEFORE_RENAME = "before-rename"
#: Fault point: the rename is done (the new content is visible); the directory is not fsynced yet.
AFTER_RENAME = "after-rename"

TMP_SUFFIX = ".tmp"

_LONG_MIN = -(2**63)
_LONG_MAX = 2**63 - 1
# Java's Long.parseLong: an optional sign, then ASCII digits, nothing else.
_LONG_TEXT = re.compile(r"[+-]?[0-9]+")
_LONG_STRUCT = struct.Struct(">q")


def fsync_dir(path: str | os.PathLike[str], *, fsync: FsyncFunction = os.fsync) -> None:
    """Fsync directory ``path`` so that entries created or renamed in it are durable."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError as e:
        raise IOException(f"Cannot open directory {path} to fsync it: {e}") from e
    try:
        fsync(fd)
    except IOException:
        raise
    except OSError as e:
        raise IOException(f"Failed to fsync directory {path}: {e}") from e
    finally:
        os.close(fd)


def blocking_file(path: Path) -> Path | None:
    """What stops ``mkdir -p path``: the nearest of ``path`` and its ancestors that exists,
    if it is not a directory (a file); None when ``path`` is a directory or can be made.
    A command checks this before any work, not when it finally creates the directory."""
    for candidate in (path, *path.absolute().parents):
        if candidate.exists():
            return None if candidate.is_dir() else candidate
    return None


def make_dirs_durable(
    path: str | os.PathLike[str], *, fsync: FsyncFunction = os.fsync, mode: int = 0o777
) -> None:
    """Create directory ``path`` and its missing parents, each one's entry made durable.

    ``mkdir`` puts the new name in the parent directory, which a power cut may lose until
    that parent is fsynced: each directory created here has its parent fsynced (deepest
    last), so a format or a start-up acknowledged after this keeps its directories. An
    existing ``path`` is left as it is (no fsync).
    """
    target = Path(path)
    missing: list[Path] = []
    probe = target
    while not probe.exists():
        missing.append(probe)
        if probe.parent == probe:
            break
        probe = probe.parent
    if not missing:
        return
    target.mkdir(parents=True, exist_ok=True, mode=mode)
    for created in reversed(missing):
        fsync_dir(created.parent, fsync=fsync)


def unlink_durable(
    paths: list[Path], *, fsync: FsyncFunction = os.fsync
) -> list[tuple[Path, OSError]]:
    """Delete each of ``paths`` (best effort), then fsync each directory one was deleted
    from, so that a power cut does not bring a deleted file back. Returns the failures
    (an absent file is no failure); a failed directory fsync raises IOException."""
    failures: list[tuple[Path, OSError]] = []
    dirs: dict[Path, None] = {}
    for p in paths:
        try:
            p.unlink()
        except FileNotFoundError:
            continue
        except OSError as e:
            failures.append((p, e))
            continue
        dirs[p.parent] = None
    for d in dirs:
        fsync_dir(d, fsync=fsync)
    return failures


class AtomicFileWriter:
    """Write a whole file, then atomically replace ``path`` with it (``AtomicFileOutputStream``).

    Use as a context manager::

        with AtomicFileWriter(path) as out:
            out.write(b"...")

    A clean exit commits (see the module docstring for the steps); an exception
    inside the block, or a failure while committing before the rename, removes
    ``<name>.tmp`` and leaves ``path`` untouched. After the rename the new
    content is in place even if the directory fsync then fails (the error is
    still raised).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        fsync: FsyncFunction = os.fsync,
        hook: CommitHook | None = None,
    ) -> None:
        self.path = Path(path)
        self.tmp_path = self.path.with_name(self.path.name + TMP_SUFFIX)
        self._fsync = fsync
        self._hook = hook
        self._fd: int | None = None
        self._done = False

    def __enter__(self) -> AtomicFileWriter:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()

    def open(self) -> None:
        """Create (truncate) the temp file. Called by ``__enter__``."""
        if self._fd is not None or self._done:
            raise IOException(f"{self.tmp_path} is already open or finished")
        try:
            # A stale .tmp from a crashed writer is simply overwritten.
            self._fd = os.open(self.tmp_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        except OSError as e:
            raise IOException(f"Cannot create {self.tmp_path}: {e}") from e

    def write(self, data: bytes) -> None:
        """Append ``data`` to the temp file."""
        fd = self._require_open()
        view = memoryview(data)
        try:
            while view:
                written = os.write(fd, view)
                view = view[written:]
        except OSError as e:
            raise IOException(f"Failed to write {self.tmp_path}: {e}") from e

    def commit(self) -> None:
        """Fsync the temp file, rename it over the target, fsync the directory."""
        fd = self._require_open()
        try:
            try:
                self._fsync(fd)
            except IOException:
                raise
            except OSError as e:
                raise IOException(f"Failed to fsync {self.tmp_path}: {e}") from e
            self._fd = None
            try:
                os.close(fd)
            except OSError as e:
                raise IOException(f"Failed to close {self.tmp_path}: {e}") from e
            if self._hook is not None:
                self._hook(BEFORE_RENAME, self.path)
            try:
                # The commit point: os.replace is an atomic rename(2) over the target.
                os.replace(self.tmp_path, self.path)
            except OSError as e:
                raise IOException(f"Could not rename {self.tmp_path} to {self.path}: {e}") from e
        except BaseException:
            self.abort()
            raise
        self._done = True
        if self._hook is not None:
            self._hook(AFTER_RENAME, self.path)
        fsync_dir(self.path.parent, fsync=self._fsync)

    def abort(self) -> None:
        """Give up: close and delete the temp file; the target keeps its old content."""
        if self._done:
            return
        self._done = True
        fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp_path)

    def _require_open(self) -> int:
        if self._fd is None:
            raise IOException(f"{self.tmp_path} is not open for writing")
        return self._fd


def atomic_replace(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    fsync: FsyncFunction = os.fsync,
    hook: CommitHook | None = None,
) -> None:
    """Durably replace the content of ``path`` with ``data`` (all or nothing)."""
    with AtomicFileWriter(path, fsync=fsync, hook=hook) as out:
        out.write(data)


def _check_long(value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise IllegalArgumentException(f"Expected an integer, got {value!r}")
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise IllegalArgumentException(f"{value} does not fit in a signed 64-bit long")
    return value


class PersistentLongFile:
    """One number in a text file, changed atomically and durably (``PersistentLongFile``).

    The file holds the decimal value and ``"\\n"``. An absent file reads as
    ``default``. The value is cached after the first :meth:`get` or
    :meth:`set`; :meth:`set` rewrites the file only when the value changes.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        default: int,
        *,
        fsync: FsyncFunction = os.fsync,
        hook: CommitHook | None = None,
    ) -> None:
        self.path = Path(path)
        self.default = _check_long(default)
        self._fsync = fsync
        self._hook = hook
        self._value = default
        self._loaded = False

    def get(self) -> int:
        """The stored value (read from disk once, then cached)."""
        if not self._loaded:
            self._value = self.read_file(self.path, self.default)
            self._loaded = True
        return self._value

    def set(self, value: int) -> None:
        """Store ``value``; on return it is on disk (or an IOException was raised)."""
        _check_long(value)
        if not self._loaded or value != self._value:
            self.write_file(self.path, value, fsync=self._fsync, hook=self._hook)
        self._value = value
        self._loaded = True

    @staticmethod
    def write_file(
        path: str | os.PathLike[str],
        value: int,
        *,
        fsync: FsyncFunction = os.fsync,
        hook: CommitHook | None = None,
    ) -> None:
        """Atomically write ``value`` as decimal text plus newline, with fsync."""
        data = f"{_check_long(value)}\n".encode("ascii")
        atomic_replace(path, data, fsync=fsync, hook=hook)

    @staticmethod
    def read_file(path: str | os.PathLike[str], default: int) -> int:
        """Read the number in ``path``; ``default`` if the file does not exist."""
        try:
            with open(path, "rb") as f:
                first_line = f.readline()
        except FileNotFoundError:
            return default
        except OSError as e:
            raise IOException(f"Cannot read {path}: {e}") from e
        # Like Java's readLine: the terminator (\n, \r or \r\n) is not part of the line.
        text = first_line.decode("utf-8", errors="replace").split("\r", 1)[0].rstrip("\n")
        if not _LONG_TEXT.fullmatch(text):
            raise IOException(f"File {path} does not hold a number: {text!r}")
        value = int(text)
        if not _LONG_MIN <= value <= _LONG_MAX:
            raise IOException(f"File {path} holds a number out of the long range: {text}")
        return value

    def __repr__(self) -> str:
        return f"PersistentLongFile({str(self.path)!r}, default={self.default})"


class BestEffortLongFile:
    """One number as 8 big-endian bytes, overwritten in place, never fsynced.

    Hadoop's ``BestEffortLongFile``, used for ``committed-txid``: the value is a
    hint that may be lost or stale after a crash, so the write is cheap. The
    file is opened lazily (and created, empty, if absent); an absent or empty
    file reads as ``default``; any length other than 0 or 8 raises
    IOException. :meth:`close` releases the file descriptor (writing a value
    :meth:`set_lazily` held back first); a later call opens it again and
    re-reads the value.

    :meth:`set` writes at once, as Hadoop does. :meth:`set_lazily` writes at
    most once per ``lazy_interval_s`` (0, the default: every time) and keeps a
    newer value in memory until the next write (:meth:`flush`, :meth:`close`,
    or a later call once the interval has passed): for a value that only
    grows, read as a lower bound, where a stale file costs nothing but a write
    costs a system call on every request (the JournalNode's committed txid;
    docs/journalnode.md).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        default: int,
        lazy_interval_s: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = Path(path)
        self.default = _check_long(default)
        self.lazy_interval_s = lazy_interval_s
        self._clock = clock
        self._value = default
        self._fd: int | None = None
        self._written_at = -math.inf  # when set_lazily last wrote
        self._unwritten = False  # the value in memory is newer than the file's

    def get(self) -> int:
        """The current value."""
        self._lazy_open()
        return self._value

    def set(self, value: int) -> None:
        """Overwrite the value at offset 0 now (no fsync: "best effort")."""
        data = _LONG_STRUCT.pack(_check_long(value))
        fd = self._lazy_open()
        try:
            written = 0
            while written < len(data):
                written += os.pwrite(fd, data[written:], written)
        except OSError as e:
            raise IOException(f"Failed to write {self.path}: {e}") from e
        self._value = value
        self._unwritten = False

    def set_durably(self, value: int, *, fsync: FsyncFunction | None = None) -> None:
        """:meth:`set`, then fsync the file (``fsync``, default ``os.fsync``): for a value
        that goes down (a rollback's discard), which a power cut must not bring back up."""
        self.set(value)
        try:
            (fsync or os.fsync)(self._lazy_open())
        except OSError as e:
            raise IOException(f"Failed to fsync {self.path}: {e}") from e

    def set_lazily(self, value: int) -> None:
        """Set the value; write it only if ``lazy_interval_s`` passed since the last
        such write, else leave it for a later write (see the class docstring)."""
        now = self._clock()
        if (
            now - self._written_at < self.lazy_interval_s
            and type(value) is int  # _check_long, inline: this runs on every journal() call
            and _LONG_MIN <= value <= _LONG_MAX
            and self._fd is not None  # open: the file's value cannot replace this one later
        ):
            self._value = value
            self._unwritten = True
            return
        self.set(value)  # due, or the checks and the opening of set
        self._written_at = now

    def flush(self) -> None:
        """Write a value :meth:`set_lazily` held back, if any (one is held back only
        while the file is open)."""
        if self._unwritten:
            self.set(self._value)

    def close(self, *, flush: bool = True) -> None:
        """Write a value held back (unless ``flush`` is False: the file is about to be
        removed, or a test crashes), then close the file descriptor (idempotent); the
        descriptor is closed even if that write fails."""
        try:
            if flush:
                self.flush()
        finally:
            self._close_fd()

    def _close_fd(self) -> None:
        fd, self._fd = self._fd, None
        self._unwritten = False
        if fd is not None:
            try:
                os.close(fd)
            except OSError as e:
                raise IOException(f"Failed to close {self.path}: {e}") from e

    def __enter__(self) -> BestEffortLongFile:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _lazy_open(self) -> int:
        if self._fd is not None:
            return self._fd
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            data = b""
        except OSError as e:
            raise IOException(f"Cannot read {self.path}: {e}") from e
        if data:
            if len(data) != _LONG_STRUCT.size:
                raise IOException(f"File {self.path} had invalid length: {len(data)}")
            (value,) = _LONG_STRUCT.unpack(data)
        else:
            value = self.default
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as e:
            raise IOException(f"Cannot open {self.path}: {e}") from e
        self._value = value
        self._fd = fd
        return fd

    def __repr__(self) -> str:
        return f"BestEffortLongFile({str(self.path)!r}, default={self.default})"
