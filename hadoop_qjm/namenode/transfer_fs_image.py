"""TransferFsImage: moving an ``fsimage_N`` between NameNodes over HTTP (Hadoop's class).

Two directions, one way of landing the bytes on disk:

* :func:`download_image` — ``GET /imagetransfer?getimage=1&txid=N&storageInfo=…`` from
  another NameNode (``namenode -bootstrapStandby``);
* :func:`upload_image_to_active` — ``PUT /imagetransfer?txid=N&storageInfo=…&imageFile=IMAGE``
  to the active NameNode, body the image, header ``X-MD5-Digest`` (the standby's
  checkpointer); the receiving side is ``ImageServlet.put``
  (:mod:`~hadoop_qjm.namenode.name_node_http_server`), which lands the bytes with the same
  two functions.

Landing an image in a set of image directories (``current/`` of each), in two phases::

    receive_checkpoint:  write fsimage.ckpt_N in every dir from one stream, bounded by
                         its length; fsync each; check the length and the MD5
    commit_checkpoint:   write fsimage_N.md5 in every dir           [before-rename]
                         rename fsimage.ckpt_N -> fsimage_N          <- commit point
                                                                     [after-rename]
                         fsync the dir

As in Hadoop (FSImage.saveDigestAndRenameCheckpointImage) the ``.md5`` is written before
the rename: a crash between the two leaves an ``.md5`` without its image and a
``fsimage.ckpt_N``, both of which start-up deletes (HDFS-1073 §4.3). The bracketed
points are :data:`~hadoop_qjm.common.durable.CommitHook` fault hooks (STYLE.md habit 4).
A failure before the commit point removes every ``fsimage.ckpt_N`` this call created.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import logging
import os
import ssl
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote, urlsplit

from hadoop_qjm.common.durable import (
    AFTER_RENAME,
    BEFORE_RENAME,
    CommitHook,
    FsyncFunction,
    fsync_dir,
)
from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException
from hadoop_qjm.common.http_transfer import open_transfer
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.namenode.fs_image_format import read_stored_md5, save_md5_file
from hadoop_qjm.namenode.nn_storage import (
    ROLLBACK_IMAGE_REGEX,
    checkpoint_file_name,
    image_file_name,
)

__all__ = [
    "CHUNK_SIZE",
    "HttpPutFailedException",
    "ImageTransferDataException",
    "commit_checkpoint",
    "discard_checkpoint",
    "download_image",
    "download_rollback_image",
    "file_md5",
    "image_transfer_put_path",
    "receive_checkpoint",
    "upload_image_to_active",
]

LOG = logging.getLogger(__name__)

CHUNK_SIZE = 64 * 1024
MD5_HEADER = "X-MD5-Digest"


class ImageTransferDataException(IOException):
    """The bytes received are not the image announced: fewer than its length, or an MD5
    other than the advertised one (the sender's fault: the receiver answers 400)."""


class HttpPutFailedException(IOException):
    """An image upload answered with ``status`` other than 200 (Hadoop's
    TransferFsImage.HttpPutFailedException): 403 the receiver is not active or belongs to
    another namespace, 409 it has (or is receiving) an image at least as new, 400 bad
    parameters or MD5."""

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


# ---- landing bytes on disk ---------------------------------------------------------------------
def receive_checkpoint(
    stream: BinaryIO,
    length: int,
    advertised_md5: str | None,
    dest_dirs: Sequence[Path],
    txid: int,
    *,
    exclusive: bool = False,
    fsync: FsyncFunction = os.fsync,
    progress: Callable[[int, int], object] | None = None,
) -> str:
    """Copy exactly ``length`` bytes of ``stream`` into ``fsimage.ckpt_<txid>`` in every
    directory of ``dest_dirs`` and fsync them; returns the MD5 hex of the bytes.

    ImageTransferDataException if the stream ends early or the MD5 is not
    ``advertised_md5`` (when given); IOException for a local failure. Either way no
    ``fsimage.ckpt_<txid>`` of this call remains. With ``exclusive`` an existing
    ``fsimage.ckpt_<txid>`` is an error instead of being overwritten (someone else is
    writing it). ``progress(received, length)`` is called after each chunk.
    """
    if length < 0:
        raise IllegalArgumentException(f"Negative image length {length}")
    if not dest_dirs:
        raise IOException("No image directories to receive the image into")
    paths = [Path(d) / checkpoint_file_name(txid) for d in dest_dirs]
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    fds: list[int] = []
    created: list[Path] = []
    try:
        for path in paths:
            try:
                fds.append(os.open(path, flags, 0o644))
            except FileExistsError:
                raise IOException(
                    f"{path} already exists: another checkpoint at txid {txid} is being written"
                ) from None
            except OSError as e:
                raise IOException(f"Unable to create image file {path}: {e}") from e
            created.append(path)
        digest = hashlib.md5()
        received = 0
        while received < length:
            try:
                chunk = stream.read(min(CHUNK_SIZE, length - received))
            except (TimeoutError, ConnectionError, OSError) as e:
                raise ImageTransferDataException(
                    f"Connection lost after receiving {received} of {length} bytes of "
                    f"{image_file_name(txid)}: {e}"
                ) from e
            if not chunk:
                break
            digest.update(chunk)
            received += len(chunk)
            for fd, path in zip(fds, paths):
                _write_all(fd, chunk, path)
            if progress is not None:
                progress(received, length)
        if received != length:
            raise ImageTransferDataException(
                f"File {image_file_name(txid)} received length {received} is not of the "
                f"advertised size {length}"
            )
        for fd, path in zip(fds, paths):
            try:
                fsync(fd)
            except OSError as e:
                raise IOException(f"Unable to fsync {path}: {e}") from e
        md5 = digest.hexdigest()
        if advertised_md5 is not None and md5 != advertised_md5.strip().lower():
            raise ImageTransferDataException(
                f"File {image_file_name(txid)} computed digest {md5} does not match "
                f"advertised digest {advertised_md5.strip()}"
            )
        return md5
    except BaseException:
        _remove(created)
        raise
    finally:
        for fd in fds:
            with contextlib.suppress(OSError):
                os.close(fd)


def commit_checkpoint(
    dest_dirs: Sequence[Path],
    txid: int,
    md5: str,
    *,
    fsync: FsyncFunction = os.fsync,
    hook: CommitHook | None = None,
    name: str | None = None,
) -> list[Path]:
    """Make each received ``fsimage.ckpt_<txid>`` the image ``fsimage_<txid>`` (see the
    module docstring); returns the images' paths. ``hook(point, path)`` is called at
    ``before-rename`` and ``after-rename`` in each directory. ``name`` is the image's
    name when it is not ``fsimage_<txid>`` (a rollback image)."""
    images = []
    for d in dest_dirs:
        ckpt = Path(d) / checkpoint_file_name(txid)
        image = Path(d) / (name or image_file_name(txid))
        save_md5_file(image, md5, fsync=fsync)
        if hook is not None:
            hook(BEFORE_RENAME, image)
        try:
            os.replace(ckpt, image)  # the commit point of this directory's image
        except OSError as e:
            raise IOException(f"Unable to rename {ckpt} to {image}: {e}") from e
        if hook is not None:
            hook(AFTER_RENAME, image)
        fsync_dir(d, fsync=fsync)
        images.append(image)
    return images


def discard_checkpoint(dest_dirs: Sequence[Path], txid: int) -> None:
    """Remove ``fsimage.ckpt_<txid>`` from each directory (a received image not used)."""
    _remove([Path(d) / checkpoint_file_name(txid) for d in dest_dirs])


def _write_all(fd: int, data: bytes, path: Path) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError as e:
        raise IOException(f"Unable to write image file {path}: {e}") from e


def _remove(paths: Sequence[Path]) -> None:
    for path in paths:
        try:
            path.unlink()
        except FileNotFoundError:
            pass
        except OSError as e:
            LOG.warning("Could not delete %s: %s", path, e)


def file_md5(path: Path) -> str:
    """The MD5 hex of the file ``path``, read in chunks."""
    digest = hashlib.md5()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(CHUNK_SIZE), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _image_url(http_base_url: str, txid_text: str, storage_info: StorageInfo) -> str:
    return (
        f"{http_base_url.rstrip('/')}/imagetransfer?getimage=1&txid={txid_text}"
        f"&storageInfo={quote(storage_info.to_colon_separated_string(), safe=':')}"
    )


# ---- GET: bootstrapStandby ---------------------------------------------------------------------
def download_image(
    http_base_url: str,
    txid: int,
    storage_info: StorageInfo,
    dest_dirs: Sequence[Path],
    timeout_s: float,
    ssl_context: ssl.SSLContext | None = None,
    *,
    fsync: FsyncFunction = os.fsync,
    hook: CommitHook | None = None,
    progress: Callable[[int, int], object] | None = None,
) -> str:
    """Fetch ``fsimage_<txid>`` from the NameNode at ``http_base_url`` into every directory
    of ``dest_dirs`` (each a ``current/``), with its ``.md5``; returns the MD5 hex.

    The server's ``X-MD5-Digest`` is checked against the bytes (TransferFsImage.
    downloadImageToStorage then FSImage.saveDigestAndRenameCheckpointImage).
    ``progress(received, length)`` is called after each chunk.
    """
    url = _image_url(http_base_url, str(txid), storage_info)
    with open_transfer(url, timeout_s, ssl_context) as (response, length):
        advertised = response.headers.get(MD5_HEADER)
        md5 = receive_checkpoint(
            response, length, advertised, dest_dirs, txid, fsync=fsync, progress=progress
        )
    commit_checkpoint(dest_dirs, txid, md5, fsync=fsync, hook=hook)
    LOG.info("Downloaded %s (%d bytes, MD5 %s) from %s", image_file_name(txid), length, md5, url)
    return md5


def download_rollback_image(
    http_base_url: str, storage_info: StorageInfo, dest_dirs: Sequence[Path], *transfer: Any
) -> int | None:
    """Fetch the newest ``fsimage_rollback_<N>`` of the NameNode at ``http_base_url``
    (``imageFile=IMAGE_ROLLBACK``) into ``dest_dirs``; returns N, or None when it has none
    (410). ``transfer`` is download_image's ``timeout_s[, ssl_context]``. bootstrapStandby
    mid rolling upgrade (HDFS-17178)."""
    url = _image_url(http_base_url, "latest", storage_info) + "&imageFile=IMAGE_ROLLBACK"
    try:
        with open_transfer(url, *transfer) as (response, length):
            disposition = response.headers.get("Content-Disposition") or ""
            m = ROLLBACK_IMAGE_REGEX.search(disposition)
            if m is None:
                raise IOException(f"No rollback image name in '{disposition}' from {url}")
            txid = int(m.group(1))
            advertised = response.headers.get(MD5_HEADER)
            md5 = receive_checkpoint(response, length, advertised, dest_dirs, txid)
    except IOException as e:
        if "status code 410" in str(e):
            return None  # no rolling upgrade there
        raise
    commit_checkpoint(dest_dirs, txid, md5, name=m.group(0))
    LOG.info("Downloaded %s (%d bytes, MD5 %s) from %s", m.group(0), length, md5, url)
    return txid


# ---- PUT: the standby's checkpointer -----------------------------------------------------------
def image_transfer_put_path(txid: int, storage_info: StorageInfo, image_file: str = "IMAGE") -> str:
    """The path and query of an image upload (ImageServlet's PUT parameters);
    ``image_file`` is IMAGE or IMAGE_ROLLBACK (NameNodeFile)."""
    return (
        f"/imagetransfer?txid={txid}"
        f"&storageInfo={quote(storage_info.to_colon_separated_string(), safe=':')}"
        f"&imageFile={image_file}"
    )


def upload_image_to_active(
    http_base_url: str,
    storage_info: StorageInfo,
    txid: int,
    image_path: str | os.PathLike[str],
    timeout_s: float,
    ssl_context: ssl.SSLContext | None = None,
    image_file: str = "IMAGE",
) -> None:
    """PUT the image ``image_path`` (``fsimage_<txid>``, or with ``image_file``
    IMAGE_ROLLBACK ``fsimage_rollback_<txid>``) to the NameNode at
    ``http_base_url`` (TransferFsImage.uploadImageFromStorage).

    The MD5 sent is the one in the image's ``.md5`` file, else computed. Raises
    :class:`HttpPutFailedException` (with ``status``) if the receiver refuses — a 409
    means it already has, or is receiving, an image at least as new — and IOException if
    the upload could not be made.
    """
    image_path = Path(image_path)
    md5 = read_stored_md5(image_path) or file_md5(image_path)
    parts = urlsplit(http_base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise IllegalArgumentException(f"Not an http(s) URL: {http_base_url}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    conn: http.client.HTTPConnection
    if parts.scheme == "https":
        conn = http.client.HTTPSConnection(
            parts.hostname, port, timeout=timeout_s, context=ssl_context
        )
    else:
        conn = http.client.HTTPConnection(parts.hostname, port, timeout=timeout_s)
    path = image_transfer_put_path(txid, storage_info, image_file)
    where = f"{parts.scheme}://{parts.netloc}{path}"
    try:
        with open(image_path, "rb") as f:
            length = os.fstat(f.fileno()).st_size
            try:
                conn.putrequest("PUT", path, skip_accept_encoding=True)
                conn.putheader("Content-Type", "application/octet-stream")
                conn.putheader("Content-Length", str(length))
                conn.putheader(MD5_HEADER, md5)
                conn.endheaders()
            except OSError as e:
                raise IOException(f"Unable to upload {image_path.name} to {where}: {e}") from e
            send_error: OSError | None = None
            try:
                remaining = length
                while remaining > 0:
                    chunk = f.read(min(CHUNK_SIZE, remaining))
                    if not chunk:
                        raise IOException(f"{image_path} shrank while being uploaded")
                    conn.send(chunk)
                    remaining -= len(chunk)
            except (BrokenPipeError, ConnectionResetError) as e:
                # The receiver may have refused before reading everything: its answer
                # (403, 409, ...) is what matters, if it can still be read.
                send_error = e
            except OSError as e:
                raise IOException(f"Unable to upload {image_path.name} to {where}: {e}") from e
        try:
            response = conn.getresponse()
            detail = response.read(4096).decode("utf-8", "replace").strip()
        except (OSError, http.client.HTTPException) as e:
            cause = send_error or e
            raise IOException(f"Unable to upload {image_path.name} to {where}: {cause}") from e
    finally:
        conn.close()
    if response.status != 200:
        raise HttpPutFailedException(
            f"Image uploading failed, status: {response.status}, url: {where}, message: "
            f"{detail or response.reason}",
            response.status,
        )
    LOG.info("Uploaded %s (%d bytes) to %s", image_path.name, length, where)
