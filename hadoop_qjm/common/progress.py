"""Progress of a long job: done / total, rate and ETA, on one line or as plain lines.

One reporter for every long-running command: ``fault-campaign`` (seeds),
``journal-audit`` (segments), ``namenode -bootstrapStandby`` (image bytes) and the
JournalNode syncer's downloads (segment bytes, to the log).

* :func:`rate_and_eta` and the ``format_*`` functions are pure: the rule is in them,
  tested without a clock.
* :class:`ProgressLine` writes: on a terminal one line rewritten in place (``\\r``), at
  most every :data:`TTY_INTERVAL_S`; otherwise (a file, a pipe, a log) a plain line at
  most every ``interval_s``, so a log of a long job grows by a bounded amount. The last
  line (:meth:`ProgressLine.close`) is always written.
* :class:`TransferProgress` is the ``progress(received, length)`` callback of a
  download: its line starts once the length is known.
* :class:`Poller` calls a ``read()`` function on a thread and feeds the line: for a job
  whose progress is counted somewhere else (Spark's executors).
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, TextIO

__all__ = [
    "Poller",
    "ProgressLine",
    "TransferProgress",
    "TTY_INTERVAL_S",
    "format_bytes",
    "format_duration",
    "rate_and_eta",
    "transfer_summary",
]

#: Seconds between rewrites of the line on a terminal.
TTY_INTERVAL_S = 0.2
#: The rate is measured over about this many recent seconds (the whole run before that).
RATE_WINDOW_S = 30.0
SAMPLE_EVERY_S = 0.25


def rate_and_eta(
    samples: Sequence[tuple[float, float]], total: float | None
) -> tuple[float, float | None]:
    """``(rate per second, seconds left or None)`` from ``samples`` of ``(time, done)``,
    oldest first.

    The rate is the progress between the first and the last sample over the time between
    them (0 with fewer than two samples or no time between them). The ETA is what is left
    (``total`` minus the last ``done``) at that rate: 0 when nothing is left, None when
    the total is unknown or the rate is 0 (no estimate yet, or stalled).
    """
    if not samples:
        return 0.0, (0.0 if total is not None and total <= 0 else None)
    (t0, d0), (t1, d1) = samples[0], samples[-1]
    elapsed = t1 - t0
    rate = (d1 - d0) / elapsed if elapsed > 0 and d1 > d0 else 0.0
    if total is None:
        return rate, None
    left = total - d1
    if left <= 0:
        return rate, 0.0
    return rate, (left / rate if rate > 0 else None)


def format_bytes(n: float) -> str:
    """``n`` bytes with a binary prefix and two decimals, as Hadoop's StringUtils.byteDesc:
    ``512 B``, ``1.50 KB``, ``12.34 MB``."""
    if n < 1023.5:
        return f"{round(n)} B"
    value = n / 1024.0
    for prefix in ("KB", "MB", "GB", "TB"):
        if value < 1024:
            return f"{value:.2f} {prefix}"
        value /= 1024.0
    return f"{value:.2f} PB"


def format_duration(seconds: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``: a duration for a person, to the second."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def transfer_summary(n_bytes: int, seconds: float) -> str:
    """``12.00 MB in 3s (4.00 MB/s)``: a finished transfer, for a log line."""
    rate, _ = rate_and_eta([(0.0, 0.0), (seconds, float(n_bytes))], None)
    return f"{format_bytes(n_bytes)} in {format_duration(seconds)} ({format_bytes(rate)}/s)"


def _format_rate(per_s: float, unit: str) -> str:
    if unit == "B":
        return f"{format_bytes(per_s)}/s"
    if per_s >= 1 or per_s == 0:
        return f"{per_s:.1f} {unit}/s"
    return f"{per_s * 60:.1f} {unit}/min"


class ProgressLine:
    """``label: done/total unit (P%), rate, ETA …[, note]``, written as the job goes.

    ``unit`` "B" formats the counts as bytes. Output goes to ``stream`` (a terminal gets
    one rewritten line unless ``tty`` says otherwise) or, if ``write`` is given, to that
    function one plain line at a time (a logger's ``info``). ``clock`` is a parameter so
    that tests need no sleep.
    """

    def __init__(
        self,
        label: str,
        total: float | None,
        *,
        unit: str = "",
        stream: TextIO | None = None,
        write: Callable[[str], object] | None = None,
        tty: bool | None = None,
        interval_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
        started: float | None = None,
    ) -> None:
        if (stream is None) == (write is None):
            raise ValueError("ProgressLine needs exactly one of stream and write")
        self.label = label
        self.total = total
        self.unit = unit
        self.interval_s = interval_s
        self._stream = stream
        self._write = write
        if tty is None:
            tty = write is None and bool(getattr(stream, "isatty", lambda: False)())
        self.tty = tty
        self._clock = clock
        self.started = clock() if started is None else started
        self._samples: deque[tuple[float, float]] = deque([(self.started, 0.0)])
        self._last_write: float | None = None
        self._last_text = ""
        self._width = 0
        self._closed = False
        self.done = 0.0

    def _count(self, n: float) -> str:
        return format_bytes(n) if self.unit == "B" else f"{int(n)}"

    def text(self, note: str = "", *, final: bool = False) -> str:
        """The line for the progress so far (also what :meth:`close` writes)."""
        now = self._clock()
        elapsed = now - self.started
        unit = "" if self.unit == "B" else f" {self.unit}" if self.unit else ""
        if self.total is not None:
            parts = [f"{self._count(self.done)}/{self._count(self.total)}{unit}"]
            if self.total > 0:
                parts[0] += f" ({100.0 * min(self.done, self.total) / self.total:.0f}%)"
        else:
            parts = [f"{self._count(self.done)}{unit}"]
        if final:
            overall, _ = rate_and_eta([(self.started, 0.0), (now, self.done)], None)
            parts.append(f"{_format_rate(overall, self.unit or 'items')}")
            parts.append(f"in {format_duration(elapsed)}")
        else:
            rate, eta = rate_and_eta([self._samples[0], (now, self.done)], self.total)
            parts.append(_format_rate(rate, self.unit or "items"))
            if self.total is not None:
                parts.append(f"ETA {format_duration(eta)}" if eta is not None else "ETA ?")
            parts.append(f"{format_duration(elapsed)} elapsed")
        if note:
            parts.append(note)
        return f"{self.label}: " + ", ".join(parts)

    def update(self, done: float, note: str = "") -> None:
        """Record ``done`` (a running total) and write a line if one is due."""
        if self._closed:
            return
        now = self._clock()
        self.done = done
        # The window: a sample every SAMPLE_EVERY_S at most (a download updates once per
        # chunk), none older than RATE_WINDOW_S but the one that starts the window.
        if now - self._samples[-1][0] >= SAMPLE_EVERY_S:
            self._samples.append((now, float(done)))
        while len(self._samples) > 1 and now - self._samples[1][0] >= RATE_WINDOW_S:
            self._samples.popleft()
        if self.tty:
            due = self._last_write is None or now - self._last_write >= TTY_INTERVAL_S
        else:
            # Plain lines: none for a job shorter than the interval (its final line says
            # it all), then one per interval.
            due = now - (self._last_write or self.started) >= self.interval_s
        if not due:
            return
        text = self.text(note)
        if text == self._last_text:
            return
        self._emit(text, final=False)
        self._last_write = now

    def close(self, note: str = "") -> None:
        """Write the final line (overall rate and time taken); later updates are ignored."""
        if self._closed:
            return
        self._closed = True
        self._emit(self.text(note, final=True), final=True)

    def _emit(self, text: str, *, final: bool) -> None:
        self._last_text = text
        if self._write is not None:
            self._write(text)
            return
        stream: TextIO = self._stream  # type: ignore[assignment] - one of the two is set
        if self.tty:
            # Pad over the rest of a longer previous line.
            pad = " " * max(0, self._width - len(text))
            self._width = len(text)
            stream.write("\r" + text + pad + ("\n" if final else ""))
        else:
            stream.write(text + "\n")
        stream.flush()


class TransferProgress:
    """``progress(received, length)`` for a download (:func:`~hadoop_qjm.common.
    http_transfer.download_to_file`, :func:`~hadoop_qjm.namenode.transfer_fs_image.
    download_image`): a :class:`ProgressLine` in bytes, made at the first call, when the
    length is known, timed from this object's creation (the request included);
    ``line_args`` are its keyword arguments. :meth:`close` writes its final line, if it
    was started."""

    def __init__(self, label: str, **line_args: Any) -> None:
        self.label = label
        self.line_args = line_args
        self.started = line_args.get("clock", time.monotonic)()
        self.line: ProgressLine | None = None

    def __call__(self, received: int, length: int) -> None:
        if self.line is None:
            self.line = ProgressLine(
                self.label, length, unit="B", started=self.started, **self.line_args
            )
        self.line.update(received)

    def close(self, note: str = "") -> None:
        if self.line is not None:
            self.line.close(note)


class Poller:
    """A thread that feeds ``line`` with ``read()`` -> ``(done, note)`` every ``poll_s``,
    while the ``with`` block runs; on exit one last read and :meth:`ProgressLine.close`.

    With ``poll_s`` 0 nothing is written (a job run with progress off)."""

    def __init__(
        self,
        line: ProgressLine,
        read: Callable[[], tuple[float, str]],
        poll_s: float,
    ) -> None:
        self.line = line
        self.read = read
        self.poll_s = poll_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="progress", daemon=True)

    def __enter__(self) -> Poller:
        if self.poll_s > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)
        if self.poll_s > 0:
            done, note = self.read()
            self.line.update(done, note)
            self.line.close(note)

    def _loop(self) -> None:
        # Bounded by the with block: __exit__ sets the event.
        while not self._stop.wait(self.poll_s):
            done, note = self.read()
            self.line.update(done, note)
