"""Issue 35 end to end without TLS: ``HADOOP_USER_NAME=alice`` (bob, ops) is that user for
every permission check of ``hdfs-py dfs`` against a NameNode in this process over real RPC,
and the audit log has one line per call with ``ugi=alice (auth:SIMPLE)``. The TLS run is
tests/security/test_tenant_certificates.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.ipc.socket_channel import HADOOP_USER_NAME
from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from tests.integration.tenants_support import (
    OPERATOR,
    Dfs,
    DfsResult,
    run_tenants_scenario,
    tenants_name_node,
)

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def name_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NameNode]:
    with tenants_name_node(tmp_path_factory.mktemp("nn")) as nn:
        yield nn


@pytest.fixture
def dfs(name_node: NameNode, capsys, monkeypatch) -> Dfs:
    """``hdfs-py dfs`` in this process as a user (``HADOOP_USER_NAME``, read at connect)."""
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    host, port = name_node.rpc_address

    def run(user: str, *args: str) -> DfsResult:
        monkeypatch.setenv(HADOOP_USER_NAME, user)
        capsys.readouterr()
        status = main(["-D", f"fs.defaultFS=hdfs://{host}:{port}", "dfs", *args])
        captured = capsys.readouterr()
        return DfsResult(status, captured.out.splitlines(), captured.err.splitlines())

    return run


def file_info(name_node: NameNode, path: str):
    with NameNodeProxy(*name_node.rpc_address, timeout_s=30) as proxy:
        return proxy.get_file_info(path)


def test_hadoop_user_name_is_the_user_of_every_check_and_audit_line(
    name_node: NameNode, dfs: Dfs, audit
) -> None:
    run_tenants_scenario(dfs, lambda path: file_info(name_node, path), audit, "SIMPLE")


def test_a_relative_path_is_under_the_home_of_hadoop_user_name(
    name_node: NameNode, dfs: Dfs
) -> None:
    """FsShell's working directory is /user/<the user it runs as> (Hadoop's
    FileSystem.getHomeDirectory, from the UGI): HADOOP_USER_NAME, not the OS user."""
    assert dfs(OPERATOR, "-mkdir", "-p", "/user/carol").status == 0
    assert dfs(OPERATOR, "-chown", "carol", "/user/carol").status == 0
    assert dfs("carol", "-mkdir", "rel") == DfsResult(0, [], [])
    status = file_info(name_node, "/user/carol/rel")
    assert status is not None and status.owner == "carol"
