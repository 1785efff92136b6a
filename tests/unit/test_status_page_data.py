"""What the status pages show that is decided in Python: a JournalNode's sync state (a pure
rule) and the HA peers' states (HAPeerStatus, with a fake fetch and clock: never waits on
a peer)."""

from __future__ import annotations

import threading
import time

import pytest

from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.ha.ha_util import NameNodeAddress
from hadoop_qjm.namenode.ha_peer_status import HAPeerStatus
from hadoop_qjm.namenode.name_node_metrics import LAGGING_MS, journal_node_sync_state

pytestmark = pytest.mark.timeout(30)


@pytest.mark.parametrize(
    ("out_of_sync", "lag_txns", "lag_ms", "expected"),
    [
        (False, 0, 0, "in sync"),
        (False, 5, LAGGING_MS - 1, "in sync"),  # a batch behind for a moment
        (False, 0, 10 * LAGGING_MS, "in sync"),  # nothing unacknowledged
        (False, 1, LAGGING_MS, "lagging"),
        (True, 0, 0, "out of sync"),
        (True, 7, 10 * LAGGING_MS, "out of sync"),
    ],
)
def test_journal_node_sync_state(out_of_sync, lag_txns, lag_ms, expected) -> None:
    assert journal_node_sync_state(out_of_sync, lag_txns, lag_ms) == expected


def test_a_name_node_not_writing_shows_no_journal_node_in_sync() -> None:
    """Issue 33 item 12: a standby's channels never wrote; whatever their counters say."""
    for out_of_sync, lag in ((False, 0), (True, 0), (False, 7)):
        state = journal_node_sync_state(
            out_of_sync, lag, 10 * LAGGING_MS, writing=False, ha_state="standby"
        )
        assert state == "not writing (standby)"
    assert journal_node_sync_state(False, 0, 0, writing=False) == "not writing"


class FakeFetch:
    """Answers each fetch from ``answers[base_url]`` once released (a state or an error)."""

    def __init__(self, answers: dict[str, object]) -> None:
        self.answers = answers
        self.calls: list[str] = []
        self.release = threading.Event()

    def __call__(self, base_url: str, ssl_context: object, timeout_s: float) -> str:
        self.calls.append(base_url)
        self.release.wait(10)
        answer = self.answers[base_url]
        if isinstance(answer, Exception):
            raise answer
        return str(answer)


def wait_for_state(status: HAPeerStatus, state: str) -> dict:
    """nn2's entry once it shows ``state`` (the fake clock stands still: no new fetch)."""
    deadline = time.monotonic() + 10
    while (entry := status.snapshot()[0])["State"] != state:
        assert time.monotonic() < deadline, f"nn2 never became {state}: {entry}"
        time.sleep(0.01)
    return entry


def peers() -> list[NameNodeAddress]:
    return [
        NameNodeAddress("nn2", ("127.0.0.1", 1), ("127.0.0.1", 2)),
        NameNodeAddress("nn3", ("127.0.0.1", 3), None),  # no HTTP address: never fetched
    ]


def test_peer_states_are_fetched_in_the_background_and_kept() -> None:
    now = [1000.0]
    fetch = FakeFetch({"http://127.0.0.1:2": "standby"})
    status = HAPeerStatus(Configuration(), peers, fetch=fetch, clock=lambda: now[0])
    # The first snapshot does not wait for the (blocked) fetch.
    first = status.snapshot()
    assert [(p["NamenodeId"], p["State"], p["HttpAddress"]) for p in first] == [
        ("nn2", "unknown", "http://127.0.0.1:2"),
        ("nn3", "unknown", None),
    ]
    status.snapshot()  # one fetch in flight per peer: no second one
    fetch.release.set()
    nn2 = wait_for_state(status, "standby")
    assert nn2["LastContactTime"] == 1_000_000
    assert fetch.calls == ["http://127.0.0.1:2"]  # younger than max_age_s: not asked again

    fetch.answers["http://127.0.0.1:2"] = ConnectionRefusedError("Connection refused")
    now[0] += status.max_age_s
    nn2 = wait_for_state(status, "unreachable")
    assert "Connection refused" in nn2["Error"]
    assert fetch.calls == ["http://127.0.0.1:2"] * 2
    assert nn2["LastContactTime"] == 1_000_000  # when it last answered


def test_rpc_counts_add_up_over_threads_also_ended_ones() -> None:
    """NameNodeMetrics counts each handler thread's calls in dicts of its own (no lock per
    call): a scrape adds every thread's, those of threads that ended included."""
    from hadoop_qjm.namenode.name_node_metrics import NameNodeMetrics

    class _NoNameNode:
        core = None
        rpc_server = None

    metrics = NameNodeMetrics(_NoNameNode())

    def calls(n: int, ok: bool = True) -> None:
        for _ in range(n):
            metrics.observe_rpc("mkdirs", ok)

    for n in (3, 4):  # two threads that end; a third one's start folds their counts
        thread = threading.Thread(target=calls, args=(n,))
        thread.start()
        thread.join()
    calls(5)
    calls(2, ok=False)
    assert metrics.calls() == {"mkdirs": 14}
    assert metrics.activity_bean()["MkdirsOps"] == 14
    text = {m.name: {s.labels["method"]: s.value for s in m.samples} for m in metrics.collect()}
    assert text["namenode_rpc_calls"]["mkdirs"] == 14
    assert text["namenode_rpc_failures"]["mkdirs"] == 2
