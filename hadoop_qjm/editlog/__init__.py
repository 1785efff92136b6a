"""Hadoop's edit log: the binary format of its ops (layout version -67, byte for byte),
the edits files and their streams, the journal managers' common interface and the local
one (``FileJournalManager``), and the reader over several journals
(``RedundantEditLogInputStream``). Used alike by the NameNode, the JournalNodes and the
tools; it imports nothing above ``common`` (DESIGN.md §2, "Layering")."""
