"""storage.py: StorageDirectory paths, states, VERSION and the in-process side of the lock."""

from __future__ import annotations

import fcntl
import gc
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hadoop_qjm.common.exceptions import InconsistentFSStateException, IOException
from hadoop_qjm.common.storage import (
    NODE_TYPE_JOURNAL_NODE,
    NODE_TYPE_NAME_NODE,
    NamespaceInfo,
    StorageDirectory,
    StorageInfo,
    StorageState,
    process_name,
)

NS_INFO = NamespaceInfo(12345, "mycluster", "my-bp", ctime=0, layout_version=-67)
FIXED_CLOCK = 1_347_397_731.0

# A VERSION file as Hadoop's JournalNode writes it (Properties.store, Hashtable order).
HADOOP_JN_VERSION = (
    "#Tue Sep 11 14:08:51 PDT 2012\n"
    "namespaceID=1733337616\n"
    "clusterID=CID-3d5ae6c1-5b93-4be7-8e6a-2f3b1c0a0e9f\n"
    "cTime=0\n"
    "storageType=JOURNAL_NODE\n"
    "layoutVersion=-63\n"
)


@pytest.fixture
def make_sd(tmp_path: Path) -> Iterator[Callable[..., StorageDirectory]]:
    """Build StorageDirectory objects and unlock every one of them at teardown."""
    made: list[StorageDirectory] = []

    def make(root: Path | None = None, storage_type: str = NODE_TYPE_JOURNAL_NODE, **kw: object):
        sd = StorageDirectory(
            root or tmp_path / "jn", storage_type, clock=lambda: FIXED_CLOCK, **kw
        )
        made.append(sd)
        return sd

    yield make
    for sd in made:
        sd.unlock()


def test_paths(tmp_path: Path) -> None:
    sd = StorageDirectory(tmp_path / "j")
    root = tmp_path / "j"
    assert sd.root == root
    assert sd.current == root / "current"
    assert sd.version_file == root / "current" / "VERSION"
    assert sd.previous == root / "previous"
    assert sd.previous_version_file == root / "previous" / "VERSION"
    assert sd.previous_tmp == root / "previous.tmp"
    assert sd.removed_tmp == root / "removed.tmp"
    assert sd.finalized_tmp == root / "finalized.tmp"
    assert sd.last_checkpoint_tmp == root / "lastcheckpoint.tmp"
    assert sd.previous_checkpoint == root / "previous.checkpoint"
    assert sd.lock_file == root / "in_use.lock"
    assert str(sd) == f"Storage Directory {root}"


# -- VERSION ---------------------------------------------------------------------


def test_format_then_analyze_is_normal(make_sd) -> None:
    sd = make_sd()
    sd.format(NS_INFO)
    assert sd.analyze_storage() is StorageState.NORMAL
    assert sd.is_locked
    assert sd.read_storage_info() == NS_INFO.storage_info()


def test_version_file_content_matches_hadoop(make_sd) -> None:
    sd = make_sd()
    sd.format(NS_INFO)
    lines = sd.version_file.read_text("ascii").splitlines()
    assert lines[0].startswith("#") and lines[0].endswith("2012")
    assert lines[1:] == [
        "namespaceID=12345",
        "clusterID=mycluster",
        "cTime=0",
        "storageType=JOURNAL_NODE",
        "layoutVersion=-67",
    ]
    assert sorted(p.name for p in sd.current.iterdir()) == ["VERSION"]


def test_name_node_version_has_block_pool(make_sd) -> None:
    sd = make_sd(storage_type=NODE_TYPE_NAME_NODE)
    sd.format(NS_INFO)
    props = sd.read_properties()
    assert props["storageType"] == "NAME_NODE"
    assert props["blockpoolID"] == "my-bp"
    info = sd.read_storage_info()
    assert isinstance(info, NamespaceInfo)
    assert info == NamespaceInfo(12345, "mycluster", "my-bp", ctime=0, layout_version=-67)


def test_write_properties_extra_and_escaping_round_trip(make_sd) -> None:
    sd = make_sd()
    sd.format(NS_INFO)
    info = StorageInfo(-60, -7, "CID=with:odd#chars! and \u00e9", 99)
    sd.write_properties(info, {"extraKey": "a=b", "cTime": "5"})
    props = sd.read_properties()
    assert props["extraKey"] == "a=b"
    assert props["clusterID"] == "CID=with:odd#chars! and \u00e9"
    assert "clusterID=CID\\=with\\:odd\\#chars\\! and \\u00E9" in sd.version_file.read_text("ascii")
    assert sd.read_storage_info() == StorageInfo(-60, -7, info.cluster_id, 5)
    assert sorted(p.name for p in sd.current.iterdir()) == ["VERSION"]


def test_reads_version_written_by_hadoop(make_sd) -> None:
    sd = make_sd()
    sd.current.mkdir(parents=True)
    sd.version_file.write_text(HADOOP_JN_VERSION, "ascii")
    assert sd.analyze_storage() is StorageState.NORMAL
    assert sd.read_storage_info() == StorageInfo(
        -63, 1733337616, "CID-3d5ae6c1-5b93-4be7-8e6a-2f3b1c0a0e9f", 0
    )


def _write_version(sd: StorageDirectory, drop: str | None = None, **overrides: str) -> None:
    props = {
        "namespaceID": "1",
        "clusterID": "c",
        "cTime": "0",
        "storageType": "JOURNAL_NODE",
        "layoutVersion": "-67",
    }
    props.update(overrides)
    if drop:
        del props[drop]
    sd.current.mkdir(parents=True, exist_ok=True)
    sd.version_file.write_text("".join(f"{k}={v}\n" for k, v in props.items()), "ascii")


@pytest.mark.parametrize(
    "key", ["namespaceID", "clusterID", "cTime", "storageType", "layoutVersion"]
)
def test_missing_key_is_inconsistent(make_sd, key: str) -> None:
    sd = make_sd()
    _write_version(sd, drop=key)
    with pytest.raises(InconsistentFSStateException) as info:
        sd.read_storage_info()
    message = str(info.value)
    assert f"file {sd.version_file} has {key} missing." in message
    assert "is in an inconsistent state" in message


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("namespaceID", "abc"),
        ("namespaceID", ""),
        ("namespaceID", "1.5"),
        ("namespaceID", str(2**31)),
        ("layoutVersion", "-67x"),
        ("cTime", str(2**63)),
        ("cTime", "1 "),
    ],
)
def test_non_integer_is_inconsistent(make_sd, key: str, value: str) -> None:
    sd = make_sd()
    _write_version(sd, **{key: value})
    with pytest.raises(InconsistentFSStateException, match=f"has an invalid {key}") as info:
        sd.read_storage_info()
    assert str(sd.version_file) in str(info.value)


def test_wrong_storage_type_is_inconsistent(make_sd) -> None:
    sd = make_sd()
    _write_version(sd, storageType="NAME_NODE")
    with pytest.raises(InconsistentFSStateException, match="node type is incompatible"):
        sd.read_storage_info()
    _write_version(sd, storageType="TOASTER")
    with pytest.raises(InconsistentFSStateException, match="invalid storageType"):
        sd.read_storage_info()


def test_malformed_escape_is_inconsistent(make_sd) -> None:
    sd = make_sd()
    _write_version(sd, clusterID="\\u00zz")
    with pytest.raises(InconsistentFSStateException, match="malformed"):
        sd.read_properties()


def test_missing_version_file_is_io_error(make_sd) -> None:
    sd = make_sd()
    with pytest.raises(IOException, match="Cannot read"):
        sd.read_storage_info()


def test_signed_numbers_and_large_ctime(make_sd) -> None:
    sd = make_sd()
    _write_version(sd, namespaceID="-2147483648", cTime="+9223372036854775807")
    info = sd.read_storage_info()
    assert info.namespace_id == -(2**31)
    assert info.ctime == 2**63 - 1


def test_failed_version_write_keeps_old_version(make_sd) -> None:
    def failing_fsync(fd: int) -> None:
        raise OSError(5, "injected")

    make_sd().format(NS_INFO)
    sd = make_sd(fsync=failing_fsync)
    with pytest.raises(IOException, match="injected"):
        sd.write_properties(StorageInfo(-1, 999, "other", 0))
    assert sd.read_storage_info() == NS_INFO.storage_info()
    assert sorted(p.name for p in sd.current.iterdir()) == ["VERSION"]


# -- clear_directory and format ---------------------------------------------------


def test_clear_directory_applies_permission_and_empties(make_sd) -> None:
    sd = make_sd(dir_perm=0o750)
    (sd.current / "sub").mkdir(parents=True)
    (sd.current / "sub" / "f").write_bytes(b"x")
    (sd.current / "edits_inprogress_0000000000000000001").write_bytes(b"x")
    sd.clear_directory()
    assert list(sd.current.iterdir()) == []
    assert stat.S_IMODE(os.stat(sd.current).st_mode) == 0o750


def test_format_default_permission_is_700(make_sd) -> None:
    sd = make_sd()
    sd.format(NS_INFO)
    assert stat.S_IMODE(os.stat(sd.current).st_mode) == 0o700


def test_format_replaces_previous_content(make_sd) -> None:
    sd = make_sd()
    sd.format(NS_INFO)
    (sd.current / "last-promised-epoch").write_bytes(b"3\n")
    sd.format(NamespaceInfo(2, "other", "bp"))
    assert sorted(p.name for p in sd.current.iterdir()) == ["VERSION"]
    assert sd.read_storage_info().namespace_id == 2


def test_has_some_data(make_sd, tmp_path: Path) -> None:
    sd = make_sd()
    assert not sd.has_some_data()
    sd.root.mkdir()
    assert not sd.has_some_data()
    sd.format(NS_INFO)
    assert sd.has_some_data()
    file_root = tmp_path / "a-file"
    file_root.write_bytes(b"")
    assert make_sd(file_root).has_some_data()


# -- storage states --------------------------------------------------------------

STATE_TABLE = [
    # (directories under root, VERSION in current/, expected state)
    ((), False, StorageState.NOT_FORMATTED),
    (("current",), False, StorageState.NOT_FORMATTED),
    ((), True, StorageState.NORMAL),
    (("previous",), True, StorageState.NORMAL),
    (("previous.checkpoint",), True, StorageState.NORMAL),
    (("previous.tmp",), True, StorageState.COMPLETE_UPGRADE),
    (("previous.tmp",), False, StorageState.RECOVER_UPGRADE),
    (("finalized.tmp",), True, StorageState.COMPLETE_FINALIZE),
    (("finalized.tmp",), False, StorageState.COMPLETE_FINALIZE),
    (("removed.tmp",), True, StorageState.COMPLETE_ROLLBACK),
    (("removed.tmp", "previous"), False, StorageState.RECOVER_ROLLBACK),
    (("lastcheckpoint.tmp",), True, StorageState.COMPLETE_CHECKPOINT),
    (("lastcheckpoint.tmp",), False, StorageState.RECOVER_CHECKPOINT),
    (("lastcheckpoint.tmp", "previous"), False, StorageState.RECOVER_CHECKPOINT),
]

INCONSISTENT_TABLE = [
    (("previous",), False, "version file in current directory is missing."),
    (("previous.tmp", "removed.tmp"), True, "too many temporary directories."),
    (("finalized.tmp", "lastcheckpoint.tmp"), False, "too many temporary directories."),
    (("finalized.tmp", "previous"), True, "previous and finalized.tmp cannot exist together."),
    (("previous.tmp", "previous"), True, "previous and previous.tmp cannot exist together."),
    (("removed.tmp", "previous"), True, "one and only one directory current or previous"),
    (("removed.tmp",), False, "one and only one directory current or previous"),
]


def _build(sd: StorageDirectory, dirs: tuple[str, ...], with_version: bool) -> None:
    sd.root.mkdir(parents=True)
    for name in dirs:
        (sd.root / name).mkdir()
    if with_version:
        _write_version(sd)


@pytest.mark.parametrize(("dirs", "with_version", "expected"), STATE_TABLE)
def test_analyze_storage_states(
    make_sd, dirs: tuple[str, ...], with_version: bool, expected: StorageState
) -> None:
    sd = make_sd()
    _build(sd, dirs, with_version)
    assert sd.analyze_storage() is expected
    assert sd.is_locked


def test_every_state_is_covered() -> None:
    covered = {row[2] for row in STATE_TABLE} | {StorageState.NON_EXISTENT}
    assert covered == set(StorageState)


@pytest.mark.parametrize(("dirs", "with_version", "message"), INCONSISTENT_TABLE)
def test_analyze_storage_inconsistent(
    make_sd, dirs: tuple[str, ...], with_version: bool, message: str
) -> None:
    sd = make_sd()
    _build(sd, dirs, with_version)
    with pytest.raises(InconsistentFSStateException, match="inconsistent state") as info:
        sd.analyze_storage()
    assert message in str(info.value)
    assert os.path.realpath(sd.root) in str(info.value)


def test_analyze_non_existent(make_sd, tmp_path: Path) -> None:
    sd = make_sd()
    assert sd.analyze_storage() is StorageState.NON_EXISTENT
    assert not sd.root.exists()
    assert not sd.is_locked
    file_root = tmp_path / "a-file"
    file_root.write_bytes(b"")
    assert make_sd(file_root).analyze_storage() is StorageState.NON_EXISTENT


def test_analyze_for_format_creates_root_and_locks(make_sd) -> None:
    sd = make_sd()
    assert sd.analyze_storage(startup_option_format=True) is StorageState.NOT_FORMATTED
    assert sd.root.is_dir()
    assert sd.is_locked
    sd.format(NS_INFO)
    # Already formatted, but formatting analysis always says NOT_FORMATTED.
    assert sd.analyze_storage(startup_option_format=True) is StorageState.NOT_FORMATTED


def test_analyze_without_lock(make_sd) -> None:
    sd = make_sd()
    sd.format(NS_INFO)
    holder = make_sd()
    holder.lock()
    assert sd.analyze_storage(lock=False) is StorageState.NORMAL
    assert not sd.is_locked
    with pytest.raises(IOException, match="already locked"):
        sd.analyze_storage()


# -- the lock, within one process ----------------------------------------------------


def test_lock_writes_process_name_and_unlock_deletes(make_sd) -> None:
    sd = make_sd()
    sd.root.mkdir()
    sd.lock()
    assert sd.is_locked
    assert sd.lock_file.read_text() == process_name()
    sd.unlock()
    assert not sd.is_locked
    assert not sd.lock_file.exists()
    sd.unlock()  # no-op


def test_second_directory_in_same_process_cannot_lock(make_sd) -> None:
    first, second = make_sd(), make_sd()
    first.root.mkdir()
    first.lock()
    expected = (
        f"Cannot lock storage {first.root}. The directory is already locked by {process_name()}"
    )
    with pytest.raises(IOException) as info:
        second.lock()
    assert str(info.value) == expected
    assert not second.is_locked
    # Locking twice through the same object fails too, and keeps the first lock.
    with pytest.raises(IOException, match="already locked"):
        first.lock()
    assert first.is_locked
    with pytest.raises(IOException, match="already locked"):
        second.lock()
    first.unlock()
    second.lock()
    assert second.is_locked


def test_stale_lock_file_is_reused(make_sd) -> None:
    sd = make_sd()
    sd.root.mkdir()
    sd.lock_file.write_text("999999@long-gone-host-with-a-long-name")
    sd.lock()
    assert sd.lock_file.read_text() == process_name()


def test_garbage_collected_directory_releases_lock(make_sd, tmp_path: Path) -> None:
    root = tmp_path / "jn"
    root.mkdir()
    doomed = StorageDirectory(root)
    doomed.lock()
    del doomed
    gc.collect()
    sd = make_sd(root)
    sd.lock()
    assert sd.is_locked


def test_lock_on_missing_root_fails(make_sd) -> None:
    with pytest.raises(IOException, match="Cannot open lock file"):
        make_sd().lock()


def test_lock_retries_when_lock_file_is_replaced_under_it(
    make_sd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """unlock() deletes the file while locked; a racing locker must not lock the orphan."""
    sd = make_sd()
    sd.root.mkdir()
    real_flock = fcntl.flock
    calls: list[int] = []

    def flock_after_replacing_file(fd: int, operation: int) -> None:
        if not calls:
            # Another process unlinks the file we opened and a third creates a new one.
            sd.lock_file.unlink()
            sd.lock_file.write_bytes(b"")
        calls.append(operation)
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", flock_after_replacing_file)
    sd.lock()
    monkeypatch.undo()
    assert len(calls) == 2
    with pytest.raises(IOException, match="already locked"):
        make_sd().lock()
