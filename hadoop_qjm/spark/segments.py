"""Finding, fingerprinting and reading edit-log segments on an executor. No pyspark here.

A segment is found either in a directory the executor can read (a JournalNode's
``dfs.journalnode.edits.dir``, a journal's directory, its ``current/``) or on a live
JournalNode: the manifest over RPC (``getEditLogManifest``) and the bytes over HTTP
(``/getJournal``). Either way it becomes a :class:`SegmentRef` — plain data a Spark task
can carry to any machine — and :func:`fingerprint` and :func:`op_rows` read it from
wherever it is.
"""

from __future__ import annotations

import hashlib
import io
import struct
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.durable import PersistentLongFile
from hadoop_qjm.common.exceptions import EditLogCorruptionError, IOException
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream, scan_edit_log
from hadoop_qjm.editlog.file_journal_manager import (
    EDITS_INPROGRESS_REGEX,
    EDITS_REGEX,
    match_edit_logs,
)

__all__ = [
    "CHUNK",
    "EDIT_FIELDS",
    "HTTP_TIMEOUT_S",
    "SegmentRef",
    "expand_path",
    "fingerprint",
    "get_journal_url",
    "list_journal_dirs",
    "list_journal_node",
    "op_rows",
]

#: Seconds an HTTP download or an RPC may take.
HTTP_TIMEOUT_S = 60.0
CHUNK = 1 << 20

#: The rows of :func:`op_rows` (name, Spark SQL type): the schema of ``read_edits``.
EDIT_FIELDS: tuple[tuple[str, str], ...] = (
    ("txid", "bigint"),
    ("opcode", "int"),
    ("op_name", "string"),
    ("path", "string"),
    ("timestamp", "bigint"),
    ("segment", "string"),
    ("node", "string"),
)

_LONG = struct.Struct(">q")


@dataclass(frozen=True)
class SegmentRef:
    """One copy of one segment: which node has it, and where to read it (path or URL).

    ``last_txid`` is the name's for a finalized segment, the JournalNode's highest
    written txid for an in-progress one listed over RPC, else INVALID_TXID.
    """

    node: str
    jid: str
    segment: str
    first_txid: int
    last_txid: int
    in_progress: bool
    location: str

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


# ---- finding segments ---------------------------------------------------------------------------


def _journal_dirs(directory: Path, jid: str | None) -> dict[str, Path]:
    """``{jid: current dir}`` under ``directory``: an edits dir, a journal dir or ``current``."""
    if directory.name == "current" and directory.is_dir():
        found = {directory.parent.name: directory}
    elif (directory / "current").is_dir():
        found = {directory.name: directory / "current"}
    else:
        found = {
            sub.name: sub / "current"
            for sub in sorted(directory.iterdir())
            if sub.is_dir() and (sub / "current").is_dir()
        }
    if jid is not None:
        found = {name: path for name, path in found.items() if name == jid}
    return found


def _read_committed_txid(path: Path) -> int | None:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    return _LONG.unpack(data)[0] if len(data) == 8 else None


def _segment_ref(node: str, jid: str, log: Any) -> SegmentRef:
    return SegmentRef(
        node, jid, log.name, log.first_txid, log.last_txid, log.is_in_progress, str(log.path)
    )


def list_journal_dirs(node: str, directory: str, jid: str | None = None) -> list[dict[str, Any]]:
    """The journals and segments in a JournalNode directory, as rows.

    Rows of ``kind`` "journal" (node, jid, promised and writer epoch, committed txid,
    error) and "segment" (a :class:`SegmentRef`). A directory without any journal
    gives one "journal" row with the error.
    """
    rows: list[dict[str, Any]] = []
    base = Path(directory)
    try:
        journals = _journal_dirs(base, jid)
    except OSError as e:
        journals = {}
        problem = f"cannot list {directory}: {e.strerror or e}"
    else:
        problem = f"no journal{' ' + jid if jid else ''} in {directory}"
    if not journals:
        rows.append({"kind": "journal", "node": node, "jid": jid or "?", "error": problem})
        return rows
    for name, current in journals.items():
        row: dict[str, Any] = {"kind": "journal", "node": node, "jid": name, "error": None}
        try:
            row["promised_epoch"] = PersistentLongFile.read_file(current / "last-promised-epoch", 0)
            row["writer_epoch"] = PersistentLongFile.read_file(current / "last-writer-epoch", 0)
            row["committed_txid"] = _read_committed_txid(current / "committed-txid")
            logs = sorted(match_edit_logs(current), key=lambda log: log.first_txid)
        except OSError as e:
            row["error"] = f"cannot read {current}: {e}"
            logs = []
        rows.append(row)
        rows.extend({"kind": "segment", **_segment_ref(node, name, log).as_dict()} for log in logs)
    return rows


def get_journal_url(base: str, jid: str, segment_txid: int, in_progress: bool) -> str:
    """``/getJournal`` on a JournalNode's HTTP server ``base`` (``http://host:port``)."""
    query = urllib.parse.urlencode(
        {
            "jid": jid,
            "segmentTxId": segment_txid,
            "inProgressOk": "true" if in_progress else "false",
        }
    )
    return f"{base}/getJournal?{query}"


def _http_base(host: str, http_port: int, from_url: str | None) -> str:
    # The node may report a wildcard bind address: reach it by the RPC host name, with
    # the scheme and port it reported (IPCLoggerChannel does the same).
    scheme, port = "http", http_port
    if from_url:
        parts = urllib.parse.urlsplit(from_url)
        scheme = parts.scheme or "http"
        port = parts.port if parts.port is not None else port
    host = f"[{host}]" if ":" in host else host
    return f"{scheme}://{host}:{port}"


def list_journal_node(
    node: str,
    host: str,
    port: int,
    jid: str,
    timeout_s: float = HTTP_TIMEOUT_S,
    socket_factory: Any = None,
) -> list[dict[str, Any]]:
    """A live JournalNode's journal ``jid`` and its segments, as rows (see
    :func:`list_journal_dirs`): ``getJournalState`` and ``getEditLogManifest`` over RPC
    (``socket_factory``: mutual TLS on a secured cluster), segment locations as
    ``/getJournal`` URLs."""
    from hadoop_qjm.qjournal.client.qjournal_protocol_proxy import QJournalProtocolProxy

    row: dict[str, Any] = {"kind": "journal", "node": node, "jid": jid, "error": None}
    rows = [row]
    try:
        with QJournalProtocolProxy(
            host, port, timeout_s, connect_timeout_s=timeout_s, socket_factory=socket_factory
        ) as proxy:
            state = proxy.get_journal_state(jid)
            response = proxy.get_edit_log_manifest(jid, 0, True)
    except Exception as e:  # noqa: BLE001 - an unreachable node is a finding, not a crash
        row["error"] = f"{type(e).__name__}: {e}"
        return rows
    row["promised_epoch"] = state.last_promised_epoch
    row["writer_epoch"] = None
    committed = response.manifest.committed_txn_id
    row["committed_txid"] = None if committed == INVALID_TXID else committed
    base = _http_base(host, response.http_port or state.http_port, response.from_url)
    for log in sorted(response.manifest.logs, key=lambda log: log.start_txid):
        if log.is_in_progress:
            name = f"edits_inprogress_{log.start_txid:019d}"
        else:
            name = f"edits_{log.start_txid:019d}-{log.end_txid:019d}"
        url = get_journal_url(base, jid, log.start_txid, log.is_in_progress)
        ref = SegmentRef(node, jid, name, log.start_txid, log.end_txid, log.is_in_progress, url)
        rows.append({"kind": "segment", **ref.as_dict()})
    return rows


def expand_path(node: str, location: str) -> list[dict[str, Any]]:
    """The segments ``read_edits`` reads for one of its paths: a file or URL as is, a
    directory's segment files (in it, in its ``current/``, or in ``*/current/``)."""
    if _is_url(location):
        return [SegmentRef(node, "", location.rsplit("/", 1)[-1], 0, 0, False, location).as_dict()]
    path = Path(location)
    if not path.is_dir():
        if not path.exists():
            raise IOException(f"{location}: no such file or directory")
        name = path.name
        in_progress = EDITS_INPROGRESS_REGEX.fullmatch(name) is not None
        return [SegmentRef(node, "", name, 0, 0, in_progress, str(path)).as_dict()]
    dirs = {"": path} if match_edit_logs(path) else _journal_dirs(path, None)
    refs = []
    for jid, current in dirs.items():
        for log in sorted(match_edit_logs(current), key=lambda log: log.first_txid):
            refs.append(_segment_ref(node, jid, log).as_dict())
    return refs


# ---- reading segments ---------------------------------------------------------------------------


def _read_bytes(location: str, timeout_s: float, ssl_context: Any = None) -> bytes:
    if _is_url(location):
        from hadoop_qjm.common.http_transfer import open_url

        context = ssl_context if location.startswith("https:") else None
        with open_url(location, timeout_s, context) as response:
            buf = io.BytesIO()
            while chunk := response.read(CHUNK):
                buf.write(chunk)
            length = response.headers.get("Content-Length")
            data = buf.getvalue()
            if length is not None and int(length) != len(data):
                raise IOException(f"{location}: got {len(data)} bytes of {length}")
            return data
    with open(location, "rb") as f:
        return f.read()


def fingerprint(
    ref: dict[str, Any], timeout_s: float = HTTP_TIMEOUT_S, ssl_context: Any = None
) -> dict[str, Any]:
    """``ref`` plus the MD5 and length of its bytes, and what a frame scan finds in them.

    ``scan_first_txid``/``scan_last_txid``/``valid_length``: the ops that decode (length
    and CRC); ``error`` when the copy could not be read.
    """
    row = dict(ref)
    row.update(md5=None, length=None, scan_first_txid=None, scan_last_txid=None)
    row.update(valid_length=None, error=None)
    try:
        data = _read_bytes(ref["location"], timeout_s, ssl_context)
        row["md5"] = hashlib.md5(data).hexdigest()
        row["length"] = len(data)
        validation = scan_edit_log(data)
    except (OSError, ValueError) as e:
        row["error"] = f"{type(e).__name__}: {e}"
        return row
    if not validation.has_corrupt_header and validation.last_txid != INVALID_TXID:
        row["scan_first_txid"] = validation.first_txid
        row["scan_last_txid"] = validation.last_txid
    row["valid_length"] = validation.valid_length
    if ref["in_progress"] and ref["last_txid"] == INVALID_TXID and row["scan_last_txid"]:
        row["last_txid"] = row["scan_last_txid"]
    return row


def _op_path(op: Any) -> str | None:
    for name in ("path", "src"):
        value = getattr(op, name, None)
        if value is not None:
            return str(value)
    return None


def _op_timestamp(op: Any) -> int | None:
    for name in ("timestamp", "mtime"):
        value = getattr(op, name, None)
        if isinstance(value, int):
            return value
    return None


def op_rows(ref: dict[str, Any], timeout_s: float = HTTP_TIMEOUT_S) -> Iterator[tuple]:
    """Every op of one segment as a row of :data:`EDIT_FIELDS`.

    A finalized segment must read to its end; an in-progress one ends at its first
    unreadable op (a torn write is normal there).
    """
    data = _read_bytes(ref["location"], timeout_s)
    last = INVALID_TXID
    m = EDITS_REGEX.fullmatch(ref["segment"])
    if m is not None:
        last = int(m.group(2))
    stream = EditLogFileInputStream.from_bytes(data, last_txid=last, name=ref["segment"])
    node, segment = ref["node"], ref["segment"]
    with stream:
        while True:
            try:
                op = stream.read_op()
            except EditLogCorruptionError as e:
                if ref["in_progress"]:
                    return
                raise IOException(f"{segment} on {node}: {e}") from None
            if op is None:
                return
            code = op.opcode
            yield (
                op.txid,
                code.java_byte,
                code.name,
                _op_path(op),
                _op_timestamp(op),
                segment,
                node,
            )


def expand_paths(labelled: Sequence[tuple[str, str]]) -> list[dict[str, Any]]:
    """:func:`expand_path` for several ``(node, location)`` pairs."""
    refs: list[dict[str, Any]] = []
    for node, location in labelled:
        refs.extend(expand_path(node, location))
    return refs
