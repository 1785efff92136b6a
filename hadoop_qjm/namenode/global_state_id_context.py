"""GlobalStateIdContext: the NameNode's side of state alignment (HDFS-12943), in front of
its RPC dispatcher.

A call may carry the client's state id (:mod:`hadoop_qjm.ipc.alignment_context`): the
highest txid the client has seen. The NameNode's state id is its last txid written
(active) or applied (observer, standby): ``FSImage.getLastAppliedOrWrittenTxId``.

* Every reply to a call that carried a state id carries the NameNode's — with
  ``dfs.namenode.state.context.enabled`` (Hadoop's switch for the active), and always on an
  observer. A call without one gets a reply without one (an older client).
* A *coordinated* call (ClientProtocol's ``@ReadOnly(isCoordinated = true)`` reads here:
  getFileInfo, getListing) on an observer is served only once the observer has applied
  the client's state id (:func:`alignment_verdict`):

  - no state id at all: StandbyException ("Observer Node received request without
    stateId ..."): a client of the plain failover proxy moves on to the active rather
    than read stale data;
  - more than ``10000 txns/s × ⌊wait s⌋ × 0.8`` behind: RetriableException ("Observer Node
    is too far behind: serverStateId = S clientStateId = C"), at once;
  - behind: the call is held until the tailer has applied it, at most the client's wait
    (twice ``ipc.client.connection.maxidletime``, Hadoop's Server.getMaxIdleTime()), then
    the same RetriableException. Hadoop re-queues such a call; here the handler thread
    waits on the tailer's round (``NameNodeCore.applied``) — so at most half the handlers
    (``max_held``) hold calls at once, and a call that would be one more is refused at
    once with RetriableException ("Observer Node holds N calls for alignment already"):
    a stalled observer keeps handlers for haadmin and for clients it can serve.

The rule is a pure function; the waiting is :meth:`GlobalStateIdContext.receive_request_state`.
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Callable
from typing import Any

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.ha.ha_service_protocol import HAServiceState
from hadoop_qjm.ipc.alignment_context import split_state_id, with_state_id
from hadoop_qjm.ipc.wire import read_message_header
from hadoop_qjm.namenode.protocol.exceptions import RetriableException, StandbyException

__all__ = [
    "COORDINATED_METHODS",
    "AlignmentVerdict",
    "GlobalStateIdContext",
    "alignment_verdict",
]

#: GlobalStateIdContext.ESTIMATED_TRANSACTIONS_PER_SECOND and ..._SERVER_TIME_MULTIPLIER.
ESTIMATED_TRANSACTIONS_PER_SECOND = 10000
ESTIMATED_SERVER_TIME_MULTIPLIER = 0.8
#: ClientProtocol's coordinated reads this NameNode serves.
COORDINATED_METHODS = frozenset({"getFileInfo", "getListing"})


class AlignmentVerdict(enum.Enum):
    SERVE = "serve"
    HOLD = "hold until applied"
    NO_STATE_ID = "observer without a state id"
    TOO_FAR_BEHIND = "too far behind"


def alignment_verdict(
    state: HAServiceState, client_state_id: int | None, server_state_id: int, client_wait_ms: int
) -> AlignmentVerdict:
    """What a NameNode in ``state`` does with a coordinated call carrying
    ``client_state_id`` (GlobalStateIdContext.receiveRequestState)."""
    if state is not HAServiceState.OBSERVER:
        return AlignmentVerdict.SERVE  # an active ahead of no client; Hadoop warns and serves
    if client_state_id is None:
        return AlignmentVerdict.NO_STATE_ID
    behind = client_state_id - server_state_id
    allowed = (
        ESTIMATED_TRANSACTIONS_PER_SECOND
        * (client_wait_ms // 1000)
        * ESTIMATED_SERVER_TIME_MULTIPLIER
    )
    if behind > allowed:
        return AlignmentVerdict.TOO_FAR_BEHIND
    return AlignmentVerdict.HOLD if behind > 0 else AlignmentVerdict.SERVE


def _too_far(server_state_id: int, client_state_id: int) -> RetriableException:
    return RetriableException(
        f"Observer Node is too far behind: serverStateId = {server_state_id} "
        f"clientStateId = {client_state_id}"
    )


class GlobalStateIdContext:
    """In front of ``dispatcher`` (its ``process`` and ``error_reply``) for ``name_node``
    (its ``state``, ``transaction_id`` and ``core.applied``); see the module docstring.
    ``enabled`` is ``dfs.namenode.state.context.enabled``; ``client_wait_ms`` bounds a
    hold, ``max_held`` how many are held at once. ``held_calls`` and ``held_ms`` count the
    calls held and their time."""

    def __init__(
        self,
        name_node: Any,
        dispatcher: Any,
        *,
        enabled: bool,
        client_wait_ms: int,
        max_held: int = 5,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name_node = name_node
        self.dispatcher = dispatcher
        self.enabled = enabled
        self.client_wait_ms = client_wait_ms
        self._clock = clock
        self.max_held = max(1, max_held)
        self._held_slots = threading.BoundedSemaphore(self.max_held)
        self._stats_lock = threading.Lock()
        self.held_calls = 0
        self.held_ms = 0.0
        #: Calls being held now.
        self.holding = 0
        #: The highest state id a client sent (the active's txid it had seen).
        self.highest_client_state_id = 0

    @property
    def call_queue_length(self) -> int:
        return self.dispatcher.call_queue_length

    def _state(self) -> Any:
        return getattr(self.name_node, "state", None)

    @property
    def last_seen_state_id(self) -> int:
        """The NameNode's state id (0 while it is not running)."""
        try:
            return self.name_node.transaction_id
        except IOException:
            return 0

    def process(self, payload: bytes, remote_ip: str | None = None) -> bytes:
        """The reply to ``payload`` (a call, with or without a state id)."""
        client_state_id, body = split_state_id(payload)
        observer = self._state() is HAServiceState.OBSERVER
        if client_state_id is None and not observer:
            return self.dispatcher.process(body, remote_ip)  # an older client, as before
        name = read_message_header(body)[0].rpartition(":")[2]
        if name in COORDINATED_METHODS:
            try:
                self.receive_request_state(client_state_id)
            except (StandbyException, RetriableException) as e:
                return self._with_state(client_state_id, self.dispatcher.error_reply(body, e))
        return self._with_state(client_state_id, self.dispatcher.process(body, remote_ip))

    def error_reply(self, payload: bytes, exc: Exception) -> bytes:
        """The reply answering the (postponed) call ``payload`` with ``exc``."""
        client_state_id, body = split_state_id(payload)
        return self._with_state(client_state_id, self.dispatcher.error_reply(body, exc))

    def _with_state(self, client_state_id: int | None, reply: bytes) -> bytes:
        if client_state_id is None:
            return reply
        if not self.enabled and self._state() is not HAServiceState.OBSERVER:
            return reply
        return with_state_id(reply, self.last_seen_state_id)

    def receive_request_state(self, client_state_id: int | None) -> None:
        """Return once a coordinated call carrying ``client_state_id`` may be served here;
        raise StandbyException or RetriableException when it may not (module docstring)."""
        server_state_id = self.last_seen_state_id
        if client_state_id is not None and client_state_id > self.highest_client_state_id:
            with self._stats_lock:
                self.highest_client_state_id = max(self.highest_client_state_id, client_state_id)
        verdict = alignment_verdict(
            self._state(), client_state_id, server_state_id, self.client_wait_ms
        )
        if verdict is AlignmentVerdict.SERVE:
            return
        if verdict is AlignmentVerdict.NO_STATE_ID:
            raise StandbyException(
                "Observer Node received request without stateId. This mostly likely is "
                "because client is not configured with ObserverReadProxyProvider"
            )
        if verdict is AlignmentVerdict.TOO_FAR_BEHIND:
            raise _too_far(server_state_id, client_state_id)  # type: ignore[arg-type]
        self._hold(client_state_id)  # type: ignore[arg-type]

    def _hold(self, client_state_id: int) -> None:
        if not self._held_slots.acquire(blocking=False):
            raise RetriableException(
                f"Observer Node holds {self.max_held} calls for alignment already: "
                f"serverStateId = {self.last_seen_state_id} clientStateId = {client_state_id}"
            )
        with self._stats_lock:
            self.holding += 1
        try:
            self._hold_slot_taken(client_state_id)
        finally:
            with self._stats_lock:
                self.holding -= 1
            self._held_slots.release()

    def _hold_slot_taken(self, client_state_id: int) -> None:
        start = self._clock()
        deadline = start + self.client_wait_ms / 1000.0
        core = getattr(self.name_node, "core", None)
        applied = getattr(core, "applied", None)
        try:
            while (server_state_id := self.last_seen_state_id) < client_state_id:
                left = deadline - self._clock()
                if left <= 0 or applied is None or self._state() is not HAServiceState.OBSERVER:
                    if self._state() is HAServiceState.ACTIVE:
                        return  # it became active meanwhile: it has every txn there is
                    raise _too_far(server_state_id, client_state_id)
                with applied:
                    if self.last_seen_state_id < client_state_id:
                        applied.wait(min(left, 0.1))
        finally:
            with self._stats_lock:
                self.held_calls += 1
                self.held_ms += (self._clock() - start) * 1000.0
