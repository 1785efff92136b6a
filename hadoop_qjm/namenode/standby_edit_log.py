"""The edit log a standby's namesystem holds, and a stream cut at a txid (for
:class:`~hadoop_qjm.namenode.name_node_core.NameNodeCore`'s tailing)."""

from __future__ import annotations

from hadoop_qjm.namenode.fs_edit_log import FSEditLog

__all__ = ["CutStream", "StandbyEditLog"]


class StandbyEditLog:
    """The namesystem's edit log while standby: a write that passed the RPC layer's check
    just before a transition to standby is refused here, before it changes anything
    (FSNamesystem checks the HA state again under its lock). A write logged by the edit
    log that was closed (``previous``) and now waits for its sync returns only if that
    log made it durable."""

    def __init__(self, previous: FSEditLog | None = None) -> None:
        self._previous = previous

    def log_edit(self, op) -> int:
        raise self._refusal()

    def log_sync(self, txid: int | None = None) -> None:
        previous = self._previous
        if txid is not None and previous is not None and txid <= previous.synced_txid:
            return
        raise self._refusal()

    @staticmethod
    def _refusal() -> Exception:
        from hadoop_qjm.namenode.protocol.exceptions import StandbyException

        return StandbyException("Operation category WRITE is not supported in state standby")


class CutStream:
    """A stream that ends after ``last`` (dfs.ha.tail-edits.max-txns-per-lock)."""

    def __init__(self, stream, last: int) -> None:
        self._stream = stream
        self._last = last

    def read_op(self):
        op = self._stream.read_op()
        return None if op is None or op.txid > self._last else op

    def __str__(self) -> str:
        return str(self._stream)
