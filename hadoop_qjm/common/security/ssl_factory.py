"""SSLFactory: the security configuration, read once, and every TLS object made from it.

Hadoop's ``SSLFactory`` plus the switches of its RPC security, for mutual TLS (design
paper §1.3.4: every operation that spans nodes is mutually authenticated and encrypted
with the mechanisms of the rest of Hadoop — here certificates where Hadoop has Kerberos).
Every daemon and client builds one from its Configuration and takes from it:

* :meth:`SSLFactory.rpc_server_socket_factory` / :meth:`SSLFactory.rpc_client_socket_factory`
  for the Thrift RPC (None while ``hadoop.security.authentication`` is ``simple``);
* :meth:`SSLFactory.https_server_context` for an HTTPS listener and
  :meth:`SSLFactory.http_client_context` for segment and image downloads.

So turning security on in the configuration files is all an operator does
(docs/security.md). The keys:

* ``hadoop.security.authentication``: ``simple`` (default, plain TCP) or ``certificate``
  (mutual TLS on every RPC server and client);
* ``hadoop.rpc.protection``: ``authentication``, ``integrity`` or ``privacy`` (a comma
  list is accepted). With certificates all three give the same channel: TLS always
  authenticates both ends, protects integrity and encrypts; a TLS channel without
  encryption is never negotiated, so no value sends plaintext once TLS is on;
* ``dfs.http.policy``: ``HTTP_ONLY`` (default), ``HTTPS_ONLY`` or ``HTTP_AND_HTTPS``.
  ``certificate`` with ``HTTP_ONLY`` is refused: segments would travel in the clear;
* ``hadoop.ssl.server.conf`` / ``hadoop.ssl.client.conf`` (``ssl-server.xml`` /
  ``ssl-client.xml``, looked up in the configuration directory in use unless absolute)
  hold ``ssl.{server,client}.keystore.location`` (PEM certificate chain, which may also
  hold the key), ``.keystore.keyfile`` (PEM key, when separate), ``.keystore.keypassword``
  (else ``.keystore.password``) for an encrypted key, and ``.truststore.location`` (PEM
  CA bundle). The file is layered like a site file: a key set over the site files
  (``-D``) overrides it, and a key missing from it is looked up in the main configuration;
* ``hadoop.ssl.handshake.timeout`` (``10s``): how long a server waits for a handshake.

TLS 1.2 is the minimum. Peers are always verified: RPC servers require a client
certificate; HTTPS listeners ask for one (CERT_OPTIONAL, so the status page, ``/jmx`` and
``/metrics`` stay open) and the transfer pages refuse a request without one; clients
check the server's chain and that its certificate names the host they connected to.
"""

from __future__ import annotations

import enum
import functools
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hadoop_qjm.common.exceptions import ConfigurationError
from hadoop_qjm.common.security.authorization import (
    ServiceAuthorizer,
    parse_admins,
    parse_principals,
)
from hadoop_qjm.common.security.tls_sockets import TlsClientSocketFactory, TlsServerSocketFactory
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys

__all__ = [
    "HttpPolicy",
    "KeyStoreFiles",
    "SSLFactory",
    "SecurityConf",
    "read_key_store_files",
]

LOG = logging.getLogger(__name__)

_AUTH_METHODS = ("simple", "certificate")
_PROTECTIONS = ("authentication", "integrity", "privacy")


class HttpPolicy(enum.Enum):
    """``dfs.http.policy``."""

    HTTP_ONLY = "HTTP_ONLY"
    HTTPS_ONLY = "HTTPS_ONLY"
    HTTP_AND_HTTPS = "HTTP_AND_HTTPS"

    @property
    def http_enabled(self) -> bool:
        return self is not HttpPolicy.HTTPS_ONLY

    @property
    def https_enabled(self) -> bool:
        return self is not HttpPolicy.HTTP_ONLY


@dataclass(frozen=True)
class SecurityConf:
    """The switches, validated: each bad value is one ConfigurationError sentence."""

    certificate_auth: bool
    rpc_protection: tuple[str, ...]
    http_policy: HttpPolicy
    handshake_timeout_s: float

    @property
    def tls_enabled(self) -> bool:
        """Whether any channel (RPC or HTTP) uses TLS."""
        return self.certificate_auth or self.http_policy.https_enabled

    @classmethod
    def from_conf(cls, conf: Configuration) -> SecurityConf:
        auth = (conf.get_trimmed(keys.HADOOP_SECURITY_AUTHENTICATION_KEY) or "simple").lower()
        if auth not in _AUTH_METHODS:
            hint = " (Kerberos is not supported: use certificate)" if auth == "kerberos" else ""
            raise ConfigurationError(
                f"Invalid value for {keys.HADOOP_SECURITY_AUTHENTICATION_KEY}: '{auth}' is not "
                f"simple or certificate{hint}"
            )
        protection = tuple(
            p.lower()
            for p in conf.get_trimmed_strings(
                keys.HADOOP_RPC_PROTECTION_KEY, [keys.HADOOP_RPC_PROTECTION_DEFAULT]
            )
        ) or (keys.HADOOP_RPC_PROTECTION_DEFAULT,)
        bad = [p for p in protection if p not in _PROTECTIONS]
        if bad:
            raise ConfigurationError(
                f"Invalid value for {keys.HADOOP_RPC_PROTECTION_KEY}: '{bad[0]}' is not "
                "authentication, integrity or privacy"
            )
        policy_text = conf.get_trimmed(keys.DFS_HTTP_POLICY_KEY) or keys.DFS_HTTP_POLICY_DEFAULT
        try:
            policy = HttpPolicy(policy_text.upper())
        except ValueError:
            raise ConfigurationError(
                f"Invalid value for {keys.DFS_HTTP_POLICY_KEY}: '{policy_text}' is not "
                "HTTP_ONLY, HTTPS_ONLY or HTTP_AND_HTTPS"
            ) from None
        if auth == "certificate" and not policy.https_enabled:
            raise ConfigurationError(
                f"{keys.HADOOP_SECURITY_AUTHENTICATION_KEY}=certificate needs "
                f"{keys.DFS_HTTP_POLICY_KEY} HTTPS_ONLY or HTTP_AND_HTTPS: edit segments are "
                "never sent over plain HTTP once TLS is on"
            )
        timeout_ms = conf.get_time_duration(
            keys.HADOOP_SSL_HANDSHAKE_TIMEOUT_KEY,
            keys.HADOOP_SSL_HANDSHAKE_TIMEOUT_DEFAULT,
            "ms",
            minimum=1,
        )
        if auth == "simple" and protection != (keys.HADOOP_RPC_PROTECTION_DEFAULT,):
            LOG.warning(
                "%s=%s has no effect with %s=simple: RPC is plain TCP",
                keys.HADOOP_RPC_PROTECTION_KEY,
                ",".join(protection),
                keys.HADOOP_SECURITY_AUTHENTICATION_KEY,
            )
        return cls(auth == "certificate", protection, policy, timeout_ms / 1000.0)


@dataclass(frozen=True)
class KeyStoreFiles:
    """What ssl-server.xml or ssl-client.xml names: PEM files, all checked to exist."""

    mode: str
    #: The ssl-*.xml read, or None when none was found (the keys came from elsewhere).
    source: str | None
    cert_chain: str | None
    key_file: str | None
    key_password: str | None
    trust_store: str


def _conf_dirs(conf: Configuration) -> list[Path]:
    """Where a relative ssl-*.xml name is looked up: the configuration directory in use
    (``--config``, else ``$HADOOP_CONF_DIR``: where core-site.xml and hdfs-site.xml were
    read) and nowhere else; for a Configuration made of files, not of a directory, the
    directories of those files (the last loaded first)."""
    if conf.conf_dir is not None:
        return [Path(conf.conf_dir)]
    return list(dict.fromkeys(Path(r).parent for r in reversed(conf.resources)))


@dataclass(frozen=True)
class _SslResource:
    """The ssl-<mode>.xml of a configuration: the file found (None: none), and where it
    was looked for, for the message when a key is then missing."""

    conf: Configuration | None
    path: str | None
    name: str
    #: hadoop.ssl.server.conf or hadoop.ssl.client.conf: the key that names the file.
    conf_key: str
    searched: tuple[Path, ...]

    def unset(self, key: str) -> str:
        """The sentence for a required ``key`` found nowhere."""
        if self.path is not None:
            return f"TLS is on but {key} is not set (in {self.path})"
        if not self.searched:
            return (
                f"TLS is on but {key} is not set, and no {self.name} ({self.conf_key}) was looked "
                "for: there is no configuration directory (--config DIR or $HADOOP_CONF_DIR)"
            )
        return (
            f"TLS is on but {key} is not set, and there is no {self.name} ({self.conf_key}) in "
            f"{_directories(self.searched)}"
        )


def _directories(dirs: tuple[Path, ...]) -> str:
    if len(dirs) == 1:
        return f"the configuration directory {dirs[0]}"
    return "the configuration directories " + ", ".join(str(d) for d in dirs)


def _ssl_resource(conf: Configuration, mode: str) -> _SslResource:
    key = keys.HADOOP_SSL_SERVER_CONF_KEY if mode == "server" else keys.HADOOP_SSL_CLIENT_CONF_KEY
    default = f"ssl-{mode}.xml"
    name = conf.get_trimmed(key) or default
    explicit = conf.source(key) not in (None, "defaults")
    path = Path(name)
    searched = () if path.is_absolute() else tuple(_conf_dirs(conf))
    candidates = [path] if path.is_absolute() else [d / name for d in searched]
    found = next((p for p in candidates if p.is_file()), None)
    if found is None:
        if explicit:
            where = f" in {_directories(searched)}" if searched else ""
            raise ConfigurationError(f"{key} names {name}, which does not exist{where}")
        return _SslResource(None, None, name, key, searched)
    resource = Configuration(load_defaults=False)
    resource.add_resource(found)  # a malformed file: ConfigurationError with its line
    return _SslResource(resource, str(found), name, key, searched)


def read_key_store_files(
    conf: Configuration, mode: str, *, need_key_store: bool = True
) -> KeyStoreFiles:
    """The ``ssl.<mode>.*`` keys of ``mode`` "server" or "client", checked: the named files
    exist; only PEM stores are supported.

    Each key is read as a site file's would be: a value set over the site files (``-D``)
    first, then ssl-<mode>.xml, then the rest of the configuration."""
    ssl_xml = _ssl_resource(conf, mode)

    def lookup(template: str) -> tuple[str | None, str]:
        """The value of the key, and where it came from (for a message)."""
        key = template.format(mode=mode)
        if ssl_xml.conf is not None and not conf.is_set_over_resources(key):
            value = ssl_xml.conf.get_trimmed(key)
            if value is not None:
                return value, f"in {ssl_xml.path}"
        return conf.get_trimmed(key), conf.describe_source(key) or "unset"

    def existing(template: str, required: bool) -> str | None:
        key = template.format(mode=mode)
        value, where = lookup(template)
        if value is None:
            if required:
                raise ConfigurationError(ssl_xml.unset(key))
            return None
        if not Path(value).is_file():
            raise ConfigurationError(f"{key} names {value}, which does not exist ({where})")
        return value

    for template in (keys.SSL_KEYSTORE_TYPE_TPL, keys.SSL_TRUSTSTORE_TYPE_TPL):
        store_type, where = lookup(template)
        if store_type is not None and store_type.lower() != "pem":
            raise ConfigurationError(
                f"{template.format(mode=mode)} is '{store_type}' ({where}): only PEM files "
                "are supported"
            )
    trust_store = existing(keys.SSL_TRUSTSTORE_LOCATION_TPL, True)
    cert_chain = existing(keys.SSL_KEYSTORE_LOCATION_TPL, need_key_store)
    key_file = existing(keys.SSL_KEYSTORE_KEYFILE_TPL, False)
    password = (
        lookup(keys.SSL_KEYSTORE_KEYPASSWORD_TPL)[0] or lookup(keys.SSL_KEYSTORE_PASSWORD_TPL)[0]
    )
    return KeyStoreFiles(mode, ssl_xml.path, cert_chain, key_file, password, trust_store)  # type: ignore[arg-type]


def _load(files: KeyStoreFiles, context: ssl.SSLContext) -> ssl.SSLContext:
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_verify_locations(cafile=files.trust_store)
    except (ssl.SSLError, OSError) as e:
        raise ConfigurationError(
            f"Cannot load the trust store {files.trust_store} "
            f"(ssl.{files.mode}.truststore.location): {_reason(e)}"
        ) from None
    if files.cert_chain is not None:
        try:
            context.load_cert_chain(files.cert_chain, files.key_file, files.key_password or None)
        except (ssl.SSLError, OSError) as e:
            key = f" with the key {files.key_file}" if files.key_file else ""
            raise ConfigurationError(
                f"Cannot load the certificate {files.cert_chain}{key} "
                f"(ssl.{files.mode}.keystore.*): {_reason(e)}"
            ) from None
    return context


def _reason(error: BaseException) -> str:
    if isinstance(error, ssl.SSLError) and error.reason:
        return f"{error.reason} (a PEM file with a matching key and the right password?)"
    return getattr(error, "strerror", None) or str(error)


class SSLFactory:
    """Reads the security configuration of ``conf`` once (see the module docstring).

    The switches are validated here; the key and trust stores are read on first use
    (:meth:`server_context`, :meth:`client_context`), so a client that only talks RPC does
    not need ssl-server.xml. Contexts are cached: one per factory.
    """

    def __init__(self, conf: Configuration) -> None:
        self.conf = conf
        self.security = SecurityConf.from_conf(conf)
        # require_client_cert (True/False) -> server context; "client" -> client context.
        # Two threads racing to make one make two equal contexts: harmless.
        self._contexts: dict[object, ssl.SSLContext] = {}

    @property
    def tls_enabled(self) -> bool:
        return self.security.tls_enabled

    @property
    def rpc_tls(self) -> bool:
        return self.security.certificate_auth

    @property
    def http_policy(self) -> HttpPolicy:
        return self.security.http_policy

    # ---- contexts -------------------------------------------------------------------------------
    def server_context(self, require_client_cert: bool = True) -> ssl.SSLContext:
        """A server context with this node's certificate; the client's certificate is
        required (RPC), or only verified when presented (HTTPS)."""
        context = self._contexts.get(require_client_cert)
        if context is None:
            files = read_key_store_files(self.conf, "server")
            context = _load(files, ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
            context.verify_mode = ssl.CERT_REQUIRED if require_client_cert else ssl.CERT_OPTIONAL
            # No TLS 1.3 session tickets: no client of ours resumes a session, and each
            # ticket would cost the server an encryption and the client a record to
            # decrypt with its first reply, after every handshake.
            context.num_tickets = 0
            self._contexts[require_client_cert] = context
        return context

    def client_context(self) -> ssl.SSLContext:
        """A client context: verifies the server's chain and host name, presents this
        node's client certificate (required: every secured RPC server and every transfer
        page asks for it)."""
        context = self._contexts.get("client")
        if context is None:
            files = read_key_store_files(self.conf, "client")
            context = _load(files, ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT))
            context.check_hostname = True
            context.verify_mode = ssl.CERT_REQUIRED
            self._contexts["client"] = context
        return context

    def client_certificate(self) -> dict[str, Any]:
        """The first certificate of ``ssl.client.keystore.location``, decoded as
        ``SSLSocket.getpeercert()`` returns a peer's (what a server sees of this client)."""
        files = read_key_store_files(self.conf, "client")
        try:
            # CPython's decoder of a PEM certificate file (what its own tests use): the
            # same dict a verified peer's certificate gives, with no parser of our own
            return ssl._ssl._test_decode_cert(files.cert_chain)  # type: ignore[attr-defined]
        except (ssl.SSLError, OSError) as e:
            raise ConfigurationError(
                f"Cannot read the certificate {files.cert_chain} "
                f"(ssl.client.keystore.location): {_reason(e)}"
            ) from None

    # ---- what servers and clients take ----------------------------------------------------------
    def rpc_server_socket_factory(
        self, on_handshake_failure: Callable[[str], None] | None = None
    ) -> TlsServerSocketFactory | None:
        """The RPC server's socket factory; None (plain TCP) unless certificate auth."""
        if not self.rpc_tls:
            return None
        return TlsServerSocketFactory(
            self.server_context(True), self.security.handshake_timeout_s, on_handshake_failure
        )

    def rpc_client_socket_factory(self) -> TlsClientSocketFactory | None:
        """The RPC client's socket factory; None (plain TCP) unless certificate auth."""
        if not self.rpc_tls:
            return None
        return TlsClientSocketFactory(self.client_context())

    def https_server_context(self) -> ssl.SSLContext | None:
        """The HTTPS listener's context; None when ``dfs.http.policy`` is HTTP_ONLY."""
        if not self.http_policy.https_enabled:
            return None
        return self.server_context(False)

    def http_client_context(self) -> ssl.SSLContext | None:
        """The context of segment and image downloads; None when no channel uses TLS (then
        an https:// URL is verified against the system's CAs only)."""
        return self.client_context() if self.tls_enabled else None

    def url_opener(self) -> Callable[[str, float], Any]:
        """``open_url(url, timeout_s)`` with this factory's client context."""
        from hadoop_qjm.common.http_transfer import open_url

        context = self.http_client_context()
        if context is None:
            return open_url
        return functools.partial(open_url, ssl_context=context)

    def downloader(self) -> Callable[..., int]:
        """``download_to_file(url, path, timeout_s)`` with this factory's client context."""
        from hadoop_qjm.common.http_transfer import download_to_file

        context = self.http_client_context()
        if context is None:
            return download_to_file
        return functools.partial(download_to_file, ssl_context=context)

    def transfer_authorizer(self, allowed: frozenset[str] | None) -> ServiceAuthorizer | None:
        """Who may fetch segments or images over HTTPS: None (open, as without security)
        when HTTPS is off; else ``allowed`` (None: any verified certificate)."""
        if not self.http_policy.https_enabled:
            return None
        return ServiceAuthorizer(allowed if allowed is not None else frozenset({"*"}))

    def admin_authorizer(self) -> ServiceAuthorizer | None:
        """Who may see the administrators' pages (``/conf``, ``/stacks``, ``/logs``,
        ``/logLevel`` writes): None (everyone, as without security) when HTTPS is off; else
        the identities of ``dfs.cluster.administrators`` (unset: nobody)."""
        if not self.http_policy.https_enabled:
            return None
        key = keys.DFS_CLUSTER_ADMINISTRATORS_KEY
        admins, had_groups = parse_admins(self.conf.get(key), key)
        if had_groups:
            LOG.warning("%s: groups are ignored; certificates name identities only", key)
        return ServiceAuthorizer(admins)

    def allowed_principals(self, key: str) -> frozenset[str] | None:
        """The identities of the list ``key`` (None when unset or empty)."""
        return parse_principals(self.conf.get(key), key)
