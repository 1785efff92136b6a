"""``hdfs-py journalnode -bootstrap [-nonInteractive]``: bring a new or wiped JournalNode in.

Once, in the foreground, before the daemon is started on this host: read the journal id
and the JournalNodes from ``dfs.namenode.shared.edits.dir`` (this node must be one of
them), ask every peer for the journal's storage info, format the local journal with it
when a majority of the configured JournalNodes agree (the same rule as the daemon's
self-format, :func:`~hadoop_qjm.qjournal.protocol.peer_format.decide_format`), then
download every finalized segment the peers hold with the JournalNodeSyncer's download
(byte-identical, fsynced before its finalized name appears), printing a progress line,
and a summary. Exit 0; one line and exit 1 when the peers disagree, no majority
answers, no peer is configured, or the local journal is formatted with another storage
info (it is never overwritten). Run again, it fetches only what is still missing.

Segments are installed only up to the highest committed txid the agreeing peers report
(no writer talks to this node yet to tell it one); the rest comes from the daemon's
syncer once the writer's calls reach it.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import ConfigurationError, IOException
from hadoop_qjm.qjournal.client.qjournal_uri import parse_qjournal_uri
from hadoop_qjm.qjournal.protocol.peer_format import decide_format
from hadoop_qjm.qjournal.server.journal_dirs import check_journal_dir, create_journal_dir
from hadoop_qjm.qjournal.server.journal_formatter import (
    ask_peers,
    copy_membership,
    format_from_peers,
    peer_name,
)
from hadoop_qjm.qjournal.server.journal_node_syncer import JournalNodeSyncer, missing_log_segments
from hadoop_qjm.qjournal.server.journal_peers import is_self, shared_edits_uri

__all__ = ["bootstrap"]

_MB = 1024 * 1024


def _storage_key(si) -> tuple:
    return (si.namespace_id, si.cluster_id, si.ctime, si.layout_version)


def bootstrap(
    conf,
    make_node: Callable[[object], Any],
    *,
    non_interactive: bool = False,
    out=None,
    ask: Callable[[str], str] = input,
    clock: Callable[[], float] = time.monotonic,
) -> int:
    """Format this JournalNode's journal from its peers and fetch their finalized segments.

    ``make_node(conf)`` makes the (not started) JournalNode whose journal this formats:
    ``journal_node.JournalNode``, passed in by ``journalnode -bootstrap`` (so this module
    need not import the daemon's, which runs it).

    Raises ConfigurationError or IOException (one sentence) on refusal; returns 0 done,
    1 when the operator answered no to the prompt.
    """
    out = out or sys.stdout
    key = "dfs.namenode.shared.edits.dir"
    text = shared_edits_uri(conf, None)
    if not text:
        raise ConfigurationError(
            f"No peers configured: set {key} to the qjournal:// URI naming every "
            "JournalNode of the journal, this one included"
        )
    uri = parse_qjournal_uri(text)
    node = make_node(conf)  # reads and checks every JournalNode setting
    rpc = node.settings.rpc
    peers = [a for a in uri.addresses if not is_self(a[0], a[1], rpc.host, rpc.port)]
    if len(peers) == len(uri.addresses):
        raise ConfigurationError(
            f"This JournalNode ({rpc}) is not one of the JournalNodes of {key} ({text}): "
            "add it there first"
        )
    if not peers:
        raise ConfigurationError(f"No peers configured: {key} ({text}) names only this node")
    edits_dir = check_journal_dir(node.local_edits_dir)
    create_journal_dir(edits_dir)
    journal = node.get_or_create_journal(uri.journal_id)  # locks it: no daemon may run on it
    syncer = JournalNodeSyncer(node, journal, uri, peers, None)
    try:
        configured = len(uri.addresses)
        answers = ask_peers(peers, uri.journal_id, None, syncer._proxy)
        decision = decide_format(answers, configured)
        if not decision.ok:
            raise IOException(f"Not bootstrapping journal {uri.journal_id}: {decision.reason}")
        agreeing = [p for p, a in zip(peers, answers, strict=True) if a.storage_info is not None]
        if journal.is_formatted():
            mine = journal.storage.storage_info
            if _storage_key(mine) != _storage_key(decision.storage_info):
                raise IOException(
                    f"Journal {uri.journal_id} in {journal.storage} is already formatted with "
                    f"namespaceID={mine.namespace_id}, clusterID={mine.cluster_id}, but its "
                    f"peers agree on another: {decision.reason}; it is never overwritten"
                )
            print(f"Journal {uri.journal_id} is already formatted as its peers agree", file=out)
            print(copy_membership(journal, answers, configured).capitalize(), file=out)
        else:
            if not non_interactive:
                answer = ask(
                    f"Format journal {uri.journal_id} in {journal.storage} from its peers "
                    f"({decision.reason})? (Y or N) "
                )
                if answer.strip().lower() not in ("y", "yes"):
                    print("Format aborted: nothing changed.", file=out)
                    return 1
            decision = format_from_peers(journal, answers, configured, require_edits=False)
            if not decision.ok:
                raise IOException(f"Not bootstrapping journal {uri.journal_id}: {decision.reason}")
            print(f"Formatted journal {uri.journal_id}: {decision.reason}", file=out)
            record = journal.get_membership_text()
            if record is not None:
                print(f"Took the membership record: {record.splitlines()[0]}", file=out)
        return _fetch_segments(syncer, journal, agreeing, out, clock)
    finally:
        syncer.stop()
        node.stop()


def _fetch_segments(syncer, journal, peers, out, clock) -> int:
    """Download what every agreeing peer holds and this node lacks; print progress and a
    summary."""
    manifests = dict(zip(peers, syncer.manifests_of(peers), strict=True))
    for answer in manifests.values():
        if isinstance(answer, Exception):
            raise answer
    bound = max((m.manifest.committed_txn_id for m in manifests.values()), default=INVALID_TXID)
    local = list(journal.get_edit_log_manifest(0, False).logs)
    wanted = {}
    for m in manifests.values():
        for log in missing_log_segments(local, list(m.manifest.logs)):
            wanted.setdefault(log.start_txid, log)
    total = len(wanted)
    tty = getattr(out, "isatty", lambda: False)()
    done = {"segments": 0, "bytes": 0, "txns": 0}
    start = clock()

    def progress(log, nbytes: int) -> None:
        done["segments"] += 1
        done["bytes"] += nbytes
        done["txns"] += log.end_txid - log.start_txid + 1
        elapsed = max(clock() - start, 1e-9)
        line = (
            f"[{done['segments']}/{total} segments] {done['txns']} txns, "
            f"{done['bytes'] / _MB:.1f} MB, {done['bytes'] / _MB / elapsed:.1f} MB/s"
        )
        print(("\r" + line) if tty else line, end="" if tty else "\n", file=out, flush=True)

    for peer in peers:
        if done["segments"] >= total:
            break
        try:
            syncer.sync_with(peer, committed_bound=bound, on_segment=progress)
        except (OSError, IOException) as e:
            print(f"Could not sync from {peer_name(peer)}: {e}", file=out)
    if tty and done["segments"]:
        print(file=out)
    elapsed = clock() - start
    held = {log.start_txid: log for m in manifests.values() for log in m.manifest.logs}
    remaining = missing_log_segments(
        list(journal.get_edit_log_manifest(0, False).logs), list(held.values())
    )
    print(
        f"Bootstrapped journal {journal.journal_id} in {journal.storage}: fetched "
        f"{done['segments']} segments ({done['txns']} txns, {done['bytes'] / _MB:.1f} MB) "
        f"from {', '.join(peer_name(p) for p in peers)} in {elapsed:.1f} s; "
        + (
            "it holds every finalized segment its peers hold."
            if not remaining
            else f"{len(remaining)} segments still missing: the daemon's syncer fetches them."
        ),
        file=out,
    )
    return 0
