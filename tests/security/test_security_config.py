"""The security configuration, identities and the read/write split, without a cluster:
every bad setting is one clear ConfigurationError sentence, raised before anything binds."""

from __future__ import annotations

import ast
import os
import ssl
import subprocess
import sys
from pathlib import Path

import pytest

import hadoop_qjm.common.security.authorization as authorization
from hadoop_qjm.cli import load_configuration, main
from hadoop_qjm.common.exceptions import (
    AuthorizationException,
    ConfigurationError,
    IllegalArgumentException,
)
from hadoop_qjm.common.security import (
    READ_ONLY_RPCS,
    HttpPolicy,
    ServiceAuthorizer,
    SSLFactory,
    handshake_failure_reason,
    identity_from_peer_cert,
    parse_principals,
)
from hadoop_qjm.common.security.certs import generate_test_pki, write_pem
from hadoop_qjm.common.security.ssl_factory import read_key_store_files
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy
from hadoop_qjm.qjournal.server.journal_node import JournalNode
from hadoop_qjm.qjournal.server.journal_node_rpc_server import (
    QJournalProtocolDispatcher,
    QJournalProtocolHandler,
)
from hadoop_qjm.spark import journal_audit
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO

pytestmark = pytest.mark.timeout(30)


def _conf(**props: str) -> Configuration:
    conf = Configuration()
    for key, value in props.items():
        conf.set(key, value)
    return conf


# ---- the switches -------------------------------------------------------------------------------


def test_defaults_are_plain() -> None:
    factory = SSLFactory(Configuration())
    assert not factory.tls_enabled and factory.http_policy is HttpPolicy.HTTP_ONLY
    assert factory.rpc_server_socket_factory() is None
    assert factory.rpc_client_socket_factory() is None
    assert factory.https_server_context() is None and factory.http_client_context() is None


@pytest.mark.parametrize(
    ("props", "message"),
    [
        (
            {"dfs.http.policy": "HTTPS_SOMETIMES"},
            "Invalid value for dfs.http.policy: 'HTTPS_SOMETIMES' is not HTTP_ONLY, HTTPS_ONLY "
            "or HTTP_AND_HTTPS",
        ),
        (
            {"hadoop.security.authentication": "kerberos"},
            "Invalid value for hadoop.security.authentication: 'kerberos' is not simple or "
            "certificate (Kerberos is not supported: use certificate)",
        ),
        (
            {"hadoop.rpc.protection": "secret"},
            "Invalid value for hadoop.rpc.protection: 'secret' is not authentication, "
            "integrity or privacy",
        ),
        (
            {"hadoop.security.authentication": "certificate"},
            "hadoop.security.authentication=certificate needs dfs.http.policy HTTPS_ONLY or "
            "HTTP_AND_HTTPS: edit segments are never sent over plain HTTP once TLS is on",
        ),
        (
            {"dfs.http.policy": "HTTPS_ONLY", "hadoop.ssl.handshake.timeout": "0s"},
            "Invalid value for hadoop.ssl.handshake.timeout: '0s' is not a positive time "
            "duration (a number of milliseconds, or with a unit: ns us ms s m h d) (set "
            "programmatically)",
        ),
    ],
    ids=["http-policy", "kerberos", "protection", "certificate-over-http", "timeout"],
)
def test_bad_switches(props, message) -> None:
    with pytest.raises(ConfigurationError) as info:
        SSLFactory(_conf(**props))
    assert str(info.value) == message
    with pytest.raises(ConfigurationError):
        JournalNode(_conf(**props))  # the daemon refuses at construction: nothing bound


def test_protection_values_all_mean_tls(pki) -> None:
    for value in ("authentication", "integrity", "privacy", "authentication,privacy"):
        factory = SSLFactory(pki.conf(**{"hadoop.rpc.protection": value}))
        assert factory.rpc_tls and factory.security.rpc_protection == tuple(value.split(","))


# ---- ssl-server.xml / ssl-client.xml -------------------------------------------------------------


def _ssl_xml(path: Path, body: str) -> Path:
    path.write_text(f"<?xml version='1.0'?>\n<configuration>\n{body}</configuration>\n")
    return path


def _prop(name: str, value: object) -> str:
    return f"  <property><name>{name}</name><value>{value}</value></property>\n"


def test_missing_keystore_file(pki, tmp_path) -> None:
    missing = tmp_path / "gone.pem"
    server_xml = _ssl_xml(
        tmp_path / "ssl-server.xml",
        _prop("ssl.server.keystore.location", missing)
        + _prop("ssl.server.truststore.location", pki.path("ca")),
    )
    conf = pki.conf(**{"hadoop.ssl.server.conf": str(server_xml)})
    message = (
        f"ssl.server.keystore.location names {missing}, which does not exist (in {server_xml})"
    )
    with pytest.raises(ConfigurationError) as info:
        SSLFactory(conf).server_context()
    assert str(info.value) == message
    node = JournalNode(_with_dirs(conf, tmp_path))
    with pytest.raises(ConfigurationError, match="gone.pem, which does not exist"):
        node.start()
    assert node.rpc_server is None and node.https_server is None  # nothing was bound


def _with_dirs(conf: Configuration, tmp_path: Path) -> Configuration:
    conf = conf.copy()
    conf.set("dfs.journalnode.edits.dir", str(tmp_path / "jn"))
    for key in ("rpc", "http", "https"):
        conf.set(f"dfs.journalnode.{key}-address", "127.0.0.1:0")
    return conf


def test_malformed_ssl_server_xml(pki, tmp_path) -> None:
    bad = tmp_path / "ssl-server.xml"
    bad.write_text("<configuration><property><name>x</name></configuration>\n")
    conf = pki.conf(**{"hadoop.ssl.server.conf": str(bad)})
    with pytest.raises(
        ConfigurationError, match=r"^Malformed configuration file .*ssl-server\.xml, line 1"
    ):
        SSLFactory(conf).server_context()


def test_ssl_server_xml_found_in_the_configuration_directory(pki, tmp_path) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "ssl-server.xml").write_text(Path(pki.props["hadoop.ssl.server.conf"]).read_text())
    _ssl_xml(conf_dir / "hdfs-site.xml", _prop("dfs.http.policy", "HTTPS_ONLY"))
    conf = Configuration()
    conf.add_conf_dir(conf_dir)
    assert SSLFactory(conf).server_context().verify_mode == ssl.CERT_REQUIRED
    conf.set("hadoop.ssl.server.conf", "nope.xml")
    with pytest.raises(ConfigurationError, match="^hadoop.ssl.server.conf names nope.xml, which"):
        SSLFactory(conf).server_context()


def test_unset_keys_and_unsupported_store_types(pki, tmp_path) -> None:
    empty = _ssl_xml(tmp_path / "empty.xml", "")
    conf = pki.conf(**{"hadoop.ssl.client.conf": str(empty)})
    with pytest.raises(ConfigurationError) as info:
        SSLFactory(conf).client_context()
    assert (
        str(info.value) == f"TLS is on but ssl.client.truststore.location is not set (in {empty})"
    )
    jks = _ssl_xml(tmp_path / "jks.xml", _prop("ssl.client.keystore.type", "jks"))
    conf = pki.conf(**{"hadoop.ssl.client.conf": str(jks)})
    with pytest.raises(ConfigurationError, match="only PEM files are supported"):
        SSLFactory(conf).client_context()


def _site_dir(directory: Path, ssl_client: Path | None = None) -> Path:
    """A configuration directory turning TLS on, with ``ssl_client`` as its ssl-client.xml."""
    directory.mkdir()
    _ssl_xml(
        directory / "hdfs-site.xml",
        _prop("hadoop.security.authentication", "certificate")
        + _prop("dfs.http.policy", "HTTPS_ONLY"),
    )
    if ssl_client is not None:
        (directory / "ssl-client.xml").write_text(ssl_client.read_text())
    return directory


def test_command_line_overrides_the_keys_of_ssl_client_xml(pki, tmp_path) -> None:
    """-D overrides a key of ssl-client.xml as it overrides the site files (issue 28)."""
    missing = tmp_path / "gone-ca.pem"
    stale = _ssl_xml(
        tmp_path / "stale.xml",
        _prop("ssl.client.keystore.location", pki.path("namenode"))
        + _prop("ssl.client.keystore.keyfile", pki.path("namenode-key"))
        + _prop("ssl.client.truststore.location", missing),
    )
    conf_dir = _site_dir(tmp_path / "conf", stale)
    ssl_client = conf_dir / "ssl-client.xml"
    with pytest.raises(ConfigurationError) as info:
        SSLFactory(load_configuration(str(conf_dir))).client_context()
    assert str(info.value) == (
        f"ssl.client.truststore.location names {missing}, which does not exist (in {ssl_client})"
    )
    key = "ssl.client.truststore.location"
    conf = load_configuration(str(conf_dir), [(key, str(pki.path("ca")))])
    files = read_key_store_files(conf, "client")
    assert files.trust_store == str(pki.path("ca")) and files.source == str(ssl_client)
    assert files.cert_chain == str(pki.path("namenode"))  # the other keys: from the file
    assert SSLFactory(conf).client_context().verify_mode == ssl.CERT_REQUIRED
    # The executors of journal-audit get the same configuration, -D included.
    assert journal_audit._client_security(journal_audit.client_conf_of(conf))[0] is not None

    conf = load_configuration(str(conf_dir), [(key, "/nope/ca.pem")])
    with pytest.raises(ConfigurationError) as info:
        SSLFactory(conf).client_context()
    assert str(info.value) == (
        "ssl.client.truststore.location names /nope/ca.pem, which does not exist (set from "
        "command line)"
    )


def test_command_line_overrides_the_keys_of_ssl_server_xml_for_a_daemon(pki, tmp_path) -> None:
    conf_dir = _site_dir(tmp_path / "conf", Path(pki.props["hadoop.ssl.client.conf"]))
    (conf_dir / "ssl-server.xml").write_text(Path(pki.props["hadoop.ssl.server.conf"]).read_text())
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hadoop_qjm.cli",
            "--config",
            str(conf_dir),
            "-D",
            "ssl.server.keystore.location=/nope/jn1.pem",
            "-D",
            "dfs.journalnode.allowed.principals=nn1",
            "-D",
            f"dfs.journalnode.edits.dir={tmp_path / 'jn'}",
            "journalnode",
        ],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=Path(__file__).resolve().parents[2],
        env={k: v for k, v in os.environ.items() if k != "HADOOP_CONF_DIR"},
        check=False,
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith("hdfs-py:")]
    assert done.returncode == 1
    assert lines == [
        "hdfs-py: ssl.server.keystore.location names /nope/jn1.pem, which does not exist "
        "(set from command line)"
    ]


def test_ssl_client_xml_is_read_from_the_configuration_directory_in_use_only(
    pki, tmp_path, monkeypatch
) -> None:
    """--config names the directory; an ssl-client.xml of $HADOOP_CONF_DIR is never read
    instead (a client silently used another certificate that way: issue 28)."""
    elsewhere = _site_dir(tmp_path / "env-conf", pki.ssl_xml("client", "intruder"))
    monkeypatch.setenv("HADOOP_CONF_DIR", str(elsewhere))
    conf_dir = _site_dir(tmp_path / "conf")
    with pytest.raises(ConfigurationError) as info:
        SSLFactory(load_configuration(str(conf_dir))).client_context()
    assert str(info.value) == (
        "TLS is on but ssl.client.truststore.location is not set, and there is no "
        f"ssl-client.xml (hadoop.ssl.client.conf) in the configuration directory {conf_dir}"
    )
    # Without --config, $HADOOP_CONF_DIR is the directory in use.
    files = read_key_store_files(load_configuration(None), "client")
    assert files.source == str(elsewhere / "ssl-client.xml")
    assert files.cert_chain == str(pki.path("intruder"))
    # A directory with no site file at all is still the one in use.
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "ssl-client.xml").write_text(pki.ssl_xml("client", "namenode").read_text())
    files = read_key_store_files(load_configuration(str(bare)), "client")
    assert files.source == str(bare / "ssl-client.xml")
    # A named file missing from the directory in use: the directory is named.
    conf = load_configuration(str(conf_dir), [("hadoop.ssl.client.conf", "mine.xml")])
    with pytest.raises(ConfigurationError) as info:
        SSLFactory(conf).client_context()
    assert str(info.value) == (
        f"hadoop.ssl.client.conf names mine.xml, which does not exist in the configuration "
        f"directory {conf_dir}"
    )


def test_no_configuration_directory_is_said(pki, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(
        "HADOOP_CONF_DIR", str(_site_dir(tmp_path / "env", pki.ssl_xml("client", "namenode")))
    )
    conf = _conf(
        **{"hadoop.security.authentication": "certificate", "dfs.http.policy": "HTTPS_ONLY"}
    )
    with pytest.raises(ConfigurationError) as info:
        SSLFactory(conf).client_context()  # built in code, of no directory
    assert str(info.value) == (
        "TLS is on but ssl.client.truststore.location is not set, and no ssl-client.xml "
        "(hadoop.ssl.client.conf) was looked for: there is no configuration directory "
        "(--config DIR or $HADOOP_CONF_DIR)"
    )


def test_encrypted_key_needs_its_password(pki, tmp_path) -> None:
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(pki.path("localhost-key").read_bytes(), None)
    write_pem(tmp_path / "enc-key.pem", key=key, password="s3cret")

    def server_xml(password: str | None) -> Path:
        body = (
            _prop("ssl.server.keystore.location", pki.path("localhost"))
            + _prop("ssl.server.keystore.keyfile", tmp_path / "enc-key.pem")
            + _prop("ssl.server.truststore.location", pki.path("ca"))
        )
        if password:
            body += _prop("ssl.server.keystore.keypassword", password)
        return _ssl_xml(tmp_path / f"ssl-server-{password}.xml", body)

    good = pki.conf(**{"hadoop.ssl.server.conf": str(server_xml("s3cret"))})
    assert SSLFactory(good).server_context() is not None
    bad = pki.conf(**{"hadoop.ssl.server.conf": str(server_xml("wrong"))})
    with pytest.raises(ConfigurationError, match="^Cannot load the certificate .*localhost.pem"):
        SSLFactory(bad).server_context()


def test_journal_node_needs_the_allowed_principals(pki, tmp_path) -> None:
    conf = _with_dirs(pki.conf(), tmp_path)
    conf.unset("dfs.journalnode.allowed.principals")
    node = JournalNode(conf)
    with pytest.raises(ConfigurationError, match="dfs.journalnode.allowed.principals is not set"):
        node.start()
    assert node.rpc_server is None


def test_journalnode_command_prints_one_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "hadoop_qjm.cli", "-D", "dfs.http.policy=BOGUS", "journalnode"],
        capture_output=True,
        text=True,
        timeout=30,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    lines = [line for line in done.stderr.splitlines() if line.startswith("hdfs-py:")]
    assert done.returncode == 1
    assert lines == [
        "hdfs-py: Invalid value for dfs.http.policy: 'BOGUS' is not HTTP_ONLY, HTTPS_ONLY or "
        "HTTP_AND_HTTPS"
    ]


# ---- identities and the read/write split ---------------------------------------------------------


def test_identity_is_the_subject_cn() -> None:
    cert = {
        "subject": ((("organizationName", "x"),), (("commonName", "nn1.example.com"),)),
        "subjectAltName": (("DNS", "other"),),
    }
    assert identity_from_peer_cert(cert) == "nn1.example.com"
    assert identity_from_peer_cert({"subject": ((("organizationName", "x"),),)}) is None
    assert identity_from_peer_cert({}) is None and identity_from_peer_cert(None) is None


def test_parse_principals() -> None:
    key = "dfs.journalnode.allowed.principals"
    assert parse_principals(" nn1, CN=jn1 ,,", key) == frozenset({"nn1", "jn1"})
    assert parse_principals("*", key) == frozenset({"*"})
    assert parse_principals("", key) is None and parse_principals(None, key) is None
    with pytest.raises(ConfigurationError, match="mixes \\* .* with names"):
        parse_principals("*,nn1", key)


def test_read_write_split() -> None:
    authorizer = ServiceAuthorizer.of(["nn1"])
    # The inter-JN calls (the syncer's, HDFS-16690's) are metadata reads like the rest.
    assert {"getEditLogManifestFromJournal", "getStorageInfo"} <= READ_ONLY_RPCS
    for rpc in READ_ONLY_RPCS:
        authorizer.check_rpc(rpc, "anyone")  # metadata reads: any authenticated peer
    for rpc in ("getJournalState", "newEpoch", "journal", "acceptRecovery", "getJournaledEdits"):
        authorizer.check_rpc(rpc, "nn1")
        with pytest.raises(
            AuthorizationException, match=f"User jn9 is not authorized to call {rpc}"
        ):
            authorizer.check_rpc(rpc, "jn9")
    with pytest.raises(AuthorizationException, match="Unauthenticated caller"):
        authorizer.check_rpc("isFormatted", None)
    ServiceAuthorizer.of(["*"]).check_transfer("/getJournal", "anyone")
    with pytest.raises(AuthorizationException):
        ServiceAuthorizer.of(["*"]).check_transfer("/getJournal", None)


def test_authorization_module_is_pure() -> None:
    tree = ast.parse(Path(authorization.__file__).read_text())
    imported = {
        (node.module or "").split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom)
    } | {
        a.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for a in node.names
    }
    assert imported <= {"__future__", "collections", "dataclasses", "typing", "hadoop_qjm"}


def test_dispatcher_refuses_before_decoding_and_answers_the_exception() -> None:
    """The refusal travels back as the typed AuthorizationException (no socket here)."""
    calls = []

    def authorize(rpc, identity, remote_ip):
        calls.append((rpc, identity, remote_ip))
        ServiceAuthorizer.of(["nn1"]).check_rpc(rpc, identity)

    class Journal:
        def is_formatted(self):
            return True

    class Node:
        def get_or_create_journal(self, jid, ns=None):
            return Journal()

    dispatcher = QJournalProtocolDispatcher(QJournalProtocolHandler(Node()), None, authorize)

    class Channel:
        def __init__(self, user):
            self.user = user

        def call(self, payload):
            return dispatcher.process(payload, "10.0.0.9", self.user)

        def reset(self):
            pass

        def close(self):
            pass

    assert QJournalProtocolProxy("jn", 1, channel=Channel("jn9")).is_formatted("j")
    with pytest.raises(AuthorizationException, match="User jn9 is not authorized to call newEpoch"):
        QJournalProtocolProxy("jn", 1, channel=Channel("jn9")).new_epoch("j", FAKE_NSINFO, 2)
    assert calls == [("isFormatted", "jn9", "10.0.0.9"), ("newEpoch", "jn9", "10.0.0.9")]


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (TimeoutError("timed out"), "timeout"),
        (ssl.SSLEOFError(8, "EOF"), "closed"),
        (ConnectionResetError(104, "reset"), "closed"),
        (OSError("?"), "other"),
    ],
)
def test_handshake_failure_reasons(error, reason) -> None:
    assert handshake_failure_reason(error) == reason


# ---- the test PKI and its command ---------------------------------------------------------------


def test_generate_certs_command(tmp_path, capsys) -> None:
    target = tmp_path / "pki"
    assert (
        main(["security", "-generateCerts", str(target), "--hosts", "jn1,10.0.0.7", "--days", "3"])
        == 0
    )
    names = sorted(p.name for p in target.iterdir())
    assert names == sorted(
        [
            "ca.pem",
            "ca-key.pem",
            "jn1.pem",
            "jn1-key.pem",
            "10.0.0.7.pem",
            "10.0.0.7-key.pem",
            "namenode.pem",
            "namenode-key.pem",
            "ssl-server.xml",
            "ssl-client.xml",
        ]
    )
    assert (target / "jn1-key.pem").stat().st_mode & 0o777 == 0o600
    assert "dfs.journalnode.allowed.principals=jn1,10.0.0.7\n" in capsys.readouterr().out
    from cryptography import x509

    cert = x509.load_pem_x509_certificate((target / "jn1.pem").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert sans.get_values_for_type(x509.DNSName) == ["jn1", "localhost"]
    assert [str(ip) for ip in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]

    # Again into the same directory: refused, one line, nothing changed.
    before = {p.name: p.read_bytes() for p in target.iterdir()}
    assert main(["security", "-generateCerts", str(target)]) == 1
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith("already holds a CA (ca.pem); choose another directory")
    )
    assert {p.name: p.read_bytes() for p in target.iterdir()} == before


def test_generate_certs_suggests_no_admin_writer(tmp_path, capsys) -> None:
    """The admin (tools') certificate may talk to a NameNode, never write to a JournalNode:
    the suggested allowed list is the hosts' identities only (docs/security.md, step 3)."""
    target = tmp_path / "pki"
    hosts = "jn1,jn2,jn3,nn1,nn2"
    argv = ["security", "-generateCerts", str(target), "--hosts", hosts, "--client", "hdfs-admin"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    lines = [line.strip() for line in out.splitlines() if "allowed.principals" in line]
    assert lines == ["dfs.journalnode.allowed.principals=jn1,jn2,jn3,nn1,nn2"]
    assert (target / "hdfs-admin.pem").exists()
    assert "hdfs-admin.pem" in (target / "ssl-client.xml").read_text()


@pytest.mark.parametrize(
    "args",
    [["--days", "0"], ["--hosts", "a/b"], ["--hosts", " , "], ["--hosts", "ca"]],
    ids=["days", "slash", "empty", "ca"],
)
def test_generate_certs_bad_input(tmp_path, capsys, args) -> None:
    target = tmp_path / "pki"
    assert main(["security", "-generateCerts", str(target), *args]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("hdfs-py security: ") and "hdfs-py: " not in err and "\n" not in err
    assert not target.exists()


LONG_NAME = "a" * 300


def _one_error_line(capsys) -> str:
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert len(err.splitlines()) == 1, err
    assert "internal error" not in err and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--hosts", LONG_NAME], "Invalid host name 'aaaaaaaaaaaaaaaaaaaa...' (300 characters)"),
        (["--client", LONG_NAME], "Invalid client name 'aaaaaaaaaaaaaaaaaaaa...' (300 characters)"),
        (["--client", ""], "Invalid client name '': a certificate's name (CN) is 1 to 64"),
        (["--hosts", "jn1,-jn2"], "Invalid host name '-jn2': use a DNS name"),
        (["--hosts=jn_1"], "Invalid host name 'jn_1': use a DNS name"),
    ],
    ids=["long-host", "long-client", "empty-client", "hyphen-host", "underscore-host"],
)
def test_generate_certs_refuses_a_name_that_cannot_be_a_certificates(
    tmp_path, capsys, args, expected
) -> None:
    """A certificate's CN is 1 to 64 characters, and a host is a DNS name or an IP
    address: one line naming the name, exit 2, before anything is written."""
    target = tmp_path / "pki"
    assert main(["security", "-generateCerts", str(target), *args]) == 2
    err = _one_error_line(capsys)
    assert err.startswith("hdfs-py security: ") and expected in err, err
    assert not target.exists()


def test_generate_certs_refuses_an_empty_directory_name(tmp_path, capsys, monkeypatch) -> None:
    """``-generateCerts ''`` would write the PKI into the current directory."""
    monkeypatch.chdir(tmp_path)
    assert main(["security", "-generateCerts", ""]) == 2
    assert _one_error_line(capsys) == (
        "hdfs-py security: argument -generateCerts: the path is empty"
    )
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(IllegalArgumentException, match="The directory name is empty"):
        generate_test_pki("")
    assert list(tmp_path.iterdir()) == []


def test_generate_certs_refuses_a_directory_that_is_not_empty(tmp_path, capsys) -> None:
    """The command's DIR is new or empty: nothing is added next to what is there."""
    target = tmp_path / "pki"
    target.mkdir()
    (target / "notes.txt").write_text("mine\n")
    assert main(["security", "-generateCerts", str(target)]) == 1
    assert _one_error_line(capsys) == (
        f"hdfs-py: {target} is not empty; choose a new or empty directory"
    )
    assert {p.name: p.read_bytes() for p in target.iterdir()} == {"notes.txt": b"mine\n"}


@pytest.mark.parametrize("below", [False, True], ids=["file", "under-a-file"])
def test_generate_certs_refuses_a_file_as_its_directory(tmp_path, capsys, below) -> None:
    """DIR a file, or a path under one: refused before any key is made, file untouched."""
    afile = tmp_path / "afile"
    afile.write_text("keep\n")
    target = afile / "pki" if below else afile
    assert main(["security", "-generateCerts", str(target)]) == 1
    assert _one_error_line(capsys) == f"hdfs-py: {afile} is not a directory"
    assert afile.read_text() == "keep\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]


def test_generate_test_pki_library(tmp_path) -> None:
    paths = generate_test_pki(tmp_path / "p", ["jn1", "jn2"], client="nn", days=2)
    assert {"ca", "ca-key", "jn1", "jn1-key", "jn2", "nn", "nn-key"} <= paths.keys()
    assert paths["ssl-server.xml"].name == "ssl-server.xml"
