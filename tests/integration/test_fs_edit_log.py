"""FSEditLog over real journals: group commit, journal failures, rolls (HDFS-1073 §1, §3).

The shared journal is a MiniJournalCluster (three in-process JournalNodes on loopback);
local edits are FileJournalManagers in a temp dir.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator

import pytest

from hadoop_qjm.common.exceptions import ExitException, IllegalStateException, IOException
from hadoop_qjm.editlog.file_journal_manager import FileJournalManager
from hadoop_qjm.editlog.fs_edit_log_op import (
    EndLogSegmentOp,
    MkdirOp,
    StartLogSegmentOp,
)
from hadoop_qjm.namenode.fs_edit_log import FSEditLog
from hadoop_qjm.namenode.journal_set import JournalSet, are_resources_available
from hadoop_qjm.namenode.name_node_core import NameNodeCore, format_namenode
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from tests.integration.namenode_support import (
    FakeJournal,
    Terminations,
    nn_conf,
    read_ops,
    start_nn,
    wait_for_journal_nodes,
)

THREADS = 32
#: Enough that the 32 threads keep overlapping (about 13 txns a sync, the assertion wants 4).
MKDIRS_PER_THREAD = 250


@pytest.fixture(scope="module")
def cluster() -> Iterator[MiniJournalCluster]:
    with MiniJournalCluster(3) as mjc:
        yield mjc


def _contiguous(ops: list) -> list[int]:
    txids = [op.txid for op in ops]
    assert txids == list(range(1, len(txids) + 1)), "txids have a gap or a duplicate"
    return txids


def test_group_commit_many_threads(cluster, tmp_path) -> None:
    jid = "group-commit"
    conf = nn_conf(tmp_path, shared=cluster.quorum_journal_uri(jid))
    format_namenode(conf)
    nn = start_nn(conf)
    ns, edit_log = nn.namesystem, nn.edit_log
    base = edit_log.stats()
    errors: list[BaseException] = []

    def handler(i: int) -> None:
        try:
            ns.mkdirs(f"/t{i}")
            for j in range(MKDIRS_PER_THREAD):
                ns.mkdirs(f"/t{i}/d{j}")
                # mkdirs returned: this thread's edit must already be durable everywhere.
                assert edit_log.synced_txid >= edit_log.my_last_txid > 0
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=handler, args=(i,)) for i in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    stats = edit_log.stats()
    txns = stats.txns - base.txns
    syncs = stats.syncs - base.syncs
    mkdirs = THREADS * (MKDIRS_PER_THREAD + 1)
    assert txns == mkdirs
    print(
        f"\ngroup commit: {txns} txns in {syncs} syncs = {txns / syncs:.1f} txns/sync "
        f"({THREADS} threads)"
    )
    assert syncs * 4 < txns, "group commit did not batch"
    snapshot = ns.snapshot()
    # The last quorum call returned with a majority: let the third node finish what it
    # was sent, so that no file is being written or renamed while it is read below.
    wait_for_journal_nodes(nn)
    nn.close()

    # Every txid once, in order, on the local journal and on a quorum of JournalNodes (a
    # node outside the last quorum may miss the tail, never a txid in the middle).
    local = read_ops(tmp_path / "name" / "current")
    txids = _contiguous(local)
    paths = [op.path for op in local if isinstance(op, MkdirOp)]
    assert len(paths) == len(set(paths)) == mkdirs
    complete = 0
    for i in range(cluster.num_journal_nodes):
        on_node = [op.txid for op in read_ops(cluster.current_dir(i, jid), in_progress_ok=True)]
        assert on_node == txids[: len(on_node)]
        complete += on_node == txids
    assert complete >= 2

    nn = start_nn(conf)
    try:
        assert nn.namesystem.snapshot() == snapshot
    finally:
        nn.close()


def test_losing_the_required_journal_terminates(tmp_path) -> None:
    with MiniJournalCluster(3) as mjc:
        conf = nn_conf(tmp_path, shared=mjc.quorum_journal_uri("required"))
        format_namenode(conf)
        terminations = Terminations()
        nn = start_nn(conf, terminations)
        try:
            nn.namesystem.mkdirs("/ok")
            mjc.stop_journal_node(0)
            mjc.stop_journal_node(1)
            with pytest.raises(
                ExitException, match="Could not sync enough journals to persistent storage"
            ):
                nn.namesystem.mkdirs("/lost")
            assert len(terminations.calls) == 1
            status, message = terminations.calls[0]
            assert status == 1
            assert message.startswith("Could not sync enough journals to persistent storage")
            # The edit log is dead: later calls fail the same way, without a second exit.
            with pytest.raises(ExitException, match="Could not sync enough journals"):
                nn.namesystem.mkdirs("/later")
            assert len(terminations.calls) == 1
        finally:
            nn.abort()


def test_a_failed_optional_journal_is_disabled_until_the_next_roll(tmp_path) -> None:
    fake = FakeJournal("fake://optional")
    conf = nn_conf(tmp_path, edits=("name", "fake://optional"))
    format_namenode(conf, journal_factory=lambda c, u, n: FakeJournal(u))
    terminations = Terminations()
    nn = start_nn(conf, terminations, journal_factory=lambda c, u, n: fake)
    try:
        nn.namesystem.mkdirs("/a")
        fake.fail_flush = True
        nn.namesystem.mkdirs("/b")  # the local journal is enough: no termination
        jas = next(j for j in nn.edit_log.journal_set.journals if j.manager is fake)
        assert jas.disabled and "injected flush failure" in str(jas.last_error)
        assert terminations.calls == []
        fake.fail_flush = False
        nn.namesystem.mkdirs("/c")
        assert max(fake.txids) < nn.edit_log.last_written_txid  # still left out
        next_segment = nn.roll_edit_log()
        assert not jas.disabled  # a new segment gives it another chance (HDFS-1073 §3.1)
        nn.namesystem.mkdirs("/d")
        assert fake.txids[-2:] == [next_segment, next_segment + 1]
    finally:
        nn.close()


def nn_with_fake_journals(tmp_path, *fakes: FakeJournal) -> tuple[NameNodeCore, Terminations]:
    """A NameNode writing to its local edits dir and to ``fakes``; the last one required."""
    conf = nn_conf(
        tmp_path,
        edits=("name", *(fake.uri for fake in fakes)),
        **{"dfs.namenode.edits.dir.required": fakes[-1].uri},
    )
    format_namenode(conf, journal_factory=lambda c, u, n: FakeJournal(u))
    terminations = Terminations()
    by_uri = {fake.uri: fake for fake in fakes}
    return start_nn(conf, terminations, journal_factory=lambda c, u, n: by_uri[u]), terminations


def test_a_failed_required_journal_terminates_even_with_local_copies(tmp_path) -> None:
    fake = FakeJournal("fake://required")
    nn, terminations = nn_with_fake_journals(tmp_path, fake)
    try:
        fake.fail_flush = True
        with pytest.raises(ExitException, match="Could not sync enough journals"):
            nn.namesystem.mkdirs("/a")
        assert len(terminations.calls) == 1
        assert fake.aborts >= 1  # every stream was aborted
    finally:
        nn.abort()


@pytest.mark.parametrize("bug", [False, True])
def test_a_journal_failure_is_logged_with_a_stack_trace_only_when_it_is_a_bug(
    tmp_path, caplog: pytest.LogCaptureFixture, bug: bool
) -> None:
    # An I/O failure's message names it (a closed JournalNode's printed ~30 lines of
    # traceback before the one-line error); anything else is a bug worth its trace.
    fake = FakeJournal("fake://required")
    nn, _ = nn_with_fake_journals(tmp_path, fake)
    try:
        if bug:
            fake.on_flush = lambda: 1 / 0
        else:
            fake.fail_flush = True
        with caplog.at_level("ERROR"), pytest.raises(ExitException):
            nn.namesystem.mkdirs("/a")
        records = [r for r in caplog.records if r.name.startswith("hadoop_qjm.namenode")]
        failed = [r for r in records if "failed for required journal" in r.getMessage()]
        assert failed and all(r.levelname in ("ERROR", "CRITICAL") for r in failed)
        cause = "division by zero" if bug else "injected flush failure"
        assert cause in failed[0].getMessage()
        traced = [r for r in records if r.exc_info is not None]
        assert traced == ([failed[0]] if bug else [])  # a bug's trace once, where it failed
    finally:
        nn.abort()


def _die_in_another_thread(edit_log: FSEditLog) -> None:
    """What another thread's failed required journal does: the log dies (terminate, every
    stream aborted); returns once it has."""

    def die() -> None:
        with edit_log._cond, contextlib.suppress(ExitException):
            edit_log._die("a required journal failed in another thread")

    thread = threading.Thread(target=die)
    thread.start()
    thread.join(10)


def test_a_flush_that_outlived_the_log_acknowledges_nothing(tmp_path) -> None:
    """The log died in another thread just as this flush reached the required journal,
    which still took the batch: the flush returns normally, but the sync must not count."""
    fake = FakeJournal("fake://required")
    nn, terminations = nn_with_fake_journals(tmp_path, fake)
    try:
        nn.namesystem.mkdirs("/ok")
        synced = nn.edit_log.synced_txid
        fake.on_flush = lambda: _die_in_another_thread(nn.edit_log)
        with pytest.raises(ExitException, match="failed in another thread"):
            nn.namesystem.mkdirs("/lost")
        assert max(fake.txids) == synced + 1  # the journal has it; nobody was told so
        assert nn.edit_log.synced_txid == synced
        assert len(terminations.calls) == 1
    finally:
        nn.abort()


def test_a_required_journal_aborted_during_a_flush_acknowledges_nothing(tmp_path) -> None:
    """Another thread's failure of a required journal aborts every stream; if that lands
    while this thread's flush is going round the journals, the flush skips the required
    one — and that must not count as a sync."""
    fakes = {uri: FakeJournal(uri) for uri in ("fake://first", "fake://required")}
    nn, terminations = nn_with_fake_journals(tmp_path, *fakes.values())
    try:
        nn.namesystem.mkdirs("/ok")
        synced = nn.edit_log.synced_txid
        fakes["fake://first"].on_flush = nn.edit_log.journal_set.abort_all_journals
        with pytest.raises(ExitException, match="was aborted during the flush"):
            nn.namesystem.mkdirs("/lost")
        assert nn.edit_log.synced_txid == synced
        assert max(fakes["fake://required"].txids) == synced
        assert len(terminations.calls) == 1
    finally:
        nn.abort()


def test_roll_edit_log(cluster, tmp_path) -> None:
    jid = "roll"
    conf = nn_conf(tmp_path, shared=cluster.quorum_journal_uri(jid))
    format_namenode(conf)
    nn = start_nn(conf)
    try:
        nn.namesystem.mkdirs("/a")
        nn.namesystem.create("/a/f")
        last = nn.edit_log.last_written_txid  # START, MKDIR, ADD, CLOSE = 4
        next_txid = nn.roll_edit_log()
        assert next_txid == last + 2  # OP_END_LOG_SEGMENT took last + 1
        wait_for_journal_nodes(nn)
        seen = (tmp_path / "name" / "current" / "seen_txid").read_text()
        assert seen == f"{next_txid}\n"
        for current in [tmp_path / "name" / "current"] + [
            cluster.current_dir(i, jid) for i in range(3)
        ]:
            names = sorted(
                p.name
                for p in current.iterdir()
                if p.name.startswith("edits_") and p.suffix != ".md5"  # the JNs' kept md5s
            )
            assert names == [
                f"edits_{1:019d}-{last + 1:019d}",
                f"edits_inprogress_{next_txid:019d}",
            ]
            ops = read_ops(current)
            assert isinstance(ops[0], StartLogSegmentOp) and isinstance(ops[-1], EndLogSegmentOp)
            _contiguous(ops)
    finally:
        nn.close()


def test_auto_sync_when_the_buffer_fills(tmp_path) -> None:
    journal_set = JournalSet()
    journal_set.add(FileJournalManager(None, tmp_path), required=False)
    journal_set.set_output_buffer_capacity(256)
    edit_log = FSEditLog(journal_set, terminate=Terminations())
    edit_log.init_journals_for_write()
    edit_log.open_for_write()
    for i in range(20):
        edit_log.log_edit(MkdirOp.create(0, f"/dir-{i:04d}"))  # never log_sync'ed by us
    assert edit_log.synced_txid > 1  # full buffers were synced by the writer itself
    stats = edit_log.stats()
    assert stats.syncs >= 2
    edit_log.log_sync()  # this thread's last txid
    assert edit_log.synced_txid == edit_log.last_written_txid == 21
    edit_log.close()


def test_open_for_write_refuses_to_fork_the_log(tmp_path) -> None:
    journal = FileJournalManager(None, tmp_path)
    journal_set = JournalSet()
    journal_set.add(journal, required=False)
    edit_log = FSEditLog(journal_set, terminate=Terminations())
    edit_log.init_journals_for_write()
    edit_log.open_for_write()
    edit_log.log_edit(MkdirOp.create(0, "/a"))
    edit_log.close()  # edits_1-3 on disk

    again = JournalSet()
    again.add(FileJournalManager(None, tmp_path), required=False)
    stale = FSEditLog(again, terminate=Terminations())
    stale.init_journals_for_write()  # as if nothing had been loaded: next txid would be 1
    with pytest.raises(IllegalStateException, match="Cannot start writing at txid 1"):
        stale.open_for_write()
    stale.close()


def test_log_sync_without_edits_returns_at_once(tmp_path) -> None:
    journal_set = JournalSet()
    journal_set.add(FileJournalManager(None, tmp_path), required=False)
    edit_log = FSEditLog(journal_set, terminate=Terminations())
    edit_log.init_journals_for_write()
    edit_log.open_for_write()
    done = threading.Event()
    threading.Thread(target=lambda: (edit_log.log_sync(), done.set())).start()
    assert done.wait(10)
    edit_log.close()


@pytest.mark.parametrize(
    "resources, minimum, available",
    [
        ([], 1, False),
        ([(True, True)], 1, True),
        ([(True, False)], 1, False),
        ([(True, True), (False, False)], 1, False),
        ([(True, True), (False, True)], 1, True),
        ([(False, True), (False, False)], 1, True),
        ([(False, True), (False, False)], 2, False),
    ],
)
def test_are_resources_available(resources, minimum, available) -> None:
    assert are_resources_available(resources, minimum) is available


class UnreadableJournal(FakeJournal):
    """A journal that cannot list its streams (no quorum of JournalNodes answers)."""

    def select_input_streams(self, from_txid, in_progress_ok=False, only_durable_txns=False):
        raise IOException("Got too many exceptions to achieve quorum size 2/3")


def test_an_unreadable_shared_journal_is_an_error_only_when_required(tmp_path) -> None:
    local = FileJournalManager(None, tmp_path)
    writer_set = JournalSet()
    writer_set.add(local, required=False)
    writer = FSEditLog(writer_set, terminate=Terminations())
    writer.init_journals_for_write()
    writer.open_for_write()
    writer.close()  # edits_1-2 on disk

    journal_set = JournalSet()
    journal_set.add(UnreadableJournal("fake://shared"), required=True, shared=True)
    journal_set.add(FileJournalManager(None, tmp_path), required=False)
    edit_log = FSEditLog(journal_set, terminate=Terminations())
    # As in Hadoop, a journal that cannot list its streams is skipped ...
    streams = edit_log.select_input_streams(1)
    assert [(s.first_txid, s.last_txid) for s in streams] == [(1, 2)]
    for s in streams:
        s.close()
    # ... unless the shared edits must be read (the standby's tailer, the catch-up).
    with pytest.raises(IOException) as info:
        edit_log.select_input_streams(1, require_shared=True)
    assert str(info.value) == (
        "Unable to read the shared edits fake://shared: "
        "Got too many exceptions to achieve quorum size 2/3"
    )
    # A local journal that cannot be read is skipped either way.
    optional = JournalSet()
    optional.add(UnreadableJournal("fake://local"), required=False)
    assert FSEditLog(optional).select_input_streams(1, require_shared=True) == []
