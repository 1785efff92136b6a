"""hadoop-qjm-py: a Python port of HDFS's Quorum Journal Manager (HDFS-3077)."""

__version__ = "0.1.0"
__all__ = ["__version__"]
