"""``sbin/start-dfs-py.sh`` and ``stop-dfs-py.sh``, as Hadoop's ``start-dfs.sh``: every
daemon of the cluster the configuration describes, each on its host: the JournalNodes of
``dfs.namenode.shared.edits.dir``, the NameNodes of the nameservice, and their ZKFCs when
automatic failover is on. A daemon of this host is started directly
(:mod:`hadoop_qjm.tools.daemon_control`); one of another host over ``ssh`` with the same
sbin script and configuration directory there, as Hadoop assumes the same layout on every
host. Stopping goes by the pid files only, in the reverse order.

Environment (besides daemon_control's): ``HADOOP_SSH_OPTS`` (``-o BatchMode=yes -o
ConnectTimeout=10``), ``HADOOP_SSH_LOCAL=true`` to reach this host's daemons over ``ssh`` too
(Hadoop's start-dfs.sh always uses ssh), and ``HADOOP_QJM_SBIN``, the sbin directory on
every host (set by the scripts).
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass

from hadoop_qjm.common.exceptions import UsageError
from hadoop_qjm.tools import daemon_control as dc
from hadoop_qjm.tools import namenode_daemons as nd

__all__ = ["DfsStep", "other_hosts_namenodes", "plan_dfs", "run_dfs_action", "main"]

DEFAULT_SSH_OPTS = "-o BatchMode=yes -o ConnectTimeout=10"
SSH_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class DfsStep:
    """One daemon (or, for ``journalnodes``, this host's JournalNodes) to start or stop."""

    kind: str  # "journalnodes", "namenode" or "zkfc"
    host: str
    local: bool
    ident: str
    nnid: str | None = None

    def describe(self) -> str:
        what = {"journalnodes": "JournalNodes", "namenode": "NameNode", "zkfc": "ZKFC"}[self.kind]
        return f"{what}{' ' + self.nnid if self.nnid else ''} on {self.host}"


def plan_dfs(
    conf, base_ident: str, is_local_host: Callable[[str], bool], ssh_local: bool = False
) -> list[DfsStep]:
    """The start order: JournalNodes (one step per host), NameNodes, then ZKFCs. Of the
    NameNodes on this machine, only the one ``dfs.ha.namenode.id`` names when the
    configuration sets it (:func:`other_hosts_namenodes`); their names are
    :mod:`hadoop_qjm.tools.namenode_daemons`' (``<ident>-<nnid>`` when several share this
    machine), the ones ``hadoop-daemon-py.sh`` gives them. A daemon reached over ssh is
    named there, by the same rule."""
    from hadoop_qjm.namenode.ha import ha_util
    from hadoop_qjm.qjournal.client.qjournal_uri import parse_qjournal_uri
    from hadoop_qjm.qjournal.server.journal_peers import shared_edits_uri

    def local(host: str) -> bool:
        return not ssh_local and is_local_host(host)

    steps: list[DfsStep] = []
    uri = shared_edits_uri(conf, None)
    if uri:
        jn_hosts = dict.fromkeys(host for host, _ in parse_qjournal_uri(uri).addresses)
        if any(local(h) for h in jn_hosts):
            steps.append(DfsStep("journalnodes", "this host", True, base_ident))
        steps += [DfsStep("journalnodes", h, False, base_ident) for h in jn_hosts if not local(h)]
    nameservice = ha_util.get_nameservice_id(conf)
    if ha_util.is_ha_enabled(conf, nameservice):
        namenodes = [(nn.nnid, nn.client_rpc[0]) for nn in ha_util.ha_namenodes(conf, nameservice)]
    else:
        from hadoop_qjm.conf import dfs_config_keys as keys

        address = conf.get(keys.DFS_NAMENODE_RPC_ADDRESS_KEY, "0.0.0.0:8020")
        host = address.rpartition(":")[0] or address
        namenodes = [(None, "127.0.0.1" if host in ("0.0.0.0", "") else host)]
    local_ids = nd.local_namenode_ids(conf, is_local_host)
    others = other_hosts_namenodes(conf, is_local_host)
    namenodes = [(nnid, host) for nnid, host in namenodes if nnid not in others]
    kinds = ["namenode"]
    if nameservice and ha_util.is_automatic_failover_enabled(conf, nameservice):
        kinds.append("zkfc")
    for kind in kinds:
        for nnid, host in namenodes:
            ident = nd.daemon_ident(base_ident, nnid, local_ids) if local(host) else base_ident
            steps.append(DfsStep(kind, host, local(host), ident, nnid))
    if not steps:
        raise UsageError("the configuration names no JournalNode and no NameNode")
    return steps


def other_hosts_namenodes(conf, is_local_host: Callable[[str], bool]) -> list[str]:
    """The NameNodes on this machine that are not this configuration's: all but the one
    ``dfs.ha.namenode.id`` names, when it names one of them (one configuration directory per
    host, several hosts on one machine); none when it is unset."""
    local_ids = nd.local_namenode_ids(conf, is_local_host)
    own = nd.own_namenode_id(conf)
    return [nnid for nnid in local_ids if nnid != own] if own in local_ids else []


def _remote_command(step: DfsStep, action: str, sbin: str, conf_dir: str | None) -> str:
    config = ["--config", conf_dir] if conf_dir else []
    if step.kind == "journalnodes":
        words = [os.path.join(sbin, f"{action}-journalnodes.sh"), *config]
    else:
        words = [os.path.join(sbin, "hadoop-daemon-py.sh"), *config, action, step.kind]
        if step.nnid:  # stop too: the far side names the pid file by it
            words += ["-nnid", step.nnid]
    return f"HADOOP_IDENT_STRING={shlex.quote(step.ident)} " + " ".join(
        shlex.quote(w) for w in words
    )


def _ssh(host: str, command: str, ssh_opts: str) -> int:
    """Run ``command`` on ``host``; its lines are shown prefixed with the host, as Hadoop's
    workers.sh does."""
    argv = ["ssh", *shlex.split(ssh_opts), host, command]
    try:
        result = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=SSH_TIMEOUT_S
        )
    except FileNotFoundError:
        raise UsageError("ssh is not installed: apt-get install -y openssh-client") from None
    except subprocess.TimeoutExpired:
        print(f"{host}: ssh did not finish within {SSH_TIMEOUT_S:g}s", file=sys.stderr, flush=True)
        return 1
    for line in result.stdout.splitlines():
        print(f"{host}: {line}", flush=True)
    for line in result.stderr.splitlines():
        print(f"{host}: {line}", file=sys.stderr, flush=True)
    return result.returncode


def run_dfs_action(action: str, conf, env: dc.DaemonEnv) -> int:
    if action not in ("start", "stop"):
        raise UsageError(f"dfs takes start or stop, not '{action}'")
    environ = dict(env.environ) or dict(os.environ)
    ssh_local = environ.get("HADOOP_SSH_LOCAL", "").lower() == "true"
    ssh_opts = environ.get("HADOOP_SSH_OPTS") or DEFAULT_SSH_OPTS
    sbin = environ.get("HADOOP_QJM_SBIN") or ""
    steps = plan_dfs(conf, env.ident, dc.is_local, ssh_local)
    if any(not s.local for s in steps) and not sbin:
        raise UsageError("HADOOP_QJM_SBIN is not set: run sbin/start-dfs-py.sh")
    if action == "stop":
        steps = list(reversed(steps))
    own = nd.own_namenode_id(conf)
    for nnid in other_hosts_namenodes(conf, dc.is_local):
        print(
            f"Not {'starting' if action == 'start' else 'stopping'} NameNode {nnid}: it is on "
            f"this machine, but this configuration is {own}'s (dfs.ha.namenode.id); use "
            f"{nnid}'s own configuration directory",
            flush=True,
        )
    status = 0
    for step in steps:
        print(f"{'Starting' if action == 'start' else 'Stopping'} {step.describe()}", flush=True)
        if not step.local:
            result = _ssh(step.host, _remote_command(step, action, sbin, env.conf_dir), ssh_opts)
        elif step.kind == "journalnodes":
            result = dc.run_journal_nodes_action(action, conf, env)
        else:
            node_env = env.with_ident(step.ident)
            if action == "start":
                args = ["-nnid", step.nnid] if step.nnid else []
                result = dc.start_daemon(node_env, step.kind, (), args)
            else:
                result = dc.stop_daemon(node_env, step.kind)
        status = status or result
    return status


def main(argv=None) -> int:
    """``python -m hadoop_qjm.tools.start_dfs (start|stop)``, run by the sbin scripts with
    ``$HADOOP_CONF_DIR`` the configuration directory."""
    from hadoop_qjm.common.command_line import load_configuration

    args = list(sys.argv[1:] if argv is None else argv)

    def body() -> int:
        if len(args) != 1:
            raise UsageError("usage: start_dfs (start|stop)")
        env = dc.DaemonEnv.from_environ()
        return run_dfs_action(args[0], load_configuration(env.conf_dir), env)

    return dc.script_main(f"{args[0] if args else 'dfs'}-dfs-py.sh", body)


if __name__ == "__main__":
    sys.exit(main())
