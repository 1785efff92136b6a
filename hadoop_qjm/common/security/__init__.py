"""Security: mutual TLS on every RPC and HTTP channel, and who may write (docs/security.md).

* :mod:`~hadoop_qjm.common.security.ssl_factory` — :class:`SSLFactory`: the configuration,
  read once, and every TLS socket factory and context made from it;
* :mod:`~hadoop_qjm.common.security.tls_sockets` — the RPC servers' and clients' TLS
  socket factories;
* :mod:`~hadoop_qjm.common.security.authorization` — identities and the JournalNode's
  read/write split (pure);
* :mod:`~hadoop_qjm.common.security.certs` — a test PKI (``hdfs-py security
  -generateCerts``), imported on demand: it needs the ``cryptography`` package.
"""

from __future__ import annotations

from hadoop_qjm.common.security.authorization import (
    ANY_PRINCIPAL,
    READ_ONLY_RPCS,
    ServiceAuthorizer,
    identity_from_peer_cert,
    parse_principals,
)
from hadoop_qjm.common.security.ssl_factory import HttpPolicy, SecurityConf, SSLFactory
from hadoop_qjm.common.security.tls_sockets import (
    TlsClientSocketFactory,
    TlsServerSocketFactory,
    handshake_failure_reason,
    peer_identity,
)

__all__ = [
    "ANY_PRINCIPAL",
    "READ_ONLY_RPCS",
    "HttpPolicy",
    "SSLFactory",
    "SecurityConf",
    "ServiceAuthorizer",
    "TlsClientSocketFactory",
    "TlsServerSocketFactory",
    "handshake_failure_reason",
    "identity_from_peer_cert",
    "parse_principals",
    "peer_identity",
]
