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
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException, always_assert
from hadoop_qjm.common.http_transfer import CHUNK_SIZE, open_url
from hadoop_qjm.namenode.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.namenode.fs_edit_log_op import DEFAULT_MAX_OP_SIZE, FSEditLogOp

__all__ = [
    "EditLogInputStreamLike",
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
    SKIP_UNTIL = "skip until the next expected txid"
    OK = "reading"
    STREAM_FAILED = "the current copy failed"
    EOF = "end of the segment"


class RedundantEditLogInputStream:
    """Copies of one segment, read from the longest with failover (digest §9).

    All copies must share a first txid and have a known last txid. Reading
    starts at ``start_txid`` (INVALID_TXID: at the first op).
    """

    def __init__(self, streams: Iterable[EditLogInputStreamLike], start_txid: int) -> None:
        copies = list(streams)
        first: EditLogInputStreamLike | None = None
        for s in copies:
            if s.first_txid == INVALID_TXID:
                raise IllegalArgumentException(f"invalid first txid in stream: {s}")
            if s.last_txid == INVALID_TXID:
                raise IllegalArgumentException(f"invalid last txid in stream: {s}")
            if first is None:
                first = s
            elif s.first_txid != first.first_txid:
                raise IllegalArgumentException(
                    "All streams in the RedundantEditLogInputStream must have the same start "
                    f"transaction ID!  {first.name} had start txId {first.first_txid}, but "
                    f"{s.name} had start txId {s.first_txid}"
                )
        # Longest first; the sort is stable, so a preferred (local) copy stays ahead of an
        # equally long remote one.
        self._streams = sorted(copies, key=lambda s: -s.last_txid)
        self._cur = 0
        self._prev_txid = INVALID_TXID if start_txid == INVALID_TXID else start_txid - 1
        self._state = _State.EOF if not copies else _State.SKIP_UNTIL
        self._prev_exception: BaseException | None = None
        self._cached_op: FSEditLogOp | None = None

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
        while True:
            state = self._state
            if state is _State.EOF:
                return None
            stream = self._streams[self._cur]
            if state is _State.SKIP_UNTIL:
                self._state = _State.OK
                if self._prev_txid != INVALID_TXID:
                    LOG.info(
                        "Fast-forwarding stream '%s' to transaction ID %d",
                        stream.name,
                        self._prev_txid + 1,
                    )
                    try:
                        stream.skip_until(self._prev_txid + 1)
                    except OSError as e:
                        # (Hadoop then reads on regardless; failing over is what it means.)
                        self._prev_exception = e
                        self._state = _State.STREAM_FAILED
            elif state is _State.OK:
                try:
                    op = stream.read_op()
                except OSError as e:
                    self._prev_exception = e
                    self._state = _State.STREAM_FAILED
                    continue
                if op is None:
                    if stream.last_txid == self._prev_txid:
                        self._state = _State.EOF
                        return None
                    self._prev_exception = PrematureEOFException(
                        f"got premature end-of-file at txid {self._prev_txid}; expected file "
                        f"to go up to {stream.last_txid}"
                    )
                    self._state = _State.STREAM_FAILED
                    continue
                self._prev_txid = op.txid
                return op
            else:  # STREAM_FAILED
                self._fail_over()

    def _fail_over(self) -> None:
        error = self._prev_exception
        always_assert(error is not None, "failing over without an error")
        if self._cur + 1 == len(self._streams):
            self._state = _State.EOF
            raise error
        failed = self._streams[self._cur]
        following = self._streams[self._cur + 1]
        if following.last_txid < failed.last_txid:
            self._state = _State.EOF
            raise IOException(
                f"We encountered an error reading {failed.name}.  During automatic edit log "
                "failover, we noticed that all of the remaining edit log streams are shorter "
                "than the current one!  The best remaining edit log ends at transaction "
                f"{following.last_txid}, but we thought we could read up to transaction "
                f"{failed.last_txid}.  If you continue, metadata will be lost forever!"
            ) from error
        LOG.error(
            "Got error reading edit log input stream %s; failing over to edit log %s",
            failed.name,
            following.name,
            exc_info=error,
        )
        self._cur += 1
        self._state = _State.SKIP_UNTIL

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
    streams: Iterable[EditLogInputStreamLike], from_txid: int
) -> list[RedundantEditLogInputStream]:
    """Group ``streams`` by first txid into RedundantEditLogInputStreams, in txid order.

    Within a group a finalized copy discards the in-progress ones (it is the
    decided content); local copies are preferred over remote ones of equal
    length. Each group reads from ``from_txid`` (JournalSet.chainAndMakeRedundantStreams).
    """
    ordered = sorted(streams, key=lambda s: (s.first_txid, -s.last_txid))
    result: list[RedundantEditLogInputStream] = []
    group: list[EditLogInputStreamLike] = []

    def emit() -> None:
        group.sort(key=lambda s: not s.is_local_log)
        result.append(RedundantEditLogInputStream(group, from_txid))

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
