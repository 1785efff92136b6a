"""JointAsyncLoggerSet: the loggers of O ∪ N while the JournalNode set changes.

Every quorum step of the writer (newEpoch, recovery, startLogSegment, each
batch, finalize) counts as done only when a majority of the old set **and** a
majority of the new set succeeded (``membership.Config.quorum_reached``;
docs/journalnode.md, "Online, by joint consensus: the design", step S3), and
fails as soon as either half can no longer reach its majority. The fan-out is
the plain AsyncLoggerSet's, over the union.

Reading by count (``majority_size``: the RPC tailer's "txns a majority holds")
has no meaning over O ∪ N — a majority of the union need not be a joint
quorum — so it raises: a reader keeps using one set.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from hadoop_qjm.common.exceptions import (
    IllegalArgumentException,
    IllegalStateException,
    IOException,
)
from hadoop_qjm.qjournal.client.async_logger import AsyncLogger
from hadoop_qjm.qjournal.client.async_logger_set import AsyncLoggerSet
from hadoop_qjm.qjournal.client.quorum_call import QuorumCall
from hadoop_qjm.qjournal.protocol.membership import Config, parse_members

__all__ = ["JointAsyncLoggerSet", "logger_address"]


def logger_address(logger: AsyncLogger) -> str:
    """The ``host:port`` a logger writes to, case-folded as ``membership`` compares them."""
    return str(logger).lower()


class JointAsyncLoggerSet(AsyncLoggerSet):
    """The loggers of every node of ``config`` (joint or not), with its quorum rule."""

    def __init__(
        self,
        loggers: Sequence[AsyncLogger],
        config: Config,
        *,
        address_of: Callable[[AsyncLogger], str] = logger_address,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(loggers, clock=clock)
        self.config = config
        self._address = {logger: parse_members(address_of(logger)) for logger in self.loggers}
        addresses = {a for found in self._address.values() for a in found}
        if addresses != config.members:
            raise IllegalArgumentException(
                f"the loggers ({';'.join(sorted(addresses))}) are not the nodes of "
                f"{config.describe()}"
            )

    def _nodes(self, loggers: Iterable[Any]) -> set[str]:
        return {a for logger in loggers for a in self._address[logger]}

    @property
    def majority_size(self) -> int:
        raise IllegalStateException(
            f"no single majority while the JournalNode set changes ({self.config.describe()})"
        )

    @property
    def majority_string(self) -> str:
        """``"a majority of a:1;b:1;c:1 and of a:1;b:1;d:1"`` for messages."""
        halves = [";".join(sorted(h)) for h in self.config.halves]
        return "a majority of " + " and of ".join(halves)

    def wait_for_write_quorum(
        self, call: QuorumCall[AsyncLogger, Any], timeout_ms: int, operation_name: str
    ) -> dict[AsyncLogger, Any]:
        """Wait until the joint quorum succeeded, or became impossible, or all answered."""
        config = self.config
        n = call.count_calls()

        def over(succeeded: Iterable[Any], failed: Iterable[Any]) -> bool:
            ok, bad = self._nodes(succeeded), self._nodes(failed)
            return config.quorum_reached(ok) or config.quorum_impossible(bad) or len(ok | bad) >= n

        try:
            call.wait_for(0, 0, -1, timeout_ms, operation_name, rule=over)
        except TimeoutError:
            raise IOException(
                f"Timed out waiting {timeout_ms}ms for {self.majority_string} to respond."
            ) from None
        successes = call.successes
        if not config.quorum_reached(self._nodes(successes)):
            if call.count_exceptions() == 0:
                raise IOException(
                    f"{operation_name}: the nodes that answered are not {self.majority_string}"
                )
            call.rethrow_exception(f"Got too many exceptions to achieve {self.majority_string}")
        return successes
