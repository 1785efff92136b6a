"""Executors for IPCLoggerChannel: the direct (same-thread) one and the default pools.

``DirectExecutor`` is Hadoop's test-side ``DirectExecutorService``: ``submit`` runs
the call at once, in the caller's thread, and returns a completed future. The
deterministic fault harness (design paper §5, "the entire system can run, with
injected faults, within a single JVM") passes it to every channel so that all
calls to all JournalNodes happen in one thread, in a fixed order — a failing
seed then replays exactly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["DirectExecutor", "single_thread_executor", "parallel_executor"]

T = TypeVar("T")


class DirectExecutor(Executor):
    """Runs each submitted call immediately in the submitting thread.

    Calls are therefore serialized in submission order, like a single-thread
    executor, but without a thread. After :meth:`shutdown`, ``submit`` raises
    RuntimeError, as ThreadPoolExecutor does.
    """

    def __init__(self) -> None:
        self._shutdown = False
        self._lock = threading.Lock()

    def submit(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> Future[T]:
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
        future: Future[T] = Future()
        future.set_running_or_notify_cancel()
        try:
            result = fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - delivered through the future, like a pool
            future.set_exception(e)
        else:
            future.set_result(result)
        return future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True


def single_thread_executor(name: str) -> ThreadPoolExecutor:
    """The per-JournalNode executor for every state-changing call (calls stay in order)."""
    return ThreadPoolExecutor(
        max_workers=1, thread_name_prefix=f"Logger channel (from single-thread executor) to {name}"
    )


def parallel_executor(name: str, num_threads: int) -> ThreadPoolExecutor:
    """The per-JournalNode pool for reads that may overlap writes (getEditLogManifest, …)."""
    return ThreadPoolExecutor(
        max_workers=max(1, num_threads),
        thread_name_prefix=f"Logger channel (from parallel executor) to {name}",
    )
