"""``haadmin -reconfigureSharedEdits``'s wait for the new JournalNodes to catch up.

The active NameNode finishes a switch only once the new set holds the finalized history
a restart reads (``membership_change.finish_reconfiguration``); a new node gets the
segments it lacks from its syncer, every ``dfs.journalnode.sync.interval`` (2 min by
default), and so may an old node that missed one. Until then the NameNode refuses with
:class:`JournalNodesBehindException` and stays on the joint configuration, which is
safe. The command asks again every ``dfs.ha.reconfigure-shared-edits.retry.interval.ms``
(each ask ends a segment: one more roll), printing what is still missing, until the
switch is done or ``dfs.ha.reconfigure-shared-edits.catch-up.timeout.ms`` has passed
(issue 33 item 11: growing 3 -> 5 failed on the first try, and worked after a sync
round).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TextIO

from hadoop_qjm.common.exceptions import one_line_message
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.qjournal.protocol.exceptions import JournalNodesBehindException

__all__ = ["switch_when_caught_up"]


def _seconds(conf: Any, key: str, floor_ms: int) -> float:
    return max(conf.get_time_duration(key, int(keys.DEFAULTS[key]), "ms"), floor_ms) / 1000.0


def switch_when_caught_up(
    switch: Callable[[], str],
    out: TextIO,
    conf: Any,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """``switch()`` (the NameNode's reconfigureSharedEdits: the set now written to),
    asked again while it raises JournalNodesBehindException, for up to the catch-up
    timeout of ``conf``; then that refusal, saying how long it waited."""
    timeout_s = _seconds(conf, keys.DFS_HA_RECONFIGURE_CATCH_UP_TIMEOUT_KEY, 0)
    retry_interval_s = _seconds(conf, keys.DFS_HA_RECONFIGURE_RETRY_INTERVAL_KEY, 1)
    start = clock()
    while True:
        try:
            return switch()
        except JournalNodesBehindException as e:
            waited = clock() - start
            if waited + retry_interval_s > timeout_s:
                if timeout_s <= 0:
                    raise  # no wait asked for: the NameNode's refusal as it is
                raise JournalNodesBehindException(
                    f"{one_line_message(e)}; still so after {waited:.1f} s "
                    f"({keys.DFS_HA_RECONFIGURE_CATCH_UP_TIMEOUT_KEY} = {timeout_s * 1000:.0f})"
                ) from e
            print(
                f"Waiting for the new JournalNodes to catch up ({waited:.0f} s of "
                f"{timeout_s:.0f} s): {one_line_message(e)}",
                file=out,
                flush=True,
            )
            sleep(retry_interval_s)
