"""The PySpark jobs: the randomized fault campaign and the journal audit (docs/spark.md).

* :mod:`~hadoop_qjm.spark.session` — the one place a SparkSession is built;
* :mod:`~hadoop_qjm.spark.fault_campaign` — ``hdfs-py fault-campaign`` (design paper §7.3);
* :mod:`~hadoop_qjm.spark.journal_audit` — ``hdfs-py journal-audit`` (§7.4.1);
* :mod:`~hadoop_qjm.spark.edits` — ``read_edits``: edit logs as a DataFrame;
* :mod:`~hadoop_qjm.spark.campaign_tasks`, :mod:`~hadoop_qjm.spark.segments` — what the
  executors run (plain Python, no pyspark);
* :mod:`~hadoop_qjm.spark.submit` — the file to give ``spark-submit``.

These are the only modules of the project that import pyspark, and only inside
functions: importing this package needs no pyspark.
"""

__all__: list[str] = []
