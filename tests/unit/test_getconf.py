"""``hdfs-py getconf``: Hadoop's GetConf options, their output and their errors."""

from __future__ import annotations

import pytest

from hadoop_qjm.cli import main

pytestmark = pytest.mark.timeout(60)

HA = {
    "dfs.nameservices": "mycluster",
    "dfs.ha.namenodes.mycluster": "nn1,nn2",
    "dfs.namenode.rpc-address.mycluster.nn1": "host1:8020",
    "dfs.namenode.rpc-address.mycluster.nn2": "host2:8020",
    # A service RPC address wins over the client one (DataNodes and other daemons use it).
    "dfs.namenode.servicerpc-address.mycluster.nn2": "host2:8021",
    "dfs.namenode.shared.edits.dir": "qjournal://jn1:8485;jn2:8485;jn2:8486/mycluster",
}
FEDERATED = {
    "dfs.nameservices": "ns1,ns2",
    "dfs.ha.namenodes.ns1": "a,b",
    "dfs.namenode.rpc-address.ns1.a": "a1",  # no port: 8020
    "dfs.namenode.rpc-address.ns1.b": "b1:9000",
    "dfs.namenode.rpc-address.ns2": "c1:8020",  # a nameservice without HA
    "dfs.namenode.secondary.http-address.ns2": "snn:9868",
}


def getconf(capsys, props: dict[str, str], *args: str) -> tuple[int, str, str]:
    flags = [a for k, v in props.items() for a in ("-D", f"{k}={v}")]
    status = main([*flags, "getconf", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out, err


@pytest.mark.parametrize(
    ("props", "args", "out"),
    [
        (HA, ["-namenodes"], "host1 host2\n"),
        (HA, ["-nnRpcAddresses"], "host1:8020\nhost2:8021\n"),
        (HA, ["-NAMENODES"], "host1 host2\n"),  # names match without regard to case
        (FEDERATED, ["-namenodes"], "a1 b1 c1\n"),
        (FEDERATED, ["-nnRpcAddresses"], "a1:8020\nb1:9000\nc1:8020\n"),
        (FEDERATED, ["-secondaryNameNodes"], "snn\n"),
        # dfs.internal.nameservices: the ones this cluster runs, of all it knows.
        ({**FEDERATED, "dfs.internal.nameservices": "ns2"}, ["-namenodes"], "c1\n"),
        # No nameservice: the plain keys, then an hdfs:// fs.defaultFS.
        ({"dfs.namenode.rpc-address": "nn:8020"}, ["-namenodes"], "nn\n"),
        ({"fs.defaultFS": "hdfs://nn.example.com"}, ["-nnRpcAddresses"], "nn.example.com:8020\n"),
        # Hadoop's defaults of the secondary and backup addresses.
        ({}, ["-secondaryNameNodes"], "0.0.0.0\n"),
        ({}, ["-backupNodes"], "0.0.0.0\n"),
        (HA, ["-secondaryNameNodes"], "\n"),  # HA: none configured per NameNode
        (HA, ["-journalNodes"], "jn1 jn2\n"),
        (HA, ["-journalNodeAddresses"], "jn1:8485 jn2:8485 jn2:8486\n"),
        ({}, ["-includeFile"], "\n"),  # set, empty, by default
        ({"dfs.hosts.exclude": " /etc/hadoop/exclude "}, ["-excludeFile"], "/etc/hadoop/exclude\n"),
        (HA, ["-confKey", "dfs.nameservices"], "mycluster\n"),
        ({}, ["-confKey", "dfs.journalnode.rpc-address"], "0.0.0.0:8485\n"),
    ],
)
def test_output(capsys, props, args, out):
    assert getconf(capsys, props, *args) == (0, out, "")


@pytest.mark.parametrize(
    ("props", "args", "status", "err"),
    [
        ({}, ["-confKey", "no.such.key"], 1, "hdfs-py: Configuration no.such.key is missing."),
        ({}, ["-confKey"], 2, "hdfs-py getconf: usage: -confKey [key]"),
        ({}, ["-confKey", "a", "b"], 2, "hdfs-py getconf: usage: -confKey [key]"),
        ({}, ["-namenodes", "x"], 2, "hdfs-py getconf: Did not expect argument: x"),
        ({}, ["-bogus"], 2, "hdfs-py getconf: unrecognized arguments: -bogus"),
        (
            {},
            ["-namenodes"],
            1,
            "hdfs-py: Incorrect configuration: namenode address dfs.namenode.servicerpc-address.[] "
            "or dfs.namenode.rpc-address.[] is not configured.",
        ),
        (
            {"dfs.nameservices": "ns1", "dfs.ha.namenodes.ns1": "a"},
            ["-nnRpcAddresses"],
            1,
            "hdfs-py: Incorrect configuration: namenode address dfs.namenode.servicerpc-address."
            "[ns1] or dfs.namenode.rpc-address.[ns1] is not configured.",
        ),
        (
            {"dfs.namenode.rpc-address": "nn:port"},
            ["-namenodes"],
            1,
            "hdfs-py: Invalid value for dfs.namenode.rpc-address: bad port in address 'nn:port'",
        ),
        (
            {},
            ["-journalNodes"],
            1,
            "hdfs-py: dfs.namenode.shared.edits.dir is not set to a qjournal:// URI",
        ),
    ],
)
def test_errors_are_one_line(capsys, props, args, status, err):
    assert getconf(capsys, props, *args) == (status, "", err + "\n")


def test_no_option_names_them_all(capsys):
    status, out, err = getconf(capsys, {})
    assert status == 2 and out == ""
    assert err.startswith("hdfs-py getconf: one of -namenodes, -secondaryNameNodes,")
    assert len(err.splitlines()) == 1


def test_help_lists_every_option(capsys):
    status, out, _ = getconf(capsys, {}, "-h")
    assert status == 0
    for option in ("-namenodes", "-secondaryNameNodes", "-backupNodes", "-journalNodes",
                   "-includeFile", "-excludeFile", "-nnRpcAddresses", "-confKey [key]"):  # fmt: skip
        assert f"\t[{option}]\t" in out
