"""The failover controller of one NameNode (Hadoop's DFSZKFailoverController); ``hdfs-py zkfc``
(:mod:`hadoop_qjm.cli.zkfc`) runs it.

::

    hdfs-py [--config DIR] [-D k=v] zkfc [-nnid NNID]
    hdfs-py [--config DIR] [-D k=v] zkfc [-nnid NNID] -formatZK [-force] [-nonInteractive]

The NameNode is the one of this host (``dfs.ha.namenode.id``, ``-nnid``, or the one whose
RPC address is an address of this host, as for ``namenode``). The daemon checks its
configuration, that ZooKeeper answers and that the parent znode exists, serves
ZKFCProtocol on ``dfs.ha.zkfc.port`` (8019) of the NameNode's RPC host, prints
``ZKFailoverController started pid=… rpc=HOST:PORT nn=NNID``, then monitors and elects
until SIGTERM (:class:`~hadoop_qjm.ha.zk_failover_controller.ZKFailoverController`).

Exit status, as Hadoop's ZKFailoverController: 0; 1 any other error (one line);
2 ``-formatZK`` refused (the znode exists and the answer was no, or ``-nonInteractive``);
3 the parent znode does not exist ("run with -formatZK"); 4 no usable fencing method;
5 automatic failover is not enabled; 6 ZooKeeper could not be reached.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from hadoop_qjm.common.exceptions import (
    ConfigurationError,
    IOException,
)
from hadoop_qjm.conf import Configuration
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.ha.election_rules import ActiveNodeInfo
from hadoop_qjm.ha.zk_failover_controller import ZKFailoverController, ZKFCSettings
from hadoop_qjm.namenode.ha.ha_util import (
    NameNodeAddress,
    get_nameservice_id,
    ha_namenodes,
    is_ha_enabled,
    resolve_ha_conf,
    zkfc_address,
)

__all__ = [
    "ERR_CODE_AUTO_FAILOVER_NOT_ENABLED",
    "ERR_CODE_FORMAT_DENIED",
    "ERR_CODE_NO_FENCER",
    "ERR_CODE_NO_PARENT_ZNODE",
    "ERR_CODE_NO_ZK",
    "NNHAServiceTarget",
    "create_controller",
    "format_zk",
    "ha_bind_host",
]

LOG = logging.getLogger(__name__)

# ZKFailoverController's exit codes.
ERR_CODE_FORMAT_DENIED = 2
ERR_CODE_NO_PARENT_ZNODE = 3
ERR_CODE_NO_FENCER = 4
ERR_CODE_AUTO_FAILOVER_NOT_ENABLED = 5
ERR_CODE_NO_ZK = 6


@dataclass(frozen=True)
class NNHAServiceTarget:
    """One NameNode of the nameservice, as a failover controller addresses it."""

    nameservice: str
    nnid: str
    address: tuple[str, int]
    zkfc_address: tuple[str, int]

    @classmethod
    def of(cls, conf: Configuration, nameservice: str, nn: NameNodeAddress) -> NNHAServiceTarget:
        return cls(nameservice, nn.nnid, nn.client_rpc, zkfc_address(conf, nameservice, nn))

    def info(self) -> ActiveNodeInfo:
        return ActiveNodeInfo(self.nameservice, self.nnid, *self.address, self.zkfc_address[1])

    def __str__(self) -> str:
        return f"NameNode {self.nnid} at {self.address[0]}:{self.address[1]}"


def _targets(conf: Configuration, nameservice: str) -> list[NNHAServiceTarget]:
    return [NNHAServiceTarget.of(conf, nameservice, nn) for nn in ha_namenodes(conf, nameservice)]


def data_to_target(targets: Sequence[NNHAServiceTarget], data: bytes) -> NNHAServiceTarget:
    """The target the lock or breadcrumb data names (DFSZKFailoverController.dataToTarget):
    its NameNode id must be configured and its RPC address the one configured for it."""
    try:
        info = ActiveNodeInfo.from_bytes(data)
    except ValueError as e:
        raise IOException(f"Unreadable data in ZooKeeper ({e}): {data.hex()}") from e
    for target in targets:
        if target.nnid == info.namenode_id and target.nameservice == info.nameservice_id:
            if target.address != (info.hostname, info.port):
                raise IOException(
                    f"Mismatched address stored in ZK for {target}: stored {info.hostname}:"
                    f"{info.port}, our configuration says {target.address[0]}:{target.address[1]}"
                )
            # The controller's port as that controller wrote it (Hadoop's dataToTarget).
            return dataclasses.replace(target, zkfc_address=(target.address[0], info.zkfc_port))
    raise IOException(f"ZooKeeper names {info}, which is not a NameNode of this nameservice")


def create_controller(
    conf: Configuration, nnid: str | None = None, *, fencing: bool = True
) -> tuple[ZKFailoverController, Configuration]:
    """The controller of NameNode ``nnid`` (else this host's) and that NameNode's
    configuration (its suffixed keys resolved); configuration errors are ConfigurationError
    (one line). ``fencing=False`` (``-formatZK``) leaves ``dfs.ha.fencing.methods`` unread.
    Nothing is started."""
    from hadoop_qjm.ha.node_fencer import NodeFencer
    from hadoop_qjm.ha.zkfc_protocol import ZKFCProxy
    from hadoop_qjm.namenode.protocol.client import NameNodeProxy, client_socket_factory

    nameservice = get_nameservice_id(conf)
    if not is_ha_enabled(conf, nameservice):
        raise ConfigurationError(
            "HA is not enabled for this namenode: set dfs.nameservices and "
            "dfs.ha.namenodes.<nameservice> to two or more NameNodes"
        )
    # Every NameNode's addresses from the configuration as written: the resolved one has
    # this NameNode's suffixed values (its dfs.ha.zkfc.port) on the plain keys.
    targets = _targets(conf, nameservice)  # type: ignore[arg-type]
    conf, _, nnid = resolve_ha_conf(conf, nnid)
    local = next(t for t in targets if t.nnid == nnid)
    settings = ZKFCSettings.from_conf(conf, nameservice)  # type: ignore[arg-type]
    fencer = NodeFencer.create(conf) if fencing else None
    socket_factory = client_socket_factory(conf)

    def proxy(address: tuple[str, int], timeout_s: float) -> NameNodeProxy:
        return NameNodeProxy(
            *address,
            timeout_s=timeout_s,
            connect_timeout_s=min(timeout_s, 20.0),
            socket_factory=socket_factory,
        )

    def zkfc_proxy(address: tuple[str, int], timeout_s: float) -> ZKFCProxy:
        return ZKFCProxy(
            *address,
            timeout_s,
            connect_timeout_s=min(timeout_s, 20.0),
            socket_factory=socket_factory,
        )

    def fence(target: Any) -> bool:
        if fencer is None:
            raise IOException("this controller has no fencing methods (it only formats ZooKeeper)")
        return fencer.fence(_fence_target(target))

    controller = ZKFailoverController(
        settings,
        local,
        [t for t in targets if t.nnid != nnid],
        proxy_factory=proxy,
        zkfc_proxy_factory=zkfc_proxy,
        fence=fence,
        data_to_target=lambda data: data_to_target(targets, data),
    )
    return controller, conf


def _fence_target(target: NNHAServiceTarget) -> Any:
    from hadoop_qjm.ha.node_fencer import FenceTarget

    return FenceTarget(target.nameservice, target.nnid, *target.address)


def format_zk(
    controller: ZKFailoverController,
    force: bool,
    interactive: bool,
    stdin: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """ZKFailoverController.formatZK: create the parent znode; if it exists, clear it first
    — only with ``-force`` or a yes (never with ``-nonInteractive``). Says on stdout what
    it deleted and created, in ActiveStandbyElector's words ("Successfully created
    /hadoop-ha/mycluster in ZK.")."""
    from hadoop_qjm.namenode.name_node_commands import confirm_prompt

    stdin = stdin or sys.stdin
    stderr = stderr or sys.stderr
    elector = controller.elector
    parent = elector.parent
    if elector.parent_znode_exists():
        if not force:
            if not interactive:
                print(
                    f"zkfc -formatZK: the parent znode {parent} already exists; not formatting "
                    "in non-interactive mode (use -force to clear it)",
                    file=stderr,
                )
                return ERR_CODE_FORMAT_DENIED
            stderr.write(
                "===============================================\n"
                f"The configured parent znode {parent} already exists.\n"
                "Are you sure you want to clear all failover information from\n"
                "ZooKeeper?\n"
                "WARNING: Before proceeding, ensure that all HDFS services and\n"
                "failover controllers are stopped!\n"
                "===============================================\n"
            )
            if not confirm_prompt(f"Proceed formatting {parent}?", stdin, stderr):
                return ERR_CODE_FORMAT_DENIED
        elector.clear_parent_znode()
        print(f"Successfully deleted {parent} from ZK.")
    elector.ensure_parent_znode()
    print(f"Successfully created {parent} in ZK.")
    return 0


def ha_bind_host(conf: Configuration, local: NNHAServiceTarget) -> str:
    """The controller listens on its NameNode's RPC host (the wildcard if that is one)."""
    host = conf.get_socket_address(
        keys.DFS_NAMENODE_RPC_ADDRESS_KEY,
        keys.DFS_NAMENODE_RPC_ADDRESS_DEFAULT,
        keys.DFS_NAMENODE_RPC_PORT_DEFAULT,
    )[0]
    return host or local.address[0]
