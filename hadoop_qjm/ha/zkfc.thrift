/*
 * ZKFCProtocol: haadmin and the other failover controllers to a ZKFailoverController.
 *
 * A Thrift rendering of Hadoop's ZKFCProtocol.proto, on the same wire as the NameNode's
 * services (namenode.thrift): TBinaryProtocol in TFramedTransport frames, every error the
 * one RemoteException carrying the Java class name and the message. The ZKFC serves it on
 * dfs.ha.zkfc.port (8019) of its NameNode's host; with the project's TLS on, the channel
 * is mutual TLS like every other.
 */

namespace py hadoop_qjm.ha.zkfc

exception RemoteException {
  1: required string className,
  2: required string message,
}

service ZKFCProtocol {
  /**
   * Give up the active role (if held) and stay out of the election for millisToCede ms,
   * so that another node can win it (CedeActiveRequestProto).
   */
  void cedeActive(1: required i32 millisToCede)
      throws (1: RemoteException e),

  /**
   * Make this controller's NameNode active: the current active's controller is asked to
   * cede, and this one waits until it won the election (GracefulFailoverRequestProto).
   */
  void gracefulFailover()
      throws (1: RemoteException e),
}
