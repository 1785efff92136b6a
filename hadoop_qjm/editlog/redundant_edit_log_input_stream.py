"""Reading one segment from whichever replica works (HADOOP-QJM-DIGEST.md §9; design paper §3).

* :class:`EditLogHttpInputStream` — a segment on a JournalNode, fetched from its
  ``/getJournal`` URL the first time an op is read (Hadoop's
  ``EditLogFileInputStream.fromUrl`` / ``URLLog``). The response must be 200
  with a ``Content-Length``; the body is then read as an in-memory segment.
* :class:`RedundantEditLogInputStream` — several copies of one segment (same
  first txid, known last txids), read from the longest; on an error it fails
  over to the next copy and skips to where it was. It refuses to fail over to
  a copy that ends earlier than the one that failed ("metadata will be lost
  forever!").
* :func:`chain_and_make_redundant_streams` — JournalSet's grouping of streams
  by first txid into redundant streams, a finalized copy discarding the
  in-progress copies of the same segment.

Every stream here has ``first_txid``, ``last_txid``, ``is_in_progress``,
``is_local_log``, ``name``, ``read_op()`` (an FSEditLogOp, or None at the
end), ``skip_until(txid)`` and ``close()`` — as EditLogFileInputStream has.
"""

from __future__ import annotations

import enum
import http.client
import logging
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import (
    EditLogCorruptionError,
    IllegalArgumentException,
    IOException,
    always_assert,
    one_line_message,
)
from hadoop_qjm.common.http_transfer import CHUNK_SIZE, open_url
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.editlog.fs_edit_log_op import DEFAULT_MAX_OP_SIZE, FSEditLogOp

__all__ = [
    "AllCopiesFailedException",
    "CopyFailure",
    "EditLogInputStreamLike",
    "MoreCopies",
    "EditLogHttpInputStream",
    "RedundantEditLogInputStream",
    "PrematureEOFException",
    "chain_and_make_redundant_streams",
]

LOG = logging.getLogger(__name__)


class EditLogInputStreamLike(Protocol):
    """What a redundant stream needs of each copy (EditLogFileInputStream has it all)."""

    first_txid: int
    last_txid: int
    is_in_progress: bool
    name: str

    @property
    def is_local_log(self) -> bool: ...

    def read_op(self) -> FSEditLogOp | None: ...

    def skip_until(self, txid: int) -> bool: ...

    def close(self) -> None: ...


class PrematureEOFException(IOException):
    """A copy ended before the last txid it was expected to hold."""


class EditLogHttpInputStream:
    """A remote segment, downloaded from ``url`` on first read (Hadoop's URLLog).

    ``opener(url, timeout_s)`` returns an HTTP response (default:
    :func:`~hadoop_qjm.common.http_transfer.open_url`); tests pass a fake.
    """

    def __init__(
        self,
        url: str,
        first_txid: int,
        last_txid: int,
        is_in_progress: bool,
        *,
        timeout_s: float = 60.0,
        max_op_size: int = DEFAULT_MAX_OP_SIZE,
        opener: Callable[[str, float], Any] = open_url,
    ) -> None:
        self.url = url
        self.name = url
        self.first_txid = first_txid
        self.last_txid = last_txid
        self.is_in_progress = is_in_progress
        self.timeout_s = timeout_s
        self.max_op_size = max_op_size
        self._opener = opener
        self._stream: EditLogFileInputStream | None = None
        self._closed = False

    @property
    def is_local_log(self) -> bool:
        return False

    def _fetch(self) -> bytes:
        with self._opener(self.url, self.timeout_s) as response:
            status = getattr(response, "status", 200)
            if status != 200:
                raise IOException(f"Fetch of {self.url} failed with status code {status}")
            length_header = response.headers.get("Content-Length")
            if length_header is None:
                raise IOException(
                    "Content-Length header is not provided by the server when trying to fetch "
                    f"{self.url}"
                )
            try:
                advertised = int(length_header)
            except ValueError:
                advertised = -1
            if advertised <= 0:
                raise IOException(f"Invalid Content-Length header: {length_header}")
            chunks: list[bytes] = []
            received = 0
            while received < advertised:
                chunk = response.read(min(CHUNK_SIZE * 16, advertised - received))
                if not chunk:
                    break
                chunks.append(chunk)
                received += len(chunk)
        if received != advertised:
            raise IOException(
                f"Got {received} bytes of {self.url} but the server advertised {advertised}"
            )
        return b"".join(chunks)

    def _open(self) -> EditLogFileInputStream:
        if self._stream is None:
            if self._closed:
                raise IOException(f"{self.url} is closed")
            try:
                data = self._fetch()
            except IOException:
                raise
            except (OSError, http.client.HTTPException) as e:  # the body broke off
                raise IOException(f"Unable to fetch {self.url}: {e!r}") from e
            self._stream = EditLogFileInputStream.from_bytes(
                data,
                self.first_txid,
                self.last_txid,
                self.is_in_progress,
                self.max_op_size,
                name=self.url,
            )
        return self._stream

    @property
    def layout_version(self) -> int:
        return self._open().layout_version

    def read_op(self) -> FSEditLogOp | None:
        return self._open().read_op()

    @property
    def position(self) -> int:
        """Offset of the next op in the segment (0 before the download)."""
        return self._stream.position if self._stream is not None else 0

    def seek(self, offset: int) -> None:
        """Read on from byte ``offset`` (the start of an op), downloading first if needed."""
        self._open().seek(offset)

    def resync(self) -> None:
        """After a damaged op, move to the next op that decodes."""
        self._open().resync()

    def skip_until(self, txid: int) -> bool:
        return self._open().skip_until(txid)

    def close(self) -> None:
        self._closed = True
        if self._stream is not None:
            self._stream.close()

    def __iter__(self) -> Iterator[FSEditLogOp]:
        while (op := self.read_op()) is not None:
            yield op

    def __repr__(self) -> str:
        return f"EditLogHttpInputStream({self.url}, [{self.first_txid}, {self.last_txid}])"


class _State(enum.Enum):
    SKIP_UNTIL = "position the current copy at the next expected txid"
    OK = "reading"
    EOF = "end of the segment"


@dataclass(frozen=True)
class CopyFailure:
    """One copy's failure: the txid it could not deliver and why."""

    name: str
    txid: int
    error: str

    def __str__(self) -> str:
        return f"{self.name} failed at txid {self.txid}: {self.error}"


class AllCopiesFailedException(IOException):
    """Every copy of a segment, including any found late, failed at ``txid``.

    ``failures`` holds the last failure of each copy tried (its name, the txid and the
    error, whose message says at which byte position); nothing past ``txid - 1`` was read.
    """

    def __init__(self, txid: int, failures: Sequence[CopyFailure]) -> None:
        self.txid = txid
        self.failures = tuple(failures)
        super().__init__(
            f"Unable to read transaction {txid}: every copy of the segment failed "
            f"({len(self.failures)} tried): " + "; ".join(str(f) for f in self.failures)
        )


class _PositioningError(OSError):
    """A copy failed while being fast-forwarded, at ``txid`` (below the txid wanted)."""

    def __init__(self, txid: int, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.txid = txid
        self.cause = cause


#: ``more_copies(segment_first_txid, txid)``: copies of the segment not yet held (the
#: QJM asks the JournalNodes it has not heard from), or an empty list.
MoreCopies = Callable[[int, int], "list[EditLogInputStreamLike]"]


class RedundantEditLogInputStream:
    """Copies of one segment, read from the longest with failover (digest §9).

    All copies must share a first txid and have a known last txid. Reading
    starts at ``start_txid`` (INVALID_TXID: at the first op).

    Beyond Hadoop (which gives up once it has tried each copy once), a reader never
    gives up while a good copy may exist (issue 27):

    * a copy that failed at an earlier txid is tried again for a later one: finalized
      copies of a segment are byte-identical, so it is positioned at the byte offset where
      the next op starts in the copy that delivered the previous one (``seek``), past its
      own damage; the op read there must carry the expected txid and a good checksum;
    * when every copy held has failed at the txid wanted, ``more_copies`` is asked for
      copies not yet held before giving up;
    * the final error (:class:`AllCopiesFailedException`) names every copy tried and why
      each failed. With a single copy its own error is raised, as before.
    """

    def __init__(
        self,
        streams: Iterable[EditLogInputStreamLike],
        start_txid: int,
        *,
        more_copies: MoreCopies | None = None,
    ) -> None:
        copies = list(streams)
        first: EditLogInputStreamLike | None = None
        for s in copies:
            self._check_copy(s, first)
            if first is None:
                first = s
        # Longest first; the sort is stable, so a preferred (local) copy stays ahead of an
        # equally long remote one.
        self._streams = sorted(copies, key=lambda s: -s.last_txid)
        self._cur = 0
        self._prev_txid = INVALID_TXID if start_txid == INVALID_TXID else start_txid - 1
        self._state = _State.EOF if not copies else _State.SKIP_UNTIL
        self._cached_op: FSEditLogOp | None = None
        self._more_copies = more_copies
        #: The latest failure of each copy, by index in ``_streams``.
        self._failures: dict[int, CopyFailure] = {}
        self._errors: dict[int, BaseException] = {}
        #: (last txid, byte offset) where the next op starts in the finalized copy that
        #: delivered the previous one; None when that copy was in progress or unseekable.
        self._resume: tuple[int, int] | None = None

    @staticmethod
    def _check_copy(s: EditLogInputStreamLike, first: EditLogInputStreamLike | None) -> None:
        if s.first_txid == INVALID_TXID:
            raise IllegalArgumentException(f"invalid first txid in stream: {s}")
        if s.last_txid == INVALID_TXID:
            raise IllegalArgumentException(f"invalid last txid in stream: {s}")
        if first is not None and s.first_txid != first.first_txid:
            raise IllegalArgumentException(
                "All streams in the RedundantEditLogInputStream must have the same start "
                f"transaction ID!  {first.name} had start txId {first.first_txid}, but "
                f"{s.name} had start txId {s.first_txid}"
            )

    # ---- description ---------------------------------------------------------------------------
    @property
    def streams(self) -> tuple[EditLogInputStreamLike, ...]:
        return tuple(self._streams)

    @property
    def first_txid(self) -> int:
        return self._streams[self._cur].first_txid

    @property
    def last_txid(self) -> int:
        return self._streams[self._cur].last_txid

    @property
    def is_in_progress(self) -> bool:
        return self._streams[self._cur].is_in_progress

    @property
    def is_local_log(self) -> bool:
        return self._streams[self._cur].is_local_log

    @property
    def name(self) -> str:
        return ", ".join(s.name for s in self._streams)

    @property
    def failures(self) -> tuple[CopyFailure, ...]:
        """The latest failure of each copy that has failed so far."""
        return tuple(self._failures[i] for i in sorted(self._failures))

    def __repr__(self) -> str:
        return f"RedundantEditLogInputStream([{self.name}], [{self.first_txid}, {self.last_txid}])"

    # ---- reading -------------------------------------------------------------------------------
    def read_op(self) -> FSEditLogOp | None:
        """The next op, or None when the segment is read to its last txid."""
        if self._cached_op is not None:
            op, self._cached_op = self._cached_op, None
            return op
        return self._next_op()

    def skip_until(self, txid: int) -> bool:
        """Read past ops below ``txid``; False if the segment ended first."""
        while True:
            op = self.read_op()
            if op is None:
                return False
            if op.txid >= txid:
                self._cached_op = op
                return True

    def __iter__(self) -> Iterator[FSEditLogOp]:
        while (op := self.read_op()) is not None:
            yield op

    def _next_op(self) -> FSEditLogOp | None:
        while self._state is not _State.EOF:
            stream = self._streams[self._cur]
            # The txid a failure is charged to: while positioning, the op after the last
            # one this copy delivered (which may be below the txid wanted).
            at = self._prev_txid + 1 if self._prev_txid != INVALID_TXID else stream.first_txid
            try:
                if self._state is _State.SKIP_UNTIL:
                    op, at = self._position(stream)
                    self._state = _State.OK
                else:
                    op = stream.read_op()
            except OSError as e:
                self._fail_over(at, e)
                continue
            if op is None:
                if stream.last_txid == self._prev_txid:
                    self._state = _State.EOF
                    return None
                self._fail_over(
                    self._prev_txid + 1,
                    PrematureEOFException(
                        f"got premature end-of-file at txid {self._prev_txid}; expected file "
                        f"to go up to {stream.last_txid}"
                    ),
                )
                continue
            self._prev_txid = op.txid
            position = getattr(stream, "position", None)
            self._resume = (
                (stream.last_txid, position)
                if not stream.is_in_progress and isinstance(position, int) and position > 0
                else None
            )
            return op
        return None

    def _position(self, stream: EditLogInputStreamLike) -> tuple[FSEditLogOp | None, int]:
        """The first op of ``stream`` at or after the txid wanted (None at its end), and
        the txid a failure would be charged to."""
        if self._prev_txid == INVALID_TXID:
            return stream.read_op(), stream.first_txid
        want = self._prev_txid + 1
        failure = self._failures.get(self._cur)
        if failure is not None and failure.txid < want:
            # Damaged behind us: jump over the damage (see the class doc).
            always_assert(self._resume is not None, "seeking without a known offset")
            _, offset = self._resume  # type: ignore[misc]
            LOG.info(
                "Seeking stream '%s' to transaction ID %d at offset %d", stream.name, want, offset
            )
            stream.seek(offset)  # type: ignore[attr-defined]
            op = stream.read_op()
            if op is not None and op.txid != want:
                raise IOException(
                    f"{stream.name} holds txid {op.txid} at offset {offset}, where another "
                    f"copy holds txid {want}: the copies are not identical"
                )
            return op, want
        LOG.info("Fast-forwarding stream '%s' to transaction ID %d", stream.name, want)
        seen = stream.first_txid - 1
        resynced = False
        while True:
            try:
                op = stream.read_op()
            except EditLogCorruptionError as e:
                resync = getattr(stream, "resync", None)
                if resync is None or seen + 1 >= want:
                    raise _PositioningError(seen + 1, e) from e
                # An op below the one wanted is never applied: step over its damage to
                # the next op that decodes (Hadoop's resync) and check the txids from there.
                LOG.warning("Skipping a damaged op of '%s' below txid %d: %s", stream.name, want, e)
                resync()
                resynced = True
                continue
            except OSError as e:
                raise _PositioningError(seen + 1, e) from e
            if op is None or op.txid >= want:
                if resynced and op is not None and op.txid != want:
                    raise _PositioningError(
                        seen + 1, IOException(f"{stream.name} has no txid {want} after a resync")
                    )
                return op, want
            seen = op.txid

    def _eligible(self, i: int, want: int, min_last_txid: int) -> bool:
        s = self._streams[i]
        if s.last_txid < min_last_txid:
            return False
        failure = self._failures.get(i)
        if failure is None:
            return True
        if failure.txid >= want:
            return False
        # Damaged at an earlier txid: usable past its damage only by offset, which is
        # known only between finalized copies of the same length.
        return (
            not s.is_in_progress
            and hasattr(s, "seek")
            and self._resume is not None
            and self._resume[0] == s.last_txid
        )

    def _choose(self, want: int, min_last_txid: int) -> int | None:
        order = sorted(range(len(self._streams)), key=lambda i: i in self._failures)
        return next((i for i in order if self._eligible(i, want, min_last_txid)), None)

    def _fail_over(self, at: int, error: BaseException) -> None:
        if isinstance(error, _PositioningError):
            at, error = error.txid, error.cause
        failed = self._streams[self._cur]
        self._failures[self._cur] = CopyFailure(failed.name, at, one_line_message(error))
        self._errors[self._cur] = error
        want = self._prev_txid + 1 if self._prev_txid != INVALID_TXID else failed.first_txid
        chosen = self._choose(want, failed.last_txid)
        if chosen is None and self._more_copies is not None:
            chosen = self._add_more_copies(want, failed.last_txid)
        if chosen is None:
            self._state = _State.EOF
            self._give_up(want, failed, error)
        following = self._streams[chosen]  # type: ignore[index]
        LOG.error(
            "Got error reading edit log input stream %s; failing over to edit log %s",
            failed.name,
            following.name,
            exc_info=error,
        )
        self._cur = chosen  # type: ignore[assignment]
        self._state = _State.SKIP_UNTIL

    def _add_more_copies(self, want: int, min_last_txid: int) -> int | None:
        held = {s.name for s in self._streams}
        try:
            found = self._more_copies(self._streams[0].first_txid, want)  # type: ignore[misc]
        except Exception as e:  # noqa: BLE001 - a failed search leaves the copies held
            LOG.warning("Unable to find more copies of %s: %s", self.name, e)
            return None
        added = 0
        for s in found:
            if s.name in held:
                s.close()
                continue
            try:
                self._check_copy(s, self._streams[0])
            except IllegalArgumentException as e:
                LOG.warning("Ignoring a late copy: %s", e)
                s.close()
                continue
            LOG.info("Found a late copy of the segment: %s", s.name)
            self._streams.append(s)
            held.add(s.name)
            added += 1
        return self._choose(want, min_last_txid) if added else None

    def _give_up(self, want: int, failed: EditLogInputStreamLike, error: BaseException) -> None:
        shorter = [
            s
            for i, s in enumerate(self._streams)
            if i not in self._failures and s.last_txid < failed.last_txid
        ]
        if shorter:
            best = max(shorter, key=lambda s: s.last_txid)
            raise IOException(
                f"We encountered an error reading {failed.name}.  During automatic edit log "
                "failover, we noticed that all of the remaining edit log streams are shorter "
                "than the current one!  The best remaining edit log ends at transaction "
                f"{best.last_txid}, but we thought we could read up to transaction "
                f"{failed.last_txid}.  If you continue, metadata will be lost forever!"
            ) from error
        if len(self._failures) == 1:
            raise error
        raise AllCopiesFailedException(want, self.failures) from error

    def close(self) -> None:
        for s in self._streams:
            try:
                s.close()
            except Exception:  # noqa: BLE001 - close the others
                LOG.exception("Error closing %s", s.name)

    def __enter__(self) -> RedundantEditLogInputStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def chain_and_make_redundant_streams(
    streams: Iterable[EditLogInputStreamLike],
    from_txid: int,
    more_copies: MoreCopies | None = None,
) -> list[RedundantEditLogInputStream]:
    """Group ``streams`` by first txid into RedundantEditLogInputStreams, in txid order.

    Within a group a finalized copy discards the in-progress ones (it is the
    decided content); local copies are preferred over remote ones of equal
    length. Each group reads from ``from_txid`` (JournalSet.chainAndMakeRedundantStreams)
    and, once all its copies fail, asks ``more_copies`` for others.
    """
    ordered = sorted(streams, key=lambda s: (s.first_txid, -s.last_txid))
    result: list[RedundantEditLogInputStream] = []
    group: list[EditLogInputStreamLike] = []

    def emit() -> None:
        group.sort(key=lambda s: not s.is_local_log)
        result.append(RedundantEditLogInputStream(group, from_txid, more_copies=more_copies))

    for s in ordered:
        if not group:
            group.append(s)
        elif s.first_txid == group[0].first_txid:
            if s.is_in_progress:
                if group[0].is_in_progress:
                    group.append(s)
            else:
                if group[0].is_in_progress:
                    group.clear()
                group.append(s)
        else:
            emit()
            group = [s]
    if group:
        emit()
    return result
