"""java_properties.py: the java.util.Properties text format of VERSION files."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hadoop_qjm.common.exceptions import IllegalArgumentException
from hadoop_qjm.common.java_properties import java_date_string, load_properties, store_properties

JAVA_DATE = re.compile(r"[A-Z][a-z]{2} [A-Z][a-z]{2} \d{2} \d{2}:\d{2}:\d{2} \S+ \d{4}")


@pytest.fixture
def utc() -> Iterator[None]:
    old = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    try:
        yield
    finally:
        if old is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = old
        time.tzset()


def test_java_date_string(utc: None) -> None:
    assert java_date_string(0) == "Thu Jan 01 00:00:00 UTC 1970"
    assert java_date_string(1_347_397_731) == "Tue Sep 11 21:08:51 UTC 2012"


def test_java_date_string_shape_in_local_zone() -> None:
    assert JAVA_DATE.fullmatch(java_date_string(time.time()))


def test_store_writes_date_comment_then_entries_in_order(utc: None) -> None:
    text = store_properties({"namespaceID": "7", "clusterID": "CID-1", "cTime": "0"}, timestamp=0)
    assert text == "#Thu Jan 01 00:00:00 UTC 1970\nnamespaceID=7\nclusterID=CID-1\ncTime=0\n"


@pytest.mark.parametrize(
    ("key", "value", "line"),
    [
        ("a b", "c d", "a\\ b=c d"),
        ("k", " lead", "k=\\ lead"),
        ("k=:#!", "v=:#!", "k\\=\\:\\#\\!=v\\=\\:\\#\\!"),
        ("back\\slash", "C:\\dir", "back\\\\slash=C\\:\\\\dir"),
        ("k", "\t\n\r\f", "k=\\t\\n\\r\\f"),
        ("k", "caf\u00e9 \u2603", "k=caf\\u00E9 \\u2603"),
        ("k", "\U0001f600", "k=\\uD83D\\uDE00"),
        ("k", "\x01~\x7f", "k=\\u0001~\\u007F"),
        ("", "", "="),
    ],
)
def test_store_escapes_like_java(key: str, value: str, line: str) -> None:
    text = store_properties({key: value}, timestamp=0)
    assert text.splitlines()[1] == line
    assert text.isascii()
    assert load_properties(text) == {key: value}


def test_load_java_syntax() -> None:
    text = (
        "# a comment\n"
        "   ! another comment\n"
        "\n"
        "plain=value\n"
        "  spaced   =   padded value  \n"
        "colon:value\n"
        "space separated value\n"
        "keyonly\n"
        "continued=first \\\n"
        "      second\\\n"
        "third\n"
        "even=ends in backslash\\\\\n"
        "# comment lines do not continue \\\n"
        "after=comment\n"
        "uni=\\u00e9\\u00E9\n"
        "other=\\q\\z\n"
        "dup=1\n"
        "dup=2\r\n"
        "cr=x\rcrlf=y\r\n"
        "eof=dangling\\"
    )
    assert load_properties(text) == {
        "plain": "value",
        "spaced": "padded value  ",
        "colon": "value",
        "space": "separated value",
        "keyonly": "",
        "continued": "first secondthird",
        "even": "ends in backslash\\",
        "after": "comment",
        "uni": "\u00e9\u00e9",
        "other": "qz",
        "dup": "2",
        "cr": "x",
        "crlf": "y",
        "eof": "dangling",
    }


def test_load_bytes_are_latin1() -> None:
    assert load_properties(b"k=caf\xe9\n") == {"k": "caf\u00e9"}


def test_load_joins_surrogate_escapes() -> None:
    assert load_properties("k=\\uD83D\\uDE00\n") == {"k": "\U0001f600"}


@pytest.mark.parametrize("bad", ["k=\\u12", "k=\\u12G4", "k\\uXYZW=v"])
def test_load_malformed_unicode_escape(bad: str) -> None:
    with pytest.raises(IllegalArgumentException, match="Malformed"):
        load_properties(bad)


_chars = st.characters(blacklist_categories=("Cs",))


@given(st.dictionaries(st.text(_chars), st.text(_chars), max_size=8))
def test_store_load_round_trip(properties: dict[str, str]) -> None:
    text = store_properties(properties, timestamp=0)
    assert text.isascii()
    assert load_properties(text) == properties
    assert load_properties(text.encode("iso-8859-1")) == properties
