"""``current/shared_edits_switch``: a NameNode's record of a JournalNode set change
(namenode/shared_edits_switch.py), read at start-up when the configuration names a set
the journal left."""

from __future__ import annotations

import logging

import pytest

from hadoop_qjm.namenode.shared_edits_switch import (
    SHARED_EDITS_SWITCH_FILE,
    SharedEditsSwitch,
    choose_shared_edits_uri,
    record_stable_set,
)

pytestmark = pytest.mark.timeout(30)

OLD = "qjournal://a:1;b:1;c:1/j"
NEW = "qjournal://a:1;d:1;e:1/j"
O3 = frozenset({"a:1", "b:1", "c:1"})
N3 = frozenset({"a:1", "d:1", "e:1"})


@pytest.fixture
def dirs(tmp_path):  # noqa: ANN001, ANN201
    out = [tmp_path / "name1" / "current", tmp_path / "name2" / "current"]
    for d in out:
        d.mkdir(parents=True)
    return out


def test_a_restart_with_the_old_uri_uses_the_recorded_set(dirs, caplog) -> None:  # noqa: ANN001
    assert choose_shared_edits_uri(OLD, dirs) == OLD  # nothing recorded
    record_stable_set(dirs, "j", OLD, N3, 3, 2, O3)
    for d in dirs:
        switch = SharedEditsSwitch.parse((d / SHARED_EDITS_SWITCH_FILE).read_text())
        assert (switch.members, switch.key, switch.left) == (N3, (3, 2), frozenset({O3}))
    with caplog.at_level(logging.WARNING):
        assert choose_shared_edits_uri(OLD, dirs) == NEW
    assert "Set dfs.namenode.shared.edits.dir to it on every NameNode" in caplog.text
    assert choose_shared_edits_uri(NEW, dirs) == NEW  # the config edit done
    other = "qjournal://x:1;y:1;z:1/j"  # a set this NameNode never saw the journal leave
    assert choose_shared_edits_uri(other, dirs) == other
    assert choose_shared_edits_uri("qjournal://a:1;b:1;c:1/other", dirs).endswith("/other")


def test_a_later_switch_keeps_the_sets_left_and_an_older_one_never_overwrites(dirs) -> None:  # noqa: ANN001
    record_stable_set(dirs, "j", OLD, N3, 3, 2, O3)
    later = frozenset({"d:1", "e:1", "f:1"})
    record_stable_set(dirs, "j", OLD, later, 5, 4, N3)
    record_stable_set(dirs[:1], "j", OLD, N3, 3, 2, O3)  # a slow reader's older news
    assert choose_shared_edits_uri(OLD, dirs) == "qjournal://d:1;e:1;f:1/j"
    assert choose_shared_edits_uri(NEW, dirs) == "qjournal://d:1;e:1;f:1/j"
    switch = SharedEditsSwitch.parse((dirs[0] / SHARED_EDITS_SWITCH_FILE).read_text())
    assert switch.key == (5, 4) and switch.left == frozenset({O3, N3})


def test_a_damaged_record_is_ignored_with_a_warning(dirs, caplog) -> None:  # noqa: ANN001
    (dirs[0] / SHARED_EDITS_SWITCH_FILE).write_text("uri=qjournal://a:1/j\nepoch=x\n")
    with caplog.at_level(logging.WARNING):
        assert choose_shared_edits_uri(OLD, dirs) == OLD
    assert "Ignoring the damaged" in caplog.text
