"""LogTester (design paper §7.4.1): writers that fence each other, and the checks afterwards.

``hdfs-py logtester --shared-edits qjournal://…/JID --local-dir DIR`` takes over as the
writer of the journal (a new epoch: fencing and recovery), then loops: K random MKDIR
ops, ``write`` + ``flush()``; once the flush succeeds (a quorum acknowledged the batch)
it appends exactly those ops — same txids, same bytes — to a local FileJournalManager
in DIR. When it is fenced by another LogTester, or loses its quorum, it exits with
status 3 and one line saying why.

``hdfs-py logtester-verify --local-dirs D… --journal-dirs J…`` checks the paper's
properties afterwards:

* no txid is in two LogTester directories (two writers never both got one acknowledged);
* every txid in a LogTester directory is in the journal with the same bytes (in a
  finalized segment, or in the in-progress copies of a majority of JournalNodes);
* every finalized segment is byte-identical on every JournalNode that has it.
"""

from __future__ import annotations

import hashlib
import random
import sys
import time
import zlib
from collections import defaultdict
from pathlib import Path

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import HadoopException, one_line_message
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.editlog.file_journal_manager import FileJournalManager, match_edit_logs
from hadoop_qjm.editlog.fs_edit_log_op import (
    EndLogSegmentOp,
    MkdirOp,
    StartLogSegmentOp,
    encode_op,
)

__all__ = ["run", "run_verify", "namespace_for", "verify"]

EXIT_FENCED = 3
LV = CURRENT_LAYOUT_VERSION


def namespace_for(journal_id: str, cluster_id: str = "logtester") -> NamespaceInfo:
    """The namespace every LogTester of ``journal_id`` uses, so they need no coordination."""
    return NamespaceInfo(
        (zlib.crc32(journal_id.encode()) & 0x7FFFFFFF) or 1, cluster_id, "BP-logtester"
    )


class _Fenced(Exception):
    """This writer lost the journal (fenced, or no quorum)."""


class LogTester:
    """One writer: the quorum journal plus a local copy of what it acknowledged."""

    def __init__(self, conf, uri: str, local_dir: Path, rng: random.Random, ns_info: NamespaceInfo):
        from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager

        self.qjm = QuorumJournalManager(conf, uri, ns_info)
        (local_dir / "current").mkdir(parents=True, exist_ok=True)
        self.local = FileJournalManager(conf, local_dir / "current")
        self.local.recover_unfinalized_segments()  # a previous run of this tester may have crashed
        self.rng = rng
        self.ns_info = ns_info
        self.out = self.local_out = None
        self.segment_txid = 0
        self.next_txid = 1
        self.acked = 0

    def take_over(self, format_if_empty: bool) -> None:
        if format_if_empty and not self.qjm.has_some_data():
            self.qjm.format(self.ns_info)
        self._guard(self.qjm.recover_unfinalized_segments)
        streams = self._guard(lambda: self.qjm.select_input_streams(1, in_progress_ok=False))
        self.next_txid = max((s.last_txid for s in streams), default=0) + 1
        for stream in streams:
            stream.close()

    def start_segment(self) -> None:
        self.segment_txid = self.next_txid
        self.out = self._guard(lambda: self.qjm.start_log_segment(self.segment_txid, LV))
        self.local_out = self.local.start_log_segment(self.segment_txid, LV)
        self._log([StartLogSegmentOp(self.next_txid)])

    def write_batch(self, count: int) -> None:
        now = int(time.time() * 1000)
        self._log(
            [
                MkdirOp.create(txid, f"/logtester/{self.rng.getrandbits(64):016x}", timestamp=now)
                for txid in range(self.next_txid, self.next_txid + count)
            ]
        )

    def end_segment(self) -> None:
        self._log([EndLogSegmentOp(self.next_txid)])
        last = self.next_txid - 1
        self.local_out.close()
        self.local.finalize_log_segment(self.segment_txid, last)
        self.local_out = None
        self.out.close()
        self._guard(lambda: self.qjm.finalize_log_segment(self.segment_txid, last))
        self.out = None

    def _log(self, ops) -> None:
        for op in ops:
            self.out.write(op)
        self.out.set_ready_to_flush()
        self._guard(self.out.flush)
        # Acknowledged by a quorum: only now does it go to the local record.
        for op in ops:
            self.local_out.write(op)
        self.local_out.set_ready_to_flush()
        self.local_out.flush()
        self.acked += len(ops)
        self.next_txid = ops[-1].txid + 1

    def _guard(self, call):
        try:
            return call()
        except (HadoopException, OSError) as e:
            raise _Fenced(_reason(e)) from e

    def close(self) -> None:
        if self.local_out is not None:
            self.local_out.close()  # what it holds was acknowledged; recovery finalizes it
        self.qjm.close()


def _reason(error: BaseException) -> str:
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    for line in lines:
        if "epoch" in line:
            return f"fenced by a newer writer: {line}"
    return f"lost the quorum: {one_line_message(error)}"


def run(argv, conf) -> int:
    """``hdfs-py logtester``."""
    from hadoop_qjm.common.command_line import CommandParser, finite_float, named_path
    from hadoop_qjm.qjournal.client.qjournal_uri import parse_qjournal_uri

    parser = CommandParser(prog="hdfs-py logtester", description=__doc__.split("\n\n")[1])
    parser.add_argument(
        "--shared-edits", required=True, metavar="URI", help="qjournal://h1:p1;h2:p2;h3:p3/JID"
    )
    parser.add_argument(
        "--local-dir", required=True, type=named_path, help="where acknowledged ops are copied"
    )
    parser.add_argument(
        "--format", action="store_true", help="format the journal first if it has no data"
    )
    parser.add_argument("--duration", type=finite_float, default=60.0, help="seconds to run (60)")
    parser.add_argument("--max-txns", type=int, default=1_000_000, help="stop after this many txns")
    parser.add_argument("--batch", type=int, default=10, help="ops per flush (10)")
    parser.add_argument("--roll-every", type=int, default=1000, help="txns per segment (1000)")
    parser.add_argument("--seed", type=int, default=None, help="seed of the random paths")
    args = parser.parse_args(argv)
    if min(args.duration, args.max_txns, args.batch, args.roll_every) <= 0:
        parser.error("--duration, --max-txns, --batch and --roll-every must be positive")
    uri = parse_qjournal_uri(args.shared_edits)
    rng = random.Random(args.seed)
    tester = LogTester(conf, args.shared_edits, args.local_dir, rng, namespace_for(uri.journal_id))
    deadline = time.monotonic() + args.duration
    try:
        tester.take_over(args.format)
        tester.start_segment()
        while tester.acked < args.max_txns and time.monotonic() < deadline:
            tester.write_batch(min(args.batch, args.max_txns - tester.acked))
            if tester.next_txid - tester.segment_txid >= args.roll_every:
                tester.end_segment()
                tester.start_segment()
        tester.end_segment()
    except _Fenced as e:  # an outcome the paper's test expects, but not a success: stderr
        print(
            f"logtester: {e} (acknowledged {tester.acked} txns, last txid {tester.next_txid - 1})",
            file=sys.stderr,
        )
        return EXIT_FENCED
    finally:
        tester.close()
    print(f"logtester: wrote {tester.acked} txns, last txid {tester.next_txid - 1}")
    return 0


# ---- verification -------------------------------------------------------------------------------
def _ops_of(path: Path) -> dict[int, bytes]:
    with EditLogFileInputStream(path) as stream:
        return {op.txid: encode_op(op) for op in iter(stream.read_op, None)}


def verify(local_dirs: list[Path], journal_dirs: list[Path]) -> list[str]:
    """The paper's §7.4.1 checks; returns the problems found (empty: all good)."""
    problems: list[str] = []
    owner: dict[int, Path] = {}
    local_ops: dict[int, bytes] = {}
    for directory in local_dirs:
        for log in match_edit_logs(Path(directory) / "current"):
            for txid, data in _ops_of(log.path).items():
                if txid in owner and owner[txid] != directory:
                    problems.append(
                        f"txid {txid} is in two LogTester dirs: {owner[txid]} and {directory}"
                    )
                owner[txid] = directory
                local_ops[txid] = data
    finalized: dict[str, dict[Path, str]] = defaultdict(dict)
    journal_ops: dict[int, bytes] = {}
    in_progress: dict[int, list[bytes]] = defaultdict(list)
    for directory in journal_dirs:
        for log in match_edit_logs(Path(directory) / "current"):
            if log.is_in_progress:
                log.scan_log()
                if log.has_corrupt_header:
                    continue  # the node died creating it: no txns (Hadoop sidelines such files)
                for txid, data in _ops_of(log.path).items():
                    in_progress[txid].append(data)
            else:
                finalized[log.name][directory] = hashlib.md5(log.path.read_bytes()).hexdigest()
                journal_ops.update(_ops_of(log.path))
    for name, digests in sorted(finalized.items()):
        if len(set(digests.values())) > 1:
            detail = ", ".join(f"{d}: {md5}" for d, md5 in digests.items())
            problems.append(f"finalized segment {name} differs between JournalNodes ({detail})")
    majority = len(journal_dirs) // 2 + 1
    for txid, data in sorted(local_ops.items()):
        if txid in journal_ops:
            if journal_ops[txid] != data:
                problems.append(f"txid {txid} of {owner[txid]} has different bytes in the journal")
        elif sum(copy == data for copy in in_progress[txid]) < majority:
            problems.append(f"txid {txid} of {owner[txid]} is not in the journal")
    return problems


def run_verify(argv, conf) -> int:
    """``hdfs-py logtester-verify``."""
    from hadoop_qjm.common.command_line import CommandParser, named_path

    parser = CommandParser(prog="hdfs-py logtester-verify", description=__doc__.split("\n\n")[2])
    parser.add_argument(
        "--local-dirs", nargs="+", required=True, type=named_path, help="the LogTesters' dirs"
    )
    parser.add_argument(
        "--journal-dirs",
        nargs="+",
        required=True,
        type=named_path,
        help="each JournalNode's <edits dir>/<jid>",
    )
    args = parser.parse_args(argv)
    for directory in [*args.local_dirs, *args.journal_dirs]:
        if not (directory / "current").is_dir():
            raise HadoopException(f"{directory} has no current/ directory")
    problems = verify(args.local_dirs, args.journal_dirs)
    for problem in problems:
        print(problem)
    txns = sum(
        len(_ops_of(log.path)) for d in args.local_dirs for log in match_edit_logs(d / "current")
    )
    print(
        f"logtester-verify: {len(args.local_dirs)} LogTester dirs ({txns} acknowledged txns), "
        f"{len(args.journal_dirs)} JournalNodes: "
        + ("OK" if not problems else f"{len(problems)} problem(s)")
    )
    return 0 if not problems else 1
