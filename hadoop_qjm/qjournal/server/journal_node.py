"""JournalNode: the daemon that hosts Journals (``hdfs-py journalnode``).

One process serves any number of journal ids, each in ``<edits dir>/<jid>/``
(``dfs.journalnode.edits.dir``, or ``dfs.journalnode.edits.dir.<nsId>`` for a
nameservice). It runs the Thrift RPC server (QJournalProtocol and
InterQJournalProtocol), the HTTP and/or HTTPS server (``/getJournal``, ``/metrics``,
``/jmx``, ``/``; ``dfs.http.policy``) and, per journal, the JournalNodeSyncer.

Secured (docs/security.md), every channel is mutual TLS made by one
:class:`~hadoop_qjm.common.security.SSLFactory`, and only the identities of
``dfs.journalnode.allowed.principals`` may change a journal or download its edits; a
refusal is logged and counted (``journalnode_rpc_authorization_failures_total``, …).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from pathlib import Path

from hadoop_qjm import __version__
from hadoop_qjm.common.command_line import print_daemon_started
from hadoop_qjm.common.domain_name_resolver import DomainNameResolver, new_domain_name_resolver
from hadoop_qjm.common.exceptions import (
    AuthorizationException,
    ConfigurationError,
    IOException,
    UsageError,
)
from hadoop_qjm.common.security import ServiceAuthorizer, SSLFactory
from hadoop_qjm.common.security.caller_identity import caller_identity_from_conf
from hadoop_qjm.common.security.service_authorization import service_authorization_from_conf
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.ipc import call_context
from hadoop_qjm.ipc.rpc_metrics import RpcCollector
from hadoop_qjm.qjournal.protocol import rules
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.qjournal.server.journal_dirs import check_journal_dir, create_journal_dir
from hadoop_qjm.qjournal.server.journal_metrics import JournalNodeMetrics
from hadoop_qjm.qjournal.server.journal_node_settings import JournalNodeSettings
from hadoop_qjm.qjournal.server.journal_scrubber import (
    JournalNodeScrubber,
    ScrubMetrics,
    ScrubSettings,
)

__all__ = ["JournalNode", "run"]

#: The RPCs of InterQJournalProtocol (security.interqjournal.service.protocol.acl).
INTER_QJOURNAL_RPCS = frozenset({"getEditLogManifestFromJournal", "getStorageInfo"})

LOG = logging.getLogger(__name__)


class JournalNode:
    """The daemon's state: configuration, journals, servers, syncers.

    ``fault_injector`` and ``fetcher`` are passed to every Journal (tests only);
    ``socket_factory`` replaces the RPC server's (default: the SSLFactory's, plain TCP
    unless ``hadoop.security.authentication=certificate``). Every other setting is read
    and checked here too, once (:class:`JournalNodeSettings`): a bad value raises
    ConfigurationError naming the key; an unresolvable host, a bad edits dir or a missing
    key or certificate file raises in :meth:`start`, before anything is created or bound.
    """

    def __init__(
        self,
        conf,
        *,
        fault_injector=None,
        fetcher=None,
        socket_factory=None,
        clock=time.time,
        resolver: DomainNameResolver | None = None,
    ) -> None:
        self.conf = conf
        #: Resolves the shared-edits URI's hosts for the syncer (a test passes a table).
        self.resolver = resolver or new_domain_name_resolver(
            conf, keys.DFS_NAMENODE_EDITS_QJOURNALS_RESOLUTION_RESOLVER_IMPL
        )
        self.ssl_factory = SSLFactory(conf)
        self.settings = JournalNodeSettings.from_conf(conf)
        # Who calls (auth_to_local, groups): a malformed rule or mapping refuses to start.
        self.caller_identity = caller_identity_from_conf(conf)
        #: hadoop-policy.xml's QJournalProtocol / InterQJournalProtocol ACLs, when
        #: hadoop.security.authorization=true; a call must pass them and
        #: dfs.journalnode.allowed.principals (with TLS) both.
        self.service_authorization = service_authorization_from_conf(conf)
        #: Who may write and download (None: security off, everyone).
        self.authorizer: ServiceAuthorizer | None = None
        self.metrics = JournalNodeMetrics()
        self.metrics.registry.register(RpcCollector(lambda: self.rpc_server))  # RpcActivity
        self.version = f"{__version__}, r0"
        self.start_time_ms = int(time.time() * 1000)
        self._fault_injector = fault_injector
        self._fetcher = fetcher
        self._socket_factory = socket_factory
        self._clock = clock  # every Journal's (tests move it: the format window, issue 33)
        self._journals: dict[str, Journal] = {}
        self._syncers: dict[str, object] = {}
        # Journals whose syncer was tried with a nameservice id (Hadoop's
        # triedJournalSyncerStartedwithnsId): a later nameservice id tries no more.
        self._syncer_tried_with_ns: set[str] = set()
        self.scrub_settings = ScrubSettings.from_conf(conf)
        self.scrub_metrics = ScrubMetrics(self.metrics.registry)
        self.scrubbers: dict[str, JournalNodeScrubber] = {}
        self._scrub_syncers: list[object] = []  # download-only syncers when sync is off
        self._lock = threading.RLock()
        self._stopped = threading.Event()
        self.rpc_server = None
        self.http_server = None  # the plain HTTP listener (None under HTTPS_ONLY)
        self.https_server = None  # the HTTPS listener (None under HTTP_ONLY)
        self.local_edits_dir = self._edits_dir_for(None)

    # ---- configuration --------------------------------------------------------------------------
    def _edits_dir_for(self, name_service_id: str | None) -> str:
        if name_service_id:
            per_ns = self.conf.get_trimmed(f"dfs.journalnode.edits.dir.{name_service_id}")
            if per_ns:
                return per_ns
        return self.conf.get_trimmed("dfs.journalnode.edits.dir", "/tmp/hadoop/dfs/journalnode/")

    def _all_edits_dirs(self) -> list[str]:
        dirs = [self.local_edits_dir]
        for ns in self.conf.get_trimmed_strings("dfs.nameservices"):
            d = self._edits_dir_for(ns)
            if d not in dirs:
                dirs.append(d)
        return dirs

    def get_log_dir(self, journal_id: str, name_service_id: str | None = None) -> Path:
        """``<edits dir>/<jid>``; the journal id must already be valid."""
        return Path(self._edits_dir_for(name_service_id)) / journal_id

    # ---- lifecycle ------------------------------------------------------------------------------
    def _start_security(self) -> None:
        """Read the allowed identities and every key and certificate (errors here, at start,
        never at the first call)."""
        ssl_factory = self.ssl_factory
        if not ssl_factory.tls_enabled:
            return
        key = keys.DFS_JOURNALNODE_ALLOWED_PRINCIPALS_KEY
        allowed = ssl_factory.allowed_principals(key)
        if allowed is None:
            # The safe reading of an empty list is "nobody": say so now, not per call.
            raise ConfigurationError(
                f"TLS is on but {key} is not set: list the identities (certificate CNs) of "
                "the NameNodes and JournalNodes that may write, or * for every certificate "
                "the trust store accepts"
            )
        self.authorizer = ServiceAuthorizer(allowed)
        ssl_factory.client_context()  # the syncer's and acceptRecovery's downloads
        if self._fetcher is None:
            self._fetcher = ssl_factory.downloader()
        if self._socket_factory is None:
            self._socket_factory = ssl_factory.rpc_server_socket_factory(self._rpc_handshake_failed)
        LOG.info(
            "Security: RPC %s, %s, writers %s",
            "mutual TLS" if ssl_factory.rpc_tls else "plain TCP",
            ssl_factory.http_policy.value,
            ",".join(sorted(allowed)),
        )

    def _rpc_handshake_failed(self, reason: str) -> None:
        self.metrics.rpc_authentication_failures.labels(reason).inc()

    def authorize_rpc(self, rpc: str, identity: str | None, remote_ip: str | None) -> None:
        """The RPC server's authorizer: refuse (log, count, raise) a call ``identity`` may
        not make (see :mod:`~hadoop_qjm.common.security.authorization`)."""
        try:
            if self.authorizer is not None:
                self.authorizer.check_rpc(rpc, identity)
            ugi = call_context.remote_ugi()
            if self.service_authorization is not None and ugi is not None:
                protocol = (
                    "InterQJournalProtocol" if rpc in INTER_QJOURNAL_RPCS else "QJournalProtocol"
                )
                self.service_authorization.authorize(ugi, protocol)
        except AuthorizationException as e:
            LOG.warning("Authorization failed for %s from %s: %s", identity, remote_ip, e)
            self.metrics.rpc_authorization_failures.labels(rpc).inc()
            raise

    def start(self) -> None:
        """Check the addresses, the edits dirs and the security settings, then create the
        edits dirs and start the HTTP(S) and RPC servers.

        Every check comes before the first directory is created or port bound, so a bad
        setting changes nothing on disk.
        """
        from hadoop_qjm.qjournal.server.journal_node_http_server import JournalNodeHttpServer
        from hadoop_qjm.qjournal.server.journal_node_rpc_server import JournalNodeRpcServer

        settings = self.settings
        ssl_factory = self.ssl_factory
        policy = ssl_factory.http_policy
        for address, used in (
            (settings.http, policy.http_enabled),
            (settings.https, policy.https_enabled),
            (settings.rpc, True),
        ):
            if used:
                address.check_resolvable()
        edits_dirs = [check_journal_dir(d) for d in self._all_edits_dirs()]
        self._start_security()
        for path in edits_dirs:
            create_journal_dir(path)
        http, https, rpc = settings.http, settings.https, settings.rpc
        transfer_authorizer = self.authorizer if policy.https_enabled else None
        admin_authorizer = ssl_factory.admin_authorizer()
        binding = ""  # the address being bound, for the error if it is in use
        try:
            if policy.http_enabled:
                binding = str(http)
                self.http_server = JournalNodeHttpServer(
                    self,
                    http.host,
                    http.port,
                    transfer_authorizer=transfer_authorizer,
                    admin_authorizer=admin_authorizer,
                )
                self.http_server.start()
            if policy.https_enabled:
                binding = str(https)
                self.https_server = JournalNodeHttpServer(
                    self,
                    https.host,
                    https.port,
                    ssl_context=ssl_factory.https_server_context(),
                    handshake_timeout_s=ssl_factory.security.handshake_timeout_s,
                    transfer_authorizer=transfer_authorizer,
                    admin_authorizer=admin_authorizer,
                )
                self.https_server.start()
            binding = str(rpc)
            self.rpc_server = JournalNodeRpcServer(
                self,
                rpc.host,
                rpc.port,
                handler_count=settings.handler_count,
                max_frame_size=settings.max_frame_size,
                socket_factory=self._socket_factory,
                authorizer=(
                    self.authorize_rpc
                    if ssl_factory.rpc_tls or self.service_authorization is not None
                    else None
                ),
                caller_identity=self.caller_identity,
            )
            self.rpc_server.start()
        except BaseException as e:
            # Whatever failed (a port in use, a bad ssl-server.xml), what started stops.
            self.stop()
            if isinstance(e, OSError) and (
                getattr(e, "errno", None) == 98 or "in use" in str(e).lower()
            ):
                raise IOException(f"Port in use: {binding}: {e}") from None
            raise
        LOG.info(
            "JournalNode started: RPC %s:%d, %s, edits dir %s",
            *self.rpc_address,
            self.http_server_uri,
            self.local_edits_dir,
        )

    def stop(self) -> None:
        """Stop the servers and syncers and close every journal (releasing its lock)."""
        with self._lock:
            if self._stopped.is_set():
                return
            self._stopped.set()
            servers = [self.rpc_server, self.http_server, self.https_server]
            scrubbers = list(self.scrubbers.values())
            self.scrubbers.clear()
            syncers = list(self._syncers.values()) + self._scrub_syncers
            journals = list(self._journals.values())
            self._syncers.clear()
            self._journals.clear()
        for server in servers:
            if server is not None:
                try:
                    server.stop()
                except Exception:  # noqa: BLE001 - keep stopping the rest
                    LOG.exception("Error stopping %s", server)
        for scrubber in scrubbers:
            scrubber.stop()
        for syncer in syncers:
            syncer.stop()
        for journal in journals:
            try:
                journal.close()
            except Exception:  # noqa: BLE001
                LOG.exception("Error closing %s", journal)
        LOG.info("JournalNode stopped")

    @property
    def is_stopped(self) -> bool:
        return self._stopped.is_set()

    def wait_for_stop(self, timeout: float | None = None) -> bool:
        return self._stopped.wait(timeout)

    # ---- addresses ------------------------------------------------------------------------------
    @property
    def rpc_address(self) -> tuple[str, int]:
        """The configured RPC host and the port actually bound (0 before start)."""
        return self.settings.rpc.host, self.rpc_server.port if self.rpc_server else 0

    @property
    def http_address(self) -> tuple[str, int]:
        """The configured HTTP host and the port actually bound (0 before start, and when
        no plain HTTP listener runs)."""
        return self.settings.http.host, self.http_server.port if self.http_server else 0

    @property
    def https_address(self) -> tuple[str, int]:
        """The configured HTTPS host and the port actually bound (0 when none runs)."""
        return self.settings.https.host, self.https_server.port if self.https_server else 0

    @property
    def http_port(self) -> int:
        """getJournalState's (deprecated) httpPort: the first listener, HTTP before HTTPS
        (Hadoop's getBoundHttpAddress)."""
        return self.http_address[1] or self.https_address[1]

    @property
    def http_server_uri(self) -> str:
        """The ``fromURL`` reported by getJournalState: where segments are served (the HTTPS
        server when there is one)."""
        for server in (self.https_server, self.http_server):
            if server is not None:
                return server.uri
        host, port = self.http_address
        return f"http://{host}:{port}"

    # ---- journals -------------------------------------------------------------------------------
    def open_journal(self, journal_id: str) -> Journal | None:
        """The Journal of ``journal_id`` if it is loaded and the node is running, else None."""
        journal = self._journals.get(journal_id)
        return None if journal is None or self._stopped.is_set() else journal

    def get_or_create_journal(self, journal_id: str, name_service_id: str | None = None) -> Journal:
        """The Journal of ``journal_id``, loading it (and starting its syncer) on first use."""
        rules.validate_journal_id(journal_id)
        with self._lock:
            if self._stopped.is_set():
                raise IOException("JournalNode is shutting down")
            journal = self._journals.get(journal_id)
            if journal is None:
                log_dir = self.get_log_dir(journal_id, name_service_id)
                LOG.info("Initializing journal in directory %s", log_dir)
                journal = Journal(
                    self.conf,
                    log_dir,
                    journal_id,
                    metrics=self.metrics,
                    fault_injector=self._fault_injector,
                    fetcher=self._fetcher,
                    clock=self._clock,
                )
                self._journals[journal_id] = journal
                self._maybe_start_syncer(journal, name_service_id)
                self._maybe_start_scrubber(journal, name_service_id)
            elif name_service_id is not None and journal_id not in self._syncers:
                # Created without one: the nameservice's shared edits dir may name the peers.
                self._maybe_start_syncer(journal, name_service_id)
            return journal

    def get_journal_if_exists(self, journal_id: str) -> Journal | None:
        """A loaded journal, or one whose directory exists on disk; never creates a directory."""
        rules.validate_journal_id(journal_id)
        with self._lock:
            journal = self._journals.get(journal_id)
            if journal is not None:
                return journal
            if not self.get_log_dir(journal_id).is_dir():
                return None
            return self.get_or_create_journal(journal_id)

    def journals(self) -> dict[str, Journal]:
        with self._lock:
            return dict(self._journals)

    def journal_dirs_on_disk(self) -> list[str]:
        found: set[str] = set()
        for directory in self._all_edits_dirs():
            try:
                for entry in os.scandir(directory):
                    if entry.is_dir() and not entry.name.startswith("."):
                        found.add(entry.name)
            except OSError:
                continue
        return sorted(found)

    def cluster_ids(self) -> list[str]:
        ids = {
            j.storage.storage_info.cluster_id
            for j in self.journals().values()
            if j.storage.storage_info is not None
        }
        return sorted(ids)

    def storage_infos(self) -> list[str]:
        infos = []
        for j in self.journals().values():
            si = j.storage.storage_info
            if si is not None:
                infos.append(
                    f"{{LayoutVersion={si.layout_version}, ClusterId={si.cluster_id}, "
                    f"NamespaceId={si.namespace_id}, CreationTime={si.ctime}}}"
                )
        return infos

    def syncer_status(self, journal_id: str) -> dict[str, object]:
        """The JournalNodeSyncer of ``journal_id`` as the status page shows it."""
        if not self.settings.enable_sync:
            return {"State": "disabled (dfs.journalnode.enable.sync is false)"}
        syncer = self._syncers.get(journal_id)
        if syncer is None:
            return {"State": "not running (no shared edits dir, or no other JournalNode)"}
        return syncer.status()

    def journal_syncer_started(self, journal_id: str) -> bool:
        """Whether ``journal_id``'s JournalNodeSyncer runs (Hadoop's getJournalSyncerStatus)."""
        return journal_id in self._syncers

    def tried_journal_syncer_with_ns_id(self, journal_id: str) -> bool:
        """Whether its syncer was tried with a nameservice id (then never again)."""
        return journal_id in self._syncer_tried_with_ns

    def _maybe_start_syncer(self, journal: Journal, name_service_id: str | None) -> None:
        jid = journal.journal_id
        if not self.settings.enable_sync or self.rpc_server is None or jid in self._syncers:
            return
        if name_service_id is not None:
            if jid in self._syncer_tried_with_ns:
                return
            self._syncer_tried_with_ns.add(jid)
        from hadoop_qjm.qjournal.server.journal_node_syncer import JournalNodeSyncer

        syncer = JournalNodeSyncer.create(self, journal, name_service_id)
        if syncer is not None:
            self._syncers[jid] = syncer
            syncer.start()
            scrubber = self.scrubbers.get(jid)
            if scrubber is not None and scrubber.syncer is None:
                scrubber.syncer = syncer  # repairs through the syncer that started late

    def _maybe_start_scrubber(self, journal: Journal, name_service_id: str | None) -> None:
        """Start the journal's scrubber (issue 27); it repairs through the journal's syncer,
        or a download-only one when syncing is off."""
        if not self.scrub_settings.enabled or self.rpc_server is None:
            return
        syncer = self._syncers.get(journal.journal_id)
        if syncer is None and not self.settings.enable_sync:  # else its reason is logged
            from hadoop_qjm.qjournal.server.journal_node_syncer import JournalNodeSyncer

            syncer = JournalNodeSyncer.create(self, journal, name_service_id)
            if syncer is not None:
                self._scrub_syncers.append(syncer)
        scrubber = JournalNodeScrubber(
            journal,
            self.scrub_settings,
            self.scrub_metrics,
            syncer,
            max_op_size=self.conf.get_int(
                keys.DFS_NAMENODE_MAX_OP_SIZE_KEY, keys.DFS_NAMENODE_MAX_OP_SIZE_DEFAULT
            ),
        )
        self.scrubbers[journal.journal_id] = scrubber
        scrubber.start()

    def __str__(self) -> str:
        return f"JournalNode(rpc={self.rpc_address}, {self.http_server_uri})"


def run(argv: list[str], conf) -> int:
    """``hdfs-py journalnode``: run a JournalNode in the foreground until SIGTERM/SIGINT."""
    from hadoop_qjm.common.command_line import CommandParser
    from hadoop_qjm.common.daemon_logging import configure_logging, daemon_log_file

    parser = CommandParser(
        prog="hdfs-py journalnode",
        description=(
            "Run a JournalNode in the foreground. Reads dfs.journalnode.edits.dir, "
            "dfs.journalnode.rpc-address (0.0.0.0:8485), dfs.journalnode.http-address "
            "(0.0.0.0:8480), dfs.journalnode.handler.count (5), dfs.journalnode.enable.sync "
            "(true) and dfs.journalnode.sync.interval (120000 ms) from the configuration; "
            "secured with hadoop.security.authentication=certificate, dfs.http.policy, "
            "dfs.journalnode.https-address (0.0.0.0:8481), ssl-server.xml, ssl-client.xml and "
            "dfs.journalnode.allowed.principals (docs/security.md). "
            "Logs to stderr, and to $HADOOP_LOG_DIR when set. Stops cleanly on SIGTERM. "
            "With -bootstrap, instead: format this JournalNode's journal from its peers in "
            "dfs.namenode.shared.edits.dir and fetch their finalized segments, then exit "
            "(docs/journalnode.md, 'Replacing a JournalNode')."
        ),
    )
    parser.add_argument(
        "-bootstrap",
        action="store_true",
        help="format the journal from its peers, fetch their finalized segments, exit",
    )
    parser.add_argument(
        "-nonInteractive",
        action="store_true",
        help="with -bootstrap: do not ask before formatting",
    )
    args = parser.parse_args(argv)
    if args.nonInteractive and not args.bootstrap:
        raise UsageError("hdfs-py journalnode: -nonInteractive goes with -bootstrap")
    if args.bootstrap:
        from hadoop_qjm.qjournal.server.journal_node_bootstrap import bootstrap

        configure_logging(default_level="WARNING")
        return bootstrap(conf, JournalNode, non_interactive=args.nonInteractive)
    configure_logging(log_file=daemon_log_file("journalnode"), default_level="INFO")
    node = JournalNode(conf)
    stop = threading.Event()

    def on_signal(signum, _frame) -> None:
        LOG.info("Received signal %d, shutting down", signum)
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    node.start()
    print_daemon_started("JournalNode", node)
    try:
        while not stop.wait(1.0):
            pass
    finally:
        node.stop()
    return 0
