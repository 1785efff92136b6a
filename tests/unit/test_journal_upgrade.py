"""A Journal's part in the HA upgrade of the layout (HDFS-5138; Hadoop's Journal.doPreUpgrade
… doRollback, NNUpgradeUtil), on real files in a temp dir, and the start-up of a journal
directory a crash or Hadoop left in the middle of one (JNStorage.analyzeAndRecoverStorage).

The journal of every test: epoch 1 wrote segments 1-3 (finalized) and 4-5 (left in progress,
its writer gone), then epoch 2 was promised::

    <jid>/current/VERSION (LV -67)  last-promised-epoch 2  last-writer-epoch 1
             committed-txid 5  paxos/  edits_1-3  edits_inprogress_4
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hadoop_qjm.common import durable
from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import (
    IllegalStateException,
    InconsistentFSStateException,
    IOException,
)
from hadoop_qjm.common.java_properties import load_properties
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.testing import qjm_test_util
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, create_txn_data, make_request

pytestmark = pytest.mark.timeout(60)

LV = CURRENT_LAYOUT_VERSION
NEW_LV = LV - 1
UPGRADED = StorageInfo(NEW_LV, FAKE_NSINFO.namespace_id, FAKE_NSINFO.cluster_id, 1700000000000)
FINALIZED = "edits_0000000000000000001-0000000000000000003"
IN_PROGRESS = "edits_inprogress_0000000000000000004"


def _write(journal: Journal) -> None:
    journal.new_epoch(FAKE_NSINFO, 1)
    journal.start_log_segment(make_request(1), 1, LV)
    journal.journal(make_request(2), 1, 1, 3, create_txn_data(1, 3))
    journal.finalize_log_segment(make_request(3, committed_txid=3), 1, 3)
    journal.start_log_segment(make_request(4, committed_txid=3), 4, LV)
    journal.journal(make_request(5, committed_txid=3), 4, 4, 2, create_txn_data(4, 2))
    journal.heartbeat(make_request(6, committed_txid=5))
    journal.new_epoch(FAKE_NSINFO, 2)  # the upgrading NameNode's epoch: no segment open


@pytest.fixture
def conf():
    return Configuration()


@pytest.fixture
def journal_dir(tmp_path: Path) -> Path:
    return tmp_path / JID


@pytest.fixture
def journal(conf, journal_dir):
    j = Journal(conf, journal_dir, JID)
    j.format(FAKE_NSINFO)
    _write(j)
    j.close()  # written out, as a JournalNode leaves it
    j = Journal(conf, journal_dir, JID)
    yield j
    j.close()


def _version(path: Path) -> dict[str, str]:
    return load_properties((path / "VERSION").read_bytes())


def _committed(path: Path) -> int:
    return int.from_bytes((path / "committed-txid").read_bytes(), "big", signed=True)


def test_pre_upgrade_moves_current_aside_and_takes_the_edits_along(journal, journal_dir):
    before = qjm_test_util.snapshot_files(journal_dir / "current")
    journal.do_pre_upgrade()
    assert qjm_test_util.snapshot_files(journal_dir / "previous.tmp") == before
    current = journal_dir / "current"
    # The finalized segment's kept md5 (segment_md5) goes along, as Hadoop takes every edits* file.
    assert sorted(os.listdir(current)) == [FINALIZED, FINALIZED + ".md5", IN_PROGRESS]
    # Finalized: hard-linked (Hadoop). In progress: copied, so that finalizing it (which
    # truncates its padding in place) cannot change the copy kept for a rollback.
    assert (
        os.stat(current / FINALIZED).st_ino
        == os.stat(journal_dir / "previous.tmp" / FINALIZED).st_ino
    )
    assert (
        os.stat(current / IN_PROGRESS).st_ino
        != os.stat(journal_dir / "previous.tmp" / IN_PROGRESS).st_ino
    )
    assert (current / IN_PROGRESS).read_bytes() == before[IN_PROGRESS]
    # Until doUpgrade, the journal takes no write: it would go to a current/ a restart deletes.
    with pytest.raises(IOException, match="is being upgraded"):
        journal.new_epoch(FAKE_NSINFO, 3)
    with pytest.raises(IOException, match="is being upgraded"):
        journal.get_last_promised_epoch()


def test_pre_upgrade_refuses_while_a_previous_upgrade_is_not_finalized(journal, journal_dir):
    journal.do_pre_upgrade()
    journal.do_upgrade(UPGRADED)
    before = qjm_test_util.snapshot_files(journal_dir)
    with pytest.raises(IllegalStateException, match="Previous directory must not exist"):
        journal.do_pre_upgrade()
    assert qjm_test_util.snapshot_files(journal_dir) == before


def test_upgrade_writes_the_new_version_and_carries_the_epochs_over(journal, journal_dir):
    old_version = (journal_dir / "current" / "VERSION").read_bytes()
    journal.do_pre_upgrade()
    journal.do_upgrade(UPGRADED)
    current, previous = journal_dir / "current", journal_dir / "previous"
    assert not (journal_dir / "previous.tmp").exists()
    assert (previous / "VERSION").read_bytes() == old_version
    version = _version(current)
    assert version["layoutVersion"] == str(NEW_LV)
    assert version["cTime"] == str(UPGRADED.ctime)
    assert version["namespaceID"] == str(FAKE_NSINFO.namespace_id)
    assert version["clusterID"] == FAKE_NSINFO.cluster_id
    assert version["storageType"] == "JOURNAL_NODE"
    assert (current / "last-promised-epoch").read_text() == "2\n"
    assert (current / "last-writer-epoch").read_text() == "1\n"
    assert _committed(current) == 5
    assert (current / "paxos").is_dir()
    assert journal.get_journal_ctime() == UPGRADED.ctime
    assert journal.get_last_promised_epoch() == 2
    # Writing resumes, in the new current/ only.
    journal.new_epoch(FAKE_NSINFO, 3)
    journal.start_log_segment(make_request(1, epoch=3, committed_txid=5), 6, NEW_LV)
    journal.journal(make_request(2, epoch=3, committed_txid=5), 6, 6, 1, create_txn_data(6, 1))
    assert (current / "edits_inprogress_0000000000000000006").exists()
    assert not (previous / "edits_inprogress_0000000000000000006").exists()


def test_upgrade_refuses_another_namespace_and_changes_nothing(journal, journal_dir):
    journal.do_pre_upgrade()
    before = qjm_test_util.snapshot_files(journal_dir)
    with pytest.raises(IOException, match="Incompatible namespaceID"):
        journal.do_upgrade(StorageInfo(NEW_LV, 999, FAKE_NSINFO.cluster_id, 1))
    assert qjm_test_util.snapshot_files(journal_dir) == before


def test_upgrade_without_pre_upgrade_is_refused(journal, journal_dir):
    before = qjm_test_util.snapshot_files(journal_dir)
    with pytest.raises(IllegalStateException, match="previous.tmp directory must exist"):
        journal.do_upgrade(UPGRADED)
    assert qjm_test_util.snapshot_files(journal_dir) == before


def test_finalize_removes_previous(journal, journal_dir):
    journal.do_finalize()  # nothing to finalize: nothing done
    journal.do_pre_upgrade()
    journal.do_upgrade(UPGRADED)
    journal.do_finalize()
    assert sorted(p.name for p in journal_dir.iterdir()) == ["current", "in_use.lock"]
    assert _version(journal_dir / "current")["layoutVersion"] == str(NEW_LV)
    assert not journal.can_roll_back(UPGRADED, FAKE_NSINFO.storage_info(), LV)


def test_can_roll_back_iff_previous_holds_the_target_layout(journal):
    me = FAKE_NSINFO.storage_info()
    assert journal.can_roll_back(me, me, LV) is False
    journal.do_pre_upgrade()
    journal.do_upgrade(UPGRADED)
    assert journal.can_roll_back(UPGRADED, me, LV) is True
    with pytest.raises(IOException, match=f"Cannot rollback to storage version {LV} using this"):
        journal.can_roll_back(UPGRADED, me, NEW_LV)
    with pytest.raises(InconsistentFSStateException, match="namespaceID is incompatible"):
        journal.can_roll_back(UPGRADED, StorageInfo(LV, 999, "mycluster", 0), LV)


def test_upgrade_then_rollback_leaves_the_directory_as_it_was_but_the_promise(
    journal, journal_dir, conf
):
    """Issue 36: -upgrade then -rollback is byte-identical but for the epoch files."""
    before = qjm_test_util.snapshot_files(journal_dir)
    journal.do_pre_upgrade()
    journal.do_upgrade(UPGRADED)
    journal.new_epoch(FAKE_NSINFO, 3)  # the upgraded NameNode writes a little
    journal.start_log_segment(make_request(1, epoch=3, committed_txid=5), 6, NEW_LV)
    journal.journal(make_request(2, epoch=3, committed_txid=7), 6, 6, 2, create_txn_data(6, 2))
    journal.new_epoch(FAKE_NSINFO, 4)  # the rolling-back NameNode's epoch
    journal.do_rollback()
    after = qjm_test_util.snapshot_files(journal_dir)
    assert after.pop("current/last-promised-epoch") == b"4\n"  # never goes down
    assert before.pop("current/last-promised-epoch") == b"2\n"
    assert after == before
    assert not (journal_dir / "previous").exists()
    assert journal.get_journal_ctime() == 0
    assert journal.get_last_promised_epoch() == 4
    assert journal.highest_written_txid == 5
    journal.new_epoch(FAKE_NSINFO, 5)
    journal.close()
    reopened = Journal(conf, journal_dir, JID)
    try:
        assert reopened.get_last_promised_epoch() == 5
        assert reopened.get_committed_txid() == 5
    finally:
        reopened.close()


def test_a_restart_after_pre_upgrade_puts_current_back(journal, journal_dir, conf):
    """RECOVER_UPGRADE: previous.tmp/ and a current/ without VERSION."""
    before = qjm_test_util.snapshot_files(journal_dir / "current")
    journal.do_pre_upgrade()
    journal.close()
    again = Journal(conf, journal_dir, JID)
    try:
        assert again.is_formatted()
        assert not (journal_dir / "previous.tmp").exists()
        assert qjm_test_util.snapshot_files(journal_dir / "current") == before
        assert again.get_last_promised_epoch() == 2
    finally:
        again.close()


def _upgrade_crashing(journal: Journal, conf, monkeypatch, target, name: str, fake) -> Journal:
    """doPreUpgrade, then doUpgrade with ``target.name`` replaced by ``fake`` (which raises
    "power cut" where the crash is), then a restart: the journal that comes back."""
    journal.do_pre_upgrade()
    monkeypatch.setattr(target, name, fake)
    with pytest.raises(OSError, match="power cut"):
        journal.do_upgrade(UPGRADED)
    monkeypatch.undo()
    journal.close()
    return Journal(conf, journal.storage.log_dir, JID)


def _power_cut(*args, **kwargs):
    raise OSError("power cut")


def test_a_crash_before_the_new_version_undoes_the_upgrade(journal, journal_dir, conf, monkeypatch):
    """doUpgrade's copies are written before VERSION: a crash there is a RECOVER_UPGRADE."""
    before = qjm_test_util.snapshot_files(journal_dir / "current")
    sd = journal.storage.sd
    again = _upgrade_crashing(journal, conf, monkeypatch, sd, "write_properties", _power_cut)
    try:
        assert qjm_test_util.snapshot_files(journal_dir / "current") == before
        assert not (journal_dir / "previous.tmp").exists()
    finally:
        again.close()


def test_a_crash_after_the_new_version_completes_the_upgrade(
    journal, journal_dir, conf, monkeypatch
):
    """COMPLETE_UPGRADE: VERSION written, previous.tmp/ not renamed yet. The promise is
    already in the new current/ (Hadoop copies it after the rename: a crash there would
    leave an upgraded journal that promised nothing)."""
    real_rename = os.rename

    def rename(src, dst):
        if Path(src).name == "previous.tmp":
            _power_cut()
        real_rename(src, dst)

    again = _upgrade_crashing(journal, conf, monkeypatch, os, "rename", rename)
    try:
        assert (journal_dir / "previous").is_dir()
        assert not (journal_dir / "previous.tmp").exists()
        assert again.get_last_promised_epoch() == 2
        assert again.get_journal_ctime() == UPGRADED.ctime
        assert again.can_roll_back(UPGRADED, FAKE_NSINFO.storage_info(), LV)
    finally:
        again.close()


# ---- a directory as Hadoop's JournalNode leaves it mid-upgrade ---------------------------------


def test_a_hadoop_directory_with_previous_is_read_and_can_roll_back(journal, journal_dir, conf):
    journal.close()
    qjm_test_util.lay_out_as_hadoop_upgraded(journal_dir, NEW_LV, UPGRADED.ctime)
    again = Journal(conf, journal_dir, JID)
    try:
        assert again.is_formatted()
        assert again.get_journal_ctime() == UPGRADED.ctime
        assert again.get_last_promised_epoch() == 2
        assert again.get_committed_txid() == 5
        assert again.can_roll_back(UPGRADED, FAKE_NSINFO.storage_info(), LV)
        again.do_rollback()
        assert _version(journal_dir / "current")["layoutVersion"] == str(LV)
        assert again.get_journal_ctime() == 0
    finally:
        again.close()


@pytest.mark.parametrize(
    ("layout", "expected"),
    [
        # COMPLETE_UPGRADE: previous.tmp/ and current/VERSION -> previous.tmp/ is previous/
        ({"previous.tmp": LV, "current": NEW_LV}, {"previous": LV, "current": NEW_LV}),
        # RECOVER_UPGRADE: previous.tmp/, current/ without VERSION -> previous.tmp/ is current/
        ({"previous.tmp": LV, "current": None}, {"current": LV}),
        # COMPLETE_ROLLBACK: removed.tmp/ and current/ -> removed.tmp/ deleted
        ({"removed.tmp": NEW_LV, "current": LV}, {"current": LV}),
        # RECOVER_ROLLBACK: removed.tmp/ and previous/ -> removed.tmp/ is current/ again
        ({"removed.tmp": NEW_LV, "previous": LV}, {"current": NEW_LV, "previous": LV}),
        # COMPLETE_FINALIZE: finalized.tmp/ -> deleted
        ({"finalized.tmp": LV, "current": NEW_LV}, {"current": NEW_LV}),
    ],
    ids=[
        "complete-upgrade",
        "recover-upgrade",
        "complete-rollback",
        "recover-rollback",
        "complete-finalize",
    ],
)
def test_a_step_a_crash_interrupted_is_finished_or_undone_at_start_up(
    tmp_path, conf, layout, expected
):
    """Hadoop's StorageDirectory.doRecover rules, then the journal is formatted at once."""
    root = tmp_path / JID
    for name, lv in layout.items():
        if lv is None:
            (root / name).mkdir(parents=True)
            (root / name / "edits_0000000000000000001-0000000000000000001").write_bytes(b"x")
        else:
            qjm_test_util.write_hadoop_version(root / name, lv, 0 if lv == LV else UPGRADED.ctime)
    journal = Journal(conf, root, JID)
    try:
        found = {p.name: int(_version(p)["layoutVersion"]) for p in root.iterdir() if p.is_dir()}
        assert found == expected
        assert journal.is_formatted()
    finally:
        journal.close()


def test_two_temporary_directories_are_refused_and_changed_nothing(tmp_path, conf):
    root = tmp_path / JID
    qjm_test_util.write_hadoop_version(root / "current", LV, 0)
    qjm_test_util.write_hadoop_version(root / "previous.tmp", LV, 0)
    qjm_test_util.write_hadoop_version(root / "removed.tmp", LV, 0)
    before = qjm_test_util.snapshot_files(root)
    with pytest.raises(InconsistentFSStateException, match="too many temporary directories"):
        Journal(conf, root, JID)
    assert qjm_test_util.snapshot_files(root) == before


# ---- discardSegments (a rolling upgrade's rollback) --------------------------------------------


def test_discard_refuses_an_in_progress_segment_holding_txns_past_the_point(journal, journal_dir):
    """Hadoop checks only finalized segments; edits_inprogress_4 holds 4-5, so discarding
    from 5 would leave txn 5 to come back when the segment is recovered."""
    before = qjm_test_util.snapshot_files(journal_dir)
    with pytest.raises(IllegalStateException, match="crosses the discard point 5"):
        journal.discard_segments(5)
    assert qjm_test_util.snapshot_files(journal_dir) == before
    journal.discard_segments(4)
    names = sorted(os.listdir(journal_dir / "current"))
    assert f"{IN_PROGRESS}.trash" in names and FINALIZED in names
    assert journal.get_committed_txid() == 3
    assert journal.highest_written_txid == 3


def test_discard_fsyncs_the_lowered_committed_txid(journal, journal_dir, monkeypatch):
    synced: list[str] = []
    real_fsync = os.fsync

    def recording_fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(durable.os, "fsync", recording_fsync)
    journal.discard_segments(4)
    assert str((journal_dir / "current" / "committed-txid").resolve()) in synced


def test_a_bad_previous_version_is_named_as_such(journal, journal_dir):
    journal.do_pre_upgrade()
    journal.do_upgrade(UPGRADED)
    version = journal_dir / "previous" / "VERSION"
    version.write_text(version.read_text().replace("layoutVersion", "layout"))
    with pytest.raises(
        InconsistentFSStateException, match=r"previous/VERSION has layoutVersion missing"
    ):
        journal.can_roll_back(UPGRADED, FAKE_NSINFO.storage_info(), LV)
