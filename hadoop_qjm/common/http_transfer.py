"""Downloading a segment over HTTP (Hadoop's TransferFsImage.doGetUrl, reduced to what QJM needs).

The response must be 200 with a ``Content-Length``; the body is streamed into
the target file, which is fdatasynced before returning. A size mismatch or a wrong
``X-MD5-Digest`` (its MD5 computed as the bytes arrive) is an error and the partial
file is removed. :class:`TransferSession` keeps one connection per server alive
between downloads (the JournalNodeSyncer's many segments); :func:`download_to_file`
is one download on a connection of its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import os
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hadoop_qjm.common.exceptions import IOException

__all__ = [
    "CHUNK_SIZE",
    "DigestMismatchException",
    "MD5_HEADER",
    "TransferSession",
    "download_to_file",
    "open_transfer",
    "open_url",
]

#: TransferFsImage.MD5_HEADER: the MD5 of the body, when the server knows it.
MD5_HEADER = "X-MD5-Digest"
CHUNK_SIZE = 64 * 1024
#: What a download reads at once: one Python iteration (write, MD5, callbacks) per
#: 256 KiB rather than per 64 KiB.
RECV_CHUNK = 256 * 1024
#: fdatasync where the platform has it: the file's data and size, not its timestamps.
_fdatasync = getattr(os, "fdatasync", os.fsync)
#: A download the caller fdatasyncs later (``sync=False``) starts its data's writeback
#: every this many bytes and at its end, as Hadoop's DataNode does behind its writes
#: (``dfs.datanode.drop.cache.behind.writes``): posix_fadvise DONTNEED on Linux queues
#: the dirty pages for the disk at once, so the caller's fdatasync finds them written
#: instead of starting them. A hint, never durability (0: none).
WRITEBACK_EVERY = 8 * 1024 * 1024
_fadvise = getattr(os, "posix_fadvise", None)


def _start_writeback(fd: int, offset: int, length: int) -> None:
    if _fadvise is not None and length > 0:
        try:
            _fadvise(fd, offset, length, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass  # a hint: the fdatasync that follows writes whatever it did not


class DigestMismatchException(IOException):
    """The body's MD5 is not the ``X-MD5-Digest`` the server sent (TransferFsImage's
    IOException): damaged on the way, or at the source after its MD5 was computed."""


def open_url(url: str, timeout_s: float, ssl_context: ssl.SSLContext | None = None):
    """Open ``url`` for reading; HTTP errors become IOException with the status and body."""
    try:
        return urllib.request.urlopen(url, timeout=timeout_s, context=ssl_context)
    except urllib.error.HTTPError as e:
        detail = e.read(512).decode("utf-8", "replace").strip()
        raise IOException(
            f"Image transfer servlet at {url} failed with status code {e.code}: {detail}"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as e:
        reason = getattr(e, "reason", e)
        raise IOException(f"Unable to fetch {url}: {reason}") from None


@contextlib.contextmanager
def open_transfer(
    url: str, timeout_s: float, ssl_context: ssl.SSLContext | None = None
) -> Iterator[tuple[Any, int]]:
    """Open a file transfer (``/getJournal``, ``/imagetransfer``): ``(response, length)``
    once the answer is 200 with a usable ``Content-Length``, else IOException."""
    with open_url(url, timeout_s, ssl_context) as response:
        if response.status != 200:
            raise IOException(
                f"Image transfer servlet at {url} failed with status code {response.status}"
            )
        yield response, _advertised_length(url, response.headers.get("Content-Length"))


def _advertised_length(url: str, header: str | None) -> int:
    """A transfer's ``Content-Length``: required (TransferFsImage's check) and a number."""
    if header is None:
        raise IOException(f"Content-Length header is not provided by the server at {url}")
    try:
        return int(header)
    except ValueError:
        raise IOException(f"Bad Content-Length header '{header}' from {url}") from None


def download_to_file(
    url: str,
    path: str | os.PathLike[str],
    timeout_s: float = 60.0,
    ssl_context: ssl.SSLContext | None = None,
    progress: Callable[[int, int], object] | None = None,
    on_chunk: Callable[[memoryview], object] | None = None,
) -> int:
    """Fetch ``url`` into ``path`` (created or truncated) and fdatasync it; returns the
    byte count. ``progress(received, length)`` is called after each chunk
    (:class:`~hadoop_qjm.common.progress.TransferProgress`), ``on_chunk(bytes)`` with
    each chunk as it arrives (valid only during the call: a verifier that reads the
    bytes once, as they are written)."""
    session = TransferSession(ssl_context)
    try:
        return session.download_to_file(url, path, timeout_s, progress=progress, on_chunk=on_chunk)
    finally:
        session.close()


def _target(url: str) -> tuple[tuple[str, str, int], str, str]:
    """(pool key, request target, Host) of ``url``; IOException if it is not http(s)."""
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError as e:  # a malformed URL (from an RPC: acceptRecovery's fromURL)
        raise IOException(f"Unable to fetch {url}: {e}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise IOException(f"Unable to fetch {url}: unknown url type")
    target = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    return (parts.scheme, parts.hostname, port), target, parts.netloc


class TransferSession:
    """Downloads over HTTP/1.1 connections kept alive between them, one per server at a
    time.

    Hadoop's TransferFsImage opens a connection per file; a catch-up of many segments
    then paid a TCP connect, a thread of the serving JournalNode and urllib's set-up for
    each one (~1.8 ms a segment on loopback, a third of a 1 MB segment's transfer). A
    connection is kept only after its response was read to the end and the server did
    not ask to close it; any error closes it. A kept connection the server has closed
    since (its idle timeout) fails before the first byte of an answer: that GET, which
    changes nothing, is sent once more on a new connection. :meth:`close` closes the
    idle connections (the session stays usable). Thread-safe: two downloads from one
    server at once use two connections.
    """

    def __init__(self, ssl_context: ssl.SSLContext | None = None) -> None:
        self.ssl_context = ssl_context
        self._idle: dict[tuple[str, str, int], http.client.HTTPConnection] = {}
        self._lock = threading.Lock()
        # Counts close() calls: a download that began before one does not pool its
        # connection afterwards (a scrubber's fetch ending after the syncer's round).
        self._closes = 0

    def close(self) -> None:
        with self._lock:
            idle, self._idle = list(self._idle.values()), {}
            self._closes += 1
        for conn in idle:
            conn.close()

    def download_to_file(
        self,
        url: str,
        path: str | os.PathLike[str],
        timeout_s: float = 60.0,
        progress: Callable[[int, int], object] | None = None,
        on_chunk: Callable[[memoryview], object] | None = None,
        on_response: Callable[[Any], Callable[[memoryview], object] | None] | None = None,
        sync: bool = True,
        on_written: Callable[[int], object] | None = None,
    ) -> int:
        """As the module's :func:`download_to_file`, on a kept-alive connection.
        ``on_response(headers)``, when given, is called with the 200 answer's headers
        before the body is read, and returns the ``on_chunk`` to use (or None): a
        receiver that is sent an ``X-MD5-Digest`` may then skip a check of its own.
        ``sync=False``: the file is not fdatasynced here; the caller must before it counts.
        ``on_written(fd)`` is called with the file's descriptor once the whole body is
        written (before the md5 is compared and the file closed): a caller that
        fdatasyncs later keeps an ``os.dup`` of it, so that an error of the write-back
        started meanwhile is reported to that fdatasync (a descriptor opened after the
        error need not see it).

        The MD5 is computed in the calling thread as each chunk arrives (hashlib lets go of
        the interpreter lock meanwhile): a caller that wants downloads to overlap runs
        several at once, as the JournalNodeSyncer does."""
        path = Path(path)
        closes = self._closes
        key, conn, response, expected = self._get(url, timeout_s)
        keep = False
        try:
            if on_response is not None:
                on_chunk = on_response(response.headers)
            md5_header = response.getheader(MD5_HEADER)
            digest = hashlib.md5(usedforsecurity=False) if md5_header else None
            size = min(RECV_CHUNK, max(expected, 1))
            received = hinted = 0
            every = 0 if sync else WRITEBACK_EVERY
            try:
                with open(path, "wb") as out, memoryview(bytearray(size)) as view:
                    while received < expected:
                        n = response.readinto(view[: min(size, expected - received)])
                        if not n:
                            break
                        chunk = view[:n]
                        out.write(chunk)
                        received += n
                        if every and received - hinted >= every:
                            out.flush()
                            _start_writeback(out.fileno(), hinted, received - hinted)
                            hinted = received
                        if digest is not None:
                            digest.update(chunk)
                        if on_chunk is not None:
                            on_chunk(chunk)
                        if progress is not None:
                            progress(received, expected)
                    out.flush()
                    if on_written is not None and received == expected:
                        on_written(out.fileno())
                    if every:
                        _start_writeback(out.fileno(), hinted, received - hinted)
                    try:
                        if sync:
                            _fdatasync(out.fileno())
                    except OSError as e:  # the download fails; never retried, never ignored
                        raise IOException(f"Failed to fdatasync {path}: {e}") from e
                if received != expected:
                    raise IOException(
                        f"File {url} received length {received} is not of the advertised size {expected}"
                    )
                computed = digest.hexdigest() if digest is not None else None
                if computed is not None and computed != md5_header.strip().lower():
                    raise DigestMismatchException(
                        f"File {url} computed digest {computed} does not match advertised digest {md5_header}"
                    )
            except BaseException:
                try:
                    path.unlink()
                except OSError:
                    pass
                raise
            keep = not response.will_close
            return received
        except (OSError, http.client.HTTPException) as e:
            if isinstance(e, IOException):
                raise
            raise IOException(f"Unable to fetch {url}: {e}") from None
        finally:
            response.close()
            self._release(key, conn, keep, closes)

    def _get(self, url: str, timeout_s: float):
        """(pool key, connection, response, Content-Length) of a 200 answer to GET ``url``."""
        key, target, netloc = _target(url)
        conn = self._take(key)
        for reused in (True, False) if conn is not None else (False,):
            try:
                if not reused:
                    conn = None
                    conn = self._connect(key, timeout_s)
                if conn.sock is not None:
                    conn.sock.settimeout(timeout_s)
                conn.request("GET", target, headers={"Host": netloc})
                response = conn.getresponse()
                break
            except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected) as e:
                conn.close()
                if not reused:
                    raise IOException(f"Unable to fetch {url}: {e}") from None
            except (OSError, http.client.HTTPException, ValueError) as e:
                if conn is not None:  # (ValueError: a path or host that cannot be sent)
                    conn.close()
                raise IOException(f"Unable to fetch {url}: {e}") from None
        try:
            if response.status != 200:
                detail = response.read(512).decode("utf-8", "replace").strip()
                raise IOException(
                    f"Image transfer servlet at {url} failed with status code {response.status}: {detail}"
                )
            length = _advertised_length(url, response.getheader("Content-Length"))
        except BaseException:
            response.close()
            conn.close()
            raise
        return key, conn, response, length

    def _connect(self, key: tuple[str, str, int], timeout_s: float) -> http.client.HTTPConnection:
        scheme, host, port = key
        if scheme == "https":
            return http.client.HTTPSConnection(
                host, port, timeout=timeout_s, context=self.ssl_context
            )
        return http.client.HTTPConnection(host, port, timeout=timeout_s)

    def _take(self, key: tuple[str, str, int]) -> http.client.HTTPConnection | None:
        with self._lock:
            return self._idle.pop(key, None)

    def _release(self, key, conn: http.client.HTTPConnection, keep: bool, closes: int) -> None:
        if keep:
            with self._lock:
                keep = key not in self._idle and closes == self._closes
                if keep:
                    self._idle[key] = conn
        if not keep:
            conn.close()
