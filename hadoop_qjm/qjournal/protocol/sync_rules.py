"""What the JournalNodeSyncer fetches, as a pure function (HDFS-4025; issue 34).

The syncer asks its peers for their manifests; every finalized segment one of them
holds and this node misses (``peer_format.missing_log_segments``, Hadoop's
getMissingLogList) is fetched once, in txid order, from the first peer listing it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from hadoop_qjm.common.remote_edit_log import RemoteEditLog
from hadoop_qjm.qjournal.protocol.peer_format import missing_log_segments

__all__ = ["segments_to_fetch"]


def segments_to_fetch(
    local: Iterable[RemoteEditLog], remote: Sequence[Iterable[RemoteEditLog]]
) -> list[RemoteEditLog]:
    """The segments missing here that any of the ``remote`` manifests (in the peers'
    order) lists, one per start txid (the first peer's), sorted by start txid."""
    local = list(local)
    wanted: dict[int, RemoteEditLog] = {}
    for logs in remote:
        for log in missing_log_segments(local, logs):
            wanted.setdefault(log.start_txid, log)
    return [wanted[start] for start in sorted(wanted)]
