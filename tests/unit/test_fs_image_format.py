"""The image format (docs/namenode.md): round trip, and every way a reader refuses a file."""

from __future__ import annotations

import struct
import zlib

import pytest

from hadoop_qjm.editlog.fs_edit_log_op import AddOp, PermissionStatus
from hadoop_qjm.namenode.fs_image_format import (
    IMAGE_MAGIC,
    InvalidImageException,
    parse_image,
    read_image,
    read_stored_md5,
    save_md5_file,
    serialize_image,
    write_image,
)
from hadoop_qjm.namenode.fs_namesystem import FSNamesystem


def _namespace() -> FSNamesystem:
    ns = FSNamesystem(fs_owner="hdfs")
    perm = PermissionStatus("alice", "staff", 0o640)
    # A file still under construction (an OP_ADD without its OP_CLOSE) survives the image.
    ns.loader.apply(
        AddOp(
            1,
            inode_id=16390,
            path="/uc",
            replication=2,
            mtime=5,
            atime=6,
            block_size=1024,
            permissions=perm,
            client_name="DFSClient_1",
            client_machine="10.1.1.1",
        )
    )
    ns.dir.root.mtime = 99
    ns.dir.root.atime = 7
    return ns


def _reseal(body: bytes) -> bytes:
    return body + struct.pack(">I", zlib.crc32(body))


def test_round_trip_keeps_everything() -> None:
    ns = _namespace()
    data = serialize_image(ns.dir, 17, 1234)
    assert data.startswith(IMAGE_MAGIC)
    image = parse_image(data)
    assert (image.txid, image.namespace_id, image.layout_version) == (17, 1234, -67)
    assert image.fs_dir.snapshot() == ns.snapshot()
    uc = image.fs_dir.get_inode("/uc")
    assert uc.under_construction and uc.client_machine == "10.1.1.1"


def test_a_rolling_upgrade_in_progress_is_kept_in_a_version_2_image() -> None:
    """Hadoop's NameSystemSection.rollingUpgradeStartTime: a checkpoint saved mid rolling
    upgrade carries its start; without one the image stays version 1, byte for byte."""
    ns = _namespace()
    plain = serialize_image(ns.dir, 17, 1234)
    assert struct.unpack_from(">I", plain, 8) == (1,)
    assert parse_image(plain).fs_dir.rolling_upgrade_start_time == 0
    ns.dir.rolling_upgrade_start_time = 1512607204230
    data = serialize_image(ns.dir, 17, 1234)
    assert struct.unpack_from(">I", data, 8) == (2,)
    assert data[44:52] == struct.pack(">q", 1512607204230) and len(data) == len(plain) + 8
    image = parse_image(data)
    assert image.fs_dir.rolling_upgrade_start_time == 1512607204230
    assert image.fs_dir.snapshot() == ns.snapshot()


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda d: d[:20], "too short"),
        (lambda d: b"NOTANIMG" + d[8:], "not an image file"),
        (lambda d: _reseal(d[:8] + struct.pack(">I", 3) + d[12:-4]), "format version 3"),
        (lambda d: d[:-5] + bytes([d[-5] ^ 1]) + d[-4:], "checksum mismatch"),
        (lambda d: _reseal(d[:-4] + b"x"), "unexpected bytes at the end"),
        (lambda d: _reseal(d[:-10]), "truncated"),
    ],
)
def test_a_bad_image_is_refused(mutate, message: str) -> None:
    data = serialize_image(_namespace().dir, 3, 1)
    with pytest.raises(InvalidImageException, match=message):
        parse_image(mutate(data))


def test_md5_file(tmp_path) -> None:
    image = tmp_path / "fsimage_0000000000000000003"
    md5 = write_image(image, serialize_image(_namespace().dir, 3, 1))
    with pytest.raises(InvalidImageException, match="No MD5 file found"):
        read_image(image)
    save_md5_file(image, md5)
    assert (tmp_path / (image.name + ".md5")).read_text() == f"{md5} *{image.name}\n"
    assert read_stored_md5(image) == md5
    assert read_image(image).txid == 3
    (tmp_path / (image.name + ".md5")).write_text(f"{md5} *fsimage_0000000000000000004\n")
    with pytest.raises(InvalidImageException, match="but we expected it to reference"):
        read_image(image)
    (tmp_path / (image.name + ".md5")).write_text("not an md5\n")
    with pytest.raises(InvalidImageException, match="does not match MD5 format"):
        read_image(image)
