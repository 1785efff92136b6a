"""The command line's parts that every command shares, below the ``cli`` package so that a
command in any layer can use them: :class:`CommandParser` (an ArgumentParser that raises
:class:`UsageError`), small argument types, and how ``hdfs-py`` finds its configuration
(``--config DIR``, else ``$HADOOP_CONF_DIR``, else the installation's ``conf/``).
:mod:`hadoop_qjm.cli` re-exports them.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence

from hadoop_qjm.common.exceptions import UsageError

__all__ = [
    "CommandParser",
    "conf_dir_in_use",
    "finite_float",
    "installation_conf_dir",
    "load_configuration",
]


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


def load_configuration(conf_dir: str | None, overrides: Sequence[tuple[str, str]] = ()):
    """The Configuration of ``conf_dir`` (else ``$HADOOP_CONF_DIR``, else the installation's
    ``conf/``): defaults, then the site files, then ``overrides``."""
    from hadoop_qjm.conf import Configuration

    conf = Configuration(load_defaults=True)
    conf_dir = conf_dir_in_use(conf_dir)
    if conf_dir:
        if not os.path.isdir(conf_dir):
            raise UsageError(f"configuration directory {conf_dir} does not exist")
        conf.add_conf_dir(conf_dir)
    for key, value in overrides:
        conf.set(key, value, "from command line")  # Hadoop's GenericOptionsParser's source
    return conf
