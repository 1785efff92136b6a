"""What a fault-campaign task runs on an executor, and the grep of its log. No pyspark here.

:func:`run_one_seed` runs ``run_seed`` for one seed and returns the row the campaign
stores: the seed's figures, the replay command, and the task's whole log — the
harness's trace followed by every WARNING-or-worse record of the ``hadoop_qjm`` loggers,
tracebacks included (what Hadoop's streaming job wrote to HDFS for each task).

:func:`unexpected_messages` is the second job of the design paper's §7.3 harness:
"the full test output is grepped for the word AssertionError in case there are any
unexpected conditions which are papered over by the quorum semantics". We grep for
any ``AssertionError``, for the Python errors that mean a programming mistake (the
NullPointerException of the blog post's grep: ``AttributeError``, ``TypeError``,
``NameError``, …), and for any traceback whose exception is not an injected fault.

Everything here is a plain function of its arguments, so Spark can run it anywhere:
nothing depends on the driver's files or state.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = [
    "BUG_ERRORS",
    "LOG_SEPARATOR",
    "TASK_FIELDS",
    "run_one_seed",
    "trace_digest",
    "unexpected_messages",
]

#: The row :func:`run_one_seed` returns, in order (name, Spark SQL type).
TASK_FIELDS: tuple[tuple[str, str], ...] = (
    ("seed", "bigint"),
    ("passed", "boolean"),
    ("writers", "int"),
    ("txns_acknowledged", "bigint"),
    ("recoveries", "int"),
    ("faults_injected", "bigint"),
    ("duration_s", "double"),
    ("first_failure", "string"),
    ("log_excerpt", "string"),
    ("trace_digest", "string"),
    ("replay_command", "string"),
    ("iterations", "int"),
    ("transport", "string"),
    ("planted_bug", "string"),
    ("executor", "string"),
    ("log", "string"),
)

#: Between the trace and the library's log records in a task's log.
LOG_SEPARATOR = "---- hadoop_qjm log records (WARNING and above) ----"

#: Python's equivalents of the NullPointerException the blog post's grep looked for:
#: errors only a programming mistake raises.
BUG_ERRORS = (
    "AttributeError",
    "TypeError",
    "NameError",
    "UnboundLocalError",
    "ZeroDivisionError",
    "RecursionError",
)

_ASSERTION = re.compile(r"AssertionError")
# A remote error's message may carry the server's traceback, whose frames name files
# by absolute path: wherever the package is (a checkout, a zip shipped to an executor).
_FRAME_PATH = re.compile(r'File "[^"]*[/\\]([^/\\"]+)"')
_BUG = re.compile(r"\b(?:" + "|".join(BUG_ERRORS) + r")\b")
_TRACEBACK = "Traceback (most recent call last):"
_INJECTED = "Injected"
_MAX_MESSAGES = 20
# The harness's injected bit rot ("writer 3: bit flip in jn1 edits_…5-…9 at txid 7") and a
# reader's checksum error on a copy of that segment from that node, which it reads around.
_BIT_FLIP = re.compile(r"bit flip in jn(\d+) edits_0*(\d+)-\d+ at txid")
_CHECKSUM_ERROR = re.compile(r"ChecksumException: \S*jn(\d+)\S*segmentTxId=(\d+)")


def unexpected_messages(log: str | None) -> list[str]:
    """The lines of ``log`` a person must look at, in order, at most 20.

    * any line mentioning ``AssertionError`` (also a node's, hidden by the quorum);
    * any line naming one of :data:`BUG_ERRORS`;
    * the exception line of any traceback whose exception is not injected (an
      injected fault's message contains "Injected"; a checksum error reading a segment
      copy the harness flipped a bit in is injected too).
    """
    if not log:
        return []
    found: list[str] = []
    lines = log.splitlines()
    flipped = {(m[1], int(m[2])) for m in map(_BIT_FLIP.search, lines) if m}
    in_traceback = False
    for line in lines:
        text = line.strip()
        if in_traceback:
            # The frames are indented; the first unindented line is the exception.
            if line.startswith((" ", "\t")) or not text:
                continue
            in_traceback = False
            checksum = _CHECKSUM_ERROR.search(text)
            if checksum and (checksum[1], int(checksum[2])) in flipped:
                continue
            if _INJECTED not in text and not _ASSERTION.search(text) and not _BUG.search(text):
                found.append(f"traceback: {text}")
        if text.startswith(_TRACEBACK):
            in_traceback = True
            continue
        if _ASSERTION.search(text) or _BUG.search(text):
            found.append(text)
        if len(found) >= _MAX_MESSAGES:
            break
    return [message[:1000] for message in found[:_MAX_MESSAGES]]


def trace_digest(trace: list[str]) -> str:
    """SHA-256 of a seed's trace, with the paths of traceback frames cut to file names.

    Two runs of one seed give the same digest wherever the package is installed: in a
    checkout, or zipped and shipped to an executor (the harness's own ``trace_digest``
    includes the paths).
    """
    text = "\n".join(trace)
    return hashlib.sha256(_FRAME_PATH.sub(r'File "\1"', text).encode()).hexdigest()


class _ListHandler(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.lines = lines
        self.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.lines.append(self.format(record))
        except Exception:  # noqa: BLE001 - a log record must never fail the seed
            self.lines.append(f"{record.levelname} {record.name}: <unformattable record>")


def _scratch_dir(seed: int) -> Path:
    # tmpfs makes the Journals' fsyncs free (the harness does the same by default).
    shm = Path("/dev/shm")
    parent = shm if shm.is_dir() and os.access(shm, os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix=f"qjm-campaign-{seed}-", dir=parent))


def run_one_seed(
    seed: int,
    iterations: int,
    transport: str = "local",
    planted_bug: str | None = None,
    membership: bool = False,
    *,
    switch_probability: float | None = None,
    pipeline_depth: int = 1,
) -> dict[str, Any]:
    """Run one seed of the randomized test and return its row (:data:`TASK_FIELDS`);
    ``membership``: the writers also change the JournalNode set, a writer beginning a
    change with ``switch_probability`` (None: the harness's default); ``pipeline_depth``:
    batches each writer keeps in flight (see ``run_seed``).

    Never raises for a seed that fails: an error outside ``run_seed``'s own checks is a
    failed row too, so one bad seed cannot fail the Spark task and hide the others.
    """
    from hadoop_qjm.testing.randomized import replay_command, run_seed

    trace: list[str] = []
    records: list[str] = []
    handler = _ListHandler(records)
    logger = logging.getLogger("hadoop_qjm")
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.WARNING)
    logger.propagate = False  # the executor's stderr gets none of the expected warnings
    scratch = _scratch_dir(seed)
    started = time.perf_counter()
    result = None
    error: str | None = None
    try:
        result = run_seed(
            seed,
            iterations=iterations,
            transport=transport,
            base_dir=scratch,
            planted_bug=planted_bug,
            trace=trace,
            quiet=False,
            membership=membership,
            switch_probability=switch_probability,
            pipeline_depth=pipeline_depth,
        )
    except Exception as e:  # noqa: BLE001 - reported in the row
        import traceback

        error = f"unexpected {type(e).__name__}: {e}"
        records.extend(traceback.format_exc().rstrip().splitlines())
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]
        shutil.rmtree(scratch, ignore_errors=True)
    scratch_text = str(scratch)
    library_log = "\n".join(line.replace(scratch_text, "<dir>") for line in records)
    log = "\n".join(trace)
    if library_log:
        log += f"\n{LOG_SEPARATOR}\n{library_log}"
    row: dict[str, Any] = {
        "seed": seed,
        "iterations": iterations,
        "transport": transport,
        "planted_bug": planted_bug,
        "executor": f"{socket.gethostname()}:{os.getpid()}",
        "log": log,
        "replay_command": replay_command(
            seed, iterations, transport, planted_bug, membership, switch_probability, pipeline_depth
        ),
    }
    if result is None:
        row.update(
            passed=False,
            writers=0,
            txns_acknowledged=0,
            recoveries=0,
            faults_injected=0,
            duration_s=time.perf_counter() - started,
            first_failure=error,
            log_excerpt="\n".join((trace + records)[-80:]),
            trace_digest=trace_digest(trace),
        )
        return row
    row.update(
        passed=bool(result.passed),
        writers=int(result.writers),
        txns_acknowledged=int(result.txns_acknowledged),
        recoveries=int(result.recoveries),
        faults_injected=int(result.faults_injected),
        duration_s=float(result.duration_s),
        first_failure=result.first_failure,
        log_excerpt=result.log_excerpt,
        trace_digest=trace_digest(trace),
    )
    own = getattr(result, "replay_command", None)
    if isinstance(own, str) and own:
        row["replay_command"] = own
    return row
