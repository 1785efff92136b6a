"""The loaded ``qjournal.thrift`` IDL (thriftpy2 builds the classes at import time).

Only :mod:`~hadoop_qjm.qjournal.protocol.messages` (struct conversion) and
:mod:`~hadoop_qjm.qjournal.protocol.wire` (message envelopes) should need it;
everything else speaks the dataclasses of ``messages``.
"""

from __future__ import annotations

from importlib import resources
from types import ModuleType

import thriftpy2

__all__ = ["IDL_FILE_NAME", "qjournal_thrift", "SERVICES"]

IDL_FILE_NAME = "qjournal.thrift"


def _load() -> ModuleType:
    # The IDL ships as package data (setup.cfg); as_file() also copes with a
    # zipped install. The module name must end in "_thrift" (thriftpy2's rule
    # for picklable structs) and be unique enough not to clash with a user's.
    ref = resources.files(__package__).joinpath(IDL_FILE_NAME)
    with resources.as_file(ref) as path:
        return thriftpy2.load(str(path), module_name="hadoop_qjm_qjournal_thrift")


#: The thriftpy2 module: structs (``RequestInfo``, ``SegmentState``, …), the
#: exception ``QJournalException`` and the services ``QJournalProtocol`` and
#: ``InterQJournalProtocol``.
qjournal_thrift = _load()

#: Both services, in dispatch order. They are served on one port; their
#: method names are disjoint (checked by the test suite).
SERVICES = (qjournal_thrift.QJournalProtocol, qjournal_thrift.InterQJournalProtocol)
