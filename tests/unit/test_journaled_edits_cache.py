"""Hadoop's TestJournaledEditsCache, ported (digest §8): capacity = 100 single-txn batches."""

from __future__ import annotations

import pytest

from hadoop_qjm.common.constants import CURRENT_LAYOUT_VERSION
from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.conf import Configuration
from hadoop_qjm.editlog.fs_edit_log_op import edit_log_header
from hadoop_qjm.qjournal.protocol.exceptions import CacheMissException
from hadoop_qjm.qjournal.server.journaled_edits_cache import JournaledEditsCache, cache_capacity
from hadoop_qjm.testing.qjm_test_util import create_txn_data

LV = CURRENT_LAYOUT_VERSION
EDITS_CAPACITY = 100
OP_SIZE = len(create_txn_data(1, 1))


@pytest.fixture
def cache():
    return JournaledEditsCache(capacity=EDITS_CAPACITY * OP_SIZE)


def store_txns(cache, start, count, lv=LV):
    cache.store_edits(create_txn_data(start, count), start, start + count - 1, lv)


def expected(start, count, lv=LV):
    return edit_log_header(lv) + create_txn_data(start, count)


def test_cache_single_segment(cache):
    store_txns(cache, 1, 20)
    assert cache.retrieve_edits(1, 20) == (expected(1, 20), 20)
    assert cache.retrieve_edits(1, 5) == (expected(1, 5), 5)
    assert cache.retrieve_edits(3, 4) == (expected(3, 4), 4)
    assert cache.retrieve_edits(19, 5) == (expected(19, 2), 2)


def test_cache_reads_across_batch_boundaries(cache):
    for start in range(1, 31, 3):
        store_txns(cache, start, 3)
    assert cache.retrieve_edits(1, 30) == (expected(1, 30), 30)
    assert cache.retrieve_edits(2, 7) == (expected(2, 7), 7)  # starts and ends mid-batch
    assert cache.retrieve_edits(4, 3) == (expected(4, 3), 3)  # exactly one batch
    assert cache.retrieve_edits(31, 5) == (b"", 0)  # past the end: nothing, not an error


def test_cache_above_capacity_evicts_oldest(cache):
    for txid in range(1, EDITS_CAPACITY + 11):
        store_txns(cache, txid, 1)
    with pytest.raises(CacheMissException) as info:
        cache.retrieve_edits(1, 5)
    # Ops of larger txids are a byte or two longer, so at least the 10 oldest are gone.
    lowest = cache.lowest_txid
    assert lowest >= 11 and info.value.cache_miss_amount == lowest - 1
    assert cache.retrieve_edits(lowest, 5) == (expected(lowest, 5), 5)
    assert cache.size <= EDITS_CAPACITY * OP_SIZE


def test_oversized_batch_empties_the_cache(cache):
    store_txns(cache, 1, 5)
    store_txns(cache, 6, EDITS_CAPACITY + 1)
    with pytest.raises(CacheMissException):
        cache.retrieve_edits(1, 5)
    with pytest.raises(CacheMissException):
        cache.retrieve_edits(6, 5)


def test_future_layout_version_has_its_own_header(cache):
    store_txns(cache, 1, 5)
    store_txns(cache, 6, 5, lv=LV - 1)
    assert cache.retrieve_edits(6, 5) == (expected(6, 5, LV - 1), 5)
    with pytest.raises(CacheMissException):  # the older layout's range is gone
        cache.retrieve_edits(1, 5)


def test_gap_resets_the_cache_and_reports_the_miss_amount(cache):
    store_txns(cache, 1, 5)
    store_txns(cache, 15, 5)  # txids 6..14 never arrived
    with pytest.raises(CacheMissException) as info:
        cache.retrieve_edits(6, 5)
    assert info.value.cache_miss_amount == 9
    assert cache.retrieve_edits(15, 5) == (expected(15, 5), 5)


def test_uninitialized_cache_and_negative_txid_miss(cache):
    with pytest.raises(CacheMissException) as info:
        cache.retrieve_edits(1, 5)
    assert info.value.cache_miss_amount == 0
    store_txns(cache, 1, 5)
    with pytest.raises(CacheMissException):
        cache.retrieve_edits(-1, 5)


def test_bad_ranges_are_ignored_not_raised(cache):
    cache.store_edits(b"x", 5, 4, LV)
    with pytest.raises(CacheMissException):
        cache.retrieve_edits(4, 1)


def test_capacity_configuration():
    conf = Configuration()
    conf.set("dfs.journalnode.edit-cache-size.bytes", "1m")
    conf.set("dfs.journalnode.edit-cache-size.fraction", "0.9")
    assert cache_capacity(conf) == 1024 * 1024  # bytes wins over the fraction
    conf.unset("dfs.journalnode.edit-cache-size.bytes")
    half = cache_capacity(conf) / 0.9 * 0.5
    conf.set("dfs.journalnode.edit-cache-size.fraction", "0.5")
    assert abs(cache_capacity(conf) - half) <= 1
    conf.set("dfs.journalnode.edit-cache-size.fraction", "1.5")
    with pytest.raises(IllegalArgumentException, match="fraction"):
        cache_capacity(conf)
