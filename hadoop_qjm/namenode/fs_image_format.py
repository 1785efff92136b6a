"""The fsimage file: our own format, versioned and checksummed, plus Hadoop's ``.md5`` file.

Hadoop's protobuf image format is not reproduced (DESIGN.md §1 "the image format is ours");
the file *names* and the ``.md5`` beside each image are Hadoop's. Format version 1, all
integers big-endian, strings a u16 byte length then UTF-8::

    offset  size  field
    0       8     magic b"HQJMIMG\\x00"
    8       4     format version (u32) = 1
    12      4     layout version of the writer (i32, -67)
    16      4     namespace id (i32): must match the directory's VERSION
    20      8     last txid (i64): the image holds every txid <= it (the N of fsimage_N)
    28      8     last inode id (i64): the inode-id counter
    36      8     number of inodes (u64), the root included
    (version 2 only)
    44      8     rolling upgrade start time (i64, ms): a rolling upgrade is in progress
    44/52   ...   the inodes, parents before children, children in name order
    end-4   4     CRC32 (zlib) of every byte before it

    inode:  kind u8 (1 directory, 2 file) | inode id i64 | parent id i64 (0: the root)
            | name str ("" for the root) | mtime i64 | atime i64 | user str | group str
            | permission u16 (sticky + rwx)
      file: replication i16 | preferred block size i64 | flags u8 (bit 0: under
            construction) | if under construction: client name str, client machine str

``<image>.md5`` is Hadoop's MD5FileUtils format, ``"<32 lowercase hex> *<image name>\\n"``;
the MD5 covers the whole image file. An image is written in version 1 unless a rolling
upgrade is in progress (Hadoop's NameSystemSection.rollingUpgradeStartTime): the images of
a NameNode that never saw one stay byte for byte what they were; both versions are read. A reader checks the MD5 first (a missing or different
one rejects the image), then the magic, the version, the CRC, and the tree's structure.
"""

from __future__ import annotations

import hashlib
import os
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.durable import FsyncFunction, atomic_replace
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.namenode.fs_directory import (
    ROOT_INODE_ID,
    FSDirectory,
    INode,
    INodeDirectory,
    INodeFile,
)
from hadoop_qjm.namenode.nn_storage import md5_file_for

__all__ = [
    "IMAGE_MAGIC",
    "IMAGE_FORMAT_VERSION",
    "InvalidImageException",
    "LoadedImage",
    "serialize_image",
    "write_image",
    "parse_image",
    "read_image",
    "save_md5_file",
    "read_stored_md5",
]

IMAGE_MAGIC = b"HQJMIMG\x00"
IMAGE_FORMAT_VERSION = 1
#: The version that adds the rolling upgrade's start time after the header.
IMAGE_FORMAT_VERSION_ROLLING_UPGRADE = 2

_HEADER = struct.Struct(">8sIiiqqQ")
_INODE_HEAD = struct.Struct(">Bqq")
_TIMES = struct.Struct(">qq")
_U16 = struct.Struct(">H")
_FILE = struct.Struct(">hqB")
_CRC = struct.Struct(">I")
_I64 = struct.Struct(">q")
_KIND_DIR, _KIND_FILE = 1, 2
_FLAG_UNDER_CONSTRUCTION = 1
_MD5_LINE = re.compile(r"([0-9a-f]{32}) [ *](.+)\n?")


class InvalidImageException(IOException):
    """An image file that is truncated, corrupt, or not an image of ours."""

    java_name = "java.io.IOException"


@dataclass
class LoadedImage:
    txid: int
    namespace_id: int
    layout_version: int
    fs_dir: FSDirectory


def _str(text: str) -> bytes:
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > 0xFFFF:
        raise IOException(f"string too long for an image: {text[:40]!r}...")
    return _U16.pack(len(data)) + data


def serialize_image(
    fs_dir: FSDirectory,
    txid: int,
    namespace_id: int,
    layout_version: int = CURRENT_LAYOUT_VERSION,
) -> bytes:
    """The whole image of ``fs_dir`` at ``txid`` (the caller holds the namesystem lock),
    stamped with the storage's ``layout_version``."""
    body = bytearray()
    count = 0
    for _path, node in fs_dir.walk():
        count += 1
        parent_id = node.parent.inode_id if node.parent is not None else 0
        body += _INODE_HEAD.pack(_KIND_DIR if node.is_dir else _KIND_FILE, node.inode_id, parent_id)
        body += _str(node.name)
        body += _TIMES.pack(node.mtime, node.atime)
        body += _str(node.user)
        body += _str(node.group or "")
        body += _U16.pack(node.mode)
        if not node.is_dir:
            uc = node.client_name is not None  # type: ignore[attr-defined]
            body += _FILE.pack(
                node.replication, node.block_size, _FLAG_UNDER_CONSTRUCTION if uc else 0
            )  # type: ignore[attr-defined]
            if uc:
                body += _str(node.client_name) + _str(node.client_machine)  # type: ignore[attr-defined]
    rolling_start = fs_dir.rolling_upgrade_start_time
    header = _HEADER.pack(
        IMAGE_MAGIC,
        IMAGE_FORMAT_VERSION_ROLLING_UPGRADE if rolling_start else IMAGE_FORMAT_VERSION,
        layout_version,
        namespace_id,
        txid,
        fs_dir.last_inode_id,
        count,
    )
    if rolling_start:
        header += _I64.pack(rolling_start)
    data = header + bytes(body)
    return data + _CRC.pack(zlib.crc32(data))


class CheckpointInProgressException(IOException):
    """Someone else is writing the same checkpoint file (see write_image)."""


def write_image(
    path: Path,
    data: bytes,
    *,
    fsync: FsyncFunction = os.fsync,
    halfway: Callable[[Path], None] | None = None,
    exclusive: bool = False,
) -> str:
    """Write ``data`` to ``path`` (truncating it) and fsync it; returns its MD5 hex.

    ``halfway(path)`` is a fault hook called when half the bytes are written: a test
    raises there to leave a torn checkpoint behind, as a crash would. With ``exclusive``
    the file must not exist yet: another writer of the same checkpoint (an image upload
    from the standby) is never truncated.
    """
    flags = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC)
    try:
        fd = os.open(path, flags, 0o644)
    except FileExistsError:
        raise CheckpointInProgressException(
            f"Another checkpointer is already in the process of writing {path.name}"
        ) from None
    except OSError as e:
        raise IOException(f"Unable to create image file {path}: {e}") from e
    try:
        view = memoryview(data)
        half = len(data) // 2
        _write_all(fd, view[:half])
        if halfway is not None:
            halfway(path)
        _write_all(fd, view[half:])
        fsync(fd)
    except OSError as e:
        raise IOException(f"Unable to write image file {path}: {e}") from e
    finally:
        os.close(fd)
    return hashlib.md5(data).hexdigest()


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        view = view[os.write(fd, view) :]


def save_md5_file(image_path: Path, md5_hex: str, *, fsync: FsyncFunction = os.fsync) -> None:
    """Write ``<image>.md5`` atomically, naming ``image_path`` (MD5FileUtils.saveMD5File)."""
    line = f"{md5_hex} *{image_path.name}\n"
    atomic_replace(md5_file_for(image_path), line.encode("ascii"), fsync=fsync)


def read_stored_md5(image_path: Path) -> str | None:
    """The MD5 recorded for ``image_path``; None if there is no .md5 file."""
    md5_path = md5_file_for(image_path)
    try:
        text = md5_path.read_text("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise InvalidImageException(f"Unable to read {md5_path}: {e}") from e
    m = _MD5_LINE.fullmatch(text)
    if m is None:
        raise InvalidImageException(f"File {md5_path} does not match MD5 format")
    if m.group(2) != image_path.name:
        raise InvalidImageException(
            f"MD5 file at {md5_path} references file named {m.group(2)} but we expected it "
            f"to reference {image_path.name}"
        )
    return m.group(1)


def read_image(path: Path) -> LoadedImage:
    """Read and verify ``path`` (MD5 from its .md5 file, then the image itself)."""
    expected = read_stored_md5(path)
    if expected is None:
        raise InvalidImageException(f"No MD5 file found corresponding to image file {path}")
    try:
        data = path.read_bytes()
    except OSError as e:
        raise InvalidImageException(f"Unable to read image file {path}: {e}") from e
    actual = hashlib.md5(data).hexdigest()
    if actual != expected:
        raise InvalidImageException(
            f"Image file {path} is corrupt with MD5 checksum of {actual} but expecting {expected}"
        )
    return parse_image(data, str(path))


class _Reader:
    __slots__ = ("data", "pos", "name")

    def __init__(self, data: bytes, name: str) -> None:
        self.data = data
        self.pos = 0
        self.name = name

    def unpack(self, st: struct.Struct) -> tuple:
        end = self.pos + st.size
        if end > len(self.data):
            raise InvalidImageException(f"{self.name}: truncated at offset {self.pos}")
        values = st.unpack_from(self.data, self.pos)
        self.pos = end
        return values

    def string(self) -> str:
        (n,) = self.unpack(_U16)
        end = self.pos + n
        if end > len(self.data):
            raise InvalidImageException(f"{self.name}: truncated string at offset {self.pos}")
        try:
            text = self.data[self.pos : end].decode("utf-8", "surrogatepass")
        except UnicodeDecodeError as e:
            raise InvalidImageException(f"{self.name}: bad string at offset {self.pos}") from e
        self.pos = end
        return text


def parse_image(data: bytes, name: str = "<image>") -> LoadedImage:
    """Decode an image; InvalidImageException names what is wrong and where."""
    if len(data) < _HEADER.size + _CRC.size:
        raise InvalidImageException(f"{name}: too short ({len(data)} bytes) to be an image")
    (stored_crc,) = _CRC.unpack_from(data, len(data) - _CRC.size)
    body = data[: -_CRC.size]
    magic, version, layout_version, namespace_id, txid, last_inode_id, count = _HEADER.unpack_from(
        body, 0
    )
    if magic != IMAGE_MAGIC:
        raise InvalidImageException(f"{name}: not an image file (magic {magic!r})")
    if version not in (IMAGE_FORMAT_VERSION, IMAGE_FORMAT_VERSION_ROLLING_UPGRADE):
        raise InvalidImageException(
            f"{name}: image format version {version} is not supported (this NameNode reads "
            f"versions {IMAGE_FORMAT_VERSION} and {IMAGE_FORMAT_VERSION_ROLLING_UPGRADE})"
        )
    if zlib.crc32(body) != stored_crc:
        raise InvalidImageException(f"{name}: checksum mismatch (the image is corrupt)")
    reader = _Reader(body, name)
    reader.pos = _HEADER.size
    rolling_start = 0
    if version == IMAGE_FORMAT_VERSION_ROLLING_UPGRADE:
        (rolling_start,) = reader.unpack(_I64)
    nodes: dict[int, INode] = {}
    fs_dir: FSDirectory | None = None
    for index in range(count):
        kind, inode_id, parent_id = reader.unpack(_INODE_HEAD)
        node_name = reader.string()
        mtime, atime = reader.unpack(_TIMES)
        user = reader.string()
        group = reader.string()
        (mode,) = reader.unpack(_U16)
        if kind == _KIND_DIR:
            node: INode = INodeDirectory(inode_id, node_name, user, group, mode, mtime, atime)
        elif kind == _KIND_FILE:
            replication, block_size, flags = reader.unpack(_FILE)
            client_name = client_machine = None
            if flags & _FLAG_UNDER_CONSTRUCTION:
                client_name = reader.string()
                client_machine = reader.string()
            node = INodeFile(
                inode_id,
                node_name,
                user,
                group,
                mode,
                mtime,
                atime,
                replication=replication,
                block_size=block_size,
                client_name=client_name,
                client_machine=client_machine or "",
            )
        else:
            raise InvalidImageException(f"{name}: inode #{index} has unknown kind {kind}")
        if inode_id in nodes:
            raise InvalidImageException(f"{name}: inode id {inode_id} appears twice")
        if index == 0:
            if kind != _KIND_DIR or inode_id != ROOT_INODE_ID or parent_id != 0 or node_name:
                raise InvalidImageException(f"{name}: the first inode is not the root")
            fs_dir = FSDirectory(user, group, mode, mtime)
            fs_dir.root.atime = atime
            nodes[inode_id] = fs_dir.root
            continue
        parent = nodes.get(parent_id)
        if parent is None or not parent.is_dir or not node_name or "/" in node_name:
            raise InvalidImageException(
                f"{name}: inode {inode_id} ({node_name!r}) has no valid parent {parent_id}"
            )
        if node_name in parent.children:  # type: ignore[attr-defined]
            raise InvalidImageException(f"{name}: {node_name!r} appears twice in {parent_id}")
        parent.children[node_name] = node  # type: ignore[attr-defined]
        node.parent = parent  # type: ignore[assignment]
        nodes[inode_id] = node
    if fs_dir is None:
        raise InvalidImageException(f"{name}: the image has no root")
    if reader.pos != len(body):
        raise InvalidImageException(f"{name}: {len(body) - reader.pos} unexpected bytes at the end")
    if last_inode_id < max(nodes):
        raise InvalidImageException(
            f"{name}: last inode id {last_inode_id} is below inode id {max(nodes)}"
        )
    fs_dir.last_inode_id = last_inode_id
    fs_dir.inode_count = len(nodes)
    fs_dir.rolling_upgrade_start_time = rolling_start
    return LoadedImage(txid, namespace_id, layout_version, fs_dir)
