"""exceptions.py: Hadoop's names, and a faithful trip across the wire."""

from __future__ import annotations

import pickle

import pytest

from hadoop_qjm.common.exceptions import (
    HadoopAssertionError,
    IllegalArgumentException,
    IllegalStateException,
    IOException,
    exception_for_name,
)
from hadoop_qjm.qjournal.protocol.exceptions import (
    AuthorizationException,
    BindException,
    CacheMissException,
    ConnectException,
    JournalNotFormattedException,
    JournalOutOfSyncException,
    LoggerTooFarBehindException,
    NewerTxnIdException,
    QuorumException,
    RemoteException,
    SegmentMismatchException,
    SocketTimeoutException,
    from_wire,
    roundtrip_exception,
    to_wire,
)
from hadoop_qjm.qjournal.protocol.thrift_idl import qjournal_thrift

JAVA_NAMES = {
    JournalNotFormattedException: (
        "org.apache.hadoop.hdfs.qjournal.protocol.JournalNotFormattedException"
    ),
    JournalOutOfSyncException: "org.apache.hadoop.hdfs.qjournal.protocol.JournalOutOfSyncException",
    NewerTxnIdException: "org.apache.hadoop.hdfs.qjournal.server.NewerTxnIdException",
    CacheMissException: (
        "org.apache.hadoop.hdfs.qjournal.server.JournaledEditsCache.CacheMissException"
    ),
    LoggerTooFarBehindException: (
        "org.apache.hadoop.hdfs.qjournal.client.LoggerTooFarBehindException"
    ),
    QuorumException: "org.apache.hadoop.hdfs.qjournal.client.QuorumException",
    AuthorizationException: "org.apache.hadoop.security.authorize.AuthorizationException",
    BindException: "java.net.BindException",
    ConnectException: "java.net.ConnectException",
    SocketTimeoutException: "java.net.SocketTimeoutException",
    IOException: "java.io.IOException",
    IllegalArgumentException: "java.lang.IllegalArgumentException",
    IllegalStateException: "java.lang.IllegalStateException",
    HadoopAssertionError: "java.lang.AssertionError",
}


@pytest.mark.parametrize("cls", list(JAVA_NAMES), ids=lambda c: c.__name__)
def test_java_names_are_registered_and_round_trip(cls: type) -> None:
    assert cls.java_name == JAVA_NAMES[cls]
    assert type(exception_for_name(cls.java_name, "m")) is cls
    back = roundtrip_exception(cls("a message ; journal id: j"))
    assert type(back) is cls
    assert str(back) == "a message ; journal id: j"


def test_qjm_exceptions_are_io_exceptions() -> None:
    for cls in JAVA_NAMES:
        if cls not in (IllegalArgumentException, IllegalStateException, HadoopAssertionError):
            assert issubclass(cls, IOException) and issubclass(cls, OSError)


def test_segment_mismatch_travels_as_journal_out_of_sync() -> None:
    exc = SegmentMismatchException("Writer out of sync")
    assert isinstance(exc, JournalOutOfSyncException)
    assert to_wire(exc).className == JournalOutOfSyncException.java_name
    assert type(roundtrip_exception(exc)) is JournalOutOfSyncException


def test_cache_miss_keeps_its_amount() -> None:
    texc = to_wire(CacheMissException("Cache started at txn ID 10", cache_miss_amount=9))
    assert texc.cacheMissAmount == 9
    back = roundtrip_exception(CacheMissException("miss", 9))
    assert isinstance(back, CacheMissException) and back.cache_miss_amount == 9
    # Java's binary name for the nested class is accepted too.
    back = from_wire(
        qjournal_thrift.QJournalException(
            className="org.apache.hadoop.hdfs.qjournal.server.JournaledEditsCache$CacheMissException",
            message="m",
            cacheMissAmount=3,
        )
    )
    assert isinstance(back, CacheMissException) and back.cache_miss_amount == 3
    assert pickle.loads(pickle.dumps(back)).cache_miss_amount == 3


def test_unknown_class_name_becomes_remote_exception_keeping_name_and_message() -> None:
    back = from_wire(
        qjournal_thrift.QJournalException(
            className="java.nio.file.AccessDeniedException", message="no such file"
        )
    )
    assert isinstance(back, IOException) and isinstance(back, RemoteException)
    assert back.class_name == "java.nio.file.AccessDeniedException"
    assert str(back) == "no such file"
    # relaying it sends the original name again
    assert to_wire(back).className == "java.nio.file.AccessDeniedException"
    assert pickle.loads(pickle.dumps(back)).class_name == "java.nio.file.AccessDeniedException"


def test_python_errors_on_the_wire() -> None:
    # any OSError is an IOException to a Java peer
    assert to_wire(FileNotFoundError(2, "No such file", "x")).className == "java.io.IOException"
    assert type(roundtrip_exception(PermissionError("denied"))) is IOException
    # a bare assert in server code stays an assertion on the client
    assert type(roundtrip_exception(AssertionError("broken"))) is HadoopAssertionError
    # anything else keeps its Python class name, message intact
    back = roundtrip_exception(KeyError("k"))
    assert isinstance(back, RemoteException) and back.class_name == "KeyError"
    assert "k" in str(back)
    back = roundtrip_exception(RuntimeError())
    assert back.class_name == "RuntimeError" and str(back) == "RuntimeError()"


def test_missing_class_name_is_an_io_exception() -> None:
    back = from_wire(qjournal_thrift.QJournalException(className=None, message=None))
    assert type(back) is IOException and str(back) == ""


def test_quorum_exception_message_follows_hadoop() -> None:
    exc = QuorumException.create(
        "Got too many exceptions to achieve quorum size 2/3",
        {"127.0.0.1:1": None, "127.0.0.1:2": "ok"},
        {"127.0.0.1:3": JournalOutOfSyncException("Can't write, no segment open")},
    )
    assert str(exc) == (
        "Got too many exceptions to achieve quorum size 2/3. 2 successful responses:\n"
        "127.0.0.1:1: null [success]\n"
        "127.0.0.1:2: ok\n"
        "1 exceptions thrown:\n"
        "127.0.0.1:3: Can't write, no segment open"
    )
    # a runtime error is printed with its traceback, as Java's stringifyException does
    exc = QuorumException.create("failed", {}, {"a": IllegalStateException("bad state")})
    assert str(exc).startswith("failed. 1 exceptions thrown:\na: ")
    assert "java.lang.IllegalStateException: bad state" in str(exc)
    with pytest.raises(IllegalArgumentException, match="Must pass exceptions"):
        QuorumException.create("x", {}, {})
