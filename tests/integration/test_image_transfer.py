"""TransferFsImage: landing an image on disk (receive, commit, crash on either side of the
rename), and PUT /imagetransfer on a NameNode daemon over real HTTP on loopback — every
status it answers, what lands, and what retention purges."""

from __future__ import annotations

import hashlib
import http.client
import io
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from hadoop_qjm.common.durable import AFTER_RENAME, BEFORE_RENAME
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.fs_image_format import read_image, read_stored_md5, serialize_image
from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.name_node_core import format_namenode
from hadoop_qjm.namenode.nn_storage import (
    NameNodeDirType,
    NNStorage,
    NNStorageDirectory,
    checkpoint_file_name,
    image_file_name,
)
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.namenode.protocol.messages import HAServiceState
from hadoop_qjm.namenode.transfer_fs_image import (
    HttpPutFailedException,
    ImageTransferDataException,
    commit_checkpoint,
    download_image,
    image_transfer_put_path,
    receive_checkpoint,
    upload_image_to_active,
)
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from tests.integration.namenode_support import Terminations, nn_conf

pytestmark = pytest.mark.timeout(60)

JID = "imagetransfer"


def files(d: Path) -> set[str]:
    return {p.name for p in d.iterdir()}


# ---- landing bytes on disk -----------------------------------------------------------------------
def test_receive_and_commit_into_every_directory(tmp_path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    for d in dirs:
        d.mkdir()
    data = bytes(range(256)) * 1000  # several chunks
    md5 = hashlib.md5(data).hexdigest()
    calls: list[tuple[int, int]] = []
    progress = lambda *call: calls.append(call)  # noqa: E731
    assert (
        receive_checkpoint(io.BytesIO(data + b"extra"), len(data), md5, dirs, 42, progress=progress)
        == md5
    )
    # progress(received, length) after every chunk.
    assert len(calls) > 1 and calls[-1] == (len(data), len(data))
    assert [r for r, _ in calls] == sorted({r for r, _ in calls})
    for d in dirs:
        assert files(d) == {checkpoint_file_name(42)}
    commit_checkpoint(dirs, 42, md5)
    for d in dirs:
        assert files(d) == {image_file_name(42), image_file_name(42) + ".md5"}
        assert (d / image_file_name(42)).read_bytes() == data
        assert read_stored_md5(d / image_file_name(42)) == md5


@pytest.mark.parametrize("wrong", ["short", "md5"])
def test_a_bad_transfer_leaves_nothing(tmp_path, wrong) -> None:
    data = b"x" * 100_000
    stream = io.BytesIO(data[:-1] if wrong == "short" else data)
    md5 = hashlib.md5(data if wrong == "short" else b"other").hexdigest()
    with pytest.raises(ImageTransferDataException) as raised:
        receive_checkpoint(stream, len(data), md5, [tmp_path], 7)
    expected = "is not of the advertised size" if wrong == "short" else "does not match"
    assert expected in str(raised.value)
    assert files(tmp_path) == set()


def test_exclusive_receive_refuses_a_checkpoint_being_written(tmp_path) -> None:
    (tmp_path / checkpoint_file_name(5)).write_bytes(b"someone else's")
    with pytest.raises(OSError, match="already exists"):
        receive_checkpoint(io.BytesIO(b"abc"), 3, None, [tmp_path], 5, exclusive=True)
    assert (tmp_path / checkpoint_file_name(5)).read_bytes() == b"someone else's"


@pytest.mark.parametrize("point", [BEFORE_RENAME, AFTER_RENAME])
def test_a_crash_around_the_commit_point(tmp_path, point) -> None:
    """Before the rename: start-up deletes the .md5 and the ckpt (the image never was).
    After it: the image is complete and verifiable."""

    class Crash(BaseException):
        pass

    sd = NNStorageDirectory(tmp_path / "name", NameNodeDirType.IMAGE_AND_EDITS)
    sd.current.mkdir(parents=True)
    data = b"image bytes" * 1000
    md5 = receive_checkpoint(io.BytesIO(data), len(data), None, [sd.current], 9)

    def hook(at: str, path: Path) -> None:
        if at == point:
            raise Crash(path)

    with pytest.raises(Crash):
        commit_checkpoint([sd.current], 9, md5, hook=hook)
    NNStorage([sd]).delete_checkpoint_leftovers()
    if point == BEFORE_RENAME:
        assert files(sd.current) == set()
    else:
        assert files(sd.current) == {image_file_name(9), image_file_name(9) + ".md5"}
        assert hashlib.md5((sd.current / image_file_name(9)).read_bytes()).hexdigest() == md5


# ---- PUT /imagetransfer on a daemon --------------------------------------------------------------
class Active:
    """A formatted, started (non-HA, hence active) NameNode; images are made in ``work``."""

    def __init__(self, base: Path, mjc: MiniJournalCluster) -> None:
        self.conf = nn_conf(
            base,
            shared=mjc.quorum_journal_uri(JID),
            **{
                "dfs.namenode.rpc-address": "127.0.0.1:0",
                "dfs.namenode.http-address": "127.0.0.1:0",
                "dfs.namenode.num.checkpoints.retained": 2,
            },
        )
        format_namenode(self.conf, fs_owner="hdfs")
        self.nn = NameNode(self.conf, terminate=Terminations(), fs_owner="hdfs")
        self.nn.start()
        self.proxy = NameNodeProxy(*self.nn.rpc_address, timeout_s=30)
        self.current = base / "name" / "current"
        self.work = base / "standby"
        self.work.mkdir()
        self.url = f"http://127.0.0.1:{self.nn.http_address[1]}"
        self.storage_info = self.nn.core.ns_info.storage_info()

    def make_image(self, txid: int) -> Path:
        """An image of the current namespace named fsimage_<txid>, with its .md5, as a
        standby's checkpoint would be."""
        core = self.nn.core
        with core.namesystem.lock:
            data = serialize_image(core.namesystem.dir, txid, core.ns_info.namespace_id)
        md5 = receive_checkpoint(io.BytesIO(data), len(data), None, [self.work], txid)
        commit_checkpoint([self.work], txid, md5)
        return self.work / image_file_name(txid)

    def upload(self, txid: int, image: Path | None = None, storage_info=None) -> None:
        upload_image_to_active(
            self.url,
            storage_info or self.storage_info,
            txid,
            image or self.make_image(txid),
            timeout_s=30,
        )

    def images(self) -> list[int]:
        names = (re.fullmatch(r"fsimage_(\d{19})", p.name) for p in self.current.iterdir())
        return sorted(int(m.group(1)) for m in names if m)

    def stop(self) -> None:
        self.proxy.close()
        self.nn.stop()


@pytest.fixture
def active(tmp_path) -> Iterator[Active]:
    with MiniJournalCluster(3) as mjc:
        a = Active(tmp_path, mjc)
        try:
            yield a
        finally:
            a.stop()


def put(active: Active, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", active.nn.http_address[1], timeout=30)
    try:
        conn.request("PUT", path, body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def test_upload_lands_the_image_and_purges_per_retention(active: Active) -> None:
    assert active.images() == [0]
    active.proxy.mkdirs("/a")
    t1 = active.proxy.get_transaction_id()
    active.upload(t1)
    assert active.images() == [0, t1]
    landed = active.current / image_file_name(t1)
    assert landed.read_bytes() == (active.work / image_file_name(t1)).read_bytes()
    assert read_stored_md5(landed) == read_stored_md5(active.work / image_file_name(t1))
    assert read_image(landed).txid == t1
    assert active.proxy.get_most_recent_checkpoint_txid() == t1
    assert not list(active.current.glob("fsimage.ckpt_*"))

    active.proxy.mkdirs("/b")
    t2 = active.proxy.get_transaction_id()
    active.upload(t2)
    # dfs.namenode.num.checkpoints.retained = 2: fsimage_0 and its .md5 are gone.
    assert active.images() == [t1, t2]
    assert not (active.current / (image_file_name(0) + ".md5")).exists()
    assert active.proxy.get_most_recent_checkpoint_txid() == t2
    # The image serves as the newest one over GET too.
    newest = active.current / image_file_name(t2)
    dl = active.work / "dl"
    dl.mkdir()
    assert download_image(active.url, t2, active.storage_info, [dl], 30) == read_stored_md5(newest)
    assert (dl / image_file_name(t2)).read_bytes() == newest.read_bytes()


def test_409_for_an_image_not_newer_than_the_newest(active: Active) -> None:
    active.proxy.mkdirs("/a")
    t1 = active.proxy.get_transaction_id()
    image = active.make_image(t1)
    active.upload(t1, image)
    for txid in (t1, t1 - 1, 0):
        older = image if txid == t1 else active.make_image(txid)
        with pytest.raises(HttpPutFailedException) as raised:
            active.upload(txid, older)
        assert raised.value.status == 409
        assert "already uploaded a checkpoint for txid" in str(raised.value)
    assert active.images() == [0, t1]


def test_417_on_a_standby_403_for_another_namespace_an_observer_stores_it(
    active: Active,
) -> None:
    """A standby answers 417, as Hadoop's ImageServlet (TransferResult.
    NOT_ACTIVE_NAMENODE_FAILURE, which a standby checkpointer tells from a refusal); an
    observer stores the image like the active (HDFS-12979)."""
    image = active.make_image(5)
    other = StorageInfo(
        active.storage_info.layout_version,
        active.storage_info.namespace_id + 1,
        active.storage_info.cluster_id,
    )
    with pytest.raises(HttpPutFailedException) as raised:
        active.upload(5, image, storage_info=other)
    assert raised.value.status == 403 and "has storage info" in str(raised.value)

    active.nn.state = HAServiceState.STANDBY
    try:
        with pytest.raises(HttpPutFailedException) as raised:
            active.upload(5, image)
    finally:
        active.nn.state = HAServiceState.ACTIVE
    assert raised.value.status == 417 and "State: standby" in str(raised.value)
    assert active.images() == [0]
    active.nn.state = HAServiceState.OBSERVER
    try:
        active.upload(5, image)
    finally:
        active.nn.state = HAServiceState.ACTIVE
    assert active.images() == [0, 5]


def test_400_for_a_wrong_md5_or_malformed_parameters(active: Active) -> None:
    image = active.make_image(6).read_bytes()
    path = image_transfer_put_path(6, active.storage_info)
    status, body = put(active, path, image, {"X-MD5-Digest": "0" * 32})
    assert status == 400 and "does not match advertised digest" in body
    assert active.images() == [0] and not list(active.current.glob("fsimage.ckpt_*"))
    si = active.storage_info.to_colon_separated_string()
    for bad_path, headers, message in [
        (f"/imagetransfer?storageInfo={si}", {}, "Invalid txid parameter"),
        (f"/imagetransfer?txid=x&storageInfo={si}", {}, "Invalid txid parameter"),
        ("/imagetransfer?txid=6", {}, "no storageInfo"),
        ("/imagetransfer?txid=6&storageInfo=nonsense", {}, "Invalid storage info"),
        (f"/imagetransfer?txid=6&storageInfo={si}&imageFile=EDITS", {}, "Unsupported imageFile"),
        (path, {"X-MD5-Digest": "not-an-md5"}, "Invalid X-MD5-Digest"),
    ]:
        status, body = put(active, bad_path, image, headers)
        assert (status, message in body) == (400, True), (bad_path, body)
    status, body = put(active, path, b"", {})
    assert status == 400 and "Invalid Content-Length" in body
    assert active.images() == [0]
    # PUT elsewhere is not allowed; GET still serves.
    conn = http.client.HTTPConnection("127.0.0.1", active.nn.http_address[1], timeout=30)
    try:
        conn.request("PUT", "/jmx", body=b"x")
        response = conn.getresponse()
        assert response.status == 405 and response.getheader("Allow") == "GET, HEAD"
    finally:
        conn.close()


def test_409_while_another_upload_of_that_txid_is_in_progress(active: Active) -> None:
    image = active.make_image(8).read_bytes()
    md5 = hashlib.md5(image).hexdigest()
    ckpt = active.current / checkpoint_file_name(8)
    # A slow checkpointer: headers and half the image, then a pause.
    slow = socket.create_connection(("127.0.0.1", active.nn.http_address[1]), timeout=30)
    try:
        head = (
            f"PUT {image_transfer_put_path(8, active.storage_info)} HTTP/1.1\r\n"
            f"Host: 127.0.0.1\r\nContent-Length: {len(image)}\r\nX-MD5-Digest: {md5}\r\n\r\n"
        )
        slow.sendall(head.encode() + image[: len(image) // 2])
        wait_until(ckpt.exists, what="the first upload to start")
        for txid in (8, 7):
            with pytest.raises(HttpPutFailedException) as raised:
                active.upload(txid, active.make_image(txid) if txid == 7 else None)
            assert raised.value.status == 409
            assert "Another checkpointer is already in the process of uploading" in str(
                raised.value
            )
        slow.sendall(image[len(image) // 2 :])
        reply = slow.makefile("rb").readline()
        assert reply.startswith(b"HTTP/1.1 200"), reply
    finally:
        slow.close()
    assert active.images() == [0, 8] and not ckpt.exists()


def test_an_upload_cut_short_leaves_no_checkpoint(active: Active) -> None:
    image = active.make_image(9).read_bytes()
    ckpt = active.current / checkpoint_file_name(9)
    with socket.create_connection(("127.0.0.1", active.nn.http_address[1]), timeout=30) as s:
        head = (
            f"PUT {image_transfer_put_path(9, active.storage_info)} HTTP/1.1\r\n"
            f"Host: 127.0.0.1\r\nContent-Length: {len(image)}\r\n\r\n"
        )
        s.sendall(head.encode() + image[:100])
        wait_until(ckpt.exists, what="the upload to start")
    wait_until(lambda: not ckpt.exists(), what="the partial checkpoint to be removed")
    assert active.images() == [0]
    active.upload(9)  # the txid is free again
    assert active.images() == [0, 9]


def test_a_save_never_truncates_an_upload_of_the_same_checkpoint(tmp_path) -> None:
    """The active's own save of fsimage_N while an upload of fsimage_N is being written:
    the save gives up (its directories stay in service), the upload's file is untouched."""
    from hadoop_qjm.common.exceptions import IOException as _IOException
    from hadoop_qjm.namenode.fs_image import FSImage
    from hadoop_qjm.namenode.fs_image_format import CheckpointInProgressException
    from hadoop_qjm.namenode.fs_namesystem import FSNamesystem
    from hadoop_qjm.namenode.name_node_core import format_namenode
    from hadoop_qjm.namenode.nn_storage import NameNodeDirs, NNStorage, checkpoint_file_name

    conf = Configuration()
    conf.set("dfs.namenode.name.dir", f"{tmp_path / 'a'},{tmp_path / 'b'}")
    format_namenode(conf, fs_owner="hdfs")
    storage = NNStorage.from_conf(conf, NameNodeDirs.from_conf(conf))
    try:
        storage.recover_storage_dirs()
        image = FSImage(conf, storage)
        upload = tmp_path / "b" / "current" / checkpoint_file_name(7)
        upload.write_bytes(b"an upload being written")
        with pytest.raises(CheckpointInProgressException):
            image.save_image_in_all_dirs(FSNamesystem(conf, fs_owner="hdfs"), 7)
        assert upload.read_bytes() == b"an upload being written"
        assert not (tmp_path / "a" / "current" / checkpoint_file_name(7)).exists()
        assert len(storage.image_dirs()) == 2
        assert issubclass(CheckpointInProgressException, _IOException)
    finally:
        storage.close()
