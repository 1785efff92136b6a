"""``hdfs-py bench SUBCOMMAND [ARGS...]``: benchmarks.

Each subcommand is a module ``hadoop_qjm/tools/bench/<name>.py`` exposing
``run(argv, conf) -> int``; adding a module adds the subcommand. Goals are printed beside
the figures, never asserted: timings are measured here, not in the tests.
Also runnable as ``python -m hadoop_qjm.tools.bench SUBCOMMAND``.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Sequence

from hadoop_qjm.common.exceptions import UsageError

__all__ = ["mode_options", "run", "subcommands"]


def mode_options(parser, args, mode: str, defaults: dict[str, object]) -> None:
    """Options that belong to ``mode`` (a flag such as ``--catch-up``), parsed with default
    None: one given without the mode is a malformed command line (``parser.error``: one
    sentence, exit 2), not silently ignored; those not given take ``defaults``."""
    given = [name for name in defaults if getattr(args, name) is not None]
    if given and not getattr(args, mode.lstrip("-").replace("-", "_")):
        flags = [f"--{name.replace('_', '-')}" for name in given]
        flags = " and ".join([", ".join(flags[:-1]), flags[-1]] if len(flags) > 1 else flags)
        parser.error(f"{flags} only {'applies' if len(given) == 1 else 'apply'} with {mode}")
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)


def subcommands() -> list[str]:
    """The names of the benchmark modules in this package."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_"))


def _usage() -> str:
    return "usage: hdfs-py bench {" + "|".join(subcommands()) + "} [ARGS...]"


def run(argv: Sequence[str], conf) -> int:
    """Dispatch to ``hadoop_qjm.tools.bench.<argv[0]>.run(argv[1:], conf)``."""
    args = list(argv)
    if not args:  # a malformed command line: the usage, on stderr, exit 2
        print(_usage(), file=sys.stderr)
        return 2
    if args[0] in ("-h", "--help", "-help"):
        print(_usage())
        print("Run 'hdfs-py bench SUBCOMMAND --help' for its options.")
        return 0
    name = args[0]
    if name not in subcommands():
        raise UsageError(f"unknown benchmark '{name}'; {_usage()}")
    module = importlib.import_module(f"{__name__}.{name}")
    return int(module.run(args[1:], conf) or 0)
