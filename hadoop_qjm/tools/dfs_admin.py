"""``hdfs-py dfsadmin``: NameNode administration over ClientProtocol (Hadoop's DFSAdmin).

::

    hdfs-py dfsadmin [-fs URI] [-D key=value] -rollEdits        finalize the segment, start the next
    hdfs-py dfsadmin [-fs URI] [-D key=value] -saveNamespace [-beforeShutdown]
    hdfs-py dfsadmin [-fs URI] [-D key=value] -rollingUpgrade [<query|prepare|finalize>]

The NameNode is ``fs.defaultFS`` (``hdfs://host:port``; ``-fs URI`` sets it for this
command, Hadoop's generic option) or ``dfs.namenode.rpc-address``. For ``hdfs://<nameservice>``
of an HA nameservice, as Hadoop's DFSAdmin:

* ``-saveNamespace`` goes to *every* NameNode of the nameservice, in
  ``dfs.ha.namenodes.<ns>`` order (HAUtil.getProxiesForAllNameNodesInNameservice), and
  prints one line for each — ``Save namespace successful for host:port`` (``No extra
  checkpoint has been made for host:port``, ``Save namespace failed for host:port``). A
  NameNode that fails does not stop the others; then the errors are printed and the exit
  status is 1.
* ``-rollEdits`` goes to the active NameNode only (a standby answers StandbyException and
  the client fails over; it is not idempotent, so a connection lost mid-call is reported,
  not retried).

* ``-rollingUpgrade`` goes to the active NameNode (docs/ha.md "Upgrades"): it prints
  ``PREPARE rolling upgrade ...`` (QUERY, FINALIZE) and then DFSAdmin's message —
  "Preparing for upgrade. Data is being saved for rollback." until the rollback image
  exists, "Proceed with rolling upgrade:" once it does, "Rolling upgrade is finalized."
  after finalize, "There is no rolling upgrade in progress or rolling upgrade has already
  been finalized." when there is none — followed by the upgrade's block pool and times.

Output is otherwise DFSAdmin's ("Successfully rolled edit logs.", "Save namespace
successful"); an error is one line ``<command>: <message>`` and exit 1; a malformed
command line exit 2. Unlike Hadoop, -saveNamespace needs no safe mode (this NameNode has
none): the image is saved under the namesystem lock, between two segments — on a standby
at the last txid it applied.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

from hadoop_qjm.common.exceptions import (
    HadoopException,
    IllegalArgumentException,
    IOException,
    UsageError,
    one_line_message,
)
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode.ha.failover_proxy import ha_nameservice_of_uri, namenode_proxy_from_conf
from hadoop_qjm.namenode.ha.ha_util import NameNodeAddress, ha_namenodes
from hadoop_qjm.namenode.protocol.client import NameNodeProxy, client_socket_factory
from hadoop_qjm.namenode.protocol.messages import HAServiceState
from hadoop_qjm.namenode.rolling_upgrade import RollingUpgradeAction, rolling_upgrade_message
from hadoop_qjm.tools.generic_options import GENERIC_USAGE, parse_generic_options

__all__ = ["USAGE", "multiple_io_exception", "run"]

USAGE = f"""\
Usage: hdfs-py [--config DIR] dfsadmin {GENERIC_USAGE}
	[-rollEdits]
	[-saveNamespace [-beforeShutdown]]
	[-finalizeUpgrade]
	[-upgrade <query | finalize>]
	[-rollingUpgrade [<query|prepare|finalize>]]
"""

#: The refusal of -finalizeUpgrade where no NameNode keeps an upgrade's previous state.
NO_UPGRADE = "There is no upgrade in progress to finalize: no NameNode keeps a previous state."


def _roll_edits(conf, args: list[str]) -> None:
    if args:
        raise UsageError(f"-rollEdits: unexpected argument '{args[0]}'")
    # The active only, as Hadoop's (DistributedFileSystem.rollEdits through the failover proxy).
    with namenode_proxy_from_conf(conf) as proxy:
        txid = proxy.roll_edits()
    print("Successfully rolled edit logs.")
    print(f"New segment starts at txid {txid}")


def _save_namespace(conf, args: list[str]) -> None:
    time_window = tx_gap = 0
    for arg in args:
        if arg != "-beforeShutdown":
            raise UsageError(f"-saveNamespace: unexpected argument '{arg}'")
        # Only checkpoint if the newest image is older than one checkpoint period or
        # more than checkpoint.txns behind (DFSAdmin.saveNamespace).
        time_window = conf.get_time_duration(
            keys.DFS_NAMENODE_CHECKPOINT_PERIOD_KEY,
            keys.DFS_NAMENODE_CHECKPOINT_PERIOD_DEFAULT,
            "s",
        )
        tx_gap = conf.get_int(
            keys.DFS_NAMENODE_CHECKPOINT_TXNS_KEY, keys.DFS_NAMENODE_CHECKPOINT_TXNS_DEFAULT
        )

    def save(proxy: Any, suffix: str) -> None:
        if proxy.save_namespace(time_window, tx_gap):
            print(f"Save namespace successful{suffix}")
        else:
            print(f"No extra checkpoint has been made{suffix}")

    _on_the_namenodes(conf, _nameservice_namenodes(conf), save, "Save namespace failed for")


def _finalize_upgrade(conf, args: list[str]) -> None:
    """DFSAdmin.finalizeUpgrade: with HA every NameNode (one must be active: it finalizes
    the JournalNodes too), "Finalize upgrade successful[ for host:port]" for each that had
    an upgrade; none had one: NO_UPGRADE, nothing changed."""
    if args:
        raise UsageError(f"-finalizeUpgrade: unexpected argument '{args[0]}'")
    finalized: list[bool] = []

    def finalize(proxy: Any, suffix: str) -> None:
        finalized.append(proxy.finalize_upgrade())
        if finalized[-1]:
            print(f"Finalize upgrade successful{suffix}")

    namenodes = _nameservice_namenodes(conf)
    if namenodes is None:
        with namenode_proxy_from_conf(conf) as proxy:
            finalize(proxy, "")
    else:
        states: list[Any] = []
        _on_every_namenode(
            conf,
            namenodes,
            lambda p, _: states.append(p.get_service_status().state),
            "Cannot reach",
        )
        if HAServiceState.ACTIVE not in states:
            raise IOException("Cannot finalize with no NameNode active")
        _on_every_namenode(conf, namenodes, finalize, "Finalize upgrade failed for")
    if not any(finalized):
        raise IOException(NO_UPGRADE)


def _upgrade(conf, args: list[str]) -> None:
    """DFSAdmin.upgrade: ``query`` prints "Upgrade finalized" or "Upgrade not finalized"
    (with HA, " for host:port" for each NameNode); ``finalize`` is -finalizeUpgrade."""
    if len(args) != 1 or args[0].lower() not in ("query", "finalize"):
        raise UsageError("-upgrade: expected query or finalize")
    if args[0].lower() == "finalize":
        _finalize_upgrade(conf, [])
        return

    def query(proxy: Any, suffix: str) -> None:
        done = proxy.upgrade_status()
        print(f"Upgrade {'finalized' if done else 'not finalized'}{suffix}")

    namenodes = _nameservice_namenodes(conf)
    _on_the_namenodes(conf, namenodes, query, "Getting upgrade status failed for")


def _rolling_upgrade(conf, args: list[str]) -> None:
    # DFSAdmin.RollingUpgradeCommand: one optional action; "" is QUERY.
    if len(args) > 1:
        raise UsageError(f"-rollingUpgrade: unexpected argument '{args[1]}'")
    try:
        action = RollingUpgradeAction.from_string(args[0] if args else "")
    except IllegalArgumentException as e:
        raise UsageError(f"-rollingUpgrade: {e}") from None
    print(f"{action.value} rolling upgrade ...")
    with namenode_proxy_from_conf(conf) as proxy:
        info = proxy.rolling_upgrade(action.value)
    print(rolling_upgrade_message(info))


def _nameservice_namenodes(conf) -> list[NameNodeAddress] | None:
    """Every NameNode of the HA nameservice ``fs.defaultFS`` names; None for one NameNode
    (HAUtilClient.isLogicalUri)."""
    default_fs = conf.get_trimmed(keys.FS_DEFAULT_NAME_KEY, keys.FS_DEFAULT_NAME_DEFAULT) or ""
    nameservice = ha_nameservice_of_uri(conf, default_fs)
    return None if nameservice is None else ha_namenodes(conf, nameservice)


def _on_the_namenodes(
    conf,
    namenodes: Sequence[NameNodeAddress] | None,
    call: Callable[[Any, str], None],
    failed: str,
) -> None:
    """``call(proxy, "")`` on the one NameNode (``namenodes`` None), else on each of
    ``namenodes`` as :func:`_on_every_namenode`."""
    if namenodes is None:
        with namenode_proxy_from_conf(conf) as proxy:
            call(proxy, "")
    else:
        _on_every_namenode(conf, namenodes, call, failed)


def _on_every_namenode(
    conf,
    namenodes: Sequence[NameNodeAddress],
    call: Callable[[Any, str], None],
    failed: str,
) -> None:
    """``call(proxy, " for host:port")`` on each NameNode in turn; one that fails gets the
    line ``<failed> host:port`` and the others are still called; then the failures are
    raised together (MultipleIOException)."""
    socket_factory = client_socket_factory(conf)
    errors: list[BaseException] = []
    for nn in namenodes:
        address = nn.rpc_text
        try:
            with NameNodeProxy(*nn.client_rpc, socket_factory=socket_factory) as proxy:
                call(proxy, f" for {address}")
        except (HadoopException, OSError) as e:
            print(f"{failed} {address}")
            errors.append(e)
    if errors:
        raise multiple_io_exception(errors)


def multiple_io_exception(errors: Sequence[BaseException]) -> BaseException:
    """Hadoop's MultipleIOException.createIOException: the one error itself, or an
    IOException "N exceptions [first, second, ...]"."""
    if len(errors) == 1:
        return errors[0]
    listed = ", ".join(one_line_message(e) for e in errors)
    return IOException(f"{len(errors)} exceptions [{listed}]")


_COMMANDS = {
    "-rollEdits": _roll_edits,
    "-saveNamespace": _save_namespace,
    "-finalizeUpgrade": _finalize_upgrade,
    "-upgrade": _upgrade,
    "-rollingUpgrade": _rolling_upgrade,
}


def run(argv: Sequence[str], conf) -> int:
    """``hdfs-py dfsadmin [GENERIC OPTIONS] -COMMAND [ARGS]``; returns the exit status."""
    args = list(argv)
    if not args or args[0] in ("-h", "-help", "--help"):
        print(USAGE, end="", file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    args = parse_generic_options(args, conf)
    if not args:
        raise UsageError("dfsadmin: no command after the generic options (see -help)")
    command = args.pop(0)
    action = _COMMANDS.get(command)
    if action is None:
        raise UsageError(f"{command}: Unknown command (run 'hdfs-py dfsadmin -help')")
    try:
        action(conf, args)
    except UsageError:
        raise
    except (HadoopException, OSError) as e:
        print(f"{command.lstrip('-')}: {one_line_message(e)}", file=sys.stderr)
        return 1
    return 0
