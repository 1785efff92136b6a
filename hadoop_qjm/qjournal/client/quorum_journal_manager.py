"""QuorumJournalManager: a JournalManager over a quorum of JournalNodes (design paper §2, §3).

The public client API::

    qjm = QuorumJournalManager(conf, "qjournal://h1:8485;h2:8485;h3:8485/jid", ns_info)
    qjm.format(ns_info)                     # every JournalNode must answer
    qjm.recover_unfinalized_segments()      # fence older writers, recover the last segment
    out = qjm.start_log_segment(1, CURRENT_LAYOUT_VERSION)
    out.write(op); out.set_ready_to_flush(); out.flush()   # a write quorum acked it
    out.close(); qjm.finalize_log_segment(1, 1)
    streams = qjm.select_input_streams(1)   # RedundantEditLogInputStreams
    qjm.close()

Writing (§2.2): a new writer first wins a unique epoch (§2.5: getJournalState
from a quorum, then newEpoch(max + 1) on a quorum), which fences every older
writer (§2.3); then it recovers the newest segment with one round of Paxos
(§2.8: prepareRecovery, choose the source by §2.9's rules, acceptRecovery,
finalize). Only then may it start segments. Every step needs a majority
(:meth:`AsyncLoggerSet.wait_for_write_quorum`); format and the other
administrative calls need every node.

Reading (§3): over RPC from the JournalNodes' edit caches when in-progress
tailing is on (millisecond lag), else — or when that fails — by streaming
whole segments from their HTTP servers. All timeouts are read once from the
configuration into :class:`QuorumJournalTimeouts`.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from hadoop_qjm.common.exceptions import (
    IllegalArgumentException,
    IllegalStateException,
    IOException,
    always_assert,
)
from hadoop_qjm.common.security import SSLFactory
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.editlog.file_journal_manager import DEFAULT_OUTPUT_BUFFER_CAPACITY
from hadoop_qjm.editlog.journal_manager import JournalManager
from hadoop_qjm.editlog.redundant_edit_log_input_stream import (
    RedundantEditLogInputStream,
)
from hadoop_qjm.qjournal.client import membership_change, quorum_journal_reader
from hadoop_qjm.qjournal.client.async_logger import AsyncLogger, LoggerFactory
from hadoop_qjm.qjournal.client.async_logger_set import AsyncLoggerSet
from hadoop_qjm.qjournal.client.ipc_logger_channel import ipc_logger_channel_factory
from hadoop_qjm.qjournal.client.joint_logger_set import JointAsyncLoggerSet, logger_address
from hadoop_qjm.qjournal.client.qjournal_uri import QJournalURI, parse_qjournal_uri
from hadoop_qjm.qjournal.client.quorum_call import QuorumCall, map_to_string
from hadoop_qjm.qjournal.client.quorum_output_stream import QuorumOutputStream
from hadoop_qjm.qjournal.client.segment_recovery_comparator import decide_recovery
from hadoop_qjm.qjournal.protocol import membership
from hadoop_qjm.qjournal.protocol.exceptions import (
    JournalInUseException,
    JournalMembershipException,
)
from hadoop_qjm.qjournal.protocol.format_rules import describe_destroyed, format_refusal
from hadoop_qjm.qjournal.protocol.membership import Config, MembershipRecord, RecordState
from hadoop_qjm.qjournal.protocol.messages import NewEpochResponse

__all__ = ["QuorumJournalManager", "QuorumJournalTimeouts"]

LOG = logging.getLogger(__name__)

#: How often, at most, a reader asks the JournalNodes it reads for their membership
#: records (one getJournalState round; the tailer reads far more often).
READER_MEMBERSHIP_CHECK_S = 1.0


@dataclass(frozen=True)
class QuorumJournalTimeouts:
    """Every QJM timeout, in milliseconds (digest §6, "QJM client")."""

    start_segment_ms: int = 20000
    prepare_recovery_ms: int = 120000
    accept_recovery_ms: int = 120000
    finalize_segment_ms: int = 120000
    select_input_streams_ms: int = 20000
    get_journal_state_ms: int = 120000
    new_epoch_ms: int = 120000
    write_txns_ms: int = 20000
    #: ``dfs.qjm.operations.timeout``: format, discardSegments, getJournalCTime, …
    operations_ms: int = 60000
    http_open_ms: int = 60000
    http_read_ms: int = 60000

    @classmethod
    def from_conf(cls, conf: Configuration) -> QuorumJournalTimeouts:
        """Read every timeout (``20s``, or a bare number of milliseconds); one that is not a
        positive duration raises ConfigurationError naming its key (a writer with a zero or negative timeout could
        never get a quorum)."""
        d = cls()
        read = {
            "start_segment_ms": keys.DFS_QJOURNAL_START_SEGMENT_TIMEOUT_KEY,
            "prepare_recovery_ms": keys.DFS_QJOURNAL_PREPARE_RECOVERY_TIMEOUT_KEY,
            "accept_recovery_ms": keys.DFS_QJOURNAL_ACCEPT_RECOVERY_TIMEOUT_KEY,
            "finalize_segment_ms": keys.DFS_QJOURNAL_FINALIZE_SEGMENT_TIMEOUT_KEY,
            "select_input_streams_ms": keys.DFS_QJOURNAL_SELECT_INPUT_STREAMS_TIMEOUT_KEY,
            "get_journal_state_ms": keys.DFS_QJOURNAL_GET_JOURNAL_STATE_TIMEOUT_KEY,
            "new_epoch_ms": keys.DFS_QJOURNAL_NEW_EPOCH_TIMEOUT_KEY,
            "write_txns_ms": keys.DFS_QJOURNAL_WRITE_TXNS_TIMEOUT_KEY,
            "http_open_ms": keys.DFS_QJOURNAL_HTTP_OPEN_TIMEOUT_KEY,
            "http_read_ms": keys.DFS_QJOURNAL_HTTP_READ_TIMEOUT_KEY,
            "operations_ms": keys.DFS_QJM_OPERATIONS_TIMEOUT_KEY,  # a duration: "60s"
        }
        return cls(
            **{
                field: conf.get_time_duration(key, getattr(d, field), "ms", minimum=1)
                for field, key in read.items()
            }
        )


class QuorumJournalManager(JournalManager):
    """Writes and reads the edit log of ``uri``'s journal on its JournalNodes.

    ``logger_factory`` makes the AsyncLogger of each node (default: an
    IPCLoggerChannel over Thrift; the fault harness passes its own);
    ``metrics_registry`` receives the channels' Prometheus metrics;
    ``http_opener(url, timeout_s)`` opens a ``/getJournal`` URL for the
    streaming readers (default: HTTP(S); the in-process transport reads the
    simulated node's file). Both defaults take their TLS from one
    :class:`~hadoop_qjm.common.security.SSLFactory` of ``conf``
    (docs/security.md), read here: a bad security setting fails the constructor.
    """

    def __init__(
        self,
        conf: Configuration,
        uri: str | QJournalURI,
        ns_info: NamespaceInfo,
        *,
        name_service_id: str | None = None,
        logger_factory: LoggerFactory | None = None,
        metrics_registry: CollectorRegistry | None = None,
        clock: Callable[[], float] = time.monotonic,
        http_opener: Callable[[str, float], Any] | None = None,
    ) -> None:
        if conf is None:
            raise IllegalArgumentException("must be configured")
        self.conf = conf
        self.uri = uri if isinstance(uri, QJournalURI) else parse_qjournal_uri(uri)
        self.journal_id = self.uri.journal_id
        self.ns_info = ns_info
        self.name_service_id = name_service_id
        self.timeouts = QuorumJournalTimeouts.from_conf(conf)
        self.max_txns_per_rpc = conf.get_int(
            keys.DFS_HA_TAILEDITS_QJM_RPC_MAX_TXNS_KEY,
            keys.DFS_HA_TAILEDITS_QJM_RPC_MAX_TXNS_DEFAULT,
        )
        if self.max_txns_per_rpc <= 0:
            raise IllegalArgumentException(
                f"Must specify {keys.DFS_HA_TAILEDITS_QJM_RPC_MAX_TXNS_KEY} greater than 0!"
            )
        self.in_progress_tailing = conf.get_bool(
            keys.DFS_HA_TAILEDITS_INPROGRESS_KEY, keys.DFS_HA_TAILEDITS_INPROGRESS_DEFAULT
        )
        self.max_op_size = conf.get_int(
            keys.DFS_NAMENODE_MAX_OP_SIZE_KEY, keys.DFS_NAMENODE_MAX_OP_SIZE_DEFAULT
        )
        self.output_buffer_capacity = DEFAULT_OUTPUT_BUFFER_CAPACITY
        self.is_active_writer = False
        ssl_factory = SSLFactory(conf)
        self.http_opener = http_opener or ssl_factory.url_opener()
        if logger_factory is None:
            logger_factory = functools.partial(
                ipc_logger_channel_factory,
                metrics_registry=metrics_registry,
                socket_factory=ssl_factory.rpc_client_socket_factory(),
            )
        self._logger_factory = logger_factory
        self._clock = clock
        self.loggers = AsyncLoggerSet(self._create_loggers(logger_factory), clock=clock)
        #: The set this writer counts (docs/journalnode.md, "Online, by joint consensus"):
        #: the URI's, until the JournalNodes' membership records say otherwise.
        self.config = Config.stable(logger_address(lg) for lg in self.loggers.loggers)
        #: The greatest membership record a quorum showed this writer (None: never changed).
        self.membership_record: MembershipRecord | None = None
        #: The first txid of the segment this writer has open (a set change waits for none).
        self.open_segment_txid: int | None = None
        self._membership_checked_at: float | None = None
        #: Called with this QJM each time it settles on a set a STABLE membership record
        #: names (the NameNode records it in its name directories; None: nobody).
        self.on_stable_set: Callable[[QuorumJournalManager], None] | None = None

    def note_stable_set(self) -> None:
        """Tell :attr:`on_stable_set` when this QJM uses the set of a STABLE record."""
        record = self.membership_record
        if (
            self.on_stable_set is None
            or record is None
            or record.state is not RecordState.STABLE
            or self.config != record.config
        ):
            return
        self.on_stable_set(self)

    def use_config(self, config: Config) -> None:
        """Count ``config`` from now on: keep the loggers of nodes it still has, make the
        new ones, close the others; an established epoch carries over."""
        if config == self.config:
            return
        previous = self.loggers
        kept = {logger_address(lg): lg for lg in previous.loggers}
        loggers: list[AsyncLogger] = []
        try:
            for address in sorted(config.members):
                logger = kept.pop(address, None)
                if logger is None:
                    host, _, port = address.rpartition(":")
                    logger = self._logger_factory(
                        self.conf,
                        self.ns_info,
                        self.journal_id,
                        self.name_service_id,
                        (host.strip("[]"), int(port)),
                    )
                loggers.append(logger)
        except BaseException:
            for logger in loggers:
                if logger not in previous.loggers:
                    logger.close()
            raise
        if config.is_joint:
            self.loggers = JointAsyncLoggerSet(loggers, config, clock=self._clock)
        else:
            self.loggers = AsyncLoggerSet(loggers, clock=self._clock)
        if previous.is_epoch_established:
            self.loggers.set_epoch(previous.epoch)
        for logger in kept.values():  # the nodes that left
            logger.close()
        LOG.info("Writing to the JournalNodes %s from now on", config.describe())
        self.config = config

    def _create_loggers(self, factory: LoggerFactory) -> list[AsyncLogger]:
        addresses = self.uri.addresses
        if len(addresses) % 2 == 0:
            LOG.warning(
                "Quorum journal URI '%s' has an even number of Journal Nodes specified. "
                "This is not recommended!",
                self.uri,
            )
        loggers: list[AsyncLogger] = []
        try:
            for address in addresses:
                loggers.append(
                    factory(self.conf, self.ns_info, self.journal_id, self.name_service_id, address)
                )
        except BaseException:
            for logger in loggers:
                logger.close()
            raise
        return loggers

    def __str__(self) -> str:
        return f"QJM to {self.loggers}"

    def __repr__(self) -> str:
        return f"QuorumJournalManager({self.uri})"

    # ---- calls that need every JournalNode -----------------------------------------------------
    def _wait_for_all(
        self, call: QuorumCall[AsyncLogger, Any], operation: str, failure_message: str
    ) -> dict[AsyncLogger, Any]:
        n = len(self.loggers)
        try:
            # Every answer, failures included (not Hadoop's "stop at the first failure"):
            # the error then counts and names each node that failed (issue 33).
            call.wait_for(n, n, -1, self.timeouts.operations_ms, operation)
        except TimeoutError:
            if call.count_exceptions() == 0:
                raise IOException(f"Timed out waiting for {operation}() response") from None
        if call.count_exceptions() > 0:
            call.rethrow_exception(failure_message)
        return call.successes

    def check_format(self) -> str | None:
        """Ask every JournalNode, before any is formatted, whether it may be (``canFormat``,
        not Hadoop's; issue 33): JournalInUseException naming each node a writer uses;
        else one line saying what formatting destroys, None if no node holds a segment."""
        answers = self._wait_for_all(
            self.loggers.call("can_format"),
            "canFormat",
            "Could not check one or more JournalNodes before formatting",
        )
        checks = {str(lg): answers[lg] for lg in self.loggers.loggers if lg in answers}
        refusal = format_refusal(checks)
        if refusal is not None:
            raise JournalInUseException(refusal)
        return describe_destroyed(checks)

    def format(self, ns_info: NamespaceInfo, force: bool = False) -> str | None:
        """Format the journal on every JournalNode (design paper §4.2: all must succeed),
        after :meth:`check_format` found no writer on any; returns what it destroyed (one
        line, None if nothing). A node still re-checks under its journal lock."""
        destroyed = self.check_format()
        self._wait_for_all(
            self.loggers.call("format", ns_info, force),
            "format",
            "Could not format one or more JournalNodes",
        )
        return destroyed

    def has_some_data(self) -> bool:
        """Whether any JournalNode has the journal formatted (every node must answer)."""
        results = self._wait_for_all(
            self.loggers.call("is_formatted"),
            "hasSomeData",
            "Unable to check if JNs are ready for formatting",
        )
        return any(results.values())

    def live_writers(self, operation: str, failure_message: str) -> dict[str, str]:
        """Ask every JournalNode (all must answer: ``failure_message`` names each that did
        not) whether a writer is live on it (canFormat's check); node -> why, for each
        that has one. What a command that discards edits checks before it moves any."""
        answers = self._wait_for_all(self.loggers.call("can_format"), operation, failure_message)
        return {str(lg): answers[lg].live_writer for lg in answers if answers[lg].live_writer}

    def discard_segments(self, start_txid: int) -> None:
        """Move aside every segment from ``start_txid`` on, on every node (rollback)."""
        self._wait_for_all(
            self.loggers.call("discard_segments", start_txid),
            "discardSegments",
            "Could not perform discardSegments of one or more JournalNodes",
        )

    def get_journal_ctime(self) -> int:
        """The journal's cTime; every node must answer the same."""
        results = self._wait_for_all(
            self.loggers.call("get_journal_ctime"),
            "getJournalCTime",
            "Could not journal CTime for one more JournalNodes",
        )
        values = set(results.values())
        if len(values) != 1:
            raise IOException(f"Results differed for getJournalCTime: {map_to_string(results)}")
        return values.pop()

    # ---- becoming the writer (design paper §2.5, §2.8) -----------------------------------------
    def create_new_unique_epoch(self) -> dict[AsyncLogger, NewEpochResponse]:
        """Win an epoch higher than any a quorum promised; fences every older writer.

        Epochs are unique and increasing, not necessarily consecutive (§2.5,
        footnote 3: two writers may propose the same one, at most one wins).
        """
        if self.loggers.is_epoch_established:
            raise IllegalStateException("epoch already created")
        promises = membership_change.settle_configuration(self)
        max_promised = max(r.last_promised_epoch for r in promises.values())
        always_assert(max_promised >= 0, f"negative promised epoch {max_promised}")
        my_epoch = max_promised + 1
        responses = self.loggers.wait_for_write_quorum(
            self.loggers.call(
                "new_epoch",
                my_epoch,
                self.config.to_text(),
                None if self.membership_record is None else self.membership_record.to_text(),
            ),
            self.timeouts.new_epoch_ms,
            f"newEpoch({my_epoch})",
        )
        self.loggers.set_epoch(my_epoch)
        membership_change.repair_records(self, promises)
        return responses

    def recover_unfinalized_segments(self) -> None:
        """Fence older writers, then recover and finalize the newest segment (§2.6)."""
        if self.is_active_writer:
            raise IllegalStateException("already active writer")
        LOG.info("Starting recovery process for unclosed journal segments...")
        responses = self.create_new_unique_epoch()
        LOG.info("Successfully started new epoch %d", self.loggers.epoch)
        LOG.debug("newEpoch(%d) responses:\n%s", self.loggers.epoch, map_to_string(responses))
        # §2.8 step 1: any segment started on a quorum shows up in a quorum of answers.
        segment_txids = [
            r.last_segment_txid for r in responses.values() if r.last_segment_txid is not None
        ]
        if segment_txids:  # none on a fresh journal: nothing to recover
            self._recover_unclosed_segment(max(segment_txids))
        self.is_active_writer = True

    def _recover_unclosed_segment(self, segment_txid: int) -> None:
        """One Paxos round deciding segment ``segment_txid``'s content, then finalize it.

        Afterwards the segment is finalized on a majority, and every node that
        has it finalized agrees on its end (§2.6's postconditions).
        """
        if segment_txid <= 0:
            raise IllegalArgumentException(f"bad segment txid {segment_txid}")
        LOG.info("Beginning recovery of unclosed segment starting at txid %d", segment_txid)
        prepared = self.loggers.wait_for_write_quorum(
            self.loggers.call("prepare_recovery", segment_txid),
            self.timeouts.prepare_recovery_ms,
            f"prepareRecovery({segment_txid})",
        )
        LOG.info("Recovery prepare phase complete. Responses:\n%s", map_to_string(prepared))
        decision = decide_recovery(segment_txid, prepared.items())
        if decision is None:
            LOG.info("None of the responders had a log to recover: %s", map_to_string(prepared))
            return
        best_logger, best = decision.source, decision.response
        if decision.already_accepted:
            LOG.info(
                "Using already-accepted recovery for segment starting at txid %d: %s=%s",
                segment_txid,
                best_logger,
                best,
            )
        else:
            LOG.info("Using longest log: %s=%s", best_logger, best)
        log_to_sync = best.segment_state
        url = best_logger.build_url_to_fetch_logs(segment_txid)
        accept = self.loggers.call("accept_recovery", log_to_sync, url)
        self.loggers.wait_for_write_quorum(
            accept, self.timeouts.accept_recovery_ms, f"acceptRecovery({log_to_sync})"
        )
        # Hadoop sends finalizeLogSegment to every logger and waits for a quorum, so a node
        # that answers later still finalizes (and drops its paxos record) instead of keeping
        # the segment in progress until its syncer moves it aside (issue 33 item 7). We send
        # it to each node whose accept succeeds: now to those that answered, and, queued
        # behind its accept, to one still accepting. Never to a node whose accept failed: it
        # may hold a copy of the same length written by another writer, and finalizing that
        # copy would give one segment two different finalized contents (run_seed 145).
        self.loggers.wait_for_write_quorum(
            self.loggers.call_after(
                accept, "finalize_log_segment_after", log_to_sync.start_txid, log_to_sync.end_txid
            ),
            self.timeouts.finalize_segment_ms,
            f"finalizeLogSegment({log_to_sync.start_txid}-{log_to_sync.end_txid})",
        )

    # ---- writing -------------------------------------------------------------------------------
    def set_output_buffer_capacity(self, size: int) -> None:
        """The double-buffer size of later segments; must stay below ``ipc.maximum.data.length``."""
        ipc_max = self.conf.get_int(
            keys.IPC_MAXIMUM_DATA_LENGTH_KEY, keys.IPC_MAXIMUM_DATA_LENGTH_DEFAULT
        )
        if size >= ipc_max:
            raise IllegalArgumentException(
                f"Attempted to use QJM's output buffer capacity ({size}) greater than the IPC "
                f"max data length ({ipc_max}). This will cause journals to reject edits."
            )
        self.output_buffer_capacity = size

    def start_log_segment(self, txid: int, layout_version: int) -> QuorumOutputStream:
        """Open segment ``txid`` on a quorum; returns its output stream."""
        if not self.is_active_writer:
            raise IllegalStateException("must recover segments before starting a new one")
        self.loggers.wait_for_write_quorum(
            self.loggers.call("start_log_segment", txid, layout_version),
            self.timeouts.start_segment_ms,
            f"startLogSegment({txid})",
        )
        self.open_segment_txid = txid
        return QuorumOutputStream(
            self.loggers, txid, self.output_buffer_capacity, self.timeouts.write_txns_ms
        )

    def finalize_log_segment(self, first_txid: int, last_txid: int) -> None:
        """Finalize ``[first_txid, last_txid]`` on a quorum."""
        self.loggers.wait_for_write_quorum(
            self.loggers.call("finalize_log_segment", first_txid, last_txid),
            self.timeouts.finalize_segment_ms,
            f"finalizeLogSegment({first_txid}-{last_txid})",
        )
        if self.open_segment_txid == first_txid:
            self.open_segment_txid = None

    def purge_logs_older_than(self, min_txid_to_keep: int) -> None:
        """Ask every node to purge; not waited for (failing to purge is always fine)."""
        LOG.info("Purging remote journals older than txid %d", min_txid_to_keep)
        self.loggers.call("purge_logs_older_than", min_txid_to_keep)

    # ---- reading (design paper §3) -------------------------------------------------------------
    def select_input_streams(
        self, from_txid: int, in_progress_ok: bool = False, only_durable_txns: bool = False
    ) -> list[RedundantEditLogInputStream]:
        """Streams of the transactions from ``from_txid`` on, one per segment, in txid order.

        With ``in_progress_ok`` and ``dfs.ha.tail-edits.in-progress`` the edits
        come over RPC from the nodes' caches; if that fails in any way, whole
        segments are streamed over HTTP instead. ``only_durable_txns`` limits
        the result to txns a majority holds (RPC) or known committed (HTTP).
        """
        if not self.is_active_writer:
            self._maybe_follow_membership()
        # While the set changes, "a majority holds it" has no single count: stream instead.
        if in_progress_ok and self.in_progress_tailing and not self.config.is_joint:
            LOG.debug("Tailing edits starting from txn ID %d via RPC mechanism", from_txid)
            try:
                return quorum_journal_reader.select_rpc_input_streams(
                    self, from_txid, only_durable_txns
                )
            except OSError as e:
                LOG.warning(
                    "Encountered exception while tailing edits >= %d via RPC; falling back "
                    "to streaming: %s",
                    from_txid,
                    e,
                    exc_info=LOG.isEnabledFor(logging.DEBUG),
                )
        return quorum_journal_reader.select_streaming_input_streams(
            self, from_txid, in_progress_ok, only_durable_txns
        )

    def _maybe_follow_membership(self) -> None:
        """A reader checks the records at most every READER_MEMBERSHIP_CHECK_S; a check
        that fails leaves it on its set (the read that follows reports what is wrong)."""
        now = self._clock()
        last = self._membership_checked_at
        if last is not None and now - last < READER_MEMBERSHIP_CHECK_S:
            return
        self._membership_checked_at = now
        try:
            self.follow_membership_for_read()
        except OSError as e:
            LOG.debug("Could not check the membership records of %s: %s", self.journal_id, e)

    def follow_membership_for_read(self) -> bool:
        """A reader (the standby's tailer): ask a majority of the set it reads for the
        membership records and move to the one set they say to read
        (``membership.reader_config``): the set a switch moved to, so that the reader
        keeps up when the nodes that left stop. True if it moved. The writer does not
        call this: it follows the records when it wins its epoch."""
        states = self.loggers.wait_for_write_quorum(
            self.loggers.call("get_journal_state"),
            self.timeouts.select_input_streams_ms,
            "getJournalState()",
        )
        records = []
        for logger, state in states.items():
            if state.membership is not None:
                try:
                    records.append(MembershipRecord.parse(state.membership))
                except IllegalArgumentException as e:
                    raise JournalMembershipException(
                        f"{logger} answered a bad membership record: {e}"
                    ) from None
        config = membership.reader_config(self.config, records)
        if config == self.config:
            return False
        LOG.warning(
            "Journal %s moved to the JournalNodes %s: reading from them "
            "(set dfs.namenode.shared.edits.dir to them)",
            self.journal_id,
            config.describe(),
        )
        self.use_config(config)
        self.membership_record = max(records, key=lambda r: r.key)
        self.note_stable_set()
        return True

    def await_journaled_edits(self, from_txid: int, wait_ms: int) -> bool:
        """Wait until a majority has written ``from_txid`` (True) or ``wait_ms`` passes.

        The push half of in-progress tailing (issue 25): every node holds the call until
        it writes ``from_txid`` (getJournaledEdits' long poll), so the answer comes the
        moment the edit is durable on a majority — no polling. Only the newest writer's
        answers count, as for :meth:`select_input_streams`. Raises IOException when no
        majority answers (the caller then falls back to its tailing period).
        """
        return quorum_journal_reader.await_journaled_edits(self, from_txid, wait_ms)

    # ---- life cycle ----------------------------------------------------------------------------
    def close(self) -> None:
        """Close every channel."""
        self.loggers.close()

    def __enter__(self) -> QuorumJournalManager:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
