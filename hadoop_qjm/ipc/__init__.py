"""Hadoop's ``org.apache.hadoop.ipc``: the RPC machinery the JournalNode, the NameNode and
the ZKFC share (issue 34, item 2).

* :mod:`~hadoop_qjm.ipc.call_context` — the call a handler thread is executing
  (``Server.getRemoteIp()``, ``getRemoteUser()``): one thread-local;
* :mod:`~hadoop_qjm.ipc.frames` — a pure frame decoder: bytes in, frames out
  (TFramedTransport's 4-byte length, then the payload);
* :mod:`~hadoop_qjm.ipc.exceptions` — ``RemoteException`` and ``ProtocolError``.

Imports nothing of ``qjournal``, ``ha`` or ``namenode``: they configure it. This package
module imports nothing itself, so that the pure modules in it stay pure.
"""
