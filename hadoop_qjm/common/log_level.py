"""LogLevel: a daemon's logger levels, read and changed at run time (Hadoop's class).

The servlet half answers ``/logLevel?log=NAME[&level=LEVEL]`` with Hadoop's page: an HTML
page whose result lines start with :data:`MARKER`, the lines ``hdfs-py daemonlog`` prints
(tags stripped)::

    Submitted Class Name: hadoop_qjm.qjournal.server.journal
    Log Class: logging.Logger
    Submitted Level: DEBUG
    Setting Level to DEBUG ...
    Effective Level: DEBUG

``NAME`` is a Python logger name (a module path such as
``hadoop_qjm.qjournal.server.journal``; ``root`` is the root logger), or the Hadoop class
or package name of something ported here (:data:`HADOOP_LOGGERS`:
``org.apache.hadoop.hdfs.qjournal.server.Journal`` is the logger of ``Journal``, and the
page adds a line ``Python Logger: hadoop_qjm.qjournal.server.journal``); any other
``org.apache.`` name is answered ``Unknown class name`` with our loggers listed, and
changes nothing. Levels are log4j's names — ``ALL``, ``TRACE``, ``DEBUG``, ``INFO``,
``WARN``, ``ERROR``, ``FATAL``, ``OFF`` (any case; Python's ``WARNING`` and ``CRITICAL``
too); anything else is answered ``Bad Level`` and changes nothing, as in Hadoop. The change
lasts until the daemon restarts.
"""

from __future__ import annotations

import html
import logging
import re

__all__ = [
    "HADOOP_LOGGERS",
    "LEVEL_NAMES",
    "MARKER",
    "level_name",
    "log_level_page",
    "output_lines",
    "parse_level",
    "python_logger_name",
    "unknown_class_message",
]

#: Hadoop's marker of the result lines the daemonlog command prints.
MARKER = "<!-- OUTPUT -->"
_TAG = re.compile(r"<[^>]*>")

#: log4j names -> Python levels. TRACE and ALL are below DEBUG; OFF is above CRITICAL.
_LEVELS = {
    "ALL": 1,
    "TRACE": 5,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARN": logging.WARNING,
    "WARNING": logging.WARNING,
    "ERROR": logging.ERROR,
    "FATAL": logging.CRITICAL,
    "CRITICAL": logging.CRITICAL,
    "OFF": logging.CRITICAL + 10,
}
_NAMES = {1: "ALL", 5: "TRACE", logging.WARNING: "WARN", logging.CRITICAL: "FATAL"}
#: log4j's levels, as LogLevel's usage lists them.
LEVEL_NAMES = ("ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")

_QJ = "org.apache.hadoop.hdfs.qjournal"
_NN = "org.apache.hadoop.hdfs.server.namenode"
#: The logger of each ported Hadoop class (and package): its module's. The QJM client's
#: classes all log as QuorumJournalManager, as ours do.
HADOOP_LOGGERS = {
    "org.apache.hadoop": "hadoop_qjm",
    _QJ: "hadoop_qjm.qjournal",
    f"{_QJ}.server": "hadoop_qjm.qjournal.server",
    f"{_QJ}.server.Journal": "hadoop_qjm.qjournal.server.journal",
    f"{_QJ}.server.JournalNode": "hadoop_qjm.qjournal.server.journal_node",
    f"{_QJ}.server.JournalNodeSyncer": "hadoop_qjm.qjournal.server.journal_node_syncer",
    f"{_QJ}.server.JournalNodeRpcServer": "hadoop_qjm.qjournal.server.journal_node_rpc_server",
    f"{_QJ}.server.JournalNodeHttpServer": "hadoop_qjm.qjournal.server.journal_node_http_server",
    f"{_QJ}.server.JNStorage": "hadoop_qjm.qjournal.server.jn_storage",
    f"{_QJ}.server.JournaledEditsCache": "hadoop_qjm.qjournal.server.journaled_edits_cache",
    f"{_QJ}.client": "hadoop_qjm.qjournal.client",
    **{
        f"{_QJ}.client.{cls}": "hadoop_qjm.qjournal.client.quorum_journal_manager"
        for cls in (
            "QuorumJournalManager",
            "IPCLoggerChannel",
            "AsyncLoggerSet",
            "QuorumCall",
            "QuorumOutputStream",
        )
    },
    _NN: "hadoop_qjm.namenode",
    f"{_NN}.NameNode": "hadoop_qjm.namenode.name_node",
    f"{_NN}.FSNamesystem": "hadoop_qjm.namenode.fs_namesystem",
    f"{_NN}.FSEditLog": "hadoop_qjm.namenode.fs_edit_log",
    f"{_NN}.FSEditLogLoader": "hadoop_qjm.namenode.fs_edit_log_loader",
    f"{_NN}.FSImage": "hadoop_qjm.namenode.fs_image",
    f"{_NN}.NNStorage": "hadoop_qjm.namenode.nn_storage",
    f"{_NN}.FileJournalManager": "hadoop_qjm.editlog.file_journal_manager",
    f"{_NN}.JournalSet": "hadoop_qjm.namenode.journal_set",
    f"{_NN}.EditLogFileInputStream": "hadoop_qjm.editlog.edit_log_file_input_stream",
    f"{_NN}.EditLogFileOutputStream": "hadoop_qjm.editlog.edit_log_file_output_stream",
    f"{_NN}.RedundantEditLogInputStream": "hadoop_qjm.editlog.redundant_edit_log_input_stream",
    f"{_NN}.TransferFsImage": "hadoop_qjm.namenode.transfer_fs_image",
    f"{_NN}.NameNodeResourceChecker": "hadoop_qjm.namenode.name_node_resource_checker",
    f"{_NN}.ha.EditLogTailer": "hadoop_qjm.namenode.ha.edit_log_tailer",
    f"{_NN}.ha.StandbyCheckpointer": "hadoop_qjm.namenode.ha.standby_checkpointer",
    f"{_NN}.ha.BootstrapStandby": "hadoop_qjm.namenode.ha.bootstrap_standby",
    "org.apache.hadoop.hdfs.tools.DFSZKFailoverController": (
        "hadoop_qjm.namenode.ha.dfs_zk_failover_controller"
    ),
    "org.apache.hadoop.ha": "hadoop_qjm.ha",
    "org.apache.hadoop.ha.ZKFailoverController": "hadoop_qjm.ha.zk_failover_controller",
    "org.apache.hadoop.ha.ActiveStandbyElector": "hadoop_qjm.ha.active_standby_elector",
    "org.apache.hadoop.ha.HealthMonitor": "hadoop_qjm.ha.health_monitor",
    "org.apache.hadoop.ha.NodeFencer": "hadoop_qjm.ha.node_fencer",
    "org.apache.hadoop.ha.ShellCommandFencer": "hadoop_qjm.ha.node_fencer",
}


def python_logger_name(name: str) -> str | None:
    """The Python logger ``name`` means: a Hadoop name of :data:`HADOOP_LOGGERS` mapped,
    any other ``org.apache.`` name None (not ported here), anything else itself."""
    if name in HADOOP_LOGGERS:
        return HADOOP_LOGGERS[name]
    return None if name.startswith("org.apache.") else name


def unknown_class_message(name: str) -> str:
    """Why ``name`` (an ``org.apache.`` name not ported here) is refused, listing ours."""
    ours = ", ".join(sorted(set(HADOOP_LOGGERS.values())))
    return (
        f"{name} is not ported to hadoop-qjm-py; its loggers are {ours} (each module its "
        "own, or root), and the Hadoop names of the ported classes map onto them"
    )


def parse_level(text: str) -> int | None:
    """The Python level of a log4j (or Python) level name; None if it is none."""
    return _LEVELS.get(text.strip().upper())


def level_name(level: int) -> str:
    """A Python level in log4j's words (``WARNING`` is ``WARN``, 0 on the root is ``ALL``)."""
    if level <= 1:
        return "ALL"
    if level > logging.CRITICAL:
        return "OFF"
    return _NAMES.get(level) or logging.getLevelName(level)


def _logger(name: str) -> logging.Logger:
    return logging.getLogger() if name == "root" else logging.getLogger(name)


def apply(name: str, level_text: str | None) -> list[str]:
    """The result lines (HTML, without :data:`MARKER`) of reading, or setting to
    ``level_text``, the level of logger ``name``."""
    e = html.escape
    python_name = python_logger_name(name)
    if python_name is None:
        return [
            f"Submitted Class Name: <b>{e(name)}</b><br />",
            f"Unknown class name: <b>{e(unknown_class_message(name))}</b><br />",
        ]
    logger = _logger(python_name)
    lines = [
        f"Submitted Class Name: <b>{e(name)}</b><br />",
        f"Log Class: <b>{e(type(logger).__module__)}.{e(type(logger).__qualname__)}</b><br />",
    ]
    if python_name != name:
        lines.append(f"Python Logger: <b>{e(python_name)}</b><br />")
    if level_text is not None:
        lines.append(f"Submitted Level: <b>{e(level_text)}</b><br />")
        level = parse_level(level_text)
        if level is None:
            lines.append(f"Bad Level : <b>{e(level_text)}</b><br />")
        else:
            logger.setLevel(level)
            lines.append(f"Setting Level to {e(level_text)} ...<br />")
    lines.append(f"Effective Level: <b>{level_name(logger.getEffectiveLevel())}</b><br />")
    return lines


_FORMS = (
    "<br /><hr /><h3>Get / Set</h3>\n"
    "<form>Class Name: <input type='text' size='50' name='log' /> "
    "<input type='submit' value='Get Log Level' /></form>\n"
    "<form>Class Name: <input type='text' size='50' name='log' /> "
    "Level: <input type='text' name='level' /> "
    "<input type='submit' value='Set Log Level' /></form>"
)


def log_level_page(name: str | None, level_text: str | None) -> str:
    """Hadoop's LogLevel.Servlet page: the results for ``name`` (if given) and the forms.
    An empty parameter counts as absent (ServletUtil.getParameter)."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Log Level</title></head>",
        "<body><h1>Log Level</h1>",
    ]
    if name:
        parts.append("<br /><hr /><h3>Results</h3>")
        parts += [MARKER + line for line in apply(name, level_text or None)]
    parts += [_FORMS, "</body></html>"]
    return "\n".join(parts) + "\n"


def output_lines(page: str) -> list[str]:
    """What ``daemonlog`` prints of a ``/logLevel`` page: its :data:`MARKER` lines, tags
    removed and entities decoded."""
    return [
        html.unescape(_TAG.sub("", line)) for line in page.splitlines() if line.startswith(MARKER)
    ]
