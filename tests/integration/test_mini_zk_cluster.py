"""MiniZooKeeperCluster: real ZooKeeper JVMs on 127.0.0.1, reached with kazoo."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import pytest
from kazoo.client import KazooClient
from kazoo.retry import KazooRetry

from hadoop_qjm.testing.in_process_ha import wait_until
from hadoop_qjm.testing.mini_zk_cluster import (
    MiniZooKeeperCluster,
    ZooKeeperNotFoundError,
    ZooKeeperStartError,
    find_zookeeper,
)

pytestmark = pytest.mark.timeout(120)

DEADLINE_S = 30.0


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def kazoo(hosts: str) -> KazooClient:
    # Retry every operation across connection losses until a deadline, not a count.
    client = KazooClient(
        hosts=hosts,
        timeout=10.0,
        connection_retry=KazooRetry(max_tries=-1, max_delay=0.2, deadline=DEADLINE_S),
        command_retry=KazooRetry(max_tries=-1, max_delay=0.2, deadline=DEADLINE_S),
    )
    client.start(timeout=DEADLINE_S)
    return client


@pytest.mark.own_zookeeper  # looks at the server itself
def test_kazoo_creates_and_reads_a_znode_on_a_standalone_server(zk_server):
    assert zk_server.mode(0) == "standalone"
    assert zk_server.connect_string == f"127.0.0.1:{zk_server.client_ports[0]}"
    assert zk_server.four_letter_word(0, "ruok") == "imok"
    client = kazoo(zk_server.connect_string)
    try:
        client.create("/qjm/znode", b"edits", makepath=True)
        data, stat = client.get("/qjm/znode")
        assert (data, stat.version) == (b"edits", 0)
        assert client.get_children("/qjm") == ["znode"]
    finally:
        client.stop()
        client.close()
    assert "zookeeper.log" in os.listdir(zk_server.server_dir(0))


def test_ensemble_writes_with_its_leader_killed_and_takes_it_back(zk_ensemble):
    zk = zk_ensemble
    assert sorted(zk.mode(i) for i in range(3)) == ["follower", "follower", "leader"]
    client = kazoo(zk.connect_string)
    try:
        client.create("/before", b"1")
        victim = zk.leader()
        pid = zk.pids[victim]
        assert zk.kill_server(victim) == -signal.SIGKILL
        assert not alive(pid) and zk.pids[victim] is None
        # The two survivors elect a leader between them; the client follows and writes.
        client.retry(client.create, "/after", b"2")
        assert client.retry(client.get, "/after")[0] == b"2"
        wait_until(lambda: zk.leader() is not None, DEADLINE_S, "a new leader among two")
        survivors = sorted(zk.mode(i) for i in range(3) if i != victim)
        assert survivors == ["follower", "leader"]

        zk.restart_server(victim)
        assert zk.mode(victim) == "follower"
        assert zk.pids[victim] not in (None, pid)
    finally:
        client.stop()
        client.close()
    # The restarted server caught up with the write it missed.
    only_victim = kazoo(f"127.0.0.1:{zk.client_ports[victim]}")
    try:
        only_victim.sync("/after")
        assert only_victim.get("/after")[0] == b"2"
    finally:
        only_victim.stop()
        only_victim.close()

    pids = zk.pids
    zk.shutdown()
    assert not any(alive(p) for p in pids if p is not None)
    assert zk.pids == [None, None, None]
    zk.shutdown()  # idempotent


def test_shutdown_kills_a_server_that_ignores_sigterm(tmp_path):
    with MiniZooKeeperCluster(tmp_path / "zk") as zk:
        pid = zk.pids[0]
        zk.kill_server(0, signal.SIGSTOP)  # a stopped JVM cannot act on SIGTERM
        assert alive(pid) and zk.mode(0) is None
        zk.stop_timeout_s = 0.5
    assert not alive(pid)
    assert zk.pids == [None]


def test_a_server_that_cannot_start_raises_with_its_log(tmp_path):
    zk = MiniZooKeeperCluster(tmp_path / "zk", start=False)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", zk.client_ports[0]))
        taken.listen()
        with pytest.raises(ZooKeeperStartError) as raised:
            zk.start_server(0, timeout_s=DEADLINE_S)
    assert "Address already in use" in str(raised.value)
    assert str(zk.log_path(0)) in str(raised.value)
    zk.shutdown()
    assert zk.pids == [None]


def test_missing_zookeeper_is_one_line_saying_how_to_install_it(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("ZOOKEEPER_HOME", str(empty))
    with pytest.raises(ZooKeeperNotFoundError) as raised:
        find_zookeeper()
    message = str(raised.value)
    assert "\n" not in message
    assert "apt-get install -y zookeeper" in message and str(empty) in message
    with pytest.raises(ZooKeeperNotFoundError):
        MiniZooKeeperCluster(tmp_path / "zk")
    assert not (tmp_path / "zk").exists()


def test_missing_java_is_one_line_saying_how_to_install_it(tmp_path: Path):
    home = tmp_path / "zookeeper-3.8.0"
    (home / "lib").mkdir(parents=True)
    (home / "lib" / "zookeeper-3.8.0.jar").touch()
    no_java = tmp_path / "bin"
    no_java.mkdir()
    with pytest.raises(ZooKeeperNotFoundError) as raised:
        find_zookeeper({"ZOOKEEPER_HOME": str(home), "PATH": str(no_java)})
    assert "\n" not in str(raised.value)
    assert "Java is not installed" in str(raised.value)


def test_a_zookeeper_home_gives_its_conf_and_lib_jars(tmp_path: Path):
    home = tmp_path / "apache-zookeeper-3.8.0-bin"
    for name in ("lib/zookeeper-3.8.0.jar", "lib/zookeeper-jute-3.8.0.jar", "conf/logback.xml"):
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).touch()
    java_home = tmp_path / "jdk"
    (java_home / "bin").mkdir(parents=True)
    (java_home / "bin" / "java").touch(mode=0o755)
    java, classpath = find_zookeeper({"ZOOKEEPER_HOME": str(home), "JAVA_HOME": str(java_home)})
    assert java == str(java_home / "bin" / "java")
    assert classpath.split(os.pathsep) == [
        str(home / "conf"),
        str(home / "lib" / "zookeeper-3.8.0.jar"),
        str(home / "lib" / "zookeeper-jute-3.8.0.jar"),
    ]
