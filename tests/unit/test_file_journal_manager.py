"""FileJournalManager on real files: segments, recovery of every leftover kind, purge, manifests."""

from __future__ import annotations

import os

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import CorruptionException, IllegalStateException
from hadoop_qjm.common.remote_edit_log import RemoteEditLog
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.file_journal_manager import (
    FileJournalManager,
    finalized_edits_file_name,
    inprogress_edits_file_name,
)
from hadoop_qjm.editlog.fs_edit_log_op import MkdirOp, edit_log_header
from hadoop_qjm.testing.qjm_test_util import create_txn_data

LV = CURRENT_LAYOUT_VERSION
MiB = 1024 * 1024


@pytest.fixture
def fjm(tmp_path):
    current = tmp_path / "current"
    current.mkdir()
    return FileJournalManager(Configuration(), current)


def write_segment(fjm: FileJournalManager, start: int, count: int, finalize: bool = True):
    stream = fjm.start_log_segment(start, LV)
    for txid in range(start, start + count):
        stream.write(MkdirOp.create(txid, f"/dir{txid}"))
    stream.set_ready_to_flush()
    stream.flush()
    if finalize:
        stream.close()
        fjm.finalize_log_segment(start, start + count - 1)
    return stream


def names(fjm: FileJournalManager) -> list[str]:
    return sorted(os.listdir(fjm.current_dir))


def read_txids(streams) -> list[int]:
    txids = []
    for stream in streams:
        with stream:
            while (op := stream.read_op()) is not None:
                txids.append(op.txid)
    return txids


def test_segment_names_have_19_digits():
    assert inprogress_edits_file_name(1) == "edits_inprogress_0000000000000000001"
    assert finalized_edits_file_name(1, 3) == "edits_0000000000000000001-0000000000000000003"


def test_start_and_finalize(fjm):
    write_segment(fjm, 1, 3)
    stream = write_segment(fjm, 4, 2, finalize=False)
    assert names(fjm) == [
        "edits_0000000000000000001-0000000000000000003",
        "edits_inprogress_0000000000000000004",
    ]
    # An open segment is padded to a whole number of MiB; a finalized one is not.
    assert (fjm.current_dir / inprogress_edits_file_name(4)).stat().st_size % MiB == 0
    stream.close()
    fjm.finalize_log_segment(4, 5)
    path = fjm.current_dir / finalized_edits_file_name(4, 5)
    assert path.stat().st_size < MiB
    with pytest.raises(IllegalStateException, match="already exists"):
        (fjm.current_dir / inprogress_edits_file_name(4)).write_bytes(b"")
        fjm.finalize_log_segment(4, 5)


def test_select_input_streams(fjm):
    write_segment(fjm, 1, 3)
    write_segment(fjm, 4, 3)
    write_segment(fjm, 7, 3, finalize=False)
    assert read_txids(fjm.select_input_streams(1)) == list(range(1, 7))
    assert read_txids(fjm.select_input_streams(1, in_progress_ok=True)) == list(range(1, 10))
    # From the middle of a segment: the stream holding the txid, and what follows.
    streams = fjm.select_input_streams(5, in_progress_ok=True)
    assert [s.first_txid for s in streams] == [4, 7]


def test_remote_edit_logs(fjm):
    write_segment(fjm, 1, 3)
    write_segment(fjm, 4, 3)
    write_segment(fjm, 7, 2, finalize=False)
    assert fjm.get_remote_edit_logs(1) == [RemoteEditLog(1, 3), RemoteEditLog(4, 6)]
    assert fjm.get_remote_edit_logs(5) == [RemoteEditLog(4, 6)]
    assert fjm.get_remote_edit_logs(1, in_progress_ok=True)[-1] == RemoteEditLog(7, 8, True)
    assert fjm.get_remote_edit_logs(10) == []


def test_moved_aside_files_are_ignored(fjm):
    write_segment(fjm, 1, 3)
    for suffix in (".empty", ".corrupt", ".trash", ".epoch=5", ".stale"):
        (fjm.current_dir / (inprogress_edits_file_name(4) + suffix)).write_bytes(b"junk")
    (fjm.current_dir / (finalized_edits_file_name(4, 6) + ".trash")).write_bytes(b"junk")
    assert fjm.get_remote_edit_logs(1, in_progress_ok=True) == [RemoteEditLog(1, 3)]
    assert [log.name for log in fjm.get_log_files(0)] == [finalized_edits_file_name(1, 3)]
    fjm.recover_unfinalized_segments()  # nothing to recover: moved-aside files stay as they are
    assert len(names(fjm)) == 7


def test_two_segments_at_the_same_txid_is_an_error(fjm):
    write_segment(fjm, 1, 3)
    (fjm.current_dir / inprogress_edits_file_name(1)).write_bytes(edit_log_header(LV))
    with pytest.raises(IllegalStateException, match="More than one log segment"):
        fjm.get_log_files(0)
    with pytest.raises(IllegalStateException, match="More than one log segment"):
        fjm.get_log_file(1)


def test_recover_zero_length_segment_is_deleted(fjm):
    write_segment(fjm, 1, 3)
    (fjm.current_dir / inprogress_edits_file_name(4)).write_bytes(b"")
    fjm.recover_unfinalized_segments()
    assert names(fjm) == [finalized_edits_file_name(1, 3)]


def test_recover_corrupt_header_is_moved_aside(fjm):
    (fjm.current_dir / inprogress_edits_file_name(1)).write_bytes(b"\xff" * 100)
    with pytest.raises(CorruptionException, match="In-progress edit log file is corrupt"):
        fjm.recover_unfinalized_segments()
    assert names(fjm) == [inprogress_edits_file_name(1) + ".corrupt"]
    fjm.recover_unfinalized_segments()  # a second pass finds nothing left to do


def test_recover_no_transactions_is_moved_aside_as_empty(fjm):
    (fjm.current_dir / inprogress_edits_file_name(4)).write_bytes(
        edit_log_header(LV) + b"\xff" * MiB
    )
    fjm.recover_unfinalized_segments()
    assert names(fjm) == [inprogress_edits_file_name(4) + ".empty"]


def test_recover_finalizes_at_last_valid_txid_without_padding_or_torn_tail(fjm):
    data = edit_log_header(LV) + create_txn_data(1, 5)
    torn = create_txn_data(6, 1)[:-3]
    (fjm.current_dir / inprogress_edits_file_name(1)).write_bytes(data + torn)
    fjm.recover_unfinalized_segments()
    assert names(fjm) == [finalized_edits_file_name(1, 5)]
    assert (fjm.current_dir / finalized_edits_file_name(1, 5)).read_bytes() == data


def test_recover_a_mix_of_leftovers(fjm):
    write_segment(fjm, 1, 3)
    write_segment(fjm, 4, 3, finalize=False)  # a writer died with 4..6 written (padded)
    (fjm.current_dir / inprogress_edits_file_name(7)).write_bytes(b"")  # zero length
    (fjm.current_dir / inprogress_edits_file_name(8)).write_bytes(  # header only
        edit_log_header(LV) + b"\xff" * 1000
    )
    current = write_segment(fjm, 9, 2, finalize=False)  # the one still being written
    fjm.recover_unfinalized_segments()
    assert names(fjm) == [
        finalized_edits_file_name(1, 3),
        finalized_edits_file_name(4, 6),
        inprogress_edits_file_name(8) + ".empty",
        inprogress_edits_file_name(9),
    ]
    assert read_txids(fjm.select_input_streams(1)) == list(range(1, 7))
    current.close()


def test_purge_logs_older_than(fjm):
    for start in (1, 4, 7):
        write_segment(fjm, start, 3)
    (fjm.current_dir / (inprogress_edits_file_name(2) + ".empty")).write_bytes(b"x")
    (fjm.current_dir / (inprogress_edits_file_name(8) + ".empty")).write_bytes(b"x")
    fjm.purge_logs_older_than(7)
    assert names(fjm) == [
        finalized_edits_file_name(7, 9),
        inprogress_edits_file_name(8) + ".empty",
    ]


def test_discard_segments(fjm):
    for start in (1, 4, 7):
        write_segment(fjm, start, 3)
    with pytest.raises(IllegalStateException, match="discard"):
        fjm.discard_segments(5)
    fjm.discard_segments(4)
    assert names(fjm) == [
        finalized_edits_file_name(1, 3),
        finalized_edits_file_name(4, 6) + ".trash",
        finalized_edits_file_name(7, 9) + ".trash",
    ]


def test_get_log_file_finds_exactly_what_a_full_listing_finds(fjm):
    """get_log_file skips the other segments before parsing them (a JournalNode may hold
    thousands); it must find what filtering the whole listing finds, for every name shape."""
    from hadoop_qjm.editlog.file_journal_manager import match_edit_logs

    files = [
        "edits_0000000000000000001-0000000000000000010",
        "edits_0000000000000000011-0000000000000000110",
        "edits_111-120",  # unpadded, still a segment name (Hadoop's regex is \d+)
        "edits_0000000000000000121-0000000000000000100",  # start after end: ignored
        "edits_inprogress_0000000000000000131",
        "edits_inprogress_0000000000000000011.corrupt",  # moved aside
        "edits_inprogress_141.empty",
        "edits_0000000000000000151-0000000000000000160.tmp",
        "VERSION",
        "committed-txid",
        "edits_\u0661-\u0662",  # Arabic-Indic digits: not a segment (Java's \d is ASCII)
        "edits_inprogress_\uff11\uff12",  # fullwidth digits: neither
    ]
    for name in files:
        (fjm.current_dir / name).touch()
    everything = match_edit_logs(fjm.current_dir)

    def key(log):
        return None if log is None else (log.name, log.last_txid, log.is_in_progress)

    for txid in [1, 10, 11, 100, 110, 111, 121, 131, 141, 151, 0, -1, 1000]:
        expected = [log for log in everything if log.first_txid == txid]
        assert len(expected) <= 1
        assert key(fjm.get_log_file(txid)) == key(expected[0] if expected else None), txid
    assert key(fjm.get_log_file(111)) == ("edits_111-120", 120, False)
    assert key(fjm.get_log_file(131))[2] is True
    assert all(log.name.isascii() for log in everything)


def test_a_shared_edits_directory_is_upgraded_rolled_back_and_finalized(tmp_path):
    """Issue 36: FileJournalManager's upgrade calls (a shared edits dir on NFS), through
    NNUpgradeUtil's steps on its StorageDirectory; a name-dir-less FJM cannot."""
    from hadoop_qjm.common.storage import NODE_TYPE_NAME_NODE, StorageDirectory
    from hadoop_qjm.common.storage_info import NamespaceInfo

    sd = StorageDirectory(tmp_path / "shared", NODE_TYPE_NAME_NODE)
    ns = NamespaceInfo(12345, "mycluster", "my-bp")
    sd.format(ns)
    fjm = FileJournalManager(Configuration(), sd)
    write_segment(fjm, 1, 3)
    before = {p.name: p.read_bytes() for p in sd.current.iterdir()}
    upgraded = NamespaceInfo(12345, "mycluster", "my-bp", ctime=99, layout_version=LV - 1)
    fjm.do_pre_upgrade()
    fjm.do_upgrade(upgraded)
    assert fjm.get_journal_ctime() == 99
    assert fjm.can_roll_back(upgraded, ns, LV) is True
    fjm.do_rollback()
    assert {p.name: p.read_bytes() for p in sd.current.iterdir()} == before
    assert fjm.get_journal_ctime() == 0
    assert fjm.can_roll_back(ns, ns, LV) is False
    fjm.do_pre_upgrade()
    fjm.do_upgrade(upgraded)
    fjm.do_finalize()
    assert not sd.previous.exists()
    assert sd.read_storage_info().layout_version == LV - 1
    with pytest.raises(IllegalStateException, match="no storage directory"):
        FileJournalManager(Configuration(), tmp_path / "current-only").do_pre_upgrade()
