"""rules.py: each rule's accept and reject cases, and checkRequest against a naive model."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import HadoopException, IllegalArgumentException, IOException
from hadoop_qjm.qjournal.protocol import journal_read_rules, journal_step, recovery_rules, rules
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalOutOfSyncException,
    NewerTxnIdException,
    SegmentMismatchException,
)
from hadoop_qjm.qjournal.protocol.messages import RequestInfo, SegmentState
from hadoop_qjm.qjournal.protocol.rules import (
    BatchAction,
    EpochDecision,
    EpochState,
    check_committed_txid,
    check_epoch,
    check_finalize_current,
    check_ipc_serial,
    check_journal_batch,
    check_new_epoch,
    check_request,
    check_writer_epoch,
    majority,
    validate_journal_id,
)

JID = "test-journal"


# --------------------------------------------------------------- journal id


@pytest.mark.parametrize("jid", ["ns1", "my-journal_2", "a.b", "journal..x", "j" * 200])
def test_good_journal_ids(jid: str) -> None:
    assert validate_journal_id(jid) == jid


@pytest.mark.parametrize("jid", ["", "a/b", "/abs", ".hidden", ".", "..", "a\x00b", None, 5])
def test_bad_journal_ids(jid: object) -> None:
    with pytest.raises(IllegalArgumentException, match="^bad journal id: "):
        validate_journal_id(jid)


# ----------------------------------------------------------------- majority


@pytest.mark.parametrize(("n", "m"), [(0, 1), (1, 1), (2, 2), (3, 2), (4, 3), (5, 3), (7, 4)])
def test_majority(n: int, m: int) -> None:
    assert majority(n) == m


def test_majority_of_negative_count() -> None:
    with pytest.raises(IllegalArgumentException):
        majority(-1)


# ----------------------------------------------------------- checkRequest steps


def test_check_epoch() -> None:
    assert check_epoch(3, 3, JID) is None
    assert check_epoch(4, 3, JID) == 4
    with pytest.raises(IOException) as e:
        check_epoch(1, 3, JID)
    assert type(e.value) is IOException
    assert str(e.value) == (
        f"IPC's epoch 1 is less than the last promised epoch 3 ; journal id: {JID}"
    )


def test_check_ipc_serial() -> None:
    assert check_ipc_serial(0, -1, JID) == 0
    assert check_ipc_serial(5, 3, JID) == 5
    with pytest.raises(JournalOutOfSyncException) as e:
        check_ipc_serial(3, 3, JID, client="/127.0.0.1")
    assert str(e.value) == (
        "IPC serial 3 from client /127.0.0.1 was not higher than prior highest IPC serial 3"
        f" ; journal id: {JID}"
    )
    with pytest.raises(JournalOutOfSyncException, match="from client null was not higher"):
        check_ipc_serial(1, 2, JID)


def test_check_committed_txid() -> None:
    assert check_committed_txid(0, INVALID_TXID, JID) == 0
    assert check_committed_txid(5, 5, JID) == 5
    with pytest.raises(IllegalArgumentException) as e:
        check_committed_txid(4, 5, JID)
    assert str(e.value) == (
        f"Client trying to move committed txid backward from 5 to 4 ; journal id: {JID}"
    )


def test_check_request_accepts_and_promises() -> None:
    state = EpochState(last_promised_epoch=1, ipc_serial=4, committed_txid=10)
    same_epoch = check_request(state, RequestInfo(JID, 1, 5, 12))
    assert same_epoch == EpochDecision(promise_epoch=None, ipc_serial=5, committed_txid=12)
    assert same_epoch.apply(state) == EpochState(1, 5, 12)
    same_epoch.raise_if_rejected()

    newer = check_request(state, RequestInfo(JID, 2, 0))
    assert newer == EpochDecision(promise_epoch=2, ipc_serial=0, committed_txid=None)
    assert newer.apply(state) == EpochState(2, 0, 10)


def test_check_request_rejections() -> None:
    state = EpochState(last_promised_epoch=3, ipc_serial=4, committed_txid=10)

    stale = check_request(state, RequestInfo(JID, 2, 9))
    assert stale.apply(state) == state
    with pytest.raises(IOException, match="IPC's epoch 2 is less than the last promised epoch 3"):
        stale.raise_if_rejected()

    replay = check_request(state, RequestInfo(JID, 3, 4), client="/10.0.0.1")
    assert replay.apply(state) == state
    with pytest.raises(JournalOutOfSyncException, match="IPC serial 4 from client /10.0.0.1"):
        replay.raise_if_rejected()

    backward = check_request(state, RequestInfo(JID, 3, 5, 9))
    # the serial is consumed even though the request fails (Hadoop's order)
    assert backward.apply(state) == EpochState(3, 5, 10)
    with pytest.raises(IllegalArgumentException, match="backward from 10 to 9"):
        backward.raise_if_rejected()


def test_a_newer_epoch_is_promised_even_if_the_request_then_fails() -> None:
    state = EpochState(last_promised_epoch=3, ipc_serial=4, committed_txid=10)
    d = check_request(state, RequestInfo(JID, 5, 0, 9))
    assert d.promise_epoch == 5
    assert d.apply(state) == EpochState(5, 0, 10)
    assert isinstance(d.error, IllegalArgumentException)


def test_check_writer_epoch() -> None:
    check_writer_epoch(4, 4, JID)
    with pytest.raises(IOException) as e:
        check_writer_epoch(3, 4, JID)
    # Hadoop's message has two spaces before the writer epoch.
    assert str(e.value) == f"IPC's epoch 3 is not the current writer epoch  4 ; journal id: {JID}"


def test_check_new_epoch() -> None:
    check_new_epoch(4, 3, JID)
    check_new_epoch(1, 0, JID)
    for proposed in (3, 2):
        with pytest.raises(IOException) as e:
            check_new_epoch(proposed, 3, JID)
        assert str(e.value) == f"Proposed epoch {proposed} <= last promise 3 ; journal id: {JID}"


# ------------------------------------------------------------------ journal()


def test_journal_batch_accepted() -> None:
    assert check_journal_batch(1, 4, 1, 4, num_txns=3, journal_id=JID) is BatchAction.WRITE


def test_journal_batch_with_no_txns_is_skipped_before_any_check() -> None:
    assert (
        check_journal_batch(None, INVALID_TXID, 9, 99, num_txns=0, journal_id=JID)
        is BatchAction.SKIP
    )


@pytest.mark.parametrize("no_segment", [None, INVALID_TXID])
def test_journal_batch_without_open_segment(no_segment: int | None) -> None:
    with pytest.raises(JournalOutOfSyncException) as e:
        check_journal_batch(no_segment, INVALID_TXID, 1, 1, num_txns=1, journal_id=JID)
    assert type(e.value) is JournalOutOfSyncException
    assert str(e.value) == f"Can't write, no segment open ; journal id: {JID}"


def test_journal_batch_for_another_segment_is_distinguishable() -> None:
    with pytest.raises(SegmentMismatchException) as e:
        check_journal_batch(4, 5, 1, 5, num_txns=1, journal_id=JID)
    assert isinstance(e.value, JournalOutOfSyncException)
    assert str(e.value) == (
        "Writer out of sync: it thinks it is writing segment 1 but current segment is 4"
        f" ; journal id: {JID}"
    )


def test_journal_batch_with_a_gap() -> None:
    with pytest.raises(JournalOutOfSyncException) as e:
        check_journal_batch(1, 4, 1, 5, num_txns=1, journal_id=JID)
    assert type(e.value) is JournalOutOfSyncException
    assert str(e.value) == f"Can't write txid 5 expecting nextTxId=4 ; journal id: {JID}"


def test_journal_batch_checks_run_in_hadoops_order() -> None:
    # a wrong segment AND a gap: the segment check (which aborts) wins
    with pytest.raises(SegmentMismatchException):
        check_journal_batch(4, 9, 1, 100, num_txns=1, journal_id=JID)


def test_check_finalize_current() -> None:
    check_finalize_current(4, 3, start_txid=1, journal_id=JID)
    with pytest.raises(JournalOutOfSyncException) as e:
        check_finalize_current(4, 5, start_txid=1, journal_id=JID)
    assert str(e.value) == (
        "Trying to finalize in-progress log segment 1 to end at txid 5 but only written up to"
        f" txid 3 ; journal id: {JID}"
    )


# --------------------------------------------- checkRequest vs a naive model


def naive_check_request(
    state: tuple[int, int, int], req: RequestInfo
) -> tuple[tuple[int, int, int], type | None]:
    """Journal.checkRequest transcribed imperatively: mutate, then maybe throw."""
    promised, serial, committed = state
    if req.epoch < promised:
        return (promised, serial, committed), IOException
    if req.epoch > promised:
        promised, serial = req.epoch, -1
    if not req.ipc_serial_number > serial:
        return (promised, serial, committed), JournalOutOfSyncException
    serial = req.ipc_serial_number
    if req.committed_txid != INVALID_TXID:
        if req.committed_txid < committed:
            return (promised, serial, committed), IllegalArgumentException
        committed = req.committed_txid
    return (promised, serial, committed), None


SMALL = st.integers(-3, 8)


@settings(max_examples=1000, deadline=None)
@given(
    promised=st.integers(0, 6),
    serial=st.integers(-1, 6),
    committed=st.one_of(st.just(INVALID_TXID), SMALL),
    epoch=st.integers(0, 7),
    ipc=SMALL,
    req_committed=st.one_of(st.just(INVALID_TXID), SMALL),
)
def test_check_request_matches_naive_model(
    promised: int, serial: int, committed: int, epoch: int, ipc: int, req_committed: int
) -> None:
    state = EpochState(promised, serial, committed)
    req = RequestInfo(JID, epoch, ipc, req_committed)
    decision = check_request(state, req)
    expected_state, expected_error = naive_check_request((promised, serial, committed), req)
    after = decision.apply(state)
    assert (after.last_promised_epoch, after.ipc_serial, after.committed_txid) == expected_state
    if expected_error is None:
        assert decision.error is None
    else:
        assert type(decision.error) is expected_error
        assert isinstance(decision.error, HadoopException)
        assert str(decision.error).endswith(f" ; journal id: {JID}")
    # a promise is reported exactly when the epoch rises
    assert (decision.promise_epoch is not None) == (epoch > promised)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(-1, 6), SMALL), max_size=30))
def test_sequences_of_requests_match_naive_model(reqs: list[tuple[int, int, int]]) -> None:
    state = EpochState()
    model = (0, rules.INITIAL_IPC_SERIAL, INVALID_TXID)
    for epoch, ipc, committed in reqs:
        req = RequestInfo(JID, epoch, ipc, committed)
        state = check_request(state, req).apply(state)
        model, _ = naive_check_request(model, req)
        assert (state.last_promised_epoch, state.ipc_serial, state.committed_txid) == model


# ----------------------------------------------------------- the in-order batch


def _step_functions_accept_plainly(
    state: EpochState,
    writer_epoch: int,
    cur_segment: int | None,
    next_txid: int,
    req: RequestInfo,
    segment: int,
    first: int,
    num: int,
) -> bool:
    """What the step functions say: accepted, no epoch promised, and the batch written."""
    try:
        rules.check_num_txns(num, JID)
    except IllegalArgumentException:
        return False
    decision = check_request(state, req)
    if decision.error is not None or decision.promise_epoch is not None:
        return False
    try:
        check_writer_epoch(req.epoch, writer_epoch, JID)
        action = check_journal_batch(
            cur_segment, next_txid, segment, first, num_txns=num, journal_id=JID
        )
    except HadoopException:
        return False
    return action is BatchAction.WRITE


#: A journal's state and a journal() call near every boundary of the checks.
_IN_ORDER_CASES = {
    "promised": st.integers(0, 3),
    "serial": st.integers(-1, 3),
    "committed": st.one_of(st.just(INVALID_TXID), st.integers(0, 3)),
    "writer_epoch": st.integers(0, 3),
    "cur_segment": st.sampled_from([None, INVALID_TXID, 1, 2]),
    "next_txid": st.integers(1, 3),
    "epoch": st.integers(0, 3),
    "ipc": st.integers(-1, 4),
    "req_committed": st.one_of(st.just(INVALID_TXID), st.integers(0, 3)),
    "segment": st.sampled_from([INVALID_TXID, 1, 2]),
    "first": st.integers(1, 3),
    "num": st.integers(-1, 2),
}


@settings(max_examples=700, deadline=None)
@given(**_IN_ORDER_CASES)
def test_the_in_order_batch_and_its_step_are_what_the_step_functions_write_plainly(
    promised, serial, committed, writer_epoch, cur_segment, next_txid, epoch, ipc,
    req_committed, segment, first, num,
) -> None:  # fmt: skip
    state = EpochState(promised, serial, committed)
    req = RequestInfo(JID, epoch, ipc, req_committed)
    in_order = rules.is_in_order_batch(
        promised, serial, committed, writer_epoch, cur_segment, next_txid,
        *rules.request_numbers(req), segment, first, num,
    )  # fmt: skip
    args = (state, writer_epoch, cur_segment, next_txid, req, segment, first, num)
    assert in_order == _step_functions_accept_plainly(*args)
    if in_order:  # and then the request's only effects are its serial and committed txid
        after = check_request(state, req).apply(state)
        expected_committed = req_committed if req.has_committed_txid else committed
        assert after == EpochState(promised, ipc, expected_committed)
    # journal_step.step answers exactly these calls, and its Ready is their effects: the
    # serial, the committed txid (to persist only when it moved), the batch, the next txid
    # after it, and an fsync unless the batch is already committed.
    writer = journal_step.WriterState(
        promised, serial, committed, writer_epoch, cur_segment, next_txid
    )
    call = journal_step.BatchCall(*rules.request_numbers(req), segment, first, num)
    ready = journal_step.step(writer, call)
    if not in_order:  # decided, not written plainly
        assert isinstance(ready, journal_step.Decision)
        return
    last = first + num - 1
    assert ready == journal_step.Ready(
        journal_step.WriterState(
            promised, ipc, expected_committed, writer_epoch, cur_segment, last + 1
        ),
        expected_committed if expected_committed != committed else None,
        first,
        last,
        not last <= expected_committed,
    )


def _journal_plainly(
    model: dict[str, int | None], req: RequestInfo, segment: int, first: int, num: int
) -> tuple[BaseException | None, bool, tuple[int, int, bool] | None]:
    """Journal.journal read literally, with the raising step functions in Hadoop's order
    (digest §2): mutates ``model`` as it goes and stops at the first exception. Returns
    (the exception, whether the open segment was aborted, the batch written)."""
    try:
        rules.check_num_txns(num, JID)
        promise = check_epoch(req.epoch, model["promised"], JID)
        if promise is not None:
            model["promised"], model["serial"] = promise, rules.INITIAL_IPC_SERIAL
        model["serial"] = check_ipc_serial(req.ipc_serial_number, model["serial"], JID)
        if req.has_committed_txid:
            model["committed"] = check_committed_txid(req.committed_txid, model["committed"], JID)
        model["seen"] = req.epoch  # the format guard sees an accepted call's writer
        check_writer_epoch(req.epoch, model["writer_epoch"], JID)
        if num == 0:
            return None, False, None
        try:
            check_journal_batch(
                model["segment"], model["next"], segment, first, num_txns=num, journal_id=JID
            )
        except SegmentMismatchException as e:
            model["segment"] = None
            return e, True, None
    except HadoopException as e:
        return e, False, None
    last = first + num - 1
    return None, False, (first, last, last > model["committed"])


def _apply_step(
    model: dict[str, int | None], outcome: journal_step.Ready | journal_step.Decision, epoch: int
) -> tuple[BaseException | None, bool, tuple[int, int, bool] | None]:
    """What JournalWritePath._apply_step does with a step's outcome, on the model."""
    if isinstance(outcome, journal_step.Ready):
        model["serial"], model["committed"] = outcome.state.ipc_serial, outcome.state.committed_txid
        model["seen"] = epoch
        return None, False, (outcome.first_txid, outcome.last_txid, outcome.must_sync)
    request = outcome.request
    if request is not None:
        if request.promise_epoch is not None:
            model["promised"], model["serial"] = request.promise_epoch, rules.INITIAL_IPC_SERIAL
        if request.ipc_serial is not None:
            model["serial"] = request.ipc_serial
        if request.committed_txid is not None:
            model["committed"] = request.committed_txid
        if request.error is not None:
            return request.error, False, None
        model["seen"] = epoch
    if outcome.abort_segment:
        model["segment"] = None
    if outcome.error is not None:
        return outcome.error, outcome.abort_segment, None
    batch = outcome.batch
    return None, False, None if batch is None else tuple(batch)


@settings(max_examples=1500, deadline=None)
@given(case=st.fixed_dictionaries(_IN_ORDER_CASES))
def test_the_step_decides_every_journal_call_as_journal_read_literally(case) -> None:
    """journal_step.step, applied, does what Journal.journal always did, for every call,
    the writer's next batch or not: the same effects in the same order (a promise kept
    though a later check fails), the same exception with the same message, the same
    abort of a segment the writer no longer writes, the same batch and fsync."""
    cur_segment = None if case["cur_segment"] == INVALID_TXID else case["cur_segment"]
    model = {
        "promised": case["promised"],
        "serial": case["serial"],
        "committed": case["committed"],
        "writer_epoch": case["writer_epoch"],
        "segment": cur_segment,
        "next": case["next_txid"],
        "seen": None,
    }
    req = RequestInfo(JID, case["epoch"], case["ipc"], case["req_committed"])
    segment, first, num = case["segment"], case["first"], case["num"]
    expected_model = dict(model)
    expected = _journal_plainly(expected_model, req, segment, first, num)
    writer = journal_step.WriterState(
        model["promised"], model["serial"], model["committed"], model["writer_epoch"],
        cur_segment, model["next"],
    )  # fmt: skip
    call = journal_step.BatchCall(*rules.request_numbers(req), segment, first, num)
    outcome = journal_step.step(writer, call, JID)
    assert outcome is not None
    got = _apply_step(model, outcome, req.epoch)
    assert model == expected_model
    assert (type(got[0]), str(got[0]), got[1:]) == (
        type(expected[0]),
        str(expected[0]),
        expected[1:],
    )


def test_a_newer_writer_is_promised_though_its_batch_is_rejected() -> None:
    """A call of a newer epoch, from no writer of this segment: the step promises the
    epoch first, then rejects the call with Hadoop's message (IOException, two spaces)."""
    writer = journal_step.WriterState(1, 3, 5, 1, 1, 6)
    outcome = journal_step.step(writer, journal_step.BatchCall(2, 0, 5, 1, 6, 1), JID)
    assert isinstance(outcome, journal_step.Decision)
    assert outcome.request == EpochDecision(promise_epoch=2, ipc_serial=0, committed_txid=5)
    assert type(outcome.error) is IOException
    assert str(outcome.error) == (
        f"IPC's epoch 2 is not the current writer epoch  1 ; journal id: {JID}"
    )
    assert (outcome.abort_segment, outcome.batch) == (False, None)


def test_a_writer_naming_another_segment_has_the_open_one_aborted() -> None:
    writer = journal_step.WriterState(1, 3, 5, 1, 1, 6)
    outcome = journal_step.step(writer, journal_step.BatchCall(1, 4, 5, 3, 6, 1), JID)
    assert isinstance(outcome, journal_step.Decision)
    assert outcome.abort_segment
    assert type(outcome.error) is SegmentMismatchException
    assert str(outcome.error) == (
        "Writer out of sync: it thinks it is writing segment 3 but current segment is 1"
        f" ; journal id: {JID}"
    )


def test_checkrequest_names_the_requests_journal_and_the_caller() -> None:
    """checkRequest's messages name the request's journal id and the caller's address,
    journal()'s own checks the journal's (as Journal.journal always wrote them)."""
    writer = journal_step.WriterState(1, 3, 5, 1, 1, 6)
    stale = journal_step.BatchCall(1, 3, 5, 1, 6, 1)
    outcome = journal_step.step(
        writer, stale, "mine", client="10.0.0.7", request_journal_id="theirs"
    )
    assert str(outcome.request.error) == (
        "IPC serial 3 from client 10.0.0.7 was not higher than prior highest IPC serial 3"
        " ; journal id: theirs"
    )
    negative = journal_step.step(writer, journal_step.BatchCall(1, 4, 5, 1, 6, -1), "mine")
    assert negative.request is None
    assert str(negative.error).endswith(" ; journal id: mine")


def test_a_negative_number_of_transactions_is_illegal() -> None:
    rules.check_num_txns(0, JID)
    with pytest.raises(IllegalArgumentException, match="Negative number of transactions -1"):
        rules.check_num_txns(-1, JID)


# ---- rpc_readable_txn_count ------------------------------------------------------------------------


def _readable_by_brute_force(answers, majority_size, only_durable):
    """The rule read literally: the newest writer's answers (all, when an epoch is
    unknown); nothing decided without a majority of them; durable = the most txns that
    at least a majority of them hold, else the most any holds."""
    if any(epoch == 0 for _, epoch in answers):
        newest, group = 0, [count for count, _ in answers]
    else:
        newest = max(epoch for _, epoch in answers)
        group = [count for count, epoch in answers if epoch == newest]
        if len(group) < majority_size:
            return None
    if not only_durable:
        return max(group), newest
    held = [k for k in range(max(group) + 1) if sum(c >= k for c in group) >= majority_size]
    return max(held), newest


@settings(max_examples=300, deadline=None)
@given(
    nodes=st.sampled_from([3, 5]),
    data=st.data(),
    only_durable=st.booleans(),
)
def test_rpc_readable_txn_count_matches_the_rule_read_literally(nodes, data, only_durable):
    majority_size = rules.majority(nodes)
    answered = data.draw(st.integers(min_value=majority_size, max_value=nodes))
    answers = data.draw(
        st.lists(
            st.tuples(st.integers(0, 6), st.integers(0, 3)),
            min_size=answered,
            max_size=answered,
        )
    )
    assert rules.rpc_readable_txn_count(
        answers, majority_size, only_durable
    ) == _readable_by_brute_force(answers, majority_size, only_durable)


def test_a_fenced_writers_longer_tail_is_never_readable():
    # jn0 still caches writer 1's txns 1-5; writer 2's 1-3 are on jn1 and jn2.
    assert rules.rpc_readable_txn_count([(5, 1), (3, 2), (3, 2)], 2, True) == (3, 2)
    assert rules.rpc_readable_txn_count([(5, 1), (3, 2), (3, 2)], 2, False) == (3, 2)


@pytest.mark.parametrize(
    ("last_txid", "unscannable_layout", "allowed"),
    [
        (5, False, True),  # only START_LOG_SEGMENT (the first txid), written alone
        (INVALID_TXID, False, True),  # no txn: a start that reached only this node (§2.10.5)
        (6, False, False),  # txns after the first one
        (INVALID_TXID, True, False),  # a layout too old to scan may hide txns
    ],
)
def test_may_replace_in_progress_segment(last_txid, unscannable_layout, allowed):
    assert rules.may_replace_in_progress_segment(5, last_txid, unscannable_layout) is allowed


# --------------------------------------------------------------- the unknown-md5 rule

MD5_ACCEPTED = "a" * 32
MD5_ON_DISK = "b" * 32


@pytest.mark.parametrize(
    ("accepted_md5", "on_disk_end", "reported_md5"),
    [
        (None, 150, MD5_ON_DISK),  # Hadoop's record: the copy beside it is the accepted one
        (MD5_ACCEPTED, 150, MD5_ACCEPTED),  # ours: as recorded
        (None, 153, None),  # another length: not the accepted copy, nothing filled in
    ],
    ids=["unknown-md5", "known-md5", "other-length"],
)
def test_accepted_state_to_report(accepted_md5, on_disk_end, reported_md5):
    accepted = SegmentState(101, 150, True, accepted_md5)
    on_disk = SegmentState(101, on_disk_end, True, MD5_ON_DISK)
    reported = rules.accepted_state_to_report(accepted, on_disk)
    assert (reported, reported.md5) == (accepted, reported_md5)


# --------------------------------------------------------------- recovery and read rules
_SEGMENTS = st.builds(
    SegmentState,
    st.just(1),
    st.integers(1, 3),
    st.booleans(),
    st.sampled_from([None, "a", "b"]),
)


@settings(max_examples=500, deadline=None)
@given(st.one_of(st.none(), _SEGMENTS), _SEGMENTS, st.integers(-1, 4))
def test_accept_recoverys_checks_are_the_rules_read_literally(current, segment, committed):
    """acceptRecovery keeps its copy only when it is the accepted one: same last txid,
    and same md5 unless none was sent or both copies are finalized; and never replaces a
    copy holding the committed txid by one that does not."""
    literal_same = current is not None and (
        current.end_txid == segment.end_txid
        and (
            segment.md5 is None
            or current.md5 == segment.md5
            or (not current.is_in_progress and not segment.is_in_progress)
        )
    )
    assert recovery_rules.is_same_content(current, segment) == literal_same
    if current is not None:
        holds = current.start_txid <= committed <= current.end_txid
        kept_by_new = segment.start_txid <= committed <= segment.end_txid
        assert recovery_rules.discards_committed(current, segment, committed) == (
            holds and not kept_by_new
        )


@pytest.mark.parametrize(
    ("accepted_md5", "digest", "differs"),
    [(None, "a", False), ("a", "a", False), ("a", "b", True)],
)
def test_finalize_refuses_only_a_copy_other_than_the_accepted_one(accepted_md5, digest, differs):
    assert recovery_rules.finalize_copy_differs(accepted_md5, digest) is differs


@given(st.integers(0, 6), st.integers(0, 5), st.integers(0, 4))
def test_the_journaled_edits_window_never_passes_the_highest_written_txid(since, highest, max_txns):
    if since > highest + 1:
        with pytest.raises(NewerTxnIdException, match=f"Highest txn ID available .* is {highest}"):
            journal_read_rules.journaled_edits_window(since, highest, max_txns)
        return
    window = journal_read_rules.journaled_edits_window(since, highest, max_txns)
    if since == highest + 1:
        assert window is None
    else:
        assert window == min(max_txns, highest - since + 1)
        assert since + window - 1 <= highest


def test_the_manifest_lists_the_in_progress_segment_only_for_the_promised_writer():
    assert journal_read_rules.in_progress_listed(3, 3)
    assert not journal_read_rules.in_progress_listed(2, 3)
