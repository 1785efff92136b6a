"""ConfigRedactor: which configuration values are secret (Hadoop's class of the name).

A key is sensitive when one of the regular expressions of
``hadoop.security.sensitive-config-keys`` is found in it (a search, not a full match: Java's
``Matcher.find``); its value is then shown as ``<redacted>`` wherever the configuration is
displayed — ``/conf`` of every daemon (HADOOP-14260). Pure: no I/O.
"""

from __future__ import annotations

import re
from typing import Any

from hadoop_qjm.conf import dfs_config_keys as keys
from hadoop_qjm.conf.errors import ConfigurationError

__all__ = ["REDACTED_TEXT", "ConfigRedactor"]

REDACTED_TEXT = "<redacted>"
_SEPARATORS = re.compile(r"\s*[,\n]\s*")


class ConfigRedactor:
    """The sensitive-key patterns of ``conf`` (anything with ``get``), compiled once.

    A pattern that is not a regular expression is a ConfigurationError naming it, so a
    daemon refuses to start rather than show a secret it was told to hide.
    """

    def __init__(self, conf: Any) -> None:
        text = conf.get(keys.HADOOP_SECURITY_SENSITIVE_CONFIG_KEYS_KEY) if conf else None
        if text is None:
            text = keys.HADOOP_SECURITY_SENSITIVE_CONFIG_KEYS_DEFAULT
        self.patterns: list[re.Pattern[str]] = []
        for regex in _SEPARATORS.split(text.strip()):
            if not regex:
                continue
            try:
                self.patterns.append(re.compile(regex))
            except re.error as e:
                raise ConfigurationError(
                    f"Invalid value for {keys.HADOOP_SECURITY_SENSITIVE_CONFIG_KEYS_KEY}: "
                    f"'{regex}' is not a regular expression ({e})"
                ) from None

    def is_sensitive(self, key: str) -> bool:
        return any(p.search(key) for p in self.patterns)

    def redact(self, key: str, value: str | None) -> str | None:
        """``value``, or :data:`REDACTED_TEXT` if ``key`` is sensitive."""
        return REDACTED_TEXT if self.is_sensitive(key) else value
