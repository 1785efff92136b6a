"""``hdfs-py journal-audit``: do the JournalNodes agree? (design paper §7.4.1, at scale).

The paper's verification after its loggers-in-isolation test: "for any file that is a
finalized segment, it will be bytewise identical to any other file with the same name
anywhere on the cluster … taking md5sums for the finalized segments of all
JournalNodes, then collating them together". As a Spark job:

1. **list** — one task per JournalNode lists its journals and segments: from a
   directory the executors can read (``--journal-dirs``), or from a live JournalNode
   (``--shared-edits qjournal://…/JID``: ``getJournalState`` and ``getEditLogManifest``
   over RPC);
2. **fingerprint** — one task per segment copy reads it (the file, or ``/getJournal``
   over HTTP) and computes its MD5, length and a frame scan of the txids it holds; a
   progress line (copies read, unreadable, rate, ETA) goes to stderr meanwhile, moving
   as each copy is read (:mod:`~hadoop_qjm.spark.task_progress`);
3. **collate** — per finalized segment name, the MD5s of every node: more than one is a
   *divergence*; two nodes finalizing the same first txid at different ends is one too.
   Per journal and node, the txid coverage: the range held, gaps and overlaps between
   segments, the in-progress tail, and the lag behind the most advanced node.

Output under ``--out``: ``segments``, ``coverage`` and ``divergences`` (Parquet) and
``summary.txt``, also printed. ``--ops`` adds per-opcode counts and the busiest paths
(:func:`hadoop_qjm.spark.edits.read_edits` over one copy of every segment). Exit
status 1 if any two nodes disagree, or if a node or segment could not be read (the
audit is then incomplete); else 0.
"""

from __future__ import annotations

import functools
import sys
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.spark.segments import (
    HTTP_TIMEOUT_S,
    fingerprint,
    list_journal_dirs,
    list_journal_node,
)
from hadoop_qjm.spark.session import join_path, write_text
from hadoop_qjm.spark.task_progress import ItemTracker, item_progress

__all__ = ["AuditReport", "coverage", "run", "run_audit", "summary_text"]

SEGMENT_SCHEMA = (
    "node string, jid string, segment string, first_txid bigint, last_txid bigint, "
    "in_progress boolean, location string, md5 string, length bigint, "
    "scan_first_txid bigint, scan_last_txid bigint, valid_length bigint, error string"
)
COVERAGE_SCHEMA = (
    "jid string, node string, segments int, first_txid bigint, finalized_through bigint, "
    "last_txid bigint, in_progress_first_txid bigint, in_progress_last_txid bigint, "
    "lag bigint, gaps array<string>, overlaps array<string>, promised_epoch bigint, "
    "writer_epoch bigint, committed_txid bigint, error string"
)
DIVERGENCE_SCHEMA = "jid string, kind string, key string, copies array<string>"
_SEGMENT_FIELDS = [part.split()[0] for part in SEGMENT_SCHEMA.split(", ")]
_COVERAGE_FIELDS = [part.split()[0] for part in COVERAGE_SCHEMA.split(", ")]
#: Busiest paths listed by ``--ops``.
TOP_PATHS = 10


@dataclass
class AuditReport:
    """What the audit found; ``divergences`` is what makes it fail."""

    out: str
    nodes: list[str]
    segments: int
    divergences: list[dict[str, Any]]
    coverage: list[dict[str, Any]]
    errors: list[str]
    notes: list[str] = field(default_factory=list)
    op_counts: list[tuple[str, int]] = field(default_factory=list)
    busiest_paths: list[tuple[str, int]] = field(default_factory=list)
    summary: str = ""
    summary_path: str = ""

    @property
    def ok(self) -> bool:
        return not self.divergences and not self.errors


# ---- pure collation -----------------------------------------------------------------------------


def coverage(jid: str, node: str, segments: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One node's txid coverage of one journal, from its fingerprinted segments."""
    logs = sorted(segments, key=lambda s: (s["first_txid"], s["in_progress"]))
    gaps, overlaps = [], []
    row: dict[str, Any] = {"jid": jid, "node": node, "segments": len(logs)}
    previous = None
    finalized_through = None
    in_progress = None
    for log in logs:
        last = log["last_txid"]
        if log["in_progress"]:
            in_progress = log
        elif finalized_through is None or last > finalized_through:
            finalized_through = last
        if previous is not None and previous["last_txid"] != INVALID_TXID:
            expected = previous["last_txid"] + 1
            if log["first_txid"] > expected:
                gaps.append(f"{expected}-{log['first_txid'] - 1}")
            elif log["first_txid"] < expected:
                overlaps.append(f"{previous['segment']} / {log['segment']}")
        previous = log
    known = [log["last_txid"] for log in logs if log["last_txid"] not in (None, INVALID_TXID)]
    row.update(
        first_txid=logs[0]["first_txid"] if logs else None,
        finalized_through=finalized_through,
        last_txid=max(known) if known else None,
        in_progress_first_txid=in_progress["first_txid"] if in_progress else None,
        in_progress_last_txid=(
            in_progress["last_txid"]
            if in_progress and in_progress["last_txid"] != INVALID_TXID
            else None
        ),
        gaps=gaps,
        overlaps=overlaps,
    )
    return row


def _divergences(segments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Finalized copies that differ: by bytes under one name, or by end for one start."""
    by_name: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    by_start: dict[tuple[str, int], set[str]] = defaultdict(set)
    for seg in segments:
        if seg["in_progress"] or seg["md5"] is None:
            continue
        by_name[(seg["jid"], seg["segment"])].append(seg)
        by_start[(seg["jid"], seg["first_txid"])].add(seg["segment"])
    found = []
    for (jid, name), copies in sorted(by_name.items()):
        if len({c["md5"] for c in copies}) > 1:
            described = [f"{c['node']}: md5 {c['md5']}, {c['length']} bytes" for c in copies]
            found.append({"jid": jid, "kind": "bytes differ", "key": name, "copies": described})
    for (jid, start), names in sorted(by_start.items()):
        if len(names) > 1:
            holders = [
                f"{seg['node']}: {seg['segment']}"
                for seg in segments
                if seg["jid"] == jid and seg["first_txid"] == start and not seg["in_progress"]
            ]
            found.append(
                {"jid": jid, "kind": "different ends", "key": f"txid {start}", "copies": holders}
            )
    return found


def _notes(segments: list[dict[str, Any]]) -> list[str]:
    """Finalized copies whose contents do not match their names (not a disagreement)."""
    notes = []
    for seg in segments:
        if seg["in_progress"] or seg["md5"] is None:
            continue
        where = f"{seg['node']}: {seg['jid']}/{seg['segment']}"
        held = (seg["scan_first_txid"], seg["scan_last_txid"])
        if held[0] is None:
            notes.append(f"{where} holds no readable transaction")
        elif held != (seg["first_txid"], seg["last_txid"]):
            notes.append(f"{where} holds txids {held[0]}-{held[1]}")
        elif seg["valid_length"] is not None and seg["valid_length"] != seg["length"]:
            extra = seg["length"] - seg["valid_length"]
            notes.append(f"{where} has {extra} bytes after its last op")
    return notes


# ---- the job ------------------------------------------------------------------------------------


#: ``((key, value, source), ...), conf_dir, resources`` of the driver's Configuration,
#: shipped to the executors so that they reach a secured cluster the way the command line
#: would (docs/security.md): the sources keep a ``-D`` value over ssl-client.xml, the
#: directory is where ssl-client.xml is read.
ClientConf = tuple[tuple[tuple[str, str, str], ...], str | None, tuple[str, ...]]


def client_conf_of(conf: Any) -> ClientConf:
    if conf is None:
        return (), None, ()
    properties = [
        (k, v, conf.source(k) or "programmatically")
        for k, v in conf.as_dict().items()
        if conf.source(k) != "defaults"
    ]
    return tuple(sorted(properties)), conf.conf_dir, tuple(conf.resources)


@functools.lru_cache(maxsize=4)
def _client_security(client_conf: ClientConf) -> tuple[Any, Any]:
    """``(RPC socket factory, HTTPS context)`` for ``client_conf``, made once per process:
    both None on a cluster without security."""
    properties, conf_dir, resources = client_conf
    if not properties:
        return None, None
    from hadoop_qjm.common.security import SSLFactory
    from hadoop_qjm.conf import Configuration

    conf = Configuration(load_defaults=True)
    for key, value, source in properties:
        conf.set(key, value, source)
    conf.conf_dir = conf_dir  # where a relative ssl-client.xml is looked up
    conf.resources.extend(resources)
    factory = SSLFactory(conf)
    return factory.rpc_client_socket_factory(), factory.http_client_context()


def _list_node(spec: tuple[str, str, str, str | None, float, ClientConf]) -> list[dict[str, Any]]:
    node, kind, location, jid, timeout_s, client_conf = spec
    if kind == "dir":
        return list_journal_dirs(node, location, jid)
    host, _, port = location.rpartition(":")
    socket_factory, _ = _client_security(client_conf)
    return list_journal_node(node, host, int(port), jid or "", timeout_s, socket_factory)


def _fingerprint(spec: tuple[dict[str, Any], float, ClientConf], tracker: ItemTracker) -> tuple:
    _, ssl_context = _client_security(spec[2])
    row = fingerprint(spec[0], spec[1], ssl_context)
    key = f"{row.get('node')}: {row.get('jid')}/{row.get('segment')}"
    tracker.item_done(key, failed=bool(row.get("error")))
    return tuple(row.get(name) for name in _SEGMENT_FIELDS)


def run_audit(
    spark: Any,
    nodes: Sequence[tuple[str, str, str]],
    out: str,
    *,
    jid: str | None = None,
    ops: bool = False,
    overwrite: bool = False,
    timeout_s: float = HTTP_TIMEOUT_S,
    client_conf: ClientConf = ((), None, ()),
    progress_interval_s: float = 0.0,
    progress_stream: TextIO | None = None,
) -> AuditReport:
    """Audit ``nodes`` — ``(name, "dir" | "rpc", directory | "host:port")`` — into ``out``.
    ``client_conf`` (:func:`client_conf_of`) secures the live mode's RPC and downloads.
    With ``progress_interval_s`` > 0 a progress line (segment copies fingerprinted) goes
    to ``progress_stream`` (stderr) while they are read."""
    sc = spark.sparkContext
    mode = "overwrite" if overwrite else "errorifexists"
    specs = [(name, kind, location, jid, timeout_s, client_conf) for name, kind, location in nodes]
    listed = sc.parallelize(specs, len(specs)).flatMap(_list_node).collect()
    journals = [row for row in listed if row["kind"] == "journal"]
    refs = [
        {k: v for k, v in row.items() if k != "kind"} for row in listed if row["kind"] == "segment"
    ]
    errors = [f"{row['node']}: {row['error']}" for row in journals if row.get("error")]

    stream = progress_stream if progress_stream is not None else sys.stderr
    with item_progress(
        sc,
        "journal-audit",
        len(refs),
        "segments",
        interval_s=progress_interval_s if refs else 0.0,
        stream=stream,
        failed_word="unreadable",
    ) as tracker:
        segments_df = spark.createDataFrame(
            sc.parallelize(
                [(ref, timeout_s, client_conf) for ref in refs], max(1, min(len(refs), 1000))
            ).map(functools.partial(_fingerprint, tracker=tracker))
            if refs
            else sc.emptyRDD(),
            SEGMENT_SCHEMA,
        )
        segments_df.write.mode(mode).parquet(join_path(out, "segments"))
    segments = [r.asDict() for r in spark.read.parquet(join_path(out, "segments")).collect()]
    errors += [
        f"{s['node']}: {s['jid']}/{s['segment']}: {s['error']}" for s in segments if s["error"]
    ]

    per_node: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for seg in segments:
        per_node[(seg["jid"], seg["node"])].append(seg)
    for row in journals:
        if not row.get("error"):
            per_node.setdefault((row["jid"], row["node"]), [])
    state = {(row["jid"], row["node"]): row for row in journals}
    cover = [coverage(j, n, segs) for (j, n), segs in sorted(per_node.items())]
    newest: dict[str, int] = {}
    for row in cover:
        if row["last_txid"] is not None:
            newest[row["jid"]] = max(newest.get(row["jid"], 0), row["last_txid"])
    for row in cover:
        top = newest.get(row["jid"])
        row["lag"] = None if top is None else top - (row["last_txid"] or 0)
        info = state.get((row["jid"], row["node"]), {})
        for key in ("promised_epoch", "writer_epoch", "committed_txid", "error"):
            row[key] = info.get(key)
    spark.createDataFrame(
        [tuple(row.get(name) for name in _COVERAGE_FIELDS) for row in cover], COVERAGE_SCHEMA
    ).coalesce(1).write.mode(mode).parquet(join_path(out, "coverage"))

    divergences = _divergences(segments)
    spark.createDataFrame(
        [(d["jid"], d["kind"], d["key"], d["copies"]) for d in divergences], DIVERGENCE_SCHEMA
    ).coalesce(1).write.mode(mode).parquet(join_path(out, "divergences"))

    report = AuditReport(
        out=out,
        nodes=[name for name, _, _ in nodes],
        segments=len(segments),
        divergences=divergences,
        coverage=cover,
        errors=errors,
        notes=_notes(segments),
    )
    if ops:
        _op_statistics(spark, report, segments)
    report.summary = summary_text(report)
    report.summary_path = write_text(spark, out, "summary.txt", report.summary, "segments")
    return report


def _one_copy_each(segments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One readable copy of every segment, by first txid: a finalized one if any node
    has it, else the in-progress one of the node that has written furthest (ties: the
    first node by name)."""

    def preference(seg: dict[str, Any]) -> tuple:
        return (seg["in_progress"], -(seg["last_txid"] or 0), seg["node"])

    chosen: dict[tuple[str, int], dict[str, Any]] = {}
    for seg in segments:
        if seg["error"]:
            continue
        key = (seg["jid"], seg["first_txid"])
        if key not in chosen or preference(seg) < preference(chosen[key]):
            chosen[key] = seg
    fields = ("node", "jid", "segment", "first_txid", "last_txid", "in_progress", "location")
    return [{k: seg[k] for k in fields} for _, seg in sorted(chosen.items())]


def _op_statistics(spark: Any, report: AuditReport, segments: list[dict[str, Any]]) -> None:
    from pyspark.sql import functions as F

    from hadoop_qjm.spark.edits import edits_dataframe

    edits = edits_dataframe(spark, _one_copy_each(segments)).cache()
    try:
        report.op_counts = [
            (r["op_name"], int(r["count"]))
            for r in edits.groupBy("op_name").count().orderBy(F.desc("count"), "op_name").collect()
        ]
        busiest = (
            edits.where(F.col("path").isNotNull())
            .groupBy("path")
            .count()
            .orderBy(F.desc("count"), "path")
            .limit(TOP_PATHS)
        )
        report.busiest_paths = [(r["path"], int(r["count"])) for r in busiest.collect()]
    finally:
        edits.unpersist()


def summary_text(report: AuditReport) -> str:
    """The human summary: verdict, divergences, coverage per node, problems, op counts."""
    verdict = "NODES DISAGREE" if report.divergences else "all finalized copies agree"
    if report.errors:
        verdict += "; AUDIT INCOMPLETE (unreadable nodes or segments)"
    lines = [
        f"journal audit of {len(report.nodes)} nodes, {report.segments} segment copies: {verdict}"
    ]
    if report.divergences:
        lines += ["", f"DIVERGENCES ({len(report.divergences)}):"]
        for d in report.divergences:
            lines.append(f"  {d['jid']}: {d['key']}: {d['kind']}")
            lines += [f"    {copy}" for copy in d["copies"]]
    lines += ["", "coverage (per journal and node):"]
    for row in report.coverage:
        held = (
            f"txids {row['first_txid']}-{row['last_txid']}"
            if row["last_txid"] is not None
            else "no txids"
        )
        tail = (
            f", in progress from {row['in_progress_first_txid']}"
            + (
                f" to {row['in_progress_last_txid']}"
                if row["in_progress_last_txid"] is not None
                else ""
            )
            if row["in_progress_first_txid"] is not None
            else ""
        )
        lag = f", lag {row['lag']}" if row["lag"] else ""
        lines.append(
            f"  {row['jid']} @ {row['node']}: {row['segments']} segments, {held}{tail}{lag}"
        )
        if row["gaps"]:
            lines.append(f"    gaps: {', '.join(row['gaps'])}")
        if row["overlaps"]:
            lines.append(f"    overlaps: {', '.join(row['overlaps'])}")
        epochs = [
            f"{label} {row[key]}"
            for label, key in (
                ("promised epoch", "promised_epoch"),
                ("writer epoch", "writer_epoch"),
                ("committed txid", "committed_txid"),
            )
            if row.get(key) is not None
        ]
        if epochs:
            lines.append(f"    {', '.join(epochs)}")
    for title, items in (("ERRORS", report.errors), ("NOTES", report.notes)):
        if items:
            lines += ["", f"{title}:"] + [f"  {item}" for item in items]
    if report.op_counts:
        lines += ["", "ops (one copy of every segment):"]
        lines += [f"  {name:<36} {count:>10,}" for name, count in report.op_counts]
        lines += ["", f"busiest paths (top {TOP_PATHS}):"]
        lines += [f"  {count:>10,}  {path}" for path, count in report.busiest_paths]
    lines.append("")
    lines.append(f"results: {report.out}/segments, coverage, divergences (Parquet)")
    return "\n".join(lines) + "\n"


# ---- command line -------------------------------------------------------------------------------


def _parser():
    from hadoop_qjm.common.command_line import CommandParser, finite_float
    from hadoop_qjm.spark.session import add_job_arguments

    parser = CommandParser(
        prog="hdfs-py journal-audit",
        description="Check on Spark that every finalized segment is byte-identical on every "
        "JournalNode (design paper §7.4.1); report each journal's txid coverage per node.",
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--shared-edits", metavar="qjournal://HOST:PORT;…/JID", help="live JournalNodes"
    )
    source.add_argument(
        "--journal-dirs",
        nargs="+",
        metavar="DIR",
        help="JournalNode directories (edits dir, journal dir or current/), readable by "
        "every executor",
    )
    parser.add_argument("--jid", help="only this journal (with --journal-dirs)")
    parser.add_argument("--ops", action="store_true", help="also count ops and busiest paths")
    parser.add_argument(
        "--timeout", type=finite_float, default=HTTP_TIMEOUT_S, help="seconds per RPC or download"
    )
    add_job_arguments(parser)
    return parser


def _nodes(args, parser) -> tuple[list[tuple[str, str, str]], str | None]:
    if args.journal_dirs:
        if len(set(args.journal_dirs)) != len(args.journal_dirs):
            parser.error("a directory is given twice")
        if args.jid is not None:
            from hadoop_qjm.qjournal.protocol.rules import validate_journal_id

            try:
                validate_journal_id(args.jid)
            except ValueError as e:
                parser.error(f"--jid: {e}")
        if any(not d.strip() for d in args.journal_dirs):
            parser.error("--journal-dirs: an empty directory name")
        return [(d, "dir", d) for d in args.journal_dirs], args.jid
    from hadoop_qjm.qjournal.client.qjournal_uri import parse_qjournal_uri

    if args.jid:
        parser.error("--jid goes with --journal-dirs; --shared-edits names its journal")
    try:
        uri = parse_qjournal_uri(args.shared_edits)
    except ValueError as e:
        parser.error(str(e))
    nodes = [(f"{host}:{port}", "rpc", f"{host}:{port}") for host, port in uri.addresses]
    return nodes, uri.journal_id


def run(argv: Sequence[str], conf=None) -> int:
    """Entry point of ``hdfs-py journal-audit``."""
    from hadoop_qjm.spark.session import run_job

    parser = _parser()
    args = parser.parse_args(list(argv))
    if args.timeout <= 0:
        parser.error("--timeout must be positive")
    if args.progress_interval < 0:
        parser.error("--progress-interval must be 0 (none) or positive")
    nodes, jid = _nodes(args, parser)
    report = run_job(
        "journal-audit",
        args,
        parser,
        lambda spark: run_audit(
            spark,
            nodes,
            args.out,
            jid=jid,
            ops=args.ops,
            overwrite=args.overwrite,
            timeout_s=args.timeout,
            client_conf=client_conf_of(conf),
            progress_interval_s=args.progress_interval,
        ),
    )
    if report is None:
        return 1
    sys.stdout.write(report.summary)
    return 0 if report.ok else 1
