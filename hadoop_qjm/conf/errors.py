"""The few errors the configuration raises, at the bottom of the layering so that ``conf``
imports nothing above it; :mod:`hadoop_qjm.common.exceptions` re-exports them with the rest
of the exception tree (import them from there)."""

from __future__ import annotations

__all__ = ["HadoopException", "IllegalArgumentException", "ConfigurationError"]


class HadoopException(Exception):
    """Base of every error this project raises on purpose."""

    #: The Java class name Hadoop uses for this error; sent on the wire.
    java_name = "java.lang.Exception"


class IllegalArgumentException(HadoopException, ValueError):
    java_name = "java.lang.IllegalArgumentException"


class ConfigurationError(HadoopException, ValueError):
    """A malformed configuration file or an unparsable value."""

    java_name = "java.lang.IllegalArgumentException"
