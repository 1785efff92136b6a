"""Where hdfs-py's commands and daemons log, as Hadoop decides it: the root logger's level
and appenders come from ``$HADOOP_ROOT_LOGGER``, else ``hadoop.root.logger`` of the
configuration directory's ``log4j.properties``, else the command's default; per-logger
levels and the rolling file's size and count come from that file
(:mod:`hadoop_qjm.common.log4j_properties`). A daemon's log file is Hadoop's
``$HADOOP_LOG_DIR/hadoop-<ident>-<daemon>-<host>.log``; the NameNode's audit log is
``hdfs-audit.log`` beside it (``hdfs.audit.logger``, ``$HDFS_AUDIT_LOGGER``)."""

from __future__ import annotations

import dataclasses
import logging
import os
import socket
import sys
from logging.handlers import RotatingFileHandler

from hadoop_qjm.common.log4j_properties import (
    AUDIT_APPENDERS,
    LoggingSettings,
    parse_log4j_properties,
    parse_root_logger,
)
from hadoop_qjm.common.rolling_audit_file_handler import RollingAuditFileHandler

__all__ = [
    "AUDIT_LOG_FILE",
    "LOG4J_PROPERTIES",
    "configure_audit_logging",
    "configure_logging",
    "daemon_log_file",
    "default_log_dir",
    "logging_settings",
    "set_conf_dir_in_use",
]

LOG4J_PROPERTIES = "log4j.properties"
#: log4j.appender.RFAAUDIT.File of Hadoop's log4j.properties, in the daemon's log directory.
AUDIT_LOG_FILE = "hdfs-audit.log"
#: The NameNode's hdfs.audit.logger when neither log4j.properties nor $HDFS_AUDIT_LOGGER sets it.
DEFAULT_AUDIT_LOGGER = (logging.INFO, ("RFAAUDIT",))
FILE_APPENDERS = ("RFA", "DRFA")
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_conf_dir_in_use: str | None = None


class _StderrHandler(logging.StreamHandler):
    """A handler writing to whatever ``sys.stderr`` is when a record is emitted (as
    logging's own last-resort handler), never to a stream replaced and closed since."""

    def __init__(self) -> None:
        logging.Handler.__init__(self)

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr


def set_conf_dir_in_use(conf_dir: str | None) -> None:
    """The configuration directory of this process (hdfs-py's ``--config``, else
    ``$HADOOP_CONF_DIR``, else the installation's), where ``log4j.properties`` is read."""
    global _conf_dir_in_use
    _conf_dir_in_use = conf_dir


def logging_settings(conf_dir: str | None = None) -> LoggingSettings:
    """The settings of ``<conf dir>/log4j.properties`` with ``$HADOOP_ROOT_LOGGER`` over its
    ``hadoop.root.logger``; the defaults when there is no such file."""
    conf_dir = conf_dir or _conf_dir_in_use
    settings = LoggingSettings()
    if conf_dir:
        path = os.path.join(conf_dir, LOG4J_PROPERTIES)
        try:
            with open(path, "rb") as f:
                text = f.read()
        except FileNotFoundError:
            text = None
        if text is not None:
            settings = parse_log4j_properties(text, path)
    env = os.environ.get("HADOOP_ROOT_LOGGER", "").strip()
    if env:
        level, appenders = parse_root_logger(env, "HADOOP_ROOT_LOGGER")
        settings = dataclasses.replace(
            settings,
            root_level=level if level is not None else settings.root_level,
            appenders=appenders,
        )
    env = os.environ.get("HDFS_AUDIT_LOGGER", "").strip()
    if env:
        audit = parse_root_logger(env, "HDFS_AUDIT_LOGGER", AUDIT_APPENDERS)
        settings = dataclasses.replace(settings, audit_logger=audit)
    return settings


def configure_logging(
    level: str | None = None,
    log_file: str | None = None,
    *,
    default_level: str = "WARN",
    settings: LoggingSettings | None = None,
) -> None:
    """Log in Hadoop's log4j-like layout to the appenders named (``console``: stderr;
    ``RFA``: ``log_file``, rolled at ``hadoop.log.maxfilesize``); with no appender named, to
    stderr and to ``log_file`` when given.

    The root level is ``level`` when given, else the configured one (``$HADOOP_ROOT_LOGGER``,
    else ``hadoop.root.logger``), else ``default_level`` (WARN for short commands, INFO for
    daemons).
    """
    from hadoop_qjm.common.log4j_properties import python_level

    settings = settings or logging_settings()
    if level is not None:
        root_level = python_level(level, "log level")
    elif settings.root_level is not None:
        root_level = settings.root_level
    else:
        root_level = python_level(default_level, "log level")
    appenders = settings.appenders
    to_file = bool(log_file) and (not appenders or any(a in FILE_APPENDERS for a in appenders))
    to_console = not appenders or "console" in appenders or not to_file
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    handlers: list[logging.Handler] = []
    if to_console:
        handlers.append(_StderrHandler())
    if to_file:
        handlers.append(
            RotatingFileHandler(log_file, maxBytes=settings.max_bytes, backupCount=settings.backups)
        )
    fmt = logging.Formatter(LOG_FORMAT)
    for handler in handlers:
        handler.setFormatter(fmt)
        root.addHandler(handler)
    root.setLevel(root_level)
    for name, logger_level in settings.logger_levels.items():
        logging.getLogger(name).setLevel(logger_level)


def configure_audit_logging(
    logger_name: str, daemon_log: str | None, settings: LoggingSettings | None = None
) -> str | None:
    """Send ``logger_name``'s lines (the NameNode's ``FSNamesystem.audit``) where
    ``hdfs.audit.logger`` says, never into the daemon's own log (log4j's additivity=false):
    ``RFAAUDIT`` (the default) is ``hdfs-audit.log`` beside ``daemon_log``, rolled at
    ``hdfs.audit.log.maxfilesize``; ``console`` is stderr; ``NullAppender`` nowhere. Without
    a daemon log file the default writes nowhere and a named ``RFAAUDIT`` writes into the
    default log directory. Returns the audit file's path, None when there is none."""
    settings = settings or logging_settings()
    level, appenders = settings.audit_logger or DEFAULT_AUDIT_LOGGER
    logger = logging.getLogger(logger_name)
    for handler in list(logger.handlers):
        logger.removeHandler(handler)
        handler.close()
    logger.propagate = False
    path = None
    handlers: list[logging.Handler] = []
    if "RFAAUDIT" in appenders and (daemon_log or settings.audit_logger is not None):
        log_dir = os.path.dirname(daemon_log) if daemon_log else default_log_dir()
        os.makedirs(log_dir, exist_ok=True)
        path = os.path.join(log_dir, AUDIT_LOG_FILE)
        handlers.append(
            RollingAuditFileHandler(
                path, settings.audit_max_bytes, settings.audit_backups, logger_name
            )
        )
    if "console" in appenders:
        handlers.append(_StderrHandler())
    fmt = logging.Formatter(LOG_FORMAT)  # Hadoop's RFAAUDIT layout: %d{ISO8601} %p %c{2}: %m
    for handler in handlers:
        handler.setFormatter(fmt)
        logger.addHandler(handler)
    # Nowhere to write: a level above every record, so that no audit line is even formatted.
    logger.setLevel(
        (logging.INFO if level is None else level) if handlers else logging.CRITICAL + 10
    )
    return path


def _user_name() -> str:
    """The current user's name (``id -un``), else the uid."""
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def default_log_dir(environ: dict[str, str] | None = None) -> str:
    """``$HADOOP_LOG_DIR``, else ``$HADOOP_HOME/logs``, else ``/tmp/hadoop-<user>/logs``:
    never inside the installation or the source tree."""
    environ = os.environ if environ is None else environ
    if environ.get("HADOOP_LOG_DIR"):
        return environ["HADOOP_LOG_DIR"]
    if environ.get("HADOOP_HOME"):
        return os.path.join(environ["HADOOP_HOME"], "logs")
    return os.path.join("/tmp", f"hadoop-{environ.get('USER') or _user_name()}", "logs")


def daemon_log_file(daemon: str, settings: LoggingSettings | None = None) -> str | None:
    """``$HADOOP_LOG_DIR/hadoop-<ident>-<daemon>-<host>.log`` (Hadoop's name), or None when
    ``HADOOP_LOG_DIR`` is unset and no file appender (``RFA``) is configured (``RFA`` without
    ``HADOOP_LOG_DIR`` logs to the default directory of ``hdfs-py --daemon``).
    ``<ident>`` is ``$HADOOP_IDENT_STRING``, else ``$USER``, else the user's name (as
    ``hdfs-py --daemon`` names its ``.out`` file)."""
    log_dir = os.environ.get("HADOOP_LOG_DIR")
    if not log_dir:
        settings = settings or logging_settings()
        if not any(a in FILE_APPENDERS for a in settings.appenders):
            return None
        log_dir = default_log_dir()
    os.makedirs(log_dir, exist_ok=True)
    ident = os.environ.get("HADOOP_IDENT_STRING") or os.environ.get("USER") or _user_name()
    return os.path.join(log_dir, f"hadoop-{ident}-{daemon}-{socket.gethostname()}.log")
