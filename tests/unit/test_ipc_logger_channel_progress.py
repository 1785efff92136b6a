"""LoggerProgress (IPCLoggerChannel's bookkeeping, issue 34 item 3) against a literal
reading of the channel's rules: random runs of sends, answers, failures, resyncs and
commits, checked after every step against a model that keeps only the history."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.qjournal.client.logger_progress import (
    HEARTBEAT_INTERVAL_S,
    DirectAnswer,
    LoggerProgress,
)

pytestmark = pytest.mark.timeout(120)

LIMIT = 100


@dataclass
class History:
    """What happened, and nothing derived: each rule below reads it literally."""

    #: ("io failure" | "resync", seq) in order.
    events: list[tuple[str, int]] = field(default_factory=list)
    #: In-flight batches: seq sent at -> (size, txns, first_txid).
    in_flight: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    #: (last txid, submit time) of the acked batches, in order.
    acks: list[tuple[int, float]] = field(default_factory=list)
    commits: list[tuple[int, float]] = field(default_factory=list)

    def out_of_sync(self) -> bool:
        """Out of sync: an I/O failure of a journal call since the last successful start."""
        for kind, _ in reversed(self.events):
            if kind == "resync":
                return False
            if kind == "io failure":
                return True
        return False

    def went_out_of_sync_after(self, seq: int) -> bool:
        """Some I/O failure after ``seq`` found the node in sync (it went out of sync)."""
        in_sync = True
        for kind, at in self.events:
            if kind == "resync":
                in_sync = True
            elif in_sync:
                in_sync = False
                if at > seq:
                    return True
        return False

    def queued(self) -> tuple[int, int]:
        return (
            sum(size for size, _, _ in self.in_flight.values()),
            sum(txns for _, txns, _ in self.in_flight.values()),
        )


steps = st.lists(
    st.one_of(
        st.tuples(st.just("send"), st.integers(0, 120), st.integers(1, 5)),
        st.tuples(st.just("answer"), st.integers(0, 50), st.sampled_from(["ok", "io", "remote"])),
        st.tuples(st.just("executor failure")),
        st.tuples(st.just("resync")),
        st.tuples(st.just("commit"), st.integers(-2, 10)),
        st.tuples(st.just("heartbeat"), st.floats(0, 3)),
    ),
    max_size=60,
)


@given(steps)
def test_logger_progress_follows_the_literal_rules(run: list[tuple]) -> None:
    progress = LoggerProgress(LIMIT, 0)
    history = History()
    next_txid, now, committed = 1, 0.0, 0
    last_heartbeat: float | None = None
    for seq, step in enumerate(run):
        now += 0.5
        kind = step[0]
        if kind == "send":
            _, size, txns = step
            queued_bytes = history.queued()[0]
            fits = queued_bytes + size <= LIMIT or queued_bytes == 0
            assert progress.fits(size) == fits
            if fits:
                progress.queue(size, txns)
                history.in_flight[seq] = (size, txns, next_txid)
                next_txid += txns
        elif kind == "answer" and history.in_flight:
            _, pick, how = step
            sent = sorted(history.in_flight)[pick % len(history.in_flight)]
            size, txns, first = history.in_flight.pop(sent)
            stale = how == "ok" and (history.out_of_sync() or history.went_out_of_sync_after(sent))
            went = how == "io" and not history.out_of_sync()
            sync_epoch = sum(
                1
                for i, (k, at) in enumerate(history.events)
                if k == "io failure" and at < sent and not History(history.events[:i]).out_of_sync()
            )
            outcome = progress.answered(
                failed=how != "ok",
                io_failure=how == "io",
                sent_sync_epoch=sync_epoch,
                first_txid=first,
                num_txns=txns,
                size=size,
                submit_time=float(sent),
            )
            if how == "io":
                history.events.append(("io failure", seq))
            if how == "ok" and not stale:
                history.acks.append((first + txns - 1, float(sent)))
            expected = (
                DirectAnswer.STALE
                if stale
                else DirectAnswer.ACKED
                if how == "ok"
                else DirectAnswer.WENT_OUT_OF_SYNC
                if went
                else DirectAnswer.FAILED
            )
            assert outcome is expected
        elif kind == "executor failure":
            assert progress.journal_failed() == (not history.out_of_sync())
            history.events.append(("io failure", seq))
        elif kind == "resync":
            assert progress.resynced() == history.out_of_sync()
            history.events.append(("resync", seq))
        elif kind == "commit":
            txid = committed + step[1]
            if txid < committed:
                with pytest.raises(IllegalArgumentException, match="backwards"):
                    progress.commit(txid, now)
            else:
                progress.commit(txid, now)
                committed = txid
                history.commits.append((txid, now))
        elif kind == "heartbeat":
            at = now + step[1]
            due = last_heartbeat is None or at - last_heartbeat > HEARTBEAT_INTERVAL_S
            assert progress.heartbeat_due(at) == due
            if due:
                progress.heartbeat_sent(at)
                last_heartbeat = at
        # After every step: the state is what the history says.
        assert progress.out_of_sync == history.out_of_sync()
        assert (progress.queued_bytes, progress.queued_txns) == history.queued()
        acked = history.acks[-1][0] if history.acks else 0
        assert progress.highest_acked_txid == acked
        assert progress.lag_txns == max(committed - acked, 0)
        if history.acks and history.commits:
            lag_s = history.commits[-1][1] - history.acks[-1][1]
            assert progress.lag_time_ms == int(max(lag_s, 0.0) * 1000)
        else:
            assert progress.lag_time_ms == 0
        report = progress.append_report()
        assert report.startswith(f"Written txid {acked}")
        assert ("never written" in report) == (committed > acked and not history.acks)
        assert ("re-sync on next segment" in report) == history.out_of_sync()


@pytest.mark.parametrize(
    ("queued", "size", "fits"),
    [(0, 10**9, True), (50, 50, True), (50, 51, False), (100, 0, True), (1, 100, False)],
)
def test_the_queue_limit(queued: int, size: int, fits: bool) -> None:
    """A batch over the limit fits only when nothing is queued (digest §5)."""
    progress = LoggerProgress(LIMIT, 0, queued_bytes=queued)
    assert progress.fits(size) is fits
