"""EditLogTailer: a standby NameNode applying the shared journal as the active writes it.

Every ``dfs.ha.tail-edits.period`` the tailer selects the journals' streams after the last
applied txid and applies them under the namesystem lock (``doTailEdits``). Only durable
txns are read — a txn a quorum of JournalNodes acknowledged — so the standby never applies
an edit the next writer's recovery could drop. With ``dfs.ha.tail-edits.in-progress`` the
open segment is read from the JournalNodes' caches (the RPC path: milliseconds of lag);
otherwise only finalized segments are read, and the active's ``dfs.ha.log-roll.period``
rolls are what make new edits visible. With ``dfs.ha.tail-edits.period.backoff-max`` > 0,
each round that finds nothing doubles the wait, up to that maximum.

Tailing by push (issue 25; not in Hadoop): with in-progress tailing and
``dfs.ha.tail-edits.in-progress.wait`` > 0 the tailer does not sleep a period between
rounds. It asks the JournalNodes for the edits after its last txid with a long poll
(getJournaledEdits' ``waitMs``); they answer the moment a majority has written them, and
the round that follows applies them at once. An idle cluster costs one call per wait. A
stop does not wait for a long poll in flight: the round after it is never run, and the
edit log it uses is closed by the transition (which interrupts the call).

When nothing has been loaded for ``dfs.ha.log-roll.period`` but new txns were loaded since
the last roll, the tailer asks the active to roll its edit log (rollEditLog on each other
NameNode in turn; a standby answers StandbyException and the next is tried).

An error reading the journals (an IOException) is logged and retried next round; until a
round succeeds, :attr:`EditLogTailer.last_error` says what failed (monitorHealth reports
it: a standby that cannot read the shared edits must not be elected active). An op
that cannot be applied (EditLogApplyException), or any other error, means the namespace
may no longer match the log, and the standby terminates (Hadoop: "Unknown error
encountered while tailing edits. Shutting down standby NN."; only a read error,
EditLogInputException, is retried there).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from hadoop_qjm.common.constants import INVALID_TXID
from hadoop_qjm.common.exceptions import IOException, one_line_message
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode.fs_edit_log_loader import EditLogApplyException

__all__ = ["EditLogTailer", "TailerSettings"]

LOG = logging.getLogger(__name__)


#: How soon a round that could not read the journals is retried (at most the period).
_RETRY_AFTER_ERROR_S = 1.0


class TailerSettings:
    """The tailer's configuration, read once."""

    def __init__(self, conf: Configuration) -> None:
        # Hadoop reads these three with getTimeDuration(key, default, SECONDS, MILLISECONDS):
        # a bare number is seconds ("60"), a suffix says otherwise ("20ms").
        self.period_s = (
            conf.get_time_duration(
                keys.DFS_HA_TAILEDITS_PERIOD_KEY,
                keys.DFS_HA_TAILEDITS_PERIOD_DEFAULT,
                "s",
                return_unit="ms",
            )
            / 1000.0
        )
        self.backoff_max_s = (
            conf.get_time_duration(
                keys.DFS_HA_TAILEDITS_PERIOD_BACKOFF_MAX_KEY,
                keys.DFS_HA_TAILEDITS_PERIOD_BACKOFF_MAX_DEFAULT,
                "s",
                return_unit="ms",
            )
            / 1000.0
        )
        self.in_progress = conf.get_bool(
            keys.DFS_HA_TAILEDITS_INPROGRESS_KEY, keys.DFS_HA_TAILEDITS_INPROGRESS_DEFAULT
        )
        roll_ms = conf.get_time_duration(
            keys.DFS_HA_LOGROLL_PERIOD_KEY,
            keys.DFS_HA_LOGROLL_PERIOD_DEFAULT,
            "s",
            return_unit="ms",
        )
        self.log_roll_period_s = roll_ms / 1000.0 if roll_ms >= 0 else None
        max_txns = conf.get_int(
            keys.DFS_HA_TAILEDITS_MAX_TXNS_PER_LOCK_KEY,
            keys.DFS_HA_TAILEDITS_MAX_TXNS_PER_LOCK_DEFAULT,
        )
        self.max_txns_per_lock = max_txns if 0 < max_txns < 2**62 else None
        wait_ms = conf.get_time_duration(
            keys.DFS_HA_TAILEDITS_INPROGRESS_WAIT_KEY,
            keys.DFS_HA_TAILEDITS_INPROGRESS_WAIT_DEFAULT,
            "ms",
        )
        #: The long poll's wait (push); None: poll every period.
        self.push_wait_s = wait_ms / 1000.0 if self.in_progress and wait_ms > 0 else None


class EditLogTailer:
    """Tails the shared journals into ``core`` (a NameNodeCore in standby).

    ``roll_active()`` asks the active to roll (None: never); ``terminate(status, message)``
    stops the process on an unexpected error; ``clock`` is monotonic seconds.
    """

    def __init__(
        self,
        core,
        conf: Configuration,
        *,
        roll_active: Callable[[], None] | None = None,
        terminate: Callable[[int, str], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.core = core
        self.settings = TailerSettings(conf)
        self._roll_active = roll_active
        self._terminate = terminate
        self._clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # Guards the hand-over between a long poll (which stop() does not wait for) and
        # the round after it (which it does).
        self._state_lock = threading.Lock()
        self._awaiting = False
        self.last_load_time = clock()
        # INVALID_TXID, as in Hadoop: a fresh standby (txid 0) must be able to ask for a roll.
        self.last_roll_trigger_txid = INVALID_TXID
        self.rounds = 0
        self.txns_loaded = 0
        #: Why the last round could not read the journals (one line); None once one could.
        self.last_error: str | None = None

    # ---- one round -------------------------------------------------------------------------------
    def do_tail_edits(self) -> int:
        """Apply everything durable after the last applied txid; returns how many txns."""
        try:
            n = self.core.tail_edits(self.settings.in_progress, self.settings.max_txns_per_lock)
        except EditLogApplyException:
            raise  # not a read error: the tailer shuts the standby down
        except IOException as e:
            self.last_error = one_line_message(e)
            raise
        self.last_error = None
        self.rounds += 1
        if n > 0:
            self.txns_loaded += n
            self.last_load_time = self._clock()
            LOG.debug("Loaded %d edits, up to txid %d", n, self.core.last_applied_txid)
        return n

    def catchup(self) -> None:
        """Tail until a round finds nothing (catchupDuringFailover)."""
        while self.do_tail_edits() > 0:
            pass

    def _too_long_since_last_load(self) -> bool:
        period = self.settings.log_roll_period_s
        return period is not None and self._clock() - self.last_load_time > period

    def maybe_trigger_roll(self) -> bool:
        """Ask the active to roll when nothing was loaded for a log-roll period but new txns
        were loaded since the last roll (EditLogTailer.doWork)."""
        last = self.core.last_applied_txid
        if self._roll_active is None or not self._too_long_since_last_load():
            return False
        if self.last_roll_trigger_txid >= last:
            return False
        LOG.info("Triggering log roll on remote NameNode (last loaded txid %d)", last)
        try:
            self._roll_active()
        except Exception as e:  # noqa: BLE001 - a failed roll is retried next period
            LOG.warning("Unable to trigger a roll of the active NN: %s", e)
            return False
        self.last_roll_trigger_txid = last
        self.last_load_time = self._clock()
        return True

    # ---- the thread ------------------------------------------------------------------------------
    def start(self) -> None:
        # A new event per run: a thread still in a long poll of an earlier run sees its
        # own, set, and exits when the poll returns.
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(self._stop,), name="Edit log tailer", daemon=True
        )
        self._thread.start()

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop after the current round (a transition waits for this before it writes).
        A long poll in flight is not waited for: no round follows it."""
        with self._state_lock:
            self._stop.set()
            awaiting = self._awaiting
        thread, self._thread = self._thread, None
        if thread is not None and thread is not threading.current_thread() and not awaiting:
            thread.join(timeout_s)
            if thread.is_alive():
                # A round stuck in a roll request: it applies nothing once the edit log is
                # open for write (NameNodeCore.tail_edits), so the transition may go on.
                LOG.warning("The edit log tailer did not stop within %.0fs", timeout_s)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def _await_edits(self, stop: threading.Event) -> bool:
        """One long poll (push); False when the thread must end. After a failed or
        unanswered poll, or a JournalNode that answered without waiting, the tailer
        waits a period, as when polling."""
        wait_s = self.settings.push_wait_s
        with self._state_lock:
            if stop.is_set():
                return False
            self._awaiting = True
        started = self._clock()
        try:
            news = self.core.await_shared_edits(wait_s)
        except Exception as e:  # noqa: BLE001 - the round after it reports read errors
            LOG.debug("Long poll for new edits failed: %s", e)
            news = None
        finally:
            with self._state_lock:
                self._awaiting = False
                stopped = stop.is_set()
        if stopped:
            return False
        if news is None or (not news and self._clock() - started < wait_s / 2):
            stop.wait(self.settings.period_s)
        return not stop.is_set()

    def _run(self, stop: threading.Event | None = None) -> None:
        stop = stop or self._stop
        delay = self.settings.period_s
        while not stop.is_set():
            try:
                self.maybe_trigger_roll()
                loaded = self.do_tail_edits()
            except EditLogApplyException as e:  # before IOException, which it is
                self._shut_down(e)
                return
            except IOException as e:
                LOG.warning("Error while reading edits from disk. Will try again.: %s", e)
                # A failed round makes the standby unhealthy (monitorHealth): try again
                # soon, not a whole tailing period later, so that it is electable as soon
                # as the JournalNodes answer again.
                stop.wait(min(self.settings.period_s, _RETRY_AFTER_ERROR_S))
                continue
            except Exception as e:  # noqa: BLE001 - anything else: the namespace is suspect
                self._shut_down(e)
                return
            if self.settings.push_wait_s is not None:
                if not self._await_edits(stop):
                    return
                continue
            if loaded == 0 and self.settings.backoff_max_s > 0:
                delay = min(max(delay, self.settings.period_s) * 2, self.settings.backoff_max_s)
            else:
                delay = self.settings.period_s
            stop.wait(delay)

    def _shut_down(self, error: BaseException) -> None:
        message = (
            f"Unknown error encountered while tailing edits. Shutting down standby NN: {error}"
        )
        LOG.critical(message, exc_info=error)
        if self._terminate is not None:
            self._terminate(1, message)
