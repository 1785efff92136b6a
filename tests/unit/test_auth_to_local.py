"""hadoop.security.auth_to_local over certificate subjects (docs/security.md, "Who the
caller is"): Hadoop's rule syntax, the first rule that applies wins."""

from __future__ import annotations

import pytest

from hadoop_qjm.common.auth_to_local import parse_auth_to_local, subject_of_peer_cert
from hadoop_qjm.common.exceptions import ConfigurationError

pytestmark = pytest.mark.timeout(30)


def cert(*rdns: tuple[str, str]) -> dict:
    """getpeercert()'s form: the RDNs from the most general to the most specific."""
    return {"subject": tuple(((name, value),) for name, value in rdns)}


ALICE = cert(
    ("countryName", "US"),
    ("organizationName", "Example"),
    ("organizationalUnitName", "tenants"),
    ("commonName", "alice"),
)
HOST = cert(("organizationName", "Example"), ("commonName", "nn1.example.com"))


def test_the_subject_reads_as_rfc_4514_most_specific_first() -> None:
    subject = subject_of_peer_cert(ALICE)
    assert subject is not None
    assert subject.dn == "CN=alice,OU=tenants,O=Example,C=US"
    assert subject.common_name == "alice"
    escaped = subject_of_peer_cert(cert(("organizationName", "A, B+C"), ("commonName", " x")))
    assert escaped is not None and escaped.dn == "CN=\\ x,O=A\\, B\\+C"
    assert subject_of_peer_cert(None) is None and subject_of_peer_cert({}) is None


@pytest.mark.parametrize(
    ("rules", "subject", "user"),
    [
        (None, ALICE, "alice"),  # unset: DEFAULT, the CN
        ("DEFAULT", HOST, "nn1.example.com"),
        (r"RULE:[$CN](.*\.example\.com)s/\..*//", HOST, "nn1"),
        (r"RULE:[$CN](.*\.example\.com)s/\..*//", ALICE, None),  # no rule applies
        (r"RULE:[$CN](.*\.example\.com)s/\..*//  DEFAULT", ALICE, "alice"),
        ("RULE:[$CN@$O](.*@Example)s/@.*//", ALICE, "alice"),
        ("RULE:[$CN@$OU](.*)s/@.*//", HOST, None),  # HOST has no OU: does not apply
        ("RULE:[$DN](CN=([^,]+),OU=tenants,.*)s/CN=([^,]+),.*/t_$1/", ALICE, "t_alice"),
        ("RULE:[$OU]s/(.*)/$1-$1/", ALICE, "tenants-tenants"),
        ("RULE:[$CN](.*)s/a/A/g/L", ALICE, "alice"),
        ("RULE:[$CN](.*)s/([ai])/<$1>/g", ALICE, "<a>l<i>ce"),
        ("RULE:[$DN]", ALICE, None),  # not a simple name: = and ,
        ("RULE:[$CN@$O]", ALICE, None),  # not a simple name: @
        ("DEFAULT", cert(("organizationName", "Example")), None),  # no CN
    ],
)
def test_the_first_rule_that_applies_gives_the_user(
    rules: str | None, subject: dict, user: str | None
) -> None:
    assert parse_auth_to_local(rules).short_name(subject_of_peer_cert(subject)) == user


@pytest.mark.parametrize(
    "rules",
    [
        "RULE:[$CN",  # no ]
        "RULE:[$CN](abc",  # unbalanced
        "RULE:[$CN](a[)s/x/y/",  # bad regex
        "RULE:[$CN]s/x/y",  # sed not closed
        "NOPE",
        "DEFAULTX",
    ],
)
def test_a_malformed_rule_is_one_sentence_naming_it(rules: str) -> None:
    with pytest.raises(ConfigurationError) as e:
        parse_auth_to_local(rules)
    message = str(e.value)
    assert message.startswith("Invalid rule in hadoop.security.auth_to_local: ")
    assert "\n" not in message
