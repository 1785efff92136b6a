"""Journal.journal_in_order_group is journal() call after call, with one fsync.

A sequence of journal() calls (each in order, or off in one way, drawn from the state the
calls before it leave) is given to one journal one call at a time through ``journal()``,
and to another as the JournalNode serves calls that arrived together: the group path
takes what it can, a call it declines is served alone by ``journal()``, and the rest go
to the group path again. Both must answer the same, end in the same state and hold the
same bytes; and the group path must fsync at most once per group.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.protocol.journal_call import JournalCall
from hadoop_qjm.qjournal.server.journal import Journal
from hadoop_qjm.testing.qjm_test_util import JID, create_txn_data
from tests.unit.test_journal_in_order import _answer, _files, _setup, _state, calls

pytestmark = pytest.mark.timeout(120)


def _journal_call(seqid: int, req, segment: int, first: int, num: int, records) -> JournalCall:
    committed = None if req.committed_txid == INVALID_TXID else req.committed_txid
    return JournalCall(
        seqid, JID, req.epoch, req.ipc_serial_number, committed, None, first, num, records,
        segment, None,
    )  # fmt: skip


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_the_group_path_answers_and_writes_as_journal_does_call_after_call(data):
    conf = Configuration()
    with tempfile.TemporaryDirectory() as tmp:
        grouped = Journal(conf, Path(tmp) / "grouped" / JID, JID)
        single = Journal(conf, Path(tmp) / "single" / JID, JID)
        try:
            _setup(grouped)
            _setup(single)
            for journal in (grouped, single):
                journal.committed_txn_id.lazy_interval_s = 0.0  # files compare equal
            # The calls, and journal()'s answer to each, one after the other.
            sequence, expected = [], []
            for seqid in range(data.draw(st.integers(2, 8))):
                req, segment, first, num = data.draw(calls(_state(single)))
                records = create_txn_data(max(first, 1), num)
                sequence.append((seqid, req, segment, first, num, records))
                expected.append(_answer(single.journal, req, segment, first, num, records))
            answers = []
            i = 0
            while i < len(sequence):
                group = [_journal_call(*call) for call in sequence[i:]]
                outcomes = grouped.journal_in_order_group(group)
                answers += [None if e is None else (type(e).__name__, str(e)) for e in outcomes]
                i += len(outcomes)
                if not outcomes:  # declined, having done nothing: journal() decides
                    _, req, segment, first, num, records = sequence[i]
                    answers.append(_answer(grouped.journal, req, segment, first, num, records))
                    i += 1
            assert answers == expected
            assert _state(grouped) == _state(single)
            assert _files(grouped) == _files(single)
            written = grouped.metrics.counts
            assert written.batches == single.metrics.counts.batches
            assert written.fsyncs <= single.metrics.counts.fsyncs
        finally:
            grouped.close()
            single.close()
