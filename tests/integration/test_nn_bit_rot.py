"""A NameNode restarting over bit-rotten copies of its finalized segment (issue 27).

The NameNode's only edits dir is a quorum journal; its edits are rolled into one
finalized segment on all three JournalNodes (its local dir holds only the image), then a
byte inside an op flips on disk. The scrubbers are off: the reader alone must cope.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator

import pytest

from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.redundant_edit_log_input_stream import AllCopiesFailedException
from hadoop_qjm.namenode.name_node_core import format_namenode
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import flip_byte_in_op, op_offsets
from tests.integration.namenode_support import nn_conf, start_nn

pytestmark = pytest.mark.timeout(60)

JOURNAL = "myjournal"
DIRS = [f"/dir-{i}" for i in range(12)]


@pytest.fixture
def mjc() -> Iterator[MiniJournalCluster]:
    conf = Configuration()
    conf.set("dfs.journalnode.scrub.enabled", "false")
    with MiniJournalCluster(3, conf=conf) as cluster:
        yield cluster


def write_dirs(mjc: MiniJournalCluster, tmp_path):
    """Format, make DIRS, stop: returns the NameNode's conf and its finalized segment's
    name and {txid of each mkdir: ...} (the txids of DIRS, in order)."""
    conf = nn_conf(tmp_path, name_dirs=("image",), edits=(mjc.quorum_journal_uri(JOURNAL),))
    format_namenode(conf)
    nn = start_nn(conf)

    def finalized(i: int) -> set[str]:
        return {
            p.name
            for p in mjc.current_dir(i, JOURNAL).iterdir()
            if p.name.startswith("edits_0") and not p.name.endswith(".md5")
        }

    try:
        for d in DIRS:
            nn.namesystem.mkdirs(d)
        # Roll while the writer is open: the finalize reaches every node (close() waits
        # for a majority only, and a third node's call still queued when it closes fails).
        nn.roll_edit_log()
        wait_until(
            lambda: (
                all(finalized(i) for i in range(3)) and finalized(0) == finalized(1) == finalized(2)
            ),
            timeout_s=20,
            what="every JournalNode to hold the same finalized segments",
        )
        segments = [mjc.current_dir(0, JOURNAL) / name for name in finalized(0)]
    finally:
        nn.close()
    segment = max(segments, key=lambda p: len(op_offsets(p))).name
    for i in (1, 2):  # every node holds the same finalized bytes
        assert (mjc.current_dir(i, JOURNAL) / segment).read_bytes() == (
            mjc.current_dir(0, JOURNAL) / segment
        ).read_bytes()
    txids = sorted(op_offsets(mjc.current_dir(0, JOURNAL) / segment))
    return conf, segment, txids


def listed(nn) -> list[str]:
    return sorted(s.path for s in nn.namesystem.get_listing("/"))


def late_manifests(mjc: MiniJournalCluster, i: int, delay_s: float = 0.5) -> None:
    """JournalNode ``i`` answers every manifest call ``delay_s`` late."""
    journal = mjc.journal_node(i).get_or_create_journal(JOURNAL)
    real = journal.get_edit_log_manifest

    def late(*args, **kwargs):
        time.sleep(delay_s)
        return real(*args, **kwargs)

    journal.get_edit_log_manifest = late


def test_two_damaged_copies_and_the_good_one_late(mjc, tmp_path, caplog) -> None:
    #   segment [1, n]   jn0: damaged at a mkdir   jn1: damaged at the same   jn2: intact, late
    conf, segment, txids = write_dirs(mjc, tmp_path)
    bad = txids[len(txids) // 2]
    for i in (0, 1):
        flip_byte_in_op(mjc.current_dir(i, JOURNAL) / segment, bad)
    late_manifests(mjc, 2)
    caplog.set_level(logging.INFO)
    nn = start_nn(conf)
    try:
        assert listed(nn) == sorted(DIRS)  # every directory is back, nothing invented
    finally:
        nn.close()
    assert "asking" in caplog.text and "for theirs" in caplog.text


def test_three_copies_damaged_at_different_txids(mjc, tmp_path) -> None:
    #   jn0: damaged at the 3rd mkdir, jn1 at the 6th, jn2 at the 9th: every op is still
    #   read, each from a copy holding it intact.
    conf, segment, txids = write_dirs(mjc, tmp_path)
    mkdirs = txids[-len(DIRS) - 1 :]  # the END_LOG_SEGMENT op is last
    for i, k in enumerate((2, 5, 8)):
        flip_byte_in_op(mjc.current_dir(i, JOURNAL) / segment, mkdirs[k])
    nn = start_nn(conf)
    try:
        assert listed(nn) == sorted(DIRS)
    finally:
        nn.close()


def test_three_copies_damaged_at_the_same_txid(mjc, tmp_path) -> None:
    conf, segment, txids = write_dirs(mjc, tmp_path)
    bad = txids[-len(DIRS) - 1 + 4]  # the 5th mkdir
    offsets = []
    for i in range(3):
        path = mjc.current_dir(i, JOURNAL) / segment
        offsets.append(op_offsets(path)[bad])
        flip_byte_in_op(path, bad)
    with pytest.raises(Exception) as raised:
        start_nn(conf)
    chain = []
    e: BaseException | None = raised.value
    while e is not None:
        chain.append(e)
        e = e.__cause__ or e.__context__
    [error] = [x for x in chain if isinstance(x, AllCopiesFailedException)]
    assert error.txid == bad
    assert len(error.failures) == 3
    for failure, offset in zip(error.failures, offsets, strict=True):
        assert failure.txid == bad
        assert f"at position {offset}" in failure.error
