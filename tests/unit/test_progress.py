"""The progress reporter: the rate/ETA rule as a table and against a literal reading, the
formats, and the two ways of writing (a terminal's rewritten line, bounded plain lines)."""

from __future__ import annotations

import io

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hadoop_qjm.common.progress import (
    Poller,
    ProgressLine,
    TransferProgress,
    format_bytes,
    format_duration,
    rate_and_eta,
    transfer_summary,
)

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("samples", "total", "expected"),
    [
        ([], 10, (0.0, None)),  # nothing measured yet
        ([], 0, (0.0, 0.0)),  # nothing to do
        ([(0.0, 0)], 10, (0.0, None)),  # one sample: no rate
        ([(0.0, 0), (10.0, 5)], 10, (0.5, 10.0)),
        ([(0.0, 0), (10.0, 5)], None, (0.5, None)),  # no total: no ETA
        ([(0.0, 0), (5.0, 5), (10.0, 10)], 10, (1.0, 0.0)),  # done
        ([(0.0, 0), (10.0, 12)], 10, (1.2, 0.0)),  # more than the total (a retried task)
        ([(0.0, 4), (10.0, 4)], 10, (0.0, None)),  # stalled: no ETA
        ([(3.0, 0), (3.0, 5)], 10, (0.0, None)),  # no time between: no rate
        ([(100.0, 50), (120.0, 60)], 100, (0.5, 80.0)),  # a window late in the run
    ],
)
def test_rate_and_eta_table(samples, total, expected):
    assert rate_and_eta(samples, total) == pytest.approx(expected)


@given(
    t0=st.floats(0, 1e6),
    dt=st.floats(0.001, 1e5),
    d0=st.integers(0, 10**9),
    dd=st.integers(1, 10**9),
    left=st.integers(1, 10**9),
)
def test_rate_and_eta_is_what_is_left_over_the_recent_rate(t0, dt, d0, dd, left):
    total = d0 + dd + left
    rate, eta = rate_and_eta([(t0, d0), (t0 + dt, d0 + dd)], total)
    assert rate == pytest.approx(dd / dt)
    assert eta == pytest.approx(left / (dd / dt))


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (0, "0 B"),
        (1023, "1023 B"),
        (1536, "1.50 KB"),
        (12.34 * 1024**2, "12.34 MB"),
        (3 * 1024**3, "3.00 GB"),
        (2 * 1024**5, "2.00 PB"),
        (5 * 1024**6, "5120.00 PB"),
    ],
)
def test_format_bytes(n, text):
    assert format_bytes(n) == text


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0, "0s"), (-3, "0s"), (42.4, "42s"), (59.6, "1m00s"), (185, "3m05s"), (3720, "1h02m")],
)
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_plain_lines_are_bounded_by_the_interval():
    clock, out = FakeClock(), io.StringIO()
    line = ProgressLine("fault-campaign", 100, unit="seeds", stream=out, interval_s=5, clock=clock)
    for done in range(1, 101):
        clock.now += 0.5  # one seed every half second: 50 s in all
        line.update(done)
    line.close("3 failed")
    lines = out.getvalue().splitlines()
    # One line per 5 s (none before the first 5 s), then the final one.
    assert len(lines) == 11, lines
    assert "\r" not in out.getvalue()
    assert lines[0] == "fault-campaign: 10/100 seeds (10%), 2.0 seeds/s, ETA 45s, 5s elapsed"
    assert lines[1].startswith("fault-campaign: 20/100 seeds (20%), ")
    assert lines[-1] == "fault-campaign: 100/100 seeds (100%), 2.0 seeds/s, in 50s, 3 failed"


def test_a_terminal_gets_one_line_rewritten_in_place():
    clock, out = FakeClock(), Terminal()
    line = ProgressLine("fetch", 4 * 1024**2, unit="B", stream=out, interval_s=60, clock=clock)
    assert line.tty
    for done in range(1, 5):
        clock.now += 1
        line.update(done * 1024**2)
    line.close()
    text = out.getvalue()
    assert text.count("\n") == 1 and text.endswith("\n")
    assert text.count("\r") == 5  # every update (1 s apart > TTY interval) and the close
    frames = text.rstrip("\n").split("\r")[1:]
    assert frames[1].startswith("fetch: 2.00 MB/4.00 MB (50%), 1.00 MB/s, ETA 2s")
    assert frames[-1].rstrip() == "fetch: 4.00 MB/4.00 MB (100%), 1.00 MB/s, in 4s"
    # A shorter line pads over what the longer one left.
    assert all(len(f) >= len(frames[0]) for f in frames[1:])


def test_a_log_sink_gets_plain_lines_and_the_rate_is_windowed():
    clock, logged = FakeClock(), []
    line = ProgressLine("sync", None, unit="B", write=logged.append, interval_s=10, clock=clock)
    line.update(0)
    clock.now += 100
    line.update(100 * 1024)  # slow start: 1 KB/s
    for _ in range(40):  # then 10 KB/s for 40 s
        clock.now += 1
        line.update(line.done + 10 * 1024)
    assert "ETA" not in logged[-1]  # no total, no ETA
    # The last 30 s only: 10 KB/s, not the average since the start.
    assert ", 10.00 KB/s," in logged[-1], logged[-1]
    assert len(logged) == 5  # at 100, 110, 120, 130, 140 s


def test_updates_after_close_are_ignored_and_the_poller_closes_once():
    clock, out = FakeClock(), io.StringIO()
    line = ProgressLine("audit", 3, unit="segments", stream=out, clock=clock)
    with Poller(line, lambda: (3, "0 errors"), poll_s=0.01):
        pass
    line.update(1)
    line.close()
    lines = out.getvalue().splitlines()
    assert lines[-1] == "audit: 3/3 segments (100%), 0.0 segments/s, in 0s, 0 errors"
    assert sum("(100%)" in x for x in lines) <= 2 and not any("1/3" in x for x in lines)


def test_a_short_job_gets_only_its_final_line():
    clock, logged = FakeClock(), []
    line = ProgressLine("x", 10, unit="B", write=logged.append, interval_s=10, clock=clock)
    for done in range(1, 11):
        clock.now += 0.1
        line.update(done)
    line.close()
    assert logged == ["x: 10 B/10 B (100%), 10 B/s, in 1s"]


def test_transfer_progress_starts_its_line_when_the_length_is_known():
    clock, out = FakeClock(), Terminal()
    progress = TransferProgress("fsimage_5", stream=out, clock=clock)
    progress.close()  # nothing received yet: nothing written
    assert out.getvalue() == ""
    for received in (1024, 2048):
        clock.now += 1
        progress(received, 4096)
    progress.close("MD5 ok")
    final = out.getvalue().split("\r")[-1]
    # Timed from the request (the progress object's creation), not the first byte.
    assert final.rstrip(" \n") == "fsimage_5: 2.00 KB/4.00 KB (50%), 1.00 KB/s, in 2s, MD5 ok"
    assert progress.line is not None and progress.line.total == 4096


def test_transfer_summary():
    assert transfer_summary(12 * 1024**2, 3) == "12.00 MB in 3s (4.00 MB/s)"
    assert transfer_summary(10, 0) == "10 B in 0s (0 B/s)"


def test_a_poller_with_no_interval_writes_nothing():
    out = io.StringIO()
    with Poller(ProgressLine("x", 1, stream=out), lambda: (1, ""), poll_s=0):
        pass
    assert out.getvalue() == ""


def test_exactly_one_output_is_required():
    with pytest.raises(ValueError):
        ProgressLine("x", 1)
    with pytest.raises(ValueError):
        ProgressLine("x", 1, stream=io.StringIO(), write=print)


def test_a_chunk_per_update_keeps_a_bounded_window():
    clock, logged = FakeClock(), []
    line = ProgressLine("fetch", None, unit="B", write=logged.append, interval_s=5, clock=clock)
    for n in range(1, 100_001):  # 100,000 chunks of 64 KB in 100 s
        clock.now += 0.001
        line.update(n * 65536)
    assert len(line._samples) <= 30 / 0.25 + 2
    assert ", 62.50 MB/s," in logged[-1], logged[-1]
