"""NameNode: the daemon (``hdfs-py namenode``, run by :mod:`hadoop_qjm.cli.name_node`).

The daemon wraps a :class:`~hadoop_qjm.namenode.name_node_core.NameNodeCore` (storage,
recovery, namespace, edit log) with an RPC server on ``dfs.namenode.rpc-address``
(ClientProtocol, NamenodeProtocol, HAServiceProtocol over Thrift) and an HTTP server on
``dfs.namenode.http-address`` (``/metrics``, ``/jmx``, a status page, ``/imagetransfer``).
It prints ``NameNode started pid=… rpc=HOST:PORT http=HOST:PORT`` once it serves, and on
SIGTERM or SIGINT stops serving, ends the open segment, closes the journals and unlocks
its directories. If the edit log cannot make edits durable it terminates at once with
status 1 and the reason logged (FSEditLog's ``terminate``).

``hdfs-py namenode -format | -initializeSharedEdits | -checkpointOffline`` are one-shot
commands (:mod:`hadoop_qjm.namenode.name_node_commands`).
"""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from hadoop_qjm import __version__
from hadoop_qjm.common.exceptions import (
    ExitException,
    IllegalArgumentException,
    IOException,
)
from hadoop_qjm.common.security import SSLFactory
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode import layout_upgrade
from hadoop_qjm.namenode.fs_edit_log import TerminateCallback, terminate_process
from hadoop_qjm.namenode.fs_edit_log_async import AsyncLoggingEditLog, EditLogSyncer
from hadoop_qjm.namenode.fs_edit_log_loader import EditLogApplyException
from hadoop_qjm.namenode.fs_namesystem_audit_logger import AsyncAuditLog
from hadoop_qjm.namenode.ha.edit_log_tailer import EditLogTailer
from hadoop_qjm.namenode.ha.ha_state_change import enforce_ha_state_change
from hadoop_qjm.namenode.ha.ha_util import (
    get_nameservice_id,
    is_automatic_failover_enabled,
    is_ha_enabled,
    namenode_count_warning,
)
from hadoop_qjm.namenode.ha.observer_state import (
    check_role_health,
    operation_refusal,
    transition_refusal,
)
from hadoop_qjm.namenode.ha.standby_checkpointer import StandbyCheckpointer
from hadoop_qjm.namenode.ha.standby_services import StandbyServices
from hadoop_qjm.namenode.name_node_callers import NameNodeCallers
from hadoop_qjm.namenode.name_node_core import JournalFactory, NameNodeCore
from hadoop_qjm.namenode.name_node_metrics import NameNodeMetrics
from hadoop_qjm.namenode.name_node_resource_checker import NameNodeResourceChecker
from hadoop_qjm.namenode.name_node_settings import NameNodeSettings, rpc_bind_address
from hadoop_qjm.namenode.nn_storage import NameNodeDirs
from hadoop_qjm.namenode.protocol.exceptions import (
    HealthCheckFailedException,
    ObserverRetryOnActiveException,
    ServiceFailedException,
    StandbyException,
)
from hadoop_qjm.namenode.protocol.messages import (
    CheckpointSignature,
    HARequestSource,
    HAServiceState,
    HAServiceStatus,
)
from hadoop_qjm.namenode.protocol.rpc import remote_ip

__all__ = ["NameNode", "rpc_bind_address"]

LOG = logging.getLogger(__name__)


#: How long stop() waits for the edit log's syncer threads to answer what is pending (a
#: sync waits at most the quorum's write timeout); past it the log is closed under them.
SYNCER_STOP_TIMEOUT_S = 30.0


class NameNode:
    """The daemon's state: core, servers, metrics (see the module docstring).

    ``terminate`` replaces the process exit when the journals fail (tests);
    ``journal_factory`` builds non-file journals (default: a QuorumJournalManager whose
    channel metrics go to this NameNode's registry); ``socket_factory`` and
    ``http_socket_factory`` make the listening sockets. Security (docs/security.md) comes
    from :attr:`ssl_factory`: mutual TLS on RPC, and ``dfs.http.policy``'s HTTP and/or HTTPS
    listener (``http_server``, ``https_server``).
    """

    def __init__(
        self,
        conf: Configuration,
        *,
        terminate: TerminateCallback = terminate_process,
        journal_factory: JournalFactory | None = None,
        socket_factory: Any = None,
        http_socket_factory: Callable[[str, int], socket.socket] | None = None,
        fs_owner: str | None = None,
        caller: Callable[[], Any] | None = None,
        upgrade: bool = False,
    ) -> None:
        self.conf = conf
        #: ``namenode -upgrade``: upgrade the layout at start, then be active even with HA.
        self.upgrade = upgrade
        self.version = f"{__version__}, r0"
        self.start_time_ms = int(time.time() * 1000)
        self.metrics = NameNodeMetrics(self)
        self.core: NameNodeCore | None = None
        self.rpc_server: Any = None
        self._edit_log_syncer: EditLogSyncer | None = None
        self.http_server: Any = None
        self.https_server: Any = None
        self.ssl_factory = SSLFactory(conf)
        self.state = HAServiceState.INITIALIZING
        #: Wall-clock ms of the last HA state transition; 0 before any, the start in standby
        #: included (NameNode.getLastHATransitionTime, /jmx's LastHATransitionTime).
        self.last_ha_transition_time_ms = 0
        self._terminate = terminate
        self._journal_factory = journal_factory or self._default_journal_factory
        self._socket_factory = socket_factory
        self._http_socket_factory = http_socket_factory
        self._fs_owner = fs_owner
        #: Who calls, and the superuser check of the admin calls. Refuses a bad auth_to_local
        #: or group mapping here. Its superuser is the NameNode's own user (``fs_owner``,
        #: default the OS user it runs as: Hadoop's fsOwner), as the namesystem's.
        self.callers = NameNodeCallers(conf, fs_owner)
        #: Who calls the namesystem: the RPC call's user (``callers.caller``) unless given.
        self._caller = caller or self.callers.caller
        self._lock = threading.Lock()
        self._stopped = False
        #: dfs.namenode.audit.log.async: the audit lines' writer thread, while serving.
        self._async_audit: AsyncAuditLog | None = None
        self._serving = False
        # HA (HAUtil): a NameNode of a nameservice with two or more NameNodes starts in
        # standby; haadmin (or a test) makes it active.
        self.nameservice = get_nameservice_id(conf)
        self.settings = NameNodeSettings.from_conf(conf, self.nameservice)  # refuses a bad key
        self.list_limit = self.settings.list_limit
        self.ha_enabled = is_ha_enabled(conf, self.nameservice)
        self.nnid = conf.get_trimmed(keys.DFS_HA_NAMENODE_ID_KEY) if self.ha_enabled else None
        if (many := namenode_count_warning(conf, self.nameservice)) is not None:
            LOG.warning(many)
        self._ha_lock = threading.RLock()
        self.resource_checker: NameNodeResourceChecker | None = None
        self.standby_services = StandbyServices(
            conf,
            self.settings,
            nameservice=self.nameservice,
            nnid=self.nnid,
            ssl_factory=self.ssl_factory,
            running_core=self._running,
            terminate=lambda status, message: self._terminate(status, message),
        )

    def _on_terminate(self, status: int, message: str) -> None:
        """The edit log's terminate: while starting, a plain error (the command line prints
        one line); once serving, ``terminate`` (by default: log and exit the process)."""
        if not self._serving:
            raise ExitException(status, message)
        self._terminate(status, message)

    def _default_journal_factory(self, conf: Configuration, uri: str, ns_info: NamespaceInfo):
        """A QuorumJournalManager whose channels report to this NameNode's /metrics."""
        from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager

        scheme = uri.split(":", 1)[0]
        if scheme != "qjournal":
            raise IllegalArgumentException(f"No class configured for {scheme}")
        # Its calls name the nameservice (Hadoop's FSEditLog.createJournal): a JournalNode
        # configured per nameservice finds its edits dir and its syncer's peers by it.
        return QuorumJournalManager(
            conf,
            uri,
            ns_info,
            name_service_id=self.nameservice,
            metrics_registry=self.metrics.registry,
        )

    # ---- lifecycle -------------------------------------------------------------------------------
    def start(self) -> None:
        """Bind both ports, load the namespace and become the writer, then serve."""
        from hadoop_qjm.namenode.name_node_http_server import NameNodeHttpServer
        from hadoop_qjm.namenode.name_node_rpc_server import NameNodeRpcServer

        rpc_host, rpc_port = rpc_bind_address(self.conf)
        http_host, http_port = self.conf.get_socket_address(
            keys.DFS_NAMENODE_HTTP_ADDRESS_KEY,
            keys.DFS_NAMENODE_HTTP_ADDRESS_DEFAULT,
            keys.DFS_NAMENODE_HTTP_PORT_DEFAULT,
            bind_host_key=keys.DFS_NAMENODE_HTTP_BIND_HOST_KEY,
        )
        if self.conf.get_bool(
            keys.DFS_NAMENODE_AUDIT_LOG_ASYNC_KEY, keys.DFS_NAMENODE_AUDIT_LOG_ASYNC_DEFAULT
        ):
            self._async_audit = AsyncAuditLog()
            self._async_audit.start()
        try:
            # Ports first: a port in use fails before the storage is touched.
            self.rpc_server = NameNodeRpcServer(
                self,
                rpc_host,
                rpc_port,
                handler_count=self.settings.handler_count,
                max_frame_size=self.settings.max_frame_size,
                socket_factory=self._socket_factory or self.ssl_factory.rpc_server_socket_factory(),
                handler_queue_size=self.settings.handler_queue_size,
            )
            self._make_http_servers(NameNodeHttpServer, http_host, http_port)
            self.core = NameNodeCore(
                self.conf,
                terminate=self._on_terminate,
                journal_factory=self._journal_factory,
                fs_owner=self._fs_owner,
                ha_enabled=self.ha_enabled,
                caller=self._caller,
                upgrade=self.upgrade,
            )
            self.resource_checker = NameNodeResourceChecker(
                self.conf, NameNodeDirs.from_conf(self.conf)
            )
            if self.ha_enabled and self.settings.start_as_observer and not self.upgrade:
                # namenode -observer, or dfs.namenode.observer.enabled (HDFS-17167)
                self.state = HAServiceState.OBSERVER
                self.standby_services.start(checkpoints=False)
            elif self.ha_enabled and not self.upgrade:
                self.state = HAServiceState.STANDBY
                self._start_standby_threads()
            else:  # with -upgrade the NameNode is active at once, as Hadoop's
                self._wrap_edit_log()
                self.state = HAServiceState.ACTIVE
            for http_server in (self.http_server, self.https_server):
                if http_server is not None:
                    http_server.start()
            self.rpc_server.start()
            self._serving = True
        except BaseException:
            self.stop()
            raise
        LOG.info("NameNode RPC up at %s:%d, HTTP at %s:%d", *self.rpc_address, *self.http_address)
        if self.ha_enabled and not self.upgrade:
            LOG.info(
                "NameNode %s of nameservice %s started in %s: no NameNode becomes active "
                "by itself; run 'hdfs-py haadmin -transitionToActive <nnid>', or start the zkfc "
                "failover controllers if automatic failover is enabled",
                self.nnid,
                self.nameservice,
                self.state,
            )
            if self.core.shared_edits_error is not None:
                LOG.warning(
                    "NameNode %s cannot read its shared edits (dfs.namenode.shared.edits.dir) "
                    "and keeps trying: %s",
                    self.nnid,
                    self.core.shared_edits_error,
                )

    def _wrap_edit_log(self) -> None:
        if self.conf.get_bool(
            keys.DFS_NAMENODE_EDITS_ASYNC_LOGGING_KEY,
            keys.DFS_NAMENODE_EDITS_ASYNC_LOGGING_DEFAULT,
        ):
            if self._edit_log_syncer is None:
                # one syncer per batch that may be in flight (pipelined syncs)
                self._edit_log_syncer = EditLogSyncer(self.core.edit_log.pipeline_depth)
            self.core.namesystem.edit_log = AsyncLoggingEditLog(  # type: ignore[union-attr]
                self.core.edit_log, self._edit_log_syncer
            )

    def _make_http_servers(self, make_server: Any, http_host: str, http_port: int) -> None:
        """The listeners of ``dfs.http.policy``: HTTP on ``dfs.namenode.http-address``, HTTPS
        on ``dfs.namenode.https-address``; with HTTPS on, ``/imagetransfer`` needs a verified
        client certificate and is never served over plain HTTP (docs/security.md)."""
        ssl_factory = self.ssl_factory
        authorizer = ssl_factory.transfer_authorizer(None)
        admins = ssl_factory.admin_authorizer()
        if ssl_factory.http_policy.http_enabled:
            self.http_server = make_server(
                self,
                http_host,
                http_port,
                self._http_socket_factory,
                transfer_authorizer=authorizer,
                admin_authorizer=admins,
            )
        if ssl_factory.http_policy.https_enabled:
            self.https_server = make_server(
                self,
                *self.https_address,
                self._http_socket_factory,
                ssl_context=ssl_factory.https_server_context(),
                handshake_timeout_s=ssl_factory.security.handshake_timeout_s,
                transfer_authorizer=authorizer,
                admin_authorizer=admins,
            )

    def stop(self) -> None:
        """Stop serving, end the open segment, close the journals, unlock (idempotent)."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
        self._stop_standby_threads()
        for server in (self.rpc_server, self.http_server, self.https_server):
            if server is not None:
                try:
                    server.stop()
                except Exception:  # noqa: BLE001 - keep stopping the rest
                    LOG.exception("Error stopping %s", server)
        if self._edit_log_syncer is not None:
            # After the RPC server (no new postponed calls), before the log closes.
            self._edit_log_syncer.stop(SYNCER_STOP_TIMEOUT_S)
        core, self.core = self.core, None
        self.state = HAServiceState.INITIALIZING
        if core is not None:
            core.close()
        if self._async_audit is not None:
            self._async_audit.stop()  # after the last call: every queued line written
        LOG.info("NameNode stopped")

    @property
    def is_stopped(self) -> bool:
        return self._stopped

    def __enter__(self) -> NameNode:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    # ---- addresses -------------------------------------------------------------------------------
    @property
    def rpc_address(self) -> tuple[str, int]:
        """The configured RPC host and the port actually bound (0 before start)."""
        return rpc_bind_address(self.conf)[0], self.rpc_server.port if self.rpc_server else 0

    @property
    def http_address(self) -> tuple[str, int]:
        """The configured HTTP host and the port actually bound (0 before start)."""
        host = self.conf.get_socket_address(
            keys.DFS_NAMENODE_HTTP_ADDRESS_KEY,
            keys.DFS_NAMENODE_HTTP_ADDRESS_DEFAULT,
            keys.DFS_NAMENODE_HTTP_PORT_DEFAULT,
            bind_host_key=keys.DFS_NAMENODE_HTTP_BIND_HOST_KEY,
        )[0]
        return host, self.http_server.port if self.http_server else 0

    @property
    def https_address(self) -> tuple[str, int]:
        """The configured HTTPS host and port; the port actually bound once it serves."""
        host, port = self.conf.get_socket_address(
            keys.DFS_NAMENODE_HTTPS_ADDRESS_KEY,
            keys.DFS_NAMENODE_HTTPS_ADDRESS_DEFAULT,
            keys.DFS_NAMENODE_HTTPS_PORT_DEFAULT,
            bind_host_key=keys.DFS_NAMENODE_HTTPS_BIND_HOST_KEY,
        )
        return host, self.https_server.port if self.https_server else port

    # ---- what the RPC handlers and pages use -----------------------------------------------------
    def _running(self) -> NameNodeCore:
        core = self.core
        if core is None or core.namesystem is None:
            raise IOException("NameNode is not running")
        return core

    @property
    def namesystem(self) -> Any:
        return self._running().namesystem

    @property
    def namespace_info(self) -> NamespaceInfo:
        return self._running().ns_info  # type: ignore[return-value]

    @property
    def most_recent_checkpoint_txid(self) -> int:
        return self._running().fs_image.most_recent_checkpoint_txid  # type: ignore[union-attr]

    @property
    def transaction_id(self) -> int:
        """The last txid written (active) or applied (standby)
        (FSImage.getCorrectLastAppliedOrWrittenTxId)."""
        return self._running().last_applied_txid

    def check_operation(self, category: str) -> None:
        """Refuse a READ, WRITE or JOURNAL operation unless active, or a READ on an observer
        (FSNamesystem.checkOperation; the client's failover proxy then tries another
        NameNode; an observer's write: ObserverRetryOnActiveException)."""
        refusal = operation_refusal(self.state, category) if self.ha_enabled else None
        if refusal is not None:
            retry_on_active, message = refusal
            raise (ObserverRetryOnActiveException if retry_on_active else StandbyException)(message)

    def checked_namesystem(self, category: str) -> Any:
        """The namesystem, for an operation of ``category`` (see check_operation)."""
        self.check_operation(category)
        return self._running().namesystem

    def reconfigure_shared_edits(self, uri: str) -> str:
        """Move the shared edits to ``uri``'s JournalNodes, online (active only)."""
        self.check_operation("JOURNAL")
        return self._running().reconfigure_shared_edits(uri)

    def roll_edit_log(self) -> CheckpointSignature:
        """Finalize the segment and start the next (NamenodeProtocol.rollEditLog)."""
        self.check_operation("JOURNAL")
        core = self._running()
        txid = core.roll_edit_log()
        ns = core.ns_info
        return CheckpointSignature(
            ns.block_pool_id,  # type: ignore[union-attr]
            core.fs_image.most_recent_checkpoint_txid,  # type: ignore[union-attr]
            txid,
            ns.storage_info(),  # type: ignore[union-attr]
        )

    def save_namespace(self, time_window_s: int = 0, tx_gap: int = 0) -> bool:
        """Save an image now; with a ``time_window_s`` or ``tx_gap``, only if the newest
        image is older than the window *or* more than ``tx_gap`` txns behind
        (FSImage.saveNamespace(timeWindow, txGap)). Whether an image was saved."""
        core = self._running()
        if time_window_s > 0 or tx_gap > 0:
            images = core.storage.inspect_images()  # type: ignore[union-attr]
            if images:
                age_ms = time.time() * 1000 - images[0].path.stat().st_mtime * 1000
                behind = self.transaction_id - images[0].txid
                if age_ms <= time_window_s * 1000 and behind <= tx_gap:
                    return False
        core.save_namespace()
        return True

    def finalize_upgrade(self) -> bool:
        """``dfsadmin -finalizeUpgrade`` (FSNamesystem.finalizeUpgrade): the local previous/,
        and the JournalNodes' first unless a standby does it. Whether there was one."""
        active = not self.ha_enabled or self.state is HAServiceState.ACTIVE
        return layout_upgrade.finalize_upgrade_of(self._running(), active)

    def is_upgrade_finalized(self) -> bool:
        """``dfsadmin -upgrade query`` (ClientProtocol.upgradeStatus)."""
        return layout_upgrade.is_upgrade_finalized(self._running().storage)  # type: ignore[arg-type]

    def rolling_upgrade(self, action: str) -> Any:
        """ClientProtocol.rollingUpgrade: QUERY (a read), PREPARE or FINALIZE (writes);
        a RollingUpgradeInfo (finalize: the finalized one), or None when there is none."""
        from hadoop_qjm.namenode import rolling_upgrade as ru

        return ru.rolling_upgrade_call(self, action)

    # ---- HAServiceProtocol -----------------------------------------------------------------------
    def monitor_health(self) -> None:
        """HealthCheckFailedException, one line, unless this NameNode can do its job
        (NameNode.monitorHealth): it runs; its directories' volumes keep
        ``dfs.namenode.resource.du.reserved`` free (NameNodeResourceChecker); an active's
        edit log is open for write (not dead); a standby's tailer runs and its last round
        could read the shared edits — a standby cut off from a quorum of JournalNodes must
        not be elected by its failover controller."""
        core = self.core
        if core is None or self._stopped:
            raise HealthCheckFailedException("The NameNode is not running")
        if self.resource_checker is not None:
            verdict = self.resource_checker.check()
            if not verdict.available:
                raise HealthCheckFailedException(
                    f"The NameNode has no resources available: {verdict.reason}"
                )
        # The HA state and its edit log or tailer change together under the HA lock; while
        # a transition holds it, they are between the two states and it reports for itself.
        if not self._ha_lock.acquire(blocking=False):
            return
        try:
            check_role_health(self.state, core.edit_log, self.tailer)
        finally:
            self._ha_lock.release()

    def _require_ha(self) -> None:
        if not self.ha_enabled:
            raise ServiceFailedException("HA for namenode is not enabled")

    def check_ha_state_change(self, source: int) -> None:
        """May ``source`` change this NameNode's HA state? (NameNode.checkHaStateChange;
        :func:`~hadoop_qjm.namenode.ha.ha_state_change.enforce_ha_state_change`)."""
        automatic = is_automatic_failover_enabled(self.conf, self.nameservice)
        enforce_ha_state_change(source, automatic, remote_ip() or "a local caller")

    def msync(self) -> int:
        """ClientProtocol.msync: the active's state id (refused unless active)."""
        self.check_operation("WRITE")
        return self.transaction_id

    def transition_to_active(self, source: int = HARequestSource.REQUEST_BY_USER) -> None:
        """Become the writer (see NameNodeCore.start_active_services): the tailer stops, the
        shared journal is fenced and recovered through a new epoch, the standby catches up
        and starts a segment. Idempotent. ``source`` is checked first (check_ha_state_change).
        If the journal cannot be recovered or read (no quorum of JournalNodes), nothing was
        written: the NameNode tails again as a standby and this raises
        ServiceFailedException."""
        self.check_ha_state_change(source)
        self._require_ha()
        with self._ha_lock:
            core = self._running()
            if self.state is HAServiceState.ACTIVE:
                return
            self._check_transition(HAServiceState.ACTIVE)
            LOG.info("Transitioning to active (%s)", self.nnid)
            self._stop_standby_threads()
            try:
                core.start_active_services()
            except IOException as e:
                if isinstance(e, EditLogApplyException):
                    # The catch-up applied part of the log and then could not go on: the
                    # namespace may be half-applied (Hadoop's doImmediateShutdown).
                    LOG.error("Could not become active: %s", e, exc_info=True)
                    self._terminate(1, f"Failed to become active: {e}")
                    raise
                # Recovery or the catch-up read failed (no quorum of JournalNodes): nothing
                # was written; tail again as a standby and let the caller retry later.
                LOG.error("Could not become active: %s", e, exc_info=True)
                try:
                    core.start_standby_services()
                    self._start_standby_threads()
                except Exception:  # noqa: BLE001 - the error below says what went wrong
                    LOG.exception("Could not return to standby")
                raise ServiceFailedException(f"Failed to become active: {e}") from e
            self._wrap_edit_log()
            self.state = HAServiceState.ACTIVE
            self.last_ha_transition_time_ms = int(time.time() * 1000)
            LOG.info("Now active: writing from txid %d", core.last_applied_txid)

    def transition_to_standby(self, source: int = HARequestSource.REQUEST_BY_USER) -> None:
        """Stop writing (ending the segment) and tail the shared journal. Idempotent.
        ``source`` is checked first (check_ha_state_change)."""
        self.check_ha_state_change(source)
        self._require_ha()
        with self._ha_lock:
            core = self._running()
            if self.state is HAServiceState.STANDBY:
                return
            LOG.info("Transitioning to standby (%s)", self.nnid)
            # Writes arriving meanwhile are refused by the standby edit log the transition
            # installs; the state says standby once the standby really runs.
            self._stop_standby_threads()  # an observer's tailer: restarted with a checkpointer
            core.start_standby_services()
            self._start_standby_threads()
            self.state = HAServiceState.STANDBY
            self.last_ha_transition_time_ms = int(time.time() * 1000)

    def transition_to_observer(self, source: int = HARequestSource.REQUEST_BY_USER) -> None:
        """Standby → observer (HDFS-12943): go on tailing, stop checkpointing, serve reads.
        Idempotent; refused (ServiceFailedException, one line) from active, in safe mode,
        or without in-progress tailing (:mod:`~hadoop_qjm.namenode.ha.observer_state`)."""
        self.check_ha_state_change(source)
        self._require_ha()
        with self._ha_lock:
            self._running()
            if self.state is HAServiceState.OBSERVER:
                return
            self._check_transition(HAServiceState.OBSERVER)
            LOG.info("Transitioning to observer (%s)", self.nnid)
            self._stop_standby_threads()
            self.standby_services.start(checkpoints=False)
            self.state = HAServiceState.OBSERVER
            self.last_ha_transition_time_ms = int(time.time() * 1000)

    def _check_transition(self, target: HAServiceState) -> None:
        refusal = transition_refusal(
            self.state, target, in_progress_tailing=self.settings.in_progress_tailing
        )
        if refusal is not None:
            raise ServiceFailedException(refusal)

    def service_status(self) -> HAServiceStatus:
        self._require_ha()
        running = self.core is not None and not self._stopped
        ready = running and self.state in (HAServiceState.ACTIVE, HAServiceState.STANDBY)
        reason = None if ready else "The NameNode is not running"
        if running and not ready:
            reason = f"State is {self.state}"  # an observer goes back to standby first
        return HAServiceStatus(self.state, ready_to_become_active=ready, not_ready_reason=reason)

    # ---- the standby's threads (namenode/ha/standby_services.py) ------------------------------
    @property
    def tailer(self) -> EditLogTailer | None:
        return self.standby_services.tailer

    @property
    def checkpointer(self) -> StandbyCheckpointer | None:
        return self.standby_services.checkpointer

    def _start_standby_threads(self) -> None:
        self.standby_services.start()

    def _stop_standby_threads(self) -> None:
        self.standby_services.stop()

    def __str__(self) -> str:
        return f"NameNode(rpc={self.rpc_address}, http={self.http_address})"
