"""Progress from running Spark tasks to the driver, one item (seed, segment) at a time.

A Spark accumulator reaches the driver only when its task ends — measured on
``local[2]``: a task of four one-second items moves it by four at its end, never
before — so a task of many seeds was one jump of the progress line, minutes apart.
Tasks here also send one UDP datagram per item to a socket the driver opens
(:class:`ProgressReceiver`, at ``spark.driver.host``, which executors already reach):

* fire and forget (:func:`report_done`): a task never waits for the driver, and an
  unreachable driver (a firewall between it and the executors) costs nothing but the
  per-item detail;
* the driver counts the larger of what it heard and the accumulators, which count every
  finished task: a lost datagram only makes the line lag until its task ends;
* each datagram names its item, so a retried task (or a speculative copy) counts
  nothing twice, and carries the job's random token, so a stray datagram counts nothing.

No pyspark here: :func:`report_done` runs on the executors.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, TextIO

from hadoop_qjm.common.progress import Poller, ProgressLine

__all__ = [
    "ItemTracker",
    "ProgressAddress",
    "ProgressReceiver",
    "item_progress",
    "receiver_for",
    "report_done",
]

LOG = logging.getLogger(__name__)

#: Longest item key sent; a datagram stays well under any path MTU.
MAX_KEY = 1000
_DONE, _FAILED = "D", "F"
#: Seconds between reads of the counts while a job runs.
POLL_S = 0.5


@dataclass(frozen=True)
class ProgressAddress:
    """Where a task reports: the driver's UDP socket and the job's token (picklable)."""

    host: str
    port: int
    token: str


def report_done(address: ProgressAddress | None, key: str, failed: bool = False) -> None:
    """Tell the driver at ``address`` that item ``key`` is done (``failed`` or not).
    Never raises and never blocks on the driver; None does nothing."""
    if address is None:
        return
    kind = _FAILED if failed else _DONE
    message = f"{address.token} {kind} {key[:MAX_KEY]}".encode()
    family = socket.AF_INET6 if ":" in address.host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.sendto(message, (address.host, address.port))
    except OSError:
        pass  # best effort: the accumulators still count the task when it ends


class ProgressReceiver:
    """The driver's end: a UDP socket bound to ``bind_host``, read on a thread while the
    ``with`` block runs. :attr:`address` is what tasks report to (``advertised_host``,
    default ``bind_host``); :meth:`counts` is ``(done, failed)`` so far, distinct keys."""

    def __init__(self, bind_host: str, advertised_host: str | None = None) -> None:
        family = socket.AF_INET6 if ":" in bind_host else socket.AF_INET
        self._sock = socket.socket(family, socket.SOCK_DGRAM)
        try:
            self._sock.bind((bind_host, 0))
        except OSError:
            self._sock.close()
            raise
        self._sock.settimeout(0.2)
        self.address = ProgressAddress(
            advertised_host or bind_host, self._sock.getsockname()[1], secrets.token_hex(16)
        )
        self._lock = threading.Lock()
        self._done: set[str] = set()
        self._failed: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="task-progress", daemon=True)

    def __enter__(self) -> ProgressReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._sock.close()

    def counts(self) -> tuple[int, int]:
        with self._lock:
            return len(self._done), len(self._failed)

    def _loop(self) -> None:
        prefix = self.address.token + " "
        # Bounded by the with block: __exit__ sets the event; recv times out every 0.2 s.
        while not self._stop.is_set():
            try:
                data = self._sock.recv(2 * MAX_KEY)
            except TimeoutError:
                continue
            except OSError:
                return
            text = data.decode("utf-8", "replace")
            if not text.startswith(prefix):
                continue
            kind, _, key = text[len(prefix) :].partition(" ")
            if kind not in (_DONE, _FAILED) or not key:
                continue
            with self._lock:
                self._done.add(key)
                if kind == _FAILED:
                    self._failed.add(key)


def receiver_for(spark_conf) -> ProgressReceiver | None:
    """A receiver at the driver's address (``spark.driver.bindAddress``, advertised as
    ``spark.driver.host``); None, with a warning, if that address cannot be bound
    (progress then moves only as tasks end)."""
    host = spark_conf.get("spark.driver.host", "127.0.0.1")
    bind = spark_conf.get("spark.driver.bindAddress", host)
    try:
        return ProgressReceiver(bind, host)
    except OSError as e:
        LOG.warning("Progress per item is off (cannot bind UDP on %s: %s)", bind, e)
        return None


@dataclass(frozen=True)
class ItemTracker:
    """What a job's tasks count with (all picklable into their closures): the driver's
    ``address`` (None: per-item progress off) and two accumulators, ``done`` and
    ``failed``, which reach the driver as each task ends."""

    address: ProgressAddress | None
    done: Any
    failed: Any

    def item_done(self, key: str, failed: bool = False) -> None:
        """On an executor: item ``key`` is done."""
        self.done.add(1)
        if failed:
            self.failed.add(1)
        report_done(self.address, key, failed)


@contextlib.contextmanager
def item_progress(
    sc: Any,
    label: str,
    total: int,
    unit: str,
    *,
    interval_s: float,
    stream: TextIO,
    failed_word: str = "failed",
) -> Iterator[ItemTracker]:
    """While the block runs, the progress line ``label: done/total unit …, N failed``
    on ``stream`` (see :class:`~hadoop_qjm.common.progress.ProgressLine`), counting the
    items the tasks report through the yielded :class:`ItemTracker`. ``interval_s`` 0:
    no line, no socket (the accumulators still count)."""
    tracker = ItemTracker(None, sc.accumulator(0), sc.accumulator(0))
    if interval_s <= 0:
        yield tracker
        return
    with contextlib.ExitStack() as stack:
        receiver = receiver_for(sc.getConf())
        if receiver is not None:
            stack.enter_context(receiver)
            tracker = ItemTracker(receiver.address, tracker.done, tracker.failed)

        def read() -> tuple[float, str]:
            heard_done, heard_failed = receiver.counts() if receiver is not None else (0, 0)
            n_failed = max(int(tracker.failed.value), heard_failed)
            return min(total, max(int(tracker.done.value), heard_done)), f"{n_failed} {failed_word}"

        line = ProgressLine(label, total, unit=unit, stream=stream, interval_s=interval_s)
        with Poller(line, read, min(POLL_S, interval_s)):
            yield tracker
