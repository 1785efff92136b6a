"""The exception tree, with Hadoop's class names.

Every error that can cross a process boundary (an RPC, an HTTP transfer, the
command line) is one of these types. On the wire an error travels as its
class name plus its message; ``exception_for_name`` maps it back.
"""

from __future__ import annotations

from hadoop_qjm.conf.errors import (  # the bases conf needs live below common
    ConfigurationError,
    HadoopException,
    IllegalArgumentException,
)

__all__ = [
    "HadoopException",
    "IOException",
    "IllegalArgumentException",
    "IllegalStateException",
    "HadoopAssertionError",
    "CorruptionException",
    "InconsistentFSStateException",
    "EditLogCorruptionError",
    "ConfigurationError",
    "UsageError",
    "FileNotFoundException",
    "FileAlreadyExistsException",
    "ParentNotDirectoryException",
    "PathIsNotEmptyDirectoryException",
    "InvalidPathException",
    "PathComponentTooLongException",
    "ExitException",
    "AccessControlException",
    "AuthorizationException",
    "always_assert",
    "exception_for_name",
    "register_exception",
    "trace_if_bug",
]


class IOException(HadoopException, OSError):
    """Hadoop's IOException: an operation failed, the state is unchanged."""

    java_name = "java.io.IOException"

    def __init__(self, message: str = "") -> None:
        # OSError's constructor treats (errno, strerror) specially; keep one message.
        Exception.__init__(self, message)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class IllegalStateException(HadoopException, RuntimeError):
    java_name = "java.lang.IllegalStateException"


class HadoopAssertionError(HadoopException, AssertionError):
    """A broken invariant. Raised by :func:`always_assert`; never stripped by ``-O``."""

    java_name = "java.lang.AssertionError"


class CorruptionException(IOException):
    java_name = "org.apache.hadoop.hdfs.server.namenode.FileJournalManager.CorruptionException"


class InconsistentFSStateException(IOException):
    java_name = "org.apache.hadoop.hdfs.server.common.InconsistentFSStateException"


class EditLogCorruptionError(IOException):
    """An op frame could not be decoded (bad opcode, length, checksum or body)."""

    java_name = "org.apache.hadoop.hdfs.server.namenode.EditLogInputException"


class UsageError(HadoopException, ValueError):
    """A malformed command line: the CLI prints it and exits with status 2."""


# ---- the namespace's errors (what a NameNode client sees; Hadoop's classes and messages) ----


class FileNotFoundException(IOException):
    """A path (or a parent a call needs) does not exist."""

    java_name = "java.io.FileNotFoundException"


class FileAlreadyExistsException(IOException):
    """The target of a create, mkdir or rename already exists (and may not be replaced)."""

    java_name = "org.apache.hadoop.fs.FileAlreadyExistsException"


class ParentNotDirectoryException(IOException):
    """A component of a path that must be a directory is a file."""

    java_name = "org.apache.hadoop.fs.ParentNotDirectoryException"


class PathIsNotEmptyDirectoryException(IOException):
    """A non-recursive delete of a directory that has children."""

    java_name = "org.apache.hadoop.fs.PathIsNotEmptyDirectoryException"


class InvalidPathException(IllegalArgumentException):
    """A path that is not absolute or has a forbidden component (DFSUtil.isValidName).

    ``InvalidPathException(path)`` says "Invalid path name <path>", as Hadoop's one-argument
    constructor does; pass ``reason`` for "Invalid path <path>: <reason>".
    """

    java_name = "org.apache.hadoop.fs.InvalidPathException"

    def __init__(self, path: str = "", reason: str | None = None) -> None:
        if reason is None:
            super().__init__(f"Invalid path name {path}")
        else:
            super().__init__(f"Invalid path {path}: {reason}")

    @classmethod
    def from_wire(cls, message: str) -> InvalidPathException:
        """Rebuild from the message alone (it already says "Invalid path ...")."""
        error = cls.__new__(cls)
        Exception.__init__(error, message)
        return error


class PathComponentTooLongException(IOException):
    """A path component is longer than ``dfs.namenode.fs-limits.max-component-length``."""

    java_name = "org.apache.hadoop.hdfs.protocol.FSLimitException$PathComponentTooLongException"


class ExitException(HadoopException, RuntimeError):
    """Raised after a termination callback returned (Hadoop's ExitUtil.ExitException).

    A NameNode that loses its required journals must stop; the daemon's callback exits the
    process, a test's callback records the call and lets this exception reach the caller.
    """

    java_name = "org.apache.hadoop.util.ExitUtil$ExitException"

    def __init__(self, status: int = 1, message: str = "") -> None:
        super().__init__(message)
        self.status = status

    @classmethod
    def from_wire(cls, message: str) -> ExitException:
        """Rebuild from the message alone (the status does not travel)."""
        return cls(1, message)


class AccessControlException(IOException):
    """The caller may not do this (Hadoop's AccessControlException): e.g. a manual HA
    state change on a NameNode whose failover controller manages its state."""

    java_name = "org.apache.hadoop.security.AccessControlException"


class AuthorizationException(AccessControlException):
    """The caller is not allowed to make this call (Hadoop's service-level authorization).

    The message names the refused identity and what it asked for; a JournalNode raises it
    for a state-changing RPC from an identity outside ``dfs.journalnode.allowed.principals``.
    """

    java_name = "org.apache.hadoop.security.authorize.AuthorizationException"


def trace_if_bug(error: BaseException | None) -> BaseException | None:
    """``exc_info`` for logging ``error``: None for an I/O failure (an OSError, our
    IOException included: its message says what failed, a stack trace adds only noise),
    the error itself for anything else (a bug, whose trace is worth having)."""
    return None if isinstance(error, OSError) else error


def one_line_message(error: BaseException) -> str:
    """``error``'s message on one line, for a command line: its lines joined with "; ",
    or with a space after a line that ends in ":" (a QuorumException's "… 2 exceptions
    thrown:" before each node's line); the class name if it has no message."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    if not lines:
        return type(error).__name__
    text = lines[0]
    for line in lines[1:]:
        text += (" " if text.endswith(":") else "; ") + line
    return text


def always_assert(condition: object, message: str) -> None:
    """Check an invariant; unlike ``assert`` this survives ``python -O`` (STYLE.md habit 7)."""
    if not condition:
        raise HadoopAssertionError(message)


_BY_NAME: dict[str, type[HadoopException]] = {}


def register_exception(cls: type[HadoopException]) -> type[HadoopException]:
    """Make ``cls`` known to :func:`exception_for_name` (usable as a class decorator)."""
    _BY_NAME[cls.java_name] = cls
    _BY_NAME[cls.__name__] = cls
    return cls


def exception_for_name(name: str, message: str) -> HadoopException:
    """Rebuild a typed exception from the class name it carried on the wire."""
    cls = _BY_NAME.get(name) or _BY_NAME.get(name.rsplit(".", 1)[-1]) or IOException
    from_wire = getattr(cls, "from_wire", None)
    return from_wire(message) if from_wire is not None else cls(message)


for _cls in (
    IOException,
    IllegalArgumentException,
    IllegalStateException,
    HadoopAssertionError,
    CorruptionException,
    InconsistentFSStateException,
    EditLogCorruptionError,
    FileNotFoundException,
    FileAlreadyExistsException,
    ParentNotDirectoryException,
    PathIsNotEmptyDirectoryException,
    InvalidPathException,
    PathComponentTooLongException,
    ExitException,
    AccessControlException,
    AuthorizationException,
):
    register_exception(_cls)
