"""``hdfs-py security -generateCerts DIR [--hosts H1,H2,...] [--days N] [--client NAME]``.

Makes a test PKI for a secured cluster (docs/security.md): a CA, a certificate per host,
one for the tools, and sample ``ssl-server.xml`` / ``ssl-client.xml``. The suggested
``dfs.journalnode.allowed.principals`` lists the hosts only: the tools' certificate may talk
to a NameNode, never write to a JournalNode.
"""

from __future__ import annotations

from collections.abc import Sequence

from hadoop_qjm.common.exceptions import IllegalArgumentException

__all__ = ["run"]


def run(argv: Sequence[str], conf) -> int:
    from hadoop_qjm.common.command_line import CommandParser, named_path

    parser = CommandParser(
        prog="hdfs-py security",
        description=(
            "Make a test PKI in DIR: ca.pem/ca-key.pem, <host>.pem/<host>-key.pem per host "
            "(SANs: the host, localhost, 127.0.0.1), <client>.pem/<client>-key.pem for the "
            "tools, and sample ssl-server.xml and ssl-client.xml."
        ),
    )
    parser.add_argument(
        "-generateCerts",
        metavar="DIR",
        required=True,
        type=named_path,
        help="directory to write (new or empty)",
    )
    parser.add_argument(
        "--hosts",
        default="localhost",
        help="comma-separated host names or IPs, one certificate each (localhost)",
    )
    parser.add_argument(
        "--days", type=int, default=365, help="validity of the certificates in days (365)"
    )
    parser.add_argument(
        "--client",
        default=None,
        help="subject CN of the tools' certificate, not allowed to write to a JournalNode (namenode)",
    )
    args = parser.parse_args(list(argv))
    hosts = [h.strip() for h in args.hosts.split(",") if h.strip()]
    if not hosts:
        parser.error("--hosts needs at least one host name")

    from hadoop_qjm.common.security.certs import DEFAULT_CLIENT, generate_test_pki

    # An empty --client is refused by generate_test_pki, not replaced by the default.
    client = DEFAULT_CLIENT if args.client is None else args.client
    try:
        paths = generate_test_pki(
            args.generateCerts, hosts, client=client, days=args.days, new_or_empty=True
        )
    except IllegalArgumentException as e:
        parser.error(str(e))
    directory = paths["ca"].parent
    print(f"Wrote a test PKI in {directory}:")
    for name in sorted(p.name for p in paths.values()):
        print(f"  {name}")
    # The hosts (NameNodes and JournalNodes) write; the tools' certificate does not.
    allowed = ",".join(dict.fromkeys(hosts))
    print(
        "Secure a cluster with (core-site.xml / hdfs-site.xml):\n"
        "  hadoop.security.authentication=certificate\n"
        "  hadoop.rpc.protection=privacy\n"
        "  dfs.http.policy=HTTPS_ONLY\n"
        f"  dfs.journalnode.allowed.principals={allowed}\n"
        "and copy ssl-server.xml / ssl-client.xml into each host's configuration directory, "
        "pointing at that host's certificate (docs/security.md)."
    )
    return 0
