"""TestEpochsAreUnique (HADOOP-QJM-DIGEST.md §8): epochs are unique and increasing
(design paper §2.5), even when getJournalState and newEpoch calls fail at random."""

from __future__ import annotations

import random
from concurrent.futures import Future

from hadoop_qjm.common.exceptions import IOException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.qjournal.client.ipc_logger_channel import IPCLoggerChannel
from hadoop_qjm.qjournal.client.quorum_journal_manager import QuorumJournalManager
from hadoop_qjm.testing.mini_journal_cluster import MiniJournalCluster
from hadoop_qjm.testing.qjm_test_util import FAKE_NSINFO

JID = "testEpochsAreUnique-jid"


def faulty_logger_factory(rng: random.Random):
    """Channels whose getJournalState fails with p=0.1 and newEpoch with p=0.4 (unsent)."""

    def injected() -> Future:
        future: Future = Future()
        future.set_exception(IOException("Injected fault"))
        return future

    class SometimesFaulty(IPCLoggerChannel):
        def get_journal_state(self):
            return injected() if rng.random() < 0.10 else super().get_journal_state()

        def new_epoch(self, epoch, writer_config=None, writer_record=None):
            if rng.random() < 0.40:
                return injected()
            return super().new_epoch(epoch, writer_config, writer_record)

    def factory(conf, ns_info, journal_id, name_service_id, address):
        return SometimesFaulty(conf, ns_info, journal_id, address, name_service_id=name_service_id)

    return factory


def test_single_threaded() -> None:
    conf = Configuration()
    rng = random.Random(3077)
    with MiniJournalCluster(3, conf=conf) as cluster:
        uri = cluster.quorum_journal_uri(JID)
        with QuorumJournalManager(conf, uri, FAKE_NSINFO) as qjm:
            qjm.format(FAKE_NSINFO, False)

        # Without failures or contention, epochs increase one by one.
        for i in range(5):
            with QuorumJournalManager(conf, uri, FAKE_NSINFO) as qjm:
                qjm.create_new_unique_epoch()
                assert qjm.loggers.epoch == i + 1

        # With faults they still always increase, perhaps skipping some.
        prev_epoch = 5
        attempts = 0
        for _ in range(20):
            while True:
                attempts += 1
                qjm = QuorumJournalManager(
                    conf, uri, FAKE_NSINFO, logger_factory=faulty_logger_factory(rng)
                )
                try:
                    qjm.create_new_unique_epoch()
                    new_epoch = qjm.loggers.epoch
                    break
                except IOException:
                    pass  # too many injected faults this time: try again
                finally:
                    qjm.close()
            assert new_epoch > prev_epoch, f"New epoch {new_epoch} should exceed {prev_epoch}"
            prev_epoch = new_epoch
        print(f"20 epochs in {attempts} attempts, the last one {prev_epoch}")
