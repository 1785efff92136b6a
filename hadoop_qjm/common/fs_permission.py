"""FsAction and FsPermission: Hadoop's ``org.apache.hadoop.fs.permission`` (pure).

A permission is the sticky bit and three ``rwx`` triples in 10 bits (``0o1777``), printed
as Hadoop prints it: ``rwxr-xr-x``, with the last character ``t`` (sticky, others may
execute) or ``T`` (sticky, they may not). :func:`get_umask` reads
``fs.permissions.umask-mode`` as Hadoop's ``FsPermission.getUMask`` does: three octal
digits (``022``, ``0022``) or a symbolic mode (``u=rwx,g=rx,o=``: the bits that stay
*allowed*, so that one is the umask ``027``).
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

from hadoop_qjm.common.exceptions import IllegalArgumentException

__all__ = ["FsAction", "FsPermission", "DEFAULT_UMASK", "UMASK_LABEL", "get_umask", "parse_umask"]

#: FsPermission.UMASK_LABEL and DEFAULT_UMASK.
UMASK_LABEL = "fs.permissions.umask-mode"
DEFAULT_UMASK = 0o022

#: UmaskParser's patterns: octal without a sticky digit, or symbolic without X or t.
_UMASK_OCTAL = re.compile(r"^\s*[+]?(0*)([0-7]{3})\s*$")
_UMASK_SYMBOLIC = re.compile(r"\s*([ugoa]*)([+=-]+)([rwx]*)([,\s]*)\s*")


class FsAction(enum.IntEnum):
    """Hadoop's FsAction: a set of r, w and x as the 3-bit number of one triple."""

    NONE = 0
    EXECUTE = 1
    WRITE = 2
    WRITE_EXECUTE = 3
    READ = 4
    READ_EXECUTE = 5
    READ_WRITE = 6
    ALL = 7

    def implies(self, other: FsAction | None) -> bool:
        """Whether this action includes every bit of ``other`` (FsAction.implies)."""
        return other is None or (self & other) == other

    @property
    def symbol(self) -> str:
        """``rwx``, ``r-x``, ... (FsAction.SYMBOL)."""
        return "".join(c if self & bit else "-" for c, bit in (("r", 4), ("w", 2), ("x", 1)))

    def __str__(self) -> str:  # Java's enum toString: the name ("access=WRITE")
        return self.name


@dataclass(frozen=True, slots=True)
class FsPermission:
    """The sticky bit and the user, group and other actions (``mode & 0o1777``)."""

    mode: int

    def __post_init__(self) -> None:
        object.__setattr__(self, "mode", self.mode & 0o1777)

    @classmethod
    def from_octal(cls, text: str) -> FsPermission:
        """``"755"``, ``"1777"``: 3 or 4 octal digits (as ``hdfs dfs -chmod`` takes them)."""
        if not re.fullmatch(r"[01]?[0-7]{3}", text.strip()):
            raise IllegalArgumentException(f"Invalid octal permission: {text}")
        return cls(int(text.strip(), 8))

    @property
    def user_action(self) -> FsAction:
        return FsAction((self.mode >> 6) & 7)

    @property
    def group_action(self) -> FsAction:
        return FsAction((self.mode >> 3) & 7)

    @property
    def other_action(self) -> FsAction:
        return FsAction(self.mode & 7)

    @property
    def sticky_bit(self) -> bool:
        return bool(self.mode & 0o1000)

    def apply_umask(self, umask: int) -> FsPermission:
        """The permission with ``umask``'s bits cleared; like Hadoop's applyUMask it drops
        the sticky bit."""
        return FsPermission(self.mode & ~umask & 0o777)

    def __str__(self) -> str:
        text = self.user_action.symbol + self.group_action.symbol + self.other_action.symbol
        if self.sticky_bit:
            text = text[:-1] + ("t" if self.other_action & FsAction.EXECUTE else "T")
        return text


def parse_umask(text: str) -> int:
    """A umask as Hadoop's UmaskParser reads one (octal, or symbolic: the bits allowed)."""
    symbolic = _parse_symbolic(text)
    if symbolic is not None:
        return ~symbolic & 0o777
    match = _UMASK_OCTAL.match(text)
    if match is None:
        raise IllegalArgumentException(text)
    return int(match.group(2), 8)


def _parse_symbolic(text: str) -> int | None:
    """The mode a symbolic ``[ugoa]*[+=-][rwx]*`` list gives from 0, None if ``text`` is
    not symbolic (PermissionParser.applyNormalPattern, then combineModes(0))."""
    pos, clauses = 0, []
    while True:
        match = _UMASK_SYMBOLIC.match(text, pos)
        if match is None:
            if not clauses:
                return None
            raise IllegalArgumentException(text)
        clauses.append(match)
        pos = match.end()
        if pos >= len(text):
            break
        if "," not in match.group(4):
            raise IllegalArgumentException(text)
    # (type, bits) per class u, g, o; '+' with 0 bits leaves a class at 0.
    classes = {"u": ("+", 0), "g": ("+", 0), "o": ("+", 0)}
    for match in clauses:
        who = set(match.group(1).replace("a", "")) or {"u", "g", "o"}
        op = match.group(2)[-1]
        bits = sum(b for c, b in (("r", 4), ("w", 2), ("x", 1)) if c in match.group(3))
        for name in who:
            classes[name] = (op, bits)
    mode = 0
    for shift, name in ((6, "u"), (3, "g"), (0, "o")):
        op, bits = classes[name]
        mode |= (bits if op in "+=" else 0) << shift  # from 0: '+'/'=' set, '-' clears
    return mode


def get_umask(conf: Any) -> int:
    """``fs.permissions.umask-mode`` of ``conf`` (default ``022``) as Hadoop's
    ``FsPermission.getUMask``; an unreadable value raises IllegalArgumentException with
    Hadoop's sentence."""
    value = conf.get(UMASK_LABEL) if conf is not None else None
    if value is None:
        return DEFAULT_UMASK
    try:
        return parse_umask(value)
    except IllegalArgumentException:
        raise IllegalArgumentException(
            f"Unable to parse configuration {UMASK_LABEL} with value {value} as octal or "
            "symbolic umask."
        ) from None
