"""LogLevel's names: Hadoop's class names of what is ported map onto the loggers our modules
log as; other org.apache names are refused, with ours listed."""

from __future__ import annotations

import importlib
import logging
import pkgutil

import pytest

from hadoop_qjm.common.log_level import (
    HADOOP_LOGGERS,
    log_level_page,
    output_lines,
    python_logger_name,
)

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(("java", "target"), sorted(HADOOP_LOGGERS.items()))
def test_each_hadoop_name_is_a_logger_our_code_logs_as(java: str, target: str) -> None:
    module = importlib.import_module(target)
    if hasattr(module, "__path__"):  # a package: the parent of its modules' loggers
        return
    assert module.LOG.name == target
    # Where the class itself is defined, that module logs as the mapped logger too
    # (IPCLoggerChannel logs as QuorumJournalManager, as ours does).
    cls = java.rpartition(".")[2]
    package = importlib.import_module(target.rpartition(".")[0])
    for info in pkgutil.iter_modules(package.__path__):
        defining = importlib.import_module(f"{package.__name__}.{info.name}")
        found = getattr(defining, cls, None)
        if isinstance(found, type) and found.__module__ == defining.__name__:
            assert defining.LOG.name == target, defining.__name__


def test_names_map_pass_through_or_are_refused() -> None:
    assert python_logger_name("org.apache.hadoop.hdfs.qjournal.server.JournalNodeSyncer") == (
        "hadoop_qjm.qjournal.server.journal_node_syncer"
    )
    assert python_logger_name("hadoop_qjm.namenode.fs_image") == "hadoop_qjm.namenode.fs_image"
    assert python_logger_name("root") == "root"
    assert python_logger_name("org.apache.hadoop.hdfs.server.datanode.DataNode") is None


def test_the_page_names_the_python_logger_or_refuses_the_class() -> None:
    java = "org.apache.hadoop.ha.ActiveStandbyElector"
    logger = logging.getLogger("hadoop_qjm.ha.active_standby_elector")
    saved = logger.level
    try:
        lines = output_lines(log_level_page(java, "ERROR"))
        assert lines[2] == "Python Logger: hadoop_qjm.ha.active_standby_elector"
        assert lines[-1] == "Effective Level: ERROR" and logger.level == logging.ERROR
    finally:
        logger.setLevel(saved)
    other = "org.apache.hadoop.yarn.server.resourcemanager.ResourceManager"
    lines = output_lines(log_level_page(other, "DEBUG"))
    assert lines[0] == f"Submitted Class Name: {other}"
    assert lines[1].startswith(f"Unknown class name: {other} is not ported to hadoop-qjm-py")
    assert len(lines) == 2 and other not in logging.root.manager.loggerDict
