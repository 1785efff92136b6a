"""What an operator sees of an observer (issue 37 item 7): its state, its lag behind the
active and the calls it held for state alignment, as one ``/jmx`` bean,
``Hadoop:service=NameNode,name=ObserverStatus`` (this project's; Hadoop spreads these over
FSNamesystem's ``MillisSinceLastLoadedEdits`` and its RPC metrics):

========================================  ========================================================
attribute                                 meaning
========================================  ========================================================
``State``                                 the NameNode's HA state (``observer`` on an observer)
``LastAppliedTxId``                       the last txid it applied (its state id)
``LagTxns``                               how far the highest state id a client sent (the
                                          active's txid that client had seen) is ahead of it
``MillisSinceLastLoadedEdits``            ms since its tailer last loaded edits (Hadoop's
                                          FSNamesystem name; 0 when it does not tail)
``AlignmentHeldCallsNumOps``              calls held until it had applied their state id
``AlignmentHeldCallsTotalTimeMillis``     their total time held
``AlignmentHeldCallsNow``                 calls held at this moment
========================================  ========================================================

The same on ``/prom`` (:class:`ObserverCollector`): ``namenode_observer`` (1 on an
observer), ``namenode_observer_lag_txns``, ``namenode_millis_since_last_loaded_edits``,
``namenode_alignment_held_calls`` and ``namenode_alignment_held_seconds`` (counters),
``namenode_alignment_held_calls_now``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

__all__ = ["ObserverCollector", "observer_status_bean"]

OBSERVER_STATUS_BEAN = "Hadoop:service=NameNode,name=ObserverStatus"


def _millis_since_last_loaded_edits(name_node: Any) -> int:
    services = getattr(name_node, "standby_services", None)
    tailer = getattr(services, "tailer", None)
    if tailer is None:
        return 0
    return max(int((tailer._clock() - tailer.last_load_time) * 1000), 0)


def observer_status_bean(name_node: Any) -> dict[str, object]:
    """The bean of the module docstring for ``name_node`` (any HA state)."""
    rpc_server = getattr(name_node, "rpc_server", None)
    context = getattr(rpc_server, "state_context", None)
    applied = context.last_seen_state_id if context is not None else 0
    highest = context.highest_client_state_id if context is not None else 0
    return {
        "name": OBSERVER_STATUS_BEAN,
        "modelerType": "ObserverStatus",
        "State": str(name_node.state),
        "LastAppliedTxId": applied,
        "LagTxns": max(highest - applied, 0),
        "MillisSinceLastLoadedEdits": _millis_since_last_loaded_edits(name_node),
        "AlignmentHeldCallsNumOps": context.held_calls if context is not None else 0,
        "AlignmentHeldCallsTotalTimeMillis": int(context.held_ms) if context is not None else 0,
        "AlignmentHeldCallsNow": context.holding if context is not None else 0,
    }


class ObserverCollector:
    """The bean's numbers for ``/prom`` (the Prometheus collector protocol)."""

    def __init__(self, name_node: Any) -> None:
        self.name_node = name_node

    def collect(self) -> Iterator[Any]:
        bean = observer_status_bean(self.name_node)
        observer = 1 if bean["State"] == "observer" else 0
        yield GaugeMetricFamily("namenode_observer", "1 on an observer NameNode", value=observer)
        yield GaugeMetricFamily(
            "namenode_observer_lag_txns",
            "Txns the highest client state id is ahead of the last applied txid",
            value=bean["LagTxns"],
        )
        yield GaugeMetricFamily(
            "namenode_millis_since_last_loaded_edits",
            "ms since the tailer last loaded edits (0: not tailing)",
            value=bean["MillisSinceLastLoadedEdits"],
        )
        yield CounterMetricFamily(
            "namenode_alignment_held_calls",
            "Reads held until their state id was applied",
            value=bean["AlignmentHeldCallsNumOps"],
        )
        yield CounterMetricFamily(
            "namenode_alignment_held_seconds",
            "Total time reads were held for state alignment",
            value=bean["AlignmentHeldCallsTotalTimeMillis"] / 1000,  # type: ignore[operator]
        )
        yield GaugeMetricFamily(
            "namenode_alignment_held_calls_now",
            "Reads held for state alignment now",
            value=bean["AlignmentHeldCallsNow"],
        )
