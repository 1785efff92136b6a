"""Read-your-writes through an observer, with real processes (issue 37, "What must be
shown"): a MiniHACluster of three NameNode processes on three JournalNode processes::

    nn1  active    ◀── mkdirs /ryw/i ────────┬── the client
                   ◀── mkdirs /bench/w*/… ── │── 4 writer processes
    nn2  standby                             │
    nn3  observer  ◀── getFileInfo /ryw/i ───┘  (held until nn3 has applied the client's
                                                 state id: the txid of its mkdirs)

The client (the observer read proxy, in this process) sees each of its mkdirs on its very
next getFileInfo, 5,000 times in a row, while four client processes write on the active;
the observer served the reads: its FileInfoOps on /jmx grew by 5,000, the active's by
none; and some of them were held until it had applied the client's mkdirs (its
ObserverStatus). Slow: ~2 min on a loaded 2-core machine (one run: 2,613 reads held,
14.6 s in all, while the others made 48,810 mkdirs).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from hadoop_qjm.namenode.ha.observer_read_proxy import ObserverReadProxy
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_ha_cluster import NAMESERVICE, MiniHACluster
from hadoop_qjm.tools.bench._nn_load import CLIENT_COMMAND, BenchClients
from hadoop_qjm.tools.bench._nn_observers import OBSERVER_PROVIDER, namenode_bean

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

ROUNDS = 5000
OTHER_WRITERS = 4
#: The writer processes' bound; they are stopped (by pid) once the client is done.
WRITER_SECONDS = 600


def _writers(cluster: MiniHACluster) -> BenchClients:
    """OTHER_WRITERS client processes doing mkdirs on the active (bench namenode's)."""
    args = ["client", "127.0.0.1", str(cluster.rpc_ports["nn1"]), "1", str(WRITER_SECONDS)]
    return BenchClients(
        [[*CLIENT_COMMAND, *args, "1000000", f"w{n}"] for n in range(OTHER_WRITERS)]
    )


def _ops(cluster: MiniHACluster, nnid: str, name: str) -> int:
    return namenode_bean(cluster.http_ports[nnid], "NameNodeActivity")[name]


def test_read_your_writes_5000_times_through_the_observer_while_4_processes_write(
    tmp_path: Path,
) -> None:
    properties = {
        "dfs.namenode.state.context.enabled": "true",
        f"dfs.client.failover.proxy.provider.{NAMESERVICE}": OBSERVER_PROVIDER,
    }
    with MiniHACluster(tmp_path / "cluster", properties=properties, num_namenodes=3) as cluster:
        cluster.transition_to_active("nn1")
        result = cluster.run_hdfs("haadmin", "-transitionToObserver", "nn3")
        assert result.returncode == 0, result.stderr
        assert cluster.states() == {"nn1": "active", "nn2": "standby", "nn3": "observer"}
        with _writers(cluster) as writers:
            writers.go()
            others0 = _ops(cluster, "nn1", "MkdirsOps")
            # The writers are writing before the first round, not just started.
            wait_until(lambda: _ops(cluster, "nn1", "MkdirsOps") >= others0 + 20, 60, "writes")
            served0 = _ops(cluster, "nn3", "FileInfoOps")
            on_active0 = _ops(cluster, "nn1", "FileInfoOps")
            mkdirs0 = _ops(cluster, "nn1", "MkdirsOps")
            with cluster.client(timeout_s=60) as fs:
                assert isinstance(fs, ObserverReadProxy)
                for i in range(ROUNDS):
                    assert fs.mkdirs(f"/ryw/{i}")
                    assert fs.get_file_info(f"/ryw/{i}") is not None, i
                assert (fs.observer_reads, fs.active_reads) == (ROUNDS, 0)
            mkdirs = _ops(cluster, "nn1", "MkdirsOps") - mkdirs0
            still = [w.pid for w in writers.procs if w.poll() is not None]
            assert still == [], f"writer processes ended early: {still}"
        served = _ops(cluster, "nn3", "FileInfoOps") - served0
        assert served == ROUNDS, served  # the probes and msync are other calls
        assert _ops(cluster, "nn1", "FileInfoOps") == on_active0
        # The other processes wrote during the rounds (how many is the machine's business).
        assert mkdirs > ROUNDS, mkdirs
        status = namenode_bean(cluster.http_ports["nn3"], "ObserverStatus")
        assert status["AlignmentHeldCallsNow"] == 0
        # Some reads came before nn3 had applied their mkdirs and were held: the rounds
        # tested the alignment, not only an observer that happened to be caught up.
        assert status["AlignmentHeldCallsNumOps"] > 0
        print(
            f"{ROUNDS} reads served by nn3, {mkdirs - ROUNDS} mkdirs by the others; "
            f"held for alignment: {status['AlignmentHeldCallsNumOps']} calls, "
            f"{status['AlignmentHeldCallsTotalTimeMillis']} ms"
        )
        assert cluster.states() == {"nn1": "active", "nn2": "standby", "nn3": "observer"}
