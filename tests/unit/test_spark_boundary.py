"""pyspark stays inside hadoop_qjm/spark, and even there only inside functions: the
rest of the project, and ``hdfs-py --help``, work without it."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import hadoop_qjm

PACKAGE = Path(hadoop_qjm.__file__).resolve().parent
SPARK = PACKAGE / "spark"
MISSING = "pyspark is not installed: pip install 'hadoop-qjm-py[spark]'"
# Run a command with pyspark made unimportable (as if it were not installed).
WITHOUT_PYSPARK = (
    "import sys; sys.modules['pyspark'] = None; "
    "from hadoop_qjm.cli import main; sys.exit(main(sys.argv[1:]))"
)


def _pyspark_imports(tree: ast.AST) -> list[ast.stmt]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        if any(name == "pyspark" or name.startswith("pyspark.") for name in names):
            found.append(node)
    return found


def test_only_the_spark_package_imports_pyspark() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if SPARK in path.parents:
            continue
        if _pyspark_imports(ast.parse(path.read_text(encoding="utf-8"))):
            offenders.append(str(path.relative_to(PACKAGE)))
    assert offenders == []


def test_the_spark_modules_import_pyspark_only_inside_functions() -> None:
    for path in sorted(SPARK.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        top_level = [node for node in tree.body if node in _pyspark_imports(tree)]
        assert top_level == [], f"{path.name} imports pyspark at module level"


def _hdfs_py(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_PYSPARK, *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_help_works_without_pyspark() -> None:
    result = _hdfs_py("--help")
    assert result.returncode == 0, result.stderr
    assert "fault-campaign" in result.stdout and "journal-audit" in result.stdout
    for command in ("fault-campaign", "journal-audit"):
        result = _hdfs_py(command, "--help")
        assert result.returncode == 0, result.stderr
        assert "--out" in result.stdout


def test_a_missing_pyspark_is_one_line(tmp_path) -> None:
    for args in (
        ["fault-campaign", "--seeds", "1", "--out", str(tmp_path / "a")],
        ["journal-audit", "--journal-dirs", str(tmp_path), "--out", str(tmp_path / "b")],
    ):
        result = _hdfs_py(*args)
        assert result.returncode == 1
        assert result.stderr == MISSING + "\n"
        assert result.stdout == ""
