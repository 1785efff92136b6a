"""The file to give ``spark-submit`` for the project's Spark jobs.

    spark-submit [SPARK OPTIONS] "$(python -m hadoop_qjm.spark.submit --path)" \\
        fault-campaign|journal-audit [JOB OPTIONS]

spark-submit needs a ``.py`` file; this one runs the job the rest of the command line
names, as ``hdfs-py`` would (its ``--config DIR`` and ``-D key=value`` before the job, its
errors as one line), from the copy of ``hadoop_qjm`` the file belongs to (as
``bin/hdfs-py`` runs its checkout), whether or not the driver's Python has the package
installed. The master and
deploy options are spark-submit's (a job's ``--master`` is only for running it without
spark-submit). ``python -m hadoop_qjm.spark.submit --path``
prints where this file is; ``--zip DEST`` writes the package as a zip for
``spark-submit --py-files`` (needed when the driver itself runs on the cluster).
"""

from __future__ import annotations

import os
import sys

__all__ = ["JOBS", "main"]

#: The commands this file runs: the project's Spark jobs (every other ``hdfs-py`` command
#: is no Spark application).
JOBS = ("fault-campaign", "journal-audit")
USAGE = (
    "usage: spark-submit [SPARK OPTIONS] submit.py [--config DIR] [-D key=value ...] "
    f"({'|'.join(JOBS)}) [JOB OPTIONS]"
)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--path"]:
        print(os.path.abspath(__file__))
        return 0
    if argv[:1] == ["--zip"] and len(argv) == 2:
        import shutil

        from hadoop_qjm.spark.session import package_zip

        shutil.copyfile(package_zip(), argv[1])
        print(argv[1])
        return 0
    from hadoop_qjm.common.command_line import run_main

    return run_main(lambda: _run_job(list(argv)))


def _run_job(args: list[str]) -> int:
    """``[--config DIR] [-D key=value ...] JOB [JOB OPTIONS]``, run as ``hdfs-py`` runs it."""
    from hadoop_qjm.common.command_line import parse_hdfs_py_options, run_command
    from hadoop_qjm.common.exceptions import UsageError

    options = parse_hdfs_py_options(args)
    if options.help:
        print(USAGE)
        return 0
    if not args:
        print(USAGE, file=sys.stderr)
        return 2
    if options.daemon_action is not None:
        raise UsageError("--daemon runs journalnode, namenode or zkfc, not a Spark job")
    job = args.pop(0)
    if job == "fault-campaign":
        from hadoop_qjm.spark.fault_campaign import run
    elif job == "journal-audit":
        from hadoop_qjm.spark.journal_audit import run
    else:
        raise UsageError(f"'{job}' is not a Spark job: spark-submit runs {' or '.join(JOBS)}")
    return run_command(run, args, options.conf_dir, options.overrides)


if __name__ == "__main__":
    # Run as a script, this file's directory is sys.path[0]: drop it, so that its
    # siblings are importable only as hadoop_qjm.spark.* (never as top-level modules).
    # In its place, unless already on the path (an installed copy: site-packages), the
    # directory holding this file's hadoop_qjm (a checkout): the script runs the package
    # it belongs to (as bin/hdfs-py does), whichever copy the driver's Python has
    # installed, if any.
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    root = os.path.dirname(os.path.dirname(here))
    if root not in (os.path.abspath(p or os.curdir) for p in sys.path):
        sys.path.insert(0, root)
    sys.exit(main(sys.argv[1:]))
