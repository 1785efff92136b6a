"""``hdfs-py quickstart --journal-only``: 3 JournalNodes, two writers (a failover) and a reader.

1. Three JournalNode processes start on 127.0.0.1 (ports chosen by the OS).
2. Writer A formats the journal, takes the writer role (epoch 1) and writes edits in
   batches through the quorum, rolling segments; one JournalNode is stopped and restarted
   while it writes, to show that a quorum of two keeps the journal available. Then it
   stops without finalizing its last segment, as a crashed NameNode would.
3. Writer B takes over: a new epoch fences writer A, Paxos recovery finalizes the
   segment A left open at every txid a quorum acknowledged, and B writes on from there.
   Writer A's next write is refused.
4. A reader reads the whole journal back and checks that every acknowledged edit is
   there, with its contents, and that each finalized segment is byte-identical on every
   JournalNode that has it.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import time
from pathlib import Path

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import HadoopException, IOException
from hadoop_qjm.common.storage_info import NamespaceInfo
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.fs_edit_log_op import (
    EndLogSegmentOp,
    MkdirOp,
    StartLogSegmentOp,
    encode_op,
)

__all__ = ["run"]

JOURNAL_ID = "mycluster"
LV = CURRENT_LAYOUT_VERSION


class _Writer:
    """A writer (as a NameNode would be): segments of MKDIR ops through a QJM."""

    def __init__(
        self, name: str, conf: Configuration, uri: str, ns_info: NamespaceInfo, acked: dict
    ):
        from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager

        self.name = name
        self.qjm = QuorumJournalManager(conf, uri, ns_info)
        self.acked = acked  # txid -> encoded op, for every txid a quorum acknowledged
        self.stream = None
        self.segment_txid = 0
        self.next_txid = 1

    def take_over(self) -> int:
        """New epoch + recovery; returns the last txid in the journal."""
        self.qjm.recover_unfinalized_segments()
        streams = self.qjm.select_input_streams(1, in_progress_ok=False)
        last = max((s.last_txid for s in streams), default=0)
        for s in streams:
            s.close()
        self.next_txid = last + 1
        return last

    def start_segment(self) -> None:
        self.segment_txid = self.next_txid
        self.stream = self.qjm.start_log_segment(self.segment_txid, LV)
        self._log([StartLogSegmentOp(self.next_txid)])

    def write_batch(self, count: int) -> None:
        now = int(time.time() * 1000)
        ops = [
            MkdirOp.create(txid, f"/quickstart/{self.name}/dir-{txid}", timestamp=now)
            for txid in range(self.next_txid, self.next_txid + count)
        ]
        self._log(ops)

    def end_segment(self) -> None:
        self._log([EndLogSegmentOp(self.next_txid)])
        self.stream.close()
        self.qjm.finalize_log_segment(self.segment_txid, self.next_txid - 1)
        self.stream = None

    def _log(self, ops) -> None:
        for op in ops:
            self.stream.write(op)
        self.stream.set_ready_to_flush()
        self.stream.flush()  # returns once a quorum of JournalNodes has fsynced the batch
        for op in ops:
            self.acked[op.txid] = encode_op(op)
        self.next_txid = ops[-1].txid + 1

    def close(self) -> None:
        self.qjm.close()


def _say(message: str) -> None:
    print(message, flush=True)


def _check_finalized_identical(cluster, n: int) -> int:
    """Each finalized segment is byte-identical on every JournalNode that has it."""
    by_name: dict[str, list[bytes]] = {}
    for i in range(n):
        current = cluster.current_dir(i, JOURNAL_ID)
        for path in current.glob("edits_*-*"):
            if path.name.count(".") == 0:
                by_name.setdefault(path.name, []).append(path.read_bytes())
    for name, copies in by_name.items():
        if len(set(copies)) != 1:
            raise IOException(f"finalized segment {name} differs between JournalNodes")
    return len(by_name)


def run(argv, conf) -> int:
    from hadoop_qjm.common.command_line import CommandParser

    parser = CommandParser(
        prog="hdfs-py quickstart --journal-only",
        description=__doc__.split("\n\n")[0]
        + ". Starts three JournalNode processes on 127.0.0.1, runs two writers and a reader, "
        "checks that no acknowledged edit was lost, and stops the JournalNodes.",
    )
    parser.add_argument("--txns", type=int, default=2000, help="edits per writer (2000)")
    parser.add_argument("--batch", type=int, default=50, help="edits per flush (50)")
    parser.add_argument("--segment", type=int, default=500, help="edits per segment (500)")
    parser.add_argument(
        "--dir", default=None, help="keep the cluster's data here (default: a temp dir, removed)"
    )
    args = parser.parse_args(argv)
    if min(args.txns, args.batch, args.segment) <= 0:
        parser.error("--txns, --batch and --segment must be positive")

    from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster

    if not os.environ.get("HADOOP_ROOT_LOGGER"):
        # The job narrates itself; the clients' expected warnings (a stopped JournalNode, the
        # fenced writer) would only repeat it. HADOOP_ROOT_LOGGER=WARN,console shows them.
        logging.getLogger().setLevel(logging.ERROR)
    base = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="hdfs-py-quickstart-"))
    conf = conf.copy() if conf is not None else Configuration()
    ns_info = NamespaceInfo(
        namespace_id=int(time.time()) & 0x7FFFFFFF,
        cluster_id="CID-quickstart",
        block_pool_id="BP-quickstart",
    )
    acked: dict[int, bytes] = {}
    started = time.monotonic()
    try:
        with MiniJournalCluster(3, base_dir=base / "cluster", conf=conf, processes=True) as cluster:
            uri = cluster.quorum_journal_uri(JOURNAL_ID)
            _say(f"Started 3 JournalNode processes: {uri}")
            for i in range(3):
                _say(
                    f"  JournalNode {i}: pid {cluster.nodes[i].pid}, http://127.0.0.1:{cluster.http_ports[i]}/"
                )

            writer_a = _Writer("writer-a", conf, uri, ns_info, acked)
            writer_a.qjm.format(ns_info)
            last = writer_a.take_over()
            _say(
                f"Writer A: formatted the journal and took over as writer (epoch 1, last txid {last})"
            )
            written = 0
            writer_a.start_segment()
            stopped = False
            while written < args.txns:
                count = min(args.batch, args.txns - written)
                writer_a.write_batch(count)
                written += count
                if not stopped and written >= args.txns // 3:
                    cluster.stop_journal_node(2)
                    stopped = True
                    _say(
                        f"  stopped JournalNode 2 at txid {writer_a.next_txid - 1}: writing on with 2 of 3"
                    )
                elif stopped and cluster.nodes[2] is None and written >= 2 * args.txns // 3:
                    cluster.restart_journal_node(2)
                    _say(
                        f"  restarted JournalNode 2 at txid {writer_a.next_txid - 1} (it rejoins at the next segment)"
                    )
                if (
                    written < args.txns
                    and (writer_a.next_txid - writer_a.segment_txid) >= args.segment
                ):
                    writer_a.end_segment()
                    writer_a.start_segment()
            last_a = writer_a.next_txid - 1
            _say(
                f"Writer A: {len(acked)} edits acknowledged (txids 1..{last_a}); it now stops "
                f"without finalizing segment {writer_a.segment_txid}, as a crashed NameNode would"
            )

            writer_b = _Writer("writer-b", conf, uri, ns_info, acked)
            last = writer_b.take_over()
            epoch = writer_b.qjm.loggers.epoch
            if last < last_a:
                raise IOException(
                    f"recovery lost acknowledged edits: recovered to {last}, acknowledged {last_a}"
                )
            _say(
                f"Writer B: took over with epoch {epoch}; recovery finalized segment "
                f"{writer_a.segment_txid}-{last}, every acknowledged txid kept"
            )
            try:
                writer_a.write_batch(1)
                raise IOException(
                    "writer A could still write after the failover: it was not fenced"
                )
            except (HadoopException, OSError) as e:
                lines = str(e).strip().splitlines()
                reason = next((line for line in lines if "epoch" in line), lines[0]).strip()
                _say(f"Writer A: its next write is refused (fenced): {reason[:200]}")
            writer_a.close()
            before_b = len(acked)
            writer_b.start_segment()
            written = 0
            while written < args.txns:
                count = min(args.batch, args.txns - written)
                writer_b.write_batch(count)
                written += count
                if (
                    written < args.txns
                    and (writer_b.next_txid - writer_b.segment_txid) >= args.segment
                ):
                    writer_b.end_segment()
                    writer_b.start_segment()
            writer_b.end_segment()
            _say(
                f"Writer B: {len(acked) - before_b} more edits acknowledged, up to txid {writer_b.next_txid - 1}"
            )
            writer_b.close()

            from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager

            with QuorumJournalManager(conf, uri, ns_info) as reader:
                streams = reader.select_input_streams(1, in_progress_ok=False)
                seen: dict[int, bytes] = {}
                try:
                    for stream in streams:
                        while (op := stream.read_op()) is not None:
                            seen[op.txid] = encode_op(op)
                finally:
                    for stream in streams:
                        stream.close()
            missing = [t for t in acked if t not in seen]
            changed = [t for t in acked if t in seen and seen[t] != acked[t]]
            if missing or changed:
                raise IOException(
                    f"reader: {len(missing)} acknowledged edits missing (first {missing[:5]}), "
                    f"{len(changed)} with different contents (first {changed[:5]})"
                )
            segments = _check_finalized_identical(cluster, 3)
            _say(
                f"Reader: read {len(seen)} edits in {len(streams)} segments; all {len(acked)} "
                f"acknowledged edits present with their contents; {segments} finalized segments "
                "byte-identical on every JournalNode that has them"
            )
            _say("Stopping the JournalNodes (SIGTERM)")
        _say(f"quickstart: OK in {time.monotonic() - started:.1f}s")
        return 0
    finally:
        if not args.dir:
            shutil.rmtree(base, ignore_errors=True)
