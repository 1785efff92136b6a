"""HAPeerStatus: the other NameNodes of this nameservice and their HA states, for the status page.

A peer's state is what its own ``/jmx`` said (NameNodeStatus's ``State``), fetched in the
background: reading ``/jmx`` here never waits on a peer, so a frozen or dead peer cannot
slow this NameNode's page. Each read of :meth:`HAPeerStatus.snapshot` starts a fetch for
every peer whose answer is older than ``max_age_s`` and has none in flight (at most one
thread per peer), and returns the last answers: ``unknown`` until the first one,
``unreachable`` (with the error) when the last fetch failed.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from collections.abc import Callable
from typing import Any

from hadoop_qjm.namenode.ha.ha_util import NameNodeAddress, image_transfer_base

__all__ = ["HAPeerStatus", "fetch_peer_state"]

LOG = logging.getLogger(__name__)

_STATUS_QUERY = "/jmx?qry=Hadoop:service=NameNode,name=NameNodeStatus"


def fetch_peer_state(base_url: str, ssl_context: Any, timeout_s: float) -> str:
    """The ``State`` of the NameNode whose HTTP server is ``base_url``; raises OSError or
    ValueError when it cannot be read."""
    with urllib.request.urlopen(
        base_url + _STATUS_QUERY, timeout=timeout_s, context=ssl_context
    ) as response:
        beans = json.loads(response.read(1 << 20))["beans"]
    if not beans or "State" not in beans[0]:
        raise ValueError(f"{base_url} answered no NameNodeStatus")
    return str(beans[0]["State"])


class HAPeerStatus:
    """The last known state of each of ``peers()`` (see the module docstring).

    ``peers()`` lists the other NameNodes as configured now (read at each snapshot: a
    test's NameNodes learn their peers' ports after they start). ``fetch(base_url,
    ssl_context, timeout_s)`` reads one peer's state (default :func:`fetch_peer_state`);
    ``clock`` gives wall-clock seconds.
    """

    def __init__(
        self,
        conf: Any,
        peers: Callable[[], list[NameNodeAddress]],
        *,
        fetch: Callable[[str, Any, float], str] = fetch_peer_state,
        clock: Callable[[], float] = time.time,
        max_age_s: float = 2.0,
        timeout_s: float = 2.0,
    ) -> None:
        self.conf = conf
        self.peers = peers
        self._fetch = fetch
        self._clock = clock
        self.max_age_s = max_age_s
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._bases: dict[NameNodeAddress, tuple[str, Any] | None] = {}
        self._known: dict[str, dict[str, Any]] = {}
        self._asked: dict[str, float] = {}  # nnid -> when its last fetch started
        self._in_flight: set[str] = set()

    def snapshot(self) -> list[dict[str, Any]]:
        """One entry per peer: NamenodeId, HttpAddress, State, LastContactTime (ms, 0 for
        never) and Error (why the last fetch failed, else absent)."""
        now = self._clock()
        result = []
        peers = self.peers()
        with self._lock:
            for peer in peers:
                if peer not in self._bases:
                    self._bases[peer] = image_transfer_base(self.conf, peer)
                base = self._bases[peer]
                entry = {
                    "NamenodeId": peer.nnid,
                    "HttpAddress": base[0] if base else None,
                    "State": "unknown",
                    "LastContactTime": 0,
                    **self._known.get(peer.nnid, {}),
                }
                if base is not None and self._due(peer.nnid, now):
                    self._in_flight.add(peer.nnid)
                    self._asked[peer.nnid] = now
                    threading.Thread(
                        target=self._refresh,
                        args=(peer.nnid, *base),
                        name=f"HAPeerStatus-{peer.nnid}",
                        daemon=True,
                    ).start()
                result.append(entry)
        return result

    def _due(self, nnid: str, now: float) -> bool:
        if nnid in self._in_flight:
            return False
        asked = self._asked.get(nnid)
        return asked is None or now - asked >= self.max_age_s

    def _refresh(self, nnid: str, base_url: str, ssl_context: Any) -> None:
        try:
            state = self._fetch(base_url, ssl_context, self.timeout_s)
            known = {"State": state, "LastContactTime": int(self._clock() * 1000)}
        except (OSError, ValueError, KeyError) as e:
            LOG.debug("Could not read the HA state of NameNode %s at %s: %s", nnid, base_url, e)
            with self._lock:
                last_contact = self._known.get(nnid, {}).get("LastContactTime", 0)
            known = {"State": "unreachable", "LastContactTime": last_contact, "Error": str(e)}
        with self._lock:
            self._known[nnid] = known
            self._in_flight.discard(nnid)
