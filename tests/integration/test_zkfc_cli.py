"""``hdfs-py zkfc`` against a real ZooKeeper (one JVM for the module, a chroot per test; the
two tests that kill it have their own), and ActiveStandbyElector
pairs driven in-process against it with fake callbacks. No NameNode runs here: the
configuration names nn1 and nn2 on free ports of 127.0.0.1, and the commands tested stop
before they would talk to a NameNode.

* ``-formatZK``: creates the parent znode; refuses an existing one (exit 2) unless
  ``-force`` or a yes; clears and recreates with either.
* Bad input: one line on stderr, Hadoop's exit status, nothing changed in ZooKeeper.
* ACLs: the parent znode gets exactly ``ha.zookeeper.acl``; other credentials cannot
  create under it, and an elector with them stops with a NOAUTH fatal error.
* The election: one winner; a winner that quits needing fencing is fenced by the next one,
  one that quits cleanly is not; a winner whose become_active fails lets the other win
  and retries a second later.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoAuthError
from kazoo.security import ACL, Id

from hadoop_qjm.ha.active_standby_elector import (
    BREADCRUMB_FILENAME,
    LOCK_FILENAME,
    ActiveStandbyElector,
)
from hadoop_qjm.ha.election_rules import (
    ActiveNodeInfo,
    ZKAcl,
    ZKAuth,
    digest_acl_id,
    parse_acls,
)
from hadoop_qjm.testing.daemon_process import child_env
from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_ha_cluster import free_ports
from hadoop_qjm.testing.mini_zk_cluster import MiniZooKeeperCluster
from hadoop_qjm.testing.name_node_process import write_conf_dir

pytestmark = pytest.mark.timeout(180)

NS = "mycluster"
PARENT = f"/hadoop-ha/{NS}"
WAIT_S = 20.0
#: ZooKeeper's own znodes, present in every tree.
ZK_OWN = "/zookeeper"

ZKFC_AUTH = "digest:hdfs-zkfcs:secret"
ZKFC_ACL = f"digest:{digest_acl_id('hdfs-zkfcs:secret')}:rwcda"


# ---- running the command line ------------------------------------------------------------------


class ZkfcCli:
    """``hdfs-py --config DIR zkfc -nnid nn1 ARGS`` with a configuration of mycluster
    (nn1, nn2 on free ports, automatic failover on, ZooKeeper at ``zk``) plus overrides."""

    def __init__(self, tmp_path: Path, quorum: str) -> None:
        self.tmp_path = tmp_path
        rpc1, rpc2, zkfc1, zkfc2 = free_ports(4)
        self.props: dict[str, object] = {
            "dfs.nameservices": NS,
            f"dfs.ha.namenodes.{NS}": "nn1,nn2",
            f"dfs.namenode.rpc-address.{NS}.nn1": f"127.0.0.1:{rpc1}",
            f"dfs.namenode.rpc-address.{NS}.nn2": f"127.0.0.1:{rpc2}",
            f"dfs.ha.zkfc.port.{NS}.nn1": zkfc1,
            f"dfs.ha.zkfc.port.{NS}.nn2": zkfc2,
            "fs.defaultFS": f"hdfs://{NS}",
            "dfs.ha.automatic-failover.enabled": "true",
            "dfs.ha.fencing.methods": "shell(/bin/true)",
            "ha.zookeeper.quorum": quorum,
            "ha.zookeeper.session-timeout.ms": 3000,
        }
        self._runs = 0

    def run(
        self,
        *args: str,
        overrides: Mapping[str, object | None] | None = None,
        stdin: str = "",
    ) -> subprocess.CompletedProcess:
        props = dict(self.props)
        for key, value in (overrides or {}).items():
            if value is None:
                props.pop(key, None)
            else:
                props[key] = value
        self._runs += 1
        conf_dir = write_conf_dir(self.tmp_path / f"conf{self._runs}", props)
        env = child_env()
        env.pop("HADOOP_ROOT_LOGGER")  # what a user gets: WARN for a short command
        return subprocess.run(
            [sys.executable, "-m", "hadoop_qjm.cli", "--config", str(conf_dir), "zkfc"]
            + ["-nnid", "nn1", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=env,
            cwd=self.tmp_path,
            timeout=120,
        )


def one_line(result: subprocess.CompletedProcess) -> str:
    err = result.stderr.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    return err


@contextmanager
def kazoo(zk: MiniZooKeeperCluster, auth: str | None = None) -> Iterator[KazooClient]:
    auth_data = [tuple(auth.split(":", 1))] if auth else None
    client = KazooClient(hosts=zk.connect_string, timeout=10.0, auth_data=auth_data)
    client.start(timeout=30)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def tree(client: KazooClient, path: str = "/") -> dict[str, tuple[bytes, int]]:
    """Every znode but ZooKeeper's own: path -> (data, mzxid)."""
    nodes: dict[str, tuple[bytes, int]] = {}
    for child in client.get_children(path):
        child_path = f"{path.rstrip('/')}/{child}"
        if child_path == ZK_OWN:
            continue
        data, stat = client.get(child_path)
        nodes[child_path] = (data, stat.mzxid)
        nodes.update(tree(client, child_path))
    return nodes


@pytest.fixture
def cli(tmp_path: Path, zk_server: MiniZooKeeperCluster) -> ZkfcCli:
    return ZkfcCli(tmp_path, zk_server.connect_string)


# ---- -formatZK ---------------------------------------------------------------------------------


def test_format_zk_creates_and_then_refuses_the_parent_znode(
    cli: ZkfcCli, zk_server: MiniZooKeeperCluster
) -> None:
    result = cli.run("-formatZK", "-nonInteractive")
    assert result.returncode == 0, result.stderr
    with kazoo(zk_server) as client:
        assert client.exists(PARENT) is not None
        client.create(f"{PARENT}/child", b"keep me")
        before = tree(client)

    result = cli.run("-formatZK", "-nonInteractive")
    assert result.returncode == 2
    assert PARENT in one_line(result) and "-force" in result.stderr
    with kazoo(zk_server) as client:
        assert tree(client) == before
        assert client.get(f"{PARENT}/child")[0] == b"keep me"


def test_format_zk_force_clears_and_recreates(
    cli: ZkfcCli, zk_server: MiniZooKeeperCluster
) -> None:
    assert cli.run("-formatZK", "-nonInteractive").returncode == 0
    with kazoo(zk_server) as client:
        client.create(f"{PARENT}/child/grandchild", b"x", makepath=True)
        old_czxid = client.exists(PARENT).czxid

    result = cli.run("-formatZK", "-force")
    assert result.returncode == 0, result.stderr
    with kazoo(zk_server) as client:
        assert client.exists(f"{PARENT}/child") is None
        assert client.exists(PARENT).czxid > old_czxid  # a new znode
        assert client.get_children(PARENT) == []


def test_format_zk_force_without_an_existing_parent(
    cli: ZkfcCli, zk_server: MiniZooKeeperCluster
) -> None:
    assert cli.run("-formatZK", "-force", "-nonInteractive").returncode == 0
    with kazoo(zk_server) as client:
        assert client.exists(PARENT) is not None


@pytest.mark.parametrize("answer", ["n\n", "no\n", ""], ids=["n", "no", "eof"])
def test_format_zk_interactive_no_keeps_the_znode(
    cli: ZkfcCli, zk_server: MiniZooKeeperCluster, answer: str
) -> None:
    assert cli.run("-formatZK", "-nonInteractive").returncode == 0
    with kazoo(zk_server) as client:
        client.create(f"{PARENT}/child", b"keep me")
        before = tree(client)
    result = cli.run("-formatZK", stdin=answer)
    assert result.returncode == 2, result.stderr
    assert f"Proceed formatting {PARENT}? (Y or N)" in result.stderr
    with kazoo(zk_server) as client:
        assert tree(client) == before


def test_format_zk_interactive_yes_clears(cli: ZkfcCli, zk_server: MiniZooKeeperCluster) -> None:
    assert cli.run("-formatZK", "-nonInteractive").returncode == 0
    with kazoo(zk_server) as client:
        client.create(f"{PARENT}/child", b"x")
    result = cli.run("-formatZK", stdin="y\n")
    assert result.returncode == 0, result.stderr
    with kazoo(zk_server) as client:
        assert client.exists(PARENT) is not None
        assert client.exists(f"{PARENT}/child") is None


# ---- bad input: one line, Hadoop's exit status, nothing changed ---------------------------------


def unreachable_quorum() -> str:
    return f"127.0.0.1:{free_ports(1)[0]}"


BAD_INPUT = [
    pytest.param(
        ["-formatZK", "-nonInteractive"],
        {"ha.zookeeper.quorum": "127.0.0.1:notaport"},
        1,
        ["ha.zookeeper.quorum", "127.0.0.1:notaport"],
        id="malformed-quorum",
    ),
    pytest.param(
        ["-formatZK", "-nonInteractive"],
        {"ha.zookeeper.quorum": None},
        1,
        ["ha.zookeeper.quorum"],
        id="missing-quorum",
    ),
    pytest.param(
        [],
        {"ha.zookeeper.parent-znode": "/not-formatted"},
        3,
        ["/not-formatted/mycluster", "-formatZK"],
        id="no-parent-znode",
    ),
    pytest.param([], {}, 3, [PARENT, "-formatZK"], id="never-formatted"),
    pytest.param(
        [],
        {"dfs.ha.fencing.methods": "shell("},
        4,
        ["dfs.ha.fencing.methods", "shell("],
        id="fencing-unparsable",
    ),
    pytest.param(
        [], {"dfs.ha.fencing.methods": None}, 4, ["dfs.ha.fencing.methods"], id="no-fencing"
    ),
    pytest.param(
        [],
        {"dfs.ha.automatic-failover.enabled": "false"},
        5,
        ["dfs.ha.automatic-failover.enabled"],
        id="auto-failover-off",
    ),
    pytest.param(
        [],
        {"ha.zookeeper.quorum": "UNREACHABLE", "ha.zookeeper.session-timeout.ms": 1000},
        6,
        ["ha.zookeeper.quorum", "ZooKeeper"],
        id="zk-unreachable",
    ),
    pytest.param(
        ["-formatZK", "-nonInteractive"],
        {"dfs.ha.automatic-failover.enabled": "false"},
        5,
        ["dfs.ha.automatic-failover.enabled"],
        id="format-auto-failover-off",
    ),
    pytest.param(
        [],
        {"dfs.ha.fencing.ssh.connect-timeout": "2 fortnights"},
        1,
        ["dfs.ha.fencing.ssh.connect-timeout", "'2 fortnights'", "hdfs-site.xml:"],
        id="garbage-in-hdfs-site",  # issue 38: read at the first sshfence, checked at start
    ),
    pytest.param(["-bogus"], {}, 2, ["-bogus"], id="unknown-option"),
    pytest.param(["-formatZK", "-bogus"], {}, 2, ["-bogus"], id="unknown-format-option"),
    pytest.param(
        ["-formatZK", "-nonInteractive"],
        {"ha.zookeeper.acl": "world:anyone:rwxz"},
        1,
        ["ha.zookeeper.acl", "'x'"],
        id="malformed-acl",
    ),
    pytest.param(
        ["-formatZK", "-nonInteractive"],
        {"ha.zookeeper.auth": "digest"},
        1,
        ["ha.zookeeper.auth"],
        id="malformed-auth",
    ),
]


@pytest.mark.parametrize(("args", "overrides", "status", "words"), BAD_INPUT)
def test_bad_input_is_one_line_and_changes_nothing(
    cli: ZkfcCli,
    zk_server: MiniZooKeeperCluster,
    args: list[str],
    overrides: dict[str, object | None],
    status: int,
    words: list[str],
) -> None:
    if overrides.get("ha.zookeeper.quorum") == "UNREACHABLE":
        overrides = {**overrides, "ha.zookeeper.quorum": unreachable_quorum()}
    with kazoo(zk_server) as client:
        before = tree(client)
    result = cli.run(*args, overrides=overrides)
    assert result.returncode == status, result.stderr
    line = one_line(result)
    for word in words:
        assert word in line, line
    assert result.stdout == ""
    with kazoo(zk_server) as client:
        assert tree(client) == before


@pytest.mark.parametrize("args", [[], ["-formatZK", "-nonInteractive"]], ids=["start", "format"])
def test_zookeeper_unreachable_exits_6_with_the_reason_last(cli: ZkfcCli, args: list[str]) -> None:
    result = cli.run(
        *args,
        overrides={
            "ha.zookeeper.quorum": unreachable_quorum(),
            "ha.zookeeper.session-timeout.ms": 1000,
        },
    )
    assert result.returncode == 6, result.stderr
    assert "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("zkfc: Unable to start failover controller. Unable to connect to ")
    assert "ha.zookeeper.quorum" in last


# ---- ACLs --------------------------------------------------------------------------------------


def expected_acl() -> list[ACL]:
    return [ACL(31, Id("digest", digest_acl_id("hdfs-zkfcs:secret")))]


@pytest.mark.parametrize("auth_from_file", [False, True], ids=["auth", "auth-from-file"])
def test_format_zk_with_a_digest_acl(
    cli: ZkfcCli, zk_server: MiniZooKeeperCluster, tmp_path: Path, auth_from_file: bool
) -> None:
    auth: str = ZKFC_AUTH
    if auth_from_file:
        auth_file = tmp_path / "zk-auth.txt"
        auth_file.write_text(ZKFC_AUTH + "\n")
        auth = f"@{auth_file}"
    acl_conf = {"ha.zookeeper.acl": ZKFC_ACL, "ha.zookeeper.auth": auth}
    result = cli.run("-formatZK", "-nonInteractive", overrides=acl_conf)
    assert result.returncode == 0, result.stderr

    with kazoo(zk_server, auth=ZKFC_AUTH) as client:  # reading an ACL needs READ or ADMIN
        for path in ("/hadoop-ha", PARENT):
            assert list(client.get_acls(path)[0]) == expected_acl()
    with kazoo(zk_server) as client:
        with pytest.raises(NoAuthError):
            client.get_acls(PARENT)
        with pytest.raises(NoAuthError):
            client.create(f"{PARENT}/intruder", b"")
    with kazoo(zk_server, auth="digest:hdfs-zkfcs:wrong") as client:
        with pytest.raises(NoAuthError):
            client.create(f"{PARENT}/intruder", b"")
    with kazoo(zk_server, auth=ZKFC_AUTH) as client:
        client.create(f"{PARENT}/allowed", b"")

    # Formatting again with the credentials clears what they may clear.
    result = cli.run("-formatZK", "-force", overrides=acl_conf)
    assert result.returncode == 0, result.stderr
    with kazoo(zk_server, auth=ZKFC_AUTH) as client:
        assert client.get_children(PARENT) == []
        assert list(client.get_acls(PARENT)[0]) == expected_acl()


# ---- ActiveStandbyElector in-process, with fake callbacks ----------------------------------------


class Events:
    """Every callback of every elector of a test, in order, under one condition."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.log: list[tuple[str, str, object]] = []

    def add(self, who: str, what: str, arg: object = None) -> None:
        with self.cond:
            self.log.append((who, what, arg))
            self.cond.notify_all()

    def wait_for(self, predicate: Callable[[], bool], what: str, timeout_s: float = WAIT_S) -> None:
        with self.cond:
            if not self.cond.wait_for(predicate, timeout_s):
                raise AssertionError(f"timed out waiting for {what}; events: {self.log}")

    def of(self, who: str, what: str | None = None) -> list[tuple[str, str, object]]:
        with self.cond:
            return [e for e in self.log if e[0] == who and (what is None or e[1] == what)]

    def has(self, who: str, what: str) -> bool:
        return bool(self.of(who, what))


class FakeCallbacks:
    """The controller's side of the elector: records, and may refuse become_active."""

    def __init__(self, name: str, events: Events) -> None:
        self.name = name
        self.events = events
        self.before_become_active: Callable[[], None] = lambda: None

    def become_active(self) -> None:
        self.events.add(self.name, "become_active")
        self.before_become_active()
        self.events.add(self.name, "active")

    def become_standby(self) -> None:
        self.events.add(self.name, "become_standby")

    def enter_neutral_mode(self) -> None:
        self.events.add(self.name, "neutral")

    def notify_fatal_error(self, message: str) -> None:
        self.events.add(self.name, "fatal", message)

    def fence_old_active(self, data: bytes) -> None:
        self.events.add(self.name, "fence_old_active", data)


def node_data(nnid: str) -> bytes:
    return ActiveNodeInfo(NS, nnid, "127.0.0.1", {"nn1": 8020, "nn2": 8021}[nnid], 8019).to_bytes()


#: The electors' session timeout: long enough that a ZooKeeper restart on a loaded 2-core
#: machine (a JVM start) stays within one session.
SESSION_S = 15.0


class Electors:
    """The electors of one test; every one is terminated at the end."""

    def __init__(self, zk: MiniZooKeeperCluster) -> None:
        self.zk = zk
        self.session_s = SESSION_S
        self.connect_string = zk.connect_string
        self.events = Events()
        self.electors: dict[str, ActiveStandbyElector] = {}
        self.callbacks: dict[str, FakeCallbacks] = {}

    def make(
        self,
        name: str,
        acls: tuple[ZKAcl, ...] = parse_acls("world:anyone:rwcda"),
        auths: tuple[ZKAuth, ...] = (),
    ) -> ActiveStandbyElector:
        callbacks = FakeCallbacks(name, self.events)
        elector = ActiveStandbyElector(
            self.connect_string, self.session_s, PARENT, acls, auths, callbacks, op_retries=3
        )
        self.electors[name] = elector
        self.callbacks[name] = callbacks
        return elector

    def outlast_a_restart(self) -> None:
        """Sessions that outlast a restart of the ZooKeeper server, for the electors made
        after this. The restart stays within a 55 s session (a JVM start on a loaded 2-core
        machine took longer than 15 s once; the server's maximum is 60 s). A client waits
        up to the session over the number of hosts for the answer to a connect (kazoo, as
        ZooKeeper's Java client): with one host, an attempt that met the restarting server
        before it served waited a whole session, and the server, counting the session from
        its restart, had expired it by the next attempt (CI, 2026-12-03). Named three times,
        as a 3-server ensemble's quorum names three, the wait is a third of a session."""
        self.session_s = 55.0
        self.connect_string = ",".join([self.zk.connect_string] * 3)

    def join(self, name: str) -> None:
        self.electors[name].join_election(node_data(name))

    def terminate(self) -> None:
        for elector in self.electors.values():
            elector.terminate()


@pytest.fixture
def electors(zk_server: MiniZooKeeperCluster) -> Iterator[Electors]:
    group = Electors(zk_server)
    try:
        yield group
    finally:
        group.terminate()


def lock_and_breadcrumb(zk: MiniZooKeeperCluster) -> tuple[bytes | None, bytes | None]:
    with kazoo(zk) as client:
        found = []
        for name in (LOCK_FILENAME, BREADCRUMB_FILENAME):
            stat = client.exists(f"{PARENT}/{name}")
            found.append(client.get(f"{PARENT}/{name}")[0] if stat else None)
        return found[0], found[1]


def elect_one(electors: Electors) -> tuple[str, str]:
    """nn1 and nn2 join; (winner, loser) once one is active and the other standby."""
    electors.make("nn1").ensure_parent_znode()
    electors.make("nn2")
    electors.join("nn1")
    electors.join("nn2")
    ev = electors.events

    def settled() -> bool:
        names = ("nn1", "nn2")
        return any(
            ev.has(a, "active") and ev.has(b, "become_standby") for a in names for b in names
        )

    ev.wait_for(settled, "one active and one standby")
    winner = "nn1" if ev.has("nn1", "active") else "nn2"
    loser = "nn2" if winner == "nn1" else "nn1"
    assert not ev.has(loser, "become_active") and not ev.has(winner, "become_standby")
    assert ev.of(winner, "fence_old_active") == []  # nothing was active before
    assert lock_and_breadcrumb(electors.zk) == (node_data(winner), node_data(winner))
    return winner, loser


def test_two_electors_elect_exactly_one(electors: Electors) -> None:
    winner, loser = elect_one(electors)
    assert electors.electors[winner].state == "ACTIVE"
    assert electors.electors[loser].state == "STANDBY"


def test_a_winner_quitting_with_fencing_is_fenced_by_the_next(electors: Electors) -> None:
    winner, loser = elect_one(electors)
    electors.electors[winner].quit_election(need_fence=True)
    ev = electors.events
    ev.wait_for(lambda: ev.has(loser, "active"), f"{loser} to become active")
    kinds = [what for _, what, _ in ev.of(loser)]
    assert kinds == ["become_standby", "fence_old_active", "become_active", "active"]
    assert ev.of(loser, "fence_old_active") == [(loser, "fence_old_active", node_data(winner))]
    assert lock_and_breadcrumb(electors.zk) == (node_data(loser), node_data(loser))


def test_a_winner_quitting_cleanly_is_not_fenced(electors: Electors) -> None:
    winner, loser = elect_one(electors)
    electors.electors[winner].quit_election(need_fence=False)
    ev = electors.events
    ev.wait_for(lambda: ev.has(loser, "active"), f"{loser} to become active")
    assert ev.of(loser, "fence_old_active") == []
    assert lock_and_breadcrumb(electors.zk) == (node_data(loser), node_data(loser))


def test_a_node_that_quit_rejoins_as_standby(electors: Electors) -> None:
    winner, loser = elect_one(electors)
    electors.electors[winner].quit_election(need_fence=False)
    ev = electors.events
    ev.wait_for(lambda: ev.has(loser, "active"), f"{loser} to become active")
    electors.join(winner)
    ev.wait_for(lambda: ev.has(winner, "become_standby"), f"{winner} to rejoin as standby")
    assert electors.electors[winner].state == "STANDBY"
    assert lock_and_breadcrumb(electors.zk) == (node_data(loser), node_data(loser))


def test_a_failed_fencing_releases_the_lock_and_retries_a_second_later(
    electors: Electors,
) -> None:
    winner, loser = elect_one(electors)
    ev = electors.events
    fence_calls: list[float] = []
    callbacks = electors.callbacks[loser]
    record = callbacks.fence_old_active

    def fail_first(data: bytes) -> None:
        fence_calls.append(time.monotonic())
        record(data)
        if len(fence_calls) == 1:
            raise RuntimeError("Unable to fence")

    callbacks.fence_old_active = fail_first  # type: ignore[method-assign]
    electors.electors[winner].quit_election(need_fence=True)
    ev.wait_for(lambda: ev.has(loser, "active"), f"{loser} to become active")
    assert len(fence_calls) == 2
    assert fence_calls[1] - fence_calls[0] >= 0.9
    assert [what for _, what, _ in ev.of(loser)] == [
        "become_standby",
        "fence_old_active",
        "fence_old_active",
        "become_active",
        "active",
    ]
    # Never active unfenced: the breadcrumb named the old active until the fence worked.
    assert lock_and_breadcrumb(electors.zk) == (node_data(loser), node_data(loser))


def test_an_active_whose_lock_is_deleted_notices(electors: Electors) -> None:
    winner, loser = elect_one(electors)
    ev = electors.events
    with kazoo(electors.zk) as client:
        client.delete(f"{PARENT}/{LOCK_FILENAME}")  # e.g. an operator, or -formatZK -force
    # Hadoop: NodeDeleted while ACTIVE -> enterNeutralMode(), then joinElectionInternal().
    ev.wait_for(lambda: ev.has(winner, "neutral"), f"{winner} to notice", timeout_s=5.0)

    def one_active_holding_the_lock() -> bool:
        active = [n for n, e in electors.electors.items() if e.state == "ACTIVE"]
        return len(active) == 1 and lock_and_breadcrumb(electors.zk)[0] == node_data(active[0])

    wait_until(one_active_holding_the_lock, 5.0, "exactly one ACTIVE elector, holding the lock")


@pytest.mark.own_zookeeper
def test_a_zookeeper_restart_within_the_session_keeps_the_roles(electors: Electors) -> None:
    electors.outlast_a_restart()
    winner, loser = elect_one(electors)
    ev = electors.events
    electors.zk.kill_server(0)
    ev.wait_for(
        lambda: ev.has(winner, "neutral") and ev.has(loser, "neutral"), "both in neutral mode"
    )
    electors.zk.restart_server(0)

    def settled() -> bool:
        return len(ev.of(winner, "active")) == 2 and len(ev.of(loser, "become_standby")) == 2

    ev.wait_for(settled, "the same roles again", timeout_s=electors.session_s)
    assert not ev.has(winner, "fence_old_active") and not ev.has(loser, "fence_old_active")
    assert not ev.has(loser, "become_active")
    assert lock_and_breadcrumb(electors.zk) == (node_data(winner), node_data(winner))


@pytest.mark.own_zookeeper
def test_a_connection_lost_right_after_the_lock_check_keeps_the_active_active(
    electors: Electors, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer that the lock is ours arrives, then the connection drops before the
    elector compares the lock's owner with its session (kazoo knows no session id while
    disconnected): the active stays active, in neutral mode, and never becomes standby.
    Seen in a slow run: the whole ensemble was stopped server by server, the active's
    controller reconnected, checked its lock as the next server went, and stepped down."""
    electors.outlast_a_restart()  # ZooKeeper is restarted at the end
    winner, _ = elect_one(electors)
    elector = electors.electors[winner]
    ev = electors.events
    real_op = elector._op
    dropped = threading.Event()

    def op(name: str, *args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        answer = real_op(name, *args, **kwargs)
        if name == "exists" and not dropped.is_set():
            electors.zk.kill_server(0)  # the connection goes before the owner is compared
            wait_until(lambda: not elector._client.connected, WAIT_S, "the connection to drop")
            dropped.set()
        return answer

    monkeypatch.setattr(elector, "_op", op)
    with kazoo(electors.zk) as client:  # a change of the lock's data: the elector checks it
        client.set(f"{PARENT}/{LOCK_FILENAME}", node_data(winner))
    assert dropped.wait(WAIT_S), "the elector never checked its lock"
    # The worker handles the disconnect after the check: neutral mode shows the check done.
    ev.wait_for(lambda: ev.has(winner, "neutral"), f"{winner} in neutral mode")
    assert not ev.has(winner, "become_standby"), ev.of(winner)
    assert elector.state == "NEUTRAL"  # disconnected, still holding its lock
    electors.zk.restart_server(0)
    ev.wait_for(lambda: len(ev.of(winner, "active")) == 2, f"{winner} active again")
    assert not ev.has(winner, "become_standby"), ev.of(winner)


def test_a_failed_become_active_releases_the_lock_and_retries_a_second_later(
    electors: Electors,
) -> None:
    ev = electors.events
    electors.make("nn1").ensure_parent_znode()
    electors.make("nn2")
    release = threading.Event()
    failed_at: list[float] = []

    def refuse_once() -> None:
        callbacks = electors.callbacks["nn1"]
        callbacks.before_become_active = lambda: None  # the retry may succeed
        assert release.wait(WAIT_S)
        failed_at.append(time.monotonic())
        raise RuntimeError("transitionToActive failed")

    electors.callbacks["nn1"].before_become_active = refuse_once
    electors.join("nn1")
    ev.wait_for(lambda: ev.has("nn1", "become_active"), "nn1 to win the lock")
    electors.join("nn2")  # while nn1 holds the lock
    ev.wait_for(lambda: ev.has("nn2", "become_standby"), "nn2 to be standby")
    release.set()

    ev.wait_for(lambda: ev.has("nn2", "active"), "nn2 to take over")
    # nn1 wrote its breadcrumb before it failed: it may be half active, so it is fenced.
    assert ev.of("nn2", "fence_old_active") == [("nn2", "fence_old_active", node_data("nn1"))]
    ev.wait_for(lambda: ev.has("nn1", "become_standby"), "nn1 to rejoin as standby")
    standby_at = time.monotonic()
    assert standby_at - failed_at[0] >= 0.9, "nn1 rejoined before SLEEP_AFTER_FAILURE"
    assert not ev.has("nn1", "active")
    assert lock_and_breadcrumb(electors.zk) == (node_data("nn2"), node_data("nn2"))


# ---- wrong credentials: NOAUTH is fatal ----------------------------------------------------------


@pytest.mark.parametrize(
    "auth",
    [(ZKAuth("digest", "hdfs-zkfcs:wrong"),), ()],
    ids=["wrong-password", "no-auth"],
)
def test_an_elector_without_the_acls_credentials_stops_with_noauth(
    cli: ZkfcCli,
    electors: Electors,
    auth: tuple[ZKAuth, ...],
) -> None:
    result = cli.run(
        "-formatZK",
        "-nonInteractive",
        overrides={"ha.zookeeper.acl": ZKFC_ACL, "ha.zookeeper.auth": ZKFC_AUTH},
    )
    assert result.returncode == 0, result.stderr
    ev = electors.events
    electors.make("nn1", acls=parse_acls(ZKFC_ACL), auths=auth)
    electors.join("nn1")
    ev.wait_for(lambda: ev.has("nn1", "fatal"), "a fatal error")
    [(_, _, message)] = ev.of("nn1", "fatal")
    assert isinstance(message, str) and "NOAUTH" in message
    assert len(message.splitlines()) == 1
    assert not ev.has("nn1", "become_active") and not ev.has("nn1", "become_standby")
    assert not electors.electors["nn1"].is_in_election

    # The right credentials win the same lock (the ACL is not simply unusable).
    electors.make("nn2", acls=parse_acls(ZKFC_ACL), auths=(ZKAuth("digest", "hdfs-zkfcs:secret"),))
    electors.join("nn2")
    ev.wait_for(lambda: ev.has("nn2", "active"), "nn2 to become active")


def test_format_zk_needs_no_fencing_method(cli: ZkfcCli, zk_server: MiniZooKeeperCluster) -> None:
    # Hadoop checks the fencing methods only before the daemon runs.
    result = cli.run("-formatZK", "-nonInteractive", overrides={"dfs.ha.fencing.methods": None})
    assert result.returncode == 0, result.stderr
    with kazoo(zk_server) as client:
        assert client.exists(PARENT)


@pytest.mark.own_zookeeper
def test_an_elector_cut_off_from_zookeeper_still_terminates_promptly(
    electors: Electors,
) -> None:
    """ZooKeeper gone: no election step may hang holding the lock (kazoo's calls wait for a
    reconnect forever), so leaving the election and stopping stay prompt."""
    winner, loser = elect_one(electors)
    ev = electors.events
    electors.zk.kill_server(0)
    ev.wait_for(
        lambda: ev.has(winner, "neutral") and ev.has(loser, "neutral"), "both in neutral mode"
    )
    done = threading.Event()

    def leave() -> None:
        electors.electors[loser].quit_election(need_fence=False)
        electors.electors[winner].terminate()
        done.set()

    worker = threading.Thread(target=leave, daemon=True)
    worker.start()
    assert done.wait(SESSION_S), "quit_election/terminate hung while ZooKeeper was down"
