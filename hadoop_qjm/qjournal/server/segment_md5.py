"""The ``.md5`` kept beside a finalized segment (issue 39 item 3).

``current/edits_<S>-<E>.md5`` holds one line in Hadoop's MD5FileUtils format,
``"<32 lowercase hex> *edits_<S>-<E>\\n"``: the md5 of the segment's bytes as they were
when every op of them had been checked (header, each op's frame and CRC32, txids S … E
one by one). It is written only from bytes that verified:

* by finalizeLogSegment, from the kept state of the open segment
  (:mod:`.kept_segment_state`) when every batch of it was checked as it was appended;
* by the JournalNodeSyncer, when it installs a copy whose md5 matched the one its peer
  sent (the copy is then those verified bytes);
* by the scrubber, when a pass verifies a segment whose ``.md5`` is missing or differs
  (the ``.md5`` itself rotted), and for the confirmed copy of a repair.

``/getJournal`` sends it as ``X-MD5-Digest`` — Hadoop's GetJournalEditServlet does the
same (``ImageServlet.setVerificationHeadersForGet`` reads ``<file>.md5`` when there is
one; Hadoop's JournalNode never writes one, so its answers carry none). A receiver that
gets the header hashes the bytes as they arrive and installs the copy only if the md5
matches; without it, it checks every op as before. The file is a hint that is checked
on every use: a missing or malformed one (a crash mid-write) only means no header; a stale
one makes receivers refuse this node's copy (until the scrubber rewrites it), never
install a damaged one.
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Iterable
from pathlib import Path

from hadoop_qjm.common.durable import FsyncFunction, atomic_replace, unlink_durable
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.http_transfer import MD5_HEADER

__all__ = [
    "MD5_HEADER",
    "MD5_SUFFIX",
    "md5_file_for",
    "read_stored_md5",
    "remove_stored_md5",
    "save_md5",
    "write_md5_before_rename",
]

LOG = logging.getLogger(__name__)

#: Hadoop's MD5FileUtils.MD5_SUFFIX.
MD5_SUFFIX = ".md5"
_MD5_LINE = re.compile(r"([0-9a-f]{32}) [ *](.+)\n?", re.ASCII)
_MD5_HEX = re.compile(r"[0-9a-f]{32}", re.ASCII)


def md5_file_for(segment: Path) -> Path:
    return segment.with_name(segment.name + MD5_SUFFIX)


def _line(segment: Path, md5_hex: str) -> bytes:
    if not _MD5_HEX.fullmatch(md5_hex):
        raise ValueError(f"not an md5: {md5_hex!r}")
    return f"{md5_hex} *{segment.name}\n".encode("ascii")


def read_stored_md5(segment: Path) -> str | None:
    """The md5 kept for ``segment``; None when there is none, or it is unreadable or
    malformed, or names another file (logged: the scrubber rewrites it)."""
    path = md5_file_for(segment)
    try:
        text = path.read_bytes().decode("ascii")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        LOG.warning("Ignoring %s: %s", path, e)
        return None
    m = _MD5_LINE.fullmatch(text)
    if m is None or m.group(2) != segment.name:
        LOG.warning("Ignoring %s: not an MD5 line naming %s", path, segment.name)
        return None
    return m.group(1)


def save_md5(segment: Path, md5_hex: str, *, fsync: FsyncFunction = os.fsync) -> None:
    """Durably (re)write ``segment``'s ``.md5`` (temp file, fsync, rename, fsync dir)."""
    atomic_replace(md5_file_for(segment), _line(segment, md5_hex), fsync=fsync)


def write_md5_before_rename(segment: Path, md5_hex: str | None) -> None:
    """The ``.md5`` of a segment about to be renamed to ``segment``: written (temp file,
    rename), or any stale one removed when ``md5_hex`` is None; the caller's rename of the
    segment and the directory fsync after it follow.

    Its data is not fsynced (an fsync more per installed segment, the one place this
    module would pay for durability): it acknowledges nothing and is checked on every
    use, so what a power cut can leave — an empty or cut file (no md5: every op is
    checked), the previous content, a ``.md5`` naming a segment not renamed yet (ignored,
    replaced when it is installed) — costs a slower download, never a wrong install."""
    target = md5_file_for(segment)
    if md5_hex is None:
        try:
            target.unlink()
        except FileNotFoundError:
            pass
        return
    tmp = target.with_name(target.name + ".tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
        try:
            os.write(fd, _line(segment, md5_hex))
        finally:
            os.close(fd)
        os.replace(tmp, target)
    except OSError as e:
        try:
            tmp.unlink()
        except OSError:
            pass
        raise IOException(f"Failed to write {target}: {e}") from e


def remove_stored_md5(segments: Iterable[Path], *, fsync: FsyncFunction = os.fsync) -> None:
    """Delete the ``.md5`` of each of ``segments`` that has one (fsyncing the directory)."""
    paths = [p for p in map(md5_file_for, segments) if p.exists()]
    for path, e in unlink_durable(paths, fsync=fsync):
        LOG.warning("Unable to delete %s: %s", path, e)
