"""The ``/getJournal`` URL, built in one place (Hadoop's GetJournalEditServlet.buildPath
and IPCLoggerChannel.getHttpServerURI): the writer's recovery and the JournalNodeSyncer
both fetch segments with it.

``GET /getJournal?jid=&segmentTxId=&storageInfo=&inProgressOk=``, the values encoded
as java.net.URLEncoder does.
"""

from __future__ import annotations

from urllib.parse import quote_plus, urlsplit

__all__ = ["get_journal_url", "http_server_url", "java_url_encode"]


def java_url_encode(text: str) -> str:
    """java.net.URLEncoder: space -> '+', and '*' stays; '~' is encoded."""
    return quote_plus(text, safe="*").replace("~", "%7E")


def http_server_url(host: str, from_url: str | None, default_port: int | None) -> str:
    """``scheme://host:port`` of a JournalNode's HTTP server: scheme and port from the
    ``fromURL`` it reported (``http`` and ``default_port`` when absent), with ``host``
    the name we reach it by — the node may report a wildcard bind address."""
    scheme, port = "http", default_port
    if from_url:
        parts = urlsplit(from_url)
        scheme = parts.scheme or "http"
        if parts.port is not None:
            port = parts.port
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port}"


def get_journal_url(
    base: str, journal_id: str, segment_txid: int, storage_info: str, in_progress_ok: bool
) -> str:
    """The URL under ``base`` (:func:`http_server_url`) of one segment's file."""
    return (
        f"{base}/getJournal?jid={java_url_encode(journal_id)}"
        f"&segmentTxId={segment_txid}"
        f"&storageInfo={java_url_encode(storage_info)}"
        f"&inProgressOk={'true' if in_progress_ok else 'false'}"
    )
