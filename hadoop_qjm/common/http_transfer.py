"""Downloading a segment over HTTP (Hadoop's TransferFsImage.doGetUrl, reduced to what QJM needs).

The response must be 200 with a ``Content-Length``; the body is streamed into
the target file, which is fsynced before returning. A size mismatch or a wrong
``X-MD5-Digest`` is an error and the partial file is removed.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import ssl
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hadoop_qjm.common.exceptions import IOException

__all__ = ["download_to_file", "open_transfer", "open_url", "CHUNK_SIZE"]

CHUNK_SIZE = 64 * 1024


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
        length_header = response.headers.get("Content-Length")
        if length_header is None:
            raise IOException(f"Content-Length header is not provided by the server at {url}")
        try:
            length = int(length_header)
        except ValueError:
            raise IOException(f"Bad Content-Length header '{length_header}' from {url}") from None
        yield response, length


def download_to_file(
    url: str,
    path: str | os.PathLike[str],
    timeout_s: float = 60.0,
    ssl_context: ssl.SSLContext | None = None,
    progress: Callable[[int, int], object] | None = None,
) -> int:
    """Fetch ``url`` into ``path`` (created or truncated) and fsync it; returns the byte count.
    ``progress(received, length)`` is called after each chunk
    (:class:`~hadoop_qjm.common.progress.TransferProgress`)."""
    path = Path(path)
    with open_transfer(url, timeout_s, ssl_context) as (response, expected):
        md5_header = response.headers.get("X-MD5-Digest")
        digest = hashlib.md5() if md5_header else None
        received = 0
        try:
            with open(path, "wb") as out:
                while True:
                    chunk = response.read(CHUNK_SIZE)
                    if not chunk:
                        break
                    out.write(chunk)
                    received += len(chunk)
                    if digest is not None:
                        digest.update(chunk)
                    if progress is not None:
                        progress(received, expected)
                out.flush()
                os.fsync(out.fileno())
            if received != expected:
                raise IOException(
                    f"File {url} received length {received} is not of the advertised size {expected}"
                )
            if digest is not None and digest.hexdigest() != md5_header.strip().lower():
                raise IOException(
                    f"File {url} computed digest {digest.hexdigest()} does not match advertised digest {md5_header}"
                )
        except BaseException:
            try:
                path.unlink()
            except OSError:
                pass
            raise
    return received
