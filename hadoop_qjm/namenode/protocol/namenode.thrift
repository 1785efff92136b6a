/*
 * The NameNode's RPC interface: ClientProtocol, NamenodeProtocol, HAServiceProtocol.
 *
 * A Thrift rendering of Hadoop's ClientNamenodeProtocol.proto,
 * NamenodeProtocol.proto and HAServiceProtocol.proto, reduced to what this
 * NameNode implements (a namespace of directories and block-less files).
 * Method names are Hadoop's RPC names; argument and struct field ids are the
 * field numbers of the corresponding protobuf request / response messages,
 * so the IDLs can be read side by side. As in qjournal.thrift:
 *
 *  - Wire format: Thrift TBinaryProtocol inside TFramedTransport frames, not
 *    Hadoop RPC. The three services share the NameNode's one RPC port
 *    (dfs.namenode.rpc-address); method names are unique across them, and a
 *    "Service:method" name (TMultiplexedProtocol) is accepted too.
 *  - Request messages are flattened into arguments; a response message with
 *    a single required field becomes the plain return value, one with an
 *    optional field (a "null" result in Java) stays a struct.
 *  - Hadoop's uint64 / uint32 become signed i64 / i32.
 *  - Every error is the one exception RemoteException carrying the Java class
 *    name and the message (Hadoop RPC's RpcResponseHeaderProto carries the
 *    same two strings); the client maps the name back to a typed exception.
 *  - ClientProtocol.delete is named deletePath: "delete" is reserved in Thrift.
 *  - The caller's identity is not sent: every caller is the superuser, and
 *    new inodes belong to the NameNode's user.
 */

namespace py hadoop_qjm.namenode.protocol.namenode

// ------------------------------------------------------------------ shared

/** FsPermissionProto: the mode bits (sticky bit and rwx for u, g, o). */
struct FsPermission {
  1: required i32 perm,
}

/** HdfsFileStatusProto.FileType. */
enum FileType {
  IS_DIR = 1,
  IS_FILE = 2,
  IS_SYMLINK = 3,
}

/**
 * HdfsFileStatusProto without blocks. path is the inode's local name in a
 * listing and empty in getFileInfo (the client knows the path it asked for).
 */
struct HdfsFileStatus {
  1: required FileType fileType,
  2: required string path,
  3: required i64 length,
  4: required FsPermission permission,
  5: required string owner,
  6: required string group,
  7: required i64 modification_time,
  8: required i64 access_time,
  10: optional i32 block_replication = 0,
  11: optional i64 blocksize = 0,
  13: optional i64 fileId = 0,
  14: optional i32 childrenNum = -1,
}

/** DirectoryListingProto: one batch of a listing (at most dfs.ls.limit entries). */
struct DirectoryListing {
  1: required list<HdfsFileStatus> partialListing,
  2: required i32 remainingEntries,
}

/** StorageInfoProto (HdfsServer.proto). Field 2 is "namespceID" (sic) in Hadoop. */
struct StorageInfo {
  1: required i32 layoutVersion,
  2: required i32 namespaceID,
  3: required string clusterID,
  4: required i64 cTime,
}

/** NamespaceInfoProto (HdfsServer.proto); fields 2 and 6 are not carried. */
struct NamespaceInfo {
  1: required string buildVersion,
  3: required string blockPoolID,
  4: required StorageInfo storageInfo,
  5: required string softwareVersion,
  7: optional HAServiceState state,
}

/** CheckpointSignatureProto (HdfsServer.proto). */
struct CheckpointSignature {
  1: required string blockPoolId,
  2: required i64 mostRecentCheckpointTxId,
  3: required i64 curSegmentTxId,
  4: required StorageInfo storageInfo,
}

/** HAServiceStateProto. */
enum HAServiceState {
  INITIALIZING = 0,
  ACTIVE = 1,
  STANDBY = 2,
  OBSERVER = 3,
}

/** HARequestSource. */
enum HARequestSource {
  REQUEST_BY_USER = 0,
  REQUEST_BY_USER_FORCED = 1,
  REQUEST_BY_ZKFC = 2,
}

/** HAStateChangeRequestInfoProto. */
struct HAStateChangeRequestInfo {
  1: required HARequestSource reqSource,
}

// --------------------------------------------------------------- responses

/** CreateResponseProto. */
struct CreateResponse {
  1: optional HdfsFileStatus fs,
}

/** GetFileInfoResponseProto: fs is absent when the path does not exist. */
struct GetFileInfoResponse {
  1: optional HdfsFileStatus fs,
}

/** GetListingResponseProto: dirList is absent when the path does not exist. */
struct GetListingResponse {
  1: optional DirectoryListing dirList,
}

/** GetServiceStatusResponseProto. */
struct GetServiceStatusResponse {
  1: required HAServiceState state,
  2: optional bool readyToBecomeActive,
  3: optional string notReadyReason,
}

// ------------------------------------------------------------------ errors

/**
 * Every failure of a NameNode call: the Java class name of the exception
 * (e.g. java.io.FileNotFoundException, org.apache.hadoop.fs.
 * PathIsNotEmptyDirectoryException) and its message.
 */
exception RemoteException {
  1: required string className,
  2: required string message,
}

/** RollingUpgradeInfoProto (times in ms, 0: not started / not finalized). */
struct RollingUpgradeInfo {
  1: required string blockPoolId,
  2: required i64 startTime,
  3: required i64 finalizeTime,
  4: required bool createdRollbackImage,
}

struct RollingUpgradeResponse {
  1: optional RollingUpgradeInfo rollingUpgradeInfo,
}

// ---------------------------------------------------------------- services

/** ClientNamenodeProtocol: clients (dfs, dfsadmin) to the NameNode. */
service ClientProtocol {
  /** createFlag: Hadoop's CreateFlagProto bits (CREATE = 1, OVERWRITE = 2). */
  CreateResponse create(1: required string src,
                        2: required FsPermission masked,
                        3: required string clientName,
                        4: required i32 createFlag,
                        5: required bool createParent,
                        6: required i32 replication,
                        7: required i64 blockSize)
      throws (1: RemoteException e),

  bool rename(1: required string src, 2: required string dst)
      throws (1: RemoteException e),

  void rename2(1: required string src, 2: required string dst, 3: required bool overwriteDest)
      throws (1: RemoteException e),

  /** Hadoop's "delete", a reserved word in Thrift IDL. */
  bool deletePath(1: required string src, 2: required bool recursive)
      throws (1: RemoteException e),

  bool mkdirs(1: required string src, 2: required FsPermission masked, 3: required bool createParent)
      throws (1: RemoteException e),

  void setPermission(1: required string src, 2: required FsPermission permission)
      throws (1: RemoteException e),

  /** An absent username or groupname leaves it unchanged. */
  void setOwner(1: required string src, 2: optional string username, 3: optional string groupname)
      throws (1: RemoteException e),

  /** -1 leaves a time unchanged. */
  void setTimes(1: required string src, 2: required i64 mtime, 3: required i64 atime)
      throws (1: RemoteException e),

  GetFileInfoResponse getFileInfo(1: required string src)
      throws (1: RemoteException e),

  /** The entries after startAfter (a local name; "" for the first batch). */
  GetListingResponse getListing(1: required string src,
                                2: required string startAfter,
                                3: required bool needLocation)
      throws (1: RemoteException e),

  /** dfsadmin -rollEdits: returns the first txid of the new segment. */
  i64 rollEdits()
      throws (1: RemoteException e),

  /** dfsadmin -saveNamespace: whether an image was saved (no safe mode here). */
  bool saveNamespace(1: optional i64 timeWindow = 0, 2: optional i64 txGap = 0)
      throws (1: RemoteException e),

  /**
   * dfsadmin -finalizeUpgrade: remove the previous/ state of an upgrade (with HA, the
   * active also the JournalNodes'). Unlike Hadoop's (void): whether this NameNode had an
   * upgrade to finalize.
   */
  bool finalizeUpgrade()
      throws (1: RemoteException e),

  /** dfsadmin -upgrade query: whether the upgrade is finalized (no previous/ kept). */
  bool upgradeStatus()
      throws (1: RemoteException e),

  /**
   * dfsadmin -rollingUpgrade: action is QUERY, PREPARE or FINALIZE; the upgrade's info,
   * absent when none is in progress.
   */
  RollingUpgradeResponse rollingUpgrade(1: required string action)
      throws (1: RemoteException e),
  /**
   * Not Hadoop's (haadmin -reconfigureSharedEdits): move the shared edits to the
   * JournalNodes of uri by joint consensus; returns the set now written to.
   */
  string reconfigureSharedEdits(1: required string uri)
      throws (1: RemoteException e),

  /**
   * HDFS-13749: this NameNode's HA state, for any client (the observer read proxy
   * probes it; HAServiceProtocol.getServiceStatus is for a superuser only).
   */
  HAServiceState getHAServiceState()
      throws (1: RemoteException e),

  /**
   * HDFS-13688: the active's current state id (its last written txid); the reply's
   * state context carries it too. A non-active NameNode refuses it.
   */
  i64 msync()
      throws (1: RemoteException e),
}

/** NamenodeProtocol: other NameNodes (standby, bootstrapStandby) to this one. */
service NamenodeProtocol {
  NamespaceInfo versionRequest()
      throws (1: RemoteException e),

  CheckpointSignature rollEditLog()
      throws (1: RemoteException e),

  i64 getMostRecentCheckpointTxId()
      throws (1: RemoteException e),

  i64 getTransactionID()
      throws (1: RemoteException e),
}

/** HAServiceProtocol: haadmin and the failover controller to a NameNode. */
service HAServiceProtocol {
  void monitorHealth()
      throws (1: RemoteException e),

  void transitionToActive(1: required HAStateChangeRequestInfo reqInfo)
      throws (1: RemoteException e),

  void transitionToStandby(1: required HAStateChangeRequestInfo reqInfo)
      throws (1: RemoteException e),

  /** HDFS-12976: standby -> observer. */
  void transitionToObserver(1: required HAStateChangeRequestInfo reqInfo)
      throws (1: RemoteException e),

  GetServiceStatusResponse getServiceStatus()
      throws (1: RemoteException e),
}
