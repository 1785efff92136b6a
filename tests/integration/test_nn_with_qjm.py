"""TestNNWithQJM (HADOOP-QJM-DIGEST.md §8): a NameNode whose only edits dir is a quorum journal.

As in Hadoop's test, ``dfs.namenode.edits.dir`` is the ``qjournal://`` URI itself (a
non-HA NameNode writing to JournalNodes), and ``dfs.namenode.name.dir`` is a local
directory that holds only images, VERSION and seen_txid.
"""

from __future__ import annotations

import logging
import shutil

import pytest

from hadoop_qjm.common.exceptions import ExitException
from hadoop_qjm.namenode.name_node_core import format_namenode
from tests.integration.namenode_support import Terminations, nn_conf, start_nn

TEST_PATH = "/test-dir-1"
TEST_PATH_2 = "/test-dir-2"


def test_log_and_restart(mjc, tmp_path) -> None:
    conf = nn_conf(tmp_path, name_dirs=("image",), edits=(mjc.quorum_journal_uri("myjournal"),))
    format_namenode(conf)
    nn = start_nn(conf)
    try:
        nn.namesystem.mkdirs(TEST_PATH)
    finally:
        nn.close()
    # Restart the NN and make sure the edit was persisted and loaded again.
    nn = start_nn(conf)
    try:
        assert nn.namesystem.get_file_info(TEST_PATH) is not None
        nn.namesystem.mkdirs(TEST_PATH_2)
    finally:
        nn.close()
    # Restart again: both edits are there.
    nn = start_nn(conf)
    try:
        assert nn.namesystem.get_file_info(TEST_PATH) is not None
        assert nn.namesystem.get_file_info(TEST_PATH_2) is not None
    finally:
        nn.close()
    # The edits live only in the JournalNodes.
    local = sorted(p.name for p in (tmp_path / "image" / "current").iterdir())
    assert not [name for name in local if name.startswith("edits")]
    holders = [
        i
        for i in range(3)
        if any(p.name.startswith("edits_") for p in mjc.current_dir(i, "myjournal").iterdir())
    ]
    assert len(holders) >= 2  # a quorum


def test_new_namenode_takes_over_writer(mjc, tmp_path) -> None:
    uri = mjc.quorum_journal_uri("myjournal")
    conf = nn_conf(tmp_path, name_dirs=("image-nn1",), edits=(uri,))
    format_namenode(conf)
    start_nn(conf).close()  # start once to create the directories
    # A second NameNode needs a copy of the first one's image, or the journal would
    # refuse it for its namespace.
    shutil.copytree(tmp_path / "image-nn1", tmp_path / "image-nn2")
    (tmp_path / "image-nn2" / "in_use.lock").unlink(missing_ok=True)

    terminations = Terminations()
    nn1 = start_nn(conf, terminations)
    try:
        nn1.namesystem.mkdirs(TEST_PATH)
        conf2 = nn_conf(tmp_path, name_dirs=("image-nn2",), edits=(uri,))
        nn2 = start_nn(conf2)
        try:
            # The new NameNode recovered the first one's open segment and sees its edits.
            assert nn2.namesystem.get_file_info(TEST_PATH) is not None
        finally:
            nn2.close()
        # The old NameNode was fenced by the new epoch: its next write must abort it.
        with pytest.raises(
            ExitException, match="Could not sync enough journals to persistent storage"
        ):
            nn1.namesystem.mkdirs("/x")
        assert terminations.messages and terminations.messages[0].startswith(
            "Could not sync enough journals to persistent storage"
        )
    finally:
        nn1.abort()


def test_mismatched_nn_is_rejected(mjc, tmp_path, caplog) -> None:
    uri = mjc.quorum_journal_uri("myjournal")
    conf = nn_conf(tmp_path, name_dirs=("image",), edits=(uri,))
    # Start a NN, so the storage is formatted -- both on-disk and QJM.
    format_namenode(conf)
    nn = start_nn(conf)
    nn.namesystem.mkdirs(TEST_PATH)
    nn.close()
    # Reformat just the on-disk portion.
    on_disk_only = nn_conf(tmp_path, name_dirs=("image",))
    format_namenode(on_disk_only, force=True)
    # Start the NN: it must fail, because the JNs are still formatted with the old
    # namespace id.
    caplog.set_level(logging.ERROR)
    terminations = Terminations()
    with pytest.raises(ExitException, match="Unable to start log segment 1: too few journals"):
        start_nn(conf, terminations)
    assert terminations.messages == [
        "Unable to start log segment 1: too few journals successfully started."
    ]
    assert "Incompatible namespaceID for journal" in caplog.text


def test_mismatched_nn_with_a_required_shared_journal_terminates_at_recovery(mjc, tmp_path) -> None:
    uri = mjc.quorum_journal_uri("shared")
    conf = nn_conf(tmp_path, name_dirs=("image",), shared=uri)
    format_namenode(conf)
    start_nn(conf).close()
    format_namenode(nn_conf(tmp_path, name_dirs=("image",)), force=True)
    terminations = Terminations()
    with pytest.raises(ExitException, match="recoverUnfinalizedSegments failed for required"):
        start_nn(conf, terminations)
    assert len(terminations.calls) == 1
    assert "Incompatible namespaceID" in terminations.messages[0]


def test_restart_after_a_crash_recovers_the_open_segment(mjc, tmp_path) -> None:
    conf = nn_conf(tmp_path, name_dirs=("image",), shared=mjc.quorum_journal_uri("crashy"))
    format_namenode(conf)
    nn = start_nn(conf)
    nn.namesystem.mkdirs("/before-crash/a")
    nn.namesystem.create("/before-crash/f")
    snapshot = nn.namesystem.snapshot()
    last = nn.edit_log.last_written_txid
    nn.abort()  # no OP_END_LOG_SEGMENT, nothing finalized
    local = tmp_path / "image" / "current"
    assert any(p.name.startswith("edits_inprogress_") for p in local.iterdir())

    nn = start_nn(conf)
    try:
        assert nn.namesystem.snapshot() == snapshot
        # Both the local copy and the quorum's were finalized at the last durable txid.
        assert f"edits_{1:019d}-{last:019d}" in {p.name for p in local.iterdir()}
        assert nn.edit_log.cur_segment_txid == last + 1
    finally:
        nn.close()
