"""A secured HA pair (processes): format, bootstrapStandby (image download over HTTPS),
failover, standby tailing and the standby's checkpoint upload (PUT over HTTPS), all over
mutual TLS; a plain-TCP client of a NameNode gets nothing; a tenant's certificate may not
make the administrators' calls (issue 35)."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from hadoop_qjm.common.security.certs import CertificateAuthority, write_pem, write_ssl_xml
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


def tenant_client_conf(cluster: MiniHACluster, user: str) -> Path:
    """An ssl-client.xml presenting a certificate ``CN=<user>`` of the cluster's CA."""
    pki = cluster.base_dir / "pki"
    ca = CertificateAuthority.load(pki / "ca.pem", pki / "ca-key.pem")
    cert, key = ca.issue(user, ["127.0.0.1", "localhost"])
    write_pem(pki / f"{user}.pem", cert=cert)
    write_pem(pki / f"{user}-key.pem", key=key)
    return write_ssl_xml(
        pki / f"ssl-client-{user}.xml", "client", pki / f"{user}.pem", pki / f"{user}-key.pem",
        pki / "ca.pem",
    )  # fmt: skip


# Slow (~29 s, four daemons and a dozen commands over TLS): the same superuser rule runs
# in the default run over RPC (tests/integration/test_name_node_rpc.py, test_ha_admin.py) and
# certificate users in tests/security/test_tenant_certificates.py.
@pytest.mark.slow
def test_a_tenant_certificate_cannot_make_admin_calls_and_the_operator_can(
    tmp_path: Path,
) -> None:
    with MiniHACluster(tmp_path / "cluster", secure=True) as cluster:
        cluster.transition_to_active("nn1")
        as_alice = ("-D", f"hadoop.ssl.client.conf={tenant_client_conf(cluster, 'alice')}")
        with cluster.proxy("nn1") as active:
            txid = active.get_transaction_id()
        denied = "Access denied for user alice. Superuser privilege is required"
        new_set = cluster.client_conf().get("dfs.namenode.shared.edits.dir")
        for command in (
            ("haadmin", "-transitionToActive", "nn2"),
            ("haadmin", "-failover", "nn1", "nn2"),
            ("haadmin", "-reconfigureSharedEdits", new_set),
            ("dfsadmin", "-rollEdits"),
            ("dfsadmin", "-saveNamespace"),
        ):
            result = cluster.run_hdfs(*as_alice, *command)
            lines = result.stderr.strip().splitlines()
            assert result.returncode != 0 and len(lines) == 1, (command, result.stderr)
            assert denied in lines[0] and "Traceback" not in result.stderr, (command, lines)
        # Nothing changed: the states, and the journal (no roll, no save, no switch).
        assert (cluster.service_state("nn1"), cluster.service_state("nn2")) == (
            "active",
            "standby",
        )
        with cluster.proxy("nn1") as active:
            assert active.get_transaction_id() == txid
        # The operator's certificate (CN=namenode, in supergroup) may.
        result = cluster.run_hdfs("dfsadmin", "-rollEdits")
        assert result.returncode == 0 and "Successfully rolled edit logs." in result.stdout
        result = cluster.run_hdfs("haadmin", "-failover", "nn1", "nn2")
        assert result.returncode == 0, result.stderr
        assert cluster.service_state("nn2") == "active"


def test_reads_from_an_observer_over_mutual_tls(tmp_path: Path) -> None:
    """Issue 37, processes over mutual TLS (the per-connection server's path for the state
    id): haadmin -transitionToObserver, read-your-writes through the observer read proxy,
    a write sent straight to the observer, an observer frozen with SIGSTOP for 2 s (reads
    go to the active, never older than the last write), dfs -msync."""
    import signal

    from hadoop_qjm.namenode.ha.observer_read_proxy import ObserverReadProxy
    from hadoop_qjm.namenode.protocol.exceptions import ObserverRetryOnActiveException

    provider = "org.apache.hadoop.hdfs.server.namenode.ha.ObserverReadProxyProvider"
    properties = {
        "dfs.namenode.state.context.enabled": "true",
        "dfs.client.failover.proxy.provider.mycluster": provider,
    }
    with MiniHACluster(tmp_path / "cluster", secure=True, properties=properties) as cluster:
        cluster.transition_to_active("nn1")
        result = cluster.run_hdfs("haadmin", "-transitionToObserver", "nn2")
        assert result.returncode == 0, result.stderr
        assert cluster.service_state("nn2") == "observer"
        result = cluster.run_hdfs("haadmin", "-transitionToActive", "--forceactive", "nn2")
        assert result.returncode == 1
        assert result.stderr.strip().splitlines()[-1] == (
            "Operation failed: Cannot transition from 'observer' to 'active'"
        )
        with cluster.proxy("nn2") as observer:
            with pytest.raises(ObserverRetryOnActiveException):
                observer.mkdirs("/never")
        with cluster.client(timeout_s=2) as fs:
            assert isinstance(fs, ObserverReadProxy)
            for i in range(100):
                assert fs.mkdirs(f"/read-your-writes/{i}")
                assert fs.get_file_info(f"/read-your-writes/{i}") is not None, i
            assert (fs.observer_reads, fs.active_reads) == (100, 0)
            nn2 = cluster.namenode("nn2")
            # Frozen for as long as the 5 writes and reads take (at least the client's 2 s
            # timeout): the first read waits for the observer that long, then every read
            # goes to the active, and none is older than the write before it. (Resumed by
            # a timer instead, a loaded machine let the observer answer some of them.)
            nn2.kill(signal.SIGSTOP)
            try:
                for i in range(5):
                    assert fs.mkdirs(f"/frozen/{i}")
                    assert fs.get_file_info(f"/frozen/{i}") is not None, i
            finally:
                nn2.kill(signal.SIGCONT)
            assert fs.observer_reads == 100 and fs.active_reads == 5
        assert cluster.run_hdfs("dfs", "-msync").returncode == 0
        assert cluster.service_state("nn2") == "observer"
