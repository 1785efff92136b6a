"""HeadlessBrowser: Debian's chromium, headless, driven over the DevTools protocol.

::

    with HeadlessBrowser(tmp_path) as browser:
        page = browser.open("http://127.0.0.1:9870/")
        page.wait_for("document.querySelectorAll('#journal-nodes tr').length === 3")
        page.screenshot(tmp_path / "namenode.png")
        assert page.console_errors == []

The browser is a child process this object owns (its own session; stopped by its pid, and
what is left of its process group after it, by that group's id). It listens on a port of
its choosing (``--remote-debugging-port=0``, read back from ``DevToolsActivePort``) on
127.0.0.1. One websocket to the browser carries every page's commands (flattened target
sessions); the websocket client is the few lines of RFC 6455 a client needs, so the tests
need no library beyond the standard one.

Each page collects what a person would see in the console as an error:
``Runtime.consoleAPICalled`` of type error, ``Runtime.exceptionThrown`` and
``Log.entryAdded`` of level error (a failed fetch, a 404 stylesheet) — in
:attr:`Page.console_errors`.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["BrowserError", "BrowserNotFound", "HeadlessBrowser", "Page", "find_chromium"]

_CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
INSTALL_HINT = "chromium is not installed: install it with `apt-get install -y chromium`"


class BrowserError(Exception):
    """The browser failed to start, answered a command with an error, or a wait timed out."""


class BrowserNotFound(BrowserError):
    """No chromium executable on the PATH (the message says how to install one)."""


def find_chromium() -> str:
    """The path of a chromium executable (``$CHROMIUM`` first, then the PATH)."""
    named = os.environ.get("CHROMIUM")
    for candidate in ((named,) if named else ()) + _CANDIDATES:
        path = shutil.which(candidate)
        if path:
            return path
    raise BrowserNotFound(INSTALL_HINT)


class _WebSocket:
    """A blocking RFC 6455 client: text frames out (masked), whole messages in."""

    def __init__(self, host: str, port: int, path: str, timeout_s: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        self.sock.sendall(request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(1)
            if not chunk:
                raise BrowserError("the browser closed the DevTools connection at the handshake")
            head += chunk
        status = head.split(b"\r\n", 1)[0]
        if b" 101 " not in status:
            raise BrowserError(f"DevTools websocket handshake refused: {status.decode()}")

    def send_text(self, text: str) -> None:
        payload = text.encode()
        n = len(payload)
        if n < 126:
            header = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 1 << 16:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def _read(self, n: int) -> bytes:
        data = bytearray()
        while len(data) < n:
            chunk = self.sock.recv(min(n - len(data), 1 << 20))
            if not chunk:
                raise BrowserError("the browser closed the DevTools connection")
            data += chunk
        return bytes(data)

    def recv_text(self) -> str:
        """The next whole text message (pings answered, fragments joined)."""
        message = bytearray()
        while True:
            first, second = self._read(2)
            opcode, n = first & 0x0F, second & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self._read(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", self._read(8))
            mask = self._read(4) if second & 0x80 else None
            payload = self._read(n)
            if mask:
                payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
            if opcode == 0x8:
                raise BrowserError("the browser closed the DevTools connection")
            if opcode == 0x9:  # ping: answer with a (masked, empty) pong
                self.sock.sendall(struct.pack("!BB", 0x8A, 0x80) + os.urandom(4))
                continue
            if opcode == 0xA:
                continue
            message += payload
            if first & 0x80:
                return message.decode()

    def close(self) -> None:
        self.sock.close()


class HeadlessBrowser:
    """A headless chromium this object starts and stops (see the module docstring).

    ``work_dir`` holds the profile and ``chromium.log`` (the browser's stderr).
    Raises :class:`BrowserNotFound` when there is no chromium.
    """

    def __init__(
        self,
        work_dir: str | os.PathLike[str] | None = None,
        *,
        executable: str | None = None,
        start_timeout_s: float = 30.0,
        command_timeout_s: float = 30.0,
        window_size: tuple[int, int] = (1280, 1024),
    ) -> None:
        self.executable = executable or find_chromium()
        self.work_dir = Path(work_dir or tempfile.mkdtemp(prefix="headless-browser-"))
        self.command_timeout_s = command_timeout_s
        self.profile_dir = self.work_dir / "chromium-profile"
        self.profile_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.work_dir / "chromium.log"
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        self._pages: dict[str, Page] = {}
        with open(self.log_path, "ab") as log:
            self.popen = subprocess.Popen(
                [
                    self.executable,
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--no-first-run",
                    "--no-default-browser-check",
                    "--disable-extensions",
                    "--disable-background-networking",
                    "--disable-component-update",
                    "--remote-debugging-address=127.0.0.1",
                    "--remote-debugging-port=0",
                    f"--user-data-dir={self.profile_dir}",
                    f"--window-size={window_size[0]},{window_size[1]}",
                    "about:blank",
                ],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        self.pid = self.popen.pid
        try:
            port, path = self._devtools_address(start_timeout_s)
            self._ws = _WebSocket("127.0.0.1", port, path, command_timeout_s)
        except BaseException:
            self._stop_process()
            raise

    def _devtools_address(self, timeout_s: float) -> tuple[int, str]:
        active = self.profile_dir / "DevToolsActivePort"
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise BrowserError(
                    f"chromium exited with status {self.popen.returncode} at start; "
                    f"see {self.log_path}"
                )
            try:
                lines = active.read_text().split()
            except OSError:
                lines = []
            if len(lines) >= 2:
                return int(lines[0]), lines[1]
            time.sleep(0.05)
        raise BrowserError(f"chromium did not open its DevTools port in {timeout_s}s")

    # ---- the protocol ---------------------------------------------------------------------------
    def call(self, method: str, params: dict | None = None, session: str | None = None) -> dict:
        """Send one command and return its result; events read meanwhile are dispatched."""
        self._next_id += 1
        message_id = self._next_id
        message: dict[str, Any] = {"id": message_id, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        self._ws.send_text(json.dumps(message))
        deadline = time.monotonic() + self.command_timeout_s
        while True:
            if time.monotonic() > deadline:
                raise BrowserError(f"no answer to {method} in {self.command_timeout_s}s")
            reply = json.loads(self._ws.recv_text())
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise BrowserError(f"{method} failed: {reply['error'].get('message')}")
                return reply.get("result", {})
            if "method" in reply:
                self._dispatch(reply)

    def _dispatch(self, event: dict) -> None:
        page = self._pages.get(event.get("sessionId", ""))
        if page is not None:
            page._on_event(event["method"], event.get("params", {}))

    def open(self, url: str, timeout_s: float = 30.0) -> Page:
        """A new tab showing ``url`` (loaded: its load event fired)."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        attached = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})
        page = Page(self, attached["sessionId"], target)
        self._pages[page.session] = page
        for domain in ("Page", "Runtime", "Log"):
            page.call(f"{domain}.enable")
        page.navigate(url, timeout_s)
        return page

    # ---- lifecycle ------------------------------------------------------------------------------
    def close(self) -> None:
        """Close the browser (Browser.close), then make sure its processes are gone."""
        try:
            self.call("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self._ws.close()
        finally:
            self._stop_process()

    def _stop_process(self) -> None:
        try:
            self.popen.wait(10)
        except subprocess.TimeoutExpired:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(10)
        try:
            # Renderers and zygotes of this browser only: the session it was started in.
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass

    def __enter__(self) -> HeadlessBrowser:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class Page:
    """One tab of a :class:`HeadlessBrowser`."""

    def __init__(self, browser: HeadlessBrowser, session: str, target_id: str) -> None:
        self.browser = browser
        self.session = session
        self.target_id = target_id
        #: Console errors, uncaught exceptions and error log entries, as one line each.
        self.console_errors: list[str] = []
        self._loaded = False

    def call(self, method: str, params: dict | None = None) -> dict:
        return self.browser.call(method, params, self.session)

    def _on_event(self, method: str, params: dict) -> None:
        if method == "Page.loadEventFired":
            self._loaded = True
        elif method == "Runtime.consoleAPICalled" and params.get("type") == "error":
            args = params.get("args", [])
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in args)
            self.console_errors.append(f"console.error: {text}")
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            exception = details.get("exception", {})
            text = exception.get("description") or details.get("text", "")
            self.console_errors.append(f"exception: {text}")
        elif method == "Log.entryAdded":
            entry = params.get("entry", {})
            if entry.get("level") == "error":
                self.console_errors.append(f"log: {entry.get('text')} {entry.get('url', '')}")

    def navigate(self, url: str, timeout_s: float = 30.0) -> None:
        """Load ``url`` and wait for its load event."""
        self._loaded = False
        result = self.call("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise BrowserError(f"cannot load {url}: {result['errorText']}")
        deadline = time.monotonic() + timeout_s
        while not self._loaded:
            if time.monotonic() > deadline:
                raise BrowserError(f"{url} did not finish loading in {timeout_s}s")
            self.evaluate("1")  # reads the events that arrived meanwhile
            time.sleep(0.05)

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page (promises awaited)."""
        result = self.call(
            "Runtime.evaluate",
            {"expression": expression, "returnByValue": True, "awaitPromise": True},
        )
        if "exceptionDetails" in result:
            details = result["exceptionDetails"]
            text = details.get("exception", {}).get("description") or details.get("text")
            raise BrowserError(f"{expression!r} raised: {text}")
        return result.get("result", {}).get("value")

    def wait_for(self, expression: str, timeout_s: float = 30.0, interval_s: float = 0.1) -> Any:
        """Poll ``expression`` until it is truthy and return its value; BrowserError (with
        the last value) after ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out after {timeout_s}s waiting for {expression!r}")
            time.sleep(interval_s)

    def screenshot(self, path: str | os.PathLike[str]) -> Path:
        """A PNG of the whole page (beyond the window's height) at ``path``."""
        metrics = self.call("Page.getLayoutMetrics")
        size = metrics.get("cssContentSize") or metrics["contentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        data = self.call(
            "Page.captureScreenshot",
            {"format": "png", "clip": clip, "captureBeyondViewport": True},
        )["data"]
        path = Path(path)
        path.write_bytes(base64.b64decode(data))
        return path

    def close(self) -> None:
        self.browser.call("Target.closeTarget", {"targetId": self.target_id})
        self.browser._pages.pop(self.session, None)
