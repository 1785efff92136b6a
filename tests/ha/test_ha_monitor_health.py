"""monitorHealth on an in-process pair, what a failover controller's HealthMonitor asks:
the NameNode's volumes keep their reserve (NameNodeResourceChecker), an active's edit log
is alive, and a standby's last tailing round could read the shared edits — so a standby
cut off from a quorum of JournalNodes is not elected.

::

    JN0 up, JN1 down, JN2 down
    nn2 (standby) tails: no quorum answers -> unhealthy, "... the shared edits qjournal://..."
    JN1, JN2 back: the next round reads -> healthy again
"""

from __future__ import annotations

import pytest

from hadoop_qjm.common.exceptions import HadoopException
from hadoop_qjm.namenode.protocol.exceptions import HealthCheckFailedException
from hadoop_qjm.testing.in_process_ha import HAPair, ha_conf, wait_until

pytestmark = pytest.mark.timeout(120)

JID = "health"


def start_pair(mjc, tmp_path, **extra) -> HAPair:
    return HAPair(ha_conf(tmp_path, mjc, JID, **extra), tmp_path)


def health_error(pair: HAPair, nnid: str) -> str | None:
    """monitorHealth over RPC: None if healthy, else the one-line reason."""
    with pair.proxy(nnid) as proxy:
        try:
            proxy.monitor_health()
        except HealthCheckFailedException as e:
            assert "\n" not in str(e), str(e)
            return str(e)
    return None


def test_a_namenode_without_disk_space_is_unhealthy(mjc, tmp_path):
    pair = start_pair(mjc, tmp_path, **{"dfs.namenode.resource.du.reserved": str(1 << 60)})
    try:
        pair["nn1"].transition_to_active()
        for nnid in ("nn1", "nn2"):
            error = health_error(pair, nnid)
            name_dir = tmp_path / nnid / "name"
            assert error is not None
            assert error.startswith(f"The NameNode has no resources available: {name_dir}")
            assert "less than dfs.namenode.resource.du.reserved = 1152921504606846976" in error
    finally:
        pair.stop()


def test_an_active_whose_edit_log_died_is_unhealthy(mjc, pair):
    pair["nn1"].transition_to_active()
    assert health_error(pair, "nn1") is None
    mjc.stop_journal_node(1)
    mjc.stop_journal_node(2)
    with pair.proxy("nn1") as p1, pytest.raises(HadoopException):
        p1.mkdirs("/lost")  # the sync cannot reach a quorum: the edit log dies
    assert pair.terminations["nn1"], "nn1 did not terminate"
    error = health_error(pair, "nn1")
    assert error is not None
    assert error.startswith("The edit log is no longer open for write: Could not sync enough")


def test_a_standby_that_cannot_reach_a_quorum_is_unhealthy_until_it_can(mjc, pair):
    assert health_error(pair, "nn2") is None
    mjc.stop_journal_node(1)
    mjc.stop_journal_node(2)
    wait_until(lambda: health_error(pair, "nn2") is not None, 60, "nn2 to report unhealthy")
    error = health_error(pair, "nn2")
    assert error.startswith(
        "The last tailing round could not read the shared edits: Unable to read the shared "
        f"edits {mjc.quorum_journal_uri(JID)}: "
    ), error
    assert pair["nn2"].tailer.running and not pair.terminations["nn2"]
    mjc.restart_journal_node(1)
    mjc.restart_journal_node(2)
    wait_until(lambda: health_error(pair, "nn2") is None, 60, "nn2 to be healthy again")


def test_a_standby_without_a_tailer_is_unhealthy(pair):
    # e.g. a failed transition that could not start the standby threads again: such a
    # standby cannot follow the log and must not be elected.
    pair["nn2"]._stop_standby_threads()
    assert "tailer is not running" in (health_error(pair, "nn2") or "")


def test_an_edit_that_does_not_apply_during_the_catch_up_terminates(pair, monkeypatch):
    """A catch-up that applied part of the log and then failed leaves the namespace
    suspect: the NameNode terminates (Hadoop's doImmediateShutdown), it does not return to
    standby as it does when the journal could not be read."""
    from hadoop_qjm.common.exceptions import ExitException
    from hadoop_qjm.namenode.fs_edit_log_loader import EditLogApplyException

    core = pair["nn1"].core

    def fail(*_args, **_kwargs):
        raise EditLogApplyException("Failed to apply edit log operation OP_MKDIR (txid 7)")

    monkeypatch.setattr(core, "start_active_services", fail)
    with pytest.raises((HadoopException, ExitException)):
        pair["nn1"].transition_to_active()
    assert pair.terminations["nn1"], "nn1 did not terminate"
    assert "Failed to become active" in pair.terminations["nn1"][0][1]
