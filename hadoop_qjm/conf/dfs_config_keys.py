"""Every configuration key the project reads, with Hadoop's names and defaults.

The defaults are those of Hadoop's ``core-default.xml`` / ``hdfs-default.xml``
(HADOOP-QJM-DIGEST.md §6); ``Configuration(load_defaults=True)`` starts from
:data:`DEFAULTS`. Each key's kind, range and meaning are declared in the schema,
``conf/core-default.xml`` / ``conf/hdfs-default.xml`` (:mod:`hadoop_qjm.conf.config_schema`);
tests/unit/test_config_schema.py checks every default here equals the schema's ``<value>``. A key that Hadoop leaves unset has no entry here (its
constant still exists so that code names it one way).
"""

from __future__ import annotations

__all__ = ["DEFAULTS"]  # plus every *_KEY / *_DEFAULT constant below

# ---- core ------------------------------------------------------------------------------------
HADOOP_TMP_DIR_KEY = "hadoop.tmp.dir"
HADOOP_TMP_DIR_DEFAULT = "/tmp/hadoop-${user.name}"
FS_DEFAULT_NAME_KEY = "fs.defaultFS"
FS_DEFAULT_NAME_DEFAULT = "file:///"
IPC_MAXIMUM_DATA_LENGTH_KEY = "ipc.maximum.data.length"
IPC_MAXIMUM_DATA_LENGTH_DEFAULT = 64 * 1024 * 1024
#: Call queue places per handler of the NameNode's RPC server (Hadoop's key and default).
IPC_SERVER_HANDLER_QUEUE_SIZE_KEY = "ipc.server.handler.queue.size"
IPC_SERVER_HANDLER_QUEUE_SIZE_DEFAULT = 100
#: Hadoop's Server holds an observer's call for the client's wait: twice this (HDFS-12943).
IPC_CLIENT_CONNECTION_MAXIDLETIME_KEY = "ipc.client.connection.maxidletime"
IPC_CLIENT_CONNECTION_MAXIDLETIME_DEFAULT = 10000
HADOOP_RPC_PROTECTION_KEY = "hadoop.rpc.protection"
HADOOP_RPC_PROTECTION_DEFAULT = "authentication"
FS_PERMISSIONS_UMASK_KEY = "fs.permissions.umask-mode"
FS_PERMISSIONS_UMASK_DEFAULT = "022"

# ---- security: mutual TLS on RPC and HTTP (docs/security.md) ---------------------------------
#: ``simple`` (plain TCP RPC) or ``certificate`` (mutual TLS on every RPC channel).
HADOOP_SECURITY_AUTHENTICATION_KEY = "hadoop.security.authentication"
HADOOP_SECURITY_AUTHENTICATION_DEFAULT = "simple"
#: Where the ssl.server.* / ssl.client.* keys live; a relative name is looked up in the
#: configuration directory.
HADOOP_SSL_SERVER_CONF_KEY = "hadoop.ssl.server.conf"
HADOOP_SSL_SERVER_CONF_DEFAULT = "ssl-server.xml"
HADOOP_SSL_CLIENT_CONF_KEY = "hadoop.ssl.client.conf"
HADOOP_SSL_CLIENT_CONF_DEFAULT = "ssl-client.xml"
#: How long a server waits for a connection's TLS handshake (in its worker thread).
HADOOP_SSL_HANDSHAKE_TIMEOUT_KEY = "hadoop.ssl.handshake.timeout"
HADOOP_SSL_HANDSHAKE_TIMEOUT_DEFAULT = "10s"
#: Identities (certificate subject CNs, or ``*``) a JournalNode accepts writes from.
DFS_JOURNALNODE_ALLOWED_PRINCIPALS_KEY = "dfs.journalnode.allowed.principals"
#: Who is an administrator of the daemons' web pages (/conf, /stacks, /logs, /logLevel
#: writes) once HTTPS is on: certificate identities (subject CNs), comma-separated, or ``*``.
#: Hadoop's ACL form ``users groups``: the groups part is ignored (certificates have none).
#: Unset: nobody (Hadoop's default, " ").
DFS_CLUSTER_ADMINISTRATORS_KEY = "dfs.cluster.administrators"
#: With HTTPS on, also put /jmx, /metrics and /prom behind the administrators' list.
HADOOP_SECURITY_INSTRUMENTATION_REQUIRES_ADMIN_KEY = (
    "hadoop.security.instrumentation.requires.admin"
)
HADOOP_SECURITY_INSTRUMENTATION_REQUIRES_ADMIN_DEFAULT = False
#: Regular expressions (comma or newline separated, searched in the key) of the keys whose
#: values /conf shows as ``<redacted>`` (Hadoop 3.3's ConfigRedactor and its default list).
HADOOP_SECURITY_SENSITIVE_CONFIG_KEYS_KEY = "hadoop.security.sensitive-config-keys"
HADOOP_SECURITY_SENSITIVE_CONFIG_KEYS_DEFAULT = ",".join(
    (
        "secret$",
        "password$",
        "ssl.keystore.pass$",
        "fs.s3.*[Ss]ecret.?[Kk]ey",
        "fs.s3a.*.server-side-encryption.key",
        "fs.s3a.encryption.algorithm",
        "fs.s3a.encryption.key",
        "fs.azure.account.key.*",
        "credential$",
        "oauth.*secret",
        "oauth.*password",
        "oauth.*token",
        HADOOP_SECURITY_SENSITIVE_CONFIG_KEYS_KEY,
    )
)
# Keys of ssl-server.xml (mode "server") and ssl-client.xml (mode "client"): PEM files.
SSL_KEYSTORE_LOCATION_TPL = "ssl.{mode}.keystore.location"
SSL_KEYSTORE_KEYFILE_TPL = "ssl.{mode}.keystore.keyfile"
SSL_KEYSTORE_PASSWORD_TPL = "ssl.{mode}.keystore.password"
SSL_KEYSTORE_KEYPASSWORD_TPL = "ssl.{mode}.keystore.keypassword"
SSL_KEYSTORE_TYPE_TPL = "ssl.{mode}.keystore.type"
SSL_TRUSTSTORE_LOCATION_TPL = "ssl.{mode}.truststore.location"
SSL_TRUSTSTORE_TYPE_TPL = "ssl.{mode}.truststore.type"

# ---- JournalNode -----------------------------------------------------------------------------
DFS_JOURNALNODE_EDITS_DIR_KEY = "dfs.journalnode.edits.dir"
DFS_JOURNALNODE_EDITS_DIR_DEFAULT = "/tmp/hadoop/dfs/journalnode/"
DFS_JOURNALNODE_EDITS_DIR_PERMISSION_KEY = "dfs.journalnode.edits.dir.perm"
DFS_JOURNALNODE_EDITS_DIR_PERMISSION_DEFAULT = "700"
DFS_JOURNALNODE_RPC_ADDRESS_KEY = "dfs.journalnode.rpc-address"
DFS_JOURNALNODE_RPC_PORT_DEFAULT = 8485
DFS_JOURNALNODE_RPC_ADDRESS_DEFAULT = "0.0.0.0:8485"
DFS_JOURNALNODE_RPC_BIND_HOST_KEY = "dfs.journalnode.rpc-bind-host"
DFS_JOURNALNODE_HTTP_ADDRESS_KEY = "dfs.journalnode.http-address"
DFS_JOURNALNODE_HTTP_PORT_DEFAULT = 8480
DFS_JOURNALNODE_HTTP_ADDRESS_DEFAULT = "0.0.0.0:8480"
DFS_JOURNALNODE_HTTP_BIND_HOST_KEY = "dfs.journalnode.http-bind-host"
DFS_JOURNALNODE_HTTPS_ADDRESS_KEY = "dfs.journalnode.https-address"
DFS_JOURNALNODE_HTTPS_PORT_DEFAULT = 8481
DFS_JOURNALNODE_HTTPS_ADDRESS_DEFAULT = "0.0.0.0:8481"
DFS_JOURNALNODE_HTTPS_BIND_HOST_KEY = "dfs.journalnode.https-bind-host"
DFS_JOURNALNODE_HANDLER_COUNT_KEY = "dfs.journalnode.handler.count"
DFS_JOURNALNODE_HANDLER_COUNT_DEFAULT = 5
DFS_JOURNALNODE_ENABLE_SYNC_KEY = "dfs.journalnode.enable.sync"
DFS_JOURNALNODE_ENABLE_SYNC_DEFAULT = True
DFS_JOURNALNODE_SYNC_INTERVAL_KEY = "dfs.journalnode.sync.interval"
DFS_JOURNALNODE_SYNC_INTERVAL_DEFAULT = 120000
#: HDFS-16690: an unformatted journal formats itself from its peers (off, as in Hadoop).
DFS_JOURNALNODE_ENABLE_SYNC_FORMAT_KEY = "dfs.journalnode.enable.sync.format"
DFS_JOURNALNODE_ENABLE_SYNC_FORMAT_DEFAULT = False

# The scrubber (issue 27; docs/journalnode.md "Bit rot and the scrubber").
DFS_JOURNALNODE_SCRUB_ENABLED_KEY = "dfs.journalnode.scrub.enabled"
DFS_JOURNALNODE_SCRUB_ENABLED_DEFAULT = True
DFS_JOURNALNODE_SCRUB_INTERVAL_KEY = "dfs.journalnode.scrub.interval"
DFS_JOURNALNODE_SCRUB_INTERVAL_DEFAULT = 86400000  # ms: a full pass at most once a day
DFS_JOURNALNODE_SCRUB_BYTES_PER_SECOND_KEY = "dfs.journalnode.scrub.bytes-per-second"
DFS_JOURNALNODE_SCRUB_BYTES_PER_SECOND_DEFAULT = 1048576
DFS_JOURNALNODE_EDIT_CACHE_SIZE_KEY = "dfs.journalnode.edit-cache-size.bytes"
DFS_JOURNALNODE_EDIT_CACHE_SIZE_FRACTION_KEY = "dfs.journalnode.edit-cache-size.fraction"
DFS_JOURNALNODE_EDIT_CACHE_SIZE_FRACTION_DEFAULT = 0.5
DFS_JOURNALNODE_KEYTAB_FILE_KEY = "dfs.journalnode.keytab.file"
DFS_JOURNALNODE_KERBEROS_PRINCIPAL_KEY = "dfs.journalnode.kerberos.principal"

# ---- QJM client --------------------------------------------------------------------------------
DFS_QJOURNAL_QUEUE_SIZE_LIMIT_KEY = "dfs.qjournal.queued-edits.limit.mb"
DFS_QJOURNAL_QUEUE_SIZE_LIMIT_DEFAULT = 10
DFS_QJOURNAL_START_SEGMENT_TIMEOUT_KEY = "dfs.qjournal.start-segment.timeout.ms"
DFS_QJOURNAL_PREPARE_RECOVERY_TIMEOUT_KEY = "dfs.qjournal.prepare-recovery.timeout.ms"
DFS_QJOURNAL_ACCEPT_RECOVERY_TIMEOUT_KEY = "dfs.qjournal.accept-recovery.timeout.ms"
DFS_QJOURNAL_FINALIZE_SEGMENT_TIMEOUT_KEY = "dfs.qjournal.finalize-segment.timeout.ms"
DFS_QJOURNAL_SELECT_INPUT_STREAMS_TIMEOUT_KEY = "dfs.qjournal.select-input-streams.timeout.ms"
DFS_QJOURNAL_GET_JOURNAL_STATE_TIMEOUT_KEY = "dfs.qjournal.get-journal-state.timeout.ms"
DFS_QJOURNAL_NEW_EPOCH_TIMEOUT_KEY = "dfs.qjournal.new-epoch.timeout.ms"
DFS_QJOURNAL_WRITE_TXNS_TIMEOUT_KEY = "dfs.qjournal.write-txns.timeout.ms"
DFS_QJOURNAL_HTTP_OPEN_TIMEOUT_KEY = "dfs.qjournal.http.open.timeout.ms"
DFS_QJOURNAL_HTTP_READ_TIMEOUT_KEY = "dfs.qjournal.http.read.timeout.ms"
DFS_QJOURNAL_PARALLEL_READ_NUM_THREADS_KEY = "dfs.qjournal.parallel-read.num-threads"
DFS_QJOURNAL_PARALLEL_READ_NUM_THREADS_DEFAULT = 5
#: Not Hadoop's (docs/quorum-client.md, "Busy polling"): how long (µs, below 50 ms) a thread
#: waiting for a quorum polls the sockets without blocking each time it starts reading
#: replies, before it blocks; 0 (Hadoop's way) blocks at once.
DFS_QJOURNAL_BUSY_POLL_KEY = "dfs.qjournal.busy-poll.us"
DFS_QJOURNAL_BUSY_POLL_DEFAULT = 0
DFS_QJM_OPERATIONS_TIMEOUT_KEY = "dfs.qjm.operations.timeout"
DFS_QJM_OPERATIONS_TIMEOUT_DEFAULT = "60s"
DFS_HA_TAILEDITS_QJM_RPC_MAX_TXNS_KEY = "dfs.ha.tail-edits.qjm.rpc.max-txns"
DFS_HA_TAILEDITS_QJM_RPC_MAX_TXNS_DEFAULT = 5000
DFS_NAMENODE_EDITS_QJOURNALS_RESOLUTION_ENABLED_KEY = (
    "dfs.namenode.edits.qjournals.resolution-enabled"
)
DFS_NAMENODE_EDITS_QJOURNALS_RESOLUTION_ENABLED_DEFAULT = False
#: Unset in Hadoop (then org.apache.hadoop.net.DNSDomainNameResolver).
DFS_NAMENODE_EDITS_QJOURNALS_RESOLUTION_RESOLVER_IMPL = "dfs.namenode.edits.qjournals.resolver.impl"

# ---- NameNode and HA ---------------------------------------------------------------------------
DFS_NAMENODE_NAME_DIR_KEY = "dfs.namenode.name.dir"
DFS_NAMENODE_NAME_DIR_DEFAULT = "file://${hadoop.tmp.dir}/dfs/name"
DFS_NAMENODE_EDITS_DIR_KEY = "dfs.namenode.edits.dir"
DFS_NAMENODE_EDITS_DIR_DEFAULT = "${dfs.namenode.name.dir}"
DFS_NAMENODE_SHARED_EDITS_DIR_KEY = "dfs.namenode.shared.edits.dir"
DFS_NAMENODE_EDITS_DIR_REQUIRED_KEY = "dfs.namenode.edits.dir.required"
DFS_NAMENODE_EDITS_DIR_MINIMUM_KEY = "dfs.namenode.edits.dir.minimum"
DFS_NAMENODE_EDITS_DIR_MINIMUM_DEFAULT = 1
DFS_NAMENODE_NUM_EXTRA_EDITS_RETAINED_KEY = "dfs.namenode.num.extra.edits.retained"
DFS_NAMENODE_NUM_EXTRA_EDITS_RETAINED_DEFAULT = 1000000
DFS_NAMENODE_MAX_EXTRA_EDITS_SEGMENTS_RETAINED_KEY = (
    "dfs.namenode.max.extra.edits.segments.retained"
)
DFS_NAMENODE_MAX_EXTRA_EDITS_SEGMENTS_RETAINED_DEFAULT = 10000
DFS_NAMENODE_NUM_CHECKPOINTS_RETAINED_KEY = "dfs.namenode.num.checkpoints.retained"
DFS_NAMENODE_NUM_CHECKPOINTS_RETAINED_DEFAULT = 2
DFS_NAMENODE_CHECKPOINT_PERIOD_KEY = "dfs.namenode.checkpoint.period"
DFS_NAMENODE_CHECKPOINT_PERIOD_DEFAULT = "3600s"
DFS_NAMENODE_CHECKPOINT_TXNS_KEY = "dfs.namenode.checkpoint.txns"
DFS_NAMENODE_CHECKPOINT_TXNS_DEFAULT = 1000000
DFS_NAMENODE_MAX_OP_SIZE_KEY = "dfs.namenode.max.op.size"
DFS_NAMENODE_MAX_OP_SIZE_DEFAULT = 50 * 1024 * 1024
DFS_NAMENODE_EDITS_NOEDITLOGCHANNELFLUSH_KEY = "dfs.namenode.edits.noeditlogchannelflush"
DFS_NAMENODE_EDITS_NOEDITLOGCHANNELFLUSH_DEFAULT = False
#: Edit-log syncs that may be unacknowledged at once (1: Hadoop's double buffer, one
#: logSync in flight); chosen with ``bench qjm --pipeline`` (docs/namenode.md).
DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_KEY = "dfs.namenode.edits.sync.pipeline.depth"
DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_DEFAULT = 1
DFS_NAMENODE_SUPPORT_ALLOW_FORMAT_KEY = "dfs.namenode.support.allow.format"
DFS_NAMENODE_SUPPORT_ALLOW_FORMAT_DEFAULT = True
#: Not in Hadoop, for tests only: run the NameNode as software of the project's test-only
#: layout -68, one newer than Hadoop's -67 (docs/ha.md, "Upgrading the layout").
DFS_NAMENODE_TESTING_FUTURE_LAYOUT_KEY = "dfs.namenode.testing.future-layout"
DFS_NAMENODE_TESTING_FUTURE_LAYOUT_DEFAULT = False
#: Hadoop's DFS_NAMENODE_STARTUP_KEY: the startup option, as NameNode.setStartupOption
#: stores it; ``namenode -rollingUpgrade started`` sets ROLLINGUPGRADE(STARTED).
DFS_NAMENODE_STARTUP_KEY = "dfs.namenode.startup"
DFS_NAMENODE_STARTUP_DEFAULT = "REGULAR"
DFS_REFORMAT_DISABLED_KEY = "dfs.reformat.disabled"
DFS_REFORMAT_DISABLED_DEFAULT = False
DFS_REPLICATION_KEY = "dfs.replication"
DFS_REPLICATION_DEFAULT = 3
DFS_BLOCK_SIZE_KEY = "dfs.blocksize"
DFS_BLOCK_SIZE_DEFAULT = 134217728
DFS_PERMISSIONS_SUPERUSERGROUP_KEY = "dfs.permissions.superusergroup"
DFS_PERMISSIONS_SUPERUSERGROUP_DEFAULT = "supergroup"
DFS_PERMISSIONS_ENABLED_KEY = "dfs.permissions.enabled"
DFS_PERMISSIONS_ENABLED_DEFAULT = True
DFS_NAMENODE_AUDIT_LOG_ASYNC_KEY = "dfs.namenode.audit.log.async"
DFS_NAMENODE_AUDIT_LOG_ASYNC_DEFAULT = False
DFS_NAMENODE_MAX_COMPONENT_LENGTH_KEY = "dfs.namenode.fs-limits.max-component-length"
DFS_NAMENODE_MAX_COMPONENT_LENGTH_DEFAULT = 255
DFS_EDIT_LOG_TRANSFER_TIMEOUT_KEY = "dfs.edit.log.transfer.timeout"
DFS_EDIT_LOG_TRANSFER_TIMEOUT_DEFAULT = 30000
DFS_EDIT_LOG_TRANSFER_RATE_KEY = "dfs.edit.log.transfer.bandwidthPerSec"
DFS_EDIT_LOG_TRANSFER_RATE_DEFAULT = 0
DFS_IMAGE_TRANSFER_TIMEOUT_KEY = "dfs.image.transfer.timeout"
DFS_IMAGE_TRANSFER_TIMEOUT_DEFAULT = 60000
DFS_IMAGE_TRANSFER_RATE_KEY = "dfs.image.transfer.bandwidthPerSec"
DFS_IMAGE_TRANSFER_RATE_DEFAULT = 0
DFS_HA_TAILEDITS_PERIOD_KEY = "dfs.ha.tail-edits.period"
DFS_HA_TAILEDITS_PERIOD_DEFAULT = "60s"
DFS_HA_TAILEDITS_PERIOD_BACKOFF_MAX_KEY = "dfs.ha.tail-edits.period.backoff-max"
DFS_HA_TAILEDITS_PERIOD_BACKOFF_MAX_DEFAULT = "0"
DFS_HA_TAILEDITS_ALL_NAMESNODES_RETRY_KEY = "dfs.ha.tail-edits.namenode-retries"
DFS_HA_TAILEDITS_ALL_NAMESNODES_RETRY_DEFAULT = 3
DFS_HA_TAILEDITS_INPROGRESS_KEY = "dfs.ha.tail-edits.in-progress"
DFS_HA_TAILEDITS_INPROGRESS_DEFAULT = False
#: Not in Hadoop (issue 25): how long one getJournaledEdits long poll of an in-progress
#: tailer may wait for new edits; 0 = poll every dfs.ha.tail-edits.period instead.
DFS_HA_TAILEDITS_INPROGRESS_WAIT_KEY = "dfs.ha.tail-edits.in-progress.wait"
DFS_HA_TAILEDITS_INPROGRESS_WAIT_DEFAULT = "1s"
#: Not in Hadoop (issue 25): a JournalNode keeps its open segment's scan state.
DFS_JOURNALNODE_KEPT_SEGMENT_STATE_KEY = "dfs.journalnode.kept-segment-state.enabled"
DFS_JOURNALNODE_KEPT_SEGMENT_STATE_DEFAULT = True
#: Not in Hadoop (issue 33): a JournalNode refuses to format a journal whose open segment
#: was written to within this many ms (or whose writer is still connected).
DFS_JOURNALNODE_FORMAT_LIVE_WRITER_WINDOW_KEY = "dfs.journalnode.format.live-writer.window.ms"
DFS_JOURNALNODE_FORMAT_LIVE_WRITER_WINDOW_DEFAULT = 60000
DFS_HA_TAILEDITS_ROLLEDITS_TIMEOUT_KEY = "dfs.ha.tail-edits.rolledits.timeout"
DFS_HA_TAILEDITS_ROLLEDITS_TIMEOUT_DEFAULT = 60
DFS_HA_TAILEDITS_MAX_TXNS_PER_LOCK_KEY = "dfs.ha.tail-edits.max-txns-per-lock"
DFS_HA_TAILEDITS_MAX_TXNS_PER_LOCK_DEFAULT = 2**63 - 1
DFS_HA_LOGROLL_PERIOD_KEY = "dfs.ha.log-roll.period"
DFS_HA_LOGROLL_PERIOD_DEFAULT = "120s"
DFS_HA_LOGROLL_RPC_TIMEOUT_KEY = "dfs.ha.log-roll.rpc.timeout"
DFS_HA_LOGROLL_RPC_TIMEOUT_DEFAULT = 20000
DFS_HA_STANDBY_CHECKPOINTS_KEY = "dfs.ha.standby.checkpoints"
DFS_HA_STANDBY_CHECKPOINTS_DEFAULT = True
DFS_NAMESERVICES = "dfs.nameservices"
DFS_INTERNAL_NAMESERVICES_KEY = "dfs.internal.nameservices"
DFS_HA_NAMENODES_KEY_PREFIX = "dfs.ha.namenodes"
DFS_NAMESERVICE_ID = "dfs.nameservice.id"
DFS_HA_NAMENODE_ID_KEY = "dfs.ha.namenode.id"
DFS_CLIENT_FAILOVER_PROXY_PROVIDER_KEY_PREFIX = "dfs.client.failover.proxy.provider"
DFS_CLIENT_FAILOVER_MAX_ATTEMPTS_KEY = "dfs.client.failover.max.attempts"
DFS_CLIENT_FAILOVER_MAX_ATTEMPTS_DEFAULT = 15
DFS_CLIENT_FAILOVER_SLEEPTIME_BASE_KEY = "dfs.client.failover.sleep.base.millis"
DFS_CLIENT_FAILOVER_SLEEPTIME_BASE_DEFAULT = 500
DFS_CLIENT_FAILOVER_SLEEPTIME_MAX_KEY = "dfs.client.failover.sleep.max.millis"
DFS_CLIENT_FAILOVER_SLEEPTIME_MAX_DEFAULT = 15000
# ---- Observer NameNodes (HDFS-12943) ----
DFS_NAMENODE_OBSERVER_ENABLED_KEY = "dfs.namenode.observer.enabled"
DFS_NAMENODE_OBSERVER_ENABLED_DEFAULT = False
DFS_NAMENODE_STATE_CONTEXT_ENABLED_KEY = "dfs.namenode.state.context.enabled"
DFS_NAMENODE_STATE_CONTEXT_ENABLED_DEFAULT = False
OBSERVER_READ_PROXY_PROVIDER = "org.apache.hadoop.hdfs.server.namenode.ha.ObserverReadProxyProvider"
DFS_CLIENT_FAILOVER_OBSERVER_AUTO_MSYNC_PERIOD_KEY_PREFIX = (
    "dfs.client.failover.observer.auto-msync-period"
)
DFS_CLIENT_FAILOVER_OBSERVER_AUTO_MSYNC_PERIOD_DEFAULT = "-1"
DFS_CLIENT_FAILOVER_OBSERVER_PROBE_RETRY_PERIOD_KEY = (
    "dfs.client.failover.observer.probe.retry.period"
)
DFS_CLIENT_FAILOVER_OBSERVER_PROBE_RETRY_PERIOD_DEFAULT = "10m"
DFS_HA_FENCE_METHODS_KEY = "dfs.ha.fencing.methods"
DFS_HA_AUTO_FAILOVER_ENABLED_KEY = "dfs.ha.automatic-failover.enabled"
DFS_HA_AUTO_FAILOVER_ENABLED_DEFAULT = False
# ---- automatic failover (Hadoop's CommonConfigurationKeys ha.*, DFSConfigKeys dfs.ha.zkfc.*) ----
HA_ZK_QUORUM_KEY = "ha.zookeeper.quorum"
HA_ZK_SESSION_TIMEOUT_KEY = "ha.zookeeper.session-timeout.ms"
HA_ZK_SESSION_TIMEOUT_DEFAULT = 10000
HA_ZK_PARENT_ZNODE_KEY = "ha.zookeeper.parent-znode"
HA_ZK_PARENT_ZNODE_DEFAULT = "/hadoop-ha"
HA_ZK_ACL_KEY = "ha.zookeeper.acl"
HA_ZK_ACL_DEFAULT = "world:anyone:rwcda"
HA_ZK_AUTH_KEY = "ha.zookeeper.auth"
HA_ZK_OP_RETRIES_KEY = "ha.failover-controller.active-standby-elector.zk.op.retries"
HA_ZK_OP_RETRIES_DEFAULT = 3
HA_HM_CONNECT_RETRY_INTERVAL_KEY = "ha.health-monitor.connect-retry-interval.ms"
HA_HM_CONNECT_RETRY_INTERVAL_DEFAULT = 1000
HA_HM_CHECK_INTERVAL_KEY = "ha.health-monitor.check-interval.ms"
HA_HM_CHECK_INTERVAL_DEFAULT = 1000
HA_HM_SLEEP_AFTER_DISCONNECT_KEY = "ha.health-monitor.sleep-after-disconnect.ms"
HA_HM_SLEEP_AFTER_DISCONNECT_DEFAULT = 1000
HA_HM_RPC_TIMEOUT_KEY = "ha.health-monitor.rpc-timeout.ms"
HA_HM_RPC_TIMEOUT_DEFAULT = 45000
HA_FC_CLI_CHECK_TIMEOUT_KEY = "ha.failover-controller.cli-check.rpc-timeout.ms"
HA_FC_CLI_CHECK_TIMEOUT_DEFAULT = 20000
HA_FC_NEW_ACTIVE_TIMEOUT_KEY = "ha.failover-controller.new-active.rpc-timeout.ms"
HA_FC_NEW_ACTIVE_TIMEOUT_DEFAULT = 60000
HA_FC_GRACEFUL_FENCE_TIMEOUT_KEY = "ha.failover-controller.graceful-fence.rpc-timeout.ms"
HA_FC_GRACEFUL_FENCE_TIMEOUT_DEFAULT = 5000
#: Ours: how long ``haadmin -reconfigureSharedEdits`` waits for the new JournalNodes to
#: hold the finalized history (their syncers copy it), asking again every retry interval.
DFS_HA_RECONFIGURE_CATCH_UP_TIMEOUT_KEY = "dfs.ha.reconfigure-shared-edits.catch-up.timeout.ms"
DFS_HA_RECONFIGURE_CATCH_UP_TIMEOUT_DEFAULT = 600000
DFS_HA_RECONFIGURE_RETRY_INTERVAL_KEY = "dfs.ha.reconfigure-shared-edits.retry.interval.ms"
DFS_HA_RECONFIGURE_RETRY_INTERVAL_DEFAULT = 10000
DFS_HA_ZKFC_PORT_KEY = "dfs.ha.zkfc.port"
DFS_HA_ZKFC_PORT_DEFAULT = 8019
DFS_HA_FENCING_SSH_CONNECT_TIMEOUT_KEY = "dfs.ha.fencing.ssh.connect-timeout"
DFS_HA_FENCING_SSH_CONNECT_TIMEOUT_DEFAULT = 30000
DFS_HA_FENCING_SSH_PRIVATE_KEY_FILES_KEY = "dfs.ha.fencing.ssh.private-key-files"
#: Ours (Hadoop's shell fencer waits forever): how long one shell(...) method may run.
DFS_HA_FENCING_SHELL_TIMEOUT_KEY = "dfs.ha.fencing.shell.timeout.ms"
DFS_HA_FENCING_SHELL_TIMEOUT_DEFAULT = 60000
#: The NameNode's resource checker (NameNodeResourceChecker): free space each name and
#: edits directory's volume must keep; below it the NameNode reports itself unhealthy.
DFS_NAMENODE_DU_RESERVED_KEY = "dfs.namenode.resource.du.reserved"
DFS_NAMENODE_DU_RESERVED_DEFAULT = 1024 * 1024 * 100
DFS_NAMENODE_CHECKED_VOLUMES_MINIMUM_KEY = "dfs.namenode.resource.checked.volumes.minimum"
DFS_NAMENODE_CHECKED_VOLUMES_MINIMUM_DEFAULT = 1
DFS_NAMENODE_CHECKPOINT_CHECK_PERIOD_KEY = "dfs.namenode.checkpoint.check.period"
DFS_NAMENODE_CHECKPOINT_CHECK_PERIOD_DEFAULT = "60s"
#: HDFS-12979: a standby uploads to a NameNode whose images another standby gives it only
#: after this many checkpoint periods without an accepted upload of its own.
DFS_NAMENODE_CHECKPOINT_QUIET_MULTIPLIER_KEY = "dfs.namenode.checkpoint.check.quiet-multiplier"
DFS_NAMENODE_CHECKPOINT_QUIET_MULTIPLIER_DEFAULT = 1.5
DFS_IMAGE_TRANSFER_TIMEOUT_KEY = "dfs.image.transfer.timeout"
DFS_IMAGE_TRANSFER_TIMEOUT_DEFAULT = 60000
DFS_NAMENODE_RPC_ADDRESS_KEY = "dfs.namenode.rpc-address"
DFS_NAMENODE_RPC_PORT_DEFAULT = 8020
DFS_NAMENODE_RPC_ADDRESS_DEFAULT = "0.0.0.0:8020"
DFS_NAMENODE_RPC_BIND_HOST_KEY = "dfs.namenode.rpc-bind-host"
DFS_NAMENODE_HTTP_ADDRESS_KEY = "dfs.namenode.http-address"
DFS_NAMENODE_HTTP_PORT_DEFAULT = 9870
DFS_NAMENODE_HTTP_ADDRESS_DEFAULT = "0.0.0.0:9870"
DFS_NAMENODE_HTTP_BIND_HOST_KEY = "dfs.namenode.http-bind-host"
DFS_NAMENODE_HTTPS_ADDRESS_KEY = "dfs.namenode.https-address"
DFS_NAMENODE_HTTPS_PORT_DEFAULT = 9871
DFS_NAMENODE_HTTPS_ADDRESS_DEFAULT = "0.0.0.0:9871"
DFS_NAMENODE_HTTPS_BIND_HOST_KEY = "dfs.namenode.https-bind-host"
DFS_NAMENODE_HANDLER_COUNT_KEY = "dfs.namenode.handler.count"
DFS_NAMENODE_HANDLER_COUNT_DEFAULT = 10
DFS_NAMENODE_EDITS_ASYNC_LOGGING_KEY = "dfs.namenode.edits.asynclogging"
DFS_NAMENODE_EDITS_ASYNC_LOGGING_DEFAULT = True
DFS_LIST_LIMIT_KEY = "dfs.ls.limit"
DFS_LIST_LIMIT_DEFAULT = 1000
DFS_NAMENODE_SERVICE_RPC_ADDRESS_KEY = "dfs.namenode.servicerpc-address"
DFS_NAMENODE_SECONDARY_HTTP_ADDRESS_KEY = "dfs.namenode.secondary.http-address"
DFS_NAMENODE_SECONDARY_HTTP_ADDRESS_DEFAULT = "0.0.0.0:9868"
DFS_NAMENODE_BACKUP_ADDRESS_KEY = "dfs.namenode.backup.address"
DFS_NAMENODE_BACKUP_ADDRESS_DEFAULT = "0.0.0.0:50100"
# Read only by getconf -includeFile / -excludeFile (there are no DataNodes here).
DFS_HOSTS = "dfs.hosts"
DFS_HOSTS_EXCLUDE = "dfs.hosts.exclude"
DFS_HTTP_POLICY_KEY = "dfs.http.policy"
DFS_HTTP_POLICY_DEFAULT = "HTTP_ONLY"
DFS_METRICS_PERCENTILES_INTERVALS_KEY = "dfs.metrics.percentiles.intervals"

_TIMEOUT_20S = 20000
_TIMEOUT_120S = 120000

#: key -> default value as Hadoop writes it in *-default.xml (always a string).
DEFAULTS: dict[str, str] = {
    key: str(value).lower() if isinstance(value, bool) else str(value)
    for key, value in (
        (HADOOP_TMP_DIR_KEY, HADOOP_TMP_DIR_DEFAULT),
        (FS_DEFAULT_NAME_KEY, FS_DEFAULT_NAME_DEFAULT),
        (IPC_MAXIMUM_DATA_LENGTH_KEY, IPC_MAXIMUM_DATA_LENGTH_DEFAULT),
        (IPC_SERVER_HANDLER_QUEUE_SIZE_KEY, IPC_SERVER_HANDLER_QUEUE_SIZE_DEFAULT),
        (IPC_CLIENT_CONNECTION_MAXIDLETIME_KEY, IPC_CLIENT_CONNECTION_MAXIDLETIME_DEFAULT),
        (HADOOP_RPC_PROTECTION_KEY, HADOOP_RPC_PROTECTION_DEFAULT),
        (FS_PERMISSIONS_UMASK_KEY, FS_PERMISSIONS_UMASK_DEFAULT),
        (HADOOP_SECURITY_AUTHENTICATION_KEY, HADOOP_SECURITY_AUTHENTICATION_DEFAULT),
        (HADOOP_SSL_SERVER_CONF_KEY, HADOOP_SSL_SERVER_CONF_DEFAULT),
        (HADOOP_SSL_CLIENT_CONF_KEY, HADOOP_SSL_CLIENT_CONF_DEFAULT),
        (HADOOP_SSL_HANDSHAKE_TIMEOUT_KEY, HADOOP_SSL_HANDSHAKE_TIMEOUT_DEFAULT),
        (
            HADOOP_SECURITY_INSTRUMENTATION_REQUIRES_ADMIN_KEY,
            HADOOP_SECURITY_INSTRUMENTATION_REQUIRES_ADMIN_DEFAULT,
        ),
        (HADOOP_SECURITY_SENSITIVE_CONFIG_KEYS_KEY, HADOOP_SECURITY_SENSITIVE_CONFIG_KEYS_DEFAULT),
        (DFS_NAMENODE_HTTPS_ADDRESS_KEY, DFS_NAMENODE_HTTPS_ADDRESS_DEFAULT),
        (DFS_NAMENODE_SECONDARY_HTTP_ADDRESS_KEY, DFS_NAMENODE_SECONDARY_HTTP_ADDRESS_DEFAULT),
        (DFS_NAMENODE_BACKUP_ADDRESS_KEY, DFS_NAMENODE_BACKUP_ADDRESS_DEFAULT),
        (DFS_HOSTS, ""),
        (DFS_HOSTS_EXCLUDE, ""),
        (DFS_JOURNALNODE_EDITS_DIR_KEY, DFS_JOURNALNODE_EDITS_DIR_DEFAULT),
        (DFS_JOURNALNODE_EDITS_DIR_PERMISSION_KEY, DFS_JOURNALNODE_EDITS_DIR_PERMISSION_DEFAULT),
        (DFS_JOURNALNODE_RPC_ADDRESS_KEY, DFS_JOURNALNODE_RPC_ADDRESS_DEFAULT),
        (DFS_JOURNALNODE_HTTP_ADDRESS_KEY, DFS_JOURNALNODE_HTTP_ADDRESS_DEFAULT),
        (DFS_JOURNALNODE_HTTPS_ADDRESS_KEY, DFS_JOURNALNODE_HTTPS_ADDRESS_DEFAULT),
        (DFS_JOURNALNODE_HANDLER_COUNT_KEY, DFS_JOURNALNODE_HANDLER_COUNT_DEFAULT),
        (DFS_JOURNALNODE_ENABLE_SYNC_KEY, DFS_JOURNALNODE_ENABLE_SYNC_DEFAULT),
        (DFS_JOURNALNODE_SYNC_INTERVAL_KEY, DFS_JOURNALNODE_SYNC_INTERVAL_DEFAULT),
        (DFS_JOURNALNODE_ENABLE_SYNC_FORMAT_KEY, DFS_JOURNALNODE_ENABLE_SYNC_FORMAT_DEFAULT),
        (DFS_JOURNALNODE_SCRUB_ENABLED_KEY, DFS_JOURNALNODE_SCRUB_ENABLED_DEFAULT),
        (DFS_JOURNALNODE_SCRUB_INTERVAL_KEY, DFS_JOURNALNODE_SCRUB_INTERVAL_DEFAULT),
        (
            DFS_JOURNALNODE_SCRUB_BYTES_PER_SECOND_KEY,
            DFS_JOURNALNODE_SCRUB_BYTES_PER_SECOND_DEFAULT,
        ),
        (
            DFS_JOURNALNODE_EDIT_CACHE_SIZE_FRACTION_KEY,
            DFS_JOURNALNODE_EDIT_CACHE_SIZE_FRACTION_DEFAULT,
        ),
        (DFS_QJOURNAL_QUEUE_SIZE_LIMIT_KEY, DFS_QJOURNAL_QUEUE_SIZE_LIMIT_DEFAULT),
        (DFS_QJOURNAL_START_SEGMENT_TIMEOUT_KEY, _TIMEOUT_20S),
        (DFS_QJOURNAL_PREPARE_RECOVERY_TIMEOUT_KEY, _TIMEOUT_120S),
        (DFS_QJOURNAL_ACCEPT_RECOVERY_TIMEOUT_KEY, _TIMEOUT_120S),
        (DFS_QJOURNAL_FINALIZE_SEGMENT_TIMEOUT_KEY, _TIMEOUT_120S),
        (DFS_QJOURNAL_SELECT_INPUT_STREAMS_TIMEOUT_KEY, _TIMEOUT_20S),
        (DFS_QJOURNAL_GET_JOURNAL_STATE_TIMEOUT_KEY, _TIMEOUT_120S),
        (DFS_QJOURNAL_NEW_EPOCH_TIMEOUT_KEY, _TIMEOUT_120S),
        (DFS_QJOURNAL_WRITE_TXNS_TIMEOUT_KEY, _TIMEOUT_20S),
        (DFS_QJOURNAL_HTTP_OPEN_TIMEOUT_KEY, 60000),
        (DFS_QJOURNAL_HTTP_READ_TIMEOUT_KEY, 60000),
        (
            DFS_QJOURNAL_PARALLEL_READ_NUM_THREADS_KEY,
            DFS_QJOURNAL_PARALLEL_READ_NUM_THREADS_DEFAULT,
        ),
        (DFS_QJM_OPERATIONS_TIMEOUT_KEY, DFS_QJM_OPERATIONS_TIMEOUT_DEFAULT),
        (DFS_HA_TAILEDITS_QJM_RPC_MAX_TXNS_KEY, DFS_HA_TAILEDITS_QJM_RPC_MAX_TXNS_DEFAULT),
        (DFS_NAMENODE_EDITS_QJOURNALS_RESOLUTION_ENABLED_KEY, False),
        (DFS_NAMENODE_NAME_DIR_KEY, DFS_NAMENODE_NAME_DIR_DEFAULT),
        (DFS_NAMENODE_EDITS_DIR_KEY, DFS_NAMENODE_EDITS_DIR_DEFAULT),
        (DFS_NAMENODE_EDITS_DIR_MINIMUM_KEY, DFS_NAMENODE_EDITS_DIR_MINIMUM_DEFAULT),
        (DFS_NAMENODE_NUM_EXTRA_EDITS_RETAINED_KEY, DFS_NAMENODE_NUM_EXTRA_EDITS_RETAINED_DEFAULT),
        (
            DFS_NAMENODE_MAX_EXTRA_EDITS_SEGMENTS_RETAINED_KEY,
            DFS_NAMENODE_MAX_EXTRA_EDITS_SEGMENTS_RETAINED_DEFAULT,
        ),
        (DFS_NAMENODE_NUM_CHECKPOINTS_RETAINED_KEY, DFS_NAMENODE_NUM_CHECKPOINTS_RETAINED_DEFAULT),
        (DFS_NAMENODE_CHECKPOINT_PERIOD_KEY, DFS_NAMENODE_CHECKPOINT_PERIOD_DEFAULT),
        (DFS_NAMENODE_CHECKPOINT_TXNS_KEY, DFS_NAMENODE_CHECKPOINT_TXNS_DEFAULT),
        (DFS_NAMENODE_MAX_OP_SIZE_KEY, DFS_NAMENODE_MAX_OP_SIZE_DEFAULT),
        (
            DFS_NAMENODE_EDITS_NOEDITLOGCHANNELFLUSH_KEY,
            DFS_NAMENODE_EDITS_NOEDITLOGCHANNELFLUSH_DEFAULT,
        ),
        (
            DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_KEY,
            DFS_NAMENODE_EDITS_SYNC_PIPELINE_DEPTH_DEFAULT,
        ),
        (DFS_NAMENODE_SUPPORT_ALLOW_FORMAT_KEY, DFS_NAMENODE_SUPPORT_ALLOW_FORMAT_DEFAULT),
        (DFS_NAMENODE_TESTING_FUTURE_LAYOUT_KEY, DFS_NAMENODE_TESTING_FUTURE_LAYOUT_DEFAULT),
        (DFS_NAMENODE_STARTUP_KEY, DFS_NAMENODE_STARTUP_DEFAULT),
        (DFS_REFORMAT_DISABLED_KEY, DFS_REFORMAT_DISABLED_DEFAULT),
        (DFS_REPLICATION_KEY, DFS_REPLICATION_DEFAULT),
        (DFS_BLOCK_SIZE_KEY, DFS_BLOCK_SIZE_DEFAULT),
        (DFS_PERMISSIONS_SUPERUSERGROUP_KEY, DFS_PERMISSIONS_SUPERUSERGROUP_DEFAULT),
        (DFS_PERMISSIONS_ENABLED_KEY, DFS_PERMISSIONS_ENABLED_DEFAULT),
        (DFS_NAMENODE_AUDIT_LOG_ASYNC_KEY, DFS_NAMENODE_AUDIT_LOG_ASYNC_DEFAULT),
        (DFS_NAMENODE_MAX_COMPONENT_LENGTH_KEY, DFS_NAMENODE_MAX_COMPONENT_LENGTH_DEFAULT),
        (DFS_EDIT_LOG_TRANSFER_TIMEOUT_KEY, DFS_EDIT_LOG_TRANSFER_TIMEOUT_DEFAULT),
        (DFS_EDIT_LOG_TRANSFER_RATE_KEY, DFS_EDIT_LOG_TRANSFER_RATE_DEFAULT),
        (DFS_IMAGE_TRANSFER_TIMEOUT_KEY, DFS_IMAGE_TRANSFER_TIMEOUT_DEFAULT),
        (DFS_IMAGE_TRANSFER_RATE_KEY, DFS_IMAGE_TRANSFER_RATE_DEFAULT),
        (DFS_HA_TAILEDITS_PERIOD_KEY, DFS_HA_TAILEDITS_PERIOD_DEFAULT),
        (DFS_HA_TAILEDITS_PERIOD_BACKOFF_MAX_KEY, DFS_HA_TAILEDITS_PERIOD_BACKOFF_MAX_DEFAULT),
        (DFS_HA_TAILEDITS_ALL_NAMESNODES_RETRY_KEY, DFS_HA_TAILEDITS_ALL_NAMESNODES_RETRY_DEFAULT),
        (DFS_HA_TAILEDITS_INPROGRESS_KEY, DFS_HA_TAILEDITS_INPROGRESS_DEFAULT),
        (DFS_HA_TAILEDITS_INPROGRESS_WAIT_KEY, DFS_HA_TAILEDITS_INPROGRESS_WAIT_DEFAULT),
        (DFS_JOURNALNODE_KEPT_SEGMENT_STATE_KEY, DFS_JOURNALNODE_KEPT_SEGMENT_STATE_DEFAULT),
        (
            DFS_JOURNALNODE_FORMAT_LIVE_WRITER_WINDOW_KEY,
            DFS_JOURNALNODE_FORMAT_LIVE_WRITER_WINDOW_DEFAULT,
        ),
        (DFS_HA_TAILEDITS_ROLLEDITS_TIMEOUT_KEY, DFS_HA_TAILEDITS_ROLLEDITS_TIMEOUT_DEFAULT),
        (DFS_HA_TAILEDITS_MAX_TXNS_PER_LOCK_KEY, DFS_HA_TAILEDITS_MAX_TXNS_PER_LOCK_DEFAULT),
        (DFS_HA_LOGROLL_PERIOD_KEY, DFS_HA_LOGROLL_PERIOD_DEFAULT),
        (DFS_HA_LOGROLL_RPC_TIMEOUT_KEY, DFS_HA_LOGROLL_RPC_TIMEOUT_DEFAULT),
        (DFS_HA_STANDBY_CHECKPOINTS_KEY, DFS_HA_STANDBY_CHECKPOINTS_DEFAULT),
        (DFS_CLIENT_FAILOVER_MAX_ATTEMPTS_KEY, DFS_CLIENT_FAILOVER_MAX_ATTEMPTS_DEFAULT),
        (DFS_CLIENT_FAILOVER_SLEEPTIME_BASE_KEY, DFS_CLIENT_FAILOVER_SLEEPTIME_BASE_DEFAULT),
        (DFS_CLIENT_FAILOVER_SLEEPTIME_MAX_KEY, DFS_CLIENT_FAILOVER_SLEEPTIME_MAX_DEFAULT),
        (DFS_HA_AUTO_FAILOVER_ENABLED_KEY, DFS_HA_AUTO_FAILOVER_ENABLED_DEFAULT),
        (DFS_NAMENODE_OBSERVER_ENABLED_KEY, DFS_NAMENODE_OBSERVER_ENABLED_DEFAULT),
        (DFS_NAMENODE_STATE_CONTEXT_ENABLED_KEY, DFS_NAMENODE_STATE_CONTEXT_ENABLED_DEFAULT),
        (
            DFS_CLIENT_FAILOVER_OBSERVER_PROBE_RETRY_PERIOD_KEY,
            DFS_CLIENT_FAILOVER_OBSERVER_PROBE_RETRY_PERIOD_DEFAULT,
        ),
        (DFS_NAMENODE_CHECKPOINT_CHECK_PERIOD_KEY, DFS_NAMENODE_CHECKPOINT_CHECK_PERIOD_DEFAULT),
        (
            DFS_NAMENODE_CHECKPOINT_QUIET_MULTIPLIER_KEY,
            DFS_NAMENODE_CHECKPOINT_QUIET_MULTIPLIER_DEFAULT,
        ),
        (HA_ZK_SESSION_TIMEOUT_KEY, HA_ZK_SESSION_TIMEOUT_DEFAULT),
        (HA_ZK_PARENT_ZNODE_KEY, HA_ZK_PARENT_ZNODE_DEFAULT),
        (HA_ZK_ACL_KEY, HA_ZK_ACL_DEFAULT),
        (HA_ZK_OP_RETRIES_KEY, HA_ZK_OP_RETRIES_DEFAULT),
        (HA_HM_CONNECT_RETRY_INTERVAL_KEY, HA_HM_CONNECT_RETRY_INTERVAL_DEFAULT),
        (HA_HM_CHECK_INTERVAL_KEY, HA_HM_CHECK_INTERVAL_DEFAULT),
        (HA_HM_SLEEP_AFTER_DISCONNECT_KEY, HA_HM_SLEEP_AFTER_DISCONNECT_DEFAULT),
        (HA_HM_RPC_TIMEOUT_KEY, HA_HM_RPC_TIMEOUT_DEFAULT),
        (HA_FC_CLI_CHECK_TIMEOUT_KEY, HA_FC_CLI_CHECK_TIMEOUT_DEFAULT),
        (HA_FC_NEW_ACTIVE_TIMEOUT_KEY, HA_FC_NEW_ACTIVE_TIMEOUT_DEFAULT),
        (HA_FC_GRACEFUL_FENCE_TIMEOUT_KEY, HA_FC_GRACEFUL_FENCE_TIMEOUT_DEFAULT),
        (DFS_HA_RECONFIGURE_CATCH_UP_TIMEOUT_KEY, DFS_HA_RECONFIGURE_CATCH_UP_TIMEOUT_DEFAULT),
        (DFS_HA_RECONFIGURE_RETRY_INTERVAL_KEY, DFS_HA_RECONFIGURE_RETRY_INTERVAL_DEFAULT),
        (DFS_HA_ZKFC_PORT_KEY, DFS_HA_ZKFC_PORT_DEFAULT),
        (DFS_HA_FENCING_SSH_CONNECT_TIMEOUT_KEY, DFS_HA_FENCING_SSH_CONNECT_TIMEOUT_DEFAULT),
        (DFS_HA_FENCING_SHELL_TIMEOUT_KEY, DFS_HA_FENCING_SHELL_TIMEOUT_DEFAULT),
        (DFS_NAMENODE_DU_RESERVED_KEY, DFS_NAMENODE_DU_RESERVED_DEFAULT),
        (DFS_NAMENODE_CHECKED_VOLUMES_MINIMUM_KEY, DFS_NAMENODE_CHECKED_VOLUMES_MINIMUM_DEFAULT),
        (DFS_IMAGE_TRANSFER_TIMEOUT_KEY, DFS_IMAGE_TRANSFER_TIMEOUT_DEFAULT),
        (DFS_HTTP_POLICY_KEY, DFS_HTTP_POLICY_DEFAULT),
        (DFS_NAMENODE_RPC_ADDRESS_KEY, DFS_NAMENODE_RPC_ADDRESS_DEFAULT),
        (DFS_NAMENODE_HTTP_ADDRESS_KEY, DFS_NAMENODE_HTTP_ADDRESS_DEFAULT),
        (DFS_NAMENODE_HANDLER_COUNT_KEY, DFS_NAMENODE_HANDLER_COUNT_DEFAULT),
        (DFS_NAMENODE_EDITS_ASYNC_LOGGING_KEY, DFS_NAMENODE_EDITS_ASYNC_LOGGING_DEFAULT),
        (DFS_LIST_LIMIT_KEY, DFS_LIST_LIMIT_DEFAULT),
    )
}
