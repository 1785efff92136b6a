"""A secured HA pair (processes): format, bootstrapStandby (image download over HTTPS),
failover, standby tailing and the standby's checkpoint upload (PUT over HTTPS), all over
mutual TLS; a plain-TCP client of a NameNode gets nothing."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_ha_cluster import MiniHACluster

pytestmark = pytest.mark.timeout(120)


def images(cluster: MiniHACluster, nnid: str) -> set[int]:
    current = cluster.name_dir(nnid) / "current"
    return {
        int(m.group(1))
        for p in current.iterdir()
        if (m := re.fullmatch(r"fsimage_(\d{19})", p.name))
    }


def test_secure_ha_pair_fails_over_and_uploads_checkpoints(tmp_path: Path) -> None:
    with MiniHACluster(
        tmp_path / "cluster",
        secure=True,
        properties={"dfs.namenode.checkpoint.txns": 20},
    ) as cluster:
        cluster.transition_to_active("nn1")
        with cluster.client() as fs:
            for i in range(30):
                assert fs.mkdirs(f"/secure/a{i}")
            # The standby saves an image and uploads it to the active over HTTPS.
            wait_until(lambda: max(images(cluster, "nn1")) > 0, 60, "an uploaded image on nn1")
            assert max(images(cluster, "nn1")) in images(cluster, "nn2")
            result = cluster.run_hdfs("haadmin", "-failover", "nn1", "nn2")
            assert result.returncode == 0, result.stderr
            assert fs.mkdirs("/secure/after")
            assert cluster.service_state("nn2") == "active"
            assert cluster.service_state("nn1") == "standby"
        with cluster.proxy("nn2") as active:
            assert all(active.get_file_info(f"/secure/a{i}") for i in range(30))
            txid = active.get_transaction_id()
        with cluster.proxy("nn1") as standby:
            wait_until(lambda: standby.get_transaction_id() >= txid, 30, "nn1 to catch up")
        # A plain TCP client gets no answer from a NameNode's TLS port.
        with socket.create_connection(("127.0.0.1", cluster.rpc_ports["nn2"]), timeout=10) as s:
            s.sendall(b"\x00\x00\x00\x10" + b"x" * 16)
            try:
                data = s.recv(100)
            except OSError:
                data = b""
            assert b"mkdirs" not in data and not data.startswith(b"\x00\x00")
