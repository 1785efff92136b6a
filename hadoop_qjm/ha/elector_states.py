"""The ActiveStandbyElector's state machine, as one pure table (STYLE.md habit 1; h11's
``_state.py``, raft's ``Step``).

``step(election, event) -> (election, actions)``: what the elector does about one thing
that happened — a call of the controller (join, quit), a ZooKeeper answer (the lock was
created, it exists, it is ours), a watch or session event. The elector
(:mod:`hadoop_qjm.ha.active_standby_elector`) translates kazoo's callbacks and answers into
these events, calls :func:`step` and performs the actions in order (create the lock,
watch it, fence and become active, ...); an action that asks ZooKeeper something answers
with the next event. No socket, thread, clock or kazoo here.

Events and actions are enums (:class:`Happened`, :class:`Do`) or, where they carry a
value, frozen dataclasses. The states are Hadoop's ActiveStandbyElector.State. Outside the
election (before a join, after a quit or a fatal error) only ``JOIN_ELECTION``,
:class:`QuitElection` and ``TERMINATE`` do anything: an answer or a watch of a session
that is being dropped changes nothing (Hadoop's ``wantToBeInElection`` and
``isStaleClient`` checks). In the election, an event a state has no entry for in
:data:`TRANSITIONS` is a no-op, as in Hadoop (a lock event while the elector is already
where it leads).

References: ActiveStandbyElector.processResult (create and exists callbacks),
processWatchEvent, becomeActive / becomeStandby / enterNeutralMode, reJoinElection,
fatalError; HADOOP-8163 for the breadcrumb and fencing the old active.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

__all__ = [
    "SLEEP_AFTER_FAILURE_TO_BECOME_ACTIVE_S",
    "TRANSITIONS",
    "Action",
    "BecameActive",
    "BecomeActive",
    "CreateFailure",
    "CreateLockFailed",
    "Do",
    "Election",
    "ElectorState",
    "Event",
    "Fatal",
    "Happened",
    "QuitElection",
    "ScheduleJoin",
    "lock_seen",
    "step",
]

#: Hadoop's SLEEP_AFTER_FAILURE_TO_BECOME_ACTIVE: let another node try first.
SLEEP_AFTER_FAILURE_TO_BECOME_ACTIVE_S = 1.0


class ElectorState(str, enum.Enum):
    """ActiveStandbyElector.State."""

    INIT = "INIT"
    ACTIVE = "ACTIVE"
    STANDBY = "STANDBY"
    NEUTRAL = "NEUTRAL"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class Election:
    """The machine's state: Hadoop's ``state`` and ``wantToBeInElection``."""

    state: ElectorState = ElectorState.INIT
    in_election: bool = False


# ---- events: what happened -----------------------------------------------------------------


class Happened(enum.Enum):
    """The events that carry nothing more than their name."""

    #: The controller asks to be a candidate (joinElection).
    JOIN_ELECTION = "join-election"
    #: The controller shuts down (terminateConnection).
    TERMINATE = "terminate"
    #: A scheduled join runs (joinElectionInternal).
    JOIN_DUE = "join-due"
    #: A connected ZooKeeper session exists (reEstablishSession succeeded).
    SESSION_READY = "session-ready"
    #: ZooKeeper could not be reached within the session timeout.
    SESSION_FAILED = "session-failed"
    #: Our create of the lock succeeded: we won (create callback, Code.OK).
    LOCK_CREATED = "lock-created"
    #: Somebody holds the lock (create callback, NODEEXISTS).
    LOCK_EXISTS = "lock-exists"
    #: The watched lock's ephemeral owner is our session (exists callback).
    LOCK_IS_OURS = "lock-is-ours"
    #: The watched lock belongs to another session.
    LOCK_IS_OTHERS = "lock-is-others"
    #: There is no lock to watch (exists callback, NONODE).
    LOCK_IS_GONE = "lock-is-gone"
    #: Watching the lock failed on the connection: the session events bring us back.
    WATCH_FAILED = "watch-failed"
    #: Fencing, the breadcrumb or the controller's become_active failed (Hadoop:
    #: "Exception handling the winning of election").
    ACTIVATION_FAILED = "activation-failed"
    #: The lock's watch fired: NodeDeleted.
    LOCK_DELETED = "lock-deleted"
    #: The lock's watch fired with any other node event.
    LOCK_CHANGED = "lock-changed"
    #: The connection to ZooKeeper was lost; the session may live on (Disconnected).
    SESSION_SUSPENDED = "session-suspended"
    #: The session expired (Expired): its lock is gone.
    SESSION_LOST = "session-lost"
    #: The connection is back, within the same session (SyncConnected).
    SESSION_CONNECTED = "session-connected"


@dataclass(frozen=True)
class QuitElection:
    """The controller leaves (quitElection); ``need_fence``: leave the breadcrumb."""

    need_fence: bool


class CreateFailure(enum.Enum):
    """Why creating the lock failed, when it was neither created nor there: NOAUTH (the
    credentials of ha.zookeeper.auth do not match the parent's ACL), NONODE (the parent
    znode is missing: no zkfc -formatZK), or the connection (lost or timed out, or the
    session expired)."""

    NO_AUTH = "no-auth"
    NO_PARENT = "no-parent"
    CONNECTION = "connection"


@dataclass(frozen=True)
class CreateLockFailed:
    """The create callback's other answers: fatal, or try again (CONNECTION)."""

    cause: CreateFailure


@dataclass(frozen=True)
class BecameActive:
    """Fencing, the breadcrumb and the controller's become_active succeeded."""

    watch_after: bool


Event = Happened | QuitElection | CreateLockFailed | BecameActive


def lock_seen(owner_session: int | None, own_session: int | None) -> Happened:
    """The exists callback's verdict, given the lock's ephemeral owner (None: no lock) and
    our session: ours (a reconnect, or a retried create, within the session keeps it),
    someone else's, or gone."""
    if owner_session is None:
        return Happened.LOCK_IS_GONE
    if own_session is not None and owner_session == own_session:
        return Happened.LOCK_IS_OURS
    return Happened.LOCK_IS_OTHERS


# ---- actions: what the elector does -------------------------------------------------------


class Do(enum.Enum):
    """The actions that carry nothing more than their name."""

    #: Connect unless connected: answers SESSION_READY or SESSION_FAILED.
    ENSURE_SESSION = "ensure-session"
    #: Create the ephemeral lock with our data: LOCK_CREATED, LOCK_EXISTS, CreateLockFailed.
    CREATE_LOCK = "create-lock"
    #: Watch the lock (monitorActiveStatus): LOCK_IS_OURS, _OTHERS, _GONE or WATCH_FAILED.
    WATCH_LOCK = "watch-lock"
    #: The controller's become_standby.
    NOTIFY_STANDBY = "notify-standby"
    #: The controller's enter_neutral_mode.
    NOTIFY_NEUTRAL = "notify-neutral"
    #: Delete our own breadcrumb: we leave cleanly, nothing to fence.
    DELETE_BREADCRUMB = "delete-breadcrumb"
    #: Close the ZooKeeper session (the lock goes with it).
    CLOSE_SESSION = "close-session"


@dataclass(frozen=True)
class ScheduleJoin:
    """JOIN_DUE after ``delay_s``; with ``new_session``, drop the session first, releasing
    the lock if held (Hadoop's reJoinElection)."""

    delay_s: float
    new_session: bool = False


@dataclass(frozen=True)
class BecomeActive:
    """Fence the breadcrumb's node, write ours, call become_active: BecameActive or
    ACTIVATION_FAILED. ``watch_after``: watch our own lock afterwards (after a create)."""

    watch_after: bool


@dataclass(frozen=True)
class Fatal:
    """Close the session and tell the controller the election cannot go on."""

    cause: CreateFailure


Action = Do | ScheduleJoin | BecomeActive | Fatal


# ---- the table ---------------------------------------------------------------------------------

INIT, ACTIVE, STANDBY, NEUTRAL = ElectorState
#: A transition: the new state (None: unchanged) and the actions, in order.
Transition = tuple["ElectorState | None", tuple[Action, ...]]

_RETRY_JOIN = ScheduleJoin(SLEEP_AFTER_FAILURE_TO_BECOME_ACTIVE_S)
_REJOIN_AFTER_FAILURE = ScheduleJoin(SLEEP_AFTER_FAILURE_TO_BECOME_ACTIVE_S, new_session=True)
#: Hadoop's enterNeutralMode: tells the controller only when the state changes.
_NEUTRAL: dict[ElectorState, Transition] = {
    s: (NEUTRAL, () if s is NEUTRAL else (Do.NOTIFY_NEUTRAL,)) for s in ElectorState
}


def _everywhere(
    event: Event, transition: Transition
) -> dict[tuple[ElectorState, Event], Transition]:
    return {(s, event): transition for s in ElectorState}


#: (state, event) -> (new state or None for unchanged, actions), in the election.
TRANSITIONS: dict[tuple[ElectorState, Event], Transition] = {
    # joinElectionInternal: a session first, then the lock.
    **_everywhere(Happened.JOIN_DUE, (None, (Do.ENSURE_SESSION,))),
    **_everywhere(Happened.SESSION_READY, (None, (Do.CREATE_LOCK,))),
    **_everywhere(Happened.SESSION_FAILED, (None, (_RETRY_JOIN,))),
    # The create callback: won (become active, then watch our lock: if it goes — deleted
    # by hand, a -formatZK -force — we must notice); lost (watch the winner's);
    # refused (fatal); interrupted (try again after a second).
    (INIT, Happened.LOCK_CREATED): (None, (BecomeActive(watch_after=True),)),
    (STANDBY, Happened.LOCK_CREATED): (None, (BecomeActive(watch_after=True),)),
    (NEUTRAL, Happened.LOCK_CREATED): (None, (BecomeActive(watch_after=True),)),
    (ACTIVE, Happened.LOCK_CREATED): (None, (Do.WATCH_LOCK,)),  # becomeActive: already active
    **_everywhere(Happened.LOCK_EXISTS, (None, (Do.WATCH_LOCK,))),
    **_everywhere(CreateLockFailed(CreateFailure.CONNECTION), (None, (_RETRY_JOIN,))),
    # The exists callback (monitorActiveStatus).
    (INIT, Happened.LOCK_IS_OURS): (None, (BecomeActive(watch_after=False),)),
    (STANDBY, Happened.LOCK_IS_OURS): (None, (BecomeActive(watch_after=False),)),
    (NEUTRAL, Happened.LOCK_IS_OURS): (None, (BecomeActive(watch_after=False),)),
    (INIT, Happened.LOCK_IS_OTHERS): (STANDBY, (Do.NOTIFY_STANDBY,)),
    (ACTIVE, Happened.LOCK_IS_OTHERS): (STANDBY, (Do.NOTIFY_STANDBY,)),
    (NEUTRAL, Happened.LOCK_IS_OTHERS): (STANDBY, (Do.NOTIFY_STANDBY,)),
    (INIT, Happened.LOCK_IS_GONE): (None, (Do.CREATE_LOCK,)),
    (STANDBY, Happened.LOCK_IS_GONE): (None, (Do.CREATE_LOCK,)),
    (NEUTRAL, Happened.LOCK_IS_GONE): (None, (Do.CREATE_LOCK,)),
    # An active whose lock is gone stops claiming anything before it tries to take it again.
    (ACTIVE, Happened.LOCK_IS_GONE): (NEUTRAL, (Do.NOTIFY_NEUTRAL, Do.CREATE_LOCK)),
    # becomeActive's outcome: a failure drops the session (the lock with it) and joins
    # again after a second, so that another node may win.
    **_everywhere(BecameActive(watch_after=True), (ACTIVE, (Do.WATCH_LOCK,))),
    **_everywhere(BecameActive(watch_after=False), (ACTIVE, ())),
    **_everywhere(Happened.ACTIVATION_FAILED, (INIT, (_REJOIN_AFTER_FAILURE,))),
    # processWatchEvent, a node event on the lock.
    (INIT, Happened.LOCK_DELETED): (None, (Do.CREATE_LOCK,)),
    (STANDBY, Happened.LOCK_DELETED): (None, (Do.CREATE_LOCK,)),
    (NEUTRAL, Happened.LOCK_DELETED): (None, (Do.CREATE_LOCK,)),
    (ACTIVE, Happened.LOCK_DELETED): (NEUTRAL, (Do.NOTIFY_NEUTRAL, Do.CREATE_LOCK)),
    **_everywhere(Happened.LOCK_CHANGED, (None, (Do.WATCH_LOCK,))),
    # processWatchEvent, a session event. Disconnected: neutral (nothing changes, see the
    # elector's module docstring); Expired: neutral, and rejoin with a new session at once;
    # SyncConnected: look at the lock again.
    **{(s, Happened.SESSION_SUSPENDED): t for s, t in _NEUTRAL.items()},
    **{
        (s, Happened.SESSION_LOST): (INIT, (*t[1], ScheduleJoin(0.0, new_session=True)))
        for s, t in _NEUTRAL.items()
    },
    **_everywhere(Happened.SESSION_CONNECTED, (None, (Do.WATCH_LOCK,))),
}


def step(election: Election, event: Event) -> tuple[Election, tuple[Action, ...]]:
    """The elector's next state and what it does, for ``event`` (see the module docstring)."""
    if event is Happened.JOIN_ELECTION:
        if election.in_election:
            return election, ()
        return replace(election, in_election=True), (ScheduleJoin(0.0),)
    if isinstance(event, QuitElection):
        clean = election.state is ElectorState.ACTIVE and not event.need_fence
        actions = (Do.DELETE_BREADCRUMB, Do.CLOSE_SESSION) if clean else (Do.CLOSE_SESSION,)
        return Election(), actions
    if event is Happened.TERMINATE:
        return Election(), (Do.CLOSE_SESSION,)
    if isinstance(event, CreateLockFailed) and event.cause is not CreateFailure.CONNECTION:
        if not election.in_election:
            return election, ()
        return Election(), (Fatal(event.cause),)
    if not election.in_election:
        return election, ()
    new_state, actions = TRANSITIONS.get((election.state, event), (None, ()))
    return replace(election, state=new_state or election.state), actions
