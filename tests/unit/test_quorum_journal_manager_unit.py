"""TestQuorumJournalManagerUnit (HADOOP-QJM-DIGEST.md §8): QuorumJournalManager over
hand-written fake loggers — no JournalNodes, no sockets, no threads."""

from __future__ import annotations

from concurrent.futures import Future

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import (
    ConfigurationError,
    HadoopAssertionError,
    IllegalArgumentException,
    IllegalStateException,
    IOException,
)
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp, edit_log_header, encode_op
from hadoop_qjm.qjournal.client.quorum_journal_manager import (
    QuorumJournalManager,
    QuorumJournalTimeouts,
)
from hadoop_qjm.qjournal.client.quorum_output_stream import QuorumOutputStream
from hadoop_qjm.qjournal.protocol.exceptions import JournalInUseException, QuorumException
from hadoop_qjm.qjournal.protocol.messages import (
    CanFormatResponse,
    GetJournaledEditsResponse,
    GetJournalStateResponse,
    NewEpochResponse,
    PrepareRecoveryResponse,
    SegmentState,
)
from hadoop_qjm.testing.qjm_test_util import (
    FAKE_NSINFO,
    create_txn_data,
    verify_edits,
    write_op,
)
from tests.unit.qjm_client_fakes import FakeLogger, pending

MAX_TXNS = 5000


def make_qjm(loggers: list[FakeLogger], conf: Configuration | None = None) -> QuorumJournalManager:
    conf = conf or Configuration()
    conf.set("dfs.ha.tail-edits.in-progress", True)
    handed_out = iter(loggers)
    uri = "qjournal://" + ";".join(f"jn{i}:{8485 + i}" for i in range(len(loggers))) + "/jid"
    return QuorumJournalManager(
        conf, uri, FAKE_NSINFO, logger_factory=lambda *args: next(handed_out)
    )


@pytest.fixture
def loggers() -> list[FakeLogger]:
    return [FakeLogger(f"jn{i}") for i in range(3)]


@pytest.fixture
def qjm(loggers) -> QuorumJournalManager:
    manager = make_qjm(loggers)
    manager.recover_unfinalized_segments()
    return manager


def create_log_segment(qjm: QuorumJournalManager) -> QuorumOutputStream:
    return qjm.start_log_segment(1, CURRENT_LAYOUT_VERSION)


def journaled_edits(start: int, num: int) -> GetJournaledEditsResponse:
    return GetJournaledEditsResponse(num, edit_log_header() + create_txn_data(start, num))


# ---- becoming the writer --------------------------------------------------------------------------


def test_recovery_of_a_fresh_journal_wins_epoch_one(loggers, qjm) -> None:
    assert qjm.is_active_writer
    assert qjm.loggers.epoch == 1
    assert [logger.epoch for logger in loggers] == [1, 1, 1]
    # The epoch, and the set the writer counts (for the nodes' membership check).
    assert all(logger.calls_to("new_epoch") == [(1, "jn0;jn1;jn2")] for logger in loggers)
    assert all(not logger.calls_to("prepare_recovery") for logger in loggers)
    with pytest.raises(IllegalStateException, match="already active writer"):
        qjm.recover_unfinalized_segments()


def test_epoch_is_one_more_than_the_highest_promise(loggers) -> None:
    for logger, promised in zip(loggers, (3, 7, 5)):
        logger.when("get_journal_state", result=GetJournalStateResponse(promised, -1))
    qjm = make_qjm(loggers)
    qjm.create_new_unique_epoch()
    assert qjm.loggers.epoch == 8
    with pytest.raises(IllegalStateException, match="epoch already created"):
        qjm.create_new_unique_epoch()


def test_start_requires_recovery(loggers) -> None:
    qjm = make_qjm(loggers)
    with pytest.raises(IllegalStateException, match="must recover segments before starting"):
        qjm.start_log_segment(1, CURRENT_LAYOUT_VERSION)


def test_recovery_syncs_from_the_best_source_then_finalizes(loggers) -> None:
    loggers[0].when("new_epoch", result=NewEpochResponse(4))
    answers = [
        PrepareRecoveryResponse(SegmentState(4, 6, True), None, 1, 5),
        PrepareRecoveryResponse(SegmentState(4, 7, True), None, 1, 5),
        PrepareRecoveryResponse(None, None, 1),
    ]
    for logger, answer in zip(loggers, answers):
        logger.when("prepare_recovery", result=answer)
    qjm = make_qjm(loggers)
    qjm.recover_unfinalized_segments()
    for logger in loggers:
        assert logger.calls_to("prepare_recovery") == [(4,)]
        assert logger.calls_to("accept_recovery") == [
            (SegmentState(4, 7, True), "http://jn1/getJournal?segmentTxId=4")
        ]
        assert logger.calls_to("finalize_log_segment") == [(4, 7)]


def _recover_with_jn2_still_accepting(loggers) -> Future:
    """Recovery of segment 4 ([4-7] from jn1) whose acceptRecovery jn2 has not answered
    when jn0 and jn1 have; returns jn2's accept, for the test to answer."""
    loggers[0].when("new_epoch", result=NewEpochResponse(4))
    for logger in loggers:
        logger.when(
            "prepare_recovery", result=PrepareRecoveryResponse(SegmentState(4, 7, True), None, 1, 5)
        )
    slow_accept: Future = pending()
    loggers[2].when("accept_recovery", future=lambda: slow_accept)
    qjm = make_qjm(loggers)
    qjm.recover_unfinalized_segments()
    assert qjm.is_active_writer
    assert [logger.calls_to("finalize_log_segment") for logger in loggers] == [
        [(4, 7)],
        [(4, 7)],
        [],
    ]
    return slow_accept


def test_recovery_finalizes_a_slow_node_once_its_accept_succeeds(loggers) -> None:
    """Issue 33 item 7: as Hadoop, the finalize goes to every node that accepts, also one
    whose accept comes after the quorum's (it would keep edits_inprogress_4 and its paxos
    record until its syncer moved them aside)."""
    slow_accept = _recover_with_jn2_still_accepting(loggers)
    slow_accept.set_result(None)
    assert loggers[2].calls_to("finalize_log_segment") == [(4, 7)]


def test_recovery_never_finalizes_a_slow_node_whose_accept_fails(loggers) -> None:
    """Its copy may be another writer's of the same length (run_seed 145)."""
    slow_accept = _recover_with_jn2_still_accepting(loggers)
    slow_accept.set_exception(IOException("download failed"))
    assert loggers[2].calls_to("finalize_log_segment") == []


def test_recovery_with_no_segment_on_the_quorum_does_nothing(loggers) -> None:
    loggers[0].when("new_epoch", result=NewEpochResponse(4))
    qjm = make_qjm(loggers)
    for logger in loggers:
        logger.when("prepare_recovery", result=PrepareRecoveryResponse(None, None, 1))
    qjm.recover_unfinalized_segments()
    assert qjm.is_active_writer
    assert not any(logger.calls_to("accept_recovery") for logger in loggers)


def test_recovery_refuses_to_cut_off_a_committed_txid(loggers) -> None:
    loggers[0].when("new_epoch", result=NewEpochResponse(1))
    answers = [
        PrepareRecoveryResponse(SegmentState(1, 3, True), None, 1, 2),
        PrepareRecoveryResponse(SegmentState(1, 3, True), None, 1, 5),
        PrepareRecoveryResponse(SegmentState(1, 2, True), None, 1, 2),
    ]
    for logger, answer in zip(loggers, answers):
        logger.when("prepare_recovery", result=answer)
    qjm = make_qjm(loggers)
    with pytest.raises(HadoopAssertionError) as info:
        qjm.recover_unfinalized_segments()
    assert str(info.value) == (
        "Decided to synchronize log to startTxId: 1 endTxId: 3 isInProgress: true but "
        "logger jn1 had seen txid 5 committed"
    )
    assert not any(logger.calls_to("accept_recovery") for logger in loggers)


# ---- writing ----------------------------------------------------------------------------------


def test_all_loggers_start_ok(qjm) -> None:
    create_log_segment(qjm)


def test_quorum_of_loggers_start_ok(loggers, qjm) -> None:
    loggers[2].when("start_log_segment", error=IOException("logger failed"))
    create_log_segment(qjm)


def test_quorum_of_loggers_fail(loggers, qjm) -> None:
    loggers[1].when("start_log_segment", error=IOException("logger failed"))
    loggers[2].when("start_log_segment", error=IOException("logger failed"))
    with pytest.raises(QuorumException, match="logger failed"):
        create_log_segment(qjm)


def test_quorum_output_stream_report(qjm) -> None:
    report = create_log_segment(qjm).generate_report()
    assert "<" not in report, "Report should be plain text"
    assert report.startswith("Writing segment beginning at txid 1. \njn0 (Written txid 0)")


def test_write_edits(loggers, qjm) -> None:
    stm = create_log_segment(qjm)
    write_op(stm, 1)
    write_op(stm, 2)
    stm.set_ready_to_flush()
    write_op(stm, 3)
    stm.flush()  # sends txns 1-2
    stm.set_ready_to_flush()
    stm.flush()  # sends txn 3
    for logger in loggers:
        assert logger.calls_to("send_edits") == [
            (1, 1, 2, create_txn_data(1, 2)),
            (1, 3, 1, create_txn_data(3, 1)),
        ]
        assert logger.committed == [2, 3]
    stm.flush()  # nothing ready: nothing sent
    assert len(loggers[0].calls_to("send_edits")) == 2
    stm.close()


def test_close_with_unflushed_edits_fails_but_abort_works(qjm) -> None:
    stm = create_log_segment(qjm)
    write_op(stm, 1)
    with pytest.raises(IOException, match="still to be flushed"):
        stm.close()
    stm.abort()
    with pytest.raises(IOException, match="closed"):
        write_op(stm, 2)


def test_set_output_buffer_capacity_too_large(qjm) -> None:
    with pytest.raises(IllegalArgumentException):
        qjm.set_output_buffer_capacity(64 * 1024 * 1024 + 1)


def test_output_buffer_auto_syncs_when_full(loggers, qjm) -> None:
    """HDFS-13977: a full buffer asks the writer to sync now (as FSEditLog.logEdit does)."""
    qjm.set_output_buffer_capacity(512)
    stm = create_log_segment(qjm)
    synced_after = None
    for txid in range(1, 13):
        stm.write(MkdirOp.create(txid, "/fake/path"))
        if stm.should_force_sync():
            synced_after = synced_after or txid
            stm.set_ready_to_flush()
            stm.flush()
    assert synced_after is not None and synced_after < 12
    for logger in loggers:
        first_batches = [c for c in logger.calls_to("send_edits") if c[1] == 1]
        assert len(first_batches) == 1
        assert first_batches[0][:3] == (1, 1, synced_after)


def test_write_edits_one_slow(loggers, qjm) -> None:
    stm = create_log_segment(qjm)
    write_op(stm, 1)
    stm.set_ready_to_flush()
    loggers[2].when("send_edits", future=pending)  # the third never answers
    stm.flush()
    assert loggers[0].committed == [1]
    assert loggers[2].committed == [1]  # it learns it with its next call


def test_flush_fails_fast_when_two_of_three_fail(loggers, qjm) -> None:
    """2 of 3 failed and the third hangs: QuorumException at once, not after the write
    timeout (10 minutes here; pytest's 120 s limit would fail the test first)."""
    qjm = make_qjm(loggers)
    qjm.timeouts = QuorumJournalTimeouts(write_txns_ms=600_000)
    qjm.recover_unfinalized_segments()
    stm = create_log_segment(qjm)
    loggers[0].when("send_edits", future=pending)
    loggers[1].when("send_edits", error=IOException("jn1 is down"))
    loggers[2].when("send_edits", error=IOException("jn2 is down"))
    write_op(stm, 1)
    stm.set_ready_to_flush()
    with pytest.raises(QuorumException) as info:
        stm.flush()
    assert "too many exceptions to achieve quorum size 2/3" in str(info.value)
    assert "jn1: jn1 is down" in str(info.value)
    assert loggers[0].committed == []


def test_finalize_and_purge(loggers, qjm) -> None:
    qjm.finalize_log_segment(1, 3)
    loggers[0].when("purge_logs_older_than", future=pending)
    qjm.purge_logs_older_than(2)  # not waited for
    for logger in loggers:
        assert logger.calls_to("finalize_log_segment") == [(1, 3)]
        assert logger.calls_to("purge_logs_older_than") == [(2,)]


# ---- calls that need every node -----------------------------------------------------------------


def test_format_and_has_some_data_need_every_node(loggers) -> None:
    qjm = make_qjm(loggers)
    assert not qjm.has_some_data()
    loggers[1].when("is_formatted", result=True)
    assert qjm.has_some_data()
    qjm.format(FAKE_NSINFO, force=True)
    assert all(logger.calls_to("format") == [(FAKE_NSINFO, True)] for logger in loggers)
    loggers[2].when("format", error=IOException("not empty"))
    with pytest.raises(QuorumException, match="Could not format one or more JournalNodes"):
        qjm.format(FAKE_NSINFO)


def test_format_asks_every_node_first_and_changes_none_while_a_writer_is_live(loggers) -> None:
    """Issue 33 item 1: a live writer on any node refuses the format before any node is
    formatted; with none, format says what it destroys."""
    qjm = make_qjm(loggers)
    loggers[1].when("can_format", result=CanFormatResponse("journal j is in use (x)", 2, 9))
    with pytest.raises(JournalInUseException, match=r"1 of 3 JournalNodes have a live writer"):
        qjm.format(FAKE_NSINFO, force=True)
    assert all(lg.calls_to("can_format") == [()] for lg in loggers)
    assert all(lg.calls_to("format") == [] for lg in loggers)
    loggers[1].when("can_format", result=CanFormatResponse(None, 2, 9))
    assert qjm.format(FAKE_NSINFO, force=True) == (
        f"Formatting destroys 2 segments (9 txns) on 1 JournalNodes ({loggers[1]}: 2 segments, "
        "9 txns)"
    )
    assert all(lg.calls_to("format") == [(FAKE_NSINFO, True)] for lg in loggers)


def test_operations_timeout(loggers) -> None:
    conf = Configuration()
    conf.set("dfs.qjm.operations.timeout", "10ms")
    qjm = make_qjm(loggers, conf)
    assert qjm.timeouts.operations_ms == 10
    loggers[0].when("is_formatted", future=pending)
    with pytest.raises(IOException, match=r"Timed out waiting for hasSomeData\(\) response"):
        qjm.has_some_data()


def test_journal_ctime_must_agree(loggers) -> None:
    qjm = make_qjm(loggers)
    assert qjm.get_journal_ctime() == 0
    loggers[1].when("get_journal_ctime", result=5)
    with pytest.raises(IOException, match="Results differed for getJournalCTime"):
        qjm.get_journal_ctime()
    for logger in loggers:
        logger.when("is_formatted", result=True)
    qjm.discard_segments(4)
    assert all(logger.calls_to("discard_segments") == [(4,)] for logger in loggers)


def test_timeouts_are_read_once_from_config() -> None:
    conf = Configuration()
    conf.set("dfs.qjournal.write-txns.timeout.ms", 1234)
    timeouts = QuorumJournalTimeouts.from_conf(conf)
    assert timeouts.write_txns_ms == 1234
    assert timeouts.start_segment_ms == 20000
    assert timeouts.new_epoch_ms == 120000
    assert timeouts.operations_ms == 60000


@pytest.mark.parametrize(
    "key,value",
    [
        ("dfs.qjournal.write-txns.timeout.ms", "-1"),
        ("dfs.qjournal.start-segment.timeout.ms", "0"),
        ("dfs.qjm.operations.timeout", "-5s"),
    ],
)
def test_a_timeout_that_is_not_positive_names_its_key(key: str, value: str) -> None:
    conf = Configuration()
    conf.set(key, value, "from command line")
    with pytest.raises(ConfigurationError) as info:
        QuorumJournalTimeouts.from_conf(conf)
    assert str(info.value) == (
        f"Invalid value for {key}: '{value}' is not a positive time duration (a number of"
        " milliseconds, or with a unit: ns us ms s m h d) (set from command line)"
    )


def test_to_string_and_close(loggers) -> None:
    qjm = make_qjm(loggers)
    assert str(qjm) == "QJM to [jn0, jn1, jn2]"
    qjm.close()
    assert all(logger.closed for logger in loggers)


# ---- reading over RPC -------------------------------------------------------------------------


def answer_edits(loggers, *answers) -> None:
    for logger, answer in zip(loggers, answers):
        if isinstance(answer, GetJournaledEditsResponse):
            logger.when("get_journaled_edits", result=answer)
        elif isinstance(answer, BaseException):
            logger.when("get_journaled_edits", error=answer)
        else:
            logger.when("get_journaled_edits", future=answer)


def test_read_rpc_input_streams(loggers, qjm) -> None:
    answer_edits(loggers, *(journaled_edits(1, 3) for _ in range(3)))
    streams = qjm.select_input_streams(1, True, True)
    assert len(streams) == 1
    verify_edits(streams, 1, 3)
    for logger in loggers:
        assert logger.calls_to("get_journaled_edits") == [(1, MAX_TXNS)]


def test_read_rpc_mismatched_input_streams(loggers, qjm) -> None:
    answer_edits(loggers, *(journaled_edits(1, n) for n in (1, 2, 3)))
    streams = qjm.select_input_streams(1, True, True)
    assert len(streams) == 1
    verify_edits(streams, 1, 2)  # what a majority holds


def test_read_rpc_without_durability_takes_the_longest(loggers, qjm) -> None:
    answer_edits(loggers, *(journaled_edits(1, n) for n in (1, 2, 3)))
    verify_edits(qjm.select_input_streams(1, True, False), 1, 3)


def test_read_rpc_input_streams_one_slow(loggers, qjm) -> None:
    answer_edits(loggers, journaled_edits(1, 1), journaled_edits(1, 2), Future())
    streams = qjm.select_input_streams(1, True, True)
    assert len(streams) == 1
    verify_edits(streams, 1, 1)


def test_read_rpc_input_streams_one_exception(loggers, qjm) -> None:
    answer_edits(loggers, journaled_edits(1, 1), journaled_edits(1, 2), IOException())
    streams = qjm.select_input_streams(1, True, True)
    assert len(streams) == 1
    verify_edits(streams, 1, 1)


def test_read_rpc_input_streams_no_new_edits(loggers, qjm) -> None:
    answer_edits(loggers, *(GetJournaledEditsResponse(0, b"") for _ in range(3)))
    assert qjm.select_input_streams(1, True, True) == []
    # "Nothing new" is an answer: no fall-back to streaming.
    assert not any(logger.calls_to("get_edit_log_manifest") for logger in loggers)


def fenced_edits(start: int, num: int, writer_epoch: int) -> GetJournaledEditsResponse:
    """A fenced writer's own txns ``start..start+num-1`` (MKDIR "fenced <txid>")."""
    ops = b"".join(encode_op(MkdirOp.create(t, f"fenced {t}")) for t in range(start, start + num))
    return GetJournaledEditsResponse(num, edit_log_header() + ops, writer_epoch)


def newer_edits(start: int, num: int, writer_epoch: int) -> GetJournaledEditsResponse:
    return GetJournaledEditsResponse(
        num, edit_log_header() + create_txn_data(start, num), writer_epoch
    )


def read_paths(streams) -> list[str]:
    paths = []
    for stream in streams:
        while (op := stream.read_op()) is not None:
            paths.append(op.path)
    return paths


def test_rpc_reads_take_only_the_newest_writers_answers(loggers, qjm) -> None:
    """jn0 never heard of writer 2 and still caches writer 1's tail for txids 1-3; jn1 and
    jn2 hold writer 2's. Equal counts, but only writer 2's copies may be read."""
    answer_edits(loggers, fenced_edits(1, 3, 1), newer_edits(1, 3, 2), newer_edits(1, 3, 2))
    streams = qjm.select_input_streams(1, True, True)
    assert read_paths(streams) == ["tx 1", "tx 2", "tx 3"]


@pytest.mark.parametrize(
    "answers",
    [
        # One node behind the newest writer, one not answering: writer 2's txns are on one
        # node only as far as this call can tell.
        lambda: (fenced_edits(1, 3, 1), newer_edits(1, 3, 2), Future()),
        # A takeover that failed: jn0 promised epoch 3 (its cache emptied) while writer 2
        # goes on with jn1 and jn2. "Nothing new" here would stall the reader for good.
        lambda: (GetJournaledEditsResponse(0, b"", 3), newer_edits(1, 3, 2), newer_edits(1, 3, 2)),
    ],
    ids=["newest writer on a minority", "a failed takeover's promise"],
)
def test_rpc_answers_that_decide_nothing_fall_back_to_the_segment_files(
    loggers, qjm, answers
) -> None:
    from hadoop_qjm.common.remote_edit_log import RemoteEditLogManifest

    answer_edits(loggers, *answers())
    for logger in loggers:
        logger.when("get_edit_log_manifest", result=RemoteEditLogManifest((), 0))
    assert qjm.select_input_streams(1, True, True) == []
    assert all(logger.calls_to("get_edit_log_manifest") for logger in loggers[1:])


def test_rpc_failure_falls_back_to_streaming(loggers, qjm) -> None:
    answer_edits(loggers, IOException("miss"), IOException("miss"), journaled_edits(1, 3))
    from hadoop_qjm.common.remote_edit_log import RemoteEditLogManifest

    for logger in loggers:
        logger.when("get_edit_log_manifest", result=RemoteEditLogManifest((), 0))
    assert qjm.select_input_streams(1, True, True) == []
    for logger in loggers:
        assert logger.calls_to("get_edit_log_manifest") == [(1, True)]


def test_without_in_progress_tailing_rpc_is_not_used(loggers) -> None:
    from hadoop_qjm.common.remote_edit_log import RemoteEditLog, RemoteEditLogManifest

    conf = Configuration()
    qjm = make_qjm(loggers, conf)
    qjm.in_progress_tailing = False
    manifest = RemoteEditLogManifest((RemoteEditLog(1, 3), RemoteEditLog(4, 9, True)), 6)
    for logger in loggers:
        logger.when("get_edit_log_manifest", result=manifest)
    streams = qjm.select_input_streams(1, True, True)
    assert not any(logger.calls_to("get_journaled_edits") for logger in loggers)
    assert [(s.first_txid, s.last_txid, s.is_in_progress) for s in streams] == [
        (1, 3, False),
        (4, 6, True),  # in progress: only up to the committed txid
    ]
    assert streams[0].name.count("http://jn") == 3  # one copy per node


def test_an_upgrade_call_is_not_sent_unless_every_node_answers_first(loggers) -> None:
    """Issue 36: one node failing the pre-check refuses doUpgrade in one line naming it,
    and no node is asked to change anything."""
    qjm = make_qjm(loggers)
    for logger in loggers:
        logger.when("is_formatted", result=True)
    loggers[2].when("is_formatted", error=IOException("Connection refused"))
    storage = FAKE_NSINFO.storage_info()
    with pytest.raises(QuorumException) as e:
        qjm.do_upgrade(storage)
    assert str(e.value) == (
        f"Not starting doUpgrade: every JournalNode must answer a check first; failed on "
        f"{loggers[2]}: Connection refused; nothing was changed on any JournalNode"
    )
    assert all(lg.calls_to("do_upgrade") == [] for lg in loggers)
    loggers[2].when("is_formatted", result=True)
    qjm.do_upgrade(storage)
    assert all(lg.calls_to("do_upgrade") == [(storage,)] for lg in loggers)


def test_can_roll_back_must_agree(loggers) -> None:
    qjm = make_qjm(loggers)
    storage = FAKE_NSINFO.storage_info()
    for logger in loggers:
        logger.when("can_roll_back", result=True)
    assert qjm.can_roll_back(storage, storage, CURRENT_LAYOUT_VERSION) is True
    loggers[0].when("can_roll_back", result=False)
    with pytest.raises(IOException, match="Results differed for canRollBack"):
        qjm.can_roll_back(storage, storage, CURRENT_LAYOUT_VERSION)
