"""One SparkSession for every Spark test: ``local[2]``, 2 shuffle partitions, no UI,
loopback only. A session costs seconds to start, so the suite shares one; it is built by
the jobs' own :func:`~hadoop_qjm.spark.session.build_session` and stopped at the end."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")


@pytest.fixture(scope="session")
def spark():
    from pyspark import SparkContext

    from hadoop_qjm.spark.session import build_session

    if SparkContext._active_spark_context is not None:  # noqa: SLF001
        pytest.fail("a SparkContext is already running in this process")
    session = build_session(
        "hadoop-qjm tests",
        "local[2]",
        ui=False,
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
