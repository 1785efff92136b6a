"""A test PKI for a secured cluster: a CA, one certificate per host, one for the clients.

``hdfs-py security -generateCerts DIR`` and the test suite use this. X.509 is built with
the ``cryptography`` package (certificate encoding is not something to hand-write). Keys
are ECDSA P-256: quick to make and to handshake with. Every certificate can be used by
a server and by a client (a JournalNode is both: its syncer and its acceptRecovery
downloads are clients of its peers).

Files written in DIR: ``ca.pem`` / ``ca-key.pem``; per host ``<host>.pem`` /
``<host>-key.pem`` (subject ``CN=<host>``; SANs: the host, ``localhost`` and
``127.0.0.1``); the client identity's ``<client>.pem`` / ``<client>-key.pem``; and sample
``ssl-server.xml`` (the first host's certificate) and ``ssl-client.xml`` (the client's).
Keys are written mode 0600 and unencrypted; :func:`write_pem` can encrypt one.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from hadoop_qjm.common.durable import blocking_file
from hadoop_qjm.common.exceptions import IllegalArgumentException, IOException
from hadoop_qjm.common.security.groups import (
    DEFAULT_STATIC_MAPPING_OVERRIDES,
    STATIC_MAPPING_OVERRIDES_KEY,
)
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys

__all__ = [
    "CertificateAuthority",
    "DEFAULT_CLIENT",
    "generate_test_pki",
    "secure_conf_properties",
    "write_pem",
    "write_ssl_xml",
]

#: The identity (subject CN) of the client certificate: the NameNodes and the tools.
DEFAULT_CLIENT = "namenode"
_NAME = re.compile(r"[A-Za-z0-9_:][A-Za-z0-9._:-]*")
#: A DNS label (RFC 1123): 1 to 63 letters, digits and hyphens, no hyphen at either end.
_DNS_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")
_MAX_DNS_NAME = 253
#: The longest subject CN (RFC 5280's ub-common-name); ``cryptography`` refuses more.
MAX_CN_LENGTH = 64
_LOOPBACK_SANS = ("localhost", "127.0.0.1")


#: The longest validity ``days`` may ask for (100 years; the CA gets twice that).
MAX_DAYS = 36500


def _utcnow() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "hadoop-qjm-py test PKI"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _san(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


@dataclass(frozen=True)
class CertificateAuthority:
    """A self-signed CA that issues end-entity certificates."""

    cert: x509.Certificate
    key: ec.EllipticCurvePrivateKey

    @classmethod
    def create(
        cls, common_name: str = "hadoop-qjm-py test CA", days: int = 3650
    ) -> CertificateAuthority:
        key = _new_key()
        now = _utcnow()
        name = _name(common_name)
        cert = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), False)
            .sign(key, hashes.SHA256())
        )
        return cls(cert, key)

    @classmethod
    def load(
        cls, cert_path: str | os.PathLike[str], key_path: str | os.PathLike[str]
    ) -> CertificateAuthority:
        """The CA of ``ca.pem`` and ``ca-key.pem`` (to issue more certificates later)."""
        cert = x509.load_pem_x509_certificate(Path(cert_path).read_bytes())
        key = serialization.load_pem_private_key(Path(key_path).read_bytes(), None)
        if not isinstance(key, ec.EllipticCurvePrivateKey):
            raise IllegalArgumentException(f"{key_path} does not hold an EC private key")
        return cls(cert, key)

    def issue(
        self,
        common_name: str,
        sans: Sequence[str] = (),
        *,
        days: int = 365,
        not_valid_before: dt.datetime | None = None,
        not_valid_after: dt.datetime | None = None,
    ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
        """A certificate for ``common_name`` (server and client use) and its new key.

        ``not_valid_before`` / ``not_valid_after`` override the validity (a test makes an
        expired certificate with a ``not_valid_after`` in the past).
        """
        key = _new_key()
        now = _utcnow()
        start = not_valid_before or now - dt.timedelta(minutes=5)
        end = not_valid_after or now + dt.timedelta(days=days)
        builder = (
            x509.CertificateBuilder()
            .subject_name(_name(common_name))
            .issuer_name(self.cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start)
            .not_valid_after(end)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()), False
            )
        )
        names = list(dict.fromkeys(sans))
        if names:
            builder = builder.add_extension(
                x509.SubjectAlternativeName([_san(n) for n in names]), critical=False
            )
        return builder.sign(self.key, hashes.SHA256()), key


def write_pem(
    path: str | os.PathLike[str],
    *,
    cert: x509.Certificate | None = None,
    key: ec.EllipticCurvePrivateKey | None = None,
    password: str | None = None,
) -> Path:
    """Write ``cert`` and/or ``key`` as PEM; a file holding a key is mode 0600."""
    data = b""
    if cert is not None:
        data += cert.public_bytes(serialization.Encoding.PEM)
    if key is not None:
        encryption: serialization.KeySerializationEncryption = (
            serialization.BestAvailableEncryption(password.encode())
            if password
            else serialization.NoEncryption()
        )
        data += key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
        )
    path = Path(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if key is not None else 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return path


def write_ssl_xml(
    path: str | os.PathLike[str], mode: str, cert: Path, key: Path, trust_store: Path
) -> Path:
    """An ``ssl-server.xml`` (``mode`` "server") or ``ssl-client.xml`` ("client")."""
    conf = Configuration(load_defaults=False)
    conf.set(keys.SSL_KEYSTORE_LOCATION_TPL.format(mode=mode), str(cert))
    conf.set(keys.SSL_KEYSTORE_KEYFILE_TPL.format(mode=mode), str(key))
    conf.set(keys.SSL_TRUSTSTORE_LOCATION_TPL.format(mode=mode), str(trust_store))
    conf.write_xml(path)
    return Path(path)


def _is_host_name(name: str) -> bool:
    """A DNS name (RFC 1123 labels, at most 253 characters) or an IPv4/IPv6 address."""
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return len(name) <= _MAX_DNS_NAME and all(
            _DNS_LABEL.fullmatch(label) for label in name.split(".")
        )
    return True


def _name_error(name: str, what: str, *, host: bool) -> str | None:
    """Why ``name`` cannot be a certificate's CN (and its files' names), or None."""
    shown = repr(name) if len(name) <= 40 else f"'{name[:20]}...' ({len(name)} characters)"
    if not 1 <= len(name) <= MAX_CN_LENGTH:
        return (
            f"Invalid {what} {shown}: a certificate's name (CN) is 1 to {MAX_CN_LENGTH} characters"
        )
    if host and not _is_host_name(name):
        return (
            f"Invalid {what} {shown}: use a DNS name (dot-separated labels of 1 to 63 letters, "
            "digits and hyphens, neither starting nor ending with a hyphen) or an IP address"
        )
    # The name is also a file name in DIR: no '/', and no clash with the CA's files.
    if not _NAME.fullmatch(name):
        return (
            f"Invalid {what} {shown}: use a host name or an IP address "
            "(letters, digits, '_', '.', '-', ':')"
        )
    if name == "ca" or name.endswith("-key"):
        return f"Invalid {what} {shown}: 'ca' and names ending in '-key' name the PKI's other files"
    return None


def _check_names(hosts: Sequence[str], client: str) -> list[str]:
    names = [h.strip() for h in hosts if h.strip()]
    if not names:
        raise IllegalArgumentException("At least one host name is needed")
    problems = [_name_error(name, "host name", host=True) for name in names]
    problems.append(_name_error(client, "client name", host=False))
    for problem in problems:
        if problem is not None:
            raise IllegalArgumentException(problem)
    return list(dict.fromkeys(names))


def _check_directory(directory: Path, new_or_empty: bool) -> None:
    """Refuse (IOException) a ``directory`` the PKI cannot be written to, before any key is
    made: a file, a path under a file, one holding a CA, or (``new_or_empty``) one that
    holds anything."""
    blocker = blocking_file(directory)
    if blocker is not None:
        raise IOException(f"{blocker} is not a directory")
    if (directory / "ca.pem").exists():
        raise IOException(f"{directory} already holds a CA (ca.pem); choose another directory")
    if new_or_empty and directory.is_dir() and any(directory.iterdir()):
        raise IOException(f"{directory} is not empty; choose a new or empty directory")


def generate_test_pki(
    directory: str | os.PathLike[str],
    hosts: Sequence[str] = ("localhost",),
    *,
    client: str = DEFAULT_CLIENT,
    days: int = 365,
    new_or_empty: bool = False,
) -> dict[str, Path]:
    """Create the test PKI in ``directory`` (see the module docstring).

    Returns every file written, keyed by its name without ``.pem`` (``"ca"``,
    ``"ca-key"``, ``"<host>"``, ``"<host>-key"``, ``"<client>"``, ``"<client>-key"``) plus
    ``"ssl-server.xml"`` and ``"ssl-client.xml"``. Refuses (IOException) a ``directory``
    that is a file or already holds a ``ca.pem`` (with ``new_or_empty``: that holds
    anything); an empty ``directory`` name, a host that is not a DNS name or an IP
    address, a name that cannot be a certificate's CN (1 to :data:`MAX_CN_LENGTH`
    characters) or a bad ``days`` raise IllegalArgumentException. Either way nothing is
    written.
    """
    if not 0 < days <= MAX_DAYS:
        raise IllegalArgumentException(f"--days must be between 1 and {MAX_DAYS}: {days}")
    names = _check_names(hosts, client)
    if not os.fspath(directory):
        # Path("") is the current directory: an empty name must not write the PKI there.
        raise IllegalArgumentException("The directory name is empty")
    directory = Path(directory).absolute()
    _check_directory(directory, new_or_empty)
    # Everything is made in memory first: a failure writes nothing.
    ca = CertificateAuthority.create(days=max(days, 1) * 2)
    issued = {name: ca.issue(name, [name, *_LOOPBACK_SANS], days=days) for name in names}
    if client not in issued:
        issued[client] = ca.issue(client, [client, *_LOOPBACK_SANS], days=days)
    directory.mkdir(parents=True, exist_ok=True)
    paths = {
        "ca": write_pem(directory / "ca.pem", cert=ca.cert),
        "ca-key": write_pem(directory / "ca-key.pem", key=ca.key),
    }
    for name, (cert, key) in issued.items():
        paths[name] = write_pem(directory / f"{name}.pem", cert=cert)
        paths[f"{name}-key"] = write_pem(directory / f"{name}-key.pem", key=key)
    first = names[0]
    paths["ssl-server.xml"] = write_ssl_xml(
        directory / "ssl-server.xml", "server", paths[first], paths[f"{first}-key"], paths["ca"]
    )
    paths["ssl-client.xml"] = write_ssl_xml(
        directory / "ssl-client.xml", "client", paths[client], paths[f"{client}-key"], paths["ca"]
    )
    return paths


def secure_conf_properties(
    directory: str | os.PathLike[str],
    hosts: Sequence[str] = ("localhost",),
    *,
    client: str = DEFAULT_CLIENT,
    http_policy: str = "HTTPS_ONLY",
) -> dict[str, str]:
    """The properties that secure a local cluster with the PKI in ``directory``.

    Makes the PKI first if ``directory`` has no ``ca.pem`` (then ``ssl-server.xml`` and
    ``ssl-client.xml`` are written there too). Every process of the cluster may use the
    same properties: the servers present the first host's certificate, the clients the
    ``client`` one, and both identities are allowed to write; the identities of the PKI
    (the daemons and the administrator's client) are in ``supergroup``
    (``hadoop.user.group.static.mapping.overrides``): they may make the NameNode's admin
    and HA calls.
    """
    directory = Path(directory).absolute()
    if not (directory / "ca.pem").exists():
        generate_test_pki(directory, hosts, client=client)
    names = _check_names(hosts, client)
    return {
        keys.HADOOP_SECURITY_AUTHENTICATION_KEY: "certificate",
        keys.HADOOP_RPC_PROTECTION_KEY: "privacy",
        keys.DFS_HTTP_POLICY_KEY: http_policy,
        keys.HADOOP_SSL_SERVER_CONF_KEY: str(directory / "ssl-server.xml"),
        keys.HADOOP_SSL_CLIENT_CONF_KEY: str(directory / "ssl-client.xml"),
        keys.DFS_JOURNALNODE_ALLOWED_PRINCIPALS_KEY: ",".join(dict.fromkeys([client, *names])),
        STATIC_MAPPING_OVERRIDES_KEY: "".join(
            f"{name}=supergroup;" for name in dict.fromkeys([client, *names])
        )
        + DEFAULT_STATIC_MAPPING_OVERRIDES,
    }
