"""The QuorumJournalManager's calls that need every JournalNode, not a majority.

Format (design paper §4.2), hasSomeData, a rolling upgrade's discardSegments, and the HA
upgrade of the layout (HDFS-5138: doPreUpgrade, doUpgrade, doFinalize, canRollBack,
doRollback, getJournalCTime). As in Hadoop (``waitForWriteQuorum`` with every logger),
each waits for every node, up to ``dfs.qjm.operations.timeout``.

Beyond Hadoop, a call that changes the nodes' storage first asks every node a question
that changes nothing (:meth:`AllJournalNodesCalls._check_every_node`): with one node down
(or, for doPreUpgrade, one still holding an unfinalized upgrade) the whole operation is
refused in one line naming that node, before any node changed anything. Hadoop sends
the change to the nodes that answer, and leaves the others behind.
(docs/journalnode.md, "Upgrades and rollbacks")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.qjournal.client.async_logger import AsyncLogger
from hadoop_qjm.qjournal.client.quorum_call import QuorumCall, map_to_string
from hadoop_qjm.qjournal.protocol.exceptions import JournalInUseException, QuorumException
from hadoop_qjm.qjournal.protocol.format_rules import describe_destroyed, format_refusal

if TYPE_CHECKING:
    from hadoop_qjm.common.storage_info import NamespaceInfo
    from hadoop_qjm.qjournal.client.async_logger_set import AsyncLoggerSet

__all__ = ["AllJournalNodesCalls", "NOTHING_CHANGED"]

#: How every refusal of a checked call ends.
NOTHING_CHANGED = "nothing was changed on any JournalNode"


def _first_line(error: BaseException) -> str:
    text = str(error).strip() or type(error).__name__
    return text.splitlines()[0]


class AllJournalNodesCalls:
    """The QuorumJournalManager's methods that wait for every JournalNode (a mix-in: it
    uses the manager's ``loggers``, ``timeouts`` and ``ns_info``)."""

    loggers: AsyncLoggerSet
    timeouts: Any
    ns_info: NamespaceInfo

    # ---- waiting for every node ----------------------------------------------------------------
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

    def _answers_of_every_node(
        self, call: QuorumCall[AsyncLogger, Any], operation: str, failure_message: str, tail: str
    ) -> dict[AsyncLogger, Any]:
        """Every node's answer to ``call``; else QuorumException, one line: the message, each
        node that failed or did not answer in time (with its error's first line), ``tail``."""
        n = len(self.loggers)
        try:
            call.wait_for(n, n, -1, self.timeouts.operations_ms, operation)
        except TimeoutError:
            pass
        answers, errors = call.successes, call.exceptions
        missing = [
            f"{lg}: {_first_line(errors[lg])}"
            if lg in errors
            else f"{lg}: no answer in {self.timeouts.operations_ms} ms"
            for lg in self.loggers.loggers
            if lg not in answers
        ]
        if missing:
            joint = " " if failure_message.endswith(" on") else ": "
            raise QuorumException(f"{failure_message}{joint}{'; '.join(missing)}; {tail}")
        return answers

    def _check_every_node(self, operation: str) -> None:
        """Before ``operation`` changes anything: every node must answer isFormatted, and
        be formatted (the question changes nothing)."""
        answers = self._answers_of_every_node(
            self.loggers.call("is_formatted"),
            "isFormatted",
            f"Not starting {operation}: every JournalNode must answer a check first; failed on",
            NOTHING_CHANGED,
        )
        unformatted = [str(lg) for lg in self.loggers.loggers if not answers[lg]]
        if unformatted:
            raise QuorumException(
                f"Not starting {operation}: the journal is not formatted on "
                f"{', '.join(unformatted)}; {NOTHING_CHANGED}"
            )

    def _change_every_node(self, operation: str, failure_message: str, *args: Any) -> None:
        """Call the logger method ``operation`` (snake case of the RPC) on every node."""
        rpc = "".join(w if i == 0 else w.capitalize() for i, w in enumerate(operation.split("_")))
        self._answers_of_every_node(
            self.loggers.call(operation, *args),
            rpc,
            failure_message,
            "the JournalNodes that answered did it",
        )

    # ---- format ---------------------------------------------------------------------------------
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

    # ---- a rolling upgrade's rollback -----------------------------------------------------------
    def live_writers(self, operation: str, failure_message: str) -> dict[str, str]:
        """Ask every JournalNode (all must answer: ``failure_message`` names each that did
        not) whether a writer is live on it (canFormat's check); node -> why, for each
        that has one. What a command that discards edits checks before it moves any."""
        answers = self._wait_for_all(self.loggers.call("can_format"), operation, failure_message)
        return {str(lg): answers[lg].live_writer for lg in answers if answers[lg].live_writer}

    def discard_segments(self, start_txid: int) -> None:
        """Move aside every segment from ``start_txid`` on, on every node (rollback); not
        started unless every node answers."""
        self._check_every_node("discardSegments")
        self._change_every_node(
            "discard_segments",
            "Could not perform discardSegments of one or more JournalNodes",
            start_txid,
        )

    def _same_answer_of_every_node(
        self, call: QuorumCall[AsyncLogger, Any], operation: str, failure_message: str
    ) -> Any:
        """The one answer every node gave (DFSUtil.assertAllResultsEqual): IOException
        "Results differed for <operation>" if they differ."""
        results = self._answers_of_every_node(
            call, operation, failure_message, "nothing was changed"
        )
        values = set(results.values())
        if len(values) != 1:
            raise IOException(f"Results differed for {operation}: {map_to_string(results)}")
        return values.pop()

    def get_journal_ctime(self) -> int:
        """The journal's cTime; every node must answer the same."""
        return self._same_answer_of_every_node(
            self.loggers.call("get_journal_ctime"),
            "getJournalCTime",
            "Could not journal CTime for one more JournalNodes",
        )

    # ---- the HA upgrade of the layout (HDFS-5138) -----------------------------------------------
    def do_pre_upgrade(self) -> None:
        """Every node keeps its current storage aside (``previous.tmp``). Refused, with
        nothing changed, unless every node answers and none still holds an upgrade that
        was neither finalized nor rolled back (``previous/``)."""
        me = self.ns_info.storage_info()
        held = self._answers_of_every_node(
            self.loggers.call("can_roll_back", me, me, me.layout_version),
            "canRollBack",
            "Not starting doPreUpgrade: every JournalNode must answer a check first; failed on",
            NOTHING_CHANGED,
        )
        unfinalized = [str(lg) for lg in self.loggers.loggers if held[lg]]
        if unfinalized:
            raise QuorumException(
                f"Not starting doPreUpgrade: {', '.join(unfinalized)} still hold the previous "
                f"upgrade (previous/): finalize or roll it back first; {NOTHING_CHANGED}"
            )
        self._change_every_node(
            "do_pre_upgrade", "Could not do pre-upgrade of one or more JournalNodes"
        )

    def do_upgrade(self, storage: StorageInfo) -> None:
        """Every node writes ``storage``'s layout version and cTime into its VERSION and keeps
        the pre-upgrade state as ``previous/`` (epochs and committed txid carried over)."""
        self._check_every_node("doUpgrade")
        self._change_every_node(
            "do_upgrade",
            "Could not perform upgrade of one or more JournalNodes",
            _plain(storage),
        )

    def do_finalize(self) -> None:
        """Every node removes ``previous/``: no rollback afterwards."""
        self._check_every_node("doFinalize")
        self._change_every_node("do_finalize", "Could not finalize one or more JournalNodes")

    def can_roll_back(
        self, storage: StorageInfo, prev_storage: StorageInfo, target_layout_version: int
    ) -> bool:
        """Whether every node can roll back to ``target_layout_version``; the nodes must
        agree (IOException "Results differed for canRollBack" otherwise)."""
        return bool(
            self._same_answer_of_every_node(
                self.loggers.call(
                    "can_roll_back", _plain(storage), _plain(prev_storage), target_layout_version
                ),
                "canRollBack",
                "Could not check if roll back possible for one or more JournalNodes",
            )
        )

    def do_rollback(self) -> None:
        """Every node puts ``previous/`` back as ``current/`` (a node without one changes
        nothing, as in Hadoop: run it again when a node missed it)."""
        self._check_every_node("doRollback")
        self._change_every_node(
            "do_rollback", "Could not perform rollback of one or more JournalNodes"
        )


def _plain(storage: StorageInfo) -> StorageInfo:
    """The StorageInfo part of ``storage`` (a NamespaceInfo is one too): what the RPCs carry."""
    return StorageInfo(
        storage.layout_version, storage.namespace_id, storage.cluster_id, storage.ctime
    )
