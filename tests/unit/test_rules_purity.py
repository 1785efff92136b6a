"""rules.py is pure: no socket, thread, Thrift or filesystem code (STYLE.md habit 1)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import hadoop_qjm.qjournal.protocol.rules as rules

FORBIDDEN = {
    "socket",
    "ssl",
    "selectors",
    "socketserver",
    "threading",
    "_thread",
    "asyncio",
    "concurrent",
    "multiprocessing",
    "subprocess",
    "thriftpy2",
    "os",
    "io",
    "pathlib",
    "shutil",
    "tempfile",
    "glob",
    "fcntl",
    "mmap",
    "http",
    "urllib",
}
# Imported by the interpreter itself before any user code; what matters is
# that importing rules adds none of these.
ALWAYS_LOADED = {"os", "io", "_thread"}


def _top(name: str) -> str:
    return name.split(".", 1)[0]


def test_rules_source_imports_nothing_forbidden() -> None:
    tree = ast.parse(Path(rules.__file__).read_text())
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported |= {_top(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(_top(node.module))
    assert not imported & FORBIDDEN


@pytest.mark.timeout(60)
def test_importing_rules_loads_no_forbidden_module() -> None:
    code = (
        "import sys, json\n"
        "before = set(sys.modules)\n"
        "import hadoop_qjm.qjournal.protocol.rules\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    root = Path(rules.__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    added = {_top(name) for name in json.loads(out)}
    assert not added & (FORBIDDEN - ALWAYS_LOADED), sorted(added & FORBIDDEN)
