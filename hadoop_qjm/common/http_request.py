"""One HTTP connection of an :class:`~hadoop_qjm.common.http_server.HttpServer2`: the
request line and its limits, dispatch by path to a page of the owning server, and the
responses a page sends (:meth:`HttpRequestHandler.send_bytes`, ``send_file``,
``send_http_error``). A page is a :data:`PageHandler` (or a :class:`Page`, which also names
its failure); it raises :class:`HttpError` for a plain error answer.
"""

from __future__ import annotations

import http.server
import logging
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, BinaryIO
from urllib.parse import parse_qs, urlsplit

from hadoop_qjm.common.security.tls_sockets import peer_identity

__all__ = [
    "CHUNK_SIZE",
    "MAX_REQUEST_LINE",
    "HttpError",
    "HttpRequestHandler",
    "Page",
    "PageHandler",
]

LOG = logging.getLogger("hadoop_qjm.common.http_server")  # the server's log, as before

CHUNK_SIZE = 64 * 1024
MAX_REQUEST_LINE = 8192
_TEXT = "text/plain; charset=utf-8"


class HttpError(Exception):
    """Answer the request with ``status`` and this message (raised by a page)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


#: ``page(request, params, send_body)``: answer ``request`` (the
#: :class:`HttpRequestHandler`; use its :meth:`~HttpRequestHandler.send_bytes`,
#: ``send_file``), whose query's first values are ``params``; ``send_body`` is False for HEAD.
PageHandler = Callable[["HttpRequestHandler", dict[str, str], bool], None]


@dataclass(frozen=True)
class Page:
    """A page and the prefix of its 500 error's message, as Hadoop's servlets name their
    failure (``"getedit failed. "``); a page given as a plain :data:`PageHandler` has none."""

    serve: PageHandler
    error_prefix: str = ""

    def __call__(
        self, request: HttpRequestHandler, params: dict[str, str], send_body: bool
    ) -> None:
        self.serve(request, params, send_body)


class HttpRequestHandler(http.server.BaseHTTPRequestHandler):
    """One connection; each request is dispatched by path to a page of the owning server
    (its ``pages``, ``put_pages`` and ``prefix_pages``: path -> :class:`Page`)."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    #: The connection's server: its ``owner`` is the daemon's HttpServer2.
    server: Any

    def setup(self) -> None:
        self.timeout = self.server.socket_timeout_s
        self._headers_sent = False
        super().setup()

    def handle_one_request(self) -> None:
        """BaseHTTPRequestHandler's loop step, with a smaller request-line limit and 405s."""
        self._headers_sent = False
        try:
            # A request line starts with its method's letters (or an empty line, RFC 9112
            # §2.2). Anything else, such as an RPC client given this port (8480 for 8485),
            # is answered at once, not after waiting for a line end it will never send.
            first = self.rfile.peek(1)[:1]
            if first and not (first.isalpha() or first in b"\r\n"):
                self.requestline = self.request_version = self.command = ""
                self.send_error(HTTPStatus.BAD_REQUEST)
                return
            self.raw_requestline = self.rfile.readline(MAX_REQUEST_LINE + 1)
            if len(self.raw_requestline) > MAX_REQUEST_LINE:
                self.requestline = self.request_version = self.command = ""
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            puts = urlsplit(self.path).path in self.owner.put_pages
            if self.command in ("GET", "HEAD"):
                self._dispatch(send_body=self.command == "GET")
            elif self.command == "PUT" and puts:
                self._dispatch(send_body=True)
            else:
                msg = f"HTTP method {self.command} is not supported by this URL"
                allow = "GET, HEAD, PUT" if puts else "GET, HEAD"
                self.send_http_error(HTTPStatus.METHOD_NOT_ALLOWED, msg, allow=allow)
            # A request body we did not read would be parsed as the next request.
            if self.headers.get("Content-Length", "0").strip() not in ("", "0") or (
                "Transfer-Encoding" in self.headers
            ):
                self.close_connection = True
            self.wfile.flush()
        except (TimeoutError, ConnectionError) as e:
            LOG.debug("Dropping HTTP connection from %s: %r", self.client_address, e)
            self.close_connection = True

    def _dispatch(self, send_body: bool) -> None:
        url = urlsplit(self.path)
        pages = self.owner.put_pages if self.command == "PUT" else self.owner.pages
        page = pages.get(url.path)
        if page is None and self.command != "PUT":
            prefix = next((p for p in self.owner.prefix_pages if url.path.startswith(p)), None)
            page = self.owner.prefix_pages.get(prefix) if prefix else None
        if page is None:
            self.send_http_error(HTTPStatus.NOT_FOUND, f"No such page: {url.path}")
            return
        if url.path in self.owner.transfer_paths:
            refusal = self.owner.check_transfer(self, url.path)
            if refusal is not None:
                self.send_http_error(HTTPStatus.FORBIDDEN, refusal)
                return
        try:
            query = parse_qs(url.query, keep_blank_values=True, max_num_fields=64)
        except ValueError as e:
            self.send_http_error(HTTPStatus.BAD_REQUEST, f"Malformed query string: {e}")
            return
        params = {key: values[0] for key, values in query.items()}
        try:
            page(self, params, send_body)
        except (TimeoutError, ConnectionError):
            raise
        except HttpError as e:
            self.send_http_error(e.status, str(e))
        except Exception as e:
            LOG.exception("Error serving %s to %s", url.path, self.client_address[0])
            if self._headers_sent:
                self.close_connection = True  # the client sees a short body, never a lie
            else:
                msg = f"{page.error_prefix}{type(e).__name__}: {e}"
                self.send_http_error(HTTPStatus.INTERNAL_SERVER_ERROR, msg)

    @property
    def owner(self) -> Any:
        """The daemon's server object whose pages this handler serves."""
        return self.server.owner

    @property
    def peer_identity(self) -> str | None:
        """The subject CN of the client's verified TLS certificate; None over plain HTTP or
        when the client presented none."""
        return peer_identity(self.connection)

    # ---- responses ------------------------------------------------------------------------------
    def end_headers(self) -> None:
        self._headers_sent = True
        super().end_headers()

    def send_bytes(
        self,
        status: int,
        content_type: str,
        body: bytes,
        send_body: bool,
        headers: dict[str, str] | None = None,
        reason: str | None = None,
    ) -> None:
        """A complete response with ``body`` (sent only if ``send_body``)."""
        self.send_response(status, reason)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def send_http_error(self, status: int, message: str, allow: str | None = None) -> None:
        """A text/plain error. The message is also the reason phrase (as Jetty's sendError),
        where Hadoop's TransferFsImage reads it; there it is cut to printable ASCII."""
        reason = "".join(c if " " <= c <= "~" else " " for c in message)[:200].strip()
        headers = {"Connection": "close", **({"Allow": allow} if allow else {})}
        self.close_connection = True
        body = (message + "\n").encode("utf-8", "replace")
        self.send_bytes(status, _TEXT, body, self.command != "HEAD", headers, reason or None)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors parse_request reports: a fixed phrase (never echo the request line back),
        with a status line and headers even for a request that looked like HTTP/0.9."""
        if getattr(self, "request_version", "") in ("", "HTTP/0.9"):
            self.request_version = "HTTP/1.0"
        self.send_http_error(code, HTTPStatus(code).phrase)

    def send_file(
        self,
        f: BinaryIO,
        length: int,
        name: str,
        send_body: bool,
        headers: dict[str, str] | None = None,
    ) -> None:
        """Send ``length`` bytes of ``f`` as the attachment ``name`` (Hadoop's file-transfer
        headers: Content-Disposition and X-Image-Edits-Name, plus ``headers``), throttled by
        the server's bandwidth setting."""
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(length))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Disposition", f"attachment; filename={name}")
        self.send_header("X-Image-Edits-Name", name)
        self.end_headers()
        if send_body:
            self._copy(f, length, name)

    def _copy(self, f: BinaryIO, length: int, name: str) -> None:
        """Send exactly ``length`` bytes of ``f`` (its size at open time), throttled if asked."""
        throttler = self.owner.new_throttler()
        if throttler is None and not isinstance(self.connection, ssl.SSLSocket):
            # Plain HTTP, unthrottled: the kernel copies from the page cache to the socket
            # (os.sendfile). A python read/write loop cost ~2 ms per MB of CPU in the
            # serving JournalNode; TLS keeps the loop (the bytes must be encrypted here).
            sent = self.connection.sendfile(f, f.tell(), length)
            if sent < length:
                LOG.warning("%s shrank while being sent; closing the connection", name)
                self.close_connection = True
            return
        chunk = CHUNK_SIZE if throttler is None else min(CHUNK_SIZE, throttler.bytes_per_period)
        remaining = length
        while remaining > 0:
            data = f.read(min(chunk, remaining))
            if not data:
                # Truncated under us (a recovered segment's padding removed at finalize): we
                # cannot send what Content-Length promised, so drop the connection.
                LOG.warning("%s shrank while being sent; closing the connection", name)
                self.close_connection = True
                return
            self.wfile.write(data)
            remaining -= len(data)
            if throttler is not None:
                throttler.throttle(len(data))

    def version_string(self) -> str:
        return "hadoop-qjm-py"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        LOG.debug("%s - %s", self.address_string(), format % args)
