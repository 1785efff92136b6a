"""The pages every daemon's HTTP server has besides ``/``, ``/jmx`` and ``/metrics``
(Hadoop's HttpServer2.addDefaultServlets), for :class:`~hadoop_qjm.common.http_server.
HttpServer2`, which mixes :class:`DaemonServlets` in:

* ``/conf[?format=xml|json][&name=KEY]`` — the daemon's configuration (ConfServlet): XML as
  ``Configuration.writeXml`` (raw values, ``<final>``, ``<source>``), JSON as
  ``Configuration.dumpConfiguration`` (``{"properties": [{"key", "value", "isFinal",
  "resource"}]}``; with ``name``, ``{"property": {...}}``, 404 for an unset key). Without
  ``format`` an ``Accept`` header naming json picks JSON (Hadoop 3's way). Values of the
  keys ``hadoop.security.sensitive-config-keys`` matches are ``<redacted>``;
* ``/stacks`` — every thread's stack, innermost frame first (StackServlet);
* ``/logLevel?log=NAME[&level=LEVEL]`` — a logger's level, read or set
  (:mod:`~hadoop_qjm.common.log_level`);
* ``/logs/`` — the daemon's log directory (``$HADOOP_LOG_DIR``, else the directory of the
  file it logs to): a listing, and each file as text. Nothing outside it is served (no
  ``..``, no symbolic link leading out);
* ``/prom`` — Hadoop 3.3's Prometheus path, the same text as ``/metrics``.

With HTTPS on (``admin_authorizer`` set: docs/security.md) ``/conf``, ``/stacks``,
``/logs`` and a ``/logLevel`` that sets a level are for administrators only — a verified
certificate whose identity ``dfs.cluster.administrators`` lists (hasAdministratorAccess);
``hadoop.security.instrumentation.requires.admin`` puts ``/jmx``, ``/metrics`` and ``/prom``
behind the same list (isInstrumentationAccessAllowed). Else 403, logged and reported to
``on_authorization_failure``; on the plain listener of ``HTTP_AND_HTTPS`` always 403.
"""

from __future__ import annotations

import html
import json
import logging
import os
import stat
import sys
import threading
import time
import traceback
from collections.abc import Callable
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, BinaryIO
from urllib.parse import quote, unquote

from hadoop_qjm.common import log_level
from hadoop_qjm.common.exceptions import IllegalArgumentException

if TYPE_CHECKING:
    from hadoop_qjm.common.http_request import HttpRequestHandler
    from hadoop_qjm.common.security.authorization import ServiceAuthorizer
    from hadoop_qjm.conf.config_redactor import ConfigRedactor

__all__ = ["DaemonServlets", "daemon_log_dir", "thread_dump"]

LOG = logging.getLogger(__name__)

_TEXT = "text/plain; charset=utf-8"
_HTML = "text/html; charset=utf-8"
_CHUNK = 64 * 1024
#: The prefix under which the log directory is served.
LOGS_PREFIX = "/logs/"


def daemon_log_dir() -> str | None:
    """Where this daemon's logs are: ``$HADOOP_LOG_DIR`` (Hadoop's ``hadoop.log.dir``), else
    the directory of the root logger's log file; None if it writes none."""
    env = os.environ.get("HADOOP_LOG_DIR")
    if env:
        return env
    for handler in logging.getLogger().handlers:
        filename = getattr(handler, "baseFilename", None)
        if filename:
            return os.path.dirname(filename)
    return None


def thread_dump() -> str:
    """Every thread's stack, as Hadoop's ReflectionUtils.printThreadInfo lays it out."""
    frames = sys._current_frames()  # noqa: SLF001 - the one way to see other threads' stacks
    threads = {t.ident: t for t in threading.enumerate()}
    lines = ["Process Thread Dump: ", f"{len(frames)} active threads"]
    for ident, frame in sorted(frames.items()):
        thread = threads.get(ident)
        name = thread.name if thread is not None else "?"
        lines.append(f"Thread {ident} ({name}):")
        if thread is not None:
            lines.append(f"  Daemon: {str(thread.daemon).lower()}")
            lines.append(f"  Native id: {thread.native_id}")
        lines.append("  Stack:")
        for entry in reversed(traceback.extract_stack(frame)):
            lines.append(f"    {entry.name} ({entry.filename}:{entry.lineno})")
            if entry.line:
                lines.append(f"      {entry.line}")
    return "\n".join(lines) + "\n"


class DaemonServlets:
    """The standard pages (module docstring), mixed into HttpServer2, which sets
    :attr:`conf`, :attr:`redactor`, :attr:`admin_authorizer`, :attr:`ssl_context` and
    :attr:`instrumentation_requires_admin` and reports refusals to
    ``on_authorization_failure(path, identity)``."""

    conf: Any
    redactor: ConfigRedactor
    admin_authorizer: ServiceAuthorizer | None
    ssl_context: Any
    instrumentation_requires_admin: bool
    on_authorization_failure: Callable[[str, str | None], None]
    authorization_refusal: Callable[..., str | None]

    # ---- access -----------------------------------------------------------------------------------
    def has_administrator_access(self, request: HttpRequestHandler, page: str) -> bool:
        """True if ``request`` may see the administrators' ``page``; else answer 403 (logged,
        reported) and return False (HttpServer2.hasAdministratorAccess)."""
        authorizer = self.admin_authorizer
        message = self.authorization_refusal(
            request, page, None if authorizer is None else authorizer.check_admin
        )
        if message is None:
            return True  # without security everyone is an administrator, as in Hadoop
        request.send_http_error(HTTPStatus.FORBIDDEN, message)
        return False

    def is_instrumentation_access_allowed(self, request: HttpRequestHandler, page: str) -> bool:
        """``/jmx``, ``/metrics``, ``/prom``: open unless
        ``hadoop.security.instrumentation.requires.admin`` (isInstrumentationAccessAllowed)."""
        if not self.instrumentation_requires_admin:
            return True
        return self.has_administrator_access(request, page)

    # ---- /conf --------------------------------------------------------------------------------------
    def page_conf(self, request: HttpRequestHandler, params: dict, send_body: bool) -> None:
        if not self.has_administrator_access(request, "/conf"):
            return
        fmt = params.get("format") or (
            "json" if "json" in (request.headers.get("Accept") or "") else "xml"
        )
        if fmt not in ("xml", "json"):
            request.send_http_error(HTTPStatus.BAD_REQUEST, f"Bad format: {fmt}")
            return
        if self.conf is None:
            request.send_http_error(HTTPStatus.NOT_FOUND, "This server has no configuration")
            return
        name = params.get("name") or None
        try:
            if fmt == "json":
                dump = self.conf.dump_configuration(name, self.redactor)
                body, content_type = json.dumps(dump).encode(), "application/json; charset=utf-8"
            else:
                body, content_type = (
                    self.conf.to_xml(name, self.redactor),
                    "text/xml; charset=utf-8",
                )
        except IllegalArgumentException as e:
            request.send_http_error(HTTPStatus.NOT_FOUND, str(e))
            return
        request.send_bytes(HTTPStatus.OK, content_type, body, send_body)

    # ---- /stacks ------------------------------------------------------------------------------------
    def page_stacks(self, request: HttpRequestHandler, params: dict, send_body: bool) -> None:
        if not self.has_administrator_access(request, "/stacks"):
            return
        dump = thread_dump()
        LOG.info("Thread dump requested by %s", request.client_address[0])
        request.send_bytes(HTTPStatus.OK, _TEXT, dump.encode("utf-8"), send_body)

    # ---- /logLevel ----------------------------------------------------------------------------------
    def page_log_level(self, request: HttpRequestHandler, params: dict, send_body: bool) -> None:
        name, level = params.get("log"), params.get("level")
        if name and level and not self.has_administrator_access(request, "/logLevel"):
            return
        if name and level:
            LOG.info(
                "Setting the level of logger %s to %s for %s",
                name,
                level,
                request.client_address[0],
            )
        page = log_level.log_level_page(name, level)
        request.send_bytes(HTTPStatus.OK, _HTML, page.encode("utf-8"), send_body)

    # ---- /logs/ -------------------------------------------------------------------------------------
    def page_logs(self, request: HttpRequestHandler, params: dict, send_body: bool) -> None:
        if not self.has_administrator_access(request, LOGS_PREFIX):
            return
        path = request.path.split("?", 1)[0]
        if path == LOGS_PREFIX.rstrip("/"):
            _redirect(request, LOGS_PREFIX, send_body)
            return
        base = daemon_log_dir()
        if base is None:
            request.send_http_error(
                HTTPStatus.NOT_FOUND,
                "This daemon writes no log file (set HADOOP_LOG_DIR to give it a log directory)",
            )
            return
        relative = unquote(path[len(LOGS_PREFIX) :])
        root = os.path.realpath(base)
        target = os.path.realpath(os.path.join(root, relative))
        # realpath resolves ".." and symbolic links: whatever leads out of the directory is
        # refused, as Jetty refuses aliases.
        if "\x00" in relative or os.path.commonpath([root, target]) != root:
            request.send_http_error(HTTPStatus.NOT_FOUND, f"No such file: {LOGS_PREFIX}{relative}")
            return
        try:
            info = os.stat(target)
        except OSError:
            request.send_http_error(HTTPStatus.NOT_FOUND, f"No such file: {LOGS_PREFIX}{relative}")
            return
        if stat.S_ISDIR(info.st_mode):
            if not path.endswith("/"):
                _redirect(request, path + "/", send_body)
                return
            body = _listing(path, target).encode("utf-8")
            request.send_bytes(HTTPStatus.OK, _HTML, body, send_body)
            return
        if not stat.S_ISREG(info.st_mode):
            request.send_http_error(HTTPStatus.NOT_FOUND, f"No such file: {LOGS_PREFIX}{relative}")
            return
        with open(target, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            name = os.path.basename(target)
            text = ".log" in name or ".out" in name or name.endswith(".txt")
            _send_stream(request, f, size, _TEXT if text else "application/octet-stream", send_body)


def _redirect(request: HttpRequestHandler, location: str, send_body: bool) -> None:
    request.send_bytes(HTTPStatus.FOUND, _TEXT, b"", send_body, {"Location": location})


def _listing(url_path: str, directory: str) -> str:
    """Jetty's directory listing, reduced: name (linked), last modified, size."""
    e = html.escape
    rows = []
    for entry in sorted(os.scandir(directory), key=lambda d: d.name):
        try:
            info = entry.stat()
        except OSError:
            continue  # rotated away while we listed
        is_dir = stat.S_ISDIR(info.st_mode)
        name = entry.name + ("/" if is_dir else "")
        modified = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info.st_mtime))
        size = "-" if is_dir else str(info.st_size)
        rows.append(
            f"<tr><td><a href='{e(quote(name))}'>{e(name)}</a></td>"
            f"<td>{e(modified)}</td><td>{size}</td></tr>"
        )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'>"
        f"<title>Directory: {e(url_path)}</title></head><body>"
        f"<h1>Directory: {e(url_path)}</h1><table>"
        "<tr><th>Name</th><th>Last Modified</th><th>Size</th></tr>"
        + "".join(rows)
        + "</table></body></html>\n"
    )


def _send_stream(
    request: HttpRequestHandler, f: BinaryIO, length: int, content_type: str, send_body: bool
) -> None:
    """Send exactly ``length`` bytes of ``f`` (its size when opened: a log keeps growing)."""
    request.send_response(HTTPStatus.OK)
    request.send_header("Content-Type", content_type)
    request.send_header("Content-Length", str(length))
    request.send_header("X-Content-Type-Options", "nosniff")
    request.end_headers()
    if not send_body:
        return
    remaining = length
    while remaining > 0:
        data = f.read(min(_CHUNK, remaining))
        if not data:
            request.close_connection = True  # truncated under us: never a short lie
            return
        request.wfile.write(data)
        remaining -= len(data)
