"""The command line's parts that every command shares, below the ``cli`` package so that a
command in any layer can use them: :class:`CommandParser` (an ArgumentParser that raises
:class:`UsageError`), small argument types, how ``hdfs-py`` finds its configuration
(``--config DIR``, else ``$HADOOP_CONF_DIR``, else the installation's ``conf/``), and the
frame of an entry point (:func:`parse_hdfs_py_options`, :func:`run_command`,
:func:`run_main`), so that ``hdfs-py`` and the Spark jobs' own entry points
(``python -m hadoop_qjm.spark.submit``) run a command the same way.
:mod:`hadoop_qjm.cli` re-exports the first ones.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hadoop_qjm.common.daemon_logging import configure_logging, set_conf_dir_in_use
from hadoop_qjm.common.exceptions import HadoopException, UsageError, one_line_message

__all__ = [
    "CommandParser",
    "HdfsPyOptions",
    "check_conf_dir",
    "conf_dir_in_use",
    "finite_float",
    "installation_conf_dir",
    "load_configuration",
    "named_path",
    "parse_hdfs_py_options",
    "print_daemon_started",
    "run_command",
    "run_main",
]

#: The arguments that ask a command for its help (its configuration is then not read).
HELP = ("-h", "--help", "-help")


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that raises :class:`UsageError` instead of exiting, and names an
    unknown argument first (argparse would report a missing required one instead)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")

    def parse_args(self, args=None, namespace=None):  # type: ignore[override]
        try:
            return super().parse_args(args, namespace)
        except UsageError:
            unknown = self._unknown_arguments(args)
            if unknown:
                self.error(f"unrecognized arguments: {' '.join(unknown)}")
            raise

    def _unknown_arguments(self, args) -> list[str]:
        """What is left of ``args`` once every known option is taken, nothing required."""
        required = [(a, a.required) for a in self._actions]
        groups = [(g, g.required) for g in self._mutually_exclusive_groups]
        for action, _ in required:
            action.required = False
        for group, _ in groups:
            group.required = False
        try:
            return super().parse_known_args(args)[1]
        except UsageError:
            return []
        finally:
            for action, was in required:
                action.required = was
            for group, was in groups:
                group.required = was


def finite_float(text: str) -> float:
    """An argparse type: a float that is a number (not nan, not ±inf)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"'{text}' is not a finite number")
    return value


def named_path(text: str) -> Path:
    """An argparse type: a path that is not empty (``Path("")`` is the current directory,
    where an empty argument must not make a command write or read)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the path is empty")
    return Path(text)


def installation_conf_dir() -> str | None:
    """The installation's configuration directory, as Hadoop's ``etc/hadoop``: ``conf/``
    beside the package in a checkout, else ``<prefix>/etc/hadoop-qjm-py`` where ``pip
    install`` puts the shipped ``conf/``; None when neither exists."""
    import hadoop_qjm

    checkout = os.path.join(os.path.dirname(os.path.dirname(hadoop_qjm.__file__)), "conf")
    for candidate in (checkout, os.path.join(sys.prefix, "etc", "hadoop-qjm-py")):
        if os.path.isfile(os.path.join(candidate, "hdfs-site.xml")):
            return candidate
    return None


def conf_dir_in_use(conf_dir: str | None) -> str | None:
    """``--config DIR``, else ``$HADOOP_CONF_DIR``, else the installation's ``conf/``."""
    return conf_dir or os.environ.get("HADOOP_CONF_DIR") or installation_conf_dir()


def check_conf_dir(conf_dir: str | None) -> str | None:
    """``conf_dir`` if it is None or a directory; else UsageError, one sentence saying
    which (a file's ``log4j.properties`` was read as ``<file>/log4j.properties``)."""
    if conf_dir and not os.path.isdir(conf_dir):
        why = "is not a directory" if os.path.lexists(conf_dir) else "does not exist"
        raise UsageError(f"configuration directory {conf_dir} {why}")
    return conf_dir


def load_configuration(conf_dir: str | None, overrides: Sequence[tuple[str, str]] = ()):
    """The Configuration of ``conf_dir`` (else ``$HADOOP_CONF_DIR``, else the installation's
    ``conf/``): defaults, then the site files, then ``overrides``."""
    from hadoop_qjm.conf import Configuration

    conf = Configuration(load_defaults=True)
    conf_dir = check_conf_dir(conf_dir_in_use(conf_dir))
    if conf_dir:
        conf.add_conf_dir(conf_dir)
    for key, value in overrides:
        conf.set(key, value, "from command line")  # Hadoop's GenericOptionsParser's source
    return conf


# ---- the frame of an entry point ----------------------------------------------------------------


@dataclass
class HdfsPyOptions:
    """The options before the command: ``[--config DIR] [-D key=value ...] [--daemon
    (start|stop|status)] [-h]`` (those of Hadoop's ``bin/hdfs`` and GenericOptionsParser)."""

    conf_dir: str | None = None
    overrides: list[tuple[str, str]] = field(default_factory=list)
    daemon_action: str | None = None
    help: bool = False


def parse_hdfs_py_options(args: list[str]) -> HdfsPyOptions:
    """Take the options before the command off the front of ``args``; UsageError (one
    sentence) for a malformed one. Parsing stops at a help option (``help`` set)."""
    options = HdfsPyOptions()
    while args and args[0].startswith("-"):
        opt = args.pop(0)
        if opt in HELP:
            options.help = True
            return options
        if opt in ("--config", "-config"):
            if not args or not args[0]:
                raise UsageError("--config needs a directory")
            options.conf_dir = args.pop(0)
        elif opt.startswith("--config="):
            options.conf_dir = opt.split("=", 1)[1]
            if not options.conf_dir:
                raise UsageError("--config needs a directory")
        elif opt == "-D" or (opt.startswith("-D") and len(opt) > 2):
            prop = opt[2:] if len(opt) > 2 else (args.pop(0) if args else "")
            key, sep, value = prop.partition("=")
            if not sep or not key.strip():
                raise UsageError(f"-D needs key=value, got '{prop}'")
            options.overrides.append((key.strip(), value))
        elif opt == "--daemon" or opt.startswith("--daemon="):
            action = opt.split("=", 1)[1] if "=" in opt else (args.pop(0) if args else "")
            if action not in ("start", "stop", "status"):
                raise UsageError("--daemon takes start, stop or status")
            options.daemon_action = action
        else:
            raise UsageError(f"unknown option {opt}")
    return options


def run_command(
    command: Callable[..., int | None],
    args: Sequence[str],
    conf_dir: str | None = None,
    overrides: Sequence[tuple[str, str]] = (),
) -> int:
    """Run ``command(args, conf)`` in the foreground as ``hdfs-py`` does: the configuration
    directory in use recorded (logging reads its log4j.properties), logging set up unless
    the caller did, ``conf`` loaded from ``conf_dir`` and ``overrides`` (None when ``args``
    asks for help). Returns the exit status."""
    set_conf_dir_in_use(check_conf_dir(conf_dir_in_use(conf_dir)))
    if not logging.getLogger().handlers:
        configure_logging()
    conf = None if any(a in HELP for a in args[:1]) else load_configuration(conf_dir, overrides)
    return int(command(list(args), conf) or 0)


def run_main(body: Callable[[], int]) -> int:
    """Run an entry point's ``body``; its exit status, and every error turned into one line
    on stderr: exit 2 for a malformed command line (UsageError), 1 otherwise, 130 on ^C.
    A traceback is shown only with ``HADOOP_QJM_DEBUG=1``.

    A reader of stdout that went away (``hdfs-py dfs -ls / | head -1``) ends the command
    quietly, as Unix tools do: stdout is pointed at /dev/null so the interpreter's last flush
    cannot fail again, and the status is 1, as Python's documentation recommends (the
    "Note on SIGPIPE" of the ``signal`` module).
    """
    restore = _terminate_by_unwinding()
    try:
        status = _one_line_errors(body)
        sys.stdout.flush()  # here, not at exit, so a closed pipe is seen below
        return status
    except BrokenPipeError:
        _stdout_to_devnull()
        return 1
    finally:
        restore()


#: The exit status of a command ended by SIGTERM, as a shell reports one (128 + 15).
SIGTERM_STATUS = 128 + signal.SIGTERM


def _terminate_by_unwinding() -> Callable[[], None]:
    """Make SIGTERM end a foreground command as ^C does: by unwinding its stack, so that
    the ``with`` blocks and ``finally`` clauses that stop what it started (a benchmark's or
    the quickstart's JournalNodes and NameNodes, a temporary directory) run before it exits
    with status 143. Python's default for SIGTERM ends the process at once, and the daemons
    a command had started were left running. A daemon (``hdfs-py journalnode``) installs its
    own handler over this one, to stop serving cleanly. Returns what puts the default back.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None  # handlers are set in the main thread only (a test's main())
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return lambda: None  # the embedding program (pytest, Spark) has its own

    def on_sigterm(_signum: int, _frame: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends it at once
        raise SystemExit(SIGTERM_STATUS)

    signal.signal(signal.SIGTERM, on_sigterm)

    def restore() -> None:
        if signal.getsignal(signal.SIGTERM) is on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    return restore


def _one_line_errors(body: Callable[[], int]) -> int:
    try:
        return body()
    except UsageError as e:
        # A sub-command's CommandParser names itself ("hdfs-py oev: ..."): one prefix only.
        text = str(e)
        print(text if text.startswith("hdfs-py ") else f"hdfs-py: {text}", file=sys.stderr)
        return 2
    except SystemExit as e:
        return int(e.code or 0) if isinstance(e.code, int) or e.code is None else 1
    except KeyboardInterrupt:
        print("hdfs-py: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise  # the reader of stdout went away: run_main() ends quietly
    except (HadoopException, OSError) as e:
        _debug_traceback()
        print(f"hdfs-py: {one_line_message(e)}", file=sys.stderr)
        return 1
    except Exception as e:  # noqa: BLE001 - the user sees one line, never a bare traceback
        _debug_traceback()
        print(
            f"hdfs-py: internal error: {type(e).__name__}: {one_line_message(e)}", file=sys.stderr
        )
        return 1


def _debug_traceback() -> None:
    if os.environ.get("HADOOP_QJM_DEBUG"):
        import traceback

        traceback.print_exc()


def _stdout_to_devnull() -> None:
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def print_daemon_started(daemon: str, node) -> None:
    """The line a daemon prints once it serves, ``NameNode started pid=… rpc=HOST:PORT
    http=HOST:PORT[ https=HOST:PORT]``, which the scripts and tests wait for
    (``tools.daemon_control.STARTED_MARK``): ``node`` has ``rpc_address``,
    ``http_address``, ``https_server`` and ``https_address``."""
    rpc_host, rpc_port = node.rpc_address
    http_host, http_port = node.http_address
    https = "" if node.https_server is None else " https={}:{}".format(*node.https_address)
    print(
        f"{daemon} started pid={os.getpid()} rpc={rpc_host}:{rpc_port} "
        f"http={http_host}:{http_port}{https}",
        flush=True,
    )
