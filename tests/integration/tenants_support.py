"""Issue 35's end-to-end proof, shared by the plain (tests/integration) and the TLS
(tests/security) runs: an operator in ``supergroup`` and two tenants, alice and bob, run
``hdfs-py dfs`` against a NameNode over real RPC; every refusal is Hadoop's one line and
changes nothing, and every call is one audit line (not a test module)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from hadoop_qjm.namenode.name_node import NameNode
from tests.integration.namenode_support import nn_conf, started_name_node

__all__ = [
    "GROUP_OVERRIDES",
    "OPERATOR",
    "TENANTS",
    "Dfs",
    "DfsResult",
    "run_tenants_scenario",
    "tenants_name_node",
]

#: The operator's user (in supergroup through hadoop.user.group.static.mapping.overrides).
OPERATOR = "ops"
TENANTS = ("alice", "bob")
#: hadoop.user.group.static.mapping.overrides of both runs: the tenants have no groups.
GROUP_OVERRIDES = f"{OPERATOR}=supergroup;alice=;bob=;dr.who=;"


@dataclass(frozen=True)
class DfsResult:
    status: int
    out: list[str]
    err: list[str]


#: ``dfs(user, *args)``: ``hdfs-py dfs ARGS`` run as ``user``.
Dfs = Callable[..., DfsResult]


@contextmanager
def tenants_name_node(base: Path, **extra: object) -> Iterator[NameNode]:
    """A started NameNode (local edits only, in this process) run by ``hdfs``, listening on
    127.0.0.1, with :data:`GROUP_OVERRIDES` and the properties ``extra``."""
    conf = nn_conf(
        base,
        edits=("edits",),
        **{
            "dfs.namenode.rpc-address": "127.0.0.1:0",
            "dfs.namenode.http-address": "127.0.0.1:0",
            "dfs.namenode.https-address": "127.0.0.1:0",
            **extra,
            "hadoop.user.group.static.mapping.overrides": GROUP_OVERRIDES,
        },
    )
    with started_name_node(conf) as nn:
        yield nn


def run_tenants_scenario(dfs: Dfs, file_info: Callable[[str], object], audit, auth: str) -> None:
    """The checks of issue 35's "What must be shown", in order, through ``dfs``; each
    command's audit lines (``audit``: tests/conftest.py's AuditLines) are exactly one per
    RPC it makes, with ``ugi=<user> (auth:<auth>)`` and ``ip=/127.0.0.1``.
    ``file_info(path)`` looks at the namespace outside the audited commands."""

    def step(user: str, command: str, audited: str, status: int = 0, err: str = "", out=""):
        """``dfs`` as ``user``: its exit status, its whole stderr (``err``) and stdout
        (``out``); ``audited``: one ``allowed cmd src [perm]`` per line."""
        start = len(audit.lines)
        result = dfs(user, *command.split())
        lines = ([err] if err else [], [out] if out else [])
        assert (result.status, result.err, result.out) == (status, *lines), (user, command)
        parsed = audit.parsed()[start:]  # parsed(): every line's keys in Hadoop's order
        expected = [(*line.split(), "null")[:4] for line in audited.strip().splitlines()]
        assert [(r["allowed"], r["cmd"], r["src"], r["perm"]) for r in parsed] == expected
        for row in parsed:
            assert row["ugi"] == f"{user} (auth:{auth})" and row["ip"] == "/127.0.0.1", row
            assert (row["dst"], row["proto"]) == ("null", "rpc"), row

    # The operator makes bob's home (0755 after the umask 022) and a sticky /tmp.
    step(OPERATOR, "-mkdir -p /home/bob /tmp", """
        true getfileinfo /home/bob
        true mkdirs /home/bob ops:supergroup:rwxr-xr-x
        true getfileinfo /tmp
        true mkdirs /tmp ops:supergroup:rwxr-xr-x
    """)  # fmt: skip
    step(OPERATOR, "-chown bob /home/bob", """
        true getfileinfo /home/bob
        true setOwner /home/bob bob:supergroup:rwxr-xr-x
    """)  # fmt: skip
    step(OPERATOR, "-chmod 1777 /tmp", """
        true getfileinfo /tmp
        true setPermission /tmp ops:supergroup:rwxrwxrwt
    """)  # fmt: skip

    # alice may not write in bob's 0755 home: one line, nothing created ...
    denied = 'inode="/home/bob":bob:supergroup:drwxr-xr-x'
    step("alice", "-mkdir /home/bob/x", """
        true getfileinfo /home/bob/x
        true getfileinfo /home/bob
        false mkdirs /home/bob/x
    """, 1, f"mkdir: Permission denied: user=alice, access=WRITE, {denied}")  # fmt: skip
    assert file_info("/home/bob/x") is None
    # ... and may once bob opens it.
    step("bob", "-chmod 777 /home/bob", """
        true getfileinfo /home/bob
        true setPermission /home/bob bob:supergroup:rwxrwxrwx
    """)  # fmt: skip
    step("alice", "-mkdir /home/bob/x", """
        true getfileinfo /home/bob/x
        true getfileinfo /home/bob
        true mkdirs /home/bob/x alice:supergroup:rwxr-xr-x
    """)  # fmt: skip
    assert file_info("/home/bob/x").owner == "alice"

    # alice may not chown, not even her own directory; the operator may.
    step("alice", "-chown bob /home/bob/x", """
        true getfileinfo /home/bob/x
        false setOwner /home/bob/x
    """, 1, "chown: User alice is not a super user (non-super user cannot change owner).")  # fmt: skip
    assert file_info("/home/bob/x").owner == "alice"
    step(OPERATOR, "-chown bob /home/bob/x", """
        true getfileinfo /home/bob/x
        true setOwner /home/bob/x bob:supergroup:rwxr-xr-x
    """)  # fmt: skip
    assert file_info("/home/bob/x").owner == "bob"

    # In the sticky /tmp, alice may not remove bob's file; bob may.
    step("bob", "-touchz /tmp/f", """
        true getfileinfo /tmp/f
        true getfileinfo /tmp
        true create /tmp/f bob:supergroup:rw-r--r--
    """)  # fmt: skip
    sticky = (
        'rm: Permission denied by sticky bit: user=alice, path="/tmp/f":bob:supergroup:'
        f'-rw-r--r--, parent="/tmp":{OPERATOR}:supergroup:drwxrwxrwt'
    )
    step("alice", "-rm /tmp/f", """
        true getfileinfo /tmp/f
        false delete /tmp/f
    """, 1, sticky)  # fmt: skip
    assert file_info("/tmp/f") is not None
    step("bob", "-rm /tmp/f", """
        true getfileinfo /tmp/f
        true delete /tmp/f
    """, out="Deleted /tmp/f")  # fmt: skip
    assert file_info("/tmp/f") is None
