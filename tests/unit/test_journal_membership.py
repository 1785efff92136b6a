"""The JournalNode's membership record on disk (server/journal_membership.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hadoop_qjm.common.durable import AFTER_RENAME, BEFORE_RENAME
from hadoop_qjm.qjournal.protocol.exceptions import JournalMembershipException
from hadoop_qjm.qjournal.protocol.membership import Config, MembershipRecord
from hadoop_qjm.qjournal.server.journal_membership import MEMBERSHIP_FILE, JournalMembership

pytestmark = pytest.mark.timeout(30)

OLD = frozenset({"a:1", "b:1", "c:1"})
NEW = frozenset({"a:1", "b:1", "d:1"})
JOINT = MembershipRecord.joint(OLD, NEW, 5, 1)
DONE = MembershipRecord.stable(NEW, 5, 2, previous=OLD)


class Crash(Exception):
    pass


def _crash_at(point: str):  # noqa: ANN202
    def hook(where: str, path: Path) -> None:
        if where == point:
            raise Crash(where)

    return hook


def test_absent_until_set_then_durable(tmp_path: Path) -> None:
    store = JournalMembership(tmp_path, "j")
    assert store.record is None
    store.set(JOINT)
    store.set(JOINT)  # a retry changes nothing
    assert JournalMembership(tmp_path, "j").record == JOINT
    store.set(DONE)
    assert JournalMembership(tmp_path, "j").record == DONE
    assert not list(tmp_path.glob("*.tmp"))


def test_only_a_legal_successor_replaces_it(tmp_path: Path) -> None:
    store = JournalMembership(tmp_path, "j")
    store.set(DONE)
    with pytest.raises(JournalMembershipException, match="not newer.*journal id: j"):
        store.set(JOINT)
    assert JournalMembership(tmp_path, "j").record == DONE


@pytest.mark.parametrize(("point", "survives"), [(BEFORE_RENAME, JOINT), (AFTER_RENAME, DONE)])
def test_a_crash_on_either_side_of_the_rename(
    tmp_path: Path, point: str, survives: MembershipRecord
) -> None:
    JournalMembership(tmp_path, "j").set(JOINT)
    with pytest.raises(Crash):
        JournalMembership(tmp_path, "j", hook=_crash_at(point)).set(DONE)
    assert JournalMembership(tmp_path, "j").record == survives


def test_a_damaged_record_refuses_rather_than_reads_as_absent(tmp_path: Path) -> None:
    (tmp_path / MEMBERSHIP_FILE).write_text("state=JOINT\nold=a:1\n")
    store = JournalMembership(tmp_path, "j")
    with pytest.raises(JournalMembershipException, match="damaged"):
        store.check_writer(Config(OLD))


def test_the_node_promises_only_to_the_recorded_configuration(tmp_path: Path) -> None:
    store = JournalMembership(tmp_path, "j")
    store.check_writer(None)  # no record: Hadoop's behaviour
    store.check_writer(Config(OLD))
    store.set(JOINT)
    store.check_writer(Config(OLD, NEW))
    for writer in (None, Config(OLD), Config(NEW)):
        with pytest.raises(JournalMembershipException, match="dfs.namenode.shared.edits.dir"):
            store.check_writer(writer)
