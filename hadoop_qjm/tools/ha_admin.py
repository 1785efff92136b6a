"""``hdfs-py haadmin``: manage the HA state of a nameservice's NameNodes (Hadoop's
HAAdmin, DFSHAAdmin and FailoverController).

::

    hdfs-py haadmin [-ns NS] -transitionToActive [--forceactive] [--forcemanual] NNID
    hdfs-py haadmin [-ns NS] -transitionToStandby [--forcemanual] NNID
    hdfs-py haadmin [-ns NS] -transitionToObserver [--forcemanual] NNID
    hdfs-py haadmin [-ns NS] -failover [--forcefence] [--forceactive] [--forcemanual] FROM TO
    hdfs-py haadmin [-ns NS] -getServiceState NNID        prints active | standby | ...
    hdfs-py haadmin [-ns NS] -getAllServiceState          "host:port   state" per NameNode
    hdfs-py haadmin [-ns NS] -checkHealth NNID
    hdfs-py haadmin -help [COMMAND]

A NameNode id is one of ``dfs.ha.namenodes.<ns>`` and is reached at its
``dfs.namenode.rpc-address.<ns>.<nnid>``; the nameservice is ``-ns``, else the one of
the configuration (:func:`~hadoop_qjm.namenode.ha.ha_util.get_nameservice_id`).

``-transitionToActive`` first asks every other NameNode for its state and refuses if one
is active ("transitionToActive: Node nn2 is already active") or cannot be asked; with
``--forceactive`` it does not ask. ``-failover`` (FailoverController.failover): checks
that TO is a healthy standby ready to become active (``--forceactive``: even if not
ready), asks FROM to become standby, then TO to become active; if TO fails and FROM had
gone to standby, FROM is made active again. *Fencing*: Hadoop runs
``dfs.ha.fencing.methods`` when FROM does not go to standby; with the quorum journal the
fence is the epoch (design paper §2.3) — TO's ``newEpoch`` on the JournalNodes makes them
refuse every later write of FROM, and FROM then stops. So when FROM cannot be made
standby (unreachable, or it refuses), the failover stops unless ``--forcefence`` says to
rely on the epoch; ``dfs.ha.fencing.methods`` is not run.

*Automatic failover* (``dfs.ha.automatic-failover.enabled[.<ns>]``): the failover
controllers own the HA state, so ``-transitionToActive`` and ``-transitionToStandby``
are refused unless ``--forcemanual``, which asks for confirmation on stdin and then sends
the request as REQUEST_BY_USER_FORCED (HAAdmin.checkManualStateManagementOK,
confirmForceManual); the NameNode itself refuses a plain user request too.
``-failover FROM TO`` asks TO's failover controller (``dfs.ha.zkfc.port``) for a graceful
failover (HAAdmin.gracefulFailoverThroughZKFCs); ``--forcefence`` and ``--forceactive``
are not supported then.

Output is Hadoop's; every error is one line on stderr and exit status 1 (Hadoop returns
-1, shell status 255), a malformed command line exit 2.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, TextIO

from hadoop_qjm.common.exceptions import (
    AccessControlException,
    HadoopException,
    IllegalArgumentException,
    UsageError,
    one_line_message,
    register_exception,
)
from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.namenode.ha.ha_util import (
    get_nameservice_id,
    ha_namenodes,
    is_automatic_failover_enabled,
    suffixed,
    zkfc_address,
)
from hadoop_qjm.namenode.protocol.client import NameNodeProxy, client_socket_factory
from hadoop_qjm.namenode.protocol.exceptions import (
    HealthCheckFailedException,
    ServiceFailedException,
)
from hadoop_qjm.namenode.protocol.messages import HARequestSource, HAServiceState
from hadoop_qjm.qjournal.client.qjournal_uri import parse_qjournal_uri
from hadoop_qjm.tools.ha_admin_usage import (
    _FORCE_MANUAL_WARNING,
    _MUTATIVE,
    USAGE,
    _help,
    _usage,
)
from hadoop_qjm.tools.reconfigure_shared_edits import switch_when_caught_up

__all__ = ["USAGE", "FailoverFailedException", "HAAdmin", "HAServiceTarget", "run"]

LOG = logging.getLogger(__name__)


@register_exception
class FailoverFailedException(HadoopException):
    """A failover did not complete (FailoverController)."""

    java_name = "org.apache.hadoop.ha.FailoverFailedException"


@dataclass(frozen=True)
class HAServiceTarget:
    """One NameNode of the nameservice (NNHAServiceTarget)."""

    nnid: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"NameNode {self.nnid} at {self.host}:{self.port}"


#: ``factory(host, port, timeout_s)`` -> an HAServiceProtocol client (a NameNodeProxy).
ProxyFactory = Callable[[str, int, float], Any]


def _default_proxy_factory(conf: Any) -> ProxyFactory:
    """NameNodeProxies with the RPC transport ``conf`` asks for (TCP or mutual TLS)."""
    socket_factory = client_socket_factory(conf)
    return lambda host, port, timeout_s: NameNodeProxy(
        host,
        port,
        timeout_s,
        connect_timeout_s=min(timeout_s, 20.0),
        socket_factory=socket_factory,
    )


def _default_zkfc_proxy_factory(conf: Any) -> ProxyFactory:
    """ZKFCProxies (a failover controller's RPC) over the transport ``conf`` asks for."""
    socket_factory = client_socket_factory(conf)

    def make(host: str, port: int, timeout_s: float) -> Any:
        from hadoop_qjm.ha.zkfc_protocol import ZKFCProxy  # thriftpy2 loads its IDL

        return ZKFCProxy(
            host,
            port,
            timeout_s,
            connect_timeout_s=min(timeout_s, 20.0),
            socket_factory=socket_factory,
        )

    return make


class HAAdmin:
    """The commands over the NameNodes of ``conf``'s nameservice (or ``nameservice``)."""

    def __init__(
        self,
        conf: Any,
        nameservice: str | None = None,
        *,
        proxy_factory: ProxyFactory | None = None,
        zkfc_proxy_factory: ProxyFactory | None = None,
        out: TextIO | None = None,
        err: TextIO | None = None,
        stdin: TextIO | None = None,
    ) -> None:
        self.conf = conf
        self.nameservice = nameservice
        self._proxy_factory = proxy_factory or _default_proxy_factory(conf)
        self._zkfc_proxy_factory = zkfc_proxy_factory or _default_zkfc_proxy_factory(conf)
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.stdin = stdin or sys.stdin
        #: Who the state changes come from: the user, or with --forcemanual a user who
        #: insisted (the NameNode lets only that through while automatic failover is on).
        self.request_source = HARequestSource.REQUEST_BY_USER
        self.check_timeout_s = self._timeout(
            keys.HA_FC_CLI_CHECK_TIMEOUT_KEY, keys.HA_FC_CLI_CHECK_TIMEOUT_DEFAULT
        )
        self.new_active_timeout_s = self._timeout(
            keys.HA_FC_NEW_ACTIVE_TIMEOUT_KEY, keys.HA_FC_NEW_ACTIVE_TIMEOUT_DEFAULT
        )
        self.fence_timeout_s = self._timeout(
            keys.HA_FC_GRACEFUL_FENCE_TIMEOUT_KEY, keys.HA_FC_GRACEFUL_FENCE_TIMEOUT_DEFAULT
        )

    def _timeout(self, key: str, default_ms: int) -> float:
        return max(self.conf.get_time_duration(key, default_ms, "ms"), 1) / 1000.0

    # ---- targets ---------------------------------------------------------------------------------
    def _ns(self) -> str:
        nameservice = self.nameservice or get_nameservice_id(self.conf)
        if not nameservice:
            raise IllegalArgumentException(
                f"Unable to determine the nameservice id: set {keys.DFS_NAMESERVICES} or pass -ns"
            )
        return nameservice

    def targets(self) -> list[HAServiceTarget]:
        """Every NameNode of the nameservice, in ``dfs.ha.namenodes.<ns>`` order."""
        return [
            HAServiceTarget(nn.nnid, *nn.client_rpc) for nn in ha_namenodes(self.conf, self._ns())
        ]

    def resolve_target(self, nnid: str) -> HAServiceTarget:
        """The NameNode ``nnid``; IllegalArgumentException as DFSHAAdmin's if unknown."""
        nameservice = self._ns()
        rpc_key = suffixed(keys.DFS_NAMENODE_RPC_ADDRESS_KEY, nameservice, nnid)
        known = self.conf.get_trimmed_strings(
            suffixed(keys.DFS_HA_NAMENODES_KEY_PREFIX, nameservice)
        )
        if nnid not in known or not self.conf.get_trimmed(rpc_key):
            raise IllegalArgumentException(
                f"Unable to determine service address for namenode '{nnid}'"
            )
        return next(target for target in self.targets() if target.nnid == nnid)

    def _call(self, target: HAServiceTarget, timeout_s: float, method: str, *args: Any) -> Any:
        proxy = self._proxy_factory(target.host, target.port, timeout_s)
        try:
            return getattr(proxy, method)(*args)
        finally:
            proxy.close()

    @property
    def _forced(self) -> bool:
        return self.request_source is HARequestSource.REQUEST_BY_USER_FORCED

    def _transition(self, target: HAServiceTarget, timeout_s: float, to_active: bool) -> None:
        method = "transition_to_active" if to_active else "transition_to_standby"
        self._call(target, timeout_s, method, self._forced)

    def transition_to_observer(self, nnid: str) -> int:
        """Make a standby an observer (HAAdmin.transitionToObserver); the NameNode refuses
        one that is active or lacks in-progress tailing, in one line."""
        target = self.resolve_target(nnid)
        if not self.check_manual_state_management_ok(target):
            return 1
        self._call(target, self.check_timeout_s, "transition_to_observer", self._forced)
        return 0

    # ---- automatic failover ----------------------------------------------------------------------
    def automatic_failover(self) -> bool:
        """Whether the nameservice's failover controllers manage its HA state."""
        return is_automatic_failover_enabled(self.conf, self._ns())

    def check_manual_state_management_ok(self, target: HAServiceTarget) -> bool:
        """May this command change ``target``'s state by hand? Not while automatic failover
        is on, unless --forcemanual (HAAdmin.checkManualStateManagementOK)."""
        if not self.automatic_failover():
            return True
        if not self._forced:
            self._error(
                f"Automatic failover is enabled for {target}: refusing to manually manage HA "
                "state, since it may cause a split-brain scenario or other incorrect state; "
                "if you are very sure you know what you are doing, specify the --forcemanual "
                "flag"
            )
            return False
        LOG.warning(
            "Proceeding with manual HA state management even though automatic failover is "
            "enabled for %s",
            target,
        )
        return True

    def confirm_force_manual(self) -> bool:
        """The --forcemanual warning and its question (HAAdmin.confirmForceManual)."""
        from hadoop_qjm.namenode.name_node_commands import confirm_prompt

        self.err.write(_FORCE_MANUAL_WARNING + "\n")
        return confirm_prompt("Are you sure you want to continue?", self.stdin, self.err)

    def zkfc_address(self, target: HAServiceTarget) -> tuple[str, int]:
        """Where ``target``'s failover controller listens (NNHAServiceTarget)."""
        nameservice = self._ns()
        nn = next(nn for nn in ha_namenodes(self.conf, nameservice) if nn.nnid == target.nnid)
        return zkfc_address(self.conf, nameservice, nn)

    def graceful_failover_through_zkfcs(self, dest: HAServiceTarget) -> int:
        """Ask ``dest``'s failover controller to make it active: it asks the active's
        controller to cede, then wins the election (HAAdmin.gracefulFailoverThroughZKFCs)."""
        host, port = self.zkfc_address(dest)
        proxy = self._zkfc_proxy_factory(host, port, self.new_active_timeout_s)
        try:
            proxy.graceful_failover()
        except ServiceFailedException as e:
            self._error(f"Failover failed: {one_line_message(e)}")
            return 1
        finally:
            proxy.close()
        print(f"Failover to {dest} successful", file=self.out)
        return 0

    # ---- commands --------------------------------------------------------------------------------
    def transition_to_active(self, nnid: str, force_active: bool = False) -> int:
        target = self.resolve_target(nnid)
        if not self.check_manual_state_management_ok(target):
            return 1
        if not force_active:
            for other in self.targets():
                if other.nnid == target.nnid:
                    continue
                try:
                    status = self._call(other, self.check_timeout_s, "get_service_status")
                except (HadoopException, OSError) as e:
                    self._error(
                        f"transitionToActive: Unable to determine the state of {other.nnid} "
                        f"({one_line_message(e)}); --forceactive skips this check"
                    )
                    return 1
                if status.state is HAServiceState.ACTIVE:
                    self._error(f"transitionToActive: Node {other.nnid} is already active")
                    return 1
        self._transition(target, self.new_active_timeout_s, True)
        return 0

    def transition_to_standby(self, nnid: str) -> int:
        target = self.resolve_target(nnid)
        if not self.check_manual_state_management_ok(target):
            return 1
        self._transition(target, self.new_active_timeout_s, False)
        return 0

    def get_service_state(self, nnid: str) -> int:
        status = self._call(self.resolve_target(nnid), self.check_timeout_s, "get_service_status")
        print(status.state, file=self.out)
        return 0

    def get_all_service_state(self) -> int:
        targets = self.targets()
        if not targets:
            self._error("Failed to get service IDs")
            return 1
        for target in targets:
            address = f"{target.host}:{target.port}"
            try:
                status = self._call(target, self.check_timeout_s, "get_service_status")
                state = str(status.state)
            except (HadoopException, OSError) as e:
                state = f"Failed to connect: {one_line_message(e)}"
            print(f"{address:<50} {state:<10}".rstrip(), file=self.out)
        return 0

    def reconfigure_shared_edits(self, uri: str) -> int:
        """Tell the active NameNode to move its shared edits to ``uri`` (joint consensus)."""
        for target in self.targets():
            try:
                status = self._call(target, self.check_timeout_s, "get_service_status")
            except AccessControlException:
                raise  # not "no active NameNode": this caller may not ask (a superuser only)
            except (HadoopException, OSError):
                continue
            if status.state is HAServiceState.ACTIVE:
                # One ask waits for two rolls and the JournalNodes' answers.
                ask = partial(self._call, target, 120.0, "reconfigure_shared_edits", uri)
                now_on = switch_when_caught_up(ask, self.out, self.conf)
                print(f"{target}: the shared edits are now on {now_on}", file=self.out)
                print(
                    f"Now set dfs.namenode.shared.edits.dir to {uri} in the configuration of "
                    "every NameNode (and of the JournalNodes).",
                    file=self.out,
                )
                return 0
        self._error("No active NameNode: make one active first (-transitionToActive)")
        return 1

    def check_health(self, nnid: str) -> int:
        try:
            self._call(self.resolve_target(nnid), self.check_timeout_s, "monitor_health")
        except HealthCheckFailedException as e:
            self._error(f"Health check failed: {one_line_message(e)}")
            return 1
        return 0

    def failover(
        self, from_nnid: str, to_nnid: str, force_fence: bool = False, force_active: bool = False
    ) -> int:
        source = self.resolve_target(from_nnid)
        dest = self.resolve_target(to_nnid)
        if self.automatic_failover():
            if force_fence or force_active:
                # --forceactive makes no sense: an unhealthy NameNode's controller would
                # quit the election again at once; --forcefence has no use (HAAdmin).
                self._error(
                    "forcefence and forceactive flags not supported with auto-failover enabled."
                )
                return 1
            return self.graceful_failover_through_zkfcs(dest)
        try:
            self._failover(source, dest, force_fence, force_active)
        except FailoverFailedException as e:
            self._error(f"Failover failed: {one_line_message(e)}")
            return 1
        print(f"Failover from {from_nnid} to {to_nnid} successful", file=self.out)
        return 0

    def _failover(
        self,
        source: HAServiceTarget,
        dest: HAServiceTarget,
        force_fence: bool,
        force_active: bool,
    ) -> None:
        self._pre_failover_checks(source, dest, force_active)
        # Graceful fencing: ask the old active to step down.
        try:
            self._transition(source, self.fence_timeout_s, False)
            graceful = True
        except (HadoopException, OSError) as e:
            graceful = False
            if not force_fence:
                raise FailoverFailedException(
                    f"Unable to make {source} standby ({one_line_message(e)}). Once {dest.nnid} is "
                    f"active its new epoch on the JournalNodes fences {source.nnid}; rerun "
                    "with --forcefence to go ahead on that fence alone"
                ) from e
            self._error(
                f"Unable to make {source} standby ({one_line_message(e)}); going ahead "
                f"(--forcefence): {dest.nnid}'s new epoch on the JournalNodes fences it"
            )
        try:
            self._transition(dest, self.new_active_timeout_s, True)
        except (HadoopException, OSError) as e:
            message = f"Unable to failover to {dest} ({one_line_message(e)})"
            if graceful:
                # The old active stepped down cleanly: put it back (FailoverController's
                # failback, which first makes sure the new one is not half active).
                try:
                    try:
                        self._transition(dest, self.fence_timeout_s, False)
                    except (HadoopException, OSError):
                        pass
                    self._transition(source, self.new_active_timeout_s, True)
                    message += f". Failed back to {source}"
                except (HadoopException, OSError) as fe:
                    message += f". Failback to {source} failed ({one_line_message(fe)})"
            raise FailoverFailedException(message) from e

    def _pre_failover_checks(
        self, source: HAServiceTarget, dest: HAServiceTarget, force_active: bool
    ) -> None:
        if (source.host, source.port) == (dest.host, dest.port):
            raise FailoverFailedException("Can't failover a service to itself")
        try:
            status = self._call(dest, self.check_timeout_s, "get_service_status")
        except (HadoopException, OSError) as e:
            raise FailoverFailedException(
                f"Unable to get service state for {dest}: {one_line_message(e)}"
            ) from e
        if status.state is not HAServiceState.STANDBY:
            raise FailoverFailedException(f"Can't failover to an {status.state} service")
        if status.ready_to_become_active is False:
            reason = status.not_ready_reason or "no reason given"
            if not force_active:
                raise FailoverFailedException(f"{dest} is not ready to become active: {reason}")
            self._error(f"{dest} is not ready to become active ({reason}); forcing it")
        try:
            self._call(dest, self.check_timeout_s, "monitor_health")
        except HealthCheckFailedException as e:
            raise FailoverFailedException(
                f"Can't failover to an unhealthy service: {one_line_message(e)}"
            ) from e
        except (HadoopException, OSError) as e:
            raise FailoverFailedException(f"Got an IO exception: {one_line_message(e)}") from e

    def _error(self, line: str) -> None:
        print(line, file=self.err)

    # ---- the command line ------------------------------------------------------------------------
    def run(self, argv: Sequence[str]) -> int:
        """Run one command; returns the exit status (see the module docstring)."""
        args = list(argv)
        if not args:
            print(USAGE, end="", file=self.err)
            return 2
        command, rest = args[0], args[1:]
        if not command.startswith("-"):
            raise UsageError(f"Bad command '{command}': expected command starting with '-'")
        try:
            return self._run(command, rest)
        except UsageError:
            raise
        except IllegalArgumentException as e:
            self._error(f"Illegal argument: {one_line_message(e)}")
        except (HadoopException, OSError) as e:
            self._error(f"Operation failed: {one_line_message(e)}")
        return 1

    def _run(self, command: str, rest: list[str]) -> int:
        name = command[1:]
        if command in _MUTATIVE and "--forcemanual" in rest:
            rest = [a for a in rest if a != "--forcemanual"]
            if not self.confirm_force_manual():
                self._error("Aborted")
                return 1
            # The NameNodes honour it even though their controllers manage their state.
            self.request_source = HARequestSource.REQUEST_BY_USER_FORCED
        if command == "-transitionToActive":
            force_active = "--forceactive" in rest
            ids = [a for a in rest if a != "--forceactive"]
            if len(ids) != 1 or any(a.startswith("-") for a in ids):
                raise UsageError(f"{name}: incorrect number of arguments ({_usage(command)})")
            return self.transition_to_active(ids[0], force_active)
        single = ("-transitionToStandby", "-transitionToObserver", "-getServiceState")
        if command in (*single, "-checkHealth"):
            if len(rest) != 1 or rest[0].startswith("-"):
                raise UsageError(f"{name}: incorrect number of arguments ({_usage(command)})")
            if command == "-transitionToStandby":
                return self.transition_to_standby(rest[0])
            if command == "-transitionToObserver":
                return self.transition_to_observer(rest[0])
            if command == "-getServiceState":
                return self.get_service_state(rest[0])
            return self.check_health(rest[0])
        if command == "-getAllServiceState":
            if rest:
                raise UsageError(f"{name}: incorrect number of arguments ({_usage(command)})")
            return self.get_all_service_state()
        if command == "-failover":
            flags = {a for a in rest if a.startswith("-")}
            ids = [a for a in rest if not a.startswith("-")]
            if flags - {"--forcefence", "--forceactive"} or len(ids) != 2:
                raise UsageError(f"{name}: incorrect arguments ({_usage(command)})")
            return self.failover(ids[0], ids[1], "--forcefence" in flags, "--forceactive" in flags)
        if command == "-reconfigureSharedEdits":
            if len(rest) != 1 or not rest[0].startswith("qjournal://"):
                raise UsageError(f"{name}: needs one qjournal:// URI ({_usage(command)})")
            try:  # checked here, before any NameNode is asked
                parse_qjournal_uri(rest[0])
            except IllegalArgumentException as e:
                raise UsageError(f"{name}: {e}") from None
            return self.reconfigure_shared_edits(rest[0])
        if command in ("-help", "-h", "--help"):
            return _help(rest, self.out)
        raise UsageError(f"{name}: Unknown command (run 'hdfs-py haadmin -help')")


def run(argv: Sequence[str], conf: Any) -> int:
    """``hdfs-py haadmin [-ns NS] -COMMAND ARGS``; returns the exit status."""
    args = list(argv)
    if args and args[0] in ("-h", "-help", "--help"):
        return _help(args[1:], sys.stdout)
    nameservice = None
    if args and args[0] == "-ns":
        if len(args) < 2 or args[1].startswith("-"):
            raise UsageError("-ns needs a nameservice id")
        nameservice, args = args[1], args[2:]
    return HAAdmin(conf, nameservice).run(args)
