"""HttpServer2: the HTTP server every daemon embeds (Hadoop's class of the name, reduced).

A daemon configures one (as Hadoop's ``HttpServer2.Builder`` and ``addInternalServlet``):
its ``pages`` (path -> ``page(request, params, send_body)``, :class:`~hadoop_qjm.common.
http_request.Page`) and the content of the standard endpoints: ``/metrics`` (Prometheus
text from the ``metrics_registry()`` it passes; also ``/prom``), ``/jmx[?qry=]``
(JMXJsonServlet's layout over its ``jmx_beans()``) and ``/`` (its ``status_page()``), plus
``/conf``, ``/stacks``, ``/logLevel`` and ``/logs/`` (:mod:`~hadoop_qjm.common.
http_servlets`, administrators only with HTTPS on: ``admin_authorizer``). The JournalNode's
server adds ``/getJournal``, the NameNode's ``/imagetransfer`` and ``/isActive``.

One daemon thread per connection, at most ``hadoop.http.max.threads`` (else 503); every
connection has a socket timeout so an idle or stalled client cannot pin a thread; the
request line is limited to :data:`MAX_REQUEST_LINE` bytes (headers: 100 lines of 64 KiB, by
``http.client``). The listening socket is made in one place, ``socket_factory`` (default
:func:`make_server_socket`). Malformed requests are 400, unknown paths 404, other methods
than GET and HEAD 405 — but PUT on the daemon's ``put_pages``.

HTTPS: with an ``ssl_context`` each accepted connection's TLS handshake runs in its own
handler thread, bounded by ``handshake_timeout_s``, never in the accept loop; a failed
handshake is logged and reported to ``on_handshake_failure(reason)``. The context
asks for a client certificate without requiring one (the status page, ``/jmx`` and
``/metrics`` stay open); the pages of ``transfer_paths`` (segments, images) then require a verified certificate whose identity ``transfer_authorizer``
allows — else 403 naming the identity. With a ``transfer_authorizer`` but no
``ssl_context`` (the plain listener of ``HTTP_AND_HTTPS``) they are always 403.
"""

from __future__ import annotations

import gc
import http.server
import logging
import selectors
import socket
import ssl
import sys
import threading
import time
from collections.abc import Callable, Collection, Mapping
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import psutil
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from hadoop_qjm.common.exceptions import (
    AuthorizationException,
    IllegalArgumentException,
    IllegalStateException,
)
from hadoop_qjm.common.http_request import (  # noqa: F401 - re-exported
    CHUNK_SIZE,
    MAX_REQUEST_LINE,
    HttpError,
    HttpRequestHandler,
    Page,
    PageHandler,
)
from hadoop_qjm.common.http_servlets import LOGS_PREFIX, DaemonServlets
from hadoop_qjm.common.jmx_json import jmx_query, render_jmx  # noqa: F401 - re-exported
from hadoop_qjm.common.security.authorization import ServiceAuthorizer
from hadoop_qjm.common.security.tls_sockets import handshake_failure_reason
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.conf.config_redactor import ConfigRedactor

__all__ = [
    "CHUNK_SIZE",
    "DEFAULT_HANDSHAKE_TIMEOUT_S",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_SOCKET_TIMEOUT_S",
    "MAX_REQUEST_LINE",
    "DataTransferThrottler",
    "HttpError",
    "HttpRequestHandler",
    "HttpServer2",
    "Page",
    "PageHandler",
    "jmx_query",
    "jvm_metrics_bean",
    "make_server_socket",
]

LOG = logging.getLogger(__name__)

DEFAULT_SOCKET_TIMEOUT_S = 60.0
DEFAULT_HANDSHAKE_TIMEOUT_S = 10.0
DEFAULT_MAX_CONNECTIONS = 64
_MIB = 1024.0 * 1024.0
_WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")
_BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def make_server_socket(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` and listening; port 0 picks a free port."""
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # As Jetty does: a restarted daemon can rebind while old connections sit in TIME_WAIT.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return sock


class DataTransferThrottler:
    """Hadoop's DataTransferThrottler: at most ``bandwidth_per_sec`` bytes per second on average.

    Credit is handed out per period; a sender that used up the period's credit sleeps until
    the next one. After a long pause only one period of credit accrues (no unbounded burst).
    """

    def __init__(
        self,
        bandwidth_per_sec: int,
        period_s: float = 0.5,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if bandwidth_per_sec <= 0:
            raise IllegalArgumentException(f"bandwidth must be positive: {bandwidth_per_sec}")
        self.period_s = period_s
        self.bytes_per_period = max(1, int(bandwidth_per_sec * period_s))
        self._clock = clock
        self._sleep = sleep
        self._period_start = clock()
        self._reserve = self.bytes_per_period

    def throttle(self, num_bytes: int) -> None:
        """Account for ``num_bytes`` just sent; sleep while over the budget."""
        self._reserve -= num_bytes
        while self._reserve <= 0:
            now = self._clock()
            period_end = self._period_start + self.period_s
            if now < period_end:
                self._sleep(period_end - now)
                continue
            idle_long = now >= self._period_start + 3 * self.period_s
            self._period_start = now if idle_long else period_end
            self._reserve += self.bytes_per_period


class _Server(http.server.HTTPServer):
    """An HTTPServer on a ready-made socket, one tracked daemon thread per connection."""

    def __init__(self, owner: HttpServer2, sock: socket.socket) -> None:
        self.address_family = sock.family
        super().__init__(sock.getsockname()[:2], HttpRequestHandler, bind_and_activate=False)
        self.socket.close()  # the one TCPServer made; ours comes from the socket factory
        self.socket = sock
        self.server_address = sock.getsockname()
        self.server_name, self.server_port = self.server_address[:2]
        self.owner = owner
        self.ssl_context = owner.ssl_context
        self.handshake_timeout_s = owner.handshake_timeout_s
        self.socket_timeout_s = owner.socket_timeout_s
        self.max_connections = owner.max_connections
        self._conns: dict[socket.socket, threading.Thread] = {}
        self._conns_lock = threading.Lock()
        self._closing = False
        self._count = 0
        # serve_forever polls for shutdown every 0.5 s; a wake-up socket makes stop() immediate.
        self._wake_r, self._wake_w = socket.socketpair()

    def serve(self) -> None:
        """Accept connections until :meth:`wake`."""
        with selectors.DefaultSelector() as selector:
            selector.register(self.socket, selectors.EVENT_READ)
            selector.register(self._wake_r, selectors.EVENT_READ)
            while True:
                for key, _events in selector.select():
                    if key.fileobj is self._wake_r:
                        return
                    self._handle_request_noblock()

    def wake(self) -> None:
        self._wake_w.send(b"x")

    def server_close(self) -> None:
        super().server_close()
        self._wake_r.close()
        self._wake_w.close()

    def process_request(self, request, client_address) -> None:
        with self._conns_lock:
            refuse = self._closing or len(self._conns) >= self.max_connections
            if not refuse:
                self._count += 1
                name = f"{self.owner.name}-{self.server_port}-handler-{self._count}"
                thread = threading.Thread(
                    target=self._process, args=(request, client_address), name=name, daemon=True
                )
                self._conns[request] = thread
                thread.start()  # under the lock, so close_connections never joins an unstarted one
        if refuse:
            self._refuse(request)

    def _process(self, request, client_address) -> None:
        try:
            if self.ssl_context is not None:
                tls = self._handshake(request, client_address)
                if tls is None:
                    return  # logged and closed (raw is detached: its shutdown is a no-op)
                request = tls
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            with self._conns_lock:
                self._conns.pop(request, None)

    def _handshake(self, raw: socket.socket, client_address) -> ssl.SSLSocket | None:
        """The TLS socket of ``raw`` once its handshake is done; None (logged, reported,
        closed) if it failed. Runs in the connection's thread, never the accept loop."""
        with self._conns_lock:
            # wrap_socket takes over raw's descriptor (raw is left detached): the socket
            # close_connections() must shut down is the new one from now on.
            tls = self.ssl_context.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
            self._conns[tls] = self._conns.pop(raw)
        try:
            tls.settimeout(self.handshake_timeout_s)
            tls.do_handshake()
        except OSError as e:
            reason = handshake_failure_reason(e)
            LOG.warning("TLS handshake with %s:%s failed (%s): %s", *client_address[:2], reason, e)
            self.owner.on_handshake_failure(reason)
            tls.close()
            with self._conns_lock:
                self._conns.pop(tls, None)
            return None
        return tls

    def _refuse(self, request) -> None:
        LOG.warning("Too many HTTP connections (%d); refusing one", self.max_connections)
        try:
            request.settimeout(1.0)
            request.sendall(_BUSY)
        except OSError:
            pass
        self.shutdown_request(request)

    def handle_error(self, request, client_address) -> None:
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            LOG.debug("HTTP connection from %s ended: %r", client_address, exc)
        else:
            LOG.exception("Error handling an HTTP request from %s", client_address)

    def close_connections(self, timeout_s: float) -> list[threading.Thread]:
        """Cut every open connection and join its thread; returns the threads still alive."""
        with self._conns_lock:
            self._closing = True
            conns = list(self._conns.items())
        for sock, _thread in conns:
            try:
                sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked in recv or send
            except OSError:
                pass
        deadline = time.monotonic() + timeout_s
        for _sock, thread in conns:
            thread.join(max(0.0, deadline - time.monotonic()))
        return [t for _s, t in conns if t.is_alive()]


class HttpServer2(DaemonServlets):
    """A daemon's HTTP server: lifecycle, addresses, throttling and the standard pages.

    The daemon configures it: ``name`` (its threads' and ``str()``'s prefix,
    ``"JournalNodeHttpServer"``), ``daemon_name`` (``"JournalNode"``, in log lines),
    ``pages`` (path -> :data:`~hadoop_qjm.common.http_request.PageHandler` or
    :class:`~hadoop_qjm.common.http_request.Page`, GET and HEAD; added to the standard
    pages) and ``put_pages`` (the pages that take PUT: such a page reads the request body
    from ``request.rfile``, at most ``Content-Length`` bytes), ``transfer_paths`` (pages
    that hand out a daemon's data, segments or images: with ``transfer_authorizer`` set,
    served only over HTTPS to an allowed, verified certificate), the content providers
    ``metrics_registry()`` (``/metrics``), ``jmx_beans()`` (every bean ``/jmx`` can show)
    and ``status_page()`` (the HTML of ``/``; escape every value), and what it counts:
    ``on_handshake_failure(reason)`` (a TLS handshake failed; ``reason`` a
    handshake_failure_reason label) and ``on_authorization_failure(path, identity)`` (a
    request was refused, 403).

    The socket is made in the constructor (``socket_factory(host, port)``, default
    :func:`make_server_socket`), so :attr:`port` is known before :meth:`start`.
    ``conf`` supplies ``hadoop.http.max.threads`` and ``dfs.image.transfer.bandwidthPerSec``.
    ``ssl_context`` makes it an HTTPS server and ``transfer_authorizer`` guards
    ``transfer_paths`` (module docstring).
    """

    def __init__(
        self,
        conf: Any,
        bind_host: str,
        port: int,
        socket_factory: Callable[[str, int], socket.socket] | None = None,
        *,
        metrics_registry: Callable[[], CollectorRegistry],
        jmx_beans: Callable[[], list[dict[str, object]]],
        status_page: Callable[[], str],
        pages: Mapping[str, PageHandler | Page] | None = None,
        put_pages: Mapping[str, PageHandler | Page] | None = None,
        transfer_paths: Collection[str] = (),
        name: str = "HttpServer2",
        daemon_name: str = "Daemon",
        on_handshake_failure: Callable[[str], None] | None = None,
        on_authorization_failure: Callable[[str, str | None], None] | None = None,
        socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S,
        max_connections: int | None = None,
        ssl_context: ssl.SSLContext | None = None,
        handshake_timeout_s: float = DEFAULT_HANDSHAKE_TIMEOUT_S,
        transfer_authorizer: ServiceAuthorizer | None = None,
        admin_authorizer: ServiceAuthorizer | None = None,
    ) -> None:
        self.name = name
        self.daemon_name = daemon_name
        self.metrics_registry = metrics_registry
        self.jmx_beans = jmx_beans
        self.status_page = status_page
        self.on_handshake_failure = on_handshake_failure or _ignore
        self.on_authorization_failure = on_authorization_failure or _ignore
        standard: dict[str, PageHandler | Page] = {
            "/metrics": self.page_metrics,
            "/jmx": self.page_jmx,
            "/": self.page_status,
            "/index.html": self.page_status,
            # HttpServer2.addDefaultServlets: the pages of hadoop_qjm.common.http_servlets.
            "/prom": self.page_metrics,
            "/conf": self.page_conf,
            "/stacks": self.page_stacks,
            "/logLevel": self.page_log_level,
            "/logs": self.page_logs,
        }
        #: path -> Page, for GET and HEAD.
        self.pages = _as_pages({**standard, **(pages or {})})
        #: Pages that serve every path under a prefix (GET and HEAD only).
        self.prefix_pages = _as_pages({LOGS_PREFIX: self.page_logs})
        #: The pages that take PUT.
        self.put_pages = _as_pages(dict(put_pages or {}))
        self.transfer_paths = frozenset(transfer_paths)
        self.bind_host = bind_host
        self.conf = conf
        self.redactor = ConfigRedactor(conf)  # a bad pattern fails the start, not /conf
        self.admin_authorizer = admin_authorizer
        key = keys.HADOOP_SECURITY_INSTRUMENTATION_REQUIRES_ADMIN_KEY
        self.instrumentation_requires_admin = bool(conf and conf.get_bool(key, False))
        self.ssl_context = ssl_context
        self.scheme = "https" if ssl_context is not None else "http"
        self.handshake_timeout_s = handshake_timeout_s
        self.transfer_authorizer = transfer_authorizer
        if max_connections is None:
            configured = conf.get_int("hadoop.http.max.threads", -1) if conf else -1
            max_connections = configured if configured > 0 else DEFAULT_MAX_CONNECTIONS
        self.max_connections = max_connections
        self.socket_timeout_s = socket_timeout_s
        bandwidth = conf.get_int("dfs.image.transfer.bandwidthPerSec", 0) if conf else 0
        self.bandwidth_per_sec = bandwidth
        sock = (socket_factory or make_server_socket)(bind_host, port)
        try:
            self._server = _Server(self, sock)
        except BaseException:
            sock.close()
            raise
        self.port: int = self._server.server_address[1]
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._lifecycle_lock = threading.Lock()
        self._connect_host: str | None = None

    # ---- lifecycle ------------------------------------------------------------------------------
    def start(self) -> None:
        """Serve in a background daemon thread."""
        with self._lifecycle_lock:
            if self._stopped or self._thread is not None:
                raise IllegalStateException(f"{self} already started or stopped")
            name = f"{self.name}-{self.port}"
            self._thread = threading.Thread(target=self._server.serve, name=name, daemon=True)
            self._thread.start()
        LOG.info("%s HTTP server listening on %s", self.daemon_name, self.uri)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop accepting, close the port, cut open connections and join every thread."""
        with self._lifecycle_lock:
            if self._stopped:
                return
            self._stopped = True
            thread = self._thread
        if thread is not None:
            self._server.wake()
            thread.join(timeout_s)
        self._server.server_close()
        stuck = self._server.close_connections(timeout_s)
        if stuck:
            LOG.warning("HTTP handler threads still running after stop: %s", stuck)
        LOG.info("%s HTTP server on port %d stopped", self.daemon_name, self.port)

    # ---- addresses ------------------------------------------------------------------------------
    @property
    def connect_host(self) -> str:
        """The host to give clients: the bind host, or for a wildcard bind (``0.0.0.0``,
        ``::``) this machine's host name if it resolves, else ``127.0.0.1`` (Hadoop's
        NetUtils.getConnectAddress)."""
        if self._connect_host is None:
            host = self.bind_host
            if host in _WILDCARD_HOSTS:
                host = socket.gethostname()
                try:
                    socket.getaddrinfo(host, None)
                except OSError:
                    host = "127.0.0.1"
            self._connect_host = host.strip("[]")
        return self._connect_host

    @property
    def uri(self) -> str:
        """``http://host:port`` of this server."""
        host = self.connect_host
        return f"{self.scheme}://{f'[{host}]' if ':' in host else host}:{self.port}"

    def new_throttler(self) -> DataTransferThrottler | None:
        """A throttler for one transfer; None if ``dfs.image.transfer.bandwidthPerSec`` is 0."""
        if self.bandwidth_per_sec <= 0:
            return None
        return DataTransferThrottler(self.bandwidth_per_sec)

    # ---- security -------------------------------------------------------------------------------
    def check_transfer(self, request: HttpRequestHandler, path: str) -> str | None:
        """None if ``request`` may fetch from ``path``; else why not (logged and reported to
        ``on_authorization_failure``; the client gets 403 with this message)."""
        authorizer = self.transfer_authorizer
        return self.authorization_refusal(
            request, path, None if authorizer is None else authorizer.check_transfer
        )

    def authorization_refusal(
        self,
        request: HttpRequestHandler,
        path: str,
        check: Callable[[str, str | None], None] | None,
    ) -> str | None:
        """None if ``check`` (an authorizer's check of the peer's verified identity, raising
        AuthorizationException; None when security is off) lets ``request`` at ``path``;
        else why not, logged and reported to ``on_authorization_failure``. A secured
        path is served only over HTTPS."""
        if check is None:
            return None  # security off: open, as in Hadoop
        identity = request.peer_identity
        if self.ssl_context is None:
            message = f"{path} is served only over HTTPS"
        else:
            try:
                check(path, identity)
                return None
            except AuthorizationException as e:
                message = str(e)
        LOG.warning("Refused %s to %s: %s", path, request.client_address[0], message)
        self.on_authorization_failure(path, identity)
        return message

    # ---- the standard pages ---------------------------------------------------------------------
    def page_metrics(self, request: HttpRequestHandler, params: dict, send_body: bool) -> None:
        if not self.is_instrumentation_access_allowed(request, urlsplit(request.path).path):
            return
        body = generate_latest(self.metrics_registry())
        request.send_bytes(HTTPStatus.OK, CONTENT_TYPE_LATEST, body, send_body)

    def page_jmx(self, request: HttpRequestHandler, params: dict, send_body: bool) -> None:
        if not self.is_instrumentation_access_allowed(request, "/jmx"):
            return
        status, body = render_jmx(self.jmx_beans, params.get("qry", "*:*"))
        request.send_bytes(status, "application/json; charset=utf-8", body, send_body)

    def page_status(self, request: HttpRequestHandler, params: dict, send_body: bool) -> None:
        body = self.status_page().encode("utf-8")
        request.send_bytes(HTTPStatus.OK, "text/html; charset=utf-8", body, send_body)

    def __str__(self) -> str:
        return f"{self.name}({self.uri})"


def _ignore(*_args: object) -> None:
    """No counter for this event."""


def _as_pages(pages: dict[str, PageHandler | Page]) -> dict[str, Page]:
    return {path: p if isinstance(p, Page) else Page(p) for path, p in pages.items()}


def jvm_metrics_bean(service: str, hostname: str) -> dict[str, object]:
    """Process facts under Hadoop's JvmMetrics names where one fits (RSS as "heap")."""
    p = psutil.Process()  # one per call: oneshot() caches are not thread-safe
    with p.oneshot():
        mem, cpu, os_threads = p.memory_info(), p.cpu_times(), p.num_threads()
        fds = p.num_fds() if hasattr(p, "num_fds") else -1
    return {
        "name": f"Hadoop:service={service},name=JvmMetrics",
        "modelerType": "JvmMetrics",
        "tag.Context": "jvm",
        "tag.ProcessName": service,
        "tag.SessionId": None,
        "tag.Hostname": hostname,
        "MemHeapUsedM": round(mem.rss / _MIB, 3),
        "MemHeapCommittedM": round(mem.rss / _MIB, 3),
        "MemVirtualM": round(mem.vms / _MIB, 3),
        "ThreadsRunnable": os_threads,
        "PythonThreads": threading.active_count(),
        "OpenFileDescriptorCount": fds,
        "ProcessCpuTimeMillis": int((cpu.user + cpu.system) * 1000),
        "GcCount": sum(s.get("collections", 0) for s in gc.get_stats()),
    }
