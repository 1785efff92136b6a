"""The Journal's membership calls: setMembership, the record in getJournalState, the
newEpoch check (docs/journalnode.md, "Online, by joint consensus")."""

from __future__ import annotations

import pytest

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalMembershipException,
)
from hadoop_qjm.qjournal.protocol.membership import Config, MembershipRecord
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO, JID, make_request

pytestmark = pytest.mark.timeout(30)

OLD = frozenset({"a:1", "b:1", "c:1"})
NEW = frozenset({"a:1", "b:1", "d:1"})


@pytest.fixture
def journal(tmp_path):  # noqa: ANN001, ANN201
    j = Journal(Configuration(), tmp_path / JID, JID)
    j.format(FAKE_NSINFO)
    yield j
    j.close()


def test_a_joint_record_binds_later_writers_to_the_joint_configuration(journal: Journal) -> None:
    assert journal.get_membership_text() is None
    journal.new_epoch(FAKE_NSINFO, 3, Config(OLD).to_text())  # no record: anyone
    joint = MembershipRecord.joint(OLD, NEW, 3, 1)
    journal.set_membership(make_request(1, epoch=3), joint.to_text())
    assert MembershipRecord.parse(journal.get_membership_text()) == joint
    # Survives a restart.
    journal.close()
    again = Journal(Configuration(), journal.storage.log_dir, JID)
    try:
        for writer in (None, Config(OLD).to_text(), Config(NEW).to_text()):
            with pytest.raises(JournalMembershipException, match="shared.edits.dir"):
                again.new_epoch(FAKE_NSINFO, 4, writer)
        assert again.get_last_promised_epoch() == 3  # refused before promising
        again.new_epoch(FAKE_NSINFO, 4, Config(OLD, NEW).to_text())
        assert again.get_last_promised_epoch() == 4
    finally:
        again.close()


def test_only_the_writer_of_the_current_epoch_sets_a_record_of_its_own_epoch(
    journal: Journal,
) -> None:
    journal.new_epoch(FAKE_NSINFO, 5)
    with pytest.raises(IOException, match="less than the last promised epoch 5"):  # fenced
        journal.set_membership(
            make_request(1, epoch=4), MembershipRecord.joint(OLD, NEW, 4, 1).to_text()
        )
    with pytest.raises(JournalMembershipException, match="not of the writer's epoch 5"):
        journal.set_membership(
            make_request(1, epoch=5), MembershipRecord.joint(OLD, NEW, 6, 1).to_text()
        )
    assert journal.get_membership_text() is None


def test_a_node_that_missed_stable_catches_up_from_the_writers_record(journal: Journal) -> None:
    """The node holds JOINT(O, N); the switch finished elsewhere (STABLE(N) on a joint
    quorum). A writer of N sends the record it follows with newEpoch: the node takes it
    and promises; a writer whose record does not name its set is refused as before."""
    journal.new_epoch(FAKE_NSINFO, 3)
    journal.set_membership(
        make_request(1, epoch=3), MembershipRecord.joint(OLD, NEW, 3, 1).to_text()
    )
    done = MembershipRecord.stable(NEW, 3, 2, previous=OLD)
    with pytest.raises(JournalMembershipException):
        journal.new_epoch(FAKE_NSINFO, 4, Config(OLD).to_text(), done.to_text())
    with pytest.raises(JournalMembershipException):
        journal.new_epoch(FAKE_NSINFO, 4, Config(NEW).to_text())  # no record sent
    journal.new_epoch(FAKE_NSINFO, 4, Config(NEW).to_text(), done.to_text())
    assert MembershipRecord.parse(journal.get_membership_text()) == done
    assert journal.get_last_promised_epoch() == 4
