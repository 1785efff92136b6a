"""The part of Hadoop's ``log4j.properties`` that hadoop-qjm-py reads: the root logger's
level and appenders, the rolling file's size and count, and per-logger levels. Pure code:
the caller reads the file."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.common.java_properties import load_properties
from hadoop_qjm.common.log_level import parse_level

__all__ = ["LoggingSettings", "parse_log4j_properties", "python_level", "APPENDERS"]

#: console: stderr; RFA (and Hadoop's DRFA): the daemon's rolling .log file.
APPENDERS = ("console", "RFA", "DRFA")
#: Where hdfs.audit.logger sends the NameNode's audit lines: RFAAUDIT, hdfs-audit.log beside
#: the daemon's log; NullAppender, nowhere; console, stderr.
AUDIT_APPENDERS = ("RFAAUDIT", "NullAppender", "console")
DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_BACKUPS = 20
_SIZE = re.compile(r"^\s*(\d+)\s*(KB|MB|GB)?\s*$", re.IGNORECASE)
_UNITS = {None: 1, "KB": 1024, "MB": 1024**2, "GB": 1024**3}


def python_level(text: str, what: str) -> int:
    """A log4j level name as a :mod:`logging` level; ``what`` names it in the error."""
    level = parse_level(text)
    if level is None:
        raise IllegalArgumentException(
            f"{what}: '{text}' is not a level (ALL, TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF)"
        )
    return level


def parse_root_logger(
    text: str, what: str, allowed: tuple[str, ...] = APPENDERS
) -> tuple[int | None, tuple[str, ...]]:
    """``LEVEL[,appender...]`` -> (level or None when empty, appenders)."""
    parts = [p.strip() for p in text.split(",")]
    level = python_level(parts[0], what) if parts[0] else None
    appenders = tuple(p for p in parts[1:] if p)
    for appender in appenders:
        if appender not in allowed:
            names = ", ".join(allowed[:-1]) + f" or {allowed[-1]}"
            raise IllegalArgumentException(f"{what}: unknown appender '{appender}' ({names})")
    return level, appenders


@dataclass(frozen=True)
class LoggingSettings:
    root_level: int | None = None
    appenders: tuple[str, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES
    backups: int = DEFAULT_BACKUPS
    logger_levels: dict[str, int] = field(default_factory=dict)
    #: hdfs.audit.logger (None: not set, the NameNode's default INFO,RFAAUDIT applies) and
    #: the audit file's hdfs.audit.log.maxfilesize / maxbackupindex.
    audit_logger: tuple[int | None, tuple[str, ...]] | None = None
    audit_max_bytes: int = DEFAULT_MAX_BYTES
    audit_backups: int = DEFAULT_BACKUPS


def parse_log4j_properties(text: str, source: str) -> LoggingSettings:
    """The settings of a ``log4j.properties`` text; ``source`` (its path) names it in errors."""
    try:
        props = load_properties(text)
    except IllegalArgumentException as e:
        raise IllegalArgumentException(f"{source}: {e}") from None
    root_level: int | None = None
    appenders: tuple[str, ...] = ()
    if "hadoop.root.logger" in props:
        root_level, appenders = parse_root_logger(
            props["hadoop.root.logger"], f"{source}: hadoop.root.logger"
        )
    max_bytes = _size(props, "hadoop.log.maxfilesize", source)
    backups = _count(props, "hadoop.log.maxbackupindex", source)
    audit_logger = None
    if "hdfs.audit.logger" in props:
        audit_logger = parse_root_logger(
            props["hdfs.audit.logger"], f"{source}: hdfs.audit.logger", AUDIT_APPENDERS
        )
    levels = {}
    for key, value in props.items():
        if key.startswith("log4j.logger.") and len(key) > len("log4j.logger."):
            name = key[len("log4j.logger.") :]
            # log4j's "LEVEL, appender" form: the level is what is read here.
            levels[name] = python_level(value.split(",", 1)[0], f"{source}: {key}")
    return LoggingSettings(
        root_level,
        appenders,
        max_bytes,
        backups,
        levels,
        audit_logger,
        _size(props, "hdfs.audit.log.maxfilesize", source),
        _count(props, "hdfs.audit.log.maxbackupindex", source),
    )


def _size(props: dict[str, str], key: str, source: str) -> int:
    if key not in props:
        return DEFAULT_MAX_BYTES
    match = _SIZE.match(props[key])
    if not match or int(match.group(1)) <= 0:
        raise IllegalArgumentException(
            f"{source}: {key}: '{props[key]}' is not a size such as 256MB"
        )
    unit = match.group(2).upper() if match.group(2) else None
    return int(match.group(1)) * _UNITS[unit]


def _count(props: dict[str, str], key: str, source: str) -> int:
    if key not in props:
        return DEFAULT_BACKUPS
    text_value = props[key].strip()
    if not text_value.isdigit():
        raise IllegalArgumentException(f"{source}: {key}: '{text_value}' is not a count")
    return int(text_value)
