"""parse_qjournal_uri: every JournalNode address of a shared-edits URI, or one sentence
naming what is wrong with it (a probe found ``qjournal://[::1/jid`` an internal error in
``namenode -format`` and read as the host ':' by getconf, and ``a;;b`` taken as two)."""

from __future__ import annotations

import re

import pytest

from hadoop_qjm.cli import main
from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.qjournal.client.qjournal_uri import parse_qjournal_uri

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("uri", "addresses"),
    [
        ("qjournal://a:1;b:2;c/j", (("a", 1), ("b", 2), ("c", 8485))),
        ("qjournal://[::1]:8486;[fe80::1]/j", (("::1", 8486), ("fe80::1", 8485))),
        ("qjournal:// jn1.example.com:8485 ; jn_2:9 /j", (("jn1.example.com", 8485), ("jn_2", 9))),
    ],
)
def test_the_addresses_of_a_good_uri(uri: str, addresses: tuple) -> None:
    parsed = parse_qjournal_uri(uri)
    assert parsed.addresses == addresses and parsed.journal_id == "j"
    assert parse_qjournal_uri(str(parsed)) == parsed  # IPv6 hosts printed in brackets


@pytest.mark.parametrize(
    ("uri", "complaint"),
    [
        ("qjournal://[::1/jid", "Bad IPv6 address '[::1'"),
        ("qjournal://[::1]x/jid", "Bad IPv6 address '[::1]x'"),
        ("qjournal://[zz]:1/jid", "Bad IPv6 address '[zz]:1'"),
        ("qjournal://::1/jid", "an IPv6 address goes in brackets"),
        ("qjournal://a:1;;b:2/jid", "Empty JournalNode address"),
        ("qjournal://a:1;/jid", "Empty JournalNode address"),
        ("qjournal://x y:1/jid", "Bad host 'x y'"),
        ("qjournal://a@b:1/jid", "Bad host 'a@b'"),
        ("qjournal://a:70000/jid", "Bad port '70000'"),
        ("qjournal://a:/jid", "Bad port ''"),
        ("qjournal:///jid", "No JournalNode addresses"),
        ("qjournal://a:1", "No journal id"),
    ],
)
def test_a_bad_uri_is_one_sentence_naming_what_is_wrong(uri: str, complaint: str) -> None:
    with pytest.raises(
        IllegalArgumentException, match=re.escape(complaint) + ".* in qjournal URI: "
    ):
        parse_qjournal_uri(uri)


@pytest.mark.parametrize(
    "command",
    [["getconf", "-journalNodes"], ["namenode", "-format", "-nonInteractive"]],
)
def test_commands_name_the_bad_uri_and_write_nothing(
    command: list[str], tmp_path, capsys: pytest.CaptureFixture
) -> None:
    name_dir = tmp_path / "name"
    args = ["-D", "dfs.namenode.shared.edits.dir=qjournal://[::1/jid"]
    args += ["-D", f"dfs.namenode.name.dir={name_dir}"]
    assert main([*args, *command]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "internal error" not in err, err
    assert "Bad IPv6 address '[::1' in qjournal URI: qjournal://[::1/jid" in err
    assert not name_dir.exists()
