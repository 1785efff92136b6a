"""Any Thrift service over the shared RPC machinery: now :mod:`hadoop_qjm.ipc`.

The NameNode's services travel exactly as QJournalProtocol does — the same frames and
pre-decode checks (:mod:`hadoop_qjm.ipc.wire`), the same sockets and socket factories
(:mod:`hadoop_qjm.ipc.sockets`, :mod:`hadoop_qjm.common.net`) and the same error mapping:
an error is its Java class name and message, and the client raises the typed exception.
What differs is only the table of services. The names stay importable from here:

* :class:`ThriftServiceDispatcher` (:mod:`hadoop_qjm.ipc.dispatcher`) — one request payload
  in, one reply payload out, for any services and any handler callables;
* :class:`ThriftServiceCaller` (:mod:`hadoop_qjm.ipc.client`) — the client half;
* :func:`release_handler_slot` and :func:`remote_ip` (:mod:`hadoop_qjm.ipc.call_context`):
  a handler gives back its slot while it waits for something other than the CPU (the
  NameNode's handlers, while their edit is synced: Hadoop's async edit logging frees the
  handler the same way).
"""

from __future__ import annotations

from hadoop_qjm.ipc.call_context import release_handler_slot, remote_ip
from hadoop_qjm.ipc.client import ThriftServiceCaller
from hadoop_qjm.ipc.dispatcher import Rpc, RpcObserver, ThriftServiceDispatcher, rpc_table

__all__ = [
    "Rpc",
    "RpcObserver",
    "ThriftServiceCaller",
    "ThriftServiceDispatcher",
    "release_handler_slot",
    "remote_ip",
    "rpc_table",
]
