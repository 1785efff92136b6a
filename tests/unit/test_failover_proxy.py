"""FailoverNameNodeProxy over hand-written fake NameNodes: which errors fail over, the
bound on failovers, the backoff between rounds, and where the next call starts."""

from __future__ import annotations

import random

import pytest

from hadoop_qjm.common.exceptions import FileNotFoundException, IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.ha.failover_proxy import (
    FAILOVER_METHODS,
    IDEMPOTENT_METHODS,
    FailoverDecision,
    FailoverNameNodeProxy,
    failover_decision,
    failover_sleep_s,
    ha_nameservice_of_uri,
    namenode_proxy_for_uri,
    namenode_proxy_from_conf,
)
from hadoop_qjm.namenode.protocol.client import NameNodeProxy
from hadoop_qjm.namenode.protocol.exceptions import StandbyException
from hadoop_qjm.qjournal.protocol.exceptions import (
    ConnectException,
    RemoteException,
    SocketTimeoutException,
)

pytestmark = pytest.mark.timeout(30)

NS = "mycluster"


def ha_conf(nnids=("nn1", "nn2"), **extra: object) -> Configuration:
    conf = Configuration()
    conf.set("dfs.nameservices", NS)
    conf.set(f"dfs.ha.namenodes.{NS}", ",".join(nnids))
    for i, nnid in enumerate(nnids):
        conf.set(f"dfs.namenode.rpc-address.{NS}.{nnid}", f"127.0.0.1:{9000 + i}")
    for key, value in extra.items():
        conf.set(key, value)
    return conf


def lost_after_send() -> IOException:
    """What NameNodeProxy raises when the connection dies after the call went out."""
    try:
        raise ConnectionResetError("Connection reset by peer")
    except ConnectionResetError as e:
        try:
            raise IOException(f"Call to 127.0.0.1:9000 failed: {e}") from e
        except IOException as wrapped:
            return wrapped


class FakeNameNode:
    """Answers from a script: each call pops the next outcome (an exception is raised,
    anything else returned); an empty script answers ``default``."""

    def __init__(self, nnid: str, calls: list, default: object = True) -> None:
        self.nnid = nnid
        self.script: list = []
        self.default = default
        self.calls = calls
        self.closed = False

    def _answer(self, method: str):
        self.calls.append((self.nnid, method))
        outcome = self.script.pop(0) if self.script else self.default
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)
        return lambda *args, **kwargs: self._answer(method)

    def close(self) -> None:
        self.closed = True


class Cluster:
    """Fake NameNodes by id, a recorded sleep, and a FailoverNameNodeProxy over them."""

    def __init__(self, conf: Configuration | None = None, seed: int = 7) -> None:
        self.conf = conf or ha_conf()
        self.calls: list[tuple[str, str]] = []
        self.sleeps: list[float] = []
        self.nodes: dict[str, FakeNameNode] = {}
        self.proxy = FailoverNameNodeProxy(
            self.conf,
            NS,
            proxy_factory=self._make,
            sleep=self.sleeps.append,
            rng=random.Random(seed),
        )

    def _make(self, address) -> FakeNameNode:
        node = self.nodes.setdefault(address.nnid, FakeNameNode(address.nnid, self.calls))
        return node

    def script(self, nnid: str, *outcomes: object) -> None:
        self.nodes.setdefault(nnid, FakeNameNode(nnid, self.calls)).script.extend(outcomes)


# ---- the rule --------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("error", "idempotent", "expected"),
    [
        (StandbyException("standby"), False, FailoverDecision.FAILOVER_AND_RETRY),
        (StandbyException("standby"), True, FailoverDecision.FAILOVER_AND_RETRY),
        (ConnectException("refused"), False, FailoverDecision.FAILOVER_AND_RETRY),
        (SocketTimeoutException("timed out"), True, FailoverDecision.FAILOVER_AND_RETRY),
        (SocketTimeoutException("timed out"), False, FailoverDecision.FAIL),
        (lost_after_send(), True, FailoverDecision.FAILOVER_AND_RETRY),
        (lost_after_send(), False, FailoverDecision.FAIL),
        # Errors the NameNode sent back are answers, even an IOException.
        (IOException("remote failure"), True, FailoverDecision.FAIL),
        (RemoteException("x", class_name="org.Foo"), True, FailoverDecision.FAIL),
        (FileNotFoundException("/nope"), True, FailoverDecision.FAIL),
    ],
)
def test_failover_decision(error, idempotent, expected) -> None:
    assert failover_decision(error, idempotent) is expected


def test_idempotent_methods_follow_hadoops_annotations() -> None:
    assert {"mkdirs", "get_file_info", "get_listing", "set_permission", "set_owner"} <= (
        IDEMPOTENT_METHODS
    )
    for at_most_once in ("create", "delete", "rename", "rename2", "roll_edits", "save_namespace"):
        assert at_most_once in FAILOVER_METHODS and at_most_once not in IDEMPOTENT_METHODS
    for ha_method in ("transition_to_active", "transition_to_standby", "get_service_status"):
        assert ha_method not in FAILOVER_METHODS


def test_sleep_is_exponential_capped_and_randomized() -> None:
    rng = random.Random(1)
    for round_ in range(1, 10):
        pause = failover_sleep_s(round_, 500, 15000, rng)
        capped = min(500 * 2**round_, 15000) / 1000.0
        assert 0.5 * capped <= pause < 1.5 * capped


# ---- the proxy -------------------------------------------------------------------------------------
def test_standby_exception_fails_over_to_the_next_namenode() -> None:
    c = Cluster()
    c.script("nn1", StandbyException("Operation category WRITE is not supported"))
    assert c.proxy.create("/f") is True  # not idempotent: a standby did not execute it
    assert c.calls == [("nn1", "create"), ("nn2", "create")]
    assert c.sleeps == []  # the first failover is immediate


def test_connect_refused_fails_over_even_for_a_non_idempotent_call() -> None:
    c = Cluster()
    c.script("nn1", ConnectException("Call to 127.0.0.1:9000 failed on connection exception"))
    assert c.proxy.delete("/f", True) is True
    assert c.calls == [("nn1", "delete"), ("nn2", "delete")]


def test_lost_after_send_is_retried_only_for_idempotent_methods() -> None:
    c = Cluster()
    c.script("nn1", lost_after_send())
    assert c.proxy.mkdirs("/d") is True
    assert c.calls == [("nn1", "mkdirs"), ("nn2", "mkdirs")]

    c = Cluster()
    timeout = SocketTimeoutException("Call to 127.0.0.1:9000 timed out after 1 s")
    c.script("nn1", timeout)
    with pytest.raises(SocketTimeoutException) as raised:
        c.proxy.rename("/a", "/b")
    assert raised.value is timeout
    assert c.calls == [("nn1", "rename")]
    c.script("nn1", lost_after_send())
    with pytest.raises(IOException, match="Connection reset"):
        c.proxy.roll_edits()
    assert c.calls[-1] == ("nn1", "roll_edits") and len(c.calls) == 2


def test_an_answer_is_not_retried() -> None:
    c = Cluster()
    c.script("nn1", FileNotFoundException("/nope"))
    with pytest.raises(FileNotFoundException):
        c.proxy.get_file_info("/nope")
    assert c.calls == [("nn1", "get_file_info")]


def test_failovers_are_bounded_and_the_last_error_is_raised() -> None:
    c = Cluster(ha_conf(**{"dfs.client.failover.max.attempts": 5}))
    errors = [StandbyException(f"standby {i}") for i in range(10)]
    for i, error in enumerate(errors):
        c.script("nn1" if i % 2 == 0 else "nn2", error)
    with pytest.raises(StandbyException) as raised:
        c.proxy.mkdirs("/d")
    # 1 call + 5 failovers, alternating; the sixth error is raised (every NameNode was
    # standby in the last round: with the hint of test_all_standby_says_none_is_active).
    assert [nnid for nnid, _ in c.calls] == ["nn1", "nn2"] * 3
    assert raised.value.__cause__ is errors[5]
    assert str(raised.value).startswith("standby 5; ")


def test_all_standby_says_none_is_active() -> None:
    """Both NameNodes restarted, none made active: the last error says so, and how."""
    c = Cluster(ha_conf(**{"dfs.client.failover.max.attempts": 3}))
    standby = StandbyException("Operation category READ is not supported in state standby")
    for nnid in ("nn1", "nn2"):
        c.nodes[nnid] = FakeNameNode(nnid, c.calls, default=standby)
    with pytest.raises(StandbyException) as raised:
        c.proxy.get_listing("/", "")
    assert [nnid for nnid, _ in c.calls] == ["nn1", "nn2"] * 2
    assert str(raised.value) == (
        "Operation category READ is not supported in state standby; no NameNode of "
        f"nameservice {NS} is active (all are standby): run 'hdfs-py haadmin "
        "-transitionToActive <nnid>', or start the zkfc failover controllers if automatic "
        "failover is enabled"
    )
    assert raised.value.__cause__ is standby


@pytest.mark.parametrize("attempts", [0, 1, 2])
def test_standby_and_unreachable_keeps_the_last_error(attempts) -> None:
    """One NameNode standby, the other down: maybe it is active; the error is unchanged.
    (0 failovers: only one NameNode was asked, so nothing is known of the other.)"""
    c = Cluster(ha_conf(**{"dfs.client.failover.max.attempts": attempts}))
    errors = {
        "nn1": StandbyException("Operation category READ is not supported in state standby"),
        "nn2": ConnectException("Connection refused"),
    }
    for nnid, error in errors.items():
        c.nodes[nnid] = FakeNameNode(nnid, c.calls, default=error)
    with pytest.raises((StandbyException, ConnectException)) as raised:
        c.proxy.get_listing("/", "")
    last = c.calls[-1][0]
    assert raised.value is errors[last]
    assert "no NameNode" not in str(raised.value)


def test_a_standby_round_before_an_unreachable_one_keeps_the_last_error() -> None:
    """Only the last round counts: all standby first, then nn2 goes down."""
    c = Cluster(ha_conf(**{"dfs.client.failover.max.attempts": 3}))
    down = ConnectException("Connection refused")
    c.script("nn1", StandbyException("standby"), StandbyException("standby"))
    c.script("nn2", StandbyException("standby"), down)
    with pytest.raises(ConnectException) as raised:
        c.proxy.get_listing("/", "")
    assert raised.value is down


def test_backoff_sleeps_after_each_full_round_with_the_injected_sleep() -> None:
    base, cap = 100, 1000
    conf = ha_conf(
        ("nn1", "nn2", "nn3"),
        **{
            "dfs.client.failover.max.attempts": 7,
            "dfs.client.failover.sleep.base.millis": base,
            "dfs.client.failover.sleep.max.millis": cap,
        },
    )
    c = Cluster(conf, seed=3)
    c.script("nn1", *[ConnectException("refused")] * 3)
    c.script("nn2", *[ConnectException("refused")] * 2, True)  # answers in the third round
    c.script("nn3", *[ConnectException("refused")] * 2)
    # nn1 nn2 nn3 | sleep | nn1 nn2 nn3 | sleep | nn1 nn2 -> ok
    assert c.proxy.get_transaction_id() is True
    assert [nnid for nnid, _ in c.calls] == ["nn1", "nn2", "nn3"] * 2 + ["nn1", "nn2"]
    assert len(c.sleeps) == 2
    expected_rng = random.Random(3)
    assert c.sleeps == [failover_sleep_s(r, base, cap, expected_rng) for r in (1, 2)]
    assert 0.1 <= c.sleeps[0] < 0.3 and 0.2 <= c.sleeps[1] < 0.6


def test_the_next_call_starts_at_the_namenode_that_answered_last() -> None:
    c = Cluster()
    c.script("nn1", StandbyException("standby"))
    c.proxy.mkdirs("/a")
    assert c.proxy.current.nnid == "nn2"
    c.proxy.get_file_info("/a")
    assert c.calls == [("nn1", "mkdirs"), ("nn2", "mkdirs"), ("nn2", "get_file_info")]
    # nn2 steps down: the proxy goes round to nn1 and stays there.
    c.script("nn2", StandbyException("standby"))
    c.proxy.set_owner("/a", "u", None)
    c.proxy.set_times("/a", 1, 1)
    assert c.calls[-3:] == [("nn2", "set_owner"), ("nn1", "set_owner"), ("nn1", "set_times")]


def test_list_status_fails_over_between_batches() -> None:
    class Listing:
        def __init__(self, names, has_more):
            self.partial_listing = names
            self.has_more = has_more
            self.last_name = names[-1] if names else ""

    c = Cluster()
    c.script("nn1", Listing(["a", "b"], True), StandbyException("standby"))
    c.script("nn2", Listing(["c"], False))
    assert list(c.proxy.list_status("/")) == ["a", "b", "c"]


def test_only_client_and_namenode_protocol_methods_and_close() -> None:
    c = Cluster()
    with pytest.raises(AttributeError):
        c.proxy.transition_to_active  # noqa: B018 - addresses one NameNode, not a nameservice
    c.proxy.mkdirs("/a")
    c.proxy.close()
    assert c.nodes["nn1"].closed
    with pytest.raises(IOException, match="closed"):
        c.proxy.mkdirs("/b")


# ---- choosing a proxy from the configuration ---------------------------------------------------------
def test_proxy_from_conf_uses_failover_only_for_an_ha_nameservice() -> None:
    conf = ha_conf(**{"fs.defaultFS": f"hdfs://{NS}"})
    with namenode_proxy_from_conf(conf) as proxy:
        assert isinstance(proxy, FailoverNameNodeProxy)
        assert [nn.nnid for nn in proxy.namenodes] == ["nn1", "nn2"]
    conf.set("fs.defaultFS", "hdfs://127.0.0.1:8020")
    with namenode_proxy_from_conf(conf) as proxy:
        assert isinstance(proxy, NameNodeProxy) and proxy.port == 8020
    # One NameNode in the nameservice: no failover.
    single = ha_conf(("nn1",), **{"fs.defaultFS": f"hdfs://{NS}"})
    assert ha_nameservice_of_uri(single, f"hdfs://{NS}") is None
    # Case is kept (urlsplit's hostname would lower it); a port means a host.
    mixed = ha_conf()
    mixed.set("dfs.nameservices", "MyCluster")
    mixed.set("dfs.ha.namenodes.MyCluster", "nn1,nn2")
    assert ha_nameservice_of_uri(mixed, "hdfs://MyCluster/user") == "MyCluster"
    assert ha_nameservice_of_uri(conf, f"hdfs://{NS}:8020/") is None
    assert isinstance(namenode_proxy_for_uri(conf, f"hdfs://{NS}/x"), FailoverNameNodeProxy)
