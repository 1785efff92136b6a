"""Issue 35 end to end with TLS: the certificates CN=alice, CN=bob and an operator's CN=ops
(in supergroup by hadoop.user.group.static.mapping.overrides) are those users for every
permission check of ``hdfs-py dfs`` against a secured NameNode in this process, and the
audit log has one line per call with ``ugi=alice (auth:CERTIFICATE)``. docs/security.md's
worked example is this run. The plain run is tests/integration/test_tenant_permissions.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.common.security.certs import CertificateAuthority, write_pem, write_ssl_xml
from hadoop_qjm.namenode.name_node import NameNode
from hadoop_qjm.namenode.protocol.client import NameNodeProxy, client_socket_factory
from tests.integration import tenants_support as tenants

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def client_confs(pki, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """An ssl-client.xml per user, presenting a certificate ``CN=<user>`` of the test CA."""
    directory = tmp_path_factory.mktemp("tenants")
    ca = CertificateAuthority.load(pki.path("ca"), pki.path("ca-key"))
    confs = {}
    for user in (tenants.OPERATOR, *tenants.TENANTS):
        cert, key = ca.issue(user)  # as docs/security.md's example
        write_pem(directory / f"{user}.pem", cert=cert)
        write_pem(directory / f"{user}-key.pem", key=key)
        confs[user] = write_ssl_xml(
            directory / f"ssl-client-{user}.xml", "client",
            directory / f"{user}.pem", directory / f"{user}-key.pem", pki.path("ca"),
        )  # fmt: skip
    return confs


@pytest.fixture(scope="module")
def secure_name_node(pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[NameNode]:
    with tenants.tenants_name_node(tmp_path_factory.mktemp("nn"), **pki.props) as nn:
        yield nn


def test_a_certificate_is_the_user_of_every_check_and_audit_line(
    secure_name_node: NameNode, client_confs, pki, audit, capsys, monkeypatch
) -> None:
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.setenv("HADOOP_USER_NAME", "hdfs")  # claimed, and ignored over TLS
    host, port = secure_name_node.rpc_address
    secured = [f"-D{key}={value}" for key, value in pki.props.items()]

    def dfs(user: str, *args: str) -> tenants.DfsResult:
        capsys.readouterr()
        status = main([
            *secured, f"-Dhadoop.ssl.client.conf={client_confs[user]}",
            f"-Dfs.defaultFS=hdfs://{host}:{port}", "dfs", *args,
        ])  # fmt: skip
        captured = capsys.readouterr()
        return tenants.DfsResult(status, captured.out.splitlines(), captured.err.splitlines())

    def file_info(path: str):
        factory = client_socket_factory(pki.conf())  # CN=namenode
        with NameNodeProxy(host, port, timeout_s=30, socket_factory=factory) as proxy:
            return proxy.get_file_info(path)

    tenants.run_tenants_scenario(dfs, file_info, audit, "CERTIFICATE")


def test_a_relative_path_is_under_the_home_of_the_certificates_user(
    secure_name_node: NameNode, client_confs, pki, capsys, monkeypatch
) -> None:
    """Hadoop's home directory is /user/<the UGI's short name>: over TLS the user the
    client's certificate maps to (here by an auth_to_local rule the client applies as the
    NameNode does), not HADOOP_USER_NAME, which the NameNode ignores."""
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.setenv("HADOOP_USER_NAME", "hdfs")
    host, port = secure_name_node.rpc_address
    secured = [f"-D{key}={value}" for key, value in pki.props.items()]

    def dfs(user: str, *args: str, rules: str | None = None) -> tuple[int, str]:
        capsys.readouterr()
        extra = [f"-Dhadoop.security.auth_to_local={rules}"] if rules else []
        status = main([
            *secured, *extra, f"-Dhadoop.ssl.client.conf={client_confs[user]}",
            f"-Dfs.defaultFS=hdfs://{host}:{port}", "dfs", *args,
        ])  # fmt: skip
        captured = capsys.readouterr()
        return status, captured.out + captured.err

    assert dfs(tenants.OPERATOR, "-mkdir", "-p", "/user/bob")[0] == 0
    assert dfs(tenants.OPERATOR, "-chown", "bob", "/user/bob")[0] == 0
    assert dfs("bob", "-mkdir", "reports") == (0, "")
    status, out = dfs("bob", "-ls", "/user/bob")
    assert status == 0 and "/user/bob/reports" in out and " bob " in out
    assert dfs(tenants.OPERATOR, "-ls", "/user/hdfs/reports")[0] == 1
    # a subject no rule maps: one line, and nothing is sent
    status, out = dfs("bob", "-mkdir", "other", rules="RULE:[$CN](alice)")
    assert status == 1 and out.count("\n") == 1
    assert "No rules applied to CN=bob" in out and "this client has no user name" in out
