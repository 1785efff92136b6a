"""The shape a namespace request must have before anything is resolved (pure).

Hadoop's ``NameNodeRpcServer.checkPathLength`` (``MAX_PATH_LENGTH`` characters,
``MAX_PATH_DEPTH`` levels), ``FSDirectory.verifyMaxComponentLength``
(``dfs.namenode.fs-limits.max-component-length``), and this port's checks of a mode and of
a user or group name (what the edit log can carry and replay unchanged).
"""

from __future__ import annotations

from collections.abc import Sequence

from hadoop_qjm.common.exceptions import (
    IllegalArgumentException,
    InvalidPathException,
    IOException,
    PathComponentTooLongException,
)
from hadoop_qjm.namenode.fs_directory import SURROGATE

__all__ = [
    "MAX_PATH_DEPTH",
    "MAX_PATH_LENGTH",
    "check_component_length",
    "check_mode",
    "check_path_length",
    "check_principal",
]

#: HdfsServerConstants.MAX_PATH_LENGTH / MAX_PATH_DEPTH (NameNodeRpcServer.checkPathLength).
MAX_PATH_LENGTH = 8000
MAX_PATH_DEPTH = 1000
#: Longest user or group name accepted (the edit log's UTF8 strings truncate far above it).
_MAX_PRINCIPAL_LENGTH = 1024


def check_path_length(src: object, operation: str) -> None:
    if not isinstance(src, str):
        raise InvalidPathException(repr(src))
    if len(src) > MAX_PATH_LENGTH or src.count("/") > MAX_PATH_DEPTH:
        raise IOException(
            f"{operation}: Pathname too long.  Limit {MAX_PATH_LENGTH} characters, "
            f"{MAX_PATH_DEPTH} levels."
        )


def check_component_length(components: Sequence[str], index: int, limit: int) -> None:
    """The UTF-8 length of ``components[index]`` against ``limit`` (0: none); the message
    names the directory above it (joined only then: this runs for every name created)."""
    if not components:
        return  # the root has no name
    name = components[index]
    if limit <= 0 or len(name) * 4 <= limit:  # UTF-8 takes at most 4 bytes a character
        return
    length = len(name.encode("utf-8"))
    if length > limit:
        parent_path = "/" + "/".join(components[:index])
        raise PathComponentTooLongException(
            f"The maximum path component name limit of {name} in directory {parent_path} "
            f"is exceeded: limit={limit} length={length}"
        )


def check_mode(mode: object) -> None:
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 0o7777:
        raise IllegalArgumentException(f"Invalid permission mode {mode!r}")


def check_principal(name: object, what: str) -> None:
    if not isinstance(name, str) or len(name) > _MAX_PRINCIPAL_LENGTH:
        raise IllegalArgumentException(f"Invalid {what} name {name!r}")
    if not name.isascii() and SURROGATE.search(name):
        raise IllegalArgumentException(f"Invalid {what} name {name!r}: it has surrogates")
