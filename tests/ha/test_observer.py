"""Observer NameNodes on an in-process pair (nn1 active, nn2 observer; two NameNodes, the
three-NameNode plumbing being issue 37's item 1): Hadoop's transitions, allowed and
refused in one line; reads served and writes sent back with
ObserverRetryOnActiveException, which the failover client retries on the active; start
as an observer (dfs.namenode.observer.enabled / namenode -observer)."""

from __future__ import annotations

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.common.exceptions import ConfigurationError
from hadoop_qjm.ipc.alignment_context import ClientGSIContext
from hadoop_qjm.namenode.ha.failover_proxy import FailoverNameNodeProxy
from hadoop_qjm.namenode.ha.ha_util import resolve_ha_conf
from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.namenode.protocol.exceptions import (
    ObserverRetryOnActiveException,
    ServiceFailedException,
    StandbyException,
)
from hadoop_qjm.namenode.protocol.messages import HAServiceState
from hadoop_qjm.testing.in_process_ha import wait_until

pytestmark = pytest.mark.timeout(120)

JID = "observer"
ACTIVE, STANDBY, OBSERVER = HAServiceState.ACTIVE, HAServiceState.STANDBY, HAServiceState.OBSERVER


def hdfs(pair, capsys, *args: str) -> tuple[int, str, str]:
    status = main([*pair.cli_props(), *args])
    out, err = capsys.readouterr()
    return status, out, err


def test_an_observer_serves_reads_and_refuses_writes(observed) -> None:
    nn2 = observed["nn2"]
    assert nn2.state is OBSERVER and nn2.tailer.running and nn2.checkpointer is None
    aligned = NameNodeProxy(*nn2.rpc_address, timeout_s=30, alignment=ClientGSIContext())
    with observed.proxy("nn1") as p1, observed.proxy("nn2") as p2, aligned:
        assert p1.mkdirs("/seen")
        # A read carries a state id (tests/ha/test_observer_reads.py has the rest).
        wait_until(lambda: aligned.get_file_info("/seen") is not None, what="it tails")
        assert [s.path for s in aligned.list_status("/")] == ["/seen"]
        assert p2.get_ha_service_state() is OBSERVER
        assert p2.get_service_status().not_ready_reason == "State is observer"
        with pytest.raises(ObserverRetryOnActiveException, match="category WRITE .* observer"):
            p2.mkdirs("/never")
        with pytest.raises(StandbyException, match="category JOURNAL") as journal:
            p2.roll_edit_log()
        assert not isinstance(journal.value, ObserverRetryOnActiveException)
        p2.monitor_health()
    assert observed["nn1"].namesystem.get_file_info("/never") is None


def test_a_write_sent_to_the_observer_is_retried_on_the_active(observed) -> None:
    conf = observed.client_conf()
    conf.set("dfs.ha.namenodes.mycluster", "nn2,nn1")  # the observer first
    with FailoverNameNodeProxy(conf, "mycluster", timeout_s=30) as client:
        assert client.mkdirs("/via-failover")
        assert client.current.nnid == "nn1"
    assert observed["nn1"].namesystem.get_file_info("/via-failover") is not None


def test_hadoops_transitions_through_haadmin(observed, capsys) -> None:
    nn1, nn2 = observed["nn1"], observed["nn2"]
    # An observer never becomes active directly: one line, nothing changed.
    status, out, err = hdfs(observed, capsys, "haadmin", "-transitionToActive", "nn2")
    assert (status, err) == (1, "transitionToActive: Node nn1 is already active\n")
    args = ("haadmin", "-transitionToActive", "--forceactive", "nn2")
    status, out, err = hdfs(observed, capsys, *args)  # the NameNode's own refusal
    assert (status, out, err) == (
        1,
        "",
        "Operation failed: Cannot transition from 'observer' to 'active'\n",
    )
    assert nn2.state is OBSERVER and nn1.state is ACTIVE
    # Nor does the active become an observer.
    status, out, err = hdfs(observed, capsys, "haadmin", "-transitionToObserver", "nn1")
    assert (status, err) == (1, "Operation failed: Cannot transition from 'active' to 'observer'\n")
    assert nn1.state is ACTIVE and nn1.namesystem.mkdirs("/still-active")
    status, _, err = hdfs(observed, capsys, "haadmin", "-transitionToObserver", "nn9")
    assert status == 1 and err.count("\n") == 1 and "nn9" in err
    assert hdfs(observed, capsys, "haadmin", "-getServiceState", "nn2") == (0, "observer\n", "")
    status, _, err = hdfs(observed, capsys, "haadmin", "-failover", "nn1", "nn2")
    assert (status, err) == (1, "Failover failed: Can't failover to an observer service\n")
    assert nn1.state is ACTIVE and nn2.state is OBSERVER
    # Back to standby first (a checkpointer again), then active is allowed.
    assert hdfs(observed, capsys, "haadmin", "-transitionToStandby", "nn2")[0] == 0
    assert nn2.state is STANDBY and nn2.checkpointer is not None
    assert hdfs(observed, capsys, "haadmin", "-transitionToObserver", "nn2")[0] == 0
    assert nn2.state is OBSERVER and nn2.checkpointer is None
    nn2.transition_to_observer()  # idempotent
    assert hdfs(observed, capsys, "haadmin", "-transitionToStandby", "nn2")[0] == 0
    assert hdfs(observed, capsys, "haadmin", "-failover", "nn1", "nn2")[0] == 0
    assert nn2.state is ACTIVE and nn1.state is STANDBY


def test_an_observer_needs_in_progress_tailing(pair, capsys) -> None:
    nn2 = pair["nn2"]
    pair.stop()
    conf, _, _ = resolve_ha_conf(pair.conf, "nn2")
    conf.set("dfs.ha.tail-edits.in-progress", "false")
    node = NameNode(conf, fs_owner="hdfs")
    node.start()
    try:
        with pytest.raises(ServiceFailedException, match=r"in-progress=true"):
            node.transition_to_observer()
        assert node.state is STANDBY and node.checkpointer is not None
    finally:
        node.stop()
    conf.set("dfs.namenode.observer.enabled", "true")
    with pytest.raises(ConfigurationError, match=r"requires dfs.ha.tail-edits.in-progress=true"):
        NameNode(conf, fs_owner="hdfs")
    assert nn2.is_stopped


def test_start_as_an_observer(pair) -> None:
    pair["nn1"].transition_to_active()
    pair["nn2"].stop()
    pair.conf.set("dfs.namenode.observer.enabled", "true")
    nn2 = pair.start("nn2")
    assert nn2.state is OBSERVER and nn2.checkpointer is None and nn2.tailer.running
    pair["nn1"].namesystem.mkdirs("/after-start")
    wait_until(lambda: nn2.namesystem.get_file_info("/after-start") is not None)
