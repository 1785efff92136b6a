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
from hadoop_qjm.ha.election_rules import LockStep, ZKAcl, ZKAuth, lock_step, needs_fencing

__all__ = [
    "ActiveStandbyElector",
    "ElectorCallbacks",
    "ElectorState",
    "ZooKeeperConnectionException",
]

LOG = logging.getLogger(__name__)

LOCK_FILENAME = "ActiveStandbyElectorLock"
BREADCRUMB_FILENAME = "ActiveBreadCrumb"
#: Hadoop's SLEEP_AFTER_FAILURE_TO_BECOME_ACTIVE: let another node try first.
SLEEP_AFTER_FAILURE_TO_BECOME_ACTIVE_S = 1.0
_TRANSIENT = (ConnectionLoss, OperationTimeoutError, SessionExpiredError, KazooTimeoutError)


class ZooKeeperConnectionException(IOException):
    """ZooKeeper could not be reached within the session timeout."""


class ElectorState:
    INIT = "INIT"
    ACTIVE = "ACTIVE"
    STANDBY = "STANDBY"
    NEUTRAL = "NEUTRAL"


class ElectorCallbacks(Protocol):
    """What the elector asks of its controller (ActiveStandbyElectorCallback)."""

    def become_active(self) -> None: ...  # raise to refuse (ServiceFailedException)
    def become_standby(self) -> None: ...
    def enter_neutral_mode(self) -> None: ...
    def notify_fatal_error(self, message: str) -> None: ...
    def fence_old_active(self, data: bytes) -> None: ...  # raise if it could not be fenced


class _Worker:
    """One thread running queued steps in order, some after a delay."""

    def __init__(self, name: str) -> None:
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
            heapq.heappush(self._heap, (time.monotonic() + delay_s, next(self._seq), step))
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
                    now = time.monotonic()
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
    """See the module docstring."""

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
        self.state = ElectorState.INIT
        self._data: bytes | None = None
        self._wants_election = False
        self._client: KazooClient | None = None
        self._generation = 0
        self._worker = _Worker("ActiveStandbyElector")
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
            if generation != self._generation or not self._wants_election:
                return
            if state == KazooState.SUSPENDED:
                LOG.info("Session disconnected. Entering neutral mode...")
                self._enter_neutral_mode()
            elif state == KazooState.LOST:
                LOG.info("Session expired. Entering neutral mode and rejoining...")
                self._enter_neutral_mode()
                self._rejoin(0.0)
            elif state == KazooState.CONNECTED:
                LOG.info("Session connected.")
                self._monitor_active_status()

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
    def join_election(self, data: bytes) -> None:
        """Become a candidate with ``data`` (this node's ActiveNodeInfo). Idempotent."""
        with self.lock:
            if self._wants_election:
                return
            self._data = data
            self._wants_election = True
            LOG.info("Joining the election for %s", self.lock_path)
            self._worker.submit(self._join_internal)

    def quit_election(self, need_fence: bool) -> None:
        """Leave the election: close the session (the lock goes with it). Unless
        ``need_fence``, an active node first deletes its breadcrumb: it left cleanly."""
        with self.lock:
            LOG.info("Yielding from election (%s fencing)", "needs" if need_fence else "no")
            if self.state == ElectorState.ACTIVE and not need_fence and self._client is not None:
                self._try_delete_own_breadcrumb()
            self._wants_election = False
            self._close_client()
            self.state = ElectorState.INIT

    def terminate(self) -> None:
        """Leave the election (fencing needed: this node may still be active) and stop."""
        self._wants_election = False
        client = self._client
        if client is not None:
            # First, without the lock: a step waiting on ZooKeeper under the lock ends now.
            client.stop()
        with self.lock:
            self._close_client()
            self.state = ElectorState.INIT
        self._worker.stop()

    @property
    def is_in_election(self) -> bool:
        with self.lock:
            return self._wants_election

    def _join_internal(self) -> None:
        with self.lock:
            if not self._wants_election:
                return
            try:
                if self._client is None or not self._client.connected:
                    self._connect()
            except IOException as e:
                LOG.warning("%s; retrying", e)
                self._worker.submit(self._join_internal, SLEEP_AFTER_FAILURE_TO_BECOME_ACTIVE_S)
                return
            self._create_lock_node()

    def _create_lock_node(self) -> None:
        client = self._client
        if client is None:
            return
        try:
            self._op("create", self.lock_path, self._data, acl=self._acls or None, ephemeral=True)
        except NodeExistsError:
            self._monitor_active_status()
            return
        except NoAuthError:
            self._fatal(
                f"Not allowed to create {self.lock_path} (ZooKeeper NOAUTH): the credentials of "
                "ha.zookeeper.auth do not match the ACL of the parent znode (ha.zookeeper.acl, "
                "set by zkfc -formatZK)"
            )
            return
        except NoNodeError:
            self._fatal(
                f"The parent znode {self.parent} does not exist: run 'hdfs-py zkfc -formatZK'"
            )
            return
        except _TRANSIENT as e:
            LOG.warning("Could not create %s (%s); waiting for ZooKeeper", self.lock_path, e)
            self._worker.submit(self._join_internal, SLEEP_AFTER_FAILURE_TO_BECOME_ACTIVE_S)
            return
        LOG.info("Created %s: this node won the election", self.lock_path)
        if self._become_active():
            # Watch our own lock too: if it goes (deleted by hand, a -formatZK -force), we
            # must notice that we no longer hold it (Hadoop's monitorActiveStatus here).
            self._monitor_active_status()
        else:
            self._rejoin(SLEEP_AFTER_FAILURE_TO_BECOME_ACTIVE_S)

    def _monitor_active_status(self) -> None:
        """Watch the lock: ours -> active; someone else's -> standby; gone -> try again."""
        client = self._client
        if client is None or not self._wants_election:
            return
        try:
            stat = self._op("exists", self.lock_path, watch=self._lock_watcher)
        except _TRANSIENT as e:
            LOG.warning("Could not watch %s (%s); waiting for ZooKeeper", self.lock_path, e)
            return  # CONNECTED (or LOST) brings us back here
        session = client.client_id
        neutral_first, step = lock_step(
            None if stat is None else stat.ephemeralOwner,
            None if session is None else session[0],
            self.state == ElectorState.ACTIVE,
        )
        if neutral_first:
            self._enter_neutral_mode()
        if step is LockStep.TAKE_LOCK:
            self._create_lock_node()
        elif step is LockStep.BECOME_ACTIVE:
            if not self._become_active():
                self._rejoin(SLEEP_AFTER_FAILURE_TO_BECOME_ACTIVE_S)
        else:
            self._become_standby()

    def _on_lock_event(self, generation: int, event: Any) -> None:
        def process() -> None:
            with self.lock:
                if generation != self._generation or not self._wants_election:
                    return
                if event.type == EventType.NONE:
                    # A session event (kazoo fires the watchers on a disconnect): the
                    # listener handles those; CONNECTED sets the watch again.
                    return
                if event.type == EventType.DELETED:
                    # Hadoop's processWatchEvent: an active that lost its lock stops
                    # claiming anything before it tries to take it again.
                    LOG.info("The lock %s was deleted: trying to take it", self.lock_path)
                    if self.state == ElectorState.ACTIVE:
                        self._enter_neutral_mode()
                    self._create_lock_node()
                else:
                    self._monitor_active_status()

        self._worker.submit(process)

    def _become_active(self) -> bool:
        if self.state == ElectorState.ACTIVE:
            return True
        try:
            breadcrumb_stat = self._fence_old_active()
            self._write_breadcrumb(breadcrumb_stat)
            LOG.info("Becoming active for %s", self.lock_path)
            self._callbacks.become_active()
        except Exception as e:  # noqa: BLE001 - Hadoop: "Exception handling the winning of election"
            LOG.warning("Exception handling the winning of election: %s", one_line_message(e))
            return False
        self.state = ElectorState.ACTIVE
        return True

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

    def _become_standby(self) -> None:
        if self.state != ElectorState.STANDBY:
            LOG.info("Becoming standby for %s", self.lock_path)
            self.state = ElectorState.STANDBY
            self._callbacks.become_standby()

    def _enter_neutral_mode(self) -> None:
        if self.state != ElectorState.NEUTRAL:
            LOG.info("Entering neutral mode for %s", self.lock_path)
            self.state = ElectorState.NEUTRAL
            self._callbacks.enter_neutral_mode()

    def _rejoin(self, delay_s: float) -> None:
        """Drop the session (releasing the lock if held) and join again after ``delay_s``."""
        LOG.info("Trying to re-establish ZK session")
        self._close_client()
        self.state = ElectorState.INIT
        self._worker.submit(self._join_internal, delay_s)

    def _fatal(self, message: str) -> None:
        LOG.error(message)
        self._wants_election = False
        self._close_client()
        self.state = ElectorState.INIT
        self._callbacks.notify_fatal_error(message)

    def __repr__(self) -> str:
        return f"ActiveStandbyElector({self.quorum}{self.parent}, state={self.state})"
