"""Edit logs as a Spark DataFrame, read by the project's own edit-log reader.

    >>> df = read_edits(spark, ["/data/jn1/mycluster/current"])
    >>> df.groupBy("op_name").count().orderBy("count", ascending=False).show()

One row per op: ``txid``, ``opcode`` (Hadoop's byte), ``op_name`` (``OP_MKDIR``, …),
``path`` (the op's path, or its source for a rename; null for ops without one),
``timestamp`` (its timestamp or mtime; null if none), ``segment`` (the file name) and
``node`` (which input it came from). A path may be a segment file, a directory of
segments (a JournalNode's edits dir, a journal's dir or its ``current/``), or an
``http(s)://`` URL of a segment (``/getJournal`` on a JournalNode). Directories are
listed and segments read by the executors, so the paths must be readable where the
executors run (the driver reads nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from hadoop_qjm.spark.segments import EDIT_FIELDS, expand_paths, op_rows

__all__ = ["EDITS_SCHEMA", "edits_dataframe", "read_edits"]

#: The DataFrame's schema, as Spark SQL DDL.
EDITS_SCHEMA = ", ".join(f"{name} {kind}" for name, kind in EDIT_FIELDS)

#: At most this many Spark tasks read segments (one segment per task below it).
MAX_PARTITIONS = 1000


def read_edits(
    spark: Any,
    paths: str | Sequence[str] | Mapping[str, str],
    *,
    partitions: int | None = None,
) -> Any:
    """The ops of every segment under ``paths`` as a DataFrame (see the module doc).

    ``paths``: one path, several, or ``{node name: path}`` to name each input's
    ``node`` (by default the path itself).
    """
    if isinstance(paths, str):
        labelled = [(paths, paths)]
    elif isinstance(paths, Mapping):
        labelled = [(str(node), str(path)) for node, path in paths.items()]
    else:
        labelled = [(str(path), str(path)) for path in paths]
    if not labelled:
        raise ValueError("read_edits needs at least one path")
    sc = spark.sparkContext
    # Listing happens on the executors: the driver may not see the paths at all.
    refs = (
        sc.parallelize(labelled, len(labelled))
        .mapPartitions(lambda part: iter(expand_paths(list(part))))
        .collect()
    )
    return edits_dataframe(spark, refs, partitions=partitions)


def edits_dataframe(
    spark: Any, refs: Sequence[Mapping[str, Any]], *, partitions: int | None = None
) -> Any:
    """The ops of the given segment copies (``SegmentRef`` dicts) as a DataFrame."""
    refs = [dict(ref) for ref in refs]
    if not refs:
        return spark.createDataFrame([], EDITS_SCHEMA)
    num = partitions or min(len(refs), MAX_PARTITIONS)
    rows = spark.sparkContext.parallelize(refs, num).flatMap(op_rows)
    return spark.createDataFrame(rows, EDITS_SCHEMA)
