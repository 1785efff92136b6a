"""The pure modules are pure: no socket, thread, Thrift or filesystem code (STYLE.md habit 1)."""

from __future__ import annotations

import ast
import importlib
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


#: Every pure module (STYLE.md habit 1) and what else it must not import.
PURE_MODULES = {
    "hadoop_qjm.qjournal.protocol.rules": set(),
    "hadoop_qjm.qjournal.protocol.journal_step": set(),
    "hadoop_qjm.qjournal.protocol.journal_read_rules": set(),
    "hadoop_qjm.qjournal.protocol.recovery_rules": set(),
    "hadoop_qjm.qjournal.protocol.sync_rules": set(),
    "hadoop_qjm.qjournal.client.segment_recovery_comparator": set(),
    "hadoop_qjm.qjournal.client.logger_progress": {"time"},
    "hadoop_qjm.ha.election_rules": {"kazoo", "time", "random"},
    "hadoop_qjm.ha.elector_states": {"kazoo", "time", "random"},
    "hadoop_qjm.ha.ha_service_protocol": set(),
    "hadoop_qjm.namenode.name_node_resource_policy": set(),
    "hadoop_qjm.namenode.ha.ha_state_change": set(),
    "hadoop_qjm.common.jmx_json": set(),
    "hadoop_qjm.namenode.fs_edit_log_state": set(),
    "hadoop_qjm.qjournal.protocol.peer_format": set(),
    "hadoop_qjm.qjournal.protocol.format_rules": set(),
    "hadoop_qjm.qjournal.server.scrub_rules": set(),
    "hadoop_qjm.qjournal.server.kept_segment_state": set(),
    "hadoop_qjm.qjournal.protocol.membership": set(),
    "hadoop_qjm.ipc.frames": set(),
    "hadoop_qjm.common.fs_permission": set(),
    "hadoop_qjm.namenode.fs_permission_checker": set(),
    "hadoop_qjm.namenode.fs_dir_rename_op": set(),
    "hadoop_qjm.namenode.fs_dir_mkdir_op": set(),
    "hadoop_qjm.namenode.fs_limits": set(),
    "hadoop_qjm.common.auth_to_local": set(),
    "hadoop_qjm.ipc.connection_context": set(),
}


def _top(name: str) -> str:
    return name.split(".", 1)[0]


@pytest.mark.parametrize("module", sorted(PURE_MODULES))
def test_pure_module_source_imports_nothing_forbidden(module: str) -> None:
    path = Path(importlib.import_module(module).__file__)  # type: ignore[arg-type]
    imported: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            imported |= {_top(alias.name) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(_top(node.module))
    forbidden = FORBIDDEN | PURE_MODULES[module]
    assert not imported & forbidden, sorted(imported & forbidden)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("module", sorted(PURE_MODULES))
def test_importing_a_pure_module_loads_no_forbidden_module(module: str) -> None:
    code = (
        "import sys, json\n"
        "before = set(sys.modules)\n"
        f"import {module}\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    root = Path(rules.__file__).resolve().parents[3]
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
    ).stdout
    added = {_top(name) for name in json.loads(out)}
    forbidden = (FORBIDDEN - ALWAYS_LOADED) | PURE_MODULES[module]
    assert not added & forbidden, sorted(added & forbidden)
