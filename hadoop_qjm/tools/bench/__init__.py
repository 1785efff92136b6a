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

__all__ = ["run", "subcommands"]


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
