"""The daemons' status pages: static HTML, JavaScript and one stylesheet, shipped with the
package (no CDN: a daemon's pages work on a host without internet).

Each page is a shell that fetches ``/jmx`` and fills its tables, again every few seconds
without reloading (as Hadoop's ``dfshealth.html`` and ``journalnode.html`` read ``/jmx``).
A daemon's HTTP server adds :func:`pages` of its app to its pages; each is served by
:func:`page_asset`. The files are read once and kept.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from http import HTTPStatus
from importlib import resources
from typing import Any
from urllib.parse import urlsplit

__all__ = ["APPS", "page_asset", "pages", "read_asset", "send_asset"]

_SHARED = {
    "/static/hadoop-qjm.css": "static/hadoop-qjm.css",
    "/static/qjm-status.js": "static/qjm-status.js",
}
#: URL path -> file under this package, per app (the NameNode's, the JournalNode's).
APPS: dict[str, dict[str, str]] = {
    "namenode": {
        "/dfshealth.html": "namenode/dfshealth.html",
        "/dfshealth.js": "namenode/dfshealth.js",
        **_SHARED,
    },
    "journal": {
        "/journalnode.html": "journal/journalnode.html",
        "/journalnode.js": "journal/journalnode.js",
        **_SHARED,
    },
}
_ASSETS = {path: name for app in APPS.values() for path, name in app.items()}
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}


@functools.cache
def read_asset(name: str) -> bytes:
    """The bytes of ``name`` (``"namenode/dfshealth.html"``) from the installed package."""
    return resources.files(__package__).joinpath(name).read_bytes()


def pages(app: str) -> dict[str, Callable[[Any, dict[str, str], bool], None]]:
    """HttpServer2 pages (path -> :func:`page_asset`) serving ``app``'s files."""
    return dict.fromkeys(APPS[app], page_asset)


def page_asset(request: Any, params: dict[str, str], send_body: bool) -> None:
    """A page (HttpServer2's form) answering with the file its path names."""
    send_asset(request, send_body)


def send_asset(request: Any, send_body: bool) -> None:
    """Answer ``request`` (an HttpRequestHandler) with the file its path names."""
    name = _ASSETS[urlsplit(request.path).path]
    content_type = _TYPES[name[name.rindex(".") :]]
    # no-cache: revalidate, so that an upgraded daemon's page never runs a stale script.
    headers = {"Cache-Control": "no-cache"}
    request.send_bytes(HTTPStatus.OK, content_type, read_asset(name), send_body, headers)
