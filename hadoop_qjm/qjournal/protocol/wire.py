"""Bytes on the wire: now :mod:`hadoop_qjm.ipc.wire` (Hadoop's RPC machinery lives in
``ipc``); its names stay importable from here."""

from __future__ import annotations

from hadoop_qjm.ipc.wire import *  # noqa: F403
from hadoop_qjm.ipc.wire import __all__, _cybin_safe  # noqa: F401
