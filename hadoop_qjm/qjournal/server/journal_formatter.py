"""Format an unformatted journal from its peers (HDFS-16690), never a formatted one.

The I/O around :func:`~hadoop_qjm.qjournal.protocol.peer_format.decide_format`: ask
every peer for the journal's storage info (InterQJournalProtocol ``getStorageInfo``) and
whether it holds edits (``getEditLogManifestFromJournal``) and its membership record
(``getJournalState``), decide, and format through
``Journal.format(force=False)``, which takes the journal's lock and refuses a ``current/``
that is not empty — so a journal a NameNode formatted a moment earlier is never
overwritten; then take the membership record a majority of the peers agree on
(:func:`copy_membership`), never replacing a newer local one. Used by the JournalNodeSyncer (``dfs.journalnode.enable.sync.format``) and
by ``hdfs-py journalnode -bootstrap``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from hadoop_qjm.common.exceptions import HadoopException
from hadoop_qjm.common.storage_info import NamespaceInfo, StorageInfo
from hadoop_qjm.qjournal.protocol.exceptions import JournalNotFormattedException
from hadoop_qjm.qjournal.protocol.peer_format import (
    FormatDecision,
    PeerAnswer,
    decide_format,
    decide_membership,
)

__all__ = ["ask_peers", "copy_membership", "each_peer", "format_from_peers", "peer_name"]

LOG = logging.getLogger(__name__)

Peer = tuple[str, int]


def peer_name(peer: Peer) -> str:
    host, port = peer
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


T = TypeVar("T")


def each_peer(peers: Sequence[Peer], ask: Callable[[Peer], T], what: str) -> list[T]:
    """``ask(peer)`` of every peer, in ``peers``' order, all of them at once: the answers
    take the slowest peer's round trips, not their sum (a peer that is down costs its
    timeout once, not before each one asked after it). Each peer is asked by one thread
    (its proxy is used by no other meanwhile); an exception ``ask`` raises is raised once
    every peer answered (the first peer's, in order)."""
    if len(peers) <= 1:
        return [ask(peer) for peer in peers]
    with ThreadPoolExecutor(len(peers), thread_name_prefix=what) as pool:
        return list(pool.map(ask, peers))


def ask_peers(
    peers: Sequence[Peer], jid: str, name_service_id: str | None, proxy_for: Callable
) -> list[PeerAnswer]:
    """Each peer's answer: its storage info of ``jid`` and whether it holds edits, or why not.

    ``proxy_for(peer)`` gives a QJournalProtocolProxy (the syncer's cached ones). A peer
    that fails is an answer with an error, never an exception. The peers are asked at
    once (:func:`each_peer`), each one's three calls in turn.
    """

    def ask(peer: Peer) -> PeerAnswer:
        name = peer_name(peer)
        try:
            proxy = proxy_for(peer)
            si = proxy.get_storage_info(jid, name_service_id)
            if si.namespace_id == 0:
                return PeerAnswer(name, error="it reports namespaceID 0")
            manifest = proxy.get_edit_log_manifest_from_journal(jid, 0, True, name_service_id)
            return PeerAnswer(
                name,
                si,
                holds_edits=bool(manifest.manifest.logs),
                membership=_membership_of(proxy, name, jid, name_service_id),
            )
        except JournalNotFormattedException:
            return PeerAnswer(name, error="its journal is not formatted")
        except (OSError, HadoopException) as e:
            return PeerAnswer(name, error=f"{type(e).__name__}: {e}")

    return each_peer(peers, ask, f"ask-peers-{jid}")


def _membership_of(proxy, name: str, jid: str, name_service_id: str | None) -> str | None:  # noqa: ANN001
    """The peer's membership record; None when it holds none or does not say (a peer that
    refuses getJournalState — in a secure cluster it may allow only the NameNodes — just
    does not count towards a record's majority)."""
    try:
        return proxy.get_journal_state(jid, name_service_id).membership
    except (OSError, HadoopException) as e:
        LOG.debug("No membership record from %s: %s", name, e)
        return None


def copy_membership(journal, answers: Sequence[PeerAnswer], configured: int) -> str:  # noqa: ANN001
    """Give the formatted ``journal`` the membership record a majority of its peers agree
    on (``decide_membership``), unless it holds that one or a newer one; says what it did."""
    decision = decide_membership(answers, configured)
    if decision.record is None:
        return f"membership record not copied: {decision.reason}"
    try:
        done = journal.adopt_membership(decision.record)
    except (OSError, HadoopException) as e:
        return f"membership record not copied: {e}"
    LOG.info("Journal %s: %s (%s)", journal.journal_id, done, decision.reason)
    return f"{done} ({decision.reason})"


def namespace_info_of(si: StorageInfo) -> NamespaceInfo:
    """A NamespaceInfo carrying exactly what a JournalNode's VERSION holds."""
    return NamespaceInfo(si.namespace_id, si.cluster_id, "", si.ctime, si.layout_version)


def format_from_peers(
    journal, answers: Sequence[PeerAnswer], configured: int, *, require_edits: bool
) -> FormatDecision:
    """Decide from ``answers`` and, if the peers agree, format ``journal`` with their
    storage info. A refusal changes nothing on disk; neither does a journal found
    formatted (or with a non-empty ``current/``) by the time the lock is held."""
    decision = decide_format(answers, configured, require_edits=require_edits)
    if not decision.ok:
        return decision
    try:
        journal.format(namespace_info_of(decision.storage_info), force=False)
    except (OSError, HadoopException) as e:
        return FormatDecision(None, f"not formatting {journal.storage}: {e}")
    LOG.info("Formatted journal %s from its peers: %s", journal.journal_id, decision.reason)
    copy_membership(journal, answers, configured)
    return decision
