"""QJM's exceptions, with Hadoop's class names, and their wire form.

On the wire every error is the one Thrift exception ``QJournalException``
carrying the Java class name and the message — the same information Hadoop
RPC's ``RemoteException`` carries. :func:`to_wire` builds it; :func:`from_wire`
maps it back to the typed exception, so a caller writes
``except JournalOutOfSyncException`` whether the error was raised locally or
on a JournalNode.
"""

from __future__ import annotations

import traceback
from collections.abc import Mapping
from typing import Any

from hadoop_qjm.common.exceptions import (
    AuthorizationException,
    HadoopAssertionError,
    HadoopException,
    IllegalArgumentException,
    IllegalStateException,
    IOException,
    register_exception,
)
from hadoop_qjm.common.net_exceptions import BindException, ConnectException, SocketTimeoutException
from hadoop_qjm.ipc.exceptions import (
    RemoteException,
    exception_from_wire,
    wire_class_name,
    wire_message,
)

# The Thrift modules are imported inside to_wire/from_wire, not here: the pure
# rules module raises these exceptions and must not pull in Thrift (STYLE.md
# habit 1).

__all__ = [
    # re-exported from hadoop_qjm.common.exceptions
    "HadoopException",
    "IOException",
    "IllegalArgumentException",
    "IllegalStateException",
    "HadoopAssertionError",
    "AuthorizationException",
    # QJM's own
    "JournalNotFormattedException",
    "JournalOutOfSyncException",
    "JournalInUseException",
    "JournalMembershipException",
    "JournalNodesBehindException",
    "SegmentMismatchException",
    "NewerTxnIdException",
    "CacheMissException",
    "LoggerTooFarBehindException",
    "QuorumException",
    "BindException",
    "ConnectException",
    "SocketTimeoutException",
    "RemoteException",
    "to_wire",
    "from_wire",
    "roundtrip_exception",
]


@register_exception
class JournalNotFormattedException(IOException):
    """The journal's storage is not formatted (``Journal.checkFormatted``)."""

    java_name = "org.apache.hadoop.hdfs.qjournal.protocol.JournalNotFormattedException"


@register_exception
class JournalOutOfSyncException(IOException):
    """The writer and the journal disagree on the log's state (``Journal.checkSync``)."""

    java_name = "org.apache.hadoop.hdfs.qjournal.protocol.JournalOutOfSyncException"


@register_exception
class JournalMembershipException(IOException):
    """The journal's JournalNode set changed (or is changing) and the caller uses
    another one (docs/journalnode.md, "Online, by joint consensus"). Not Hadoop's:
    Hadoop cannot change the set of a running journal."""

    java_name = "org.apache.hadoop.hdfs.qjournal.protocol.JournalMembershipException"


@register_exception
class JournalNodesBehindException(JournalMembershipException):
    """A JournalNode set change cannot finish yet: too few nodes of the new set hold the
    finalized history; their syncers are still copying it (the writer stays joint)."""

    java_name = "org.apache.hadoop.hdfs.qjournal.protocol.JournalNodesBehindException"


class SegmentMismatchException(JournalOutOfSyncException):
    """``journal()`` names a segment other than the open one (digest §2, journal check 4).

    A JournalOutOfSyncException on the wire (same ``java_name``, deliberately
    not registered); the distinct type lets the Journal tell the one case in
    which it must abort its open segment before re-raising.
    """


@register_exception
class JournalInUseException(IOException):
    """A format was refused because a writer uses the journal (issue 33,
    ``format_rules.live_writer_reason``). Not Hadoop's: Hadoop formats anyway."""

    java_name = "org.apache.hadoop.hdfs.qjournal.protocol.JournalInUseException"


@register_exception
class NewerTxnIdException(IOException):
    """``getJournaledEdits`` asked for txids past the highest written (HDFS-16659)."""

    java_name = "org.apache.hadoop.hdfs.qjournal.server.NewerTxnIdException"


@register_exception
class CacheMissException(IOException):
    """The JournaledEditsCache does not hold the requested txids.

    ``cache_miss_amount`` is how many txids short the cache fell (0 for an
    empty cache); it feeds the ``RpcRequestCacheMissAmount`` metric and
    travels on the wire.
    """

    java_name = "org.apache.hadoop.hdfs.qjournal.server.JournaledEditsCache.CacheMissException"

    def __init__(self, message: str = "", cache_miss_amount: int = 0) -> None:
        super().__init__(message)
        self.cache_miss_amount = cache_miss_amount

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (str(self), self.cache_miss_amount))


@register_exception
class LoggerTooFarBehindException(IOException):
    """An IPCLoggerChannel's queue of un-acked edits is over its limit."""

    java_name = "org.apache.hadoop.hdfs.qjournal.client.LoggerTooFarBehindException"


@register_exception
class QuorumException(IOException):
    """Too many JournalNodes failed a quorum call."""

    java_name = "org.apache.hadoop.hdfs.qjournal.client.QuorumException"

    @classmethod
    def create(
        cls,
        simple_msg: str,
        successes: Mapping[Any, Any],
        exceptions: Mapping[Any, BaseException],
    ) -> QuorumException:
        """Hadoop's ``QuorumException.create``: list every success and every failure.

        Tests match fragments of this text ("Got too many exceptions to
        achieve quorum size 2/3"), so the layout follows Hadoop's exactly: a
        ``None`` success prints as ``null [success]``; a failure prints its
        message, or its full traceback if it is a "runtime" error (anything
        but an I/O error or an assertion) or has no message.
        """
        if not exceptions:
            raise IllegalArgumentException("Must pass exceptions")
        parts = [simple_msg, ". "]
        if successes:
            parts.append(f"{len(successes)} successful responses:\n")
            parts.append(
                "\n".join(
                    f"{key}: {'null [success]' if value is None else value}"
                    for key, value in successes.items()
                )
            )
            parts.append("\n")
        parts.append(f"{len(exceptions)} exceptions thrown:\n")
        parts.append("\n".join(f"{key}: {_describe(exc)}" for key, exc in exceptions.items()))
        return cls("".join(parts))


def _describe(exc: BaseException) -> str:
    # Java prints a RuntimeException with its stack trace and a checked
    # exception by its message; OSError / AssertionError play the checked role.
    message = str(exc)
    if isinstance(exc, (OSError, AssertionError)) and message:
        return message
    # StringUtils.stringifyException: "<class>: <message>" then the stack.
    name = exc.java_name if isinstance(exc, HadoopException) else type(exc).__qualname__
    text = f"{name}: {message}" if message else name
    stack = "".join(traceback.format_tb(exc.__traceback__)).rstrip()
    return f"{text}\n{stack}" if stack else text


def to_wire(exc: BaseException) -> Any:
    """The ``QJournalException`` a server sends for ``exc``.

    A :class:`HadoopException` travels as its ``java_name``; any other
    ``OSError`` as ``java.io.IOException``; a bare ``AssertionError`` as
    ``java.lang.AssertionError``; anything else as its Python class name
    (the client then sees a :class:`RemoteException`).
    """
    from hadoop_qjm.qjournal.protocol.thrift_idl import qjournal_thrift

    amount = exc.cache_miss_amount if isinstance(exc, CacheMissException) else None
    return qjournal_thrift.QJournalException(
        className=wire_class_name(exc), message=wire_message(exc), cacheMissAmount=amount
    )


def from_wire(texc: Any) -> IOException | HadoopException:
    """The typed exception for a received ``QJournalException``.

    Known class names (Java's, or our Python class names) give their type;
    Java's nested-class spelling ``Outer$Inner`` is accepted too. An unknown
    name gives a :class:`RemoteException` that keeps the name and message.
    """
    exc = exception_from_wire(texc.className, texc.message)
    if isinstance(exc, CacheMissException):
        exc.cache_miss_amount = texc.cacheMissAmount or 0
    return exc


def roundtrip_exception(exc: BaseException) -> IOException | HadoopException:
    """``exc`` as a client would receive it: to_wire, binary serialization, from_wire.

    For in-process transports that must behave exactly like the socket one.
    """
    from hadoop_qjm.qjournal.protocol.wire import thrift_from_bytes, thrift_to_bytes

    texc = to_wire(exc)
    return from_wire(thrift_from_bytes(type(texc), thrift_to_bytes(texc)))
