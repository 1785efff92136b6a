"""The package's shape (issue 34, item 8): no import circle, no import against the layering,
no module over 600 lines (STYLE.md habit 11, DESIGN.md §2 "Layering").

Read statically with ``ast``, so an import inside a function or under ``TYPE_CHECKING``
counts as much as one at the top. Each allow-list holds what the code has today and may
only shrink: a new circle, upward import or long module fails, and so does an entry that
is no longer true (take it off the list when the redesign removes it).
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(60)

PACKAGE = Path(__file__).resolve().parents[2] / "hadoop_qjm"
MAX_LINES = 600

#: DESIGN.md §2, from the bottom; a module may import its own layer and the ones before it.
LAYERS = (
    "webapps",
    "conf",
    "common",
    "ipc",
    "editlog",
    "qjournal",
    "ha",
    "namenode",
    "testing",
    "spark",
    ("tools", "cli"),
)

#: Circles of today (each the sorted modules of one strongly connected component).
ALLOWED_CIRCLES: set[tuple[str, ...]] = set()

#: Imports of a higher layer today, as (importer, imported).
ALLOWED_UPWARD: set[tuple[str, str]] = set()

#: Modules over MAX_LINES today.
ALLOWED_LONG: set[str] = set()


@cache
def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name below ``hadoop_qjm`` ('' for the
    package itself)."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The package's modules one import statement of ``module`` names: ``from p import m``
    names the module ``p.m`` when there is one, else ``p`` itself."""
    modules = _modules()
    names: set[str] = set()
    if isinstance(node, ast.Import):
        bases = [alias.name for alias in node.names]
        for base in bases:
            if base == "hadoop_qjm" or base.startswith("hadoop_qjm."):
                names.add(base.removeprefix("hadoop_qjm").removeprefix("."))
        return names & modules.keys()
    if node.level:
        is_package = modules[module].name == "__init__.py"
        anchor = module.split(".") if module else []
        if not is_package:
            anchor = anchor[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join(anchor + ([node.module] if node.module else []))
    elif node.module and (node.module == "hadoop_qjm" or node.module.startswith("hadoop_qjm.")):
        base = node.module.removeprefix("hadoop_qjm").removeprefix(".")
    else:
        return names
    for alias in node.names:
        candidate = f"{base}.{alias.name}" if base else alias.name
        names.add(candidate if candidate in modules else base)
    return names & modules.keys()


@cache
def _graph() -> dict[str, frozenset[str]]:
    graph = {}
    for module, path in _modules().items():
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                edges |= _imported(module, node)
        edges.discard(module)
        graph[module] = frozenset(edges)
    return graph


def _circles(graph: dict[str, frozenset[str]]) -> set[tuple[str, ...]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[tuple[str, ...]] = set()
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.add(tuple(sorted(component)))
    return found


def _rank(module: str) -> int | None:
    top = module.split(".", 1)[0]
    for rank, layer in enumerate(LAYERS):
        if top == layer or (isinstance(layer, tuple) and top in layer):
            return rank
    return None  # the package's own __init__


def _upward(graph: dict[str, frozenset[str]]) -> set[tuple[str, str]]:
    upward = set()
    for module, imported in graph.items():
        mine = _rank(module)
        for other in imported:
            theirs = _rank(other)
            if mine is not None and theirs is not None and theirs > mine:
                upward.add((module, other))
    return upward


def _long() -> set[str]:
    return {
        module
        for module, path in _modules().items()
        if len(path.read_text().splitlines()) > MAX_LINES
    }


def _check(kind: str, found: set, allowed: set) -> None:
    new = sorted(found - allowed)
    gone = sorted(allowed - found)
    problems = []
    if new:
        problems.append(f"new {kind}: {new}")
    if gone:
        problems.append(f"{kind} no longer there, take them off the allow-list: {gone}")
    assert not problems, "; ".join(problems)


def test_every_layer_named_is_a_package_or_module() -> None:
    tops = {module.split(".", 1)[0] for module in _modules() if module}
    assert all(_rank(top) is not None for top in tops), tops


def test_no_import_circle() -> None:
    _check("import circles", _circles(_graph()), ALLOWED_CIRCLES)


def test_no_import_against_the_layering() -> None:
    _check("imports of a higher layer", _upward(_graph()), ALLOWED_UPWARD)


def test_no_module_over_600_lines() -> None:
    _check(f"modules over {MAX_LINES} lines", _long(), ALLOWED_LONG)


def test_the_checks_find_what_they_look_for() -> None:
    graph = {
        "conf.a": frozenset({"common.b"}),
        "common.b": frozenset({"common.c"}),
        "common.c": frozenset({"common.b"}),
        "namenode.d": frozenset({"conf.a"}),
    }
    assert _circles(graph) == {("common.b", "common.c")}
    assert _upward(graph) == {("conf.a", "common.b")}


def test_imports_inside_functions_and_type_checking_count() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from hadoop_qjm.conf import configuration\n"
        "def f():\n"
        "    from ..qjournal.protocol import rules\n"
        "    import hadoop_qjm.common.durable\n"
    )
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names |= _imported("namenode.fs_image", node)
    assert names == {"conf.configuration", "qjournal.protocol.rules", "common.durable"}
