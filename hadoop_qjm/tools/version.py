"""``hdfs-py version``: what is running, in the shape of Hadoop's ``hdfs version``.

Hadoop's VersionInfo prints the release, the source repository and revision it was
built from, who built it and when, with which protoc, and the jar it ran from. A Python
package is not compiled: its lines are the release, the repository and revision (of a
checkout; "unknown" for an installed package), the interpreter and platform, the
versions of the libraries it runs with, and the package directory it ran from::

    hadoop-qjm-py 0.1.0
    Source code repository /src/hadoop-qjm-py -r 1f2c716c9e0d…
    Python 3.12.3 (CPython) on linux-x86_64
    Dependencies: thriftpy2 0.5.2, lxml 5.3.0, …, pyspark not installed
    This command was run using /src/hadoop-qjm-py/hadoop_qjm
"""

from __future__ import annotations

import importlib.metadata
import platform
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["DEPENDENCIES", "VersionInfo", "version_info", "version_lines", "run"]

DISTRIBUTION = "hadoop-qjm-py"
#: The distributions reported, in this order; the last is the ``spark`` extra's.
DEPENDENCIES = ("thriftpy2", "lxml", "prometheus-client", "psutil", "cryptography", "kazoo")
OPTIONAL = ("pyspark",)
UNKNOWN = "unknown"


@dataclass(frozen=True)
class VersionInfo:
    version: str
    repository: str
    revision: str
    python: str
    platform: str
    #: ``(name, version or None when not installed)``
    dependencies: tuple[tuple[str, str | None], ...]
    package_dir: str


def _distribution_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git(checkout: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(checkout), *args],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = done.stdout.strip()
    return text if done.returncode == 0 and text else None


def source_of(package_dir: Path) -> tuple[str, str]:
    """``(repository, revision)`` of the checkout holding ``package_dir`` (its ``origin``
    remote, else its path; ``HEAD``), or ``("unknown", "unknown")`` for an installed
    package (no ``.git`` beside it)."""
    checkout = package_dir.parent
    if not (checkout / ".git").exists():  # a directory, or a worktree's file
        return UNKNOWN, UNKNOWN
    revision = _git(checkout, "rev-parse", "HEAD") or UNKNOWN
    repository = _git(checkout, "remote", "get-url", "origin") or str(checkout)
    return repository, revision


def version_info() -> VersionInfo:
    import hadoop_qjm

    package_dir = Path(hadoop_qjm.__file__).resolve().parent
    repository, revision = source_of(package_dir)
    return VersionInfo(
        version=_distribution_version(DISTRIBUTION) or hadoop_qjm.__version__,
        repository=repository,
        revision=revision,
        python=f"{platform.python_version()} ({platform.python_implementation()})",
        platform=f"{sys.platform}-{platform.machine() or UNKNOWN}",
        dependencies=tuple((name, _distribution_version(name)) for name in DEPENDENCIES + OPTIONAL),
        package_dir=str(package_dir),
    )


def version_lines(info: VersionInfo) -> list[str]:
    """The lines ``hdfs-py version`` prints for ``info``."""
    deps = ", ".join(
        f"{name} {version}" if version else f"{name} not installed"
        for name, version in info.dependencies
    )
    return [
        f"{DISTRIBUTION} {info.version}",
        f"Source code repository {info.repository} -r {info.revision}",
        f"Python {info.python} on {info.platform}",
        f"Dependencies: {deps}",
        f"This command was run using {info.package_dir}",
    ]


def run(argv: list[str], conf=None) -> int:
    """Entry point of ``hdfs-py version``."""
    from hadoop_qjm.common.command_line import CommandParser

    parser = CommandParser(
        prog="hdfs-py version",
        description="Print the version, the source revision, and the Python and library "
        "versions, as Hadoop's 'hdfs version'.",
    )
    parser.parse_args(argv)
    for line in version_lines(version_info()):
        print(line)
    return 0
