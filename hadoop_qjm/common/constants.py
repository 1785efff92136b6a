"""Constants shared by the NameNode and JournalNode code (HADOOP-QJM-DIGEST.md preamble)."""

__all__ = [
    "INVALID_TXID",
    "CURRENT_LAYOUT_VERSION",
    "FUTURE_LAYOUT_VERSION_FOR_TESTING",
    "DECODED_LAYOUT_VERSIONS",
    "HDFS_SERVER_LAYOUT_VERSION",
]

#: HdfsServerConstants.INVALID_TXID: "no transaction".
INVALID_TXID = -12345

#: NameNodeLayoutVersion.CURRENT_LAYOUT_VERSION (NVDIMM_SUPPORT).
CURRENT_LAYOUT_VERSION = -67
HDFS_SERVER_LAYOUT_VERSION = CURRENT_LAYOUT_VERSION

#: The project's one layout newer than Hadoop's (docs/ha.md, "Upgrading the layout"): a
#: NameNode runs as this software only with dfs.namenode.testing.future-layout, so that
#: ``namenode -upgrade`` really moves -67 to -68 and ``-rollback`` back, as Hadoop's tests
#: do with a future NameNodeLayoutVersion. Its edits and images are -67's, byte for byte.
FUTURE_LAYOUT_VERSION_FOR_TESTING = CURRENT_LAYOUT_VERSION - 1

#: The layout versions whose op bodies this software decodes (the same bodies).
DECODED_LAYOUT_VERSIONS = frozenset({CURRENT_LAYOUT_VERSION, FUTURE_LAYOUT_VERSION_FOR_TESTING})
