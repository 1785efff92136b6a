"""FSNamesystemAuditLogger: one line per namespace call on the logger ``FSNamesystem.audit``.

Hadoop's default audit logger (``FSNamesystemAuditLogger.logAuditEvent``), field for field
and in its order, tab-separated::

    allowed=true	ugi=alice (auth:CERTIFICATE)	ip=/127.0.0.1	cmd=mkdirs	src=/a/b	dst=null	perm=alice:supergroup:rwxr-xr-x	proto=rpc

``ugi`` is the caller as UserGroupInformation prints it; ``ip`` is Java's
``InetAddress.toString()`` of the client (``/127.0.0.1``; ``null`` for a call from inside
the NameNode); ``src`` and ``dst`` are the call's arguments, escaped as Java's
``StringEscapeUtils.escapeJava`` does (``null`` when absent); ``perm`` is the
``owner:group:mode`` of the inode the call left (``null`` for a refused call and the calls
Hadoop logs without one: getfileinfo, listStatus, delete, setTimes... see FSNamesystem).
As Hadoop, a call is logged when it is allowed or refused by an AccessControlException;
one that fails otherwise (a missing file, say) is not. The daemon sends the logger's lines
to ``hdfs-audit.log`` (``hdfs.audit.logger`` in log4j.properties, docs/security.md).

Refused calls are counted by operation for ``/prom`` whether or not the log is written.
"""

from __future__ import annotations

import logging
import queue
import threading
from logging.handlers import QueueHandler, QueueListener

from hadoop_qjm.common.fs_permission import FsPermission
from hadoop_qjm.common.java_properties import unicode_escape
from hadoop_qjm.common.rolling_audit_file_handler import RollingAuditFileHandler
from hadoop_qjm.common.security.user_group_information import UserGroupInformation
from hadoop_qjm.namenode.fs_directory import INode

__all__ = [
    "AUDIT_LOG",
    "AUDIT_LOGGER_NAME",
    "AsyncAuditLog",
    "FSNamesystemAuditLogger",
    "audit_line",
    "escape_java",
]

#: The last two parts of Hadoop's ``org.apache.hadoop.hdfs.server.namenode.FSNamesystem.audit``
#: (what its RFAAUDIT layout, ``%c{2}``, prints).
AUDIT_LOGGER_NAME = "FSNamesystem.audit"
AUDIT_LOG = logging.getLogger(AUDIT_LOGGER_NAME)

_JAVA_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\n": "\\n",
    "\t": "\\t",
    "\f": "\\f",
    "\r": "\\r",
}


def escape_java(text: str | None) -> str:
    """Java's ``StringEscapeUtils.escapeJava`` (``"null"`` for None): quotes, backslashes
    and control characters escaped, anything outside printable ASCII as ``\\uXXXX`` (two
    of them, a surrogate pair, above U+FFFF). A tab in a path cannot split a field."""
    if text is None:
        return "null"
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return text
    out = []
    for char in text:
        escaped = _JAVA_ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif 32 <= ord(char) <= 0x7F:
            out.append(char)
        else:
            out.append(unicode_escape(char))
    return "".join(out)


def audit_line(
    succeeded: bool,
    ugi: UserGroupInformation,
    ip: str | None,
    cmd: str,
    src: str | None,
    dst: str | None,
    perm: str | None,
) -> str:
    """One audit line, as FSNamesystemAuditLogger.logAuditEvent builds it (one join, as
    Hadoop's one StringBuilder)."""
    return "".join(
        (
            "allowed=true\tugi=" if succeeded else "allowed=false\tugi=",
            str(ugi),
            "\tip=null\tcmd=" if ip is None else "\tip=/" + ip + "\tcmd=",
            cmd,
            "\tsrc=",
            escape_java(src),
            "\tdst=",
            escape_java(dst),
            "\tperm=",
            "null" if perm is None else perm,
            "\tproto=rpc",
        )
    )


class FSNamesystemAuditLogger:
    """Writes audit lines on ``logger`` (at INFO) and counts refused calls by operation."""

    def __init__(self, logger: logging.Logger = AUDIT_LOG) -> None:
        self.logger = logger
        self._lock = threading.Lock()
        self._denied: dict[str, int] = {}

    @property
    def enabled(self) -> bool:
        """Whether lines are wanted at all (else none is even formatted)."""
        return self.logger.isEnabledFor(logging.INFO)

    def perm_of(self, node: INode | None) -> str | None:
        """The ``perm`` field of ``node`` (HdfsFileStatus owner:group:permission); None
        when there is no node or no line will be written."""
        if node is None or not self.enabled:
            return None
        return f"{node.user}:{node.group}:{FsPermission(node.mode)}"

    def log_audit_event(
        self,
        succeeded: bool,
        ugi: UserGroupInformation,
        ip: str | None,
        cmd: str,
        src: str | None,
        dst: str | None = None,
        perm: str | None = None,
    ) -> None:
        logger = self.logger
        if logger.isEnabledFor(logging.INFO):
            line = audit_line(succeeded, ugi, ip, cmd, src, dst, perm)
            handlers = logger.handlers
            if (
                len(handlers) == 1
                and type(handlers[0]) is RollingAuditFileHandler
                and handlers[0].level <= logging.INFO
                and not logger.filters
            ):
                # RFAAUDIT alone: the line straight into the file, with no LogRecord
                handlers[0].append(line)
                return
            # Logger.info would look up the caller's frame (findCaller) for a file name and
            # line the RFAAUDIT layout never prints: a fifth of a line's cost.
            logger.handle(logger.makeRecord(logger.name, logging.INFO, __file__, 0, line, (), None))

    def count_denied(self, operation: str) -> None:
        with self._lock:
            self._denied[operation] = self._denied.get(operation, 0) + 1

    def denied_calls(self) -> dict[str, int]:
        """Calls refused with an AccessControlException so far, by operation."""
        with self._lock:
            return dict(self._denied)


class AsyncAuditLog:
    """``dfs.namenode.audit.log.async``: the audit lines handed to a queue and written by one
    background thread, as Hadoop wraps the audit logger's appenders in a log4j
    AsyncAppender (FSNamesystem's constructor).

    :meth:`start` moves ``logger``'s handlers behind a QueueHandler and a QueueListener
    thread; :meth:`stop` (the NameNode's stop) writes every line queued before it, joins
    the thread and gives the handlers back, so a clean stop loses no line. The daemon's
    ``hdfs-audit.log`` (a :class:`RollingAuditFileHandler`, the logger's only kind of
    handler) needs no queue and no records: its own writer thread writes the lines listed
    since its last write in one write, the same start and stop. When the logger is already
    asynchronous (another NameNode in this process started it), this one leaves it to its
    owner.
    """

    def __init__(self, logger: logging.Logger = AUDIT_LOG) -> None:
        self.logger = logger
        self._listener: QueueListener | None = None
        self._queue_handler: QueueHandler | None = None
        self._handlers: list[logging.Handler] = []
        self._writers: list[RollingAuditFileHandler] = []

    def start(self) -> None:
        logger = self.logger
        if self._listener is not None or any(isinstance(h, QueueHandler) for h in logger.handlers):
            return
        if logger.handlers and all(type(h) is RollingAuditFileHandler for h in logger.handlers):
            # the daemon's RFAAUDIT: its own writer thread, many lines to a write
            self._writers = [h for h in logger.handlers if h.start_writer()]
            return
        self._handlers = list(logger.handlers)
        lines: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
        self._listener = QueueListener(lines, *self._handlers, respect_handler_level=True)
        self._queue_handler = QueueHandler(lines)
        for handler in self._handlers:
            logger.removeHandler(handler)
        logger.addHandler(self._queue_handler)
        self._listener.start()

    def stop(self) -> None:
        """Drain the queue into the handlers, join the writer thread, restore (idempotent)."""
        writers, self._writers = self._writers, []
        for handler in writers:
            handler.stop_writer()
        listener, self._listener = self._listener, None
        if listener is None:
            return
        for handler in self._handlers:  # lines logged from now on are written at once
            self.logger.addHandler(handler)
        self.logger.removeHandler(self._queue_handler)  # type: ignore[arg-type]
        listener.stop()  # writes what was queued before, then joins
        self._queue_handler = None
