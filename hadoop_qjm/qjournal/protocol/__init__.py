"""QJournalProtocol: the IDL, its messages, its exceptions and the protocol's pure rules.

Submodules (imported on demand, so that importing the pure ``rules`` does not
load Thrift):

* ``qjournal.thrift`` / ``thrift_idl`` — the Thrift IDL and its loaded module;
* ``messages`` — frozen dataclasses and the only Thrift <-> Python translation;
* ``exceptions`` — Hadoop-named exceptions and their wire form;
* ``rules`` — epoch, IPC-serial and txid checks, majority arithmetic (pure);
* ``wire`` — binary-protocol messages and frames, checked before decoding;
* ``sockets`` — framed I/O on sockets and the socket factories.
"""

__all__ = ["exceptions", "messages", "rules", "sockets", "thrift_idl", "wire"]
