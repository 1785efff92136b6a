"""The file to give ``spark-submit`` for the project's Spark jobs.

    spark-submit [SPARK OPTIONS] "$(python -m hadoop_qjm.spark.submit --path)" \\
        fault-campaign|journal-audit [JOB OPTIONS]

spark-submit needs a ``.py`` file; this one runs ``hdfs-py`` with the rest of the command
line, from the copy of ``hadoop_qjm`` the file belongs to (as ``bin/hdfs-py`` runs its
checkout), whether or not the driver's Python has the package installed. The master and
deploy options are spark-submit's (a job's ``--master`` is only for running it without
spark-submit). ``python -m hadoop_qjm.spark.submit --path``
prints where this file is; ``--zip DEST`` writes the package as a zip for
``spark-submit --py-files`` (needed when the driver itself runs on the cluster).
"""

from __future__ import annotations

import os
import sys

__all__ = ["main"]


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
    from hadoop_qjm.cli import main as hdfs_py

    return hdfs_py(argv)


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
