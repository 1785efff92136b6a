"""``hdfs-py haadmin``'s usage, each command's help and the --forcemanual warning (the
texts of Hadoop's HAAdmin), beside :mod:`hadoop_qjm.tools.ha_admin`."""

from __future__ import annotations

from typing import TextIO

from hadoop_qjm.common.exceptions import UsageError

__all__ = ["USAGE"]

USAGE = """\
Usage: hdfs-py [--config DIR] haadmin [-ns <nameserviceId>]
    [-transitionToActive [--forceactive] [--forcemanual] <serviceId>]
    [-transitionToStandby [--forcemanual] <serviceId>]
    [-transitionToObserver [--forcemanual] <serviceId>]
    [-failover [--forcefence] [--forceactive] [--forcemanual] <serviceId> <serviceId>]
    [-getServiceState <serviceId>]
    [-getAllServiceState]
    [-checkHealth <serviceId>]
    [-reconfigureSharedEdits <qjournal URI>]
    [-help <command>]
"""

_HELP = {
    "-transitionToActive": (
        "[--forceactive] [--forcemanual] <serviceId>",
        "Transitions the service into Active state (refused while another NameNode is "
        "active or cannot be asked, unless --forceactive). With automatic failover "
        "enabled, refused unless --forcemanual (dangerous: asks for confirmation)",
    ),
    "-transitionToStandby": (
        "[--forcemanual] <serviceId>",
        "Transitions the service into Standby state. With automatic failover enabled, "
        "refused unless --forcemanual (dangerous: asks for confirmation)",
    ),
    "-transitionToObserver": (
        "[--forcemanual] <serviceId>",
        "Transitions the service into Observer state (from standby only; needs "
        "dfs.ha.tail-edits.in-progress). With automatic failover enabled, refused unless "
        "--forcemanual (dangerous: asks for confirmation)",
    ),
    "-failover": (
        "[--forcefence] [--forceactive] [--forcemanual] <serviceId> <serviceId>",
        "Failover from the first service to the second. --forcefence: go on even if the "
        "first cannot be made standby (the quorum journal's epoch fences it). "
        "--forceactive: failover even if the second is not ready to become active. With "
        "automatic failover enabled, the second's failover controller does a graceful "
        "failover (neither flag is supported then).",
    ),
    "-getServiceState": ("<serviceId>", "Returns the state of the service"),
    "-getAllServiceState": ("", "Returns the state of all the services"),
    "-checkHealth": (
        "<serviceId>",
        "Requests that the service perform a health check; exits non-zero if it fails.",
    ),
    "-reconfigureSharedEdits": (
        "<qjournal URI>",
        "Not Hadoop's: moves the active NameNode's shared edits to the JournalNodes of the "
        "URI, online, by joint consensus (docs/journalnode.md); bootstrap the new "
        "JournalNodes first, and afterwards set dfs.namenode.shared.edits.dir to the URI on "
        "every NameNode. Waits up to dfs.ha.reconfigure-shared-edits.catch-up.timeout.ms "
        "(10 min) for the new JournalNodes to catch up. Run it again if it was interrupted.",
    ),
    "-help": ("<command>", "Displays help on the specified command"),
}


_FORCE_MANUAL_WARNING = """\
You have specified the --forcemanual flag. This flag is dangerous: the failover
controllers manage the HA state of this nameservice, and a state changed behind their
back can leave two NameNodes that each believe they are active (a split brain; the
quorum journal's epochs stop the older one's writes, but its clients may read stale
data), or be undone by a controller at once.

It is recommended not to use this flag, but instead to shut down the cluster and
disable automatic failover if you prefer to manage the HA state by hand.

You may abort safely by answering 'n' or hitting ^C now.
"""

#: The commands that change a state, and so take --forcemanual (HAAdmin.runCmd).
_MUTATIVE = (
    "-transitionToActive",
    "-transitionToStandby",
    "-transitionToObserver",
    "-failover",
)


def _help(rest: list[str], out: TextIO) -> int:
    """``-help [COMMAND]``: the usage, or one command's."""
    if not rest:
        print(USAGE, end="", file=out)
        return 0
    command = rest[0] if rest[0].startswith("-") else "-" + rest[0]
    if command not in _HELP or len(rest) != 1:
        raise UsageError(f"{command}: Unknown command (run 'hdfs-py haadmin -help')")
    args, text = _HELP[command]
    print(f"{command} [{args}]: {text}", file=out)
    return 0


def _usage(command: str) -> str:
    args = _HELP[command][0]
    return f"usage: hdfs-py haadmin [{command}{' ' + args if args else ''}]"
