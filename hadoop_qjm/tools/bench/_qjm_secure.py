"""``bench qjm --secure``: what mutual TLS costs (docs/security.md, "What it costs").

Two 3-JournalNode clusters of processes side by side, one with security off and one with
it on (RPC and HTTPS, over a test PKI made for the run), each with its own writer in this
process. For each batch size, rounds of one slice of each, in an order that alternates
from round to round, ``seconds`` of each in all; the ratio is the median over the rounds
of the ratio within a round (TLS txns/s / plain txns/s of two neighbouring slices): on a
shared machine the disk's and the CPUs' speed drift within seconds, and runs one after
the other would put that drift into the ratio. ``rounds`` repeats it all on fresh pairs
of clusters. Printed beside the figures: each writer's and its JournalNodes' CPU per
batch, and the goals (:data:`TLS_RATIO_GOALS`), never asserted.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Sequence
from pathlib import Path

from hadoop_qjm.conf import Configuration
from hadoop_qjm.tools.bench._qjm_measure import PLAIN, TLS, PhaseResult, Writer, print_progress

__all__ = ["TLS_RATIO_GOALS", "measure_secure", "report_secure", "secure_conf"]

#: (batch, goal): TLS txns/s over plain txns/s at that batch size (issue 39).
TLS_RATIO_GOALS = ((1, 0.85), (100, 0.88))


def secure_conf(directory: Path, base: Configuration | None = None) -> Configuration:
    """``base`` (default: the defaults) with mutual TLS on RPC and HTTPS, over a test PKI
    in ``directory``."""
    from hadoop_qjm.common.security.certs import secure_conf_properties

    conf = Configuration() if base is None else base.copy()
    for key, value in secure_conf_properties(directory).items():
        conf.set(key, value)
    return conf


def measure_secure(
    base: Path,
    batches: Sequence[int],
    seconds: float,
    slice_s: float,
    max_ops: int,
    rounds: int,
    plain_conf: Configuration,
    tls_conf: Configuration,
) -> list[PhaseResult]:
    """Per batch size, the plain and the TLS result (see the module docstring); the TLS
    one's ``round_ratios`` hold each round's TLS/plain ratio. Every process is stopped on
    return."""
    slices = max(1, round(seconds / slice_s))
    slice_s = seconds / slices
    cap = max(1, max_ops // (slices * rounds))  # --max-ops is per phase
    results = {(mode, b): PhaseResult(mode, b) for b in batches for mode in (PLAIN, TLS)}
    for i in range(rounds):
        with contextlib.ExitStack() as stack:
            writers = {
                PLAIN: Writer(stack, base / f"plain-{i}", 3, plain_conf),
                TLS: Writer(stack, base / f"tls-{i}", 3, tls_conf),
            }
            for batch in batches:
                for r in range(slices):
                    order = (PLAIN, TLS) if (r + i) % 2 == 0 else (TLS, PLAIN)
                    part = {
                        mode: writers[mode].measure(mode, batch, slice_s, cap) for mode in order
                    }
                    for mode in order:
                        results[mode, batch].merge(part[mode])
                    if part[PLAIN].txns_per_s:
                        ratio = part[TLS].txns_per_s / part[PLAIN].txns_per_s
                        results[TLS, batch].round_ratios.append(ratio)
                if i == rounds - 1:
                    for mode in (PLAIN, TLS):
                        print_progress(results[mode, batch])
    return list(results.values())


def _ratio(tls: PhaseResult, plain: PhaseResult) -> float:
    if tls.round_ratios:
        return statistics.median(tls.round_ratios)
    return tls.txns_per_s / plain.txns_per_s if plain.txns_per_s else 0.0


def _cpu(plain: PhaseResult, tls: PhaseResult, seconds: str) -> str:
    return (
        f"{plain.per_batch_us(getattr(plain, seconds)):,.0f} → "
        f"{tls.per_batch_us(getattr(tls, seconds)):,.0f}"
    )


def report_secure(results: list[PhaseResult], batches: Sequence[int]) -> None:
    """Per batch: both figures, the ratio with its spread, p50s and CPU per batch; then
    each goal of :data:`TLS_RATIO_GOALS` with its figure."""
    by_key = {(r.phase, r.batch): r for r in results}
    print(
        f"{'batch':>5} {'plain txns/s':>12} {'TLS txns/s':>11} {'ratio':>6} "
        f"{'plain p50':>10} {'TLS p50':>9} {'writer CPU us/batch':>20} {'JNs CPU us/batch':>17}"
    )
    ratios: dict[int, float] = {}
    for batch in batches:
        plain, tls = by_key.get((PLAIN, batch)), by_key.get((TLS, batch))
        if plain is None or tls is None or not plain.batches or not tls.batches:
            continue
        ratios[batch] = ratio = _ratio(tls, plain)
        print(
            f"{batch:>5} {plain.txns_per_s:>12,.0f} {tls.txns_per_s:>11,.0f} {ratio:>6.2f} "
            f"{plain.p50_ms:>7.2f} ms {tls.p50_ms:>6.2f} ms "
            f"{_cpu(plain, tls, 'cpu_seconds'):>20} {_cpu(plain, tls, 'jn_cpu_seconds'):>17}"
        )
        if len(tls.round_ratios) > 1:
            print(
                f"      ratio: the median of {len(tls.round_ratios)} rounds, "
                f"{min(tls.round_ratios):.2f}-{max(tls.round_ratios):.2f}"
            )
    print(
        "txns/s over all slices; each ratio is the median of the rounds' ratios (a TLS slice\n"
        "against its plain neighbour in time); CPU: plain → TLS, per batch (JNs: all three)"
    )
    print()
    print("goals (printed, not asserted):")
    for batch, goal in TLS_RATIO_GOALS:
        ratio = ratios.get(batch)
        if ratio is None:
            print(f"  batch {batch:>3}: not measured (add it to --batches)")
            continue
        plain, tls = by_key[PLAIN, batch], by_key[TLS, batch]
        print(
            f"  batch {batch:>3}: TLS gives {ratio:.2f}x the plain txns/s "
            f"(goal >= {goal}) {'met' if ratio >= goal else 'MISSED'}; CPU per batch, "
            f"plain → TLS: the JournalNodes' {_cpu(plain, tls, 'jn_cpu_seconds')} us, "
            f"the writer's {_cpu(plain, tls, 'cpu_seconds')} us"
        )
