"""The NameNode's RPC protocols: ClientProtocol, NamenodeProtocol, HAServiceProtocol.

Submodules (imported on demand):

* ``namenode.thrift`` / ``thrift_idl`` — the Thrift IDL and its loaded module;
* ``messages`` — the only Thrift <-> Python translation (FileStatus, listings,
  NamespaceInfo, CheckpointSignature, HA states);
* ``exceptions`` — the NameNode's own Hadoop-named exceptions;
* ``rpc`` — any Thrift service over the JournalNode's RPC machinery (a dispatcher
  for servers, a caller for clients; frames, checks and errors as in qjournal);
* ``client`` — :class:`~hadoop_qjm.namenode.protocol.client.NameNodeProxy`, and
  where a client finds the NameNode (``fs.defaultFS``, ``dfs.namenode.rpc-address``).
"""

__all__ = ["client", "exceptions", "messages", "rpc", "thrift_idl"]
