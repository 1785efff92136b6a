"""pyspark stays inside hadoop_qjm/spark, and even there only inside functions: the
rest of the project, and ``hdfs-py --help``, work without it. The jobs' own entry points
(``python -m hadoop_qjm.spark.fault_campaign``, the file ``spark.submit --path`` names)
run a job as ``hdfs-py`` does."""

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
#: The same for ``python -m hadoop_qjm.spark.fault_campaign``, and for the spark-submit
#: file run as a script (as spark-submit runs it: its own directory first on sys.path).
CAMPAIGN_WITHOUT_PYSPARK = (
    "import sys; sys.modules['pyspark'] = None; "
    "from hadoop_qjm.spark.fault_campaign import main; sys.exit(main(sys.argv[1:]))"
)
SUBMIT_WITHOUT_PYSPARK = (
    "import runpy, sys; sys.modules['pyspark'] = None; sys.argv.pop(0); "
    "sys.path.insert(0, __import__('os').path.dirname(sys.argv[0])); "
    "runpy.run_path(sys.argv[0], run_name='__main__')"
)
SUBMIT = str(SPARK / "submit.py")


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


def _run(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60)


def test_the_campaigns_module_entry_point_is_hdfs_py_fault_campaign(tmp_path) -> None:
    result = _run(sys.executable, "-m", "hadoop_qjm.spark.fault_campaign", "--help")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("usage: hdfs-py fault-campaign") and "--out" in result.stdout
    result = _run(sys.executable, "-m", "hadoop_qjm.spark.fault_campaign", "--bogus")
    assert result.returncode == 2
    assert result.stderr == "hdfs-py fault-campaign: unrecognized arguments: --bogus\n"
    args = ["--seeds", "1", "--out", str(tmp_path / "a")]
    result = _run(sys.executable, "-c", CAMPAIGN_WITHOUT_PYSPARK, *args)
    assert (result.returncode, result.stderr, result.stdout) == (1, MISSING + "\n", "")


def test_the_spark_submit_file_runs_either_job_with_hdfs_pys_options(tmp_path) -> None:
    path = _run(sys.executable, "-m", "hadoop_qjm.spark.submit", "--path")
    assert path.stdout == SUBMIT + "\n"
    for job in ("fault-campaign", "journal-audit"):
        result = _run(sys.executable, SUBMIT, job, "--help")
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"usage: hdfs-py {job}") and "--out" in result.stdout
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    audit = ["journal-audit", "--journal-dirs", str(tmp_path), "--out", str(tmp_path / "b")]
    result = _run(sys.executable, "-c", SUBMIT_WITHOUT_PYSPARK, SUBMIT, "--config",
                  str(conf_dir), "-D", "dfs.http.policy=HTTP_ONLY", *audit)  # fmt: skip
    assert (result.returncode, result.stderr, result.stdout) == (1, MISSING + "\n", "")
    # --config before the job is hdfs-py's: a missing directory is one line, nothing run.
    missing = tmp_path / "nowhere"
    result = _run(sys.executable, SUBMIT, "--config", str(missing), *audit)
    assert result.returncode == 2
    assert result.stderr == f"hdfs-py: configuration directory {missing} does not exist\n"


def test_the_spark_submit_file_runs_nothing_but_the_spark_jobs() -> None:
    result = _run(sys.executable, SUBMIT, "version")
    assert (result.returncode, result.stdout) == (2, "")
    assert result.stderr == (
        "hdfs-py: 'version' is not a Spark job: spark-submit runs fault-campaign or journal-audit\n"
    )
    result = _run(sys.executable, SUBMIT, "--help")
    assert result.returncode == 0 and "(fault-campaign|journal-audit)" in result.stdout
