"""A secured NameNode in this process, writing to a secured MiniJournalCluster: its RPC is
mutual TLS (NameNodeProxy, the ``dfs`` command), its HTTPS listener serves the open pages to
anyone and /imagetransfer only to a verified certificate."""

from __future__ import annotations

import http.client
from collections.abc import Iterator

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.common.exceptions import AccessControlException
from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.protocol.client import NameNodeProxy, client_socket_factory
from hadoop_qjm.qjournal.protocol.sockets import CLIENT_NOT_CONFIGURED_FOR_TLS
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.tools.dfs_shell import run
from tests.integration.namenode_support import nn_conf, started_name_node

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def secure_nn(pki, tmp_path) -> Iterator[NameNode]:
    with MiniJournalCluster(3, conf=pki.conf()) as cluster:
        conf = nn_conf(
            tmp_path,
            shared=cluster.quorum_journal_uri("securenn"),
            **{
                **pki.props,
                "dfs.namenode.rpc-address": "127.0.0.1:0",
                "dfs.namenode.http-address": "127.0.0.1:0",
                "dfs.namenode.https-address": "127.0.0.1:0",
            },
        )
        with started_name_node(conf) as nn:  # formatted through the secured quorum
            yield nn


def test_rpc_and_dfs_over_mutual_tls(secure_nn: NameNode, pki) -> None:
    assert secure_nn.http_server is None and secure_nn.https_server is not None
    conf = secure_nn.conf
    with NameNodeProxy(
        *secure_nn.rpc_address, timeout_s=30, socket_factory=client_socket_factory(conf)
    ) as proxy:
        assert proxy.mkdirs("/secure/dir", 0o755)
        assert proxy.get_file_info("/secure/dir").is_dir
    with NameNodeProxy(*secure_nn.rpc_address, timeout_s=30) as plain:
        with pytest.raises(AccessControlException, match="the server speaks TLS but"):
            plain.get_file_info("/secure")

    client_conf = pki.conf(**{"fs.defaultFS": f"hdfs://127.0.0.1:{secure_nn.rpc_address[1]}"})
    assert run(["-mkdir", "-p", "/from/dfs"], client_conf) == 0
    with NameNodeProxy.from_conf(client_conf, timeout_s=30) as proxy:
        assert proxy.get_file_info("/from/dfs").is_dir


def test_https_pages(secure_nn: NameNode, pki) -> None:
    def get(path: str, cert: str | None) -> int:
        conn = http.client.HTTPSConnection(
            "127.0.0.1", secure_nn.https_address[1], timeout=10, context=pki.client_context(cert)
        )
        try:
            conn.request("GET", path)
            response = conn.getresponse()
            response.read()
            return response.status
        finally:
            conn.close()

    assert get("/jmx", None) == 200
    assert get("/imagetransfer?getimage=1&txid=latest", None) == 403
    assert get("/imagetransfer?getimage=1&txid=latest", "namenode") == 200
    # Administrators' pages: dfs.cluster.administrators is unset, so nobody; /isActive is open.
    assert get("/conf", None) == get("/conf", "namenode") == get("/stacks", "namenode") == 403
    assert get("/logLevel?log=x&level=DEBUG", "namenode") == 403
    assert get("/isActive", None) == 200


def test_plain_dfs_and_dfsadmin_say_the_namenode_speaks_tls(
    secure_nn: NameNode, capsys, monkeypatch
) -> None:
    """The operator's report (issue 28): a plain client of a secured NameNode got
    "Connection reset by peer"; it is told which keys and file turn TLS on."""
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    host, port = secure_nn.rpc_address
    sentence = f"Call to {host}:{port} failed: {CLIENT_NOT_CONFIGURED_FOR_TLS}"
    for command, prefix in (
        (["dfs", "-ls", "/"], "ls: "),
        (["dfsadmin", "-rollEdits"], "rollEdits: "),
    ):
        capsys.readouterr()
        assert main(["-D", f"fs.defaultFS=hdfs://{host}:{port}", *command]) == 1
        assert capsys.readouterr().err.splitlines() == [prefix + sentence]
