"""How ``bench qjm`` prints its results: each phase's figures with the goal beside them and
the ratios against the same run's baselines (:func:`report`; ``--secure``'s is
:mod:`~hadoop_qjm.tools.bench._qjm_secure`'s)."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.tools.bench._qjm_measure import (
    BUSY_POLL,
    FIVE_P50_GOAL,
    FROZEN_P50_GOAL,
    IDEAL_GOAL_BATCHES,
    IDEAL_RATIO_GOAL,
    PRE_ENCODED,
    PhaseResult,
)

__all__ = ["report"]


def _verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def _ideal_ratio(result: PhaseResult) -> float:
    """txns/s over the ideal's: the median of the rounds' ratios when interleaved."""
    if result.round_ratios:
        return statistics.median(result.round_ratios)
    rate = result.ideal["records_per_s"] if result.ideal else 0.0
    return result.txns_per_s / rate if rate else 0.0


def _spread(ratios: Sequence[float]) -> str:
    """`` (median of N rounds, lo-hi)`` for interleaved ratios; empty otherwise."""
    if len(ratios) < 2:
        return ""
    return f" (median of {len(ratios)} rounds, {min(ratios):.2f}-{max(ratios):.2f})"


def report(results: list[PhaseResult], batches: Sequence[int], busy_poll_us: int = 0) -> None:
    """The table of figures, each goal with its figure, then what busy polling changed."""
    print(
        f"{'phase':<16} {'batch':>5} {'txns/s':>10} {'flush p50':>10} {'p99':>9} "
        f"{'flush-bound':>11} {'writer CPU':>10} {'JNs CPU':>9} "
        f"{'ideal txns/s':>12} {'ideal p50':>10} {'ratio':>5}"
    )
    print(
        f"{'':<16} {'':>5} {'':>10} {'':>10} {'':>9} {'txns/s':>11} "
        f"{'us/batch':>10} {'us/batch':>9}"
    )
    for r in results:
        line = (
            f"{r.phase:<16} {r.batch:>5} {r.txns_per_s:>10,.0f} {r.p50_ms:>7.2f} ms "
            f"{r.p99_ms:>6.2f} ms {r.flush_bound_txns_per_s:>11,.0f} "
            f"{r.per_batch_us(r.cpu_seconds):>10,.0f} {r.per_batch_us(r.jn_cpu_seconds):>9,.0f}"
        )
        if r.ideal is not None:
            ideal_rate = r.ideal["records_per_s"]
            ratio = _ideal_ratio(r)
            line += f" {ideal_rate:>12,.0f} {r.ideal['lat_ms_p50']:>7.2f} ms {ratio:>5.2f}"
        print(line)
    print(
        "flush-bound txns/s: txns / total time in flush() — the rate without encoding the "
        "ops,\nwhich the ideal baseline does not do either (it pre-encodes its records)."
    )
    rounds = max((len(r.round_ratios) for r in results), default=0)
    if rounds:
        print(
            f"interleaved: {rounds} rounds of slices per batch size; the ideal's figures are "
            "the median of its\nslices, and each ratio the median of the rounds' ratios "
            "(a slice is compared with its\nneighbours in time)."
        )

    by_key = {(r.phase, r.batch): r for r in results}
    print()
    print("goals (printed, not asserted):")
    for batch in IDEAL_GOAL_BATCHES:
        r = by_key.get((f"3 JNs, {PRE_ENCODED}", batch))
        encoding = by_key.get(("3 JNs", batch))
        if r is None or r.ideal is None or not r.ideal["records_per_s"]:
            continue
        ratio = _ideal_ratio(r)
        line = (
            f"  batch {batch:>4}: {ratio:.2f}x the ideal's txns/s with the ops encoded ahead "
            f"of time, as the ideal's are (goal >= {IDEAL_RATIO_GOAL}) "
            f"{_verdict(ratio >= IDEAL_RATIO_GOAL)}{_spread(r.round_ratios)}"
        )
        if encoding is not None and encoding.ideal is not None:
            line += f"; making and encoding each op in the loop: {_ideal_ratio(encoding):.2f}x"
        print(line)
    for batch in batches:
        healthy = by_key.get(("3 JNs", batch))
        frozen = by_key.get(("3 JNs, 1 frozen", batch))
        five = by_key.get(("5 JNs", batch))
        if healthy is None:
            continue
        if frozen is not None:
            ratio = frozen.p50_ms / healthy.p50_ms
            inherent = healthy.rpc_both_p50_ms / healthy.rpc_quorum_p50_ms
            print(
                f"  batch {batch:>4}: p50 with one JN frozen {ratio:.2f}x healthy "
                f"(goal <= {FROZEN_P50_GOAL}) {_verdict(ratio <= FROZEN_P50_GOAL)}; "
                f"the two left must both answer: in the healthy phase the slower of their "
                f"RPCs had p50 {inherent:.2f}x the 2nd fastest of three"
            )
        if five is not None:
            ratios = five.round_ratios
            ratio = statistics.median(ratios) if ratios else five.p50_ms / healthy.p50_ms
            print(
                f"  batch {batch:>4}: p50 with 5 JNs {ratio:.2f}x with 3 "
                f"(goal <= {FIVE_P50_GOAL}) {_verdict(ratio <= FIVE_P50_GOAL)}{_spread(ratios)}"
            )
            if five.floor_ratios:
                print(
                    f"              for context, a plain-socket quorum (no Thrift, no Journal) "
                    f"on this machine: p50 with 5 servers "
                    f"{statistics.median(five.floor_ratios):.2f}x with 3"
                    f"{_spread(five.floor_ratios)}"
                )

    busy = [by_key.get((f"3 JNs, {PRE_ENCODED}, {BUSY_POLL}", batch)) for batch in batches]
    if any(r is not None and r.default_ratios for r in busy):
        print()
        print(
            f"the writer busy-polling ({keys.DFS_QJOURNAL_BUSY_POLL_KEY}={busy_poll_us}; "
            "not the default, and not a goal):"
        )
        for r in busy:
            if r is None or not r.default_ratios:
                continue
            line = (
                f"  batch {r.batch:>4}: {statistics.median(r.default_ratios):.2f}x the txns/s "
                f"of the default writer, both pre-encoded{_spread(r.default_ratios)}"
            )
            if r.ideal is not None and r.round_ratios:
                line += f"; {_ideal_ratio(r):.2f}x the ideal's{_spread(r.round_ratios)}"
            print(line)
