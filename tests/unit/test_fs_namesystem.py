"""FSNamesystem: every operation's validation (Hadoop's exception types and messages), the ops
it logs, and the replay property: the logged ops, encoded and decoded as the edit log does,
rebuild exactly the live namespace (and so does the image format).

No threads, no disk: the edit log is a fake that frames each op with ``encode_op``.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hadoop_qjm.common.exceptions import (
    FileAlreadyExistsException,
    FileNotFoundException,
    IllegalArgumentException,
    IllegalStateException,
    InvalidPathException,
    IOException,
    ParentNotDirectoryException,
    PathComponentTooLongException,
    PathIsNotEmptyDirectoryException,
)
from hadoop_qjm.common.security.user_group_information import UserGroupInformation
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.fs_edit_log_op import (
    AddOp,
    CloseOp,
    DeleteOp,
    FSEditLogOpCodes,
    MkdirOp,
    PermissionStatus,
    RenameOldOp,
    RenameOp,
    SetOwnerOp,
    decode_op,
    encode_op,
)
from hadoop_qjm.namenode.fs_directory import ROOT_INODE_ID, is_valid_name
from hadoop_qjm.namenode.fs_edit_log_loader import EditLogApplyException, FSEditLogLoader
from hadoop_qjm.namenode.fs_image_format import parse_image, serialize_image
from hadoop_qjm.namenode.fs_namesystem import FSNamesystem


class RecordingEditLog:
    """Assigns txids and keeps each op's frame, as a real journal would store it."""

    def __init__(self) -> None:
        self.frames: list[bytes] = []
        self.txid = 0
        self.synced: list[int] = []

    def log_edit(self, op) -> int:
        self.txid += 1
        op.txid = self.txid
        self.frames.append(encode_op(op))
        return self.txid

    def log_sync(self, txid=None) -> None:
        self.synced.append(txid)

    def ops(self) -> list:
        return [decode_op(frame)[0] for frame in self.frames]


class Clock:
    def __init__(self, start: int = 1_700_000_000_000) -> None:
        self.now = start

    def __call__(self) -> int:
        self.now += 7
        return self.now


@pytest.fixture
def log() -> RecordingEditLog:
    return RecordingEditLog()


@pytest.fixture
def ns(log: RecordingEditLog) -> FSNamesystem:
    return FSNamesystem(edit_log=log, clock=Clock(), fs_owner="hdfs", supergroup="supergroup")


def replay(log: RecordingEditLog) -> FSNamesystem:
    fresh = FSNamesystem(fs_owner="hdfs", supergroup="supergroup")
    for op in log.ops():
        fresh.loader.apply(op)
    return fresh


def assert_replays(ns: FSNamesystem, log: RecordingEditLog) -> None:
    assert replay(log).snapshot() == ns.snapshot()
    image = parse_image(serialize_image(ns.dir, log.txid, 42))
    assert image.txid == log.txid and image.namespace_id == 42
    assert image.fs_dir.snapshot() == ns.snapshot()


# ---- paths ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, valid",
    [
        ("/", True),
        ("/a/b", True),
        ("/a/b/", True),
        ("a/b", False),
        ("", False),
        ("/a//b", False),
        ("/a/./b", False),
        ("/a/../b", False),
        ("/a:b", False),
        ("/a/\ud800", False),
    ],
)
def test_is_valid_name(path: str, valid: bool) -> None:
    assert is_valid_name(path) is valid


def _literal_is_valid_name(src: str) -> bool:
    """DFSUtil.isValidName read literally, component by component."""
    if not src.startswith("/") or any("\ud800" <= c <= "\udfff" for c in src):
        return False
    parts = src.split("/")
    for i, part in enumerate(parts):
        if part in (".", "..") or ":" in part or (not part and i not in (0, len(parts) - 1)):
            return False
    return True


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("/.:a\ud800\u00e9")), max_size=12))
def test_is_valid_name_against_its_literal_reading(path: str) -> None:
    """The fast check (string searches, a split only for a dot component) and the
    literal one agree on every path of these characters."""
    assert is_valid_name(path) is _literal_is_valid_name(path)


# ---- mkdirs --------------------------------------------------------------------------------------


def test_mkdirs_logs_one_mkdir_per_created_directory(ns, log) -> None:
    assert ns.mkdirs("/a/b/c", PermissionStatus("alice", None, 0o750)) is True
    ops = log.ops()
    assert [type(op) for op in ops] == [MkdirOp] * 3
    assert [op.path for op in ops] == ["/a", "/a/b", "/a/b/c"]
    assert [op.inode_id for op in ops] == [ROOT_INODE_ID + 1, ROOT_INODE_ID + 2, ROOT_INODE_ID + 3]
    # Implicit ancestors get u+wx (addImplicitUwx); the group is inherited from the root.
    assert [op.permissions.mode for op in ops] == [0o750 | 0o300, 0o750 | 0o300, 0o750]
    assert {op.permissions.group for op in ops} == {"supergroup"}
    assert {op.permissions.user for op in ops} == {"alice"}
    status = ns.get_file_info("/a/b/c")
    assert status.is_dir and status.owner == "alice" and status.permission == 0o750
    assert status.access_time == 0  # directories have no access time
    assert log.synced == [log.txid]
    assert_replays(ns, log)


def test_mkdirs_of_existing_directory_logs_nothing(ns, log) -> None:
    ns.mkdirs("/a")
    ns.mkdirs("/a/")
    ns.mkdirs("/")
    assert len(log.frames) == 1


def test_mkdirs_refuses_an_existing_file(ns, log) -> None:
    ns.create("/f")
    with pytest.raises(FileAlreadyExistsException, match="^Path is not a directory: /f$"):
        ns.mkdirs("/f")


def test_mkdirs_under_a_file_is_parent_not_directory(ns) -> None:
    ns.create("/f")
    with pytest.raises(ParentNotDirectoryException, match=r"^/f \(is not a directory\)$"):
        ns.mkdirs("/f/x/y")


def test_mkdirs_without_create_parent_needs_the_parent(ns, log) -> None:
    with pytest.raises(FileNotFoundException, match="^Parent directory doesn't exist: /a/b$"):
        ns.mkdirs("/a/b/c", create_parent=False)
    assert log.frames == []
    assert ns.mkdirs("/a", create_parent=False)


@pytest.mark.parametrize("path", ["a/b", "/a//b", "/a/./b", "/a/../b", "/x:y", ""])
def test_mkdirs_invalid_path(ns, path: str) -> None:
    with pytest.raises(InvalidPathException) as info:
        ns.mkdirs(path)
    assert str(info.value) == f"Invalid path name {path}"


def test_mkdirs_limits(ns) -> None:
    with pytest.raises(IOException, match=r"^mkdirs: Pathname too long\.  Limit 8000 characters"):
        ns.mkdirs("/" + "a" * 8000)
    with pytest.raises(
        PathComponentTooLongException,
        match="The maximum path component name limit of b{256} in directory /a is exceeded: "
        "limit=255 length=256",
    ):
        ns.mkdirs("/a/" + "b" * 256)
    assert ns.get_file_info("/a") is None  # nothing created when one component is refused


def test_group_is_inherited_from_the_parent(ns, log) -> None:
    ns.mkdirs("/g", PermissionStatus("alice", "staff", 0o755))
    ns.mkdirs("/g/sub", PermissionStatus("bob", None, 0o700))
    ns.create("/g/sub/f", PermissionStatus("bob", None, 0o600))
    assert ns.get_file_info("/g/sub").group == "staff"
    assert ns.get_file_info("/g/sub/f").group == "staff"
    assert_replays(ns, log)


# ---- create --------------------------------------------------------------------------------------


def test_create_logs_add_then_close(ns, log) -> None:
    status = ns.create("/d/f", 0o640, replication=2, block_size=1024, client_name="c1")
    ops = log.ops()
    assert [type(op) for op in ops] == [MkdirOp, AddOp, CloseOp]
    add, close = ops[1], ops[2]
    assert add.path == close.path == "/d/f"
    assert add.inode_id == status.file_id == ROOT_INODE_ID + 2
    assert close.inode_id == 0  # logCloseFile leaves it unset, as in Hadoop's editsStored
    assert (add.replication, add.block_size, add.client_name, add.overwrite) == (
        2,
        1024,
        "c1",
        False,
    )
    assert add.mtime == add.atime == close.mtime == close.atime
    assert ops[0].permissions.mode == 0o640 | 0o300  # the implicit parent
    assert (status.is_dir, status.length, status.replication, status.permission) == (
        False,
        0,
        2,
        0o640,
    )
    assert not ns.dir.get_inode("/d/f").under_construction
    assert_replays(ns, log)


def test_create_refusals(ns, log) -> None:
    ns.mkdirs("/d")
    ns.create("/f")
    with pytest.raises(FileAlreadyExistsException, match="^/d already exists as a directory$"):
        ns.create("/d")
    with pytest.raises(FileAlreadyExistsException, match="^/f for client 10.0.0.1 already exists$"):
        ns.create("/f", client_machine="10.0.0.1")
    with pytest.raises(ParentNotDirectoryException, match=r"^/f \(is not a directory\)$"):
        ns.create("/f/g")
    with pytest.raises(FileNotFoundException, match="^Parent directory doesn't exist: /x$"):
        ns.create("/x/y", create_parent=False)
    with pytest.raises(InvalidPathException, match="^Invalid path name /a//b$"):
        ns.create("/a//b")
    with pytest.raises(IOException, match=r"^create: Pathname too long"):
        ns.create("/" + "z" * 8001)
    with pytest.raises(IllegalArgumentException):
        ns.create("/r", replication=0)


def test_a_mode_is_checked_once_per_caller_and_refused_every_time() -> None:
    """A mode given as an int becomes one checked PermissionStatus per (caller, mode),
    kept; a bad mode (a bool, out of range) is refused on every call."""
    caller = [UserGroupInformation("hdfs")]
    ns = FSNamesystem(
        edit_log=RecordingEditLog(), clock=Clock(), fs_owner="hdfs", caller=lambda: caller[0]
    )
    ns.set_owner("/", "alice", None)
    caller[0] = UserGroupInformation("alice")
    ns.mkdirs("/a", 0o750)
    ns.mkdirs("/b", 0o750)
    assert [(n.user, n.mode) for n in (ns.dir.get_inode("/a"), ns.dir.get_inode("/b"))] == [
        ("alice", 0o750),
        ("alice", 0o750),
    ]
    for _ in range(2):
        with pytest.raises(IllegalArgumentException, match="^Invalid permission mode True$"):
            ns.mkdirs("/c", True)
        with pytest.raises(IllegalArgumentException, match="^Invalid permission mode 65536$"):
            ns.mkdirs("/c", 0o200000)
    assert ns.dir.get_inode("/c") is None


def test_create_overwrite_replaces_the_file(ns, log) -> None:
    first = ns.create("/f")
    second = ns.create("/f", overwrite=True)
    assert second.file_id != first.file_id
    add = log.ops()[-2]
    assert isinstance(add, AddOp) and add.overwrite
    assert_replays(ns, log)


# ---- delete --------------------------------------------------------------------------------------


def test_delete(ns, log) -> None:
    ns.mkdirs("/d/e")
    ns.create("/d/e/f")
    assert ns.delete("/nope", True) is False
    with pytest.raises(PathIsNotEmptyDirectoryException, match="^/d is non empty$"):
        ns.delete("/d", False)
    with pytest.raises(PathIsNotEmptyDirectoryException, match="^/ is non empty$"):
        ns.delete("/", False)
    assert ns.delete("/", True) is False  # the root is never deleted
    frames = len(log.frames)
    assert ns.delete("/d", True) is True
    assert len(log.frames) == frames + 1
    op = log.ops()[-1]
    assert isinstance(op, DeleteOp) and op.path == "/d"
    assert ns.get_file_info("/d") is None
    assert ns.get_file_info("/").modification_time == op.timestamp
    assert ns.files_total == 1
    assert_replays(ns, log)


def test_delete_under_a_file(ns) -> None:
    ns.create("/f")
    with pytest.raises(ParentNotDirectoryException):
        ns.delete("/f/x", True)


# ---- rename (ClientProtocol.rename, OP_RENAME_OLD) -----------------------------------------------


def test_rename_into_an_existing_directory(ns, log) -> None:
    ns.create("/f")
    ns.mkdirs("/d")
    assert ns.rename("/f", "/d") is True
    op = log.ops()[-1]
    assert isinstance(op, RenameOldOp)
    assert (op.src, op.dst) == ("/f", "/d/f")
    assert ns.get_file_info("/d/f") is not None and ns.get_file_info("/f") is None
    assert ns.get_file_info("/d").modification_time == op.timestamp
    assert_replays(ns, log)


def test_rename_failures_return_false_and_log_nothing(ns, log) -> None:
    ns.mkdirs("/a/b")
    ns.create("/f")
    ns.create("/g")
    ns.create("/a/f")
    before = len(log.frames)
    assert ns.rename("/missing", "/x") is False
    assert ns.rename("/", "/x") is False
    assert ns.rename("/f", "/g") is False  # the target exists
    assert ns.rename("/f", "/a") is False  # /a/f exists
    assert ns.rename("/f", "/no/such/parent") is False
    assert ns.rename("/a", "/a/b") is False  # into its own subtree
    assert len(log.frames) == before
    assert ns.rename("/f", "/f") is True  # onto itself: success, logged, no change
    assert len(log.frames) == before + 1
    assert_replays(ns, log)


def test_rename_invalid_destination(ns) -> None:
    ns.create("/f")
    with pytest.raises(IOException, match="^Invalid name: x$"):
        ns.rename("/f", "x")
    with pytest.raises(ParentNotDirectoryException, match=r"^/f \(is not a directory\)$"):
        ns.rename("/f", "/f/x")


# ---- rename2 (OP_RENAME) -------------------------------------------------------------------------


def test_rename2_messages(ns) -> None:
    ns.mkdirs("/d/sub")
    ns.mkdirs("/e")
    ns.create("/f")
    ns.create("/g")
    cases = [
        (("/missing", "/x"), FileNotFoundException, "rename source /missing is not found."),
        (("/", "/x"), IOException, "rename source cannot be the root"),
        (("/f", "/f"), FileAlreadyExistsException, "The source /f and destination /f are the same"),
        (
            ("/d", "/d/sub/x"),
            IOException,
            "Rename destination /d/sub/x is a directory or file under source /d",
        ),
        (("/f", "/e"), IOException, "Source /f and destination /e must both be directories"),
        (("/f", "/g"), FileAlreadyExistsException, "rename destination /g already exists"),
        (("/f", "/no/x"), FileNotFoundException, "rename destination parent /no/x not found."),
    ]
    for (src, dst), error, message in cases:
        with pytest.raises(error) as info:
            ns.rename2(src, dst)
        assert str(info.value) == message
    with pytest.raises(IOException, match="^rename destination directory is not empty: /d$"):
        ns.rename2("/e", "/d", overwrite=True)
    with pytest.raises(InvalidPathException, match="^Invalid path name Invalid name: rel$"):
        ns.rename2("/f", "rel")


def test_rename2_overwrite(ns, log) -> None:
    ns.create("/f")
    ns.create("/g")
    ns.rename2("/f", "/g", overwrite=True)
    op = log.ops()[-1]
    assert isinstance(op, RenameOp) and op.options == (1,)
    assert ns.get_file_info("/f") is None and ns.get_file_info("/g") is not None
    ns.mkdirs("/e")
    ns.mkdirs("/empty")
    ns.rename2("/e", "/empty", overwrite=True)
    ns.rename2("/empty", "/moved")
    assert log.ops()[-1].options == (0,)
    assert_replays(ns, log)


# ---- attributes ----------------------------------------------------------------------------------


def test_set_permission_owner_times(ns, log) -> None:
    ns.create("/f", PermissionStatus("alice", "g1", 0o644))
    ns.set_permission("/f", 0o1777)
    ns.set_owner("/f", "bob", None)
    ns.set_owner("/f", "", "g2")  # "" is "unchanged", as the edit log reads it back
    ns.set_times("/f", 123, -1)
    status = ns.get_file_info("/f")
    assert (status.permission, status.owner, status.group) == (0o1777, "bob", "g2")
    assert status.modification_time == 123 and status.access_time != -1
    ns.set_times("/f", -1, 456)
    assert ns.get_file_info("/f").access_time == 456
    setowner = log.ops()[-3]
    assert isinstance(setowner, SetOwnerOp) and setowner.username is None
    assert_replays(ns, log)


def test_attribute_errors(ns) -> None:
    with pytest.raises(FileNotFoundException, match="^File does not exist: /x$"):
        ns.set_permission("/x", 0o755)
    with pytest.raises(FileNotFoundException, match="^File does not exist: /x$"):
        ns.set_owner("/x", "u", "g")
    with pytest.raises(FileNotFoundException, match="^File/Directory /x does not exist.$"):
        ns.set_times("/x", 1, 1)
    ns.create("/f")
    with pytest.raises(IllegalArgumentException):
        ns.set_permission("/f", 0o10000)
    with pytest.raises(IllegalArgumentException):
        ns.set_owner("/f", "\udc00", None)
    with pytest.raises(IllegalArgumentException):
        ns.set_times("/f", 2**63, 0)


# ---- reads ---------------------------------------------------------------------------------------


def test_get_file_info_and_listing(ns) -> None:
    assert ns.get_file_info("/nope") is None
    root = ns.get_file_info("/")
    assert (root.file_id, root.owner, root.group, root.permission) == (
        ROOT_INODE_ID,
        "hdfs",
        "supergroup",
        0o755,
    )
    for name in ("b", "a", "c"):
        ns.create(f"/d/{name}")
    ns.mkdirs("/d/sub")
    listing = ns.get_listing("/d")
    assert [s.name for s in listing] == ["a", "b", "c", "sub"]
    assert [s.path for s in listing][0] == "/d/a"
    assert ns.get_file_info("/d").children_num == 4
    assert [s.name for s in ns.get_listing("/d", start_after="b")] == ["c", "sub"]
    assert [s.path for s in ns.get_listing("/d/a")] == ["/d/a"]  # a file lists as itself
    with pytest.raises(FileNotFoundException, match="^File /nope does not exist.$"):
        ns.get_listing("/nope")
    with pytest.raises(InvalidPathException, match="^Invalid path name Invalid file name: x$"):
        ns.get_file_info("x")
    with pytest.raises(ParentNotDirectoryException):
        ns.get_file_info("/d/a/b")


def test_mutations_need_an_edit_log() -> None:
    ns = FSNamesystem(fs_owner="hdfs")
    with pytest.raises(IllegalStateException):
        ns.mkdirs("/a")
    assert ns.get_file_info("/a") is None


# ---- the loader ----------------------------------------------------------------------------------


class ListStream:
    def __init__(self, ops) -> None:
        self.ops = list(ops)
        self.name = "list"

    def read_op(self):
        return self.ops.pop(0) if self.ops else None


def test_load_edits_checks_contiguity(ns, log) -> None:
    ns.mkdirs("/a/b/c")
    ops = log.ops()
    fresh = FSNamesystem(fs_owner="hdfs")
    with pytest.raises(
        IOException, match="gap in the edit log.  We expected txid 2, but got txid 3"
    ):
        fresh.load_edits([ListStream([ops[0], ops[2]])], 1)
    fresh = FSNamesystem(fs_owner="hdfs")
    # A txid seen again (two copies that overlap) is refused, as in Hadoop, not skipped:
    # the second copy's txn 1 might not be the first's.
    with pytest.raises(
        IOException, match="out-of-order edit in the edit log.  We expected txid 3, but got txid 1"
    ):
        fresh.load_edits([ListStream(ops[:2]), ListStream(ops)], 1)
    fresh = FSNamesystem(fs_owner="hdfs")
    assert fresh.load_edits([ListStream(ops[:2]), ListStream(ops[2:])], 1) == 3
    assert fresh.snapshot() == ns.snapshot()


def test_edits_of_a_newer_layout_are_refused(ns, log) -> None:
    """An old NameNode (-67) does not apply edits an upgraded one wrote (-68)."""
    ns.mkdirs("/a")
    newer = ListStream(log.ops())
    newer.layout_version = -68
    with pytest.raises(
        IOException, match=r"Unexpected version of the file system log file: -68\. Current"
    ):
        FSNamesystem(fs_owner="hdfs").load_edits([newer], 1)
    upgraded = Configuration()
    upgraded.set("dfs.namenode.testing.future-layout", "true")
    newer = ListStream(log.ops())
    newer.layout_version = -68
    assert FSNamesystem(upgraded, fs_owner="hdfs").load_edits([newer], 1) >= 1


def test_loader_refuses_what_it_cannot_apply() -> None:
    ns = FSNamesystem(fs_owner="hdfs")
    loader: FSEditLogLoader = ns.loader
    perm = PermissionStatus("u", "g", 0o755)
    with pytest.raises(EditLogApplyException, match="parent /a is missing"):
        loader.apply(MkdirOp(1, inode_id=16390, path="/a/b", timestamp=1, permissions=perm))
    with pytest.raises(FileNotFoundException):
        loader.apply(
            CloseOp(
                2,
                inode_id=0,
                path="/f",
                replication=1,
                mtime=1,
                atime=1,
                block_size=1,
                permissions=perm,
            )
        )
    from hadoop_qjm.editlog.fs_edit_log_op import OpaqueOp

    with pytest.raises(EditLogApplyException, match="does not model"):
        loader.apply(OpaqueOp(FSEditLogOpCodes.OP_SET_QUOTA, 3, body=b""))
    # A MKDIR of an existing directory and a DELETE of a missing path are ignored (Hadoop's
    # *ForEditLog semantics), but the inode counter still moves.
    loader.apply(MkdirOp(4, inode_id=16400, path="/a", timestamp=1, permissions=perm))
    loader.apply(MkdirOp(5, inode_id=16401, path="/a", timestamp=1, permissions=perm))
    loader.apply(DeleteOp(6, path="/nope", timestamp=1))
    assert ns.last_inode_id == 16401 and ns.files_total == 2


# ---- the replay property -------------------------------------------------------------------------

_NAMES = st.sampled_from(["a", "b", "c", "dd", "é", "日本"])
_PATHS = st.lists(_NAMES, min_size=0, max_size=4).map(lambda parts: "/" + "/".join(parts))
_MODES = st.integers(min_value=0, max_value=0o7777)
_PRINCIPALS = st.sampled_from(["alice", "bob", "", None])
_TIMES = st.one_of(st.just(-1), st.integers(min_value=0, max_value=2**40))

_OPERATIONS = st.one_of(
    st.tuples(st.just("mkdirs"), _PATHS, _MODES, st.booleans()),
    st.tuples(st.just("create"), _PATHS, _MODES, st.booleans(), st.booleans()),
    st.tuples(st.just("delete"), _PATHS, st.booleans()),
    st.tuples(st.just("rename"), _PATHS, _PATHS),
    st.tuples(st.just("rename2"), _PATHS, _PATHS, st.booleans()),
    st.tuples(st.just("set_permission"), _PATHS, _MODES),
    st.tuples(st.just("set_owner"), _PATHS, _PRINCIPALS, _PRINCIPALS),
    st.tuples(st.just("set_times"), _PATHS, _TIMES, _TIMES),
)


def _run(ns: FSNamesystem, operation: tuple) -> None:
    name, *args = operation
    if name == "mkdirs":
        path, mode, parents = args
        ns.mkdirs(path, mode, create_parent=parents)
    elif name == "create":
        path, mode, overwrite, parents = args
        ns.create(path, mode, overwrite, create_parent=parents)
    else:
        getattr(ns, name)(*args)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_OPERATIONS, min_size=1, max_size=40))
def test_replayed_namespace_equals_the_live_one(operations: list[tuple]) -> None:
    log = RecordingEditLog()
    ns = FSNamesystem(edit_log=log, clock=Clock(), fs_owner="hdfs", supergroup="supergroup")
    for operation in operations:
        before = len(log.frames)
        try:
            _run(ns, operation)
        except (IOException, IllegalArgumentException):
            # A refused request changes nothing and logs nothing.
            assert len(log.frames) == before
    assert_replays(ns, log)
