"""The NameNode protocols without sockets: messages through real Thrift bytes, the generic
dispatcher and caller over an in-memory channel, error mapping, handler slots, addresses,
and the namenode command line's parsing."""

from __future__ import annotations

import io
import threading

import pytest

from hadoop_qjm.common.exceptions import (
    ConfigurationError,
    FileNotFoundException,
    IllegalArgumentException,
    UsageError,
)
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.namenode.fs_directory import FileStatus
from hadoop_qjm.namenode.name_node import NameNode, rpc_bind_address
from hadoop_qjm.namenode.name_node_commands import parse_startup_option, prompt_confirm
from hadoop_qjm.namenode.name_node_settings import NameNodeSettings
from hadoop_qjm.namenode.protocol import messages as m
from hadoop_qjm.namenode.protocol.client import NameNodeProxy, namenode_address
from hadoop_qjm.namenode.protocol.exceptions import ServiceFailedException
from hadoop_qjm.namenode.protocol.rpc import (
    ThriftServiceDispatcher,
    release_handler_slot,
    rpc_table,
)
from hadoop_qjm.namenode.protocol.thrift_idl import SERVICES
from hadoop_qjm.namenode.protocol.thrift_idl import namenode_thrift as t
from hadoop_qjm.qjournal.protocol.exceptions import RemoteException
from hadoop_qjm.qjournal.protocol.wire import ProtocolError, thrift_from_bytes, thrift_to_bytes


def status(path: str, is_dir: bool = True) -> FileStatus:
    return FileStatus(path, is_dir, 0, 0 if is_dir else 3, 0 if is_dir else 1024, 5, 6, 0o755,
                      "hdfs", "supergroup", 16390, 2 if is_dir else 0)  # fmt: skip


def roundtrip(tobj):
    return thrift_from_bytes(type(tobj), thrift_to_bytes(tobj))


# ---- messages ------------------------------------------------------------------------------------
def test_file_status_travels_with_its_local_name() -> None:
    st = status("/a/b")
    wire = roundtrip(m.file_status_to_thrift(st, "b"))
    assert wire.path == "b"
    assert m.file_status_from_thrift(wire, "/a") == st
    itself = roundtrip(m.file_status_to_thrift(st, ""))
    assert m.file_status_from_thrift(itself, "/a/b") == st


def test_listing_batches_and_the_listing_of_a_file() -> None:
    children = [status(f"/d/{n}") for n in "abcde"]
    wire = roundtrip(m.listing_to_thrift(children, "/d/", 2))
    assert [s.path for s in wire.partialListing] == ["a", "b"] and wire.remainingEntries == 3
    listing = m.listing_from_thrift(wire, "/d/")
    assert [s.path for s in listing.partial_listing] == ["/d/a", "/d/b"]
    assert listing.has_more and listing.last_name == "b"
    file_listing = m.listing_to_thrift([status("/d/f", is_dir=False)], "/d//f", 1000)
    assert file_listing.partialListing[0].path == ""  # HdfsFileStatus.EMPTY_NAME
    (again,) = m.listing_from_thrift(roundtrip(file_listing), "/d/f").partial_listing
    assert again.path == "/d/f" and not again.is_dir


def test_namespace_info_signature_and_ha_status_roundtrip() -> None:
    ns = NamespaceInfo(123, "CID-x", "BP-1-127.0.0.1-2", 0, -67, "b", "s")
    wire = roundtrip(m.namespace_info_to_thrift(ns, m.HAServiceState.ACTIVE))
    assert m.namespace_info_from_thrift(wire) == ns and wire.state == 1
    sig = m.CheckpointSignature("BP-1", 10, 12, ns.storage_info())
    assert (
        m.checkpoint_signature_from_thrift(roundtrip(m.checkpoint_signature_to_thrift(sig))) == sig
    )
    ha = m.HAServiceStatus(m.HAServiceState.STANDBY, False, "not yet")
    assert m.service_status_from_thrift(roundtrip(m.service_status_to_thrift(ha))) == ha


def test_ha_service_state_is_hadoops_on_the_wire_and_in_words() -> None:
    """One enum: HAServiceStateProto's numbers on the wire (the IDL's), Hadoop's toString
    where a user reads it (haadmin, the JMX, the status page)."""
    words = {str(state): int(state) for state in m.HAServiceState}
    wire = {name.lower(): number for name, number in t.HAServiceState._NAMES_TO_VALUES.items()}
    assert words == {**wire, "stopping": 4}  # Hadoop's STOPPING is not in the proto
    assert f"{m.HAServiceState.ACTIVE:<10}|" == "active    |"


# ---- dispatcher and caller -----------------------------------------------------------------------
class InMemoryChannel:
    """An RpcChannel handing payloads straight to a dispatcher."""

    def __init__(self, dispatcher: ThriftServiceDispatcher) -> None:
        self.dispatcher = dispatcher
        self.resets = 0

    def call(self, payload: bytes) -> bytes:
        return self.dispatcher.process(payload, "10.0.0.1")

    def reset(self) -> None:
        self.resets += 1

    def close(self) -> None:
        pass


class FakeNamesystem:
    """Handlers for every RPC: most refuse; mkdirs and getFileInfo work."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.slots_seen: list[int] = []

    def handlers(self, slots: threading.BoundedSemaphore):
        def unsupported(*args):
            raise ServiceFailedException("not here")

        table = {name: unsupported for name in rpc_table(SERVICES)}

        def mkdirs(src, masked, create_parent):
            self.calls.append(("mkdirs", src, masked.perm, create_parent))
            release_handler_slot()  # as the NameNode does while its edit syncs
            self.slots_seen.append(slots._value)  # type: ignore[attr-defined]
            return True

        def get_file_info(src):
            if src == "/missing":
                raise FileNotFoundException(f"File {src} does not exist.")
            if src == "/odd":
                raise KeyError("a Python error")
            return t.GetFileInfoResponse(fs=m.file_status_to_thrift(status(src), ""))

        table.update(mkdirs=mkdirs, getFileInfo=get_file_info)
        return table


@pytest.fixture
def wired():
    slots = threading.BoundedSemaphore(1)
    fake = FakeNamesystem()
    calls: list[tuple[str, bool]] = []
    dispatcher = ThriftServiceDispatcher(
        SERVICES,
        fake.handlers(slots),
        t.RemoteException,
        slots,
        lambda n, ok: calls.append((n, ok)),
    )
    channel = InMemoryChannel(dispatcher)
    proxy = NameNodeProxy("nn", 8020, channel=channel)
    return proxy, fake, slots, calls, channel


def test_calls_results_and_typed_errors(wired) -> None:
    proxy, fake, slots, calls, _ = wired
    assert proxy.mkdirs("/a", 0o700, create_parent=False)
    assert fake.calls == [("mkdirs", "/a", 0o700, False)]
    assert fake.slots_seen == [1]  # the slot was given back while the call went on
    assert slots._value == 1  # type: ignore[attr-defined] # and not released twice
    assert proxy.get_file_info("/x/").path == "/x"
    with pytest.raises(FileNotFoundException, match="File /missing does not exist."):
        proxy.get_file_info("/missing")
    with pytest.raises(RemoteException) as raised:
        proxy.get_file_info("/odd")
    assert raised.value.class_name == "KeyError"
    with pytest.raises(ServiceFailedException, match="not here"):
        proxy.transition_to_active()
    assert calls == [
        ("mkdirs", True),
        ("getFileInfo", True),
        ("getFileInfo", False),
        ("getFileInfo", False),
        ("transitionToActive", False),
    ]


def test_unknown_methods_and_garbage(wired) -> None:
    proxy, _, _, _, channel = wired
    from hadoop_qjm.qjournal.protocol.wire import TMessageType, encode_message

    reply = channel.call(
        encode_message("format", TMessageType.CALL, 7, t.ClientProtocol.rollEdits_args())
    )
    assert b"Unknown method format" in reply
    with pytest.raises(ProtocolError):
        channel.call(b"\x00\x01garbage")


def test_rpc_table_needs_a_handler_for_every_rpc() -> None:
    with pytest.raises(IllegalArgumentException, match="No handler for RPC ClientProtocol"):
        rpc_table(SERVICES, {"mkdirs": print})
    with pytest.raises(IllegalArgumentException, match="defined by two services"):
        rpc_table(SERVICES + SERVICES[:1])


# ---- addresses -----------------------------------------------------------------------------------
def test_clients_find_the_namenode() -> None:
    conf = Configuration()
    assert namenode_address(conf) == ("127.0.0.1", 8020)
    conf.set("dfs.namenode.rpc-address", "nn1:9000")
    assert namenode_address(conf) == ("nn1", 9000)
    conf.set("fs.defaultFS", "hdfs://nn2")
    assert namenode_address(conf) == ("nn2", 8020)
    conf.set("fs.defaultFS", "hdfs://nn2:8021/")
    assert namenode_address(conf) == ("nn2", 8021)
    conf.set("fs.defaultFS", "hdfs:///")
    with pytest.raises(ConfigurationError, match="has no authority"):
        namenode_address(conf)
    conf.set("fs.defaultFS", "file:///")
    conf.set("dfs.namenode.rpc-address", "0.0.0.0:0")
    with pytest.raises(ConfigurationError, match="port 0"):
        namenode_address(conf)
    # A scheme no FileSystem of ours serves is an error, not a fall-back to the rpc-address.
    conf.set("dfs.namenode.rpc-address", "nn1:9000")
    for default_fs in ("ftp://x", "s3a://bucket/", "viewfs://cluster"):
        conf.set("fs.defaultFS", default_fs)
        with pytest.raises(ConfigurationError, match='No FileSystem for scheme "'):
            namenode_address(conf)
    for default_fs in ("FILE:///", "localhost:8020"):  # (Hadoop's deprecated host:port form)
        conf.set("fs.defaultFS", default_fs)
        assert namenode_address(conf) == ("nn1", 9000)


def test_the_daemon_binds_rpc_address_else_default_fs() -> None:
    conf = Configuration()
    assert rpc_bind_address(conf) == ("0.0.0.0", 8020)
    conf.set("fs.defaultFS", "hdfs://localhost:9000")
    assert rpc_bind_address(conf) == ("localhost", 9000)
    conf.set("dfs.namenode.rpc-bind-host", "0.0.0.0")
    assert rpc_bind_address(conf) == ("0.0.0.0", 9000)
    conf.set("dfs.namenode.rpc-address", "127.0.0.1:0")
    assert rpc_bind_address(conf) == ("0.0.0.0", 0)


@pytest.mark.parametrize(
    "key,value,expected",
    [
        ("dfs.ha.automatic-failover.enabled", "ture", "true or false"),
        ("dfs.ha.automatic-failover.enabled.mycluster", "yes", "true or false"),
        ("dfs.ha.standby.checkpoints", "1", "true or false"),
        ("dfs.ha.tail-edits.rolledits.timeout", "soon", "a time duration of 0 or more"),
        ("dfs.image.transfer.timeout", "0", "a positive time duration"),
        ("dfs.ha.tail-edits.period", "1x", "a time duration"),
        ("dfs.ha.tail-edits.in-progress", "maybe", "true or false"),
        ("dfs.namenode.checkpoint.period", "hourly", "a time duration"),
        ("dfs.namenode.checkpoint.txns", "many", "an integer"),
        ("dfs.qjournal.write-txns.timeout.ms", "-1", "a positive time duration"),
        ("dfs.namenode.handler.count", "ten", "an integer"),
    ],
)
def test_the_namenode_checks_every_key_it_reads_later_when_it_is_made(key, value, expected) -> None:
    """Issue 33 item 5: `-D dfs.ha.automatic-failover.enabled=ture` came up healthy and every
    transitionToActive then failed. The keys read at a transition, a roll, an upload or
    the first standby are read when the NameNode is constructed: one line naming the key."""
    conf = Configuration()
    conf.set("dfs.nameservices", "mycluster")
    conf.set(key, value, "from command line")
    with pytest.raises(ConfigurationError) as info:
        NameNodeSettings.from_conf(conf, "mycluster")
    assert str(info.value).startswith(f"Invalid value for {key}: '{value}' is not {expected}")
    assert str(info.value).endswith("(set from command line)")
    assert "\n" not in str(info.value)
    with pytest.raises(ConfigurationError):
        NameNode(conf)  # the daemon refuses at construction: nothing bound, nothing locked


def test_namenode_settings_read_durations_with_units() -> None:
    conf = Configuration()
    conf.set("dfs.ha.tail-edits.rolledits.timeout", "2m")
    conf.set("dfs.image.transfer.timeout", "90s")
    settings = NameNodeSettings.from_conf(conf, None)
    assert (settings.roll_edits_timeout_s, settings.image_transfer_timeout_s) == (120, 90.0)
    conf.set("dfs.ha.tail-edits.rolledits.timeout", "0")
    assert NameNodeSettings.from_conf(conf, None).roll_edits_timeout_s == 60


# ---- the namenode command line -------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv,expected",
    [
        ([], ("daemon", False, True, None, None)),
        (["-format"], ("format", False, True, None, None)),
        (["-FORMAT", "-clusterid", "c1", "-force"], ("format", True, True, "c1", None)),
        (["-format", "-nonInteractive", "-force"], ("format", True, False, None, None)),
        (["-initializeSharedEdits", "-nonInteractive"], ("initializeSharedEdits", False, False, None, None)),
        (["-checkpointOffline", "/d"], ("checkpointOffline", False, True, None, "/d")),
    ],
)  # fmt: skip
def test_startup_options(argv, expected) -> None:
    option = parse_startup_option(argv)
    assert (option.command, option.force, option.interactive, option.cluster_id,
            option.directory) == expected  # fmt: skip


@pytest.mark.parametrize(
    "argv,message",
    [
        (["-format", "-clusterid"], "Must specify a valid cluster ID"),
        (["-format", "-clusterid", "-force"], "Must specify a valid cluster ID"),
        (["-format", "-x"], "unknown option '-x'"),
        (["-initializeSharedEdits", "-format"], "unknown option '-format'"),
        (["-checkpointOffline"], "exactly one directory"),
        (["-bootstrap"], "unknown option '-bootstrap'"),
    ],
)
def test_bad_startup_options(argv, message) -> None:
    with pytest.raises(UsageError, match=message):
        parse_startup_option(argv)


def test_the_format_prompt() -> None:
    err = io.StringIO()
    confirm = prompt_confirm(io.StringIO("Y\nwhat\nno\n"), err)
    assert not confirm(["/a", "/b"])
    assert err.getvalue() == (
        "Re-format filesystem in /a ? (Y or N) Re-format filesystem in /b ? (Y or N) "
        "Invalid input: what\nRe-format filesystem in /b ? (Y or N) "
    )
    assert prompt_confirm(io.StringIO("yes\ny\n"), io.StringIO())(["/a", "/b"])
    assert not prompt_confirm(io.StringIO(""), io.StringIO())(["/a"])  # end of input
    endless = io.StringIO("?\n" * 100)
    assert not prompt_confirm(endless, io.StringIO())(["/a"])  # bounded
