"""The one place a SparkSession is built for the project's Spark jobs.

:func:`spark_session` builds (or reuses) a session configured the way every job needs:

* the master is ``--master`` if given, else the one ``spark-submit`` chose, else
  ``local[*]`` (the embedded default needs nothing but the installed package and Java);
* executors run this interpreter (``PYSPARK_PYTHON=sys.executable``, unless the user or
  spark-submit set it): Spark's default is ``python3`` from ``PATH``, which may lack our
  dependencies; and they do not import from their working directory
  (``PYTHONSAFEPATH``);
* on a local master (``local``, ``local[N]``, ``local-cluster[…]``) the driver, and the
  workers of ``local-cluster``, bind to 127.0.0.1: nothing listens beyond loopback; on
  ``local``/``local[N]`` the driver JVM, which shares the cores with the Python
  workers, runs without the C2 JIT (:data:`LOCAL_JVM_OPTIONS`);
* the ``hadoop_qjm`` package is zipped once per process and shipped with ``addPyFile``,
  so executors on other machines run the driver's code and never read its files. On a
  local master the installed package would do, but shipping it there too means the
  tests exercise what a real cluster does.

This module and its siblings in :mod:`hadoop_qjm.spark` are the only ones importing
pyspark, and they import it inside functions, so ``hdfs-py --help`` works without it.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import shutil
import sys
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from hadoop_qjm.common.durable import blocking_file
from hadoop_qjm.common.exceptions import HadoopException
from hadoop_qjm.conf import config_schema

__all__ = [
    "PYSPARK_MISSING",
    "PysparkMissingError",
    "DEFAULT_MASTER",
    "add_job_arguments",
    "build_session",
    "check_out_dir",
    "is_local_master",
    "join_path",
    "package_zip",
    "parse_conf_pairs",
    "require_pyspark",
    "run_job",
    "spark_session",
    "spark_error_line",
    "stop_session",
    "write_text",
]

LOG = logging.getLogger(__name__)

DEFAULT_MASTER = "local[*]"
PYSPARK_MISSING = "pyspark is not installed: pip install 'hadoop-qjm-py[spark]'"
LOOPBACK = "127.0.0.1"
#: JVM options of the driver on a local master (see :func:`build_session`).
LOCAL_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"

_zip_path: Path | None = None


class PysparkMissingError(HadoopException, ImportError):
    """pyspark cannot be imported; the message says how to install it."""


def add_job_arguments(parser: Any) -> None:
    """The options every Spark job of ``hdfs-py`` takes: ``--master``, ``--out``,
    ``--overwrite``, ``--progress-interval``, ``--conf KEY=VALUE`` and ``--ui``."""
    from hadoop_qjm.common.command_line import finite_float

    parser.add_argument("--master", help="Spark master (default local[*], or spark-submit's)")
    parser.add_argument("--out", required=True, help="output directory (local path or URI)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    parser.add_argument(
        "--progress-interval",
        type=finite_float,
        default=5.0,
        help="seconds between progress lines on stderr when it is not a terminal "
        "(0: no progress; default 5)",
    )
    parser.add_argument(
        "--conf", action="append", default=[], metavar="KEY=VALUE", help="a Spark setting"
    )
    parser.add_argument("--ui", action="store_true", help="start the Spark web UI")


def require_pyspark() -> None:
    """Import pyspark or raise :class:`PysparkMissingError` (one line for the user)."""
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise PysparkMissingError(PYSPARK_MISSING) from None


#: The masters SparkContext accepts (its "Master must either be yarn or start with spark,
#: k8s, or local", and mesos).
_SPARK_MASTER = re.compile(
    r"local|local\[[^\]]+\]|local-cluster\[[^\]]+\]|yarn|(spark|k8s|mesos)://\S+"
)


def is_local_master(master: str | None) -> bool:
    """True for ``local`` and ``local[…]``: driver and executor in one JVM."""
    return master is not None and (master == "local" or master.startswith("local["))


def _is_local_family(master: str | None) -> bool:
    return is_local_master(master) or (master or "").startswith("local-cluster[")


def _under_spark_submit() -> bool:
    # spark-submit's PythonRunner starts the driver with the gateway's port in the
    # environment; the master and deploy options are then spark-submit's to decide.
    return "PYSPARK_GATEWAY_PORT" in os.environ


def _scratch_dir(prefix: str) -> str:
    """A temporary directory removed when this process exits."""
    path = tempfile.mkdtemp(prefix=prefix)
    atexit.register(shutil.rmtree, path, True)
    return path


def package_zip() -> Path:
    """``hadoop_qjm`` as a zip for ``addPyFile``: built once per process, removed at exit.

    Sources and package data (the Thrift IDL) only: no ``__pycache__``; and the
    configuration schema. Importing from a zip works because the IDL and the schema are
    read through ``importlib.resources``.
    """
    global _zip_path
    if _zip_path is not None and _zip_path.exists():
        return _zip_path
    import hadoop_qjm

    package_dir = Path(hadoop_qjm.__file__).resolve().parent
    archive = getattr(hadoop_qjm.__spec__.loader, "archive", None)
    if not package_dir.is_dir() and archive:
        # Imported from a zip already (spark-submit --py-files): ship that one.
        _zip_path = Path(archive)
        return _zip_path
    tmp = Path(_scratch_dir("hadoop-qjm-pyfiles-"))
    target = tmp / "hadoop_qjm.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in sorted(package_dir.rglob("*")):
            if "__pycache__" in path.parts or path.suffix in (".pyc", ".pyo") or path.is_dir():
                continue
            zf.write(path, Path("hadoop_qjm") / path.relative_to(package_dir))
        # The configuration schema (conf/*-default.xml), which every daemon and the quorum
        # client read: in the package, where config_schema looks last.
        schema = config_schema.schema_dir()
        for name in config_schema.SCHEMA_FILES:
            zf.writestr(f"hadoop_qjm/conf/{name}", (schema / name).read_bytes())
    _zip_path = target
    return target


def build_session(
    app_name: str,
    master: str | None = None,
    *,
    ui: bool | None = None,
    conf: Mapping[str, str] | None = None,
    ship_package: bool = True,
) -> Any:
    """A new (or the running) SparkSession configured for the project's jobs.

    ``master``: None means spark-submit's choice when run under spark-submit, else
    :data:`DEFAULT_MASTER`. ``ui``: the Spark web UI; None turns it on only for
    non-local masters (under spark-submit: leaves it to spark-submit's settings).
    ``conf``: more ``spark.*`` settings (they win over ours).
    """
    require_pyspark()
    from pyspark.sql import SparkSession

    submitted = _under_spark_submit()
    if master is None and not submitted:
        master = DEFAULT_MASTER
    settings: dict[str, str] = {
        "spark.ui.showConsoleProgress": "false",
        # Python >= 3.11: executors' workers do not put their working directory first on
        # sys.path, so they import the shipped zip, not a checkout they happen to run in.
        "spark.executorEnv.PYTHONSAFEPATH": "1",
    }
    if not submitted:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    if _is_local_family(master):
        # Loopback only; also silences "your hostname resolves to a loopback address".
        os.environ.setdefault("SPARK_LOCAL_IP", LOOPBACK)
        settings["spark.driver.host"] = LOOPBACK
        settings["spark.driver.bindAddress"] = LOOPBACK
    if is_local_master(master):
        # The driver JVM is the executor too, on the cores the Python workers need; its
        # own work here is light (a few rows per seed). Without the C2 JIT and with one
        # GC thread it takes about half the CPU it otherwise would (measured: the C2
        # compiler threads were 40% of the JVM's CPU during a 100-seed campaign).
        settings["spark.driver.extraJavaOptions"] = LOCAL_JVM_OPTIONS
    if ui is None and not submitted:
        ui = not _is_local_family(master)
    if ui is not None:  # under spark-submit, its --conf spark.ui.enabled decides
        settings["spark.ui.enabled"] = "true" if ui else "false"
    settings.update(conf or {})
    builder = SparkSession.builder.appName(app_name)
    if master is not None:
        builder = builder.master(master)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if ship_package:
        spark.sparkContext.addPyFile(str(package_zip()))
    return spark


def _active_session() -> Any | None:
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    if SparkContext._active_spark_context is None:  # noqa: SLF001 - pyspark's own marker
        return None
    return SparkSession.builder.getOrCreate()


@contextlib.contextmanager
def spark_session(
    app_name: str,
    master: str | None = None,
    *,
    ui: bool | None = None,
    conf: Mapping[str, str] | None = None,
) -> Iterator[Any]:
    """The running session if there is one (left running), else a new one stopped at exit.

    A job run from a program that already has a session (a notebook, the test suite)
    uses that session and its master; ``master`` then only draws a warning if it differs.
    """
    require_pyspark()
    active = _active_session()
    if active is not None:
        running = active.sparkContext.master
        if master is not None and master != running:
            LOG.warning("Using the running SparkSession (master %s), not %s", running, master)
        yield active
        return
    spark = build_session(app_name, master, ui=ui, conf=conf)
    try:
        spark.sparkContext.setLogLevel("WARN")
        yield spark
    finally:
        stop_session(spark)


def stop_session(spark: Any) -> None:
    """Stop ``spark``; for ``local-cluster`` also remove its workers' scratch directory.

    Those workers keep each executor's files and logs in ``$SPARK_HOME/work/<app id>``
    (inside the installed pyspark package: the directory cannot be moved elsewhere) and
    never delete them.
    """
    sc = spark.sparkContext
    master, app_id = sc.master, sc.applicationId
    spark_home = os.environ.get("SPARK_HOME")
    if spark_home is None:
        from pyspark.find_spark_home import _find_spark_home

        spark_home = _find_spark_home()
    spark.stop()
    if master.startswith("local-cluster[") and spark_home and app_id:
        work = Path(spark_home) / "work"
        shutil.rmtree(work / app_id, ignore_errors=True)
        with contextlib.suppress(OSError):
            work.rmdir()  # only if no other application's directory is left


def spark_error_line(error: BaseException) -> str:
    """One line for an error raised through Spark (a task's Python error, a bad path, …)."""
    text = str(error).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    # A failed task carries the executor's Python traceback; its last line names the error.
    for line in reversed(lines):
        if line and not line.startswith(("at ", "File ", "...", "^", "~")) and ": " in line:
            if "Error" in line or "Exception" in line:
                return line[:500]
    return (lines[0] if lines else type(error).__name__)[:500]


# ---- the jobs' command-line plumbing ------------------------------------------------------------


def parse_conf_pairs(pairs: list[str]) -> dict[str, str]:
    """``--conf KEY=VALUE`` options as a dict; ValueError for a malformed one."""
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"--conf needs KEY=VALUE, got {pair!r}")
        conf[key.strip()] = value
    return conf


R = TypeVar("R")


def run_job(
    name: str, args: Any, parser: Any, job: Callable[[Any], R], note: str | None = None
) -> R | None:
    """What a job's ``run`` does once its own options are checked: ``--conf`` parsed (a
    usage error through ``parser``), pyspark and ``--out`` checked, ``note`` (if any)
    written to stderr, then ``job(spark)`` in the job's session (:func:`spark_session`,
    from ``--master`` and ``--ui``). Its result; None, after one line on stderr named
    ``name``, when the job could not start or Spark failed it."""
    try:
        spark_conf = parse_conf_pairs(args.conf)
    except ValueError as e:
        parser.error(str(e))
    if args.master is not None and not _SPARK_MASTER.fullmatch(args.master):
        # Spark's own refusal comes as a JVM stack trace on stderr.
        parser.error(
            f"--master {args.master!r} is not a Spark master (local, local[N], local[*], "
            "local-cluster[…], spark://HOST:PORT, yarn, k8s://…, mesos://…)"
        )
    try:
        require_pyspark()
    except PysparkMissingError as e:
        print(e, file=sys.stderr)
        return None
    problem = check_out_dir(args.out, args.overwrite)
    if problem is not None:
        print(f"{name}: {problem}", file=sys.stderr)
        return None
    if note is not None:
        print(note, file=sys.stderr)
    try:
        with spark_session(
            f"hadoop-qjm {name}", args.master, ui=args.ui or None, conf=spark_conf
        ) as spark:
            return job(spark)
    except Exception as e:  # noqa: BLE001 - Spark's errors are Java stack traces
        print(f"{name}: {spark_error_line(e)}", file=sys.stderr)
        return None


def join_path(base: str, name: str) -> str:
    """``base/name`` for a local path or a URI."""
    return base.rstrip("/") + "/" + name


def check_out_dir(out: str, overwrite: bool) -> str | None:
    """Why a job must not write to ``out`` (empty, a non-empty local directory, a local
    path under a file), or None: checked before Spark starts, not after the job ran."""
    if not out.strip():
        return "--out is empty"
    if "://" in out and not out.startswith("file://"):
        return None  # Spark itself refuses to overwrite a table without --overwrite
    path = Path(out[len("file://") :] if out.startswith("file://") else out)
    blocker = blocking_file(path)
    if blocker is not None:
        if blocker == path.absolute():
            return f"{out} exists and is not a directory"
        return f"{out} cannot be made: {blocker} is not a directory"
    if not overwrite and path.is_dir() and any(path.iterdir()):
        return f"{out} exists and is not empty (use --overwrite)"
    return None


def write_text(spark: Any, out: str, name: str, text: str, written: str) -> str:
    """Write ``text`` to ``out/name``; returns where it went.

    If Spark wrote ``out/written`` where this process can see it (a local path) the
    text is a plain file; otherwise (HDFS, S3, …) it goes through Spark, as a
    one-file text table ``out/<name without extension>``.
    """
    local = out[len("file://") :] if out.startswith("file://") else out
    if "://" not in local and (Path(local) / written / "_SUCCESS").exists():
        target = Path(local) / name
        target.write_text(text, encoding="utf-8")
        return str(target)
    target_uri = join_path(out, name.rsplit(".", 1)[0])
    lines = [(line,) for line in text.splitlines()]
    df = spark.createDataFrame(lines, "value string").coalesce(1)
    df.write.mode("overwrite").text(target_uri)
    return target_uri
