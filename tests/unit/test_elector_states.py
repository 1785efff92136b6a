"""elector_states: the ActiveStandbyElector's transition table (STYLE.md habits 1 and 9).

Every (state, in the election or not, event) against :class:`HadoopElector`, a literal
reading of Hadoop's ActiveStandbyElector.java written as its methods read (processResult of
the create and of the exists callbacks, processWatchEvent, becomeActive / becomeStandby /
enterNeutralMode, reJoinElection, fatalError); then hypothesis runs random event sequences
through both. An asynchronous ZooKeeper call, or becomeActive's fencing and callback, is
the action that starts it; its answer is a later event.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hadoop_qjm.ha import elector_states as es
from hadoop_qjm.ha.elector_states import Do, Election, ElectorState, Event, Happened

pytestmark = pytest.mark.timeout(120)

INIT, ACTIVE, STANDBY, NEUTRAL = ElectorState
SLEEP = es.SLEEP_AFTER_FAILURE_TO_BECOME_ACTIVE_S

#: Every event: the named ones and every value of the others.
EVENTS: tuple[Event, ...] = (
    *Happened,
    *(es.QuitElection(need_fence) for need_fence in (True, False)),
    *(es.CreateLockFailed(cause) for cause in es.CreateFailure),
    *(es.BecameActive(watch_after) for watch_after in (True, False)),
)
ELECTIONS = tuple(Election(s, wanted) for s in ElectorState for wanted in (False, True))


class HadoopElector:
    """ActiveStandbyElector.java, read literally, with the port's deliberate departures
    marked PORT (they are the elector's behaviour before the table, kept as it was)."""

    def __init__(self, election: Election) -> None:
        self.state = election.state
        self.want = election.in_election
        self.done: list[es.Action] = []

    @property
    def election(self) -> Election:
        return Election(self.state, self.want)

    # -- the helpers --
    def become_standby(self) -> None:
        if self.state is not STANDBY:
            self.state = STANDBY
            self.done.append(Do.NOTIFY_STANDBY)

    def enter_neutral_mode(self) -> None:
        if self.state is not NEUTRAL:
            self.state = NEUTRAL
            self.done.append(Do.NOTIFY_NEUTRAL)

    def monitor_active_status(self) -> None:
        self.done.append(Do.WATCH_LOCK)

    def join_election_internal(self) -> None:
        # PORT: the lock is created on a session made (or checked) first, asynchronously.
        self.done.append(Do.CREATE_LOCK)

    def re_join_election(self, sleep_s: float) -> None:
        # terminateConnection; sleepFor; joinElectionInternal — the port schedules the join
        # and drops the session in one action; state goes back to INIT (reset()).
        self.state = INIT
        self.done.append(es.ScheduleJoin(sleep_s, new_session=True))

    def fatal_error(self, cause: es.CreateFailure) -> None:
        self.state = INIT  # reset()
        self.want = False  # terminateConnection
        self.done.append(es.Fatal(cause))

    def become_active(self, watch_after: bool) -> None:
        if self.state is ACTIVE:  # "already active": true at once
            self.after_become_active(True, watch_after)
        else:
            self.done.append(es.BecomeActive(watch_after))

    def after_become_active(self, succeeded: bool, watch_after: bool) -> None:
        if succeeded:
            self.state = ACTIVE
            if watch_after:
                self.monitor_active_status()
        else:
            self.re_join_election(SLEEP)  # reJoinElectionAfterFailureToBecomeActive

    # -- the public calls --
    def join_election(self) -> None:
        if self.want:
            return  # PORT: a second join while in the election is a no-op
        self.want = True
        self.done.append(es.ScheduleJoin(0.0))

    def quit_election(self, need_fence: bool) -> None:
        if self.state is ACTIVE and not need_fence:
            self.done.append(Do.DELETE_BREADCRUMB)  # tryDeleteOwnBreadCrumbNode
        self.done.append(Do.CLOSE_SESSION)  # terminateConnection
        self.want = False
        self.state = INIT  # reset()

    def handle(self, event: Event) -> None:
        if event is Happened.JOIN_ELECTION:
            return self.join_election()
        if isinstance(event, es.QuitElection):
            return self.quit_election(event.need_fence)
        if event is Happened.TERMINATE:
            self.want, self.state = False, INIT
            self.done.append(Do.CLOSE_SESSION)
            return None
        if not self.want:  # isStaleClient, "Got a ... result after quitting election"
            return None
        if event is Happened.JOIN_DUE:
            self.done.append(Do.ENSURE_SESSION)  # reEstablishSession
        elif event is Happened.SESSION_READY:
            self.join_election_internal()
        elif event is Happened.SESSION_FAILED:
            # PORT: Hadoop is fatal after maxRetryNum tries; the port retries every second.
            self.done.append(es.ScheduleJoin(SLEEP))
        elif event is Happened.LOCK_CREATED:  # processResult (create), Code.OK
            self.become_active(watch_after=True)
        elif event is Happened.LOCK_EXISTS:  # NODEEXISTS
            # PORT: standby comes from the exists answer, not before it.
            self.monitor_active_status()
        elif isinstance(event, es.CreateLockFailed):
            if event.cause is es.CreateFailure.CONNECTION:
                # PORT: Hadoop retries the create maxRetryNum times, then is fatal.
                self.done.append(es.ScheduleJoin(SLEEP))
            else:
                self.fatal_error(event.cause)
        elif event is Happened.LOCK_IS_OURS:  # processResult (exists): our ephemeral owner
            if self.state is not ACTIVE:
                self.become_active(watch_after=False)
        elif event is Happened.LOCK_IS_OTHERS:
            self.become_standby()
        elif event is Happened.LOCK_IS_GONE:  # NONODE: "disappeared before we monitored"
            # PORT: only an active enters neutral mode first.
            if self.state is ACTIVE:
                self.enter_neutral_mode()
            self.join_election_internal()
        elif event is Happened.WATCH_FAILED:
            pass  # the session events bring us back
        elif isinstance(event, es.BecameActive):
            self.after_become_active(True, event.watch_after)
        elif event is Happened.ACTIVATION_FAILED:
            self.after_become_active(False, False)
        elif event is Happened.LOCK_DELETED:  # processWatchEvent, NodeDeleted
            if self.state is ACTIVE:
                self.enter_neutral_mode()
            self.join_election_internal()
        elif event is Happened.LOCK_CHANGED:  # NodeDataChanged and the rest
            self.monitor_active_status()
        elif event is Happened.SESSION_SUSPENDED:  # Disconnected
            self.enter_neutral_mode()
        elif event is Happened.SESSION_LOST:  # Expired
            self.enter_neutral_mode()
            self.re_join_election(0.0)
        elif event is Happened.SESSION_CONNECTED:  # SyncConnected
            # PORT: always look again (kazoo reports CONNECTED only after a loss).
            self.monitor_active_status()
        else:
            raise AssertionError(f"unknown event {event!r}")
        return None


def hadoop_step(election: Election, event: Event) -> tuple[Election, tuple[es.Action, ...]]:
    model = HadoopElector(election)
    model.handle(event)
    return model.election, tuple(model.done)


def test_the_event_list_covers_every_event_of_the_table() -> None:
    assert {event for _, event in es.TRANSITIONS} <= set(EVENTS)
    assert len(set(EVENTS)) == len(EVENTS)


@pytest.mark.parametrize(
    ("election", "event"),
    list(itertools.product(ELECTIONS, EVENTS)),
    ids=lambda v: repr(v).replace(" ", ""),
)
def test_every_state_and_event_is_hadoops(election: Election, event: Event) -> None:
    assert es.step(election, event) == hadoop_step(election, event)


#: In the election, what a state does not react to (no entry in the table).
NO_OPS = {
    (ACTIVE, Happened.LOCK_IS_OURS),  # already active
    (STANDBY, Happened.LOCK_IS_OTHERS),  # already standby
    *((s, Happened.WATCH_FAILED) for s in ElectorState),
}


@pytest.mark.parametrize("state", list(ElectorState))
def test_what_is_not_in_the_table_changes_nothing(state: ElectorState) -> None:
    outside = {
        Happened.JOIN_ELECTION,
        Happened.TERMINATE,
        *(e for e in EVENTS if isinstance(e, es.QuitElection)),
    }
    fatal = {e for e in EVENTS if isinstance(e, es.CreateLockFailed)} - {
        es.CreateLockFailed(es.CreateFailure.CONNECTION)
    }
    for event in EVENTS:
        if event in outside or event in fatal:
            continue
        in_table = (state, event) in es.TRANSITIONS
        assert in_table != ((state, event) in NO_OPS), event
        if not in_table:
            assert es.step(Election(state, True), event) == (Election(state, True), ())


@pytest.mark.parametrize("election", ELECTIONS)
def test_outside_the_election_only_join_and_quit_do_anything(election: Election) -> None:
    if election.in_election:
        return
    for event in EVENTS:
        new, actions = es.step(election, event)
        if event is Happened.JOIN_ELECTION:
            assert (new, actions) == (Election(election.state, True), (es.ScheduleJoin(0.0),))
        elif isinstance(event, es.QuitElection) or event is Happened.TERMINATE:
            assert new == Election() and actions[-1] == Do.CLOSE_SESSION
        else:
            assert (new, actions) == (election, ())


def test_a_node_wins_fences_and_watches_its_own_lock() -> None:
    """A whole run: join, connect, create (won), become active, watch; then the lock is
    deleted by hand: neutral, and take it again."""
    election = Election()
    trace = []
    for event in (
        Happened.JOIN_ELECTION,
        Happened.JOIN_DUE,
        Happened.SESSION_READY,
        Happened.LOCK_CREATED,
        es.BecameActive(watch_after=True),
        Happened.LOCK_IS_OURS,
        Happened.LOCK_DELETED,
    ):
        election, actions = es.step(election, event)
        trace.append((election.state, actions))
    assert trace == [
        (INIT, (es.ScheduleJoin(0.0),)),
        (INIT, (Do.ENSURE_SESSION,)),
        (INIT, (Do.CREATE_LOCK,)),
        (INIT, (es.BecomeActive(watch_after=True),)),
        (ACTIVE, (Do.WATCH_LOCK,)),
        (ACTIVE, ()),
        (NEUTRAL, (Do.NOTIFY_NEUTRAL, Do.CREATE_LOCK)),
    ]


@given(
    st.sampled_from(ELECTIONS),
    st.lists(st.sampled_from(EVENTS), max_size=40),
)
def test_random_event_sequences_follow_hadoop(start: Election, events: list[Event]) -> None:
    ours = theirs = start
    for event in events:
        ours, actions = es.step(ours, event)
        theirs, expected = hadoop_step(theirs, event)
        assert (ours, actions) == (theirs, expected), event


@pytest.mark.parametrize(
    ("owner", "own", "expected"),
    [
        (None, 7, Happened.LOCK_IS_GONE),
        (None, None, Happened.LOCK_IS_GONE),
        (7, 7, Happened.LOCK_IS_OURS),  # ours, after a reconnect or a retried create
        (8, 7, Happened.LOCK_IS_OTHERS),  # someone else took it
        (8, None, Happened.LOCK_IS_OTHERS),  # no session: never ours
    ],
)
def test_lock_seen_is_the_exists_callbacks_owner_check(
    owner: int | None, own: int | None, expected: Event
) -> None:
    assert es.lock_seen(owner, own) == expected
