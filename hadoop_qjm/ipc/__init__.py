"""Hadoop's ``org.apache.hadoop.ipc``: the RPC machinery the JournalNode, the NameNode and
the ZKFC share (issue 34, item 2).

* :mod:`~hadoop_qjm.ipc.call_context` — the call a handler thread is executing
  (``Server.getRemoteIp()``, ``getRemoteUser()``): one thread-local;
* :mod:`~hadoop_qjm.ipc.frames` — a pure frame decoder: bytes in, frames out
  (TFramedTransport's 4-byte length, then the payload);
* :mod:`~hadoop_qjm.ipc.exceptions` — ``RemoteException``, ``ProtocolError`` and an error's
  (class name, message) on the wire;
* :mod:`~hadoop_qjm.ipc.wire` (and ``flat_struct``) — Thrift binary messages, checked
  before they are decoded;
* :mod:`~hadoop_qjm.ipc.sockets` — frames on sockets (``FrameReader``), the TLS probe;
* :mod:`~hadoop_qjm.ipc.dispatcher` — the RPC table, handler slots and failure log every
  dispatcher shares, and ``ThriftServiceDispatcher``;
* :mod:`~hadoop_qjm.ipc.server` — the thread-per-connection ``Server`` the JournalNode,
  the NameNode (over TLS) and the ZKFC configure;
* :mod:`~hadoop_qjm.ipc.selector_server` — ``IpcServer``, Hadoop's listener, call queue,
  handlers and responder (the NameNode's plain-TCP port), with ``Call`` and
  ``current_call`` (a postponed reply);
* :mod:`~hadoop_qjm.ipc.socket_channel`, :mod:`~hadoop_qjm.ipc.tls_session`,
  :mod:`~hadoop_qjm.ipc.client` — connecting (timeouts, TLS), the blocking channel, the
  client half of a dispatcher.

Imports nothing of ``qjournal``, ``ha`` or ``namenode``: they configure it. This package
module imports nothing itself, so that the pure modules in it stay pure.
"""

__all__: list[str] = []
