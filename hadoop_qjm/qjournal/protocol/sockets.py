"""Frames on sockets and the socket factories: now :mod:`hadoop_qjm.ipc.sockets` and
:mod:`hadoop_qjm.common.net`; their names stay importable from here."""

from __future__ import annotations

from hadoop_qjm.ipc.sockets import *  # noqa: F403
from hadoop_qjm.ipc.sockets import FRAME_HEADER, __all__  # noqa: F401
