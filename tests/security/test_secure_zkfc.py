"""Automatic failover on a secured cluster (processes): the ZKFCs talk to their NameNodes
and to each other over mutual TLS, ``haadmin -failover`` reaches the target's ZKFC over
TLS, and a plain-TCP client of a ZKFC's port gets nothing.

Slow (a ZooKeeper JVM, 3 JournalNodes, 2 NameNodes and 2 ZKFCs, all secured)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hadoop_qjm.common.exceptions import HadoopException
from hadoop_qjm.ha.zkfc_protocol import ZKFCProxy
from hadoop_qjm.testing.mini_ha_cluster import MiniHACluster

pytestmark = [pytest.mark.timeout(240), pytest.mark.slow]


def test_secure_zkfcs_elect_fail_over_and_refuse_plain_tcp(tmp_path: Path, zk_server) -> None:
    with MiniHACluster(tmp_path / "cluster", secure=True, zookeeper=zk_server.connect_string) as c:
        active = c.start_auto_failover()
        other = "nn2" if active == "nn1" else "nn1"
        with c.client() as fs:
            assert fs.mkdirs("/secure/before")
        # haadmin -> the target's ZKFC (gracefulFailover) -> the old active's ZKFC (cedeActive),
        # every hop mutual TLS.
        result = c.run_hdfs("haadmin", "-failover", active, other)
        assert result.returncode == 0, result.stderr
        assert "successful" in result.stdout
        assert c.wait_roles(active=other, timeout_s=60) == other
        with c.client() as fs:
            assert fs.mkdirs("/secure/after")
            assert fs.get_file_info("/secure/before") is not None
        # Without a client certificate the ZKFC's port answers nothing.
        plain = ZKFCProxy("127.0.0.1", c.zkfc_ports[other], 5.0, connect_timeout_s=5.0)
        try:
            with pytest.raises((HadoopException, OSError)):
                plain.cede_active(10_000)
        finally:
            plain.close()
        assert c.states() == {active: "standby", other: "active"}
