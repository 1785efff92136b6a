"""TransferSession and download_to_file against a small HTTP/1.1 server on loopback: one
kept-alive connection for many downloads, a GET sent again when the server closed the kept
connection, the MD5 of X-MD5-Digest checked as the bytes arrive, nothing left on failure."""

from __future__ import annotations

import hashlib
import http.server
import os
import sys
import threading

import pytest

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.common.http_transfer import RECV_CHUNK, TransferSession, download_to_file
from hadoop_qjm.testing.in_process_ha import wait_until

pytestmark = pytest.mark.timeout(60)

BODY = bytes(range(256)) * (RECV_CHUNK // 256 * 2 + 3)  # a bit over two reads


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        self.timeout = self.server.idle_timeout_s
        with self.server.lock:
            self.server.connections += 1
            self.server.open_connections += 1
        super().setup()

    def finish(self) -> None:
        super().finish()
        with self.server.lock:
            self.server.open_connections -= 1

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        if self.path.startswith("/missing"):
            self.send_error(404, "No edit log found starting at txid 7")
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(BODY)))
        md5 = self.server.md5_header
        if md5 is not None:
            self.send_header("X-MD5-Digest", md5)
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args) -> None:
        pass


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request, client_address) -> None:
        """A client that cuts its connection (as the tests' downloads do) is not an error
        to print: the test asserts what the client saw."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


@pytest.fixture
def server():
    srv = _QuietServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.lock = threading.Lock()
    srv.connections = 0
    srv.open_connections = 0
    srv.md5_header = hashlib.md5(BODY).hexdigest()
    srv.idle_timeout_s = 30.0
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()
        thread.join(timeout=10)


def url(srv, path: str = "/getJournal?segmentTxId=1") -> str:
    return f"http://127.0.0.1:{srv.server_address[1]}{path}"


def test_one_kept_alive_connection_carries_every_download(server, tmp_path):
    session = TransferSession()
    try:
        for i in range(3):
            target = tmp_path / f"segment-{i}"
            assert session.download_to_file(url(server), target, 10) == len(BODY)
            assert target.read_bytes() == BODY
    finally:
        session.close()
    assert server.connections == 1
    wait_until(lambda: server.open_connections == 0)  # close() closed the idle one


def test_a_get_on_a_connection_the_server_closed_is_sent_again(server, tmp_path):
    server.idle_timeout_s = 0.2  # the server drops an idle kept connection
    session = TransferSession()
    try:
        session.download_to_file(url(server), tmp_path / "first", 10)
        wait_until(lambda: server.open_connections == 0)
        assert session.download_to_file(url(server), tmp_path / "second", 10) == len(BODY)
    finally:
        session.close()
    assert (tmp_path / "second").read_bytes() == BODY
    assert server.connections == 2


def test_chunks_are_seen_as_they_arrive_and_progress_ends_at_the_length(server, tmp_path):
    chunks: list[bytes] = []
    calls: list[tuple[int, int]] = []
    size = download_to_file(
        url(server),
        tmp_path / "segment",
        10,
        progress=lambda *call: calls.append(call),
        on_chunk=lambda chunk: chunks.append(bytes(chunk)),
    )
    assert size == len(BODY) and b"".join(chunks) == BODY
    assert len(chunks) > 1 and calls[-1] == (len(BODY), len(BODY))


def test_a_wrong_md5_fails_and_leaves_no_file(server, tmp_path):
    server.md5_header = "0" * 32
    session = TransferSession()
    try:
        with pytest.raises(IOException, match="does not match advertised digest"):
            session.download_to_file(url(server), tmp_path / "segment", 10)
        assert not (tmp_path / "segment").exists()
        server.md5_header = None  # no digest sent (as /getJournal): the length is checked
        assert session.download_to_file(url(server), tmp_path / "segment", 10) == len(BODY)
    finally:
        session.close()


def test_an_error_status_is_an_ioexception_with_the_servers_message(server, tmp_path):
    session = TransferSession()
    try:
        with pytest.raises(IOException, match="failed with status code 404"):
            session.download_to_file(url(server, "/missing"), tmp_path / "segment", 10)
        assert not (tmp_path / "segment").exists()
        # The failed answer's connection was closed, not kept: the next one works.
        assert session.download_to_file(url(server), tmp_path / "segment", 10) == len(BODY)
    finally:
        session.close()


def test_a_refused_connection_is_an_ioexception(tmp_path):
    srv = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
    port = srv.server_address[1]
    srv.server_close()  # nothing listens there now
    with pytest.raises(IOException, match="Unable to fetch"):
        download_to_file(f"http://127.0.0.1:{port}/getJournal", tmp_path / "segment", 5)
    assert not (tmp_path / "segment").exists()


def test_a_failed_fdatasync_fails_the_download(server, tmp_path, monkeypatch):
    import hadoop_qjm.common.http_transfer as http_transfer

    def failing(fd: int) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(http_transfer, "_fdatasync", failing)
    with pytest.raises(IOException, match="Failed to fdatasync .*Input/output error"):
        download_to_file(url(server), tmp_path / "segment", 10)
    assert not (tmp_path / "segment").exists()


def test_a_download_synced_later_starts_its_writeback_over_every_byte(
    server, tmp_path, monkeypatch
):
    """``sync=False`` (the syncer fdatasyncs in its installer): the written data's writeback
    is started as it arrives, in ranges that cover the file once, in order, and the
    bytes are the server's; a failing hint fails nothing. ``sync=True``: no hint, the
    download's own fdatasync writes it."""
    import hadoop_qjm.common.http_transfer as http_transfer

    hints: list[tuple[int, int]] = []

    def noting(fd: int, offset: int, length: int, advice: int) -> None:
        assert advice == os.POSIX_FADV_DONTNEED
        assert os.fstat(fd).st_size >= offset + length  # written (flushed) before its hint
        hints.append((offset, length))
        raise OSError(22, "Invalid argument")  # a hint the kernel refuses changes nothing

    monkeypatch.setattr(http_transfer, "_fadvise", noting)
    # Chunks smaller than the file object's buffer: a hint not preceded by a flush would
    # name bytes still in the buffer (the fstat above sees them missing).
    monkeypatch.setattr(http_transfer, "RECV_CHUNK", 1000)
    monkeypatch.setattr(http_transfer, "WRITEBACK_EVERY", 3000)
    written: list[tuple[int, int]] = []

    def on_written(fd: int) -> None:  # the whole body, in the file, before it is closed
        written.append((os.fstat(fd).st_size, os.fstat(fd).st_ino))

    session = TransferSession()
    try:
        target = tmp_path / "later"
        assert session.download_to_file(
            url(server), target, 10, sync=False, on_written=on_written
        ) == len(BODY)
        assert target.read_bytes() == BODY
        assert written == [(len(BODY), target.stat().st_ino)]
        assert len(hints) > 1 and hints[0][0] == 0
        assert all(a + n == b for (a, n), (b, _) in zip(hints, hints[1:], strict=False))
        assert sum(n for _, n in hints) == len(BODY)
        hints.clear()
        session.download_to_file(url(server), tmp_path / "now", 10)
        assert hints == [] and (tmp_path / "now").read_bytes() == BODY
    finally:
        session.close()


@pytest.mark.parametrize(
    "bad",
    [
        "http://[::1/getJournal",  # urlsplit: Invalid IPv6 URL
        "http://127.0.0.1:99999999/getJournal",  # port out of range
        "http://127.0.0.1:1/get\u00e9Journal",  # a path http.client cannot send
        "http://a b/getJournal",  # http.client's InvalidURL
        "ftp://127.0.0.1/x",
    ],
)
def test_a_malformed_url_is_an_ioexception(bad: str, tmp_path):
    """The URL may come from an RPC (acceptRecovery's fromURL): one IOException, no file."""
    with pytest.raises(IOException, match="Unable to fetch"):
        download_to_file(bad, tmp_path / "x", 5)
    assert not (tmp_path / "x").exists()


def test_a_download_that_ends_after_close_does_not_pool_its_connection(server, tmp_path):
    """The syncer closes its session at the end of a round; a scrubber's fetch still
    running then must not leave its connection idling on the peer afterwards."""
    session = TransferSession()
    seen = threading.Event()
    go_on = threading.Event()

    def on_chunk(_chunk) -> None:
        seen.set()
        go_on.wait(10)

    done: list[int] = []
    fetch = threading.Thread(
        target=lambda: done.append(
            session.download_to_file(url(server), tmp_path / "a", 10, on_chunk=on_chunk)
        )
    )
    fetch.start()
    try:
        assert seen.wait(10)
        session.close()  # the round ends while the fetch is in its body
    finally:
        go_on.set()
        fetch.join(10)
    assert done == [len(BODY)]
    wait_until(lambda: server.open_connections == 0)  # closed, not kept
    session.close()


def test_two_downloads_at_once_each_check_their_own_md5(server, tmp_path):
    """Two threads downloading through one session at once (the syncer's two fetchers):
    each has its own connection and md5 (a mixed-up one would fail the download)."""
    session = TransferSession()
    errors: list[BaseException] = []

    def fetch(i: int) -> None:
        try:
            for j in range(3):
                session.download_to_file(url(server), tmp_path / f"c{i}-{j}", 10)
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=fetch, args=(i,)) for i in range(2)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
    finally:
        session.close()
    assert errors == []
    assert all(p.read_bytes() == BODY for p in tmp_path.iterdir())
