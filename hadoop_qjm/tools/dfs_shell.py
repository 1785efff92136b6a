"""``hdfs-py dfs``: a thin FsShell over the NameNode's ClientProtocol.

::

    hdfs-py dfs -mkdir [-p] PATH...        hdfs-py dfs -rm [-r|-R] [-f] PATH...
    hdfs-py dfs -ls [-d] [-h] [-R] [PATH...]   hdfs-py dfs -mv SRC... DST
    hdfs-py dfs -touchz PATH...            hdfs-py dfs -chmod [-R] MODE PATH...
    hdfs-py dfs -chown [-R] [OWNER][:[GROUP]] PATH...

The NameNode is ``fs.defaultFS`` (``hdfs://host:port``) or ``dfs.namenode.rpc-address``;
a path may also be a full ``hdfs://host:port/path`` URI. ``hdfs://<nameservice>`` of an
HA pair reaches whichever NameNode is active (``hadoop_qjm.namenode.ha.failover_proxy``).
A relative path is under the home directory ``/user/<name>``. Messages are FsShell's: ``Found N items`` then one line
per entry (``drwxr-xr-x   - user group          0 2026-11-22 14:05 /path``); errors are
one line each, ``mkdir: `/a/b': No such file or directory``. Like FsShell, a command goes
on with its other paths after an error on one and then exits 1; a NameNode that cannot be
reached stops it at once (exit 1). A malformed command line exits 2.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TextIO

from hadoop_qjm.common.exceptions import (
    AccessControlException,
    FileAlreadyExistsException,
    FileNotFoundException,
    HadoopException,
    IllegalArgumentException,
    ParentNotDirectoryException,
    PathIsNotEmptyDirectoryException,
    UsageError,
)
from hadoop_qjm.common.fs_permission import FsPermission, get_umask
from hadoop_qjm.common.security.caller_identity import certificate_user_name
from hadoop_qjm.ipc.socket_channel import login_user_name
from hadoop_qjm.namenode.fs_directory import FileStatus
from hadoop_qjm.namenode.ha.failover_proxy import (
    namenode_proxy_for_uri,
    namenode_proxy_from_conf,
)
from hadoop_qjm.tools.generic_options import parse_generic_options

__all__ = ["USAGE", "FsShell", "format_listing", "permission_string", "parse_mode", "run"]

USAGE = """\
Usage: hdfs-py [--config DIR] dfs [-fs URI] [-D key=value]
	[-chmod [-R] <MODE[,MODE]... | OCTALMODE> PATH...]
	[-chown [-R] [OWNER][:[GROUP]] PATH...]
	[-ls [-d] [-h] [-R] [<path> ...]]
	[-mkdir [-p] <path> ...]
	[-mv <src> ... <dst>]
	[-rm [-f] [-r|-R] <src> ...]
	[-touchz <path> ...]
"""

#: Entries shown by -ls, -chmod -R, -chown -R at most (a bound on every loop).
MAX_ENTRIES = 10_000_000
_SYMBOLIC = re.compile(r"([ugoa]*)([+=-])([rwxXt]*)")
_OWNER_GROUP = re.compile(r"^\s*([-\w.@$]+)?(?::([-\w.@$]*))?\s*$")


class PathError(Exception):
    """One path failed: FsShell prints ``<cmd>: <message>`` and goes on."""


def _not_found(path: str) -> PathError:
    return PathError(f"`{path}': No such file or directory")


def permission_string(mode: int) -> str:
    """FsPermission.toString: ``rwxr-xr-x``; the sticky bit shows as t (or T without o+x)."""
    return str(FsPermission(mode))


_BINARY_PREFIXES = "KMGTPE"


def human_size(n: int) -> str:
    """StringUtils.TraditionalBinaryPrefix.long2String(n, "", 1), as ``-ls -h`` shows a size:
    ``1023``, ``1 K`` (exact), ``1.5 K``, ``12.3 M``; one decimal rounded half up."""
    if n < 0:
        return "-" + human_size(-n)
    if n < 1024:
        return str(n)
    i = min((n.bit_length() - 1) // 10, len(_BINARY_PREFIXES))  # 1 for K, 2 for M, ...
    shift = 10 * i
    if n & ((1 << shift) - 1) == 0:
        return f"{n >> shift} {_BINARY_PREFIXES[i - 1]}"
    text = str((Decimal(n) / (1 << shift)).quantize(Decimal("0.1"), ROUND_HALF_UP))
    if text.startswith("1024") and i < len(_BINARY_PREFIXES):  # rounded up to the next unit
        i, shift = i + 1, shift + 10
        text = str((Decimal(n) / (1 << shift)).quantize(Decimal("0.1"), ROUND_HALF_UP))
    return f"{text} {_BINARY_PREFIXES[i - 1]}"


def format_listing(entries: Sequence[tuple[FileStatus, str]], human: bool = False) -> list[str]:
    """Ls's lines for ``(status, shown path)`` pairs, columns sized over the batch; sizes as
    ``-h`` shows them when ``human``."""
    size = human_size if human else str
    max_repl, max_len, max_owner, max_group = 3, 10, 0, 0
    for status, _ in entries:
        max_repl = max(max_repl, len(str(status.replication)))
        max_len = max(max_len, len(size(status.length)))
        max_owner = max(max_owner, len(status.owner))
        max_group = max(max_group, len(status.group))
    lines = []
    for status, shown in entries:
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(status.modification_time / 1000))
        repl = "-" if status.is_dir else str(status.replication)
        owner = f"{status.owner:<{max_owner}} " if max_owner else status.owner
        group = f"{status.group:<{max_group}} " if max_group else status.group
        lines.append(
            f"{'d' if status.is_dir else '-'}{permission_string(status.permission)} "
            f"{repl:>{max_repl}} {owner}{group}{size(status.length):>{max_len}} {when} {shown}"
        )
    return lines


def parse_mode(spec: str) -> Callable[[int, bool], int]:
    """ChmodParser: an octal mode, or symbolic ``[ugoa...][+-=][rwxXt...][,...]``; returns
    ``new_mode(old_mode, is_dir)``. IllegalArgumentException if malformed."""
    if re.fullmatch(r"[0-7]{1,4}", spec):
        value = int(spec, 8)
        return lambda _old, _is_dir: value
    clauses = []
    for clause in spec.split(","):
        m = _SYMBOLIC.fullmatch(clause)
        if m is None:
            raise IllegalArgumentException(
                f"chmod : mode '{spec}' does not match the expected pattern."
            )
        clauses.append(m.groups())

    def apply(old: int, is_dir: bool) -> int:
        mode = old
        for who, op, perms in clauses:
            who = who.replace("a", "ugo") or "ugo"
            bits = 0
            for w in set(who):
                shift = {"u": 6, "g": 3, "o": 0}[w]
                rwx = (4 if "r" in perms else 0) | (2 if "w" in perms else 0)
                if "x" in perms or ("X" in perms and (is_dir or mode & 0o111)):
                    rwx |= 1
                bits |= rwx << shift
            if "t" in perms and ("o" in who or who == "ugo"):
                bits |= 0o1000
            if op == "+":
                mode |= bits
            elif op == "-":
                mode &= ~bits
            else:
                mask = sum(7 << {"u": 6, "g": 3, "o": 0}[w] for w in set(who))
                mode = (mode & ~mask & ~(0o1000 if "o" in who else 0)) | bits
        return mode & 0o1777

    return apply


@dataclass
class _Target:
    proxy: Any  # a NameNodeProxy, or a FailoverNameNodeProxy for an HA nameservice
    path: str  # the path on the NameNode
    shown: str  # as the user wrote it


class FsShell:
    """The commands, over proxies made from ``conf`` (one per NameNode address)."""

    def __init__(self, conf, out: TextIO | None = None, err: TextIO | None = None) -> None:
        self.conf = conf
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        # A relative path is under /user/<user> (Hadoop's home directory, from the UGI):
        # with TLS on RPC the user its certificate maps to (what the NameNode will see),
        # else the user this client claims, HADOOP_USER_NAME before the OS user.
        self.user = certificate_user_name(conf) or login_user_name()
        self._proxies: dict[str, Any] = {}  # by authority; "" is fs.defaultFS
        try:  # the client applies fs.permissions.umask-mode, as DFSClient does
            self.umask = get_umask(conf)
        except IllegalArgumentException as e:
            raise UsageError(str(e)) from None

    def close(self) -> None:
        for proxy in self._proxies.values():
            proxy.close()

    def _proxy(self, uri: str | None) -> Any:
        """The proxy of the NameNode (or HA nameservice) of ``uri``; None: fs.defaultFS."""
        key = "" if uri is None else re.sub(r"^hdfs://([^/]*).*$", r"\1", uri)
        proxy = self._proxies.get(key)
        if proxy is None:
            if uri is None:
                proxy = namenode_proxy_from_conf(self.conf)
            else:
                proxy = namenode_proxy_for_uri(self.conf, uri)
            self._proxies[key] = proxy
        return proxy

    def target(self, arg: str) -> _Target:
        if arg.startswith("hdfs:"):
            proxy = self._proxy(arg)
            path = re.sub(r"^hdfs://[^/]*", "", arg) or "/"
        else:
            proxy = self._proxy(None)
            path = arg if arg.startswith("/") else _relative(f"/user/{self.user}", arg)
        return _Target(proxy, path, arg)

    # ---- commands: each raises PathError for one path -------------------------------------------
    def mkdir(self, t: _Target, parents: bool) -> None:
        status = t.proxy.get_file_info(t.path)
        if status is not None:
            if not status.is_dir:
                raise PathError(f"`{t.shown}': Is not a directory")
            if not parents:
                raise PathError(f"`{t.shown}': File exists")
            return
        if not parents and t.proxy.get_file_info(_parent(t.path)) is None:
            raise _not_found(t.shown)
        t.proxy.mkdirs(t.path, 0o777 & ~self.umask, create_parent=True)

    def ls(
        self, t: _Target, directory_itself: bool, recursive: bool = False, human: bool = False
    ) -> None:
        """Ls: a file, or a directory's entries (``Found N items`` first, unless ``recursive``);
        ``recursive`` lists each directory entry's contents right after its line, depth first,
        as Hadoop's Command.processPaths does; columns are sized per directory."""
        status = t.proxy.get_file_info(t.path)
        if status is None:
            raise _not_found(t.shown)
        if not status.is_dir or directory_itself:
            self._print(format_listing([(status, t.shown)], human))
            return
        # A stack of directories being printed: each an iterator of (line, status, shown).
        pending = [self._ls_batch(t, t.path, t.shown, not recursive, human)]
        for _ in range(MAX_ENTRIES):
            entry = next(pending[-1], None) if pending else None
            if entry is None:
                if pending:
                    pending.pop()
                    continue
                return
            line, child, shown = entry
            self._print([line])
            if recursive and child.is_dir:
                pending.append(self._ls_batch(t, child.path, shown, False, human))

    def _ls_batch(
        self, t: _Target, path: str, shown: str, found_line: bool, human: bool
    ) -> Iterator[tuple[str, FileStatus, str]]:
        prefix = "" if shown == "." else shown.rstrip("/") + "/"  # `-ls` alone: "name"
        entries = [(c, prefix + c.name) for c in _bounded(t.proxy.list_status(path))]
        if entries and found_line:
            self._print([f"Found {len(entries)} items"])
        for line, (child, child_shown) in zip(format_listing(entries, human), entries):
            yield line, child, child_shown

    def rm(self, t: _Target, recursive: bool, force: bool) -> None:
        status = t.proxy.get_file_info(t.path)
        if status is None:
            if force:
                return
            raise _not_found(t.shown)
        if status.is_dir and not recursive:
            raise PathError(f"`{t.shown}': Is a directory")
        if not t.proxy.delete(t.path, recursive=status.is_dir):
            raise PathError(f"`{t.shown}': Input/output error")
        self._print([f"Deleted {t.shown}"])

    def mv(self, sources: list[_Target], dst: _Target) -> None:
        dst_status = dst.proxy.get_file_info(dst.path)
        if len(sources) > 1 and (dst_status is None or not dst_status.is_dir):
            raise PathError(f"`{dst.shown}': Is not a directory")
        errors = []
        for src in sources:
            try:
                self._mv_one(src, dst, dst_status)
            except (PathError, HadoopException) as e:
                errors.append(e)
                self._error("mv", e)
        if errors:
            raise _Reported()

    def _mv_one(self, src: _Target, dst: _Target, dst_status: FileStatus | None) -> None:
        if src.proxy is not dst.proxy:
            raise PathError(f"`{src.shown}': Does not match target filesystem")
        if src.proxy.get_file_info(src.path) is None:
            raise _not_found(src.shown)
        target, shown = dst.path, dst.shown
        if dst_status is not None and dst_status.is_dir:
            name = src.path.rstrip("/").rsplit("/", 1)[-1]
            target, shown = target.rstrip("/") + "/" + name, shown.rstrip("/") + "/" + name
        if dst.proxy.get_file_info(target) is not None:
            raise PathError(f"`{shown}': File exists")
        if dst.proxy.get_file_info(_parent(target)) is None:
            raise _not_found(shown)
        if not src.proxy.rename(src.path, target):
            raise PathError(f"`{src.shown}': Input/output error")

    def touchz(self, t: _Target) -> None:
        status = t.proxy.get_file_info(t.path)
        if status is not None:
            if status.is_dir:
                raise PathError(f"`{t.shown}': Is a directory")
            if status.length != 0:
                raise PathError(f"`{t.shown}': Not a zero-length file")
        elif t.proxy.get_file_info(_parent(t.path)) is None:
            raise _not_found(t.shown)
        t.proxy.create(t.path, 0o666 & ~self.umask, overwrite=True, create_parent=False)

    def chmod(self, t: _Target, new_mode: Callable[[int, bool], int], recursive: bool) -> None:
        for path, status in self._walk(t, recursive):
            t.proxy.set_permission(path, new_mode(status.permission, status.is_dir))

    def chown(self, t: _Target, owner: str | None, group: str | None, recursive: bool) -> None:
        for path, _status in self._walk(t, recursive):
            t.proxy.set_owner(path, owner, group)

    def _walk(self, t: _Target, recursive: bool) -> Iterator[tuple[str, FileStatus]]:
        status = t.proxy.get_file_info(t.path)
        if status is None:
            raise _not_found(t.shown)
        pending = [(t.path, status)]
        for _ in range(MAX_ENTRIES):
            if not pending:
                return
            path, status = pending.pop()
            yield path, status
            if recursive and status.is_dir:
                pending.extend((child.path, child) for child in t.proxy.list_status(path))

    # ---- output ----------------------------------------------------------------------------------
    def _print(self, lines: list[str]) -> None:
        for line in lines:
            print(line, file=self.out)

    def _error(self, cmd: str, error: BaseException) -> None:
        print(f"{cmd}: {error}", file=self.err)


class _Reported(Exception):
    """Errors were printed already; the command exits 1."""


def _relative(home: str, arg: str) -> str:
    """``arg`` (relative) under ``home``; ``.`` components dropped."""
    parts = [part for part in arg.split("/") if part and part != "."]
    return "/".join([home, *parts]) if parts else home


def _parent(path: str) -> str:
    parent = path.rstrip("/").rsplit("/", 1)[0]
    return parent or "/"


def _bounded(entries: Iterator[FileStatus]) -> Iterator[FileStatus]:
    for i, entry in enumerate(entries):
        if i >= MAX_ENTRIES:
            return
        yield entry


def _flags(args: list[str], allowed: str, cmd: str) -> tuple[set[str], list[str]]:
    """Leading single-letter flags (``-p``, ``-R``, ``-rf``) of ``cmd``; the rest are paths."""
    flags: set[str] = set()
    while args and args[0].startswith("-") and len(args[0]) > 1:
        arg = args.pop(0)
        if arg == "--":
            break
        for ch in arg[1:]:
            if ch not in allowed:
                raise UsageError(f"-{cmd}: Illegal option -{ch} (usage: {_usage_of(cmd)})")
            flags.add(ch)
    return flags, args


def _usage_of(cmd: str) -> str:
    for line in USAGE.splitlines():
        if line.strip().startswith(f"[-{cmd} "):
            return "hdfs-py dfs " + line.strip()[1:-1]
    return USAGE


def run(argv: Sequence[str], conf) -> int:
    """``hdfs-py dfs -COMMAND ARGS...``; returns the exit status."""
    args = list(argv)
    if not args or args[0] in ("-h", "-help", "--help"):
        print(USAGE, end="", file=sys.stdout if args else sys.stderr)
        return 0 if args else 2
    args = parse_generic_options(args, conf)
    if not args:
        raise UsageError("dfs: no command after the generic options (see -help)")
    cmd = args.pop(0).lstrip("-")
    if cmd not in ("mkdir", "ls", "rm", "mv", "touchz", "chmod", "chown"):
        raise UsageError(f"-{cmd}: Unknown command (run 'hdfs-py dfs -help')")
    shell = FsShell(conf)
    try:
        return _dispatch(shell, cmd, args)
    except (UsageError, BrokenPipeError):
        raise  # cli.main reports a usage error; a closed stdout pipe ends it quietly
    except (HadoopException, OSError) as e:
        # Not about one path: the NameNode cannot be reached, the configuration is bad, ...
        print(f"{cmd}: {e}", file=sys.stderr)
        return 1
    finally:
        shell.close()


def _dispatch(shell: FsShell, cmd: str, args: list[str]) -> int:
    if cmd == "mkdir":
        flags, paths = _flags(args, "p", cmd)
        action = lambda t: shell.mkdir(t, "p" in flags)  # noqa: E731
    elif cmd == "ls":
        flags, paths = _flags(args, "dhR", cmd)
        paths = paths or ["."]
        action = lambda t: shell.ls(t, "d" in flags, "R" in flags, "h" in flags)  # noqa: E731
    elif cmd == "rm":
        flags, paths = _flags(args, "rRf", cmd)
        action = lambda t: shell.rm(t, bool(flags & {"r", "R"}), "f" in flags)  # noqa: E731
    elif cmd == "touchz":
        flags, paths = _flags(args, "", cmd)
        action = shell.touchz
    elif cmd == "mv":
        flags, paths = _flags(args, "", cmd)
        if len(paths) < 2:
            raise UsageError(f"-mv: Not enough arguments: expected 2 but got {len(paths)}")
        return _run_one(
            shell,
            cmd,
            lambda: shell.mv([shell.target(p) for p in paths[:-1]], shell.target(paths[-1])),
        )
    elif cmd == "chmod":
        flags, rest = _flags(args, "R", cmd)
        if len(rest) < 2:
            raise UsageError(f"-chmod: Not enough arguments: expected 2 but got {len(rest)}")
        try:
            new_mode = parse_mode(rest[0])
        except IllegalArgumentException as e:
            raise UsageError(str(e)) from None
        paths = rest[1:]
        action = lambda t: shell.chmod(t, new_mode, "R" in flags)  # noqa: E731
    else:  # chown
        flags, rest = _flags(args, "R", cmd)
        if len(rest) < 2:
            raise UsageError(f"-chown: Not enough arguments: expected 2 but got {len(rest)}")
        m = _OWNER_GROUP.match(rest[0])
        if m is None or not (m.group(1) or m.group(2)):
            raise UsageError(
                f"chown: '{rest[0]}' does not match expected pattern for [owner][:group]."
            )
        owner, group = m.group(1) or None, m.group(2) or None
        paths = rest[1:]
        action = lambda t: shell.chown(t, owner, group, "R" in flags)  # noqa: E731
    if not paths:
        raise UsageError(f"-{cmd}: Not enough arguments: expected 1 but got 0")
    status = 0
    for path in paths:
        status = max(status, _run_one(shell, cmd, lambda p=path: action(shell.target(p))))
    return status


def _run_one(shell: FsShell, cmd: str, action: Callable[[], None]) -> int:
    """Run one path's action: 0, or 1 after printing its one-line error. Errors that are not
    about the path (a NameNode that cannot be reached, a bad configuration) propagate."""
    try:
        action()
    except _Reported:
        return 1
    except PathError as e:
        shell._error(cmd, e)
        return 1
    except (
        AccessControlException,  # "mkdir: Permission denied: user=alice, ...", then the next path
        FileNotFoundException,
        FileAlreadyExistsException,
        ParentNotDirectoryException,
        PathIsNotEmptyDirectoryException,
        IllegalArgumentException,
    ) as e:
        shell._error(cmd, e)
        return 1
    return 0
