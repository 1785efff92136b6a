"""ActiveStandbyElector: leader election on ZooKeeper, through kazoo (Hadoop's ActiveStandbyElector).

Under ``parent`` (``${ha.zookeeper.parent-znode}/<nameservice>``) two znodes:

* ``ActiveStandbyElectorLock`` — *ephemeral*: whoever created it is active, for as long
  as its ZooKeeper session lives. Its data is the holder's ActiveNodeInfo.
* ``ActiveBreadCrumb`` — *persistent*: the ActiveNodeInfo of the last active. A node that
  wins the lock first fences the node the breadcrumb names (unless it names the winner),
  then writes its own. A node that leaves gracefully deletes it (nothing to fence).

``join_election(data)`` creates the lock; if it exists the node is standby and watches it.
When the lock goes (its holder's session closed or expired) every watcher tries to create
it; the one that does fences the old active (``callbacks.fence_old_active``), writes the
breadcrumb and becomes active (``callbacks.become_active``). A failure there releases the
lock (a new session) and joins again after a second. ``quit_election(need_fence)`` closes
the session, which releases the lock at once.

ZooKeeper trouble: a disconnection puts the elector in *neutral* mode — nothing changes;
the active stays active (it cannot know whether it still holds the lock, and stopping it
would turn a ZooKeeper outage into an HDFS outage; the journal's epochs are the fence if
another node takes over). An expired session rejoins with a new one. ``NOAUTH`` (the
configured credentials do not grant the ACL) is fatal.

The decisions are one pure state machine, :func:`hadoop_qjm.ha.elector_states.step`: this
module translates kazoo's callbacks and answers into its events, and performs the actions
it returns (create the lock, watch it, fence and write the breadcrumb, tell the controller,
rejoin).

Threads: kazoo's callbacks only queue events; one worker thread of the elector runs every
election step under ``lock`` (shared with the controller, Hadoop's ``synchronized``).
"""

from __future__ import annotations

import functools
import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, Protocol

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    ConnectionLoss,
    KazooException,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    OperationTimeoutError,
    SessionExpiredError,
)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType
from kazoo.retry import KazooRetry
from kazoo.security import ACL, Id

from hadoop_qjm.common.exceptions import IOException, one_line_message
from hadoop_qjm.ha.election_rules import ZKAcl, ZKAuth, needs_fencing
from hadoop_qjm.ha.elector_states import (
    Action,
    BecameActive,
    BecomeActive,
    CreateFailure,
    CreateLockFailed,
    Do,
    Election,
    ElectorState,
    Event,
    Fatal,
    Happened,
    QuitElection,
    ScheduleJoin,
    lock_seen,
    step,
)

__all__ = [
    "ActiveStandbyElector",
    "ElectorCallbacks",
    "ElectorState",
    "ZooKeeperConnectionException",
]

LOG = logging.getLogger(__name__)

LOCK_FILENAME = "ActiveStandbyElectorLock"
BREADCRUMB_FILENAME = "ActiveBreadCrumb"
_TRANSIENT = (ConnectionLoss, OperationTimeoutError, SessionExpiredError, KazooTimeoutError)


class ZooKeeperConnectionException(IOException):
    """ZooKeeper could not be reached within the session timeout."""


class ElectorCallbacks(Protocol):
    """What the elector asks of its controller (ActiveStandbyElectorCallback)."""

    def become_active(self) -> None: ...  # raise to refuse (ServiceFailedException)
    def become_standby(self) -> None: ...
    def enter_neutral_mode(self) -> None: ...
    def notify_fatal_error(self, message: str) -> None: ...
    def fence_old_active(self, data: bytes) -> None: ...  # raise if it could not be fenced


class _Worker:
    """One thread running queued steps in order, some after a delay."""

    def __init__(self, name: str, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Callable[[], None]]] = []
        self._seq = itertools.count()
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, step: Callable[[], None], delay_s: float = 0.0) -> None:
        with self._cond:
            if self._stopped:
                return
            heapq.heappush(self._heap, (self._clock() + delay_s, next(self._seq), step))
            self._cond.notify()

    def stop(self, timeout_s: float = 30.0) -> None:
        with self._cond:
            self._stopped = True
            self._heap.clear()
            self._cond.notify()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._stopped:
                    now = self._clock()
                    if self._heap and self._heap[0][0] <= now:
                        step = heapq.heappop(self._heap)[2]
                        break
                    self._cond.wait(self._heap[0][0] - now if self._heap else None)
                else:
                    return
            try:
                step()
            except Exception:  # noqa: BLE001 - one failed step must not end the elector
                LOG.exception("Unexpected error in an election step")


class ActiveStandbyElector:
    """See the module docstring. ``clock`` (monotonic seconds) dates the delayed joins (a
    rejoin after a failure to become active, a retry of the session)."""

    def __init__(
        self,
        quorum: str,
        session_timeout_s: float,
        parent: str,
        acls: Sequence[ZKAcl],
        auths: Sequence[ZKAuth],
        callbacks: ElectorCallbacks,
        *,
        op_retries: int = 3,
        lock: threading.RLock | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.quorum = quorum
        self.session_timeout_s = session_timeout_s
        self.parent = parent.rstrip("/") or "/"
        self.lock_path = f"{self.parent}/{LOCK_FILENAME}"
        self.breadcrumb_path = f"{self.parent}/{BREADCRUMB_FILENAME}"
        self._acls = [ACL(a.perms, Id(a.scheme, a.id)) for a in acls]
        self._auths = [(a.scheme, a.auth) for a in auths]
        self._callbacks = callbacks
        self._op_retries = max(op_retries, 1)
        self.lock = lock or threading.RLock()
        #: The state machine (:mod:`hadoop_qjm.ha.elector_states`); changed only by step.
        self.election = Election()
        self._data: bytes | None = None
        self._client: KazooClient | None = None
        self._generation = 0
        self._worker = _Worker("ActiveStandbyElector", clock)
        self._lock_watcher: Callable[[Any], None] = lambda _event: None

    # ---- the ZooKeeper session ---------------------------------------------------------------
    def _new_client(self) -> KazooClient:
        """A connected client (its own session); IOException if ZooKeeper cannot be reached
        within the session timeout."""
        client = KazooClient(
            hosts=self.quorum,
            timeout=self.session_timeout_s,
            auth_data=self._auths or None,
            default_acl=self._acls or None,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, max_delay=1.0),
            command_retry=KazooRetry(max_tries=self._op_retries, delay=0.1, max_delay=1.0),
            randomize_hosts=True,
        )
        try:
            client.start(timeout=self.session_timeout_s)
        except (KazooTimeoutError, KazooException, OSError) as e:
            client.stop()
            client.close()
            raise ZooKeeperConnectionException(
                f"Unable to connect to ZooKeeper quorum at {self.quorum} within "
                f"{self.session_timeout_s:g}s: {e or type(e).__name__}"
            ) from e
        return client

    def _connect(self) -> KazooClient:
        self._close_client()
        client = self._new_client()
        self._generation += 1
        generation = self._generation
        client.add_listener(lambda state: self._on_session_state(generation, state))
        # One watcher object per session: kazoo keeps watchers in a set, so re-watching
        # with the same object after a reconnect does not pile up callbacks.
        self._lock_watcher = functools.partial(self._on_lock_event, generation)
        self._client = client
        LOG.info("Connected to ZooKeeper at %s (session 0x%x)", self.quorum, client.client_id[0])
        return client

    def _close_client(self) -> None:
        client, self._client = self._client, None
        self._generation += 1  # events of the old session are ignored from now on
        if client is not None:
            try:
                client.stop()
                client.close()
            except Exception:  # noqa: BLE001 - the session is being dropped anyway
                LOG.warning("Error closing the ZooKeeper session", exc_info=True)

    def _op(self, name: str, *args: Any, **kwargs: Any) -> Any:
        """``client.<name>(...)``, bounded by the session timeout (kazoo's blocking calls
        wait for a reconnect forever) and retried on a lost connection
        (``ha.failover-controller.active-standby-elector.zk.op.retries``, Hadoop's
        zkDoWithRetries). KazooTimeoutError / ConnectionLoss once the retries are spent."""
        for attempt in range(1, self._op_retries + 1):
            client = self._client
            if client is None:
                raise ConnectionLoss("no ZooKeeper session")
            try:
                return getattr(client, name + "_async")(*args, **kwargs).get(
                    timeout=self.session_timeout_s
                )
            except (ConnectionLoss, OperationTimeoutError):
                if attempt == self._op_retries:
                    raise
        raise AssertionError("unreachable")

    def _on_session_state(self, generation: int, state: str) -> None:
        # kazoo's thread: only queue.
        self._worker.submit(lambda: self._process_session_state(generation, state))

    def _process_session_state(self, generation: int, state: str) -> None:
        with self.lock:
            if generation != self._generation or not self.election.in_election:
                return
            if state == KazooState.SUSPENDED:
                LOG.info("Session disconnected. Entering neutral mode...")
                self._handle(Happened.SESSION_SUSPENDED)
            elif state == KazooState.LOST:
                LOG.info("Session expired. Entering neutral mode and rejoining...")
                self._handle(Happened.SESSION_LOST)
            elif state == KazooState.CONNECTED:
                LOG.info("Session connected.")
                self._handle(Happened.SESSION_CONNECTED)

    # ---- the one-shot ZooKeeper operations of -formatZK and of the controller ----------------
    def _with_client(self, op: Callable[[KazooClient], Any]) -> Any:
        with self.lock:
            if self._client is not None and self._client.connected:
                return op(self._client)
        client = self._new_client()
        try:
            return op(client)
        finally:
            client.stop()
            client.close()

    def parent_znode_exists(self) -> bool:
        return bool(self._with_client(lambda c: c.exists(self.parent)))

    def ensure_parent_znode(self) -> None:
        """Create the parent znode and its ancestors, with the configured ACLs."""

        def create(client: KazooClient) -> None:
            path = ""
            for part in self.parent.strip("/").split("/"):
                path += "/" + part
                try:
                    client.create(path, b"", acl=self._acls or None)
                    LOG.info("Created %s", path)
                except NodeExistsError:
                    pass

        self._with_client(create)
        LOG.info("Successfully created %s in ZK.", self.parent)

    def clear_parent_znode(self) -> None:
        """Delete the parent znode and everything under it — the lock too, if a controller
        holds it (as Hadoop's): stop the controllers before formatting."""

        def clear(client: KazooClient) -> None:
            try:
                client.delete(self.parent, recursive=True)
            except NoNodeError:
                pass
            except NotEmptyError as e:  # a child was created while deleting
                raise IOException(f"Could not clear {self.parent}: {e}") from e

        LOG.info("Recursively deleting %s from ZK...", self.parent)
        self._with_client(clear)
        LOG.info("Successfully deleted %s from ZK.", self.parent)

    def get_active_data(self) -> bytes | None:
        """The lock's data (who is active), or None if nobody holds it."""

        def read(client: KazooClient) -> bytes | None:
            try:
                return client.get_async(self.lock_path).get(timeout=self.session_timeout_s)[0]
            except NoNodeError:
                return None

        return self._with_client(read)

    # ---- the election ------------------------------------------------------------------------
    @property
    def state(self) -> ElectorState:
        """ActiveStandbyElector.State: INIT, ACTIVE, STANDBY or NEUTRAL."""
        return self.election.state

    def join_election(self, data: bytes) -> None:
        """Become a candidate with ``data`` (this node's ActiveNodeInfo). Idempotent."""
        with self.lock:
            if not self.election.in_election:
                self._data = data
                LOG.info("Joining the election for %s", self.lock_path)
            self._handle(Happened.JOIN_ELECTION)

    def quit_election(self, need_fence: bool) -> None:
        """Leave the election: close the session (the lock goes with it). Unless
        ``need_fence``, an active node first deletes its breadcrumb: it left cleanly."""
        with self.lock:
            LOG.info("Yielding from election (%s fencing)", "needs" if need_fence else "no")
            self._handle(QuitElection(need_fence))

    def terminate(self) -> None:
        """Leave the election (fencing needed: this node may still be active) and stop."""
        self.election = replace(self.election, in_election=False)
        client = self._client
        if client is not None:
            # First, without the lock: a step waiting on ZooKeeper under the lock ends now.
            client.stop()
        with self.lock:
            self._handle(Happened.TERMINATE)
        self._worker.stop()

    @property
    def is_in_election(self) -> bool:
        with self.lock:
            return self.election.in_election

    def _handle(self, event: Event) -> None:
        """Step the machine and perform what it says, in order. An action's answer (the
        next event) is handled before the actions after it, as Hadoop's nested calls do.
        Called under ``lock``."""
        self.election, actions = step(self.election, event)
        todo = list(reversed(actions))
        while todo:
            answer = self._perform(todo.pop())
            if answer is not None:
                self.election, more = step(self.election, answer)
                todo.extend(reversed(more))

    def _perform(self, action: Action) -> Event | None:
        if isinstance(action, ScheduleJoin):
            if action.new_session:
                LOG.info("Trying to re-establish ZK session")
                self._close_client()
            self._worker.submit(self._join_due, action.delay_s)
        elif isinstance(action, BecomeActive):
            return self._become_active(action.watch_after)
        elif isinstance(action, Fatal):
            message = self._fatal_message(action.cause)
            LOG.error(message)
            self._close_client()
            self._callbacks.notify_fatal_error(message)
        elif action is Do.ENSURE_SESSION:
            return self._ensure_session()
        elif action is Do.CREATE_LOCK:
            return self._create_lock_node()
        elif action is Do.WATCH_LOCK:
            return self._watch_lock()
        elif action is Do.NOTIFY_STANDBY:
            LOG.info("Becoming standby for %s", self.lock_path)
            self._callbacks.become_standby()
        elif action is Do.NOTIFY_NEUTRAL:
            LOG.info("Entering neutral mode for %s", self.lock_path)
            self._callbacks.enter_neutral_mode()
        elif action is Do.DELETE_BREADCRUMB:
            if self._client is not None:
                self._try_delete_own_breadcrumb()
        elif action is Do.CLOSE_SESSION:
            self._close_client()
        else:
            raise TypeError(f"unknown elector action {action!r}")
        return None

    def _join_due(self) -> None:
        with self.lock:
            self._handle(Happened.JOIN_DUE)

    def _ensure_session(self) -> Event:
        try:
            if self._client is None or not self._client.connected:
                self._connect()
        except IOException as e:
            LOG.warning("%s; retrying", e)
            return Happened.SESSION_FAILED
        return Happened.SESSION_READY

    def _create_lock_node(self) -> Event | None:
        if self._client is None:
            return None
        try:
            self._op("create", self.lock_path, self._data, acl=self._acls or None, ephemeral=True)
        except NodeExistsError:
            return Happened.LOCK_EXISTS
        except NoAuthError:
            return CreateLockFailed(CreateFailure.NO_AUTH)
        except NoNodeError:
            return CreateLockFailed(CreateFailure.NO_PARENT)
        except _TRANSIENT as e:
            LOG.warning("Could not create %s (%s); waiting for ZooKeeper", self.lock_path, e)
            return CreateLockFailed(CreateFailure.CONNECTION)
        LOG.info("Created %s: this node won the election", self.lock_path)
        return Happened.LOCK_CREATED

    def _fatal_message(self, cause: CreateFailure) -> str:
        if cause is CreateFailure.NO_AUTH:
            return (
                f"Not allowed to create {self.lock_path} (ZooKeeper NOAUTH): the credentials of "
                "ha.zookeeper.auth do not match the ACL of the parent znode (ha.zookeeper.acl, "
                "set by zkfc -formatZK)"
            )
        return f"The parent znode {self.parent} does not exist: run 'hdfs-py zkfc -formatZK'"

    def _watch_lock(self) -> Event | None:
        """Watch the lock (Hadoop's monitorActiveStatus): ours, someone else's, or gone."""
        client = self._client
        if client is None:
            return None
        # Our session's id, as Hadoop's zkClient.getSessionId() gives it whether connected or
        # not: kazoo's client_id is None while disconnected, and a connection lost between
        # the answer and this check made our own lock read as someone else's (the active
        # stepped down as the ensemble went away). Taken before the call too, for that case.
        before = client.client_id
        try:
            stat = self._op("exists", self.lock_path, watch=self._lock_watcher)
        except _TRANSIENT as e:
            LOG.warning("Could not watch %s (%s); waiting for ZooKeeper", self.lock_path, e)
            return Happened.WATCH_FAILED  # CONNECTED (or LOST) brings us back here
        session = client.client_id or before
        return lock_seen(
            None if stat is None else stat.ephemeralOwner, None if session is None else session[0]
        )

    def _on_lock_event(self, generation: int, event: Any) -> None:
        # kazoo's thread: only queue.
        def process() -> None:
            with self.lock:
                if generation != self._generation:
                    return  # an event of a dropped session
                if event.type == EventType.NONE:
                    # A session event (kazoo fires the watchers on a disconnect): the
                    # listener handles those; CONNECTED sets the watch again.
                    return
                if event.type == EventType.DELETED:
                    if self.election.in_election:
                        LOG.info("The lock %s was deleted: trying to take it", self.lock_path)
                    self._handle(Happened.LOCK_DELETED)
                else:
                    self._handle(Happened.LOCK_CHANGED)

        self._worker.submit(process)

    def _become_active(self, watch_after: bool) -> Event:
        try:
            breadcrumb_stat = self._fence_old_active()
            self._write_breadcrumb(breadcrumb_stat)
            LOG.info("Becoming active for %s", self.lock_path)
            self._callbacks.become_active()
        except Exception as e:  # noqa: BLE001 - Hadoop: "Exception handling the winning of election"
            LOG.warning("Exception handling the winning of election: %s", one_line_message(e))
            return Happened.ACTIVATION_FAILED
        return BecameActive(watch_after)

    def _fence_old_active(self) -> Any:
        LOG.info("Checking for any old active which needs to be fenced...")
        try:
            data, stat = self._op("get", self.breadcrumb_path)
        except NoNodeError:
            LOG.info("No old node to fence")
            return None
        if needs_fencing(data, self._data):  # type: ignore[arg-type]
            LOG.info("Old node exists: %s", data.hex())
            self._callbacks.fence_old_active(data)
        else:
            LOG.info("But old node has our own data, so don't need to fence it.")
        return stat

    def _write_breadcrumb(self, old_stat: Any) -> None:
        LOG.info(
            "Writing znode %s to indicate that the local node is the most recent active...",
            self.breadcrumb_path,
        )
        if old_stat is None:
            self._op("create", self.breadcrumb_path, self._data, acl=self._acls or None)
        else:
            self._op("set", self.breadcrumb_path, self._data, version=old_stat.version)

    def _try_delete_own_breadcrumb(self) -> None:
        LOG.info("Deleting bread-crumb of active node...")
        try:
            data, stat = self._op("get", self.breadcrumb_path)
            if data != self._data:
                LOG.warning("The breadcrumb names another node; not deleting it")
                return
            self._op("delete", self.breadcrumb_path, version=stat.version)
        except (KazooException, KazooTimeoutError) as e:
            LOG.warning(
                "Unable to delete our own bread-crumb of being active at %s: %s. "
                "Expecting to be fenced by the next active.",
                self.breadcrumb_path,
                e,
            )

    def __repr__(self) -> str:
        return f"ActiveStandbyElector({self.quorum}{self.parent}, state={self.state})"
