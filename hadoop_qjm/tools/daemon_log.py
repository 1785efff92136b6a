"""``hdfs-py daemonlog``: read or set a logger's level in a running daemon (Hadoop's
``hadoop daemonlog``, LogLevel.CLI)::

    hdfs-py daemonlog -getlevel HOST:PORT NAME [-protocol (http|https)]
    hdfs-py daemonlog -setlevel HOST:PORT NAME LEVEL [-protocol (http|https)]

``HOST:PORT`` is the daemon's HTTP (or HTTPS) address; ``NAME`` a logger name
(``hadoop_qjm.qjournal.server.journal``, or ``root``) or the Hadoop name of a ported class
(``org.apache.hadoop.hdfs.qjournal.server.Journal``: :data:`~hadoop_qjm.common.log_level.
HADOOP_LOGGERS`); ``LEVEL`` a log4j level (``ALL``, ``TRACE``, ``DEBUG``, ``INFO``,
``WARN``, ``ERROR``, ``FATAL``, ``OFF``). Any other level, or ``org.apache.`` name, is one
line and exit 2, before anything is sent. It fetches ``/logLevel?log=NAME[&level=LEVEL]``
and prints ``Connecting to URL`` and the page's result lines; exit 1 if the page refused
the level or the name. Without ``-protocol`` the scheme follows
the configuration: https when ``dfs.http.policy`` is ``HTTPS_ONLY``, else http; over https
it presents the certificate of ssl-client.xml (with security on, a level change needs an
identity of ``dfs.cluster.administrators``). A refusal or an unreachable daemon is one line
on stderr and exit 1; a malformed command line, one line and exit 2.
"""

from __future__ import annotations

import http.client
from urllib.parse import quote

from hadoop_qjm.common.exceptions import IOException, UsageError
from hadoop_qjm.common.log_level import (
    LEVEL_NAMES,
    output_lines,
    parse_level,
    python_logger_name,
    unknown_class_message,
)

__all__ = ["USAGE", "run"]

USAGE = (
    "Usage: hdfs-py daemonlog\n"
    "\t[-getlevel <host:port> <classname> [-protocol (http|https)]\n"
    "\t[-setlevel <host:port> <classname> <level> [-protocol (http|https)]"
)
_SHORT_USAGE = (
    "usage: hdfs-py daemonlog -getlevel HOST:PORT NAME | -setlevel HOST:PORT NAME LEVEL "
    "[-protocol http|https]"
)
TIMEOUT_S = 30.0


def parse_arguments(argv: list[str]) -> tuple[str, str, str | None, str | None]:
    """``(host:port, name, level or None, protocol or None)`` of LogLevel.CLI's arguments;
    UsageError with Hadoop's sentence for anything else."""
    operation = target = name = level = protocol = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-getlevel", "-setlevel"):
            if operation is not None:
                raise UsageError(f"Redundant {arg} command")
            count = 2 if arg == "-getlevel" else 3
            if len(argv) - i - 1 < count:
                words = "two" if count == 2 else "three"
                raise UsageError(f"{arg} needs {words} parameters")
            operation = arg
            target, name = argv[i + 1], argv[i + 2]
            level = argv[i + 3] if count == 3 else None
            i += count + 1
        elif arg == "-protocol":
            if protocol is not None:
                raise UsageError("Redundant -protocol command")
            if i + 1 >= len(argv):
                raise UsageError("-protocol needs one parameter")
            protocol = argv[i + 1]
            if protocol not in ("http", "https"):
                raise UsageError(f"Invalid protocol: {protocol}")
            i += 2
        else:
            raise UsageError(f"Unexpected argument {arg}")
    if operation is None:
        raise UsageError("Must specify either -getlevel or -setlevel")
    return target, name, level, protocol  # type: ignore[return-value]


def check_name_and_level(name: str, level: str | None) -> None:
    """UsageError unless ``level`` is log4j's (or None) and ``name`` is not an
    ``org.apache.`` name of something not ported here: refused before anything is sent."""
    if not name.strip():
        raise UsageError("daemonlog: the logger name is empty")
    if level is not None and parse_level(level) is None:
        raise UsageError(f"daemonlog: Bad level '{level}': use one of {', '.join(LEVEL_NAMES)}")
    if python_logger_name(name) is None:
        raise UsageError(f"daemonlog: {unknown_class_message(name)}")


def run(argv: list[str], conf) -> int:
    if conf is None or not argv:  # --help, or nothing to do
        print(USAGE)
        return 0 if conf is None else 2
    try:
        target, name, level, protocol = parse_arguments(argv)
    except UsageError as e:
        raise UsageError(f"daemonlog: {e} ({_SHORT_USAGE})") from None
    check_name_and_level(name, level)
    from hadoop_qjm.common.security import SSLFactory
    from hadoop_qjm.conf import parse_host_port

    try:
        if "/" in target:  # a URL ("http://host:port"): the scheme is -protocol's
            raise ValueError(target)
        host, port = parse_host_port(target)
    except ValueError:
        raise UsageError(f"daemonlog: '{target}' is not HOST:PORT ({_SHORT_USAGE})") from None
    factory = SSLFactory(conf)
    if protocol is None:
        protocol = "https" if not factory.http_policy.http_enabled else "http"
    query = f"log={quote(name, safe='')}" + (f"&level={quote(level, safe='')}" if level else "")
    path = f"/logLevel?{query}"
    url = f"{protocol}://{target}{path}"
    print(f"Connecting to {url}", flush=True)
    if protocol == "https":
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(
            host, port, timeout=TIMEOUT_S, context=factory.client_context()
        )
    else:
        conn = http.client.HTTPConnection(host, port, timeout=TIMEOUT_S)
    try:
        conn.request("GET", path)
        response = conn.getresponse()
        body = response.read().decode("utf-8", "replace")
    except OSError as e:
        reason = getattr(e, "strerror", None) or str(e) or type(e).__name__
        raise IOException(f"Connecting to {url} failed: {reason}") from None
    finally:
        conn.close()
    if response.status != 200:
        reason = body.strip().splitlines()[0] if body.strip() else response.reason
        raise IOException(
            f"Server returned HTTP response code: {response.status} for URL: {url} ({reason})"
        )
    lines = output_lines(body)
    for line in lines:
        print(line)
    refused = any(line.startswith(("Bad Level", "Unknown class name")) for line in lines)
    return 1 if refused else 0
