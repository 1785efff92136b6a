"""The one-shot ``hdfs-py namenode`` commands: -format, -initializeSharedEdits,
-bootstrapStandby, -checkpointOffline, -rollback (and -finalize's refusal, as Hadoop's);
``-upgrade`` starts the daemon, and so do ``-rollingUpgrade started|rollback``.

Options are parsed as Hadoop's NameNode parses its StartupOption (flag names compare
case-insensitively, ``-format``'s options in any order). ``-nnid NNID`` — which NameNode
of an HA nameservice this is — may come before or after the command flag; with HA, the
commands (and the daemon) run with that NameNode's configuration
(:func:`~hadoop_qjm.namenode.ha.ha_util.resolve_ha_conf`). A malformed command line is a
:class:`~hadoop_qjm.common.exceptions.UsageError` (exit 2); a refused or failed command
raises an IOException whose message is the one line the user sees (exit 1), except
-bootstrapStandby's own codes 2, 3, 5 and 6, printed as one line and returned.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TextIO

from hadoop_qjm.common.exceptions import HadoopException, IOException, UsageError, one_line_message
from hadoop_qjm.conf import Configuration

__all__ = [
    "USAGE",
    "StartupOption",
    "one_line",
    "parse_startup_option",
    "confirm_prompt",
    "prompt_confirm",
    "run_command",
]

USAGE = """\
Usage: hdfs-py [--config DIR] namenode [-nnid NNID]
            [-observer]
          | [-format [-clusterid cid] [-force] [-nonInteractive]]
          | [-initializeSharedEdits [-force | -nonInteractive]]
          | [-bootstrapStandby [-force] [-nonInteractive] [-skipSharedEditsCheck]]
          | [-checkpointOffline DIR]
          | [-upgrade] | [-rollback] | [-finalize]
          | [-rollingUpgrade <rollback|started>]

With no option, run a NameNode in the foreground until SIGTERM.
  -nnid NNID               this NameNode's id in dfs.ha.namenodes.<nameservice> (else
                           dfs.ha.namenode.id, else the one whose RPC address is local)
  -observer                start as an observer NameNode (as dfs.namenode.observer.enabled)
  -format                  format the local name directories and every JournalNode of the
                           edits dirs with a new namespace (asks before destroying data)
    -clusterid ID          the cluster id to use (default: a new CID-<uuid>)
    -force                 format even where data exists, without asking
    -nonInteractive        never ask: abort if any location holds data
  -initializeSharedEdits   format the shared edits (dfs.namenode.shared.edits.dir) with this
                           NameNode's namespace and copy every local edit after the last
                           checkpoint into them (-force / -nonInteractive as for -format)
  -bootstrapStandby        make this NameNode a standby of the nameservice: format the
                           local directories with the namespace of another NameNode
                           (the active one if one answers) and download its newest
                           image (nothing is written to the
                           JournalNodes). Exit 2: no other NameNode answered; 3: its
                           layout version differs; 5: data exists and was not to be
                           formatted; 6: the shared edits lack the txns after the image
    -force                 format where data exists, without asking
    -nonInteractive        never ask: stop (exit 5) if any directory holds data
    -skipSharedEditsCheck  do not check that the shared edits hold the txns after the image
  -checkpointOffline DIR   load DIR's newest image and finalized edits, save a new image
  -upgrade                 run the NameNode, first upgrading the local directories and the
                           JournalNodes to this software's layout (previous/ is kept for
                           -rollback until dfsadmin -finalizeUpgrade); with HA it is active
                           at once, and the other NameNode must be -bootstrapStandby'd
  -rollback                every NameNode stopped: return the local directories and every
                           JournalNode to the state before -upgrade (asks first)
  -finalize                no longer supported (Hadoop's): use dfsadmin -finalizeUpgrade
  -rollingUpgrade started  run the NameNode into the rolling upgrade in progress (new
                           software keeps the older layout it finds until finalize)
  -rollingUpgrade rollback (every NameNode stopped) go back to the rollback image of
                           'dfsadmin -rollingUpgrade prepare': the later edits are discarded
                           on every JournalNode (.trash); then run the NameNode
"""

#: NameNode.createNameNode's answer to -finalize (Hadoop 2.4 on).
FINALIZE_UNSUPPORTED = (
    "Use of the argument '-finalize' is no longer supported. To finalize an upgrade, "
    "start the NN  and then run `hdfs dfsadmin -finalizeUpgrade'"
)
#: NameNode.doRollback's warning before its question.
ROLLBACK_WARNING = (
    '"rollBack" will remove the current state of the file system,\n'
    "returning you to the state prior to initiating your recent.\n"
    "upgrade. This action is permanent and cannot be undone. If you\n"
    "are performing a rollback in an HA environment, you should be\n"
    "certain that no NameNode process is running on any host."
)

#: The most invalid answers one confirmation accepts before it counts as "no".
MAX_PROMPT_ATTEMPTS = 10


@dataclass(frozen=True)
class StartupOption:
    """A parsed ``namenode`` command line; ``command`` is daemon, upgrade (the daemon,
    upgrading first), help, format, initializeSharedEdits, bootstrapStandby,
    checkpointOffline, rollback or finalize; ``nnid`` is ``-nnid``."""

    command: str
    force: bool = False
    interactive: bool = True
    cluster_id: str | None = None
    directory: str | None = None
    nnid: str | None = None
    skip_shared_edits_check: bool = False
    #: ``-rollingUpgrade``'s RollingUpgradeStartupOption: "started", "rollback" or None.
    rolling_upgrade: str | None = None


def _is(arg: str, name: str) -> bool:
    return arg.lower() == name.lower()


def parse_startup_option(argv: Sequence[str]) -> StartupOption:
    """Parse the ``namenode`` arguments (UsageError for anything else)."""
    args, nnid = _take_nnid(list(argv))
    option = _parse_command(args)
    if nnid is not None:
        if option.command == "checkpointOffline":
            raise UsageError("namenode -checkpointOffline does not take -nnid")
        option = replace(option, nnid=nnid)
    return option


def _take_nnid(args: list[str]) -> tuple[list[str], str | None]:
    """``args`` without ``-nnid NNID`` (anywhere), and NNID."""
    rest: list[str] = []
    nnid = None
    i = 0
    while i < len(args):
        if _is(args[i], "-nnid"):
            if i + 1 >= len(args) or not args[i + 1] or args[i + 1].startswith("-"):
                raise UsageError("Must specify a NameNode id after the -nnid flag")
            if nnid is not None:
                raise UsageError("-nnid given twice")
            nnid = args[i + 1]
            i += 2
            continue
        rest.append(args[i])
        i += 1
    return rest, nnid


def _parse_command(args: list[str]) -> StartupOption:
    if not args:
        return StartupOption("daemon")
    first, rest = args[0], args[1:]
    if first in ("-h", "-help", "--help"):
        print(USAGE, end="")
        return StartupOption("help")
    if _is(first, "-format"):
        force, interactive, cluster_id = False, True, None
        i = 0
        while i < len(rest):
            arg = rest[i]
            if _is(arg, "-force"):
                force = True
            elif _is(arg, "-nonInteractive"):
                interactive = False
            elif _is(arg, "-clusterid"):
                if i + 1 >= len(rest) or not rest[i + 1] or rest[i + 1].startswith("-"):
                    raise UsageError("Must specify a valid cluster ID after the -clusterid flag")
                cluster_id = rest[i + 1]
                i += 1
            else:
                raise UsageError(f"namenode -format: unknown option '{arg}'")
            i += 1
        return StartupOption("format", force, interactive, cluster_id)
    if _is(first, "-initializeSharedEdits"):
        force, interactive = False, True
        for arg in rest:
            if _is(arg, "-force"):
                force = True
            elif _is(arg, "-nonInteractive"):
                interactive = False
            else:
                raise UsageError(f"namenode -initializeSharedEdits: unknown option '{arg}'")
        return StartupOption("initializeSharedEdits", force, interactive)
    if _is(first, "-bootstrapStandby"):
        force, interactive, skip = False, True, False
        for arg in rest:
            if _is(arg, "-force"):
                force = True
            elif _is(arg, "-nonInteractive"):
                interactive = False
            elif _is(arg, "-skipSharedEditsCheck"):
                skip = True
            else:
                raise UsageError(f"namenode -bootstrapStandby: unknown option '{arg}'")
        return StartupOption("bootstrapStandby", force, interactive, skip_shared_edits_check=skip)
    for flag in ("-upgrade", "-rollback", "-finalize"):
        if _is(first, flag):
            if rest:
                raise UsageError(f"namenode {flag}: unknown option '{rest[0]}'")
            return StartupOption(flag[1:])
    if _is(first, "-checkpointOffline"):
        if len(rest) != 1 or not rest[0] or rest[0].startswith("-"):
            raise UsageError("namenode -checkpointOffline needs exactly one directory")
        return StartupOption("checkpointOffline", directory=rest[0])
    if _is(first, "-rollingUpgrade"):
        # NameNode.parseArguments: ROLLINGUPGRADE and one RollingUpgradeStartupOption.
        if len(rest) != 1 or rest[0].lower() not in ("rollback", "started"):
            raise UsageError(
                "Must specify a rolling upgrade startup option <rollback|started>"
                + (f", not '{' '.join(rest)}'" if rest else "")
            )
        return StartupOption("daemon", rolling_upgrade=rest[0].lower())
    raise UsageError(f"namenode: unknown option '{first}' (run 'hdfs-py namenode -help')")


def confirm_prompt(
    question: str, stdin: TextIO | None = None, stderr: TextIO | None = None
) -> bool:
    """Ask ``question`` and " (Y or N) " on stderr, read the answer from stdin
    (ToolRunner.confirmPrompt): y or yes, n or no, in any case; anything else asks again.
    End of input, or too many invalid answers, is a no."""
    reader = stdin if stdin is not None else sys.stdin
    out = stderr if stderr is not None else sys.stderr
    for _ in range(MAX_PROMPT_ATTEMPTS):
        out.write(f"{question} (Y or N) ")
        out.flush()
        line = reader.readline()
        if not line:
            out.write("\n")
            return False
        answer = line.strip().lower()
        if answer in ("y", "yes"):
            return True
        if answer in ("n", "no"):
            return False
        out.write(f"Invalid input: {line.strip()}\n")
    return False


def prompt_confirm(
    stdin: TextIO | None = None, stderr: TextIO | None = None
) -> Callable[[Sequence[str]], bool]:
    """A ``confirm(locations)`` that asks "Re-format filesystem in X ? (Y or N)" for each
    location (:func:`confirm_prompt`) until one answer is no."""

    def confirm(locations: Sequence[str]) -> bool:
        return all(
            confirm_prompt(f"Re-format filesystem in {location} ?", stdin, stderr)
            for location in locations
        )

    return confirm


def one_line(error: BaseException) -> IOException:
    """``error`` as an IOException whose message is one line (a QuorumException lists each
    JournalNode's error on its own line): what the command line prints."""
    return IOException(one_line_message(error))


def rollback_namenode(conf: Configuration, journal_factory=None):  # noqa: ANN001, ANN201
    """``namenode -rollback`` without the question: every local directory and every
    JournalNode of the shared edits back to previous/ (layout_upgrade.do_rollback)."""
    from hadoop_qjm.namenode.layout_upgrade import do_rollback
    from hadoop_qjm.namenode.name_node_core import create_journal_set

    def shared_journals(dirs, storage, ns_info):  # noqa: ANN001, ANN202
        return create_journal_set(conf, dirs, storage, ns_info, journal_factory, shared_only=True)

    return do_rollback(conf, shared_journals)


def run_command(option: StartupOption, conf: Configuration) -> int:
    """Run a one-shot command; prints what it did on stdout. Returns the exit status."""
    try:
        return _run_command(option, conf)
    except UsageError:
        raise
    except (HadoopException, OSError) as e:
        raise one_line(e) from e


def _run_command(option: StartupOption, conf: Configuration) -> int:
    nameservice = nnid = None
    if option.command in ("format", "initializeSharedEdits", "bootstrapStandby", "rollback"):
        from hadoop_qjm.namenode.ha.ha_util import resolve_ha_conf

        conf, nameservice, nnid = resolve_ha_conf(conf, option.nnid)
    if option.command == "bootstrapStandby":
        from hadoop_qjm.namenode.ha.bootstrap_standby import (
            BootstrapStandbyException,
            bootstrap_standby,
        )

        confirm = prompt_confirm() if option.interactive else None
        try:
            bootstrap_standby(
                conf,
                nameservice,
                nnid,
                force=option.force,
                confirm=confirm,
                skip_shared_edits_check=option.skip_shared_edits_check,
                progress_stream=sys.stderr,
            )
        except BootstrapStandbyException as e:
            print(f"hdfs-py: {one_line(e)}", file=sys.stderr)
            return e.exit_code
        return 0
    if option.command == "format":
        from hadoop_qjm.namenode.name_node_core import format_namenode

        confirm = prompt_confirm() if option.interactive else None
        ns_info = format_namenode(
            conf, option.cluster_id, force=option.force, confirm=confirm, report=print
        )
        print(
            f"Formatted namespace {ns_info.namespace_id} of cluster {ns_info.cluster_id} "
            f"(block pool {ns_info.block_pool_id})"
        )
        return 0
    if option.command == "initializeSharedEdits":
        from hadoop_qjm.namenode.initialize_shared_edits import initialize_shared_edits

        confirm = prompt_confirm() if option.interactive else None
        done = initialize_shared_edits(conf, force=option.force, confirm=confirm)
        print(
            f"Initialized {', '.join(done.shared_uris)} for namespace {done.namespace_id}: "
            f"copied {done.txns} transactions in {done.segments} segments after "
            f"fsimage_{done.checkpoint_txid}"
        )
        return 0
    if option.command == "finalize":
        print(f"hdfs-py: {FINALIZE_UNSUPPORTED}", file=sys.stderr)
        return 1
    if option.command == "rollback":
        print(ROLLBACK_WARNING, file=sys.stderr)
        if not confirm_prompt("Roll back file system state?"):
            print("Rollback aborted.", file=sys.stderr)
            return 1
        restored = rollback_namenode(conf)
        print(
            f"Rolled back namespace {restored.namespace_id} to layout version "
            f"{restored.layout_version} (cTime {restored.ctime})"
        )
        return 0
    if option.command == "checkpointOffline":
        from hadoop_qjm.namenode.fs_image import checkpoint_offline

        txid = checkpoint_offline(option.directory, conf)  # type: ignore[arg-type]
        print(f"The newest image of {option.directory} is now fsimage_{txid:019d}")
        return 0
    raise UsageError(f"namenode: unknown command {option.command}")
