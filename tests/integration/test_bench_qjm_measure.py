"""``bench qjm``'s measuring loop: both ways of logging write the same, correct segment."""

from __future__ import annotations

import pytest

from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.edit_log_file_input_stream import EditLogFileInputStream
from hadoop_qjm.editlog.fs_edit_log_op import encode_op
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO
from hadoop_qjm.tools.bench import _qjm_measure as qjm_measure

pytestmark = pytest.mark.timeout(60)


def _finalized_copies(cluster: MiniJournalCluster, first: int, last: int) -> list[list[bytes]]:
    """The ops of each node's finalized segment ``first``-``last`` (nodes without one left
    out: finalize returns once a quorum has it, and the last node may be behind)."""
    copies = []
    for i in range(3):
        path = cluster.current_dir(i, qjm_measure.JID) / f"edits_{first:019d}-{last:019d}"
        if path.exists():
            with EditLogFileInputStream(path) as stream:
                copies.append([encode_op(op) for op in iter(stream.read_op, None)])
    return copies


@pytest.mark.parametrize("pre_encoded", [False, True])
def test_measure_logs_every_op_once_in_order(tmp_path, monkeypatch, pre_encoded):
    # Small chunks, so that the pre-encoded loop encodes between timed runs too.
    monkeypatch.setattr(qjm_measure, "PRE_ENCODED_CHUNK_BATCHES", 3)
    with MiniJournalCluster(3, base_dir=tmp_path) as cluster:
        qjm = QuorumJournalManager(
            Configuration(), cluster.quorum_journal_uri(qjm_measure.JID), FAKE_NSINFO
        )
        try:
            qjm.format(FAKE_NSINFO)
            qjm.recover_unfinalized_segments()
            result, next_txid = qjm_measure.measure(
                qjm, "3 JNs", 1, 4, 30.0, 40, pre_encoded=pre_encoded
            )
        finally:
            qjm.close()
        assert result.batches == 10  # --max-ops 40 at 4 per batch
        written = next_txid - 1
        assert written == (qjm_measure.WARMUP_BATCHES + result.batches) * 4
        assert len(result.latencies) == result.batches
        assert result.seconds > 0 and result.cpu_seconds >= 0
        copies = _finalized_copies(cluster, 1, written)
        assert len(copies) >= 2  # a quorum finalized it
        expected = [encode_op(qjm_measure.mkdir_op(t)) for t in range(1, written + 1)]
        assert all(ops == expected for ops in copies)
