"""Helpers shared by the NameNode integration tests (not a test module)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.file_journal_manager import FileJournalManager
from hadoop_qjm.editlog.journal_manager import JournalManager
from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.name_node_core import NameNodeCore, format_namenode

__all__ = [
    "Terminations",
    "nn_conf",
    "start_nn",
    "started_name_node",
    "read_ops",
    "FakeJournal",
    "wait_for_journal_nodes",
]


class Terminations:
    """A termination callback that records each call instead of exiting."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, str]] = []

    def __call__(self, status: int, message: str) -> None:
        self.calls.append((status, message))

    @property
    def messages(self) -> list[str]:
        return [message for _, message in self.calls]


def nn_conf(
    base: Path,
    *,
    name_dirs: tuple[str, ...] = ("name",),
    edits: tuple[str, ...] | None = None,
    shared: str | None = None,
    **extra: object,
) -> Configuration:
    """A NameNode configuration under ``base``; ``edits`` entries that are not URIs are
    directories under ``base``."""
    conf = Configuration()
    conf.set("dfs.namenode.name.dir", ",".join(str(base / d) for d in name_dirs))
    if edits is not None:
        conf.set(
            "dfs.namenode.edits.dir",
            ",".join(e if "://" in e else str(base / e) for e in edits),
        )
    if shared is not None:
        conf.set("dfs.namenode.shared.edits.dir", shared)
    for key, value in extra.items():
        conf.set(key, value)
    return conf


def start_nn(
    conf: Configuration, terminations: Terminations | None = None, **kwargs
) -> NameNodeCore:
    return NameNodeCore(conf, terminate=terminations or Terminations(), fs_owner="hdfs", **kwargs)


@contextmanager
def started_name_node(conf: Configuration) -> Iterator[NameNode]:
    """A NameNode daemon of ``conf`` in this process, run by ``hdfs``: formatted, started,
    and stopped after."""
    format_namenode(conf, fs_owner="hdfs")
    nn = NameNode(conf, terminate=Terminations(), fs_owner="hdfs")
    nn.start()
    try:
        yield nn
    finally:
        nn.stop()


def wait_for_journal_nodes(nn: NameNodeCore) -> None:
    """Wait until every JournalNode ran the calls queued for it so far: a quorum call
    returns with a majority, and the others may still be catching up."""
    for jas in nn.edit_log.journal_set.journals:
        loggers = getattr(jas.manager, "loggers", None)
        if loggers is not None:
            loggers.wait_for_all_pending_calls()


def read_ops(current_dir: Path, from_txid: int = 1, in_progress_ok: bool = False) -> list:
    """Every op of the segments in ``current_dir`` from ``from_txid``, in order."""
    ops = []
    for stream in FileJournalManager(None, current_dir).select_input_streams(
        from_txid, in_progress_ok
    ):
        with stream:
            ops.extend(op for op in stream if op.txid >= from_txid)
    return ops


class _FakeStream:
    def __init__(self, journal: FakeJournal, txid: int) -> None:
        self.journal = journal
        self.segment_txid = txid
        self.buffered: list = []
        self.ready: list = []

    def write(self, op) -> None:
        if self.journal.fail_write:
            raise IOException("injected write failure")
        self.buffered.append(op.txid)

    def set_ready_to_flush(self) -> None:
        self.ready, self.buffered = self.buffered, []

    def flush(self, durable: bool = True) -> None:
        if self.journal.on_flush is not None:
            self.journal.on_flush()
        if self.journal.fail_flush:
            raise IOException("injected flush failure")
        self.journal.txids.extend(self.ready)
        self.ready = []

    def should_force_sync(self) -> bool:
        return False

    def close(self) -> None:
        pass

    def abort(self) -> None:
        self.journal.aborts += 1


class FakeJournal(JournalManager):
    """An in-memory journal for ``fake://`` URIs whose writes or flushes can be made to fail."""

    def __init__(self, uri: str = "fake://j") -> None:
        self.uri = uri
        self.fail_write = False
        self.fail_flush = False
        self.on_flush: Callable[[], None] | None = None  # runs first in every flush
        self.txids: list[int] = []
        self.segments: list[tuple[int, int]] = []
        self.aborts = 0

    def start_log_segment(self, txid: int, layout_version: int = CURRENT_LAYOUT_VERSION):
        return _FakeStream(self, txid)

    def finalize_log_segment(self, first_txid: int, last_txid: int) -> None:
        self.segments.append((first_txid, last_txid))

    def recover_unfinalized_segments(self) -> None:
        pass

    def purge_logs_older_than(self, min_txid_to_keep: int) -> None:
        pass

    def select_input_streams(self, from_txid, in_progress_ok=False, only_durable_txns=False):
        return []

    def has_some_data(self) -> bool:
        return bool(self.txids)

    def format(self, ns_info, force: bool = False) -> None:
        pass

    def __str__(self) -> str:
        return f"FakeJournal({self.uri})"
