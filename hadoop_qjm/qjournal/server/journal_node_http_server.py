"""JournalNodeHttpServer: the JournalNode's HTTP endpoints (HADOOP-QJM-DIGEST.md §7).

``GET /getJournal?jid=&segmentTxId=&storageInfo=&inProgressOk=`` streams one segment file
(GetJournalEditServlet; used by acceptRecovery, the syncer and readers); ``/metrics``
(Prometheus text), ``/jmx[?qry=]`` (JMXJsonServlet's layout) and ``/`` (a status page).
Safer than Hadoop: malformed parameters are 400 (Hadoop: 500) and an unknown journal is
404 (Hadoop creates it).

One daemon thread per connection, at most ``hadoop.http.max.threads`` (else 503); every
connection has a socket timeout so an idle or stalled client cannot pin a thread; the
request line is limited to :data:`MAX_REQUEST_LINE` bytes (headers: 100 lines of 64 KiB, by
``http.client``). The listening socket is made in one place, ``socket_factory`` (default
:func:`make_server_socket`), where TLS can wrap it.
"""

from __future__ import annotations

import fnmatch
import gc
import html
import http.server
import json
import logging
import re
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable
from http import HTTPStatus
from urllib.parse import parse_qs, urlsplit

import psutil
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from hadoop_qjm.common.exceptions import IllegalArgumentException, IllegalStateException
from hadoop_qjm.common.storage_info import StorageInfo
from hadoop_qjm.namenode.file_journal_manager import match_edit_logs
from hadoop_qjm.qjournal.protocol.rules import validate_journal_id

__all__ = [
    "JournalNodeHttpServer",
    "DataTransferThrottler",
    "make_server_socket",
    "journals_status",
]

LOG = logging.getLogger(__name__)

CHUNK_SIZE = 64 * 1024
MAX_REQUEST_LINE = 8192
DEFAULT_SOCKET_TIMEOUT_S = 60.0
DEFAULT_MAX_CONNECTIONS = 64
#: The status page lists at most this many segments per journal (the newest ones).
STATUS_PAGE_MAX_SEGMENTS = 100
_MIB = 1024.0 * 1024.0
_TXID = re.compile(r"[+-]?[0-9]{1,19}")
_WILDCARD_HOSTS = ("", "0.0.0.0", "::", "[::]")
_SERVICE = "Hadoop:service=JournalNode"
_TEXT = "text/plain; charset=utf-8"
_BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"


def make_server_socket(host: str, port: int, backlog: int = 128) -> socket.socket:
    """A TCP socket bound to ``(host, port)`` and listening; port 0 picks a free port."""
    host = host.strip("[]")
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # As Jetty does: a restarted JournalNode can rebind while old connections sit in TIME_WAIT.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except BaseException:
        sock.close()
        raise
    return sock


def journals_status(journal_node) -> str:
    """JournalNodeInfo's ``JournalsStatus``, a JSON string ``{"<jid>":{"Formatted":"true"}}``;
    as in Hadoop, a journal directory on disk that is not loaded yet counts as formatted."""
    status: dict[str, dict[str, str]] = {}
    for jid, journal in journal_node.journals().items():
        status[jid] = {"Formatted": "true" if journal.is_formatted() else "false"}
    for jid in journal_node.journal_dirs_on_disk():
        status.setdefault(jid, {"Formatted": "true"})
    return json.dumps(status, separators=(",", ":"))


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


def _jmx_query(text: str) -> Callable[[str], bool]:
    """A matcher for ``/jmx?qry=``: a JMX ObjectName pattern ``domain:k=v,k=v[,*]`` with globs."""
    domain, sep, rest = text.partition(":")
    parts = rest.split(",") if sep else []
    wanted = dict(part.partition("=")[::2] for part in parts if part != "*")
    any_other = "*" in parts
    if not sep or (not wanted and not any_other) or any("=" not in p for p in parts if p != "*"):
        raise ValueError(f"Invalid ObjectName pattern: {text}")

    def matches(name: str) -> bool:
        bean_domain, _, bean_rest = name.partition(":")
        props = dict(part.partition("=")[::2] for part in bean_rest.split(","))
        return (
            fnmatch.fnmatchcase(bean_domain, domain)
            and (any_other or set(props) == set(wanted))
            and all(k in props and fnmatch.fnmatchcase(props[k], v) for k, v in wanted.items())
        )

    return matches


class _HttpError(Exception):
    """Answer the request with ``status`` and this message."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class _Handler(http.server.BaseHTTPRequestHandler):
    """One connection; requests are dispatched by path to the ``_page_*`` methods."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out in separate writes
    server: _Server

    _ROUTES = {
        "/getJournal": "_page_get_journal",
        "/metrics": "_page_metrics",
        "/jmx": "_page_jmx",
        "/": "_page_status",
        "/index.html": "_page_status",
    }

    def setup(self) -> None:
        self.timeout = self.server.socket_timeout_s
        self._headers_sent = False
        super().setup()

    def handle_one_request(self) -> None:
        """BaseHTTPRequestHandler's loop step, with a smaller request-line limit and 405s."""
        self._headers_sent = False
        try:
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
            if self.command in ("GET", "HEAD"):
                self._dispatch(send_body=self.command == "GET")
            else:
                msg = f"HTTP method {self.command} is not supported by this URL"
                self._send_error(HTTPStatus.METHOD_NOT_ALLOWED, msg, allow="GET, HEAD")
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
        page = self._ROUTES.get(url.path)
        if page is None:
            self._send_error(HTTPStatus.NOT_FOUND, f"No such page: {url.path}")
            return
        try:
            query = parse_qs(url.query, keep_blank_values=True, max_num_fields=64)
        except ValueError as e:
            self._send_error(HTTPStatus.BAD_REQUEST, f"Malformed query string: {e}")
            return
        params = {key: values[0] for key, values in query.items()}
        try:
            getattr(self, page)(params, send_body)
        except (TimeoutError, ConnectionError):
            raise
        except _HttpError as e:
            self._send_error(e.status, str(e))
        except Exception as e:
            LOG.exception("Error serving %s to %s", url.path, self.client_address[0])
            if self._headers_sent:
                self.close_connection = True  # the client sees a short body, never a lie
            else:
                prefix = "getedit failed. " if page == "_page_get_journal" else ""
                msg = f"{prefix}{type(e).__name__}: {e}"
                self._send_error(HTTPStatus.INTERNAL_SERVER_ERROR, msg)

    # ---- responses ------------------------------------------------------------------------------
    def end_headers(self) -> None:
        self._headers_sent = True
        super().end_headers()

    def _send(self, status, content_type, body, send_body, headers=None, reason=None) -> None:
        self.send_response(status, reason)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def _send_error(self, status: int, message: str, allow: str | None = None) -> None:
        """A text/plain error. The message is also the reason phrase (as Jetty's sendError),
        where Hadoop's TransferFsImage reads it; there it is cut to printable ASCII."""
        reason = "".join(c if " " <= c <= "~" else " " for c in message)[:200].strip()
        headers = {"Connection": "close", **({"Allow": allow} if allow else {})}
        self.close_connection = True
        body = (message + "\n").encode("utf-8", "replace")
        self._send(status, _TEXT, body, self.command != "HEAD", headers, reason or None)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """Errors parse_request reports: a fixed phrase (never echo the request line back),
        with a status line and headers even for a request that looked like HTTP/0.9."""
        if getattr(self, "request_version", "") in ("", "HTTP/0.9"):
            self.request_version = "HTTP/1.0"
        self._send_error(code, HTTPStatus(code).phrase)

    def version_string(self) -> str:
        return "hadoop-qjm-py"

    def log_message(self, format: str, *args) -> None:  # noqa: A002 - the base class's name
        LOG.debug("%s - %s", self.address_string(), format % args)

    @property
    def _owner(self) -> JournalNodeHttpServer:
        return self.server.owner

    # ---- /getJournal ----------------------------------------------------------------------------
    def _page_get_journal(self, params: dict[str, str], send_body: bool) -> None:
        txid_text = params.get("segmentTxId")
        if txid_text is None:
            raise _HttpError(400, "Invalid request has no segmentTxId parameter")
        if not _TXID.fullmatch(txid_text) or not -(2**63) <= int(txid_text) < 2**63:
            raise _HttpError(400, f"Invalid segmentTxId parameter: '{txid_text}' is not a long")
        segment_txid = int(txid_text)
        try:
            jid = validate_journal_id(params.get("jid"))
            theirs = params.get("storageInfo")
            if theirs is not None:
                theirs = StorageInfo.from_colon_separated_string(theirs)
            journal = self._owner.journal_node.get_journal_if_exists(jid)
        except IllegalArgumentException as e:
            raise _HttpError(400, str(e)) from None
        if journal is None:
            raise _HttpError(404, f"Journal {jid} not found on this JournalNode")
        if theirs is not None:
            mine = journal.storage.storage_info
            my_ns, my_cid = (mine.namespace_id, mine.cluster_id) if mine else (0, "")
            if theirs.namespace_id != my_ns or theirs.cluster_id != my_cid:
                msg = (
                    f"This node has namespaceId '{my_ns}' and clusterId '{my_cid}' but the "
                    f"requesting node expected '{theirs.namespace_id}' and '{theirs.cluster_id}'"
                )
                LOG.warning("Invalid transfer request from %s: %s", self.client_address[0], msg)
                raise _HttpError(403, msg)
        # Only the literal "false" turns in-progress segments off (Hadoop's inProgressOk).
        opened = journal.open_segment_for_read(segment_txid, params.get("inProgressOk") != "false")
        if opened is None:
            raise _HttpError(404, f"No edit log found starting at txid {segment_txid}")
        f, name, length = opened
        with f:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(length))
            self.send_header("Content-Disposition", f"attachment; filename={name}")
            self.send_header("X-Image-Edits-Name", name)
            self.end_headers()
            if send_body:
                self._copy(f, length, name)

    def _copy(self, f, length: int, name: str) -> None:
        """Send exactly ``length`` bytes of ``f`` (its size at open time), throttled if asked."""
        throttler = self._owner.new_throttler()
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

    # ---- /metrics, /jmx, / ----------------------------------------------------------------------
    def _page_metrics(self, params: dict[str, str], send_body: bool) -> None:
        body = generate_latest(self._owner.journal_node.metrics.registry)
        self._send(HTTPStatus.OK, CONTENT_TYPE_LATEST, body, send_body)

    def _page_jmx(self, params: dict[str, str], send_body: bool) -> None:
        qry = params.get("qry", "*:*")
        try:
            matches = _jmx_query(qry)
        except ValueError as e:
            result: dict[str, object] = {"result": "ERROR", "message": str(e)}
            status = HTTPStatus.BAD_REQUEST
        else:
            result = {"beans": [b for b in self._owner.jmx_beans() if matches(b["name"])]}
            status = HTTPStatus.OK
        body = json.dumps(result, indent=2, default=str).encode("utf-8")
        self._send(status, "application/json; charset=utf-8", body, send_body)

    def _page_status(self, params: dict[str, str], send_body: bool) -> None:
        body = self._owner.status_page().encode("utf-8")
        self._send(HTTPStatus.OK, "text/html; charset=utf-8", body, send_body)


class _Server(http.server.HTTPServer):
    """An HTTPServer on a ready-made socket, one tracked daemon thread per connection."""

    def __init__(self, owner: JournalNodeHttpServer, sock: socket.socket) -> None:
        self.address_family = sock.family
        super().__init__(sock.getsockname()[:2], _Handler, bind_and_activate=False)
        self.socket.close()  # the one TCPServer made; ours comes from the socket factory
        self.socket = sock
        self.server_address = sock.getsockname()
        self.server_name, self.server_port = self.server_address[:2]
        self.owner = owner
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
                name = f"JournalNodeHttpServer-{self.server_port}-handler-{self._count}"
                thread = threading.Thread(
                    target=self._process, args=(request, client_address), name=name, daemon=True
                )
                self._conns[request] = thread
                thread.start()  # under the lock, so close_connections never joins an unstarted one
        if refuse:
            self._refuse(request)

    def _process(self, request, client_address) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            with self._conns_lock:
                self._conns.pop(request, None)

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


class JournalNodeHttpServer:
    """The JournalNode's HTTP server.

    ``journal_node`` provides ``get_journal_if_exists(jid)``, ``journals()``,
    ``journal_dirs_on_disk()``, ``metrics``, ``conf``, ``start_time_ms``, ``version``,
    ``rpc_address``, ``cluster_ids()`` and ``storage_infos()``. ``socket_factory(host, port)``
    returns a bound, listening socket (default :func:`make_server_socket`); the socket is
    made here, so :attr:`port` is known before :meth:`start`.
    """

    scheme = "http"

    def __init__(
        self,
        journal_node,
        bind_host: str,
        port: int,
        socket_factory: Callable[[str, int], socket.socket] | None = None,
        *,
        socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S,
        max_connections: int | None = None,
    ) -> None:
        self.journal_node = journal_node
        self.bind_host = bind_host
        conf = getattr(journal_node, "conf", None)
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
            name = f"JournalNodeHttpServer-{self.port}"
            self._thread = threading.Thread(target=self._server.serve, name=name, daemon=True)
            self._thread.start()
        LOG.info("JournalNode HTTP server listening on %s", self.uri)

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
        LOG.info("JournalNode HTTP server on port %d stopped", self.port)

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
        """``http://host:port`` of this server (the ``fromURL`` other JournalNodes fetch from)."""
        host = self.connect_host
        return f"{self.scheme}://{f'[{host}]' if ':' in host else host}:{self.port}"

    def new_throttler(self) -> DataTransferThrottler | None:
        """A throttler for one transfer; None if ``dfs.image.transfer.bandwidthPerSec`` is 0."""
        if self.bandwidth_per_sec <= 0:
            return None
        return DataTransferThrottler(self.bandwidth_per_sec)

    # ---- content --------------------------------------------------------------------------------
    def jmx_beans(self) -> list[dict[str, object]]:
        """Every bean ``/jmx`` can show: JournalNodeInfo, one Journal-<jid> each, JvmMetrics."""
        jn = self.journal_node
        rpc_host, rpc_port = jn.rpc_address
        beans: list[dict[str, object]] = [
            {
                "name": f"{_SERVICE},name=JournalNodeInfo",
                "modelerType": "org.apache.hadoop.hdfs.qjournal.server.JournalNode",
                "JournalsStatus": journals_status(jn),
                "HostAndPort": f"{rpc_host}:{rpc_port}",
                "ClusterIds": list(jn.cluster_ids()),
                "Version": jn.version,
                "JNStartedTimeInMillis": jn.start_time_ms,
                "StorageInfos": list(jn.storage_infos()),
            }
        ]
        hostname = socket.gethostname()
        for metrics in sorted(jn.metrics.journals(), key=lambda m: m.journal_id):
            try:
                attributes = metrics.as_hadoop_bean()
            except Exception:
                LOG.exception("Unable to read the metrics of journal %s", metrics.journal_id)
                continue
            beans.append(
                {
                    "name": f"{_SERVICE},name=Journal-{metrics.journal_id}",
                    "modelerType": f"Journal-{metrics.journal_id}",
                    "tag.Context": "dfs",
                    "tag.Hostname": hostname,
                    **attributes,
                }
            )
        beans.append(self._jvm_metrics_bean(hostname))
        return beans

    def _jvm_metrics_bean(self, hostname: str) -> dict[str, object]:
        """Process facts under Hadoop's JvmMetrics names where one fits (RSS as "heap")."""
        p = psutil.Process()  # one per call: oneshot() caches are not thread-safe
        with p.oneshot():
            mem, cpu, os_threads = p.memory_info(), p.cpu_times(), p.num_threads()
            fds = p.num_fds() if hasattr(p, "num_fds") else -1
        return {
            "name": f"{_SERVICE},name=JvmMetrics",
            "modelerType": "JvmMetrics",
            "tag.Context": "jvm",
            "tag.ProcessName": "JournalNode",
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

    def status_page(self) -> str:
        """The HTML of ``/``: every journal's state and segments (all text escaped)."""
        jn = self.journal_node
        e = html.escape
        journals = jn.journals()
        about = f"{self.uri}, version {jn.version}, started {time.ctime(jn.start_time_ms / 1000)}"
        parts = [
            "<!DOCTYPE html><html><head><meta charset='utf-8'><title>JournalNode</title></head>",
            f"<body><h1>JournalNode</h1><p>{e(about)}</p>",
        ]
        for jid in sorted(journals):
            try:
                parts.append(self._journal_section(journals[jid]))
            except Exception as exc:
                LOG.exception("Unable to describe journal %s", jid)
                parts.append(f"<h2>{e(jid)}</h2><p>unavailable: {e(type(exc).__name__)}</p>")
        not_loaded = [jid for jid in jn.journal_dirs_on_disk() if jid not in journals]
        if not_loaded:
            items = "".join(f"<li>{e(jid)}</li>" for jid in not_loaded)
            parts.append(f"<h2>On disk, not loaded</h2><ul>{items}</ul>")
        parts.append("</body></html>")
        return "\n".join(parts)

    def _journal_section(self, journal) -> str:
        e = html.escape
        cur = journal.cur_segment_txid
        open_segment = f"edits_inprogress_{cur:019d}" if journal.is_segment_open else "none"
        rows = [
            ("Formatted", journal.is_formatted()),
            ("Last promised epoch", journal.metric_last_promised_epoch()),
            ("Last writer epoch", journal.metric_last_writer_epoch()),
            ("Last written txid", journal.highest_written_txid),
            ("Committed txid", journal.get_committed_txid()),
            ("Lag (txns)", journal.current_lag_txns()),
            ("Open segment", open_segment),
        ]
        out = [f"<h2>Journal {e(journal.journal_id)}</h2><table>"]
        out += [f"<tr><th>{e(k)}</th><td>{e(str(v))}</td></tr>" for k, v in rows]
        out.append("</table>")
        logs = sorted(match_edit_logs(journal.storage.current_dir), key=lambda f: f.first_txid)
        shown = logs[-STATUS_PAGE_MAX_SEGMENTS:]
        out.append(f"<h3>Segments ({len(logs)}, newest {len(shown)} shown)</h3>")
        out.append("<table><tr><th>File</th><th>State</th><th>Bytes</th></tr>")
        for log in shown:
            try:
                size = str(log.path.stat().st_size)
            except OSError:
                size = "gone"  # renamed by finalize or purged while we listed
            state = "in progress" if log.is_in_progress else "finalized"
            out.append(f"<tr><td>{e(log.name)}</td><td>{state}</td><td>{e(size)}</td></tr>")
        out.append("</table>")
        return "".join(out)

    def __str__(self) -> str:
        return f"JournalNodeHttpServer({self.uri})"
