"""NNStorage: the NameNode's local storage directories (Hadoop's NNStorage, HDFS-1073 §2).

Each directory of ``dfs.namenode.name.dir`` holds images, each local directory of
``dfs.namenode.edits.dir`` holds edit-log segments; a directory in both holds both::

    <dir>/in_use.lock
    <dir>/current/VERSION                      storageType=NAME_NODE, namespaceID, clusterID,
                                               cTime, blockpoolID, layoutVersion
    <dir>/current/seen_txid                    first txid of the newest segment started
    <dir>/current/fsimage_<19 digits>          a checkpoint holding every txid <= N
    <dir>/current/fsimage_<19 digits>.md5      "<md5 hex> *fsimage_N\\n"
    <dir>/current/fsimage.ckpt_<19 digits>     a checkpoint being written (start-up deletes it)
    <dir>/current/fsimage_rollback_<19 digits> the rolling upgrade's rollback image (+ .md5;
                                               NameNodeFile.IMAGE_ROLLBACK, docs/ha.md)
    <dir>/current/edits_<N>-<M>, edits_inprogress_<N>   segments (FileJournalManager)

The half-written checkpoint is named ``fsimage.ckpt_N`` as in Hadoop (NameNodeFile.IMAGE_NEW);
the HDFS-1073 paper calls it ``fsimage_ckpt_N``, and start-up removes that spelling too.

A directory may be given as a path or a ``file://`` URI; ``qjournal://`` URIs in the edits
keys are journals, not directories (:class:`NameNodeDirs` sorts them out).
"""

from __future__ import annotations

import enum
import logging
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import urlparse

from hadoop_qjm.common import nn_upgrade_util
from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.durable import FsyncFunction, PersistentLongFile, fsync_dir
from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException
from hadoop_qjm.common.storage import (
    NODE_TYPE_NAME_NODE,
    NamespaceInfo,
    StorageDirectory,
    StorageState,
    inconsistent_state,
)
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode import name_node_layout_version as layout

__all__ = [
    "NNStorage",
    "NNStorageDirectory",
    "NameNodeDirType",
    "NameNodeDirs",
    "FSImageFile",
    "image_file_name",
    "rollback_image_file_name",
    "ROLLBACK_IMAGE_REGEX",
    "checkpoint_file_name",
    "md5_file_for",
    "normalize_uri",
    "uri_path",
    "SEEN_TXID",
]

LOG = logging.getLogger(__name__)

SEEN_TXID = "seen_txid"
IMAGE_REGEX = re.compile(r"fsimage_(\d+)")
ROLLBACK_IMAGE_REGEX = re.compile(r"fsimage_rollback_(\d+)")
CHECKPOINT_REGEX = re.compile(r"fsimage(?:\.|_)ckpt_(\d+)")
MD5_SUFFIX = ".md5"
#: Permission of a name directory's ``current/`` (dfs.namenode.storage.dir.perm).
STORAGE_DIR_PERM = 0o700


def image_file_name(txid: int) -> str:
    return f"fsimage_{txid:019d}"


def rollback_image_file_name(txid: int) -> str:
    """NameNodeFile.IMAGE_ROLLBACK: the image a rolling upgrade can roll back to."""
    return f"fsimage_rollback_{txid:019d}"


def checkpoint_file_name(txid: int) -> str:
    """NameNodeFile.IMAGE_NEW: the image while it is being written."""
    return f"fsimage.ckpt_{txid:019d}"


def md5_file_for(path: Path) -> Path:
    return path.with_name(path.name + MD5_SUFFIX)


def normalize_uri(text: str) -> str:
    """``file:<absolute path>`` for a directory (path or file:// URI), else the URI itself."""
    text = text.strip()
    if text.lower().startswith("qjournal://"):  # a journal, checked by its own parser
        return text
    try:
        parsed = urlparse(text)
    except ValueError as e:  # e.g. "Invalid IPv6 URL": an unclosed '['
        raise IllegalArgumentException(f"Bad storage directory URI '{text}': {e}") from None
    if parsed.scheme in ("", "file"):
        path = parsed.path if parsed.scheme else text
        if not path:
            raise IllegalArgumentException(f"Empty storage directory in '{text}'")
        return "file:" + os.path.abspath(path)
    return text


def uri_path(uri: str) -> Path:
    return Path(uri[len("file:") :])


class NameNodeDirType(enum.Enum):
    IMAGE = "IMAGE"
    EDITS = "EDITS"
    IMAGE_AND_EDITS = "IMAGE_AND_EDITS"

    @property
    def has_images(self) -> bool:
        return self is not NameNodeDirType.EDITS

    @property
    def has_edits(self) -> bool:
        return self is not NameNodeDirType.IMAGE


@dataclass(frozen=True)
class NameNodeDirs:
    """The directories and journals configured for a NameNode (FSNamesystem.get*Dirs)."""

    image_uris: tuple[str, ...]
    #: Every edits location, shared ones first, duplicates removed.
    edits_uris: tuple[str, ...]
    shared_uris: frozenset[str]
    required_uris: frozenset[str]

    @classmethod
    def from_conf(cls, conf: Configuration) -> NameNodeDirs:
        image = _uris(conf.get_trimmed_strings(keys.DFS_NAMENODE_NAME_DIR_KEY))
        for uri in image:
            if not uri.startswith("file:"):
                raise IllegalArgumentException(
                    f"{keys.DFS_NAMENODE_NAME_DIR_KEY} must name local directories, not {uri}"
                )
        shared = _uris(conf.get_trimmed_strings(keys.DFS_NAMENODE_SHARED_EDITS_DIR_KEY))
        local = _uris(conf.get_trimmed_strings(keys.DFS_NAMENODE_EDITS_DIR_KEY))
        edits = list(shared)
        for uri in local:
            if uri in edits:
                LOG.warning(
                    "Edits URI %s listed multiple times in %s and %s. Ignoring duplicates.",
                    uri,
                    keys.DFS_NAMENODE_SHARED_EDITS_DIR_KEY,
                    keys.DFS_NAMENODE_EDITS_DIR_KEY,
                )
            else:
                edits.append(uri)
        required = set(_uris(conf.get_trimmed_strings(keys.DFS_NAMENODE_EDITS_DIR_REQUIRED_KEY)))
        for uri in required:
            if uri not in edits:
                raise IllegalArgumentException(
                    f"Required edits directory {uri} not found: "
                    f"{keys.DFS_NAMENODE_EDITS_DIR_KEY}={','.join(local)}"
                )
        if not image:
            raise IllegalArgumentException(f"{keys.DFS_NAMENODE_NAME_DIR_KEY} is empty")
        if not edits:
            raise IllegalArgumentException(f"{keys.DFS_NAMENODE_EDITS_DIR_KEY} is empty")
        return cls(tuple(image), tuple(edits), frozenset(shared), frozenset(required | set(shared)))

    @property
    def journal_uris(self) -> tuple[str, ...]:
        """The edits locations that are not local directories (qjournal://...)."""
        return tuple(uri for uri in self.edits_uris if not uri.startswith("file:"))


def _uris(values: Iterable[str]) -> list[str]:
    out: list[str] = []
    for value in values:
        uri = normalize_uri(value)
        if uri not in out:
            out.append(uri)
    return out


class NNStorageDirectory:
    """One local name directory and what it holds."""

    def __init__(
        self, root: Path, dir_type: NameNodeDirType, shared: bool = False, *, fsync=os.fsync
    ) -> None:
        self.sd = StorageDirectory(root, NODE_TYPE_NAME_NODE, STORAGE_DIR_PERM, fsync=fsync)
        self.dir_type = dir_type
        self.shared = shared

    @property
    def root(self) -> Path:
        return self.sd.root

    @property
    def current(self) -> Path:
        return self.sd.current

    @property
    def seen_txid_file(self) -> Path:
        return self.sd.current / SEEN_TXID

    def __repr__(self) -> str:
        return f"NNStorageDirectory({str(self.root)!r}, {self.dir_type.value})"


@dataclass(frozen=True)
class FSImageFile:
    """An ``fsimage_N`` found in a directory."""

    sd: NNStorageDirectory
    txid: int
    path: Path


class NNStorage:
    """The NameNode's local directories, their VERSION, seen_txid and images."""

    def __init__(self, dirs: list[NNStorageDirectory], *, fsync: FsyncFunction = os.fsync) -> None:
        self.dirs = list(dirs)
        self.removed: list[NNStorageDirectory] = []
        self.ns_info: NamespaceInfo | None = None
        #: The layout this software writes (-67; -68 with dfs.namenode.testing.future-layout).
        self.software_layout_version = CURRENT_LAYOUT_VERSION
        self._fsync = fsync

    @property
    def fsync(self) -> FsyncFunction:
        """The fsync of every file this storage writes (a test's may crash)."""
        return self._fsync

    @classmethod
    def from_conf(
        cls,
        conf: Configuration,
        dirs: NameNodeDirs | None = None,
        *,
        fsync: FsyncFunction = os.fsync,
    ) -> NNStorage:
        dirs = dirs or NameNodeDirs.from_conf(conf)
        edits_local = [uri for uri in dirs.edits_uris if uri.startswith("file:")]
        storage_dirs: list[NNStorageDirectory] = []
        for uri in dirs.image_uris:
            kind = NameNodeDirType.IMAGE_AND_EDITS if uri in edits_local else NameNodeDirType.IMAGE
            storage_dirs.append(NNStorageDirectory(uri_path(uri), kind, fsync=fsync))
        for uri in edits_local:
            if uri not in dirs.image_uris:
                storage_dirs.append(
                    NNStorageDirectory(
                        uri_path(uri), NameNodeDirType.EDITS, uri in dirs.shared_uris, fsync=fsync
                    )
                )
        storage = cls(storage_dirs, fsync=fsync)
        storage.software_layout_version = layout.software_layout_version(conf)
        return storage

    # ---- which directories -----------------------------------------------------------------------
    def image_dirs(self) -> list[NNStorageDirectory]:
        return [d for d in self.dirs if d.dir_type.has_images]

    def edits_dirs(self) -> list[NNStorageDirectory]:
        return [d for d in self.dirs if d.dir_type.has_edits]

    def get_storage_directory(self, path: str | os.PathLike[str]) -> NNStorageDirectory | None:
        wanted = os.path.abspath(path)
        for d in self.dirs:
            if os.path.abspath(d.root) == wanted:
                return d
        return None

    def report_error(self, sd: NNStorageDirectory, error: BaseException) -> None:
        """Stop using ``sd`` after an I/O error (NNStorage.reportErrorsOnDirectory)."""
        LOG.error("Error reported on storage directory %s: %s", sd.root, error)
        if sd in self.dirs:
            self.dirs.remove(sd)
            self.removed.append(sd)
        try:
            sd.sd.unlock()
        except OSError as e:
            LOG.warning("Unable to unlock bad storage directory %s: %s", sd.root, e)

    # ---- locks and state -------------------------------------------------------------------------
    def lock_existing_dirs(self) -> None:
        """Lock every directory that exists (IOException naming the first one another
        process holds, e.g. the running NameNode); before a format asks anything."""
        for d in self.dirs:
            if d.root.is_dir() and not d.sd.is_locked:
                d.sd.lock()

    def has_some_data(self) -> list[str]:
        """The directories formatting would destroy something in."""
        return [str(d.root) for d in self.dirs if d.sd.has_some_data()]

    def format(self, ns_info: NamespaceInfo) -> None:
        """Empty every directory's ``current/``; write VERSION and seen_txid 0 (NNStorage.format)."""
        self.ns_info = ns_info
        for d in self.dirs:
            d.sd.analyze_storage(startup_option_format=True)  # creates the root, locks it
            self._format_dir(d, ns_info)

    def _format_dir(self, d: NNStorageDirectory, ns_info: NamespaceInfo) -> None:
        d.sd.format(ns_info)
        PersistentLongFile.write_file(d.seen_txid_file, 0, fsync=self._fsync)
        LOG.info("Storage directory %s has been successfully formatted.", d.root)

    def recover_storage_dirs(
        self, *, upgrading: bool = False, rolling_upgrade_started: bool = False
    ) -> NamespaceInfo:
        """Lock and check every directory at start-up; returns their common NamespaceInfo.

        A missing directory is an error (FSImage.recoverStorageDirs); a transition a crash
        interrupted (upgrade, rollback, finalize, checkpoint) is completed or undone first;
        unformatted ones are formatted with the namespace of the others; directories that
        disagree on the namespace are an InconsistentFSStateException. A directory of a
        layout newer than the software's is refused, one of an older layout unless
        ``upgrading`` (``namenode -upgrade``, refused where previous/ exists) or
        ``rolling_upgrade_started`` (``-rollingUpgrade started``, down to the minimum
        compatible layout: ``name_node_layout_version.check_rolling_upgrade_layout``).
        """
        formatted: list[tuple[NNStorageDirectory, NamespaceInfo]] = []
        unformatted: list[NNStorageDirectory] = []
        layout_version = self.software_layout_version
        try:
            for d in self.dirs:
                state = d.sd.analyze_storage()
                if state is StorageState.NON_EXISTENT:
                    raise inconsistent_state(
                        d.root, "storage directory does not exist or is not accessible."
                    )
                if state not in (StorageState.NOT_FORMATTED, StorageState.NORMAL):
                    nn_upgrade_util.do_recover(d.sd, state, fsync=self._fsync)
                    state = d.sd.analyze_storage()
                if upgrading:
                    layout.check_no_previous(d.sd)
                if state is StorageState.NOT_FORMATTED:
                    LOG.warning("Storage directory %s is not formatted.", d.root)
                    unformatted.append(d)
                else:
                    info = d.sd.read_storage_info()
                    layout.check_layout_version(d.root, info.layout_version, layout_version)
                    formatted.append((d, info))  # type: ignore[arg-type]
            if not formatted:
                raise IOException("NameNode is not formatted.")
            # A crash amid a finalize's VERSION writes leaves some directories at the older
            # layout: take that one, so the replayed FINALIZE rewrites every VERSION.
            reference_dir, ns_info = max(formatted, key=lambda f: f[1].layout_version)
            if not upgrading:
                layout.check_rolling_upgrade_layout(
                    ns_info.layout_version, layout_version, rolling_upgrade_started
                )
            for d, info in formatted:
                for what, mine, theirs in (
                    ("namespaceID", info.namespace_id, ns_info.namespace_id),
                    ("clusterID", info.cluster_id, ns_info.cluster_id),
                    ("blockpoolID", info.block_pool_id, ns_info.block_pool_id),
                ):
                    if mine != theirs:
                        raise inconsistent_state(
                            d.root,
                            f"{what} {mine} does not match {theirs} in {reference_dir.root}.",
                        )
            for d in unformatted:
                LOG.info("Formatting the new storage directory %s", d.root)
                self._format_dir(d, ns_info)
        except BaseException:
            self.close()
            raise
        self.ns_info = ns_info
        return ns_info

    def update_storage_version(self) -> bool:
        """Write the software's layout into every directory's VERSION (FSImage.
        updateStorageVersion, at the finalize of a rolling upgrade that kept the older one);
        False, nothing written, when VERSION has it already."""
        ns_info = self.ns_info
        if ns_info is None or ns_info.layout_version == self.software_layout_version:
            return False
        LOG.info(
            "Updating the layout version of the storage directories from %d to %d",
            ns_info.layout_version,
            self.software_layout_version,
        )
        self.ns_info = replace(ns_info, layout_version=self.software_layout_version)
        for d in list(self.dirs):
            try:
                d.sd.write_properties(self.ns_info)
            except OSError as e:
                self.report_error(d, e)
        if not self.dirs:
            raise IOException("Unable to write VERSION to any storage directory")
        return True

    def close(self) -> None:
        """Release every directory's lock."""
        for d in self.dirs + self.removed:
            try:
                d.sd.unlock()
            except OSError as e:
                LOG.warning("Unable to unlock %s: %s", d.root, e)

    # ---- seen_txid -------------------------------------------------------------------------------
    def write_transaction_id_file(self, txid: int) -> None:
        """Record ``txid`` (a segment's first txid) as seen, in every directory."""
        for d in list(self.dirs):
            try:
                PersistentLongFile.write_file(d.seen_txid_file, txid, fsync=self._fsync)
            except OSError as e:
                self.report_error(d, e)
        if not self.dirs:
            raise IOException(f"Unable to write seen_txid {txid} to any storage directory")

    def read_max_seen_txid(self) -> int:
        """The largest seen_txid of any directory: loading must reach at least it."""
        return max(
            (PersistentLongFile.read_file(d.seen_txid_file, 0) for d in self.dirs), default=0
        )

    # ---- images ----------------------------------------------------------------------------------
    def inspect_images(self, *, regular: bool = True, rollback: bool = False) -> list[FSImageFile]:
        """Every ``fsimage_N`` (``regular``) and ``fsimage_rollback_N`` (``rollback``) of the
        image directories, newest first."""
        regexes = [r for r, on in ((IMAGE_REGEX, regular), (ROLLBACK_IMAGE_REGEX, rollback)) if on]
        found: list[FSImageFile] = []
        for d in self.image_dirs():
            try:
                names = os.listdir(d.current)
            except OSError as e:
                LOG.warning("Unable to list %s: %s", d.current, e)
                continue
            for name in names:
                for regex in regexes:
                    m = regex.fullmatch(name)
                    if m is not None:
                        found.append(FSImageFile(d, int(m.group(1)), d.current / name))
        found.sort(key=lambda image: -image.txid)
        return found

    def purge_image(self, image: FSImageFile) -> None:
        """Delete an image and its .md5 (NNStorageRetentionManager.DeletionStoragePurger)."""
        LOG.info("Purging old image %s", image.path)
        for path in (image.path, md5_file_for(image.path)):
            try:
                path.unlink()
            except FileNotFoundError:
                pass
            except OSError as e:
                LOG.warning("Could not delete %s: %s", path, e)

    def delete_checkpoint_leftovers(self) -> list[Path]:
        """Remove half-written checkpoints, and .md5 files whose image never appeared
        (HDFS-1073 §4.3: a crash while saving). Returns what was removed."""
        removed: list[Path] = []
        for d in self.image_dirs():
            try:
                names = set(os.listdir(d.current))
            except OSError:
                continue
            removed_here = False
            for name in sorted(names):
                doomed = CHECKPOINT_REGEX.match(name) is not None
                image = name[: -len(MD5_SUFFIX)]
                if name.endswith(MD5_SUFFIX) and (
                    IMAGE_REGEX.fullmatch(image) or ROLLBACK_IMAGE_REGEX.fullmatch(image)
                ):
                    doomed = image not in names
                if doomed:
                    path = d.current / name
                    LOG.warning("Deleting leftover of an unfinished checkpoint: %s", path)
                    try:
                        path.unlink()
                        removed.append(path)
                        removed_here = True
                    except OSError as e:
                        raise IOException(f"Unable to delete {path}: {e}") from e
            if removed_here:
                fsync_dir(d.current, fsync=self._fsync)
        return removed
