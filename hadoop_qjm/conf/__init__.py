"""Hadoop-style configuration: XML resources, defaults, typed getters."""

from hadoop_qjm.conf.configuration import (
    Configuration,
    parse_host_port,
    parse_storage_size,
    parse_time_duration,
)

__all__ = ["Configuration", "parse_host_port", "parse_storage_size", "parse_time_duration"]
