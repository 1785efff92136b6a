"""SocketChannel: now :mod:`hadoop_qjm.ipc.socket_channel`; its names stay importable
from here."""

from __future__ import annotations

from hadoop_qjm.ipc.socket_channel import *  # noqa: F403
from hadoop_qjm.ipc.socket_channel import __all__  # noqa: F401
