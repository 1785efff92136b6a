"""Fencing: Hadoop's NodeFencer, ShellCommandFencer and SshFenceByTcpPort.

``dfs.ha.fencing.methods`` lists methods one per line, each ``name`` or ``name(arg)``::

    sshfence(hdfs:2222)
    shell(/usr/local/bin/fence-nn.sh $target_host $target_port)   # comments are allowed

:class:`NodeFencer` tries them in order and stops at the first that succeeds. ``shell``
runs its argument with ``bash -e -c`` (the configuration and the ``target_*`` parameters
in its environment); ``sshfence`` ssh-es to the target host and kills whatever listens on
the NameNode's RPC port with ``fuser``. Parsing (:func:`parse_fencing_methods`) is pure;
processes are at the edge (:class:`ShellCommandFencer`, :class:`SshFenceByTcpPort`).
"""

from __future__ import annotations

import getpass
import logging
import os
import re
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Protocol

from hadoop_qjm.common.exceptions import IOException, register_exception
from hadoop_qjm.conf.configuration import Configuration
from hadoop_qjm.conf.dfs_config_keys import (
    DFS_HA_FENCE_METHODS_KEY,
    DFS_HA_FENCING_SHELL_TIMEOUT_DEFAULT,
    DFS_HA_FENCING_SHELL_TIMEOUT_KEY,
    DFS_HA_FENCING_SSH_CONNECT_TIMEOUT_DEFAULT,
    DFS_HA_FENCING_SSH_CONNECT_TIMEOUT_KEY,
    DFS_HA_FENCING_SSH_PRIVATE_KEY_FILES_KEY,
)

__all__ = [
    "BadFencingConfigurationException",
    "FenceMethod",
    "FenceMethodSpec",
    "FenceTarget",
    "NodeFencer",
    "ShellCommandFencer",
    "SshArgs",
    "SshFenceByTcpPort",
    "abbreviate",
    "parse_fencing_methods",
    "parse_ssh_args",
    "ssh_command",
]

LOG = logging.getLogger(__name__)


class BadFencingConfigurationException(IOException):
    """``dfs.ha.fencing.methods`` (or a method's argument) cannot be used as written."""

    java_name = "org.apache.hadoop.ha.BadFencingConfigurationException"


register_exception(BadFencingConfigurationException)

SHELL = "shell"
SSHFENCE = "sshfence"
#: The Java class behind each short name: the name Hadoop logs a method by.
JAVA_CLASSES = {
    SHELL: "org.apache.hadoop.ha.ShellCommandFencer",
    SSHFENCE: "org.apache.hadoop.ha.SshFenceByTcpPort",
}
_SHORT_NAMES = {**{n: n for n in JAVA_CLASSES}, **{j: n for n, j in JAVA_CLASSES.items()}}

# Java's regex and String semantics, spelled out: \s is ASCII whitespace, '.' stops at a
# line terminator, '$' also matches before a final line terminator, trim() drops every
# char <= ' '.
_JAVA_SPACE = " \t\n\x0b\f\r"
_EOL = "\n\r\u0085\u2028\u2029"
_JAVA_TRIM = "".join(chr(c) for c in range(0x21))
_LINE_SEPARATOR = re.compile(f"[{_JAVA_SPACE}]*\n[{_JAVA_SPACE}]*")
_COMMENT = re.compile(f"#[^{_EOL}]*(?=(?:\r\n|[{_EOL}])?\\Z)")
_WITH_ARG = re.compile(f"([a-zA-Z0-9.$]+)\\(([^{_EOL}]+?)\\)")
_WITHOUT_ARG = re.compile("[a-zA-Z0-9.$]+")
_USER_PORT = re.compile("([^:]+?)?(?::([0-9]+))?")


@dataclass(frozen=True)
class FenceMethodSpec:
    """One configured method: its short name (``shell``, ``sshfence``) and argument."""

    name: str
    arg: str | None = None

    def __str__(self) -> str:
        # Hadoop's FenceMethodWithArg.toString, "null" included: what operators grep for.
        arg = "null" if self.arg is None else self.arg
        return f"{JAVA_CLASSES.get(self.name, self.name)}({arg})"


@dataclass(frozen=True)
class SshArgs:
    """``sshfence([user][:port])``: ``user`` None means the current user."""

    user: str | None = None
    port: int = 22


def parse_ssh_args(arg: str | None) -> SshArgs:
    """SshFenceByTcpPort.Args: the whole argument must match ``([^:]+?)?(?::(\\d+))?``;
    an empty or missing argument means the defaults. Ours: the port must be 1..65535."""
    if not arg:
        return SshArgs()
    match = _USER_PORT.fullmatch(arg)
    if match is None:
        raise BadFencingConfigurationException(f"Unable to parse user and SSH port: {arg}")
    user, port_text = match.groups()
    if port_text is None:
        return SshArgs(user=user)
    port = int(port_text)
    if not 0 < port < 65536:
        raise BadFencingConfigurationException(f"Port number '{port_text}' invalid")
    return SshArgs(user=user, port=port)


def parse_fencing_methods(
    text: str, key: str = DFS_HA_FENCE_METHODS_KEY
) -> tuple[FenceMethodSpec, ...]:
    """NodeFencer.parseMethods: the rule for reading ``dfs.ha.fencing.methods``.

    Split on ``\\s*\\n\\s*``; in each line drop a ``#`` comment running to its end, trim,
    skip it if empty. A line must then be wholly ``NAME(ARG)`` (``NAME`` of
    ``[a-zA-Z0-9.$]``, ``ARG`` non-empty, running to the line's last ``)``) or ``NAME``.
    ``NAME`` is a short name or its Java class; ``shell`` needs an argument; ``sshfence``'s
    must parse (:func:`parse_ssh_args`). Anything else raises
    :class:`BadFencingConfigurationException` naming the line and ``key``. Empty text
    gives no methods.
    """
    methods = []
    for raw in _LINE_SEPARATOR.split(text):
        line = _COMMENT.sub("", raw).strip(_JAVA_TRIM)
        if line:
            methods.append(_parse_method(line, key))
    return tuple(methods)


def _parse_method(line: str, key: str) -> FenceMethodSpec:
    match = _WITH_ARG.fullmatch(line)
    if match is not None:
        name, arg = match.group(1), match.group(2)
    elif _WITHOUT_ARG.fullmatch(line):
        name, arg = line, None
    else:
        raise BadFencingConfigurationException(f"Unable to parse line: '{line}' in {key}")
    short = _SHORT_NAMES.get(name)
    if short is None:
        raise BadFencingConfigurationException(
            f"Could not find configured fencing method {name} in {key} "
            f"(known: {', '.join(JAVA_CLASSES)})"
        )
    if short == SHELL and not arg:
        raise BadFencingConfigurationException(
            f"No argument passed to 'shell' fencing method in {key}: '{line}'"
        )
    if short == SSHFENCE:
        try:
            parse_ssh_args(arg)
        except BadFencingConfigurationException as e:
            raise BadFencingConfigurationException(f"{e} in {key}") from None
    return FenceMethodSpec(short, arg)


def abbreviate(cmd: str, length: int) -> str:
    """ShellCommandFencer.abbreviate: ``'...'`` in the middle when ``cmd`` is longer."""
    if len(cmd) <= length or length < 5:
        return cmd
    first = (length - 3) // 2
    return cmd[:first] + "..." + cmd[len(cmd) - (length - first - 3) :]


def ssh_command(
    host: str,
    args: SshArgs,
    user: str,
    key_files: Sequence[str],
    connect_timeout_ms: int,
    remote_command: str,
    ssh: str = "ssh",
) -> list[str]:
    """The ``ssh`` argv that runs ``remote_command`` on ``host`` without ever prompting."""
    connect_timeout_s = max(1, -(-connect_timeout_ms // 1000))
    argv = [ssh, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"]
    argv += ["-o", f"ConnectTimeout={connect_timeout_s}", "-p", str(args.port)]
    for key_file in key_files:
        argv += ["-i", key_file]
    return argv + ["-l", user, "--", host, remote_command]


@dataclass(frozen=True)
class FenceTarget:
    """The NameNode to fence: its ids and its RPC address."""

    nameservice_id: str
    namenode_id: str
    host: str
    port: int

    def fencing_parameters(self) -> dict[str, str]:
        """HAServiceTarget.getFencingParameters as ShellCommandFencer exports them."""
        return {
            "target_host": self.host,
            "target_port": str(self.port),
            "target_address": f"{self.host}:{self.port}",
            "target_nameserviceid": self.nameservice_id,
            "target_namenodeid": self.namenode_id,
        }

    def __str__(self) -> str:
        return f"NameNode at {self.host}:{self.port}"


class FenceMethod(Protocol):
    """Hadoop's FenceMethod: True when ``target`` is fenced. Logs its own reason to fail."""

    def try_fence(self, target: FenceTarget, arg: str | None) -> bool: ...


# ---- processes (the edge) -----------------------------------------------------------------------


def _pump(stream: IO[bytes], level: int, prefix: str) -> threading.Thread:
    """Hadoop's StreamPumper: each line of ``stream`` to the log, prefixed."""

    def run() -> None:
        with stream:
            for raw in stream:
                LOG.log(level, "%s: %s", prefix, raw.decode("utf-8", "replace").rstrip("\r\n"))

    thread = threading.Thread(target=run, name=f"{prefix}: StreamPumper", daemon=True)
    thread.start()
    return thread


def _run_pumped(
    argv: list[str], env: Mapping[str, str] | None, timeout_s: float, what: str
) -> int | None:
    """Run ``argv`` in its own process group, its output logged; its exit status, or
    None if it (or a child still holding its output) outlived ``timeout_s``, in which case
    the whole group was killed and reaped. OSError when it cannot be started."""
    deadline = time.monotonic() + timeout_s
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,  # no tty: ssh or a script never waits for a password
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        start_new_session=True,  # its own group, so a timeout kills its children too
    )
    LOG.info("Launched '%s' with pid %d", what, proc.pid)
    prefix = f"[PID {proc.pid}] {abbreviate(what, 20)}"
    pumps = [_pump(proc.stdout, logging.INFO, prefix), _pump(proc.stderr, logging.WARNING, prefix)]
    finished = False
    try:
        proc.wait(timeout=timeout_s)
        for pump in pumps:
            pump.join(max(0.0, deadline - time.monotonic()))
        finished = not any(pump.is_alive() for pump in pumps)
        return proc.returncode if finished else None
    except subprocess.TimeoutExpired:
        return None
    finally:
        if not finished:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait()
            for pump in pumps:
                pump.join(5.0)  # the pipes close once the group is gone


def _current_user() -> str | None:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return None


class ShellCommandFencer:
    """``shell(cmd)``: ``bash -e -c cmd``; exit status 0 means fenced.

    The environment is ours, plus every configuration key with ``.`` replaced by ``_``
    (raw values, as Hadoop's Configuration iterator gives them), plus the target's
    ``target_*`` parameters. Ours: the command may run ``dfs.ha.fencing.shell.timeout.ms``;
    then its process group is killed and the method has failed.
    """

    def __init__(self, conf: Configuration) -> None:
        self.conf = conf
        self.timeout_ms = conf.get_time_duration(
            DFS_HA_FENCING_SHELL_TIMEOUT_KEY, DFS_HA_FENCING_SHELL_TIMEOUT_DEFAULT
        )

    def environment(self, target: FenceTarget) -> dict[str, str]:
        env = dict(os.environ)
        for key in self.conf:
            name, value = key.replace(".", "_"), self.conf.get_raw(key) or ""
            if name and "=" not in name and "\0" not in name + value:
                env[name] = value
        env.update(target.fencing_parameters())
        return env

    def try_fence(self, target: FenceTarget, arg: str | None) -> bool:
        if not arg:
            raise BadFencingConfigurationException("No argument passed to 'shell' fencing method")
        try:
            rc = _run_pumped(
                ["bash", "-e", "-c", arg], self.environment(target), self.timeout_ms / 1000, arg
            )
        except OSError as e:
            LOG.warning("Unable to execute %s: %s", arg, e)
            return False
        if rc is None:
            LOG.warning(
                "Fencing command '%s' timed out after %d ms (%s); killed its process group",
                arg,
                self.timeout_ms,
                DFS_HA_FENCING_SHELL_TIMEOUT_KEY,
            )
            return False
        if rc != 0:
            LOG.warning("Fencing command '%s' exited with status %d", arg, rc)
        return rc == 0


class SshFenceByTcpPort:
    """``sshfence([user][:port])``: kill what listens on the target's port, over ssh.

    Fenced when ``fuser -k`` killed it (exit 0), or when it found nothing it could kill
    (exit 1) and ``nc -z`` then finds nothing listening. ssh's own failure (exit 255) or a
    timeout is a failure. Ours: each ssh run is bounded by the connect timeout plus
    ``dfs.ha.fencing.shell.timeout.ms``.
    """

    def __init__(self, conf: Configuration, ssh: str = "ssh") -> None:
        self.ssh = ssh
        self.connect_timeout_ms = conf.get_time_duration(
            DFS_HA_FENCING_SSH_CONNECT_TIMEOUT_KEY, DFS_HA_FENCING_SSH_CONNECT_TIMEOUT_DEFAULT, "ms"
        )
        self.key_files = tuple(conf.get_trimmed_strings(DFS_HA_FENCING_SSH_PRIVATE_KEY_FILES_KEY))
        self.command_timeout_ms = conf.get_time_duration(
            DFS_HA_FENCING_SHELL_TIMEOUT_KEY, DFS_HA_FENCING_SHELL_TIMEOUT_DEFAULT
        )

    def try_fence(self, target: FenceTarget, arg: str | None) -> bool:
        args = parse_ssh_args(arg)
        user = args.user or _current_user()
        ssh = shutil.which(self.ssh)
        if ssh is None or user is None:
            reason = f"no '{self.ssh}' client on the PATH" if ssh is None else "no user name"
            LOG.warning("Unable to create SSH session: %s", reason)
            return False
        host, port = target.host, target.port

        def run(command: str) -> int | None:
            argv = ssh_command(
                host, args, user, self.key_files, self.connect_timeout_ms, command, ssh
            )
            timeout_s = (self.connect_timeout_ms + self.command_timeout_ms) / 1000
            rc = _run_pumped(argv, None, timeout_s, f"{command} via ssh")
            if rc is None:
                LOG.warning("'%s' via ssh to %s timed out; killed ssh", command, host)
            elif rc == 255:  # ssh's own failure: could not connect or authenticate
                LOG.warning("Unable to connect to %s as user %s", host, user)
            return rc

        LOG.info("Connecting to %s...", host)
        LOG.info("Looking for process running on port %d", port)
        try:
            rc = run(f"PATH=$PATH:/sbin:/usr/sbin fuser -v -k -n tcp {port}")
            if rc == 0:
                LOG.info("Successfully killed process that was listening on port %d", port)
                return True
            if rc != 1:
                if rc is not None and rc != 255:
                    LOG.warning("fuser on %s exited with status %d", host, rc)
                return False
            # fuser's 1: nothing was running, or we may not see it (another user's process).
            LOG.info(
                "Indeterminate response from trying to kill service. "
                "Verifying whether it is running using nc..."
            )
            rc = run(f"nc -z {shlex.quote(host)} {port}")
        except OSError as e:
            LOG.warning("Unable to run %s: %s", ssh, e)
            return False
        if rc is None or rc == 255:
            return False
        if rc == 0:
            LOG.warning("Unable to fence - it is running but we cannot kill it")
            return False
        LOG.info("Verified that the service is down.")
        return True


# ---- the fencer ---------------------------------------------------------------------------------


class NodeFencer:
    """Tries each configured fencing method in turn; the first success fences the target."""

    def __init__(
        self,
        methods: Sequence[FenceMethodSpec],
        conf: Configuration,
        implementations: Mapping[str, FenceMethod] | None = None,
        key: str = DFS_HA_FENCE_METHODS_KEY,
    ) -> None:
        """``implementations`` maps a method name to its code (default: ours for
        ``shell`` and ``sshfence``); no methods is a BadFencingConfigurationException."""
        if not methods:
            raise BadFencingConfigurationException(
                f"No fencer configured for {key}: it lists no fencing method"
            )
        self.methods = tuple(methods)
        self.implementations: dict[str, FenceMethod] = dict(implementations or {})
        for name in {spec.name for spec in self.methods} - set(self.implementations):
            if name == SHELL:
                self.implementations[name] = ShellCommandFencer(conf)
            elif name == SSHFENCE:
                self.implementations[name] = SshFenceByTcpPort(conf)
            else:
                raise BadFencingConfigurationException(
                    f"Could not find configured fencing method {name} in {key}"
                )

    @classmethod
    def create(cls, conf: Configuration, key: str = DFS_HA_FENCE_METHODS_KEY) -> NodeFencer:
        """The fencer ``key`` configures; BadFencingConfigurationException if it is unset,
        empty or malformed (Hadoop's create plus checkFencingConfigured)."""
        text = conf.get(key)
        if text is None:
            raise BadFencingConfigurationException(f"No fencer configured for {key}: it is unset")
        return cls(parse_fencing_methods(text, key), conf, key=key)

    def fence(self, target: FenceTarget) -> bool:
        """True as soon as one method fences ``target``; False when none did."""
        LOG.info("====== Beginning Service Fencing Process... ======")
        for i, spec in enumerate(self.methods, start=1):
            LOG.info("Trying method %d/%d: %s", i, len(self.methods), spec)
            try:
                fenced = self.implementations[spec.name].try_fence(target, spec.arg)
            except BadFencingConfigurationException as e:
                LOG.warning("Fencing method %s misconfigured: %s", spec, e)
                continue
            except Exception as e:
                LOG.warning(
                    "Fencing method %s failed with an unexpected error: %s", spec, e, exc_info=True
                )
                continue
            if fenced:
                LOG.info("Fencing method %s was successful.", spec)
                LOG.info("====== Fencing successful by method %s ======", spec)
                return True
            LOG.warning("Fencing method %s was unsuccessful.", spec)
        LOG.error("Unable to fence service by any configured method.")
        return False
