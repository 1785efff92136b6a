/*
 * QJournalProtocol and InterQJournalProtocol: the JournalNode RPC interface.
 *
 * A Thrift rendering of Hadoop's QJournalProtocol.proto and
 * InterQJournalProtocol.proto (package hadoop.hdfs.qjournal). Method names are
 * Hadoop's RPC names; struct and argument field ids are the field numbers of
 * the corresponding protobuf messages, so the two IDLs can be read side by
 * side. Differences from Hadoop, all deliberate:
 *
 *  - Wire format: Thrift TBinaryProtocol inside TFramedTransport frames
 *    (4-byte big-endian length, then one message), not Hadoop RPC.
 *  - JournalIdProto{identifier} is flattened to a plain string `jid`.
 *  - Hadoop's uint64 / uint32 become Thrift's signed i64 / i32. Hadoop sends
 *    INVALID_TXID (-12345) in uint64 fields as two's complement
 *    (2^64 - 12345) and Java reads it back as a signed long; with signed i64
 *    the value simply travels as -12345 and no conversion is needed.
 *  - An error travels as the one exception QJournalException carrying the
 *    Java class name and the message (Hadoop RPC's RemoteException does the
 *    same); the client maps the name back to a typed exception.
 *  - Both services are served on the JournalNode's one RPC port. Method names
 *    are unique across the two services, so the server dispatches on the
 *    plain method name; a "Service:method" name (TMultiplexedProtocol) is
 *    accepted too, so stock Thrift clients of either kind work.
 *
 * Requiredness: fields Hadoop declares `required` are `required` here; the
 * receiver rejects a message lacking one with IllegalArgumentException.
 * Retired or unused protobuf field numbers are left unused.
 */

namespace py hadoop_qjm.qjournal.protocol.qjournal

// ---------------------------------------------------------------- shared

/** RequestInfoProto: sent with every "writer" RPC. */
struct RequestInfo {
  1: required string journalId,
  2: required i64 epoch,
  3: required i64 ipcSerialNumber,
  /** The writer's highest quorum-acked txid; absent when it has none. */
  4: optional i64 committedTxId,
  5: optional string nameServiceId,
}

/**
 * SegmentStateProto, plus an optional content proxy (our extension): the hex MD5 of the
 * segment's bytes up to its last transaction (header included, padding excluded). The
 * design paper §2.8 proposed "the highest txid and md5sum" as the proxy for a segment's
 * contents; with the txid alone, two different copies of the same length look equal.
 */
struct SegmentState {
  1: required i64 startTxId,
  2: required i64 endTxId,
  3: required bool isInProgress,
  4: optional string md5,
}

/** PersistedRecoveryPaxosData: an accepted recovery decision. */
struct PersistedRecoveryPaxosData {
  1: required SegmentState segmentState,
  2: required i64 acceptedInEpoch,
}

/** StorageInfoProto (HdfsServer.proto). Field 2 is "namespceID" (sic) in Hadoop. */
struct StorageInfo {
  1: required i32 layoutVersion,
  2: required i32 namespaceID,
  3: required string clusterID,
  4: required i64 cTime,
}

/**
 * NamespaceInfoProto (HdfsServer.proto). Field 2 ("unused") and fields 6
 * (capabilities) and 7 (HA state) are not carried.
 */
struct NamespaceInfo {
  1: required string buildVersion,
  3: required string blockPoolID,
  4: required StorageInfo storageInfo,
  5: required string softwareVersion,
}

/** RemoteEditLogProto (HdfsServer.proto). */
struct RemoteEditLog {
  1: required i64 startTxId,
  2: required i64 endTxId,
  3: optional bool isInProgress = false,
}

/**
 * RemoteEditLogManifestProto (HdfsServer.proto). committedTxnId is always
 * set by the JournalNode, possibly to INVALID_TXID (-12345): signed i64 here.
 */
struct RemoteEditLogManifest {
  1: required list<RemoteEditLog> logs,
  2: optional i64 committedTxnId,
}

// -------------------------------------------------------------- responses

struct GetJournalStateResponse {
  1: required i64 lastPromisedEpoch,
  /** Deprecated by fromURL (kept, as in Hadoop). */
  2: required i32 httpPort,
  3: optional string fromURL,
  /**
   * Not in Hadoop: this node's membership record of the journal (the text of
   * current/membership), absent if the set never changed (docs/journalnode.md,
   * "Online, by joint consensus").
   */
  4: optional string membership,
}

/**
 * Not in Hadoop (issue 33): canFormat's answer. liveWriter, when set, is why this node
 * refuses to format now (a writer uses the journal); the counts are what a format would
 * destroy here (-1: the segments could not be listed).
 */
struct CanFormatResponse {
  1: optional string liveWriter,
  2: required i32 segmentCount,
  3: required i64 txnCount,
}

struct NewEpochResponse {
  1: optional i64 lastSegmentTxId,
}

struct GetEditLogManifestResponse {
  1: required RemoteEditLogManifest manifest,
  /** Deprecated by fromURL (kept, as in Hadoop). */
  2: required i32 httpPort,
  3: optional string fromURL,
}

struct GetJournaledEditsResponse {
  1: required i32 txnCount,
  /** The 8-byte edit-log file header followed by whole serialized ops. */
  2: optional binary editLog,
  /**
   * Not in Hadoop: the epoch of the writer whose txns the cache holds (the epoch this
   * node had promised when its cache was last emptied). The client takes edits only
   * from the answers of the newest writer, so a node that never heard of that writer
   * cannot pass off a fenced writer's tail as durable.
   */
  3: optional i64 writerEpoch,
}

struct PrepareRecoveryResponse {
  1: optional SegmentState segmentState,
  2: optional i64 acceptedInEpoch,
  3: required i64 lastWriterEpoch,
  /** The highest committed txid this node has seen; absent if none. */
  4: optional i64 lastCommittedTxId,
}

// ------------------------------------------------------------------ errors

/**
 * Every failure of a QJournalProtocol call. className is the Java class
 * name of the exception (e.g. org.apache.hadoop.hdfs.qjournal.protocol.
 * JournalOutOfSyncException); cacheMissAmount is set only for
 * JournaledEditsCache.CacheMissException.
 */
exception QJournalException {
  1: required string className,
  2: required string message,
  3: optional i64 cacheMissAmount,
}

// ---------------------------------------------------------------- services

/** QJournalProtocolService: writer (NameNode) to JournalNode. */
service QJournalProtocol {
  bool isFormatted(1: required string jid, 2: optional string nameServiceId)
      throws (1: QJournalException e),

  i64 getJournalCTime(1: required string jid, 2: optional string nameServiceId)
      throws (1: QJournalException e),

  void doPreUpgrade(1: required string jid)
      throws (1: QJournalException e),

  void doUpgrade(1: required string jid, 2: required StorageInfo sInfo)
      throws (1: QJournalException e),

  void doFinalize(1: required string jid, 2: optional string nameServiceId)
      throws (1: QJournalException e),

  bool canRollBack(1: required string jid,
                   2: required StorageInfo storage,
                   3: required StorageInfo prevStorage,
                   4: required i32 targetLayoutVersion,
                   5: optional string nameServiceId)
      throws (1: QJournalException e),

  /** Hadoop spells this argument "nameserviceId" (lower-case s). */
  void doRollback(1: required string jid, 2: optional string nameserviceId)
      throws (1: QJournalException e),

  void discardSegments(1: required string jid,
                       2: required i64 startTxId,
                       3: optional string nameServiceId)
      throws (1: QJournalException e),

  GetJournalStateResponse getJournalState(1: required string jid,
                                          2: optional string nameServiceId)
      throws (1: QJournalException e),

  NewEpochResponse newEpoch(1: required string jid,
                            2: required NamespaceInfo nsInfo,
                            3: required i64 epoch,
                            4: optional string nameServiceId,
                            /** Not in Hadoop: the writer's set, "a:1;b:1" or joint "a:1;b:1|a:1;c:1". */
                            5: optional string writerConfig,
                            /** Not in Hadoop: the membership record the writer follows. */
                            6: optional string writerRecord)
      throws (1: QJournalException e),

  /** Not in Hadoop: replace the journal's membership record (a set change's step). */
  void setMembership(1: required RequestInfo reqInfo,
                     2: required string record,
                     /** When given, the journal must be of this namespace (a joining node). */
                     3: optional NamespaceInfo nsInfo)
      throws (1: QJournalException e),

  /**
   * Not in Hadoop (issue 33): may the journal be formatted now? Read-only; the client
   * asks every node before it formats any, and format re-checks under the journal lock.
   */
  CanFormatResponse canFormat(1: required string jid, 2: optional string nameServiceId)
      throws (1: QJournalException e),

  void format(1: required string jid,
              2: required NamespaceInfo nsInfo,
              3: optional string nameServiceId,
              4: optional bool force = false)
      throws (1: QJournalException e),

  void journal(1: required RequestInfo reqInfo,
               2: required i64 firstTxnId,
               3: required i32 numTxns,
               4: required binary records,
               5: required i64 segmentTxnId,
               6: optional string nameServiceId)
      throws (1: QJournalException e),

  void heartbeat(1: required RequestInfo reqInfo)
      throws (1: QJournalException e),

  /** layoutVersion absent: the JournalNode's current layout version. */
  void startLogSegment(1: required RequestInfo reqInfo,
                       2: required i64 txid,
                       3: optional i32 layoutVersion)
      throws (1: QJournalException e),

  void finalizeLogSegment(1: required RequestInfo reqInfo,
                          2: required i64 startTxId,
                          3: required i64 endTxId)
      throws (1: QJournalException e),

  void purgeLogs(1: required RequestInfo reqInfo, 2: required i64 minTxIdToKeep)
      throws (1: QJournalException e),

  /** Field 3 (forReading) is retired in Hadoop. */
  GetEditLogManifestResponse getEditLogManifest(1: required string jid,
                                                2: required i64 sinceTxId,
                                                4: optional bool inProgressOk = false,
                                                5: optional string nameServiceId)
      throws (1: QJournalException e),

  /**
   * Field 5 is not in Hadoop: a long poll. With waitMs > 0 the JournalNode answers
   * as soon as it has written sinceTxId, or after waitMs (capped at 60 s) with what
   * it has then; without it (Hadoop's callers) it answers at once, as Hadoop does.
   */
  GetJournaledEditsResponse getJournaledEdits(1: required string jid,
                                              2: required i64 sinceTxId,
                                              3: required i32 maxTxns,
                                              4: optional string nameServiceId,
                                              5: optional i32 waitMs)
      throws (1: QJournalException e),

  PrepareRecoveryResponse prepareRecovery(1: required RequestInfo reqInfo,
                                          2: required i64 segmentTxId)
      throws (1: QJournalException e),

  void acceptRecovery(1: required RequestInfo reqInfo,
                      2: required SegmentState stateToAccept,
                      3: required string fromURL)
      throws (1: QJournalException e),
}

/**
 * InterQJournalProtocolService: JournalNode to JournalNode (the syncer).
 * getEditLogManifestFromJournal: same request and response as getEditLogManifest.
 */
service InterQJournalProtocol {
  GetEditLogManifestResponse getEditLogManifestFromJournal(
      1: required string jid,
      2: required i64 sinceTxId,
      4: optional bool inProgressOk = false,
      5: optional string nameServiceId)
      throws (1: QJournalException e),

  /**
   * HDFS-16690: the journal's storage info (its VERSION), for a JournalNode whose copy
   * of the journal is unformatted to format itself from its peers. Unlike Hadoop, an
   * unformatted journal answers JournalNotFormattedException, not a zero namespace id.
   */
  StorageInfo getStorageInfo(1: required string jid, 2: optional string nameServiceId)
      throws (1: QJournalException e),
}
