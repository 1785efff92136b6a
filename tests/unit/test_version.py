"""``hdfs-py version``: Hadoop's ``hdfs version`` lines for a Python package."""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path

import pytest

import hadoop_qjm
from hadoop_qjm.cli import main
from hadoop_qjm.tools.version import (
    DEPENDENCIES,
    VersionInfo,
    source_of,
    version_lines,
)

pytestmark = pytest.mark.timeout(60)

PACKAGE = Path(hadoop_qjm.__file__).resolve().parent


def test_prints_the_version_revision_python_and_libraries(capsys):
    assert main(["version"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5, lines
    try:
        version = importlib.metadata.version("hadoop-qjm-py")
    except importlib.metadata.PackageNotFoundError:
        version = hadoop_qjm.__version__
    assert lines[0] == f"hadoop-qjm-py {version}"
    assert lines[1].startswith("Source code repository ")
    head = subprocess.run(
        ["git", "-C", str(PACKAGE.parent), "rev-parse", "HEAD"], capture_output=True, text=True
    )
    if head.returncode == 0:  # run from a checkout
        assert lines[1].endswith(f" -r {head.stdout.strip()}")
    assert lines[2].startswith("Python 3.") and " on " in lines[2]
    for name in DEPENDENCIES:
        assert f"{name} {importlib.metadata.version(name)}" in lines[3]
    assert "pyspark " in lines[3]
    assert lines[4] == f"This command was run using {PACKAGE}"


def test_an_installed_package_has_no_revision(tmp_path):
    package = tmp_path / "site-packages" / "hadoop_qjm"
    package.mkdir(parents=True)
    assert source_of(package) == ("unknown", "unknown")


def test_a_missing_library_is_named_not_installed():
    info = VersionInfo(
        "0.1.0", "unknown", "unknown", "3.11.7 (CPython)", "linux-x86_64",
        (("thriftpy2", "0.7.1"), ("pyspark", None)), "/opt/hadoop_qjm",
    )  # fmt: skip
    assert version_lines(info) == [
        "hadoop-qjm-py 0.1.0",
        "Source code repository unknown -r unknown",
        "Python 3.11.7 (CPython) on linux-x86_64",
        "Dependencies: thriftpy2 0.7.1, pyspark not installed",
        "This command was run using /opt/hadoop_qjm",
    ]


def test_an_argument_is_one_line_and_exit_2(capsys):
    assert main(["version", "-bogus"]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == "hdfs-py version: unrecognized arguments: -bogus"
    assert captured.out == ""


def test_listed_in_the_help(capsys):
    assert main(["--help"]) == 0
    assert any(line.split()[:1] == ["version"] for line in capsys.readouterr().out.splitlines())
