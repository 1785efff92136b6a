"""durable.py: atomic replace, PersistentLongFile, BestEffortLongFile."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from hadoop_qjm.common.durable import (
    AFTER_RENAME,
    BEFORE_RENAME,
    AtomicFileWriter,
    BestEffortLongFile,
    PersistentLongFile,
    atomic_replace,
    fsync_dir,
    make_dirs_durable,
    unlink_durable,
)
from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException
from hadoop_qjm.common.storage import NODE_TYPE_JOURNAL_NODE, StorageDirectory
from hadoop_qjm.common.storage_info import NamespaceInfo, StorageInfo
from hadoop_qjm.qjournal.server.jn_storage import JNStorage
from hadoop_qjm.qjournal.server.journal_dirs import create_journal_dir


class FailingFsync:
    """Counts fsync calls and raises EIO on the ``fail_on``-th one (1-based)."""

    def __init__(self, fail_on: int) -> None:
        self.fail_on = fail_on
        self.calls = 0

    def __call__(self, fd: int) -> None:
        self.calls += 1
        if self.calls == self.fail_on:
            raise OSError(errno.EIO, "injected fsync failure")
        os.fsync(fd)


class Crash(Exception):
    pass


def tmp_of(path: Path) -> Path:
    return path.with_name(path.name + ".tmp")


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


# -- atomic replace ------------------------------------------------------------


def test_atomic_replace_creates_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "f"
    atomic_replace(target, b"one")
    assert target.read_bytes() == b"one"
    atomic_replace(target, b"two, longer")
    assert target.read_bytes() == b"two, longer"
    assert listing(tmp_path) == ["f"]


def test_failed_fsync_of_temp_file_keeps_old_content(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    fsync = FailingFsync(fail_on=1)
    with pytest.raises(IOException, match="injected fsync failure") as info:
        atomic_replace(target, b"new content", fsync=fsync)
    assert str(tmp_of(target)) in str(info.value)
    assert target.read_bytes() == b"old"
    assert not tmp_of(target).exists()
    assert listing(tmp_path) == ["f"]


def test_failed_directory_fsync_raises_after_the_commit_point(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    fsync = FailingFsync(fail_on=2)  # 1: the temp file, 2: the directory
    with pytest.raises(IOException, match="Failed to fsync directory"):
        atomic_replace(target, b"new", fsync=fsync)
    # The rename happened: the new content is visible, but the caller still hears of the error.
    assert target.read_bytes() == b"new"
    assert not tmp_of(target).exists()


def test_exception_inside_writer_block_keeps_old_content(tmp_path: Path) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    with pytest.raises(Crash), AtomicFileWriter(target) as out:
        out.write(b"half of the ")
        assert tmp_of(target).read_bytes() == b"half of the "
        raise Crash()
    assert target.read_bytes() == b"old"
    assert not tmp_of(target).exists()


def test_absent_target_stays_absent_when_write_fails(tmp_path: Path) -> None:
    target = tmp_path / "f"
    with pytest.raises(IOException):
        atomic_replace(target, b"x", fsync=FailingFsync(fail_on=1))
    assert listing(tmp_path) == []


@pytest.mark.parametrize(
    ("crash_point", "expected"), [(BEFORE_RENAME, b"old"), (AFTER_RENAME, b"new")]
)
def test_fault_hooks_on_both_sides_of_the_rename(
    tmp_path: Path, crash_point: str, expected: bytes
) -> None:
    target = tmp_path / "f"
    target.write_bytes(b"old")
    seen: list[str] = []

    def hook(point: str, path: Path) -> None:
        assert path == target
        seen.append(point)
        if point == crash_point:
            raise Crash(point)

    with pytest.raises(Crash):
        atomic_replace(target, b"new", hook=hook)
    assert target.read_bytes() == expected
    assert not tmp_of(target).exists()
    assert seen[-1] == crash_point


def test_hooks_called_in_order_on_success(tmp_path: Path) -> None:
    seen: list[str] = []
    atomic_replace(tmp_path / "f", b"x", hook=lambda point, _path: seen.append(point))
    assert seen == [BEFORE_RENAME, AFTER_RENAME]


def test_stale_temp_file_is_overwritten(tmp_path: Path) -> None:
    target = tmp_path / "f"
    tmp_of(target).write_bytes(b"garbage left by a crashed writer, long")
    atomic_replace(target, b"fresh")
    assert target.read_bytes() == b"fresh"
    assert listing(tmp_path) == ["f"]


def test_writer_cannot_be_reused(tmp_path: Path) -> None:
    writer = AtomicFileWriter(tmp_path / "f")
    with writer:
        writer.write(b"a")
    with pytest.raises(IOException):
        writer.write(b"b")
    with pytest.raises(IOException):
        writer.open()


def test_fsync_dir(tmp_path: Path) -> None:
    fsync = FailingFsync(fail_on=99)
    fsync_dir(tmp_path, fsync=fsync)
    assert fsync.calls == 1
    with pytest.raises(IOException, match="injected"):
        fsync_dir(tmp_path, fsync=FailingFsync(fail_on=1))
    with pytest.raises(IOException):
        fsync_dir(tmp_path / "missing")


# -- PersistentLongFile ----------------------------------------------------------


def test_persistent_long_file_absent_reads_default(tmp_path: Path) -> None:
    f = PersistentLongFile(tmp_path / "last-promised-epoch", 0)
    assert f.get() == 0
    assert not (tmp_path / "last-promised-epoch").exists()


def test_persistent_long_file_round_trip_and_format(tmp_path: Path) -> None:
    path = tmp_path / "last-writer-epoch"
    f = PersistentLongFile(path, 0)
    f.set(42)
    assert path.read_bytes() == b"42\n"
    assert f.get() == 42
    assert PersistentLongFile(path, 0).get() == 42
    f.set(-(2**63))
    assert PersistentLongFile(path, 7).get() == -(2**63)
    assert listing(tmp_path) == ["last-writer-epoch"]


def test_persistent_long_file_reads_hadoop_written_text(tmp_path: Path) -> None:
    path = tmp_path / "e"
    for text, expected in [(b"5\n", 5), (b"5", 5), (b"+5\r\n", 5), (b"-3\nignored\n", -3)]:
        path.write_bytes(text)
        assert PersistentLongFile.read_file(path, 0) == expected


@pytest.mark.parametrize("content", [b"", b"\n", b"abc\n", b" 5\n", b"5 \n", b"1_000\n", b"9" * 20])
def test_persistent_long_file_rejects_garbage(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "e"
    path.write_bytes(content)
    with pytest.raises(IOException, match=str(path)):
        PersistentLongFile(path, 0).get()


def test_persistent_long_file_is_cached(tmp_path: Path) -> None:
    path = tmp_path / "e"
    f = PersistentLongFile(path, 0)
    f.set(3)
    path.write_bytes(b"99\n")  # changed behind its back: the cached value wins
    assert f.get() == 3


def test_persistent_long_file_skips_rewrite_of_same_value(tmp_path: Path) -> None:
    path = tmp_path / "e"
    fsync = FailingFsync(fail_on=99)
    f = PersistentLongFile(path, 0, fsync=fsync)
    f.set(3)
    calls = fsync.calls
    f.set(3)
    assert fsync.calls == calls


def test_persistent_long_file_failed_set_keeps_old_value(tmp_path: Path) -> None:
    path = tmp_path / "e"
    PersistentLongFile(path, 0).set(1)
    f = PersistentLongFile(path, 0, fsync=FailingFsync(fail_on=1))
    assert f.get() == 1
    with pytest.raises(IOException, match="injected"):
        f.set(2)
    assert f.get() == 1
    assert path.read_bytes() == b"1\n"
    assert not tmp_of(path).exists()


def test_persistent_long_file_rejects_values_java_cannot_hold(tmp_path: Path) -> None:
    f = PersistentLongFile(tmp_path / "e", 0)
    with pytest.raises(IllegalArgumentException):
        f.set(2**63)
    with pytest.raises(IllegalArgumentException):
        f.set(True)


# -- BestEffortLongFile ----------------------------------------------------------


def test_best_effort_absent_reads_default_and_creates_empty_file(tmp_path: Path) -> None:
    path = tmp_path / "committed-txid"
    with BestEffortLongFile(path, -12345) as f:
        assert f.get() == -12345
    assert path.read_bytes() == b""
    with BestEffortLongFile(path, -12345) as f:
        assert f.get() == -12345


def test_best_effort_round_trip_big_endian(tmp_path: Path) -> None:
    path = tmp_path / "committed-txid"
    with BestEffortLongFile(path, -12345) as f:
        f.set(0x0102030405060708)
        assert f.get() == 0x0102030405060708
        assert path.read_bytes() == bytes([1, 2, 3, 4, 5, 6, 7, 8])
        f.set(-2)
        assert path.read_bytes() == b"\xff" * 7 + b"\xfe"
    with BestEffortLongFile(path, 0) as f:
        assert f.get() == -2


def test_best_effort_never_fsyncs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_fsync(fd: int) -> None:
        raise AssertionError("BestEffortLongFile must not fsync")

    monkeypatch.setattr(os, "fsync", no_fsync)
    monkeypatch.setattr(os, "fdatasync", no_fsync)
    with BestEffortLongFile(tmp_path / "c", 0) as f:
        f.set(5)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_best_effort_set_lazily_writes_at_most_once_per_interval(tmp_path: Path) -> None:
    path = tmp_path / "committed-txid"
    clock = _Clock()
    with BestEffortLongFile(path, -12345, lazy_interval_s=1.0, clock=clock) as f:
        f.set_lazily(5)  # the first write is due at once
        assert path.read_bytes() == (5).to_bytes(8, "big")
        clock.now += 0.5
        f.set_lazily(6)
        f.set_lazily(7)
        assert f.get() == 7  # the newest value, though the file still holds 5
        assert path.read_bytes() == (5).to_bytes(8, "big")
        clock.now += 0.5  # the interval has passed since the write of 5
        f.set_lazily(8)
        assert path.read_bytes() == (8).to_bytes(8, "big")
        clock.now += 0.25
        f.set_lazily(9)
        assert path.read_bytes() == (8).to_bytes(8, "big")
        f.flush()
        assert path.read_bytes() == (9).to_bytes(8, "big")
        path.write_bytes((99).to_bytes(8, "big"))  # a write would replace this
        f.flush()  # nothing held back: no write
        assert path.read_bytes() == (99).to_bytes(8, "big")
        f.set_lazily(10)
    # close() wrote the value held back
    assert path.read_bytes() == (10).to_bytes(8, "big")
    with BestEffortLongFile(path, 0) as f:
        assert f.get() == 10


def test_best_effort_set_lazily_on_a_closed_file_writes_at_once(tmp_path: Path) -> None:
    """A value is held back only over a file already read: on a closed one, set_lazily
    opens it and writes, so the file's older value can never replace the new one."""
    path = tmp_path / "c"
    path.write_bytes((3).to_bytes(8, "big"))
    clock = _Clock()
    f = BestEffortLongFile(path, 0, lazy_interval_s=1.0, clock=clock)
    f.set_lazily(4)
    f.close()
    clock.now += 0.25  # within the interval, but the file is closed
    f.set_lazily(5)
    assert path.read_bytes() == (5).to_bytes(8, "big")
    clock.now += 0.25
    f.set_lazily(6)  # open now: held back
    assert f.get() == 6
    assert path.read_bytes() == (5).to_bytes(8, "big")
    f.close()
    assert path.read_bytes() == (6).to_bytes(8, "big")


def test_best_effort_close_closes_the_descriptor_when_the_write_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = _Clock()
    f = BestEffortLongFile(tmp_path / "c", 0, lazy_interval_s=1.0, clock=clock)
    f.set_lazily(1)
    f.set_lazily(2)  # held back
    fd = f._lazy_open()

    def failing_pwrite(*args: object) -> int:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "pwrite", failing_pwrite)
    with pytest.raises(IOException, match="Failed to write"):
        f.close()
    monkeypatch.undo()
    with pytest.raises(OSError):
        os.fstat(fd)  # closed
    assert BestEffortLongFile(tmp_path / "c", 0).get() == 1  # the held-back value is lost


def test_best_effort_close_without_flush_drops_the_held_back_value(tmp_path: Path) -> None:
    clock = _Clock()
    f = BestEffortLongFile(tmp_path / "c", 0, lazy_interval_s=1.0, clock=clock)
    f.set_lazily(1)
    f.set_lazily(2)  # held back
    f.close(flush=False)
    with BestEffortLongFile(tmp_path / "c", 0) as again:
        assert again.get() == 1


def test_best_effort_set_lazily_rejects_what_set_rejects(tmp_path: Path) -> None:
    clock = _Clock()
    with BestEffortLongFile(tmp_path / "c", 0, lazy_interval_s=0.1, clock=clock) as f:
        f.set_lazily(1)
        with pytest.raises(IllegalArgumentException):
            f.set_lazily(2**63)  # held back or not, never taken
        assert f.get() == 1


@pytest.mark.parametrize("length", [1, 7, 9, 16])
def test_best_effort_bad_length(tmp_path: Path, length: int) -> None:
    path = tmp_path / "committed-txid"
    path.write_bytes(b"\0" * length)
    f = BestEffortLongFile(path, 0)
    with pytest.raises(IOException, match=f"File {path} had invalid length: {length}"):
        f.get()
    with pytest.raises(IOException):
        f.set(1)
    f.close()


def test_best_effort_close_then_reopen_rereads(tmp_path: Path) -> None:
    path = tmp_path / "c"
    f = BestEffortLongFile(path, 0)
    f.set(10)
    f.close()
    f.close()  # idempotent
    path.write_bytes((77).to_bytes(8, "big"))
    assert f.get() == 77
    f.close()


def test_best_effort_rejects_out_of_range(tmp_path: Path) -> None:
    with BestEffortLongFile(tmp_path / "c", 0) as f, pytest.raises(IllegalArgumentException):
        f.set(-(2**63) - 1)


# -- directory entries made durable (issue 33, item 4) ---------------------------------


class RecordingFsync:
    """Records the path of every file or directory fsynced (through /proc/self/fd)."""

    def __init__(self) -> None:
        self.paths: list[Path] = []

    def __call__(self, fd: int) -> None:
        self.paths.append(Path(os.readlink(f"/proc/self/fd/{fd}")))
        os.fsync(fd)


def test_make_dirs_durable_fsyncs_the_parent_of_each_created_directory(tmp_path: Path) -> None:
    fsync = RecordingFsync()
    make_dirs_durable(tmp_path / "a" / "b" / "c", fsync=fsync)
    assert (tmp_path / "a" / "b" / "c").is_dir()
    assert fsync.paths == [tmp_path, tmp_path / "a", tmp_path / "a" / "b"]
    make_dirs_durable(tmp_path / "a" / "b" / "c", fsync=fsync)  # exists: nothing to do
    assert len(fsync.paths) == 3


def test_unlink_durable_fsyncs_the_directory_after_the_unlinks(tmp_path: Path) -> None:
    for name in ("1", "2"):
        (tmp_path / name).write_bytes(b"x")
    fsync = RecordingFsync()
    failures = unlink_durable([tmp_path / "1", tmp_path / "2", tmp_path / "absent"], fsync=fsync)
    assert failures == []
    assert listing(tmp_path) == []
    assert fsync.paths == [tmp_path]


def test_a_formatted_storage_root_is_durable_in_its_parent(tmp_path: Path) -> None:
    """Format creates <edits dir>/<jid>: the edits dir's entry for it is fsynced."""
    fsync = RecordingFsync()
    sd = StorageDirectory(tmp_path / "edits" / "jid", NODE_TYPE_JOURNAL_NODE, fsync=fsync)
    try:
        sd.analyze_storage(startup_option_format=True)
        sd.format(StorageInfo(-67, 12345, "cid", 0))
    finally:
        sd.unlock()
    created = fsync.paths.index(tmp_path / "edits")
    assert fsync.paths[created - 1] == tmp_path  # "edits" in tmp_path, then "jid" in edits


def test_the_journal_node_edits_dir_is_durable_when_created(tmp_path: Path) -> None:
    fsync = RecordingFsync()
    create_journal_dir(tmp_path / "jn" / "edits", fsync=fsync)
    assert fsync.paths == [tmp_path, tmp_path / "jn"]


def test_purging_paxos_records_fsyncs_the_paxos_dir(tmp_path: Path) -> None:
    fsync = RecordingFsync()
    storage = JNStorage(None, tmp_path / "jid", fsync=fsync)
    try:
        storage.format(NamespaceInfo(12345, "cid", "bp", 0))
        for txid in (1, 5, 9):
            storage.paxos_file(txid).write_bytes(b"record")
        fsync.paths.clear()
        storage.purge_data_older_than(6)
    finally:
        storage.close()
    assert sorted(p.name for p in storage.paxos_dir.iterdir()) == ["9"]
    assert storage.paxos_dir in fsync.paths


def test_a_new_segment_superseding_a_recovery_fsyncs_the_paxos_dir(tmp_path, monkeypatch) -> None:
    """startLogSegment deletes the paxos record of its txid before it acknowledges."""
    from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
    from hadoop_qjm.conf import Configuration
    from hadoop_qjm.qjournal.server import journal_recovery
    from hadoop_qjm.qjournal.server.journal import Journal
    from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, make_request

    journal = Journal(Configuration(), tmp_path / JID, JID)
    try:
        journal.format(FAKE_NSINFO)
        journal.new_epoch(FAKE_NSINFO, 1)
        journal.storage.paxos_file(1).write_bytes(b"an old decision")
        synced: list[Path] = []
        # The paxos record is deleted by journal_recovery.purge_paxos_decision.
        monkeypatch.setattr(journal_recovery, "fsync_dir", lambda path, **kw: synced.append(path))
        journal.start_log_segment(make_request(1), 1, CURRENT_LAYOUT_VERSION)
    finally:
        journal.close()
    assert not journal.storage.paxos_file(1).exists()
    assert journal.storage.paxos_dir in synced
