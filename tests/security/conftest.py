"""The test PKI, made once per session, and helpers to build secured configurations.

Besides what ``secure_conf_properties`` makes (a CA, a server certificate ``localhost``,
the client certificate ``namenode``, ssl-server.xml, ssl-client.xml), the session PKI holds
the bad certificates the refusal tests present: ``intruder`` (our CA, a subject that is not
allowed), ``expired`` (our CA, CN namenode, no longer valid), ``other-namenode`` (CN
namenode from another CA, ``other-ca.pem``) and ``wrong-host`` (a server certificate whose
only SAN is ``jn9.example.com``).
"""

from __future__ import annotations

import datetime as dt
import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hadoop_qjm.common.security import TlsClientSocketFactory
from hadoop_qjm.common.security.certs import (
    CertificateAuthority,
    secure_conf_properties,
    write_pem,
    write_ssl_xml,
)
from hadoop_qjm.conf import Configuration
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster


@dataclass(frozen=True)
class Pki:
    dir: Path
    props: dict[str, str]

    def path(self, name: str) -> Path:
        return self.dir / f"{name}.pem"

    def conf(self, **extra: object) -> Configuration:
        """A Configuration with the secure properties, plus ``extra`` (dots as in keys)."""
        conf = Configuration()
        for key, value in {**self.props, **extra}.items():
            conf.set(key, value)
        return conf

    def ssl_xml(self, mode: str, cert: str, trust: str = "ca") -> Path:
        """An ssl-<mode>.xml presenting ``cert`` and trusting ``trust`` (written once)."""
        path = self.dir / f"ssl-{mode}-{cert}-{trust}.xml"
        if not path.exists():
            write_ssl_xml(path, mode, self.path(cert), self.path(f"{cert}-key"), self.path(trust))
        return path

    def client_factory(self, cert: str | None, trust: str = "ca") -> TlsClientSocketFactory:
        """A TLS client presenting ``cert`` (None: no certificate), trusting ``trust``."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.load_verify_locations(self.path(trust))
        if cert is not None:
            context.load_cert_chain(self.path(cert), self.path(f"{cert}-key"))
        return TlsClientSocketFactory(context)

    def client_context(self, cert: str | None, trust: str = "ca") -> ssl.SSLContext:
        return self.client_factory(cert, trust).context


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    props = secure_conf_properties(directory)
    ca = CertificateAuthority.load(directory / "ca.pem", directory / "ca-key.pem")
    loopback = ["127.0.0.1", "localhost"]
    now = dt.datetime.now(dt.timezone.utc)

    def write(name: str, pair) -> None:
        write_pem(directory / f"{name}.pem", cert=pair[0])
        write_pem(directory / f"{name}-key.pem", key=pair[1])

    write("intruder", ca.issue("intruder", loopback))
    write(
        "expired",
        ca.issue(
            "namenode",
            loopback,
            not_valid_before=now - dt.timedelta(days=30),
            not_valid_after=now - dt.timedelta(days=1),
        ),
    )
    write("wrong-host", ca.issue("jn9.example.com", ["jn9.example.com"]))
    other = CertificateAuthority.create("another CA")
    write_pem(directory / "other-ca.pem", cert=other.cert)
    write("other-namenode", other.issue("namenode", loopback))
    return Pki(directory, props)


@pytest.fixture
def secure_cluster(pki: Pki) -> Iterator[MiniJournalCluster]:
    """Three secured JournalNodes (mutual TLS RPC, HTTPS only)."""
    with MiniJournalCluster(3, conf=pki.conf()) as cluster:
        yield cluster
