"""``qjournal://host1:port1;host2:port2;host3:port3/<journalId>`` (digest §5 "URI").

Pure: parsing only, no name resolution.
"""

from __future__ import annotations

from dataclasses import dataclass

from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.qjournal.protocol.rules import validate_journal_id

__all__ = ["QJournalURI", "parse_qjournal_uri", "DEFAULT_JOURNAL_RPC_PORT"]

DEFAULT_JOURNAL_RPC_PORT = 8485
SCHEME = "qjournal"


@dataclass(frozen=True)
class QJournalURI:
    """The JournalNode RPC addresses and the journal id of a shared-edits URI."""

    addresses: tuple[tuple[str, int], ...]
    journal_id: str

    def __str__(self) -> str:
        hosts = ";".join(f"{h}:{p}" for h, p in self.addresses)
        return f"{SCHEME}://{hosts}/{self.journal_id}"


def parse_qjournal_uri(uri: str, default_port: int = DEFAULT_JOURNAL_RPC_PORT) -> QJournalURI:
    """Parse a ``qjournal://`` URI; a missing port is ``default_port``, hosts are trimmed."""
    text = uri.strip()
    prefix = f"{SCHEME}://"
    if not text.lower().startswith(prefix):
        raise IllegalArgumentException(
            f"Not a qjournal URI (expected {prefix}host:port;…/jid): {uri}"
        )
    rest = text[len(prefix) :]
    authority, slash, path = rest.partition("/")
    if not slash or not path:
        raise IllegalArgumentException(f"No journal id in qjournal URI: {uri}")
    journal_id = path.rstrip("/")
    validate_journal_id(journal_id)
    addresses: list[tuple[str, int]] = []
    for part in authority.split(";"):
        part = part.strip()
        if not part:
            continue
        host, sep, port_text = part.rpartition(":")
        if not sep:
            host, port = part, default_port
        else:
            if not port_text.isdigit() or not 0 < int(port_text) <= 65535:
                raise IllegalArgumentException(f"Bad port '{port_text}' in qjournal URI: {uri}")
            port = int(port_text)
        host = host.strip().strip("[]")
        if not host:
            raise IllegalArgumentException(f"Empty host in qjournal URI: {uri}")
        addresses.append((host, port))
    if not addresses:
        raise IllegalArgumentException(f"No JournalNode addresses in qjournal URI: {uri}")
    return QJournalURI(tuple(addresses), journal_id)
