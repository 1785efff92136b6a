"""Storage directories: the ``current/VERSION`` file, the ``in_use.lock`` and the storage states.

A port of the parts of Hadoop's ``Storage`` / ``Storage.StorageDirectory``
that JournalNode and NameNode storage share (HADOOP-QJM-DIGEST.md §3)::

    <root>/in_use.lock          exclusive lock, content "<pid>@<hostname>"
    <root>/current/VERSION      java.util.Properties: namespaceID, clusterID, cTime,
                                storageType, layoutVersion (+ blockpoolID on a NameNode)
    <root>/previous/  previous.tmp/  removed.tmp/  finalized.tmp/  lastcheckpoint.tmp/
                                upgrade / rollback / checkpoint transitions

Two deliberate differences from Hadoop, neither visible in the files:

* ``VERSION`` is replaced atomically (temp file, fsync, rename, fsync dir)
  instead of being rewritten in place, so a crash never leaves a torn one.
* The lock is a BSD ``flock`` rather than Java's POSIX ``fcntl`` lock. POSIX
  locks belong to the process, so a second lock attempt from the same process
  would succeed, and closing *any* descriptor of the file would drop the lock.
  ``flock`` locks belong to the open file, so a second ``StorageDirectory`` on
  the same root fails even in the same process, as Hadoop's
  ``OverlappingFileLockException`` makes it fail in one JVM.
"""

from __future__ import annotations

import atexit
import contextlib
import enum
import fcntl
import logging
import os
import re
import shutil
import socket
import time
import weakref
from collections.abc import Callable, Mapping
from pathlib import Path

from hadoop_qjm.common.durable import FsyncFunction, atomic_replace, fsync_dir, make_dirs_durable
from hadoop_qjm.common.exceptions import (
    IllegalArgumentException,
    InconsistentFSStateException,
    IOException,
)
from hadoop_qjm.common.java_properties import load_properties, store_properties
from hadoop_qjm.common.storage_info import (
    NODE_TYPE_JOURNAL_NODE,
    NODE_TYPE_NAME_NODE,
    NamespaceInfo,
    StorageInfo,
)

__all__ = [
    "NODE_TYPE_JOURNAL_NODE",
    "NODE_TYPE_NAME_NODE",
    "NamespaceInfo",
    "StorageDirectory",
    "StorageInfo",
    "StorageState",
    "STORAGE_DIR_CURRENT",
    "STORAGE_DIR_PREVIOUS",
    "STORAGE_FILE_LOCK",
    "STORAGE_FILE_VERSION",
    "STORAGE_PREVIOUS_CKPT",
    "STORAGE_TMP_FINALIZED",
    "STORAGE_TMP_LAST_CKPT",
    "STORAGE_TMP_PREVIOUS",
    "STORAGE_TMP_REMOVED",
    "inconsistent_state",
    "process_name",
]

LOG = logging.getLogger(__name__)

STORAGE_FILE_LOCK = "in_use.lock"
STORAGE_FILE_VERSION = "VERSION"
STORAGE_DIR_CURRENT = "current"
STORAGE_DIR_PREVIOUS = "previous"
STORAGE_TMP_REMOVED = "removed.tmp"
STORAGE_TMP_PREVIOUS = "previous.tmp"
STORAGE_TMP_FINALIZED = "finalized.tmp"
STORAGE_TMP_LAST_CKPT = "lastcheckpoint.tmp"
STORAGE_PREVIOUS_CKPT = "previous.checkpoint"

_NODE_TYPES = (NODE_TYPE_JOURNAL_NODE, NODE_TYPE_NAME_NODE, "DATA_NODE")
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
# How many times lock() retries when the lock file it locked was unlinked under it.
_LOCK_ATTEMPTS = 5


class StorageState(enum.Enum):
    """What ``analyze_storage`` found (Hadoop's ``Storage.StorageState``)."""

    NON_EXISTENT = "NON_EXISTENT"
    NOT_FORMATTED = "NOT_FORMATTED"
    COMPLETE_UPGRADE = "COMPLETE_UPGRADE"
    RECOVER_UPGRADE = "RECOVER_UPGRADE"
    COMPLETE_FINALIZE = "COMPLETE_FINALIZE"
    COMPLETE_ROLLBACK = "COMPLETE_ROLLBACK"
    RECOVER_ROLLBACK = "RECOVER_ROLLBACK"
    COMPLETE_CHECKPOINT = "COMPLETE_CHECKPOINT"
    RECOVER_CHECKPOINT = "RECOVER_CHECKPOINT"
    NORMAL = "NORMAL"


def process_name() -> str:
    """``<pid>@<hostname>``, what the JVM's ``RuntimeMXBean.getName()`` returns."""
    return f"{os.getpid()}@{socket.gethostname()}"


def inconsistent_state(
    directory: str | os.PathLike[str], description: str
) -> InconsistentFSStateException:
    """An InconsistentFSStateException with Hadoop's message for ``directory``."""
    return InconsistentFSStateException(
        f"Directory {os.path.realpath(directory)} is in an inconsistent state: {description}"
    )


# Directories locked by this process, unlocked at exit like Hadoop's deleteOnExit.
_LOCKED: weakref.WeakSet[StorageDirectory] = weakref.WeakSet()


@atexit.register
def _unlock_all_at_exit() -> None:
    for sd in list(_LOCKED):
        with contextlib.suppress(OSError):
            sd.unlock()


class StorageDirectory:
    """One storage root: its well-known paths, its lock, its state and its VERSION file.

    ``storage_type`` is what ``VERSION``'s ``storageType`` must say
    (``JOURNAL_NODE`` or ``NAME_NODE``); ``dir_perm`` is applied to ``current/``
    when it is (re)created (``dfs.journalnode.edits.dir.perm``). ``fsync`` and
    ``clock`` are injectable for tests.
    """

    def __init__(
        self,
        root: str | os.PathLike[str],
        storage_type: str = NODE_TYPE_JOURNAL_NODE,
        dir_perm: int = 0o700,
        *,
        fsync: FsyncFunction = os.fsync,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if storage_type not in _NODE_TYPES:
            raise IllegalArgumentException(f"Unknown storage type {storage_type!r}")
        self.root = Path(root)
        self.storage_type = storage_type
        self.dir_perm = dir_perm
        self._fsync = fsync
        self._clock = clock
        self._lock_fd: int | None = None
        self._lock_pid: int | None = None

    # -- well-known paths -------------------------------------------------

    @property
    def current(self) -> Path:
        """``<root>/current``: the live files."""
        return self.root / STORAGE_DIR_CURRENT

    @property
    def version_file(self) -> Path:
        """``<root>/current/VERSION``; written last, so its presence means "formatted"."""
        return self.current / STORAGE_FILE_VERSION

    @property
    def previous(self) -> Path:
        """``<root>/previous``: the pre-upgrade state kept for rollback."""
        return self.root / STORAGE_DIR_PREVIOUS

    @property
    def previous_version_file(self) -> Path:
        """``<root>/previous/VERSION``."""
        return self.previous / STORAGE_FILE_VERSION

    @property
    def previous_tmp(self) -> Path:
        """``<root>/previous.tmp``: the old ``current`` while an upgrade writes the new one."""
        return self.root / STORAGE_TMP_PREVIOUS

    @property
    def removed_tmp(self) -> Path:
        """``<root>/removed.tmp``: the discarded ``current`` during a rollback."""
        return self.root / STORAGE_TMP_REMOVED

    @property
    def finalized_tmp(self) -> Path:
        """``<root>/finalized.tmp``: ``previous`` being deleted by a finalize."""
        return self.root / STORAGE_TMP_FINALIZED

    @property
    def last_checkpoint_tmp(self) -> Path:
        """``<root>/lastcheckpoint.tmp``: the old ``current`` while a checkpoint is saved."""
        return self.root / STORAGE_TMP_LAST_CKPT

    @property
    def previous_checkpoint(self) -> Path:
        """``<root>/previous.checkpoint``: the state before the last checkpoint."""
        return self.root / STORAGE_PREVIOUS_CKPT

    @property
    def lock_file(self) -> Path:
        """``<root>/in_use.lock``."""
        return self.root / STORAGE_FILE_LOCK

    # -- the lock -----------------------------------------------------------

    @property
    def is_locked(self) -> bool:
        """True while this object holds the directory's lock."""
        return self._lock_fd is not None

    def lock(self) -> None:
        """Take the exclusive lock on ``in_use.lock`` or raise IOException.

        Fails if anyone else holds it: another process, another
        ``StorageDirectory`` in this process, or this object itself. The lock
        lasts until :meth:`unlock`, the object is garbage collected, or the
        process dies (even by SIGKILL: the kernel releases it).
        """
        for _ in range(_LOCK_ATTEMPTS):
            fd = self._try_lock()
            if fd is not None:
                break
        else:
            raise IOException(f"Cannot lock storage {self.root}: the lock file keeps changing")
        try:
            content = process_name().encode("utf-8")
            os.ftruncate(fd, 0)
            os.pwrite(fd, content, 0)
        except OSError as e:
            os.close(fd)
            raise IOException(f"Cannot write lock file {self.lock_file}: {e}") from e
        # Only now replace the state, so a failed second lock() leaves the first one intact.
        self._lock_fd = fd
        self._lock_pid = os.getpid()
        _LOCKED.add(self)
        LOG.info("Lock on %s acquired by nodename %s", self.lock_file, content.decode())

    def _try_lock(self) -> int | None:
        """Lock the current lock file; None if it was replaced while we locked it."""
        try:
            fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as e:
            raise IOException(f"Cannot open lock file {self.lock_file}: {e}") from e
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            message = f"Cannot lock storage {self.root}. The directory is already locked"
            if holder:
                message += f" by {holder}"
            LOG.info(message)
            raise IOException(message) from None
        except OSError as e:
            os.close(fd)
            raise IOException(
                f"Failed to acquire lock on {self.lock_file}. If this storage directory is "
                f"mounted via NFS, ensure that the appropriate nfs lock services are running: {e}"
            ) from e
        # unlock() deletes the file while holding the lock: if that happened between our
        # open and our flock, we locked an orphaned inode and must try the new file.
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(self.lock_file))
        except FileNotFoundError:
            same = False
        if not same:
            os.close(fd)
            return None
        return fd

    def unlock(self) -> None:
        """Release the lock and delete ``in_use.lock`` (no-op if not locked)."""
        fd, self._lock_fd = self._lock_fd, None
        pid, self._lock_pid = self._lock_pid, None
        _LOCKED.discard(self)
        if fd is None:
            return
        if pid != os.getpid():
            # A forked child shares the parent's open file: releasing it would unlock the parent.
            os.close(fd)
            return
        try:
            # Delete while still holding the lock (see _try_lock for the race this avoids).
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.lock_file)
            fcntl.flock(fd, fcntl.LOCK_UN)
        except OSError as e:
            raise IOException(f"Failed to unlock {self.lock_file}: {e}") from e
        finally:
            os.close(fd)

    def __del__(self) -> None:
        fd = getattr(self, "_lock_fd", None)
        if fd is not None:
            # Garbage collected while locked: closing the descriptor releases the lock.
            # (Broad except: at interpreter shutdown even ``os`` may already be gone.)
            try:
                os.close(fd)
            except Exception:
                pass

    # -- state ------------------------------------------------------------

    def analyze_storage(
        self, startup_option_format: bool = False, *, lock: bool = True
    ) -> StorageState:
        """Classify the directory, like ``StorageDirectory.analyzeStorage``.

        A missing root is NON_EXISTENT, unless formatting, which creates it.
        An existing root is locked (unless ``lock=False`` or this object
        already holds the lock). When formatting the answer is NOT_FORMATTED.
        Otherwise: no temp directory means NORMAL if ``current/VERSION``
        exists, else NOT_FORMATTED (``previous/`` without ``VERSION`` is
        inconsistent); exactly one temp directory names a transition to
        complete (``VERSION`` present) or recover from (absent); two or more
        temp directories are inconsistent.
        """
        root = self.root
        if not root.exists():
            if not startup_option_format:
                LOG.info("Storage directory %s does not exist", root)
                return StorageState.NON_EXISTENT
            LOG.info("%s does not exist. Creating ...", root)
            try:
                make_dirs_durable(root, fsync=self._fsync)
            except OSError as e:
                raise IOException(f"Cannot create directory {root}: {e}") from e
        if not root.is_dir():
            LOG.warning("%s is not a directory", root)
            return StorageState.NON_EXISTENT
        if not os.access(root, os.W_OK | os.X_OK):
            LOG.warning("Cannot access storage directory %s", root)
            return StorageState.NON_EXISTENT

        if lock and not self.is_locked:
            self.lock()
        if startup_option_format:
            return StorageState.NOT_FORMATTED

        has_current = self.version_file.exists()
        has_previous = self.previous.exists()
        has_previous_tmp = self.previous_tmp.exists()
        has_removed_tmp = self.removed_tmp.exists()
        has_finalized_tmp = self.finalized_tmp.exists()
        has_checkpoint_tmp = self.last_checkpoint_tmp.exists()

        temp_dirs = has_previous_tmp + has_removed_tmp + has_finalized_tmp + has_checkpoint_tmp
        if temp_dirs == 0:
            if has_current:
                return StorageState.NORMAL
            if has_previous:
                raise inconsistent_state(root, "version file in current directory is missing.")
            return StorageState.NOT_FORMATTED
        if temp_dirs > 1:
            raise inconsistent_state(root, "too many temporary directories.")

        if has_checkpoint_tmp:
            return (
                StorageState.COMPLETE_CHECKPOINT if has_current else StorageState.RECOVER_CHECKPOINT
            )
        if has_finalized_tmp:
            if has_previous:
                raise inconsistent_state(
                    root,
                    f"{STORAGE_DIR_PREVIOUS} and {STORAGE_TMP_FINALIZED} cannot exist together.",
                )
            return StorageState.COMPLETE_FINALIZE
        if has_previous_tmp:
            if has_previous:
                raise inconsistent_state(
                    root,
                    f"{STORAGE_DIR_PREVIOUS} and {STORAGE_TMP_PREVIOUS} cannot exist together.",
                )
            return StorageState.COMPLETE_UPGRADE if has_current else StorageState.RECOVER_UPGRADE
        # Only removed.tmp is left: a rollback, which needs exactly one of current and previous.
        if has_current == has_previous:
            raise inconsistent_state(
                root,
                f"one and only one directory {STORAGE_DIR_CURRENT} or {STORAGE_DIR_PREVIOUS} "
                f"must be present when {STORAGE_TMP_REMOVED} exists.",
            )
        return StorageState.COMPLETE_ROLLBACK if has_current else StorageState.RECOVER_ROLLBACK

    def has_some_data(self) -> bool:
        """True if formatting should ask first: the root exists and is not an empty directory."""
        if not self.root.exists():
            return False
        if not self.root.is_dir():
            return True
        # Our own lock (a format locks first, issue 33) is not data.
        own_lock = self.lock_file if self.is_locked else None
        return any(p != own_lock for p in self.root.iterdir())

    def clear_directory(self) -> None:
        """Delete ``current/`` and everything in it, then create it empty with ``dir_perm``."""
        current = self.current
        if current.exists() or current.is_symlink():
            try:
                if current.is_dir() and not current.is_symlink():
                    shutil.rmtree(current)
                else:
                    current.unlink()
            except OSError as e:
                raise IOException(f"Cannot remove current directory: {current}: {e}") from e
        try:
            current.mkdir(parents=True)
            # mkdir's mode is filtered by the umask; the configured permission is not.
            os.chmod(current, self.dir_perm)
        except OSError as e:
            raise IOException(f"Cannot create directory {current}: {e}") from e
        fsync_dir(self.root, fsync=self._fsync)

    def format(self, ns_info: StorageInfo) -> None:
        """Create the root if needed, empty ``current/`` and write ``VERSION`` for ``ns_info``.

        The lock is neither taken nor released here; callers that format a
        live directory unlock and re-analyze around this, as ``JNStorage`` does.
        """
        try:
            make_dirs_durable(self.root, fsync=self._fsync)
        except OSError as e:
            raise IOException(f"Cannot create directory {self.root}: {e}") from e
        self.clear_directory()
        self.write_properties(ns_info)

    # -- VERSION ----------------------------------------------------------

    def read_properties(self, *, previous: bool = False) -> dict[str, str]:
        """All entries of ``current/VERSION`` (``previous/VERSION`` with ``previous``;
        IOException if it cannot be read)."""
        path = self.previous_version_file if previous else self.version_file
        try:
            data = path.read_bytes()
        except OSError as e:
            raise IOException(f"Cannot read {path}: {e}") from e
        try:
            return load_properties(data)
        except IllegalArgumentException as e:
            raise inconsistent_state(self.root, f"file {path} is malformed: {e}") from e

    def write_properties(
        self, storage_info: StorageInfo, extra: Mapping[str, str] | None = None
    ) -> None:
        """Atomically (re)write ``current/VERSION`` for ``storage_info``.

        Writes namespaceID, clusterID, cTime, storageType and layoutVersion,
        plus blockpoolID for NameNode storage when ``storage_info`` is a
        :class:`NamespaceInfo`; ``extra`` entries are added last and win.
        """
        properties: dict[str, str] = {
            "namespaceID": str(storage_info.namespace_id),
            "clusterID": storage_info.cluster_id,
            "cTime": str(storage_info.ctime),
            "storageType": self.storage_type,
        }
        if self.storage_type == NODE_TYPE_NAME_NODE and isinstance(storage_info, NamespaceInfo):
            properties["blockpoolID"] = storage_info.block_pool_id
        properties["layoutVersion"] = str(storage_info.layout_version)
        if extra:
            properties.update({str(k): str(v) for k, v in extra.items()})
        text = store_properties(properties, timestamp=self._clock())
        atomic_replace(self.version_file, text.encode("ascii"), fsync=self._fsync)

    def read_storage_info(self, *, previous: bool = False) -> StorageInfo:
        """Parse and check ``current/VERSION`` (``previous/VERSION`` with ``previous``).

        Returns a :class:`NamespaceInfo` (with ``blockpoolID``) for NameNode
        storage, else a :class:`StorageInfo`. A missing key, a non-integer
        number or a ``storageType`` other than this directory's raises
        InconsistentFSStateException naming the file and the key. The layout
        version is not compared with ours: a JournalNode accepts any.
        """
        properties = self.read_properties(previous=previous)
        version_file = self.previous_version_file if previous else self.version_file
        layout_version = self._int_property(
            version_file, properties, "layoutVersion", _INT_MIN, _INT_MAX
        )
        namespace_id = self._int_property(
            version_file, properties, "namespaceID", _INT_MIN, _INT_MAX
        )
        ctime = self._int_property(version_file, properties, "cTime", _LONG_MIN, _LONG_MAX)
        cluster_id = self._property(version_file, properties, "clusterID")
        storage_type = self._property(version_file, properties, "storageType")
        if storage_type not in _NODE_TYPES:
            raise inconsistent_state(
                self.root, f"file {version_file} has an invalid storageType: {storage_type!r}."
            )
        if storage_type != self.storage_type:
            raise inconsistent_state(
                self.root,
                f"node type is incompatible with others: file {version_file} has "
                f"storageType={storage_type}, expected {self.storage_type}.",
            )
        if self.storage_type == NODE_TYPE_NAME_NODE:
            return NamespaceInfo(
                namespace_id,
                cluster_id,
                properties.get("blockpoolID", ""),
                ctime=ctime,
                layout_version=layout_version,
            )
        return StorageInfo(layout_version, namespace_id, cluster_id, ctime)

    def _property(self, version_file: Path, properties: Mapping[str, str], key: str) -> str:
        value = properties.get(key)
        if value is None:
            raise inconsistent_state(self.root, f"file {version_file} has {key} missing.")
        return value

    def _int_property(
        self, version_file: Path, properties: Mapping[str, str], key: str, low: int, high: int
    ) -> int:
        text = self._property(version_file, properties, key)
        if not _INT_TEXT.fullmatch(text) or not low <= int(text) <= high:
            raise inconsistent_state(
                self.root, f"file {version_file} has an invalid {key}: {text!r}."
            )
        return int(text)

    def __str__(self) -> str:
        return f"Storage Directory {self.root}"

    def __repr__(self) -> str:
        return f"StorageDirectory({str(self.root)!r}, {self.storage_type!r})"


def _read_holder(fd: int) -> str:
    """The ``<pid>@<host>`` written by the lock's holder, or "" if unreadable."""
    try:
        return os.pread(fd, 1024, 0).decode("utf-8", errors="replace").strip()
    except OSError:
        return ""
