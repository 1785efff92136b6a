"""The session every job uses: loopback only, no UI, and executors that run the shipped
package zip rather than the driver's files."""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark")


def test_session_is_loopback_only_without_ui(spark) -> None:
    conf = spark.sparkContext.getConf()
    assert spark.sparkContext.master == "local[2]"
    assert conf.get("spark.driver.host") == "127.0.0.1"
    assert conf.get("spark.driver.bindAddress") == "127.0.0.1"
    assert conf.get("spark.ui.enabled") == "false"
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"


def test_executors_import_the_shipped_zip(spark) -> None:
    from hadoop_qjm.spark.session import package_zip

    # A lambda travels by value: a function of this module would need "tests" importable
    # on the executors, which it is not (they do not import from their working directory).
    where = lambda _: __import__("hadoop_qjm.spark.campaign_tasks", fromlist=["_"]).__file__  # noqa: E731
    files = spark.sparkContext.parallelize(range(4), 2).map(where).collect()
    assert all("hadoop_qjm.zip" in f for f in files), files
    assert package_zip() == package_zip()  # built once per process


def test_executors_read_the_configuration_schema_from_the_shipped_zip(spark) -> None:
    """The zip carries conf/*-default.xml in hadoop_qjm/conf/: an executor importing the
    package from it (no checkout beside it) finds the schema every daemon reads at start;
    without it every seed of the campaign failed ("The configuration schema … is missing")."""

    def schema_where(_):
        from hadoop_qjm.conf import config_schema

        return str(config_schema.schema_dir()), len(config_schema.load())

    found = spark.sparkContext.parallelize(range(2), 2).map(schema_where).collect()
    assert all("hadoop_qjm.zip" in where and keys > 100 for where, keys in found), found
