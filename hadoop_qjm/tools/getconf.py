"""``hdfs-py getconf``: print configuration values (Hadoop's ``hdfs getconf``)."""

from __future__ import annotations

from hadoop_qjm.common.exceptions import IOException, UsageError

__all__ = ["run"]


def run(argv: list[str], conf) -> int:
    from hadoop_qjm.cli import CommandParser

    parser = CommandParser(
        prog="hdfs-py getconf",
        description="Print configuration values, as Hadoop's 'hdfs getconf'.",
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("-confKey", metavar="KEY", help="print the value of KEY")
    group.add_argument(
        "-journalNodes",
        action="store_true",
        help="print the JournalNode hosts of dfs.namenode.shared.edits.dir",
    )
    group.add_argument(
        "-journalNodeAddresses",
        action="store_true",
        help="print the JournalNode RPC addresses (host:port) of dfs.namenode.shared.edits.dir",
    )
    args = parser.parse_args(argv)
    if args.confKey is not None:
        value = conf.get(args.confKey)
        if value is None:
            raise IOException(f"Configuration {args.confKey} is missing.")
        print(value)
        return 0
    from hadoop_qjm.qjournal.client.qjournal_uri import parse_qjournal_uri
    from hadoop_qjm.qjournal.server.journal_node_syncer import shared_edits_uri

    uri = shared_edits_uri(conf, None)
    if not uri:
        raise UsageError("dfs.namenode.shared.edits.dir is not set to a qjournal:// URI")
    addresses = parse_qjournal_uri(uri).addresses
    if args.journalNodes:
        print(" ".join(dict.fromkeys(host for host, _ in addresses)))
    else:
        print(" ".join(f"{host}:{port}" for host, port in addresses))
    return 0
