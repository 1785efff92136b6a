"""With HTTPS on, every daemon's /conf, /stacks, /logs/ and /logLevel writes are for the
identities of dfs.cluster.administrators only (HttpServer2.hasAdministratorAccess): no
certificate, another identity or the plain listener of HTTP_AND_HTTPS get 403, logged and
counted; ``hdfs-py daemonlog`` over https presents ssl-client.xml's certificate."""

from __future__ import annotations

import http.client
import logging
from collections.abc import Iterator

import pytest

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.tools import daemon_log
from tests.security.support import counter

pytestmark = pytest.mark.timeout(60)

ADMIN_PAGES = ("/conf", "/stacks", "/logs/", "/logLevel?log=hadoop_qjm.test.admin&level=DEBUG")
LOGGER = "hadoop_qjm.test.admin"


@pytest.fixture
def jn(pki, tmp_path, monkeypatch) -> Iterator[MiniJournalCluster]:
    """One secured JournalNode, HTTP and HTTPS listeners, administrator ``namenode``."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "jn.log").write_text("a log line\n")
    monkeypatch.setenv("HADOOP_LOG_DIR", str(tmp_path / "logs"))
    conf = pki.conf(
        **{
            "dfs.http.policy": "HTTP_AND_HTTPS",
            "dfs.cluster.administrators": "namenode",
            "my.secret": "hunter2",
        }
    )
    logger = logging.getLogger(LOGGER)
    try:
        with MiniJournalCluster(1, conf=conf) as cluster:
            yield cluster
    finally:
        logger.setLevel(logging.NOTSET)


def get(pki, port: int, path: str, cert: str | None, tls: bool = True) -> tuple[int, str]:
    if tls:
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            "127.0.0.1", port, timeout=10, context=pki.client_context(cert)
        )
    else:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        return response.status, response.read().decode()
    finally:
        conn.close()


def test_admin_pages_are_for_administrators_only(jn, pki, caplog):
    node = jn.journal_node(0)
    https = jn.https_address(0)[1]
    logger = logging.getLogger(LOGGER)
    for path in ADMIN_PAGES:
        page = path.split("?")[0]
        before = counter(node, "journalnode_http_authorization_failures", path=page)
        status, body = get(pki, https, path, None)
        assert (status, body) == (
            403,
            "Unauthenticated users are not authorized to access this page.\n",
        ), path
        status, body = get(pki, https, path, "intruder")
        assert (status, body) == (
            403,
            f"User intruder is unauthorized to access the page {page}.\n",
        )
        status, body = get(pki, jn.http_address(0)[1], path, None, tls=False)
        assert (status, body) == (403, f"{page} is served only over HTTPS\n")
        assert counter(node, "journalnode_http_authorization_failures", path=page) == before + 3
        assert logger.level == logging.NOTSET  # no refused request changed a level
    assert any("User intruder is unauthorized" in r.getMessage() for r in caplog.records)

    status, body = get(pki, https, "/conf?format=json", "namenode")
    assert status == 200 and "hunter2" not in body and '"<redacted>"' in body
    assert get(pki, https, "/stacks", "namenode")[0] == 200
    assert get(pki, https, "/logs/jn.log", "namenode") == (200, "a log line\n")
    status, body = get(pki, https, f"/logLevel?log={LOGGER}&level=ERROR", "namenode")
    assert status == 200 and "Setting Level to ERROR" in body
    assert logger.level == logging.ERROR
    # Reading a level, the status page and the metrics stay open.
    for path in (f"/logLevel?log={LOGGER}", "/", "/jmx", "/metrics", "/prom"):
        assert get(pki, https, path, None)[0] == 200, path


def test_daemonlog_over_https_presents_the_client_certificate(jn, pki, capsys):
    target = f"127.0.0.1:{jn.https_address(0)[1]}"
    intruder = pki.conf(**{"hadoop.ssl.client.conf": str(pki.ssl_xml("client", "intruder"))})
    with pytest.raises(IOException, match="Server returned HTTP response code: 403") as e:
        daemon_log.run(["-setlevel", target, LOGGER, "DEBUG", "-protocol", "https"], intruder)
    assert "User intruder is unauthorized to access the page /logLevel." in str(e.value)
    assert logging.getLogger(LOGGER).level == logging.NOTSET
    # HTTPS_ONLY in the configuration: https without -protocol, with the admin's certificate.
    admin = pki.conf()  # ssl-client.xml: the "namenode" certificate
    assert daemon_log.run(["-setlevel", target, LOGGER, "DEBUG"], admin) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"Connecting to https://{target}/logLevel?")
    assert out[-1] == "Effective Level: DEBUG"
    assert logging.getLogger(LOGGER).level == logging.DEBUG


def test_instrumentation_requires_admin_guards_jmx_metrics_and_prom(pki, tmp_path):
    conf = pki.conf(
        **{
            "hadoop.security.instrumentation.requires.admin": "true",
            "dfs.cluster.administrators": "CN=namenode",
        }
    )
    with MiniJournalCluster(1, conf=conf) as cluster:
        https = cluster.https_address(0)[1]
        for path in ("/jmx", "/metrics", "/prom"):
            assert get(pki, https, path, None)[0] == 403, path
            assert get(pki, https, path, "intruder")[0] == 403, path
            assert get(pki, https, path, "namenode")[0] == 200, path
        assert get(pki, https, "/", None)[0] == 200


def test_nobody_is_an_administrator_by_default(secure_cluster, pki):
    https = secure_cluster.https_address(0)[1]
    for cert in (None, "namenode", "localhost"):
        assert get(pki, https, "/conf", cert)[0] == 403, cert
    assert get(pki, https, "/jmx", None)[0] == 200
