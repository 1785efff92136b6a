"""Shared fixtures. Hadoop's test vectors are read from ../shared/testdata/hadoop/."""

from __future__ import annotations

import itertools
import logging
import os
import re
import signal
import tempfile
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HADOOP_QJM_SHARED", PROJECT.parent / "shared"))
HADOOP_TESTDATA = SHARED / "testdata" / "hadoop"


def _tmpfs_dir() -> str | None:
    """A private directory on /dev/shm (tmpfs) when there is one, else None."""
    shm = Path("/dev/shm")
    if not (shm.is_dir() and os.access(shm, os.W_OK)):
        return None
    path = shm / f"hadoop-qjm-tests-{os.getuid()}"
    path.mkdir(mode=0o700, exist_ok=True)
    return str(path)


def _interrupt(_signum: int, _frame: object) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the run at once
    raise KeyboardInterrupt


def pytest_configure(config: pytest.Config) -> None:
    """Scratch files go to tmpfs: ``tmp_path``, ``tempfile.mkdtemp()`` (a MiniJournalCluster
    without a ``base_dir``) and, through ``TMPDIR``, the processes the tests start. No test
    here measures the disk, and an fsync on tmpfs costs nothing, where the JournalNodes'
    fsyncs on a CI disk cost most of their tests' time. ``HADOOP_QJM_TEST_TMPDIR=<dir>``
    puts them elsewhere (e.g. on the disk)."""
    # A run killed from outside (a ``timeout``, a CI runner) ends as ^C does: the fixtures'
    # teardown stops the daemons they started, where the default ended pytest at once and
    # left them running.
    signal.signal(signal.SIGTERM, _interrupt)
    root = os.environ.get("HADOOP_QJM_TEST_TMPDIR") or _tmpfs_dir()
    if root:
        tempfile.tempdir = root
        os.environ["TMPDIR"] = root


#: Test files run by one xdist worker together, as if they were one file: each of them needs
#: the worker's SparkSession (tests/spark/conftest.py), a JVM that costs 20-50 s to start and
#: warm up on a loaded 2-core machine; spread over both workers, it was started twice.
ONE_WORKER_DIRS = ("tests/spark/",)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """``--dist loadfile`` (pyproject's addopts), with each of :data:`ONE_WORKER_DIRS` one
    unit of work instead of one per file; other modes are xdist's own."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    class LoadFileAndDirScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)
            return next((d for d in ONE_WORKER_DIRS if scope.startswith(d)), scope)

    return LoadFileAndDirScheduling(config, log)


@pytest.fixture(autouse=True)
def _root_logging_restored():
    """Each test leaves the root logger as it found it: a command or daemon run in-process
    (``main([...])``) configures logging for the process, and its handlers must not write
    into later tests' output."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
            handler.close()
    for handler in handlers:
        if handler not in root.handlers:
            root.addHandler(handler)
    root.setLevel(level)


@pytest.fixture(scope="session")
def hadoop_testdata() -> Path:
    if not (HADOOP_TESTDATA / "editsStored").exists():
        pytest.fail(f"Hadoop's test vectors are missing: expected them in {HADOOP_TESTDATA}")
    return HADOOP_TESTDATA


@pytest.fixture
def mjc():
    """Three in-process JournalNodes on 127.0.0.1 with the default configuration, their
    directories on tmpfs (see ``pytest_configure``). tests/ha overrides it with JournalNodes
    serving in-progress tailing."""
    from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster

    with MiniJournalCluster(3) as cluster:
        yield cluster


def _mini_zk_cluster(base_dir: Path, num_servers: int):
    """A started MiniZooKeeperCluster; a missing ZooKeeper fails the test (never skips) with
    the one-line install hint."""
    from hadoop_qjm.testing.mini_zk_cluster import MiniZooKeeperCluster, ZooKeeperNotFoundError

    try:
        return MiniZooKeeperCluster(base_dir, num_servers)
    except ZooKeeperNotFoundError as e:
        missing = str(e)
    pytest.fail(missing, pytrace=False)  # outside the except: no chained traceback


class ZooKeeperChroot:
    """A test's own namespace on a server that the module shares: :attr:`connect_string`
    ends with a chroot znode made for this test (``host:port/<test>``), so every client
    built from it (kazoo, ``ha.zookeeper.quorum``) sees a tree of its own, empty at the
    start. Everything else (``mode``, ``server_dir``…) is the shared cluster's."""

    def __init__(self, cluster, chroot: str) -> None:
        self.cluster = cluster
        self.chroot = chroot

    @property
    def connect_string(self) -> str:
        return f"{self.cluster.connect_string}{self.chroot}"

    def __getattr__(self, name: str):
        return getattr(self.cluster, name)


@pytest.fixture(scope="module")
def _module_zk_server(tmp_path_factory: pytest.TempPathFactory):
    """The module's one standalone ZooKeeper server: a JVM start costs seconds, so the
    tests of a module share it, each in its own chroot (see ``zk_server``)."""
    with _mini_zk_cluster(tmp_path_factory.mktemp("zk"), 1) as cluster:
        yield cluster


_chroots = itertools.count(1)


@pytest.fixture
def zk_server(request: pytest.FixtureRequest, tmp_path: Path):
    """A standalone ZooKeeper server (a JVM on 127.0.0.1) for the test.

    By default the module's shared server seen through a fresh chroot znode
    (:class:`ZooKeeperChroot`): the test starts from an empty tree, as on a server of its
    own. A test marked ``own_zookeeper`` (it kills or restarts the server, or looks at the
    server itself) gets a server of its own, shut down after the test."""
    if request.node.get_closest_marker("own_zookeeper"):
        with _mini_zk_cluster(tmp_path / "zk", 1) as cluster:
            yield cluster
        return
    from kazoo.client import KazooClient

    shared = request.getfixturevalue("_module_zk_server")
    if not shared.is_running(0):  # a test killed it against the rules: later tests still run
        shared.restart_server(0)
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", request.node.name)[:80]
    chroot = f"/{next(_chroots)}-{name}"
    client = KazooClient(hosts=shared.connect_string, timeout=10.0)
    client.start(timeout=30)
    try:
        client.create(chroot)
    finally:
        client.stop()
        client.close()
    yield ZooKeeperChroot(shared, chroot)
    if not shared.is_running(0):
        pytest.fail(
            f"{request.node.name} stopped the module's shared ZooKeeper: mark it own_zookeeper"
        )


@pytest.fixture
def zk_ensemble(tmp_path: Path):
    """A 3-server ZooKeeper ensemble (3 JVMs on 127.0.0.1) with a leader, shut down after."""
    with _mini_zk_cluster(tmp_path / "zk", 3) as cluster:
        yield cluster


#: FSNamesystemAuditLogger's fields, in its order.
AUDIT_FIELDS = ("allowed", "ugi", "ip", "cmd", "src", "dst", "perm", "proto")


class AuditLines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def parsed(self) -> list[dict[str, str]]:
        """Each line as a Hadoop audit-log parser reads it: tab-separated key=value."""
        rows = []
        for line in self.lines:
            pairs = [field.split("=", 1) for field in line.split("\t")]
            assert tuple(key for key, _ in pairs) == AUDIT_FIELDS, line
            rows.append(dict(pairs))
        return rows


@pytest.fixture
def audit():
    """The NameNode's audit lines (logger FSNamesystem.audit at INFO) while the test runs."""
    from hadoop_qjm.namenode.fs_namesystem_audit_logger import AUDIT_LOG

    handler = AuditLines()
    level = AUDIT_LOG.level
    AUDIT_LOG.addHandler(handler)
    AUDIT_LOG.setLevel(logging.INFO)
    yield handler
    AUDIT_LOG.removeHandler(handler)
    AUDIT_LOG.setLevel(level)
