"""``hdfs-py [--config DIR] COMMAND [ARGS...]``: the one command-line entry point.

Every command lives in its own module exposing ``run(argv, conf) -> int``; this
module only finds the configuration, dispatches, and turns errors into one line
on stderr (exit 1; exit 2 for a malformed command line). A traceback is shown
only with ``HADOOP_QJM_DEBUG=1``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

from hadoop_qjm.common.command_line import (  # noqa: F401 - re-exported, used by commands
    CommandParser,
    check_conf_dir,
    conf_dir_in_use,
    finite_float,
    installation_conf_dir,
    load_configuration,
    parse_hdfs_py_options,
    run_command,
    run_main,
)
from hadoop_qjm.common.daemon_logging import (  # noqa: F401 - re-exported, used by daemons
    _user_name,
    configure_logging,
    daemon_log_file,
    set_conf_dir_in_use,
)
from hadoop_qjm.common.exceptions import UsageError

__all__ = ["main", "CommandParser", "COMMANDS", "configure_logging", "daemon_log_file"]

#: command name -> ("module" or "module:function", one-line summary); the function
#: (``run`` by default) is called as ``function(argv, conf) -> exit status``.
COMMANDS: dict[str, tuple[str, str]] = {
    "journalnode": (
        "hadoop_qjm.qjournal.server.journal_node",
        "run a JournalNode in the foreground",
    ),
    "namenode": (
        "hadoop_qjm.cli.name_node",
        "run a NameNode, or -format, -initializeSharedEdits, -bootstrapStandby, ...",
    ),
    "zkfc": (
        "hadoop_qjm.cli.zkfc",
        "run a NameNode's automatic failover controller on ZooKeeper, or -formatZK",
    ),
    "dfs": ("hadoop_qjm.tools.dfs_shell", "file system commands: -mkdir -ls -rm -mv -touchz ..."),
    "dfsadmin": (
        "hadoop_qjm.tools.dfs_admin",
        "NameNode administration: -rollEdits, -saveNamespace",
    ),
    "haadmin": (
        "hadoop_qjm.tools.ha_admin",
        "HA state of the NameNodes: -transitionToActive, -failover, -getServiceState ...",
    ),
    "quickstart": (
        "hadoop_qjm.tools.quickstart",
        "run a local 3-JournalNode cluster with a writer, a failover and a reader",
    ),
    "getconf": (
        "hadoop_qjm.tools.getconf",
        "print configuration values (-confKey KEY, -namenodes, -nnRpcAddresses, -journalNodes ...)",
    ),
    "version": (
        "hadoop_qjm.tools.version",
        "print the version, source revision, Python and library versions",
    ),
    "daemonlog": (
        "hadoop_qjm.tools.daemon_log",
        "read or set a logger's level in a running daemon: -getlevel|-setlevel HOST:PORT NAME",
    ),
    "security": (
        "hadoop_qjm.tools.security",
        "make a test PKI for a secured cluster: -generateCerts DIR [--hosts H,...] [--days N]",
    ),
    "logtester": (
        "hadoop_qjm.tools.log_tester",
        "a writer that fences others and copies what it got acknowledged (design paper 7.4.1)",
    ),
    "logtester-verify": (
        "hadoop_qjm.tools.log_tester:run_verify",
        "check LogTester dirs against the JournalNodes' dirs",
    ),
    "oev": ("hadoop_qjm.tools.oev", "offline edits viewer: print an edit log as XML or statistics"),
    "bench": (
        "hadoop_qjm.tools.bench",
        "benchmarks: bench edits | journalnode | namenode | qjm | ...",
    ),
    "fault-campaign": (
        "hadoop_qjm.spark.fault_campaign",
        "run the randomized fault test for many seeds on Spark (needs pyspark)",
    ),
    "journal-audit": (
        "hadoop_qjm.spark.journal_audit",
        "compare the JournalNodes' copies of every segment on Spark (needs pyspark)",
    ),
}

USAGE = (
    "usage: hdfs-py [--config DIR] [-D key=value ...] [--daemon (start|stop|status)] "
    "COMMAND [ARGS...]"
)


def _help_text() -> str:
    lines = [USAGE, "", "Options:"]
    lines.append(
        "  --config DIR   configuration directory (default: $HADOOP_CONF_DIR, else the "
        "installation's conf/)"
    )
    lines.append("  -D key=value   set a configuration property (overrides the site files)")
    lines.append(
        "  --daemon (start|stop|status)\n"
        "                 run journalnode, namenode or zkfc in the background, stop it by its\n"
        "                 pid file, or say whether it runs ($HADOOP_PID_DIR, $HADOOP_LOG_DIR)"
    )
    lines.append("  -h, --help     show this help")
    lines.append("")
    lines.append("Commands:")
    width = max(len(name) for name in COMMANDS)
    for name, (_, summary) in COMMANDS.items():
        lines.append(f"  {name:<{width}}  {summary}")
    lines.append("")
    lines.append("Run 'hdfs-py COMMAND --help' for a command's options.")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``hdfs-py ARGS``; returns the exit status (errors as one line on stderr:
    :func:`~hadoop_qjm.common.command_line.run_main`)."""
    return run_main(lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    options = parse_hdfs_py_options(args)
    if options.help:
        print(_help_text())
        return 0
    if not args:
        print(_help_text(), file=sys.stderr)
        return 2
    command = args.pop(0)
    if command not in COMMANDS:
        raise UsageError(f"unknown command '{command}' (run 'hdfs-py --help' for the list)")
    conf_dir = options.conf_dir
    if options.daemon_action is not None:
        check_conf_dir(conf_dir)
        from hadoop_qjm.tools.daemon_control import DaemonEnv, run_daemon_action

        generic = [f"-D{key}={value}" for key, value in options.overrides]
        env = DaemonEnv.from_environ(conf_dir)
        return run_daemon_action(options.daemon_action, command, env, generic, args)
    module_name, _, function = COMMANDS[command][0].partition(":")
    module = importlib.import_module(module_name)
    return run_command(getattr(module, function or "run"), args, conf_dir, options.overrides)
