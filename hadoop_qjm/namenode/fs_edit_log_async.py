"""Async edit logging (``dfs.namenode.edits.asynclogging``): Hadoop's FSEditLogAsync.

A handler logs its edit under the namesystem lock as always; what changes is the wait for
the sync. Under the NameNode's IPC server the handler postpones its call's reply
(:meth:`~hadoop_qjm.ipc.selector_server.Call.postpone`) and hands the txid to the
:class:`EditLogSyncer` thread, then takes the next call. The syncer syncs up to the highest
txid handed to it — one ``log_sync`` and one wake-up for the whole group, where each
waiting handler used to be woken — and then lets every reply of the group go. A client
still hears back only once its edit is durable; the handlers are free meanwhile, so they
do not limit how many edits one sync covers.

With pipelined syncs (``dfs.namenode.edits.sync.pipeline.depth`` k > 1) there are k syncer
threads: while one waits for its batch's quorum, the next takes the calls that arrived
meanwhile and sends their batch. :meth:`FSEditLog.log_sync` keeps the order — a syncer
returns only once every earlier batch is durable too — so a reply never goes out before
every edit up to its own is on a quorum.

Outside that server (the TLS server's reader threads, tests calling the namesystem) the
handler waits in ``log_sync`` itself, having given back its handler slot first.
If a sync fails the log is dead and the NameNode terminates; the postponed calls
are answered with the error the handler would have met in ``log_sync``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from hadoop_qjm.editlog.fs_edit_log_op import FSEditLogOp
from hadoop_qjm.ipc.selector_server import Call, current_call
from hadoop_qjm.namenode.protocol.rpc import release_handler_slot

__all__ = ["AsyncLoggingEditLog", "EditLogSyncer"]

LOG = logging.getLogger(__name__)


class EditLogSyncer:
    """One thread syncing for postponed calls (see the module docstring)."""

    def __init__(self, threads: int = 1) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._pending: list[tuple[Any, int, Call]] = []
        self._stopped = False
        self._threads = [
            threading.Thread(target=self._run, name=f"FSEditLogAsync-{i}", daemon=True)
            for i in range(max(1, threads))
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, edit_log: Any, txid: int, call: Call) -> None:
        """Reply to ``call`` once ``edit_log`` has synced ``txid``."""
        call.postpone()
        with self._cond:
            if self._stopped:
                stopped = True
            else:
                stopped = False
                self._pending.append((edit_log, txid, call))
                if len(self._pending) == 1:
                    self._cond.notify()
        if stopped:
            call.abort()

    def stop(self, timeout_s: float | None = None) -> None:
        """Sync and answer what is pending, then end the thread."""
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                LOG.warning(
                    "%s still syncing after %ss; stopping without it", thread.name, timeout_s
                )

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopped:
                    self._cond.wait()
                batch, self._pending = self._pending, []
                if not batch and self._stopped:
                    return
            self._sync(batch)

    @staticmethod
    def _sync(batch: list[tuple[Any, int, Call]]) -> None:
        highest: dict[int, tuple[Any, int]] = {}
        for edit_log, txid, _ in batch:
            known = highest.get(id(edit_log))
            if known is None or txid > known[1]:
                highest[id(edit_log)] = (edit_log, txid)
        failed: dict[int, Exception] = {}
        for key, (edit_log, txid) in highest.items():
            try:
                edit_log.log_sync(txid)
            except Exception as e:  # the log is dead; the NameNode is terminating
                failed[key] = e
        for edit_log, _, call in batch:
            error = failed.get(id(edit_log))
            if error is not None:
                call.fail(error)  # what the handler itself would have answered
            else:
                call.send_response()


class AsyncLoggingEditLog:
    """The namesystem's edit log when async logging is on (see the module docstring)."""

    def __init__(self, edit_log: Any, syncer: EditLogSyncer | None = None) -> None:
        self._edit_log = edit_log
        self._syncer = syncer

    def log_edit(self, op: FSEditLogOp) -> int:
        return self._edit_log.log_edit(op)

    def log_sync(self, txid: int | None = None) -> None:
        call = current_call() if self._syncer is not None else None
        if call is None:
            release_handler_slot()
            self._edit_log.log_sync(txid)
            return
        if txid is None:
            txid = self._edit_log.my_last_txid
        self._syncer.submit(self._edit_log, txid, call)  # type: ignore[union-attr]
