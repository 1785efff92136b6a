"""HAServiceProtocol's service state (Hadoop's HAServiceProtocol.HAServiceState) and who asks
for a change of it (HAServiceProtocol.RequestSource).

One enum for what a NameNode is in its nameservice, wherever it is kept, compared or shown:
the NameNode's own state, ``getServiceStatus``'s answer, what the failover controller made
its NameNode, what ``haadmin -getServiceState`` prints, the ``State`` of the NameNode's JMX
and status page. Its number is HAServiceStateProto's (the wire); ``str()`` is Hadoop's
``toString()`` (``active``, ``standby``, ...). Pure: no I/O.
"""

from __future__ import annotations

import enum

__all__ = ["HARequestSource", "HAServiceState"]


class HAServiceState(enum.IntEnum):
    """HAServiceProtocol.HAServiceState (values: HAServiceStateProto's numbers)."""

    INITIALIZING = 0
    ACTIVE = 1
    STANDBY = 2
    OBSERVER = 3
    #: Hadoop's enum has it, HAServiceStateProto does not: never on the wire.
    STOPPING = 4

    def __str__(self) -> str:
        return self.name.lower()

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)


class HARequestSource(enum.IntEnum):
    """Who asks for an HA state change (HARequestSource; values are the wire values):
    ``haadmin``, ``haadmin --forcemanual``, or the failover controller."""

    REQUEST_BY_USER = 0
    REQUEST_BY_USER_FORCED = 1
    REQUEST_BY_ZKFC = 2
