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
``hadoop_qjm.qjournal.server.journal``; ``root`` is the root logger). Levels are log4j's
names — ``ALL``, ``TRACE``, ``DEBUG``, ``INFO``, ``WARN``, ``ERROR``, ``FATAL``, ``OFF`` (any
case; Python's ``WARNING`` and ``CRITICAL`` too); anything else is answered ``Bad Level``
and changes nothing, as in Hadoop. The change lasts until the daemon restarts.
"""

from __future__ import annotations

import html
import logging
import re

__all__ = [
    "MARKER",
    "level_name",
    "log_level_page",
    "output_lines",
    "parse_level",
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
    logger = _logger(name)
    lines = [
        f"Submitted Class Name: <b>{e(name)}</b><br />",
        f"Log Class: <b>{e(type(logger).__module__)}.{e(type(logger).__qualname__)}</b><br />",
    ]
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
